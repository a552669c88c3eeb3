"""`stellarctl` (control_plane.cli) offline commands."""
from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from control_plane.cli import main

ROOT = Path(__file__).resolve().parents[2]
LAB = str(ROOT / "fabrics" / "lab.yaml")
GOLDEN = Path(__file__).resolve().parent / "golden" / "lab"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_validate_ok() -> None:
    code, out, err = run("validate", LAB)
    assert code == 0 and err == ""
    assert "fabric 'lab': 6 switches (2 spines, 4 leaves), 8 links, 16 hosts, 2 tenants, 2 jobs" in out


def test_validate_reports_every_problem_with_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    text = Path(LAB).read_text().replace("ip: 10.0.2.2, ", "ip: 10.0.2.1, ").replace("pmax: 0.2", "pmax: 3")
    bad.write_text(text)
    code, out, err = run("validate", str(bad))
    assert code == 1 and out == ""
    assert "3 problems in fabric" in err  # the third: job moe names the now-invalid host
    assert "jobs[0].hosts[3]: host 'l2g2' is invalid (see its errors)" in err
    dup_line = next(i for i, l in enumerate(text.splitlines(), 1) if "name: l2g2" in l)
    assert f"{bad}:{dup_line}: hosts[5].ip: duplicate IP 10.0.2.1 (also host 'l2g1')" in err
    assert "dataplane.ecn.pmax: out of range" in err


def test_render_writes_the_golden_files(tmp_path: Path) -> None:
    code, out, err = run("render", LAB, "-o", str(tmp_path / "out"))
    assert code == 0, err
    assert "jobs isolated" in out and "wrote 7 files" in out
    for golden in GOLDEN.glob("*.json"):
        assert (tmp_path / "out" / golden.name).read_text() == golden.read_text(), golden.name


def test_render_of_an_invalid_fabric_writes_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(Path(LAB).read_text().replace("role: spine", "role: spline", 1))
    code, _, err = run("render", str(bad), "-o", str(tmp_path / "out"))
    assert code == 1 and "must be one of leaf, spine; got 'spline'" in err
    assert not (tmp_path / "out").exists()


def test_analyze_scheduler_explains_the_placement() -> None:
    code, out, _ = run("analyze-scheduler", LAB, "moe")
    assert code == 0
    assert "job moe: AlltoAll, 8 GPUs, 40 Gbps per GPU" in out
    assert "placement: isolated; spines given: spine1; spines used: spine1" in out
    assert "ECMP hashing expected" in out and "why:" in out
    assert "leaf1 -> leaf2" in out and "#8192 [ports 9]" in out


def test_analyze_scheduler_shows_sharing_when_isolation_fails(tmp_path: Path) -> None:
    heavy = tmp_path / "heavy.yaml"
    heavy.write_text(Path(LAB).read_text().replace("bandwidth_gbps: 40", "bandwidth_gbps: 70"))
    code, out, _ = run("analyze-scheduler", str(heavy), "moe")
    assert code == 0
    assert "placement: shared" in out
    assert "capacity does not allow disjoint paths" in out
    assert "shares spine" in out and "with job dense" in out


def test_analyze_scheduler_unknown_job() -> None:
    code, _, err = run("analyze-scheduler", LAB, "nope")
    assert code == 1 and "no job 'nope' (jobs: moe, dense)" in err


def test_bad_command_line_exits_2() -> None:
    with pytest.raises(SystemExit) as caught:
        main(["frobnicate", LAB])
    assert caught.value.code == 2
    code, _, err = run("render", LAB)  # neither -o nor --switch
    assert code == 2 and "needs -o DIR" in err


def test_render_one_switch_to_stdout() -> None:
    code, out, _ = run("render", LAB, "--switch", "spine2")
    assert code == 0
    assert out == (GOLDEN / "spine2.json").read_text()
    code, _, err = run("render", LAB, "--switch", "spine9")
    assert code == 1 and "no switch 'spine9'" in err


def test_python_dash_m_control_plane() -> None:
    done = subprocess.run([sys.executable, "-m", "control_plane", "validate", LAB], cwd=ROOT,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "fabric 'lab'" in done.stdout


def test_analyze_scheduler_summary_of_all_jobs() -> None:
    code, out, _ = run("analyze-scheduler", str(ROOT / "fabrics" / "pod.yaml"))
    assert code == 0
    assert "fabric pod: 4 jobs" in out and "jobs isolated on disjoint spines" in out
    for job in ("moe", "dp", "ps", "ckpt"):
        assert f"\n  {job} " in out
