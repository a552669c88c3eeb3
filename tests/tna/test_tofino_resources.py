"""testkit/tofino_resources.py (bench/tofino_resources.py): reading bf-p4c's reports, and (with bf-p4c installed) a real compile.

The log excerpts below have the shape bf-p4c 9.13.4 writes (pipe/logs/table_summary.log,
table_dependency_graph.log); the figures in them are made up for the test.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from testkit import tofino_resources as tr

SUMMARY = """\
Number of stages in table allocation: 23
  Number of stages for ingress table allocation: 23
  Number of stages for egress table allocation: 7
Number of stages in table allocation: 19
  Number of stages for ingress table allocation: 19
  Number of stages for egress table allocation: 7
Number of stages in table allocation: 20
  Number of stages for ingress table allocation: 20
  Number of stages for egress table allocation: 6
"""
DEPENDENCES = """\
    Maximum stage number according to dependences: 
      INGRESS: 16
      EGRESS: 4
    Maximum stage number according to dependences: 
      INGRESS: 15
"""


def _fake_run(tmp: Path, target: str, stages: str, exit_code: int, binary: bool) -> Path:
    out = tmp / f"{target}-no-dre"
    logs = out / "pipe" / "logs"
    logs.mkdir(parents=True)
    (logs / "table_summary.log").write_text(stages)
    (logs / "table_dependency_graph.log").write_text(DEPENDENCES)
    (logs / "metrics.json").write_text(json.dumps({"mau": {"srams": 40, "tcams": 12, "map_rams": 6,
                                                           "logical_tables": 90}}))
    if binary:
        (out / "pipe" / f"{target}.bin").write_bytes(b"\0")
    (tmp / f"{target}-no-dre.log").write_text(
        "p4src/x.p4(1): error: something bf-p4c refused\n0 errors, 3 warnings generated.\n"
        f"exit={exit_code} seconds=31.5\n")
    return out


def test_the_last_table_allocation_and_the_first_dependency_minimum_are_read():
    assert tr.parse_final_stages(SUMMARY) == (20, 6)       # the last re-placement, not the first
    assert tr.parse_dependency_minimum(DEPENDENCES) == (16, 4)
    assert tr.parse_final_stages("nothing here") == (None, None)


def test_a_run_fits_only_when_assembled_within_the_targets_stages(tmp_path):
    _fake_run(tmp_path, "tofino2", SUMMARY, 0, binary=True)
    res = tr.read_result("tofino2", "no-dre", tmp_path / "tofino2-no-dre", tmp_path / "tofino2-no-dre.log")
    assert (res.exit_code, res.seconds, res.stages_ingress, res.dep_ingress) == (0, 31.5, 20, 16)
    assert res.fits
    assert "40 (2.5%)" in tr.report([res])                 # 40 of 20 stages x 80 SRAMs
    # negative controls: the same placement on Tofino-1 (12 stages), and a run with no binary
    other = tmp_path / "t1"
    other.mkdir()
    _fake_run(other, "tofino", SUMMARY, 0, binary=True)
    t1 = tr.read_result("tofino", "no-dre", other / "tofino-no-dre", other / "tofino-no-dre.log")
    assert not t1.fits
    third = tmp_path / "nobin"
    third.mkdir()
    _fake_run(third, "tofino2", SUMMARY, 1, binary=False)
    failed = tr.read_result("tofino2", "no-dre", third / "tofino2-no-dre", third / "tofino2-no-dre.log")
    assert not failed.fits
    text = tr.report([failed])
    assert "exit 1, no binary" in text and "something bf-p4c refused" in text


def test_a_run_that_stopped_before_placement_reports_no_figures(tmp_path):
    out = _fake_run(tmp_path, "tofino", "", 1, binary=False)
    (out / "pipe" / "logs" / "metrics.json").write_text(json.dumps(
        {"mau": {"srams": 0, "tcams": 0, "map_rams": 0, "logical_tables": 0}}))
    res = tr.read_result("tofino", "no-dre", out, tmp_path / "tofino-no-dre.log")
    assert res.metrics == {} and res.stages_ingress is None
    row = tr.report([res]).splitlines()[1]
    assert "0 (0.0%)" not in row and "-/- of 12" in row


def test_without_bf_p4c_it_says_so_and_exits_2(tmp_path, capsys):
    assert tr.main(["--bf-p4c", str(tmp_path / "no-such-bf-p4c"), "--out", str(tmp_path)]) == 2
    assert "not found" in capsys.readouterr().err


def test_the_profiles_are_the_control_planes():
    from control_plane.contract import TNA_PROFILES
    assert set(tr.PROFILE_DEFINES) == set(TNA_PROFILES)
    assert tr.PROFILE_DEFINES["no-dre"] == ["-DSTELLAR_NO_DRE=1"]


def test_each_target_is_built_with_its_own_profiles_unless_named():
    # Tofino-1 takes the profile without the DRE; naming profiles compiles them on every target
    assert tr.configurations(["tofino", "tofino2"], None) == \
        [("tofino", "no-dre"), ("tofino2", "full"), ("tofino2", "no-dre")]
    assert tr.configurations(["tofino"], ["full"]) == [("tofino", "full")]
    assert set(tr.TARGET_PROFILES) == set(tr.ARCH)
    assert all(set(ps) <= set(tr.PROFILE_DEFINES) for ps in tr.TARGET_PROFILES.values())


_NO_BF_P4C = pytest.mark.skipif(shutil.which("bf-p4c") is None,
                                reason="bf-p4c (the Tofino back end) is not installed")


@_NO_BF_P4C
def test_the_no_dre_profile_compiles_and_assembles_for_tofino2(tmp_path):
    res = tr.compile_one(shutil.which("bf-p4c"), "tofino2", "no-dre", tmp_path)
    assert res.fits, tr.report([res])


@_NO_BF_P4C
def test_the_no_dre_profile_compiles_and_assembles_for_tofino_in_12_stages(tmp_path):
    res = tr.compile_one(shutil.which("bf-p4c"), "tofino", "no-dre", tmp_path)
    assert res.fits and res.stages_ingress <= 12, tr.report([res])
