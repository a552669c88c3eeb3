"""Mutated copies of the shipped fabrics (wrong types, missing keys, duplicates, dangling
references, absurd sizes, broken YAML text) end in a file:line:key error, never a traceback.
Small count here (CI); ``bench/fuzz_yaml.py --count N`` runs more, cluster512 included."""
from __future__ import annotations

from pathlib import Path

import yaml

from control_plane.errors import FabricError
from control_plane.model import load_fabric
from testkit.yaml_fuzz import REPO, check_one, run


def test_mutated_shipped_fabrics_give_located_errors(tmp_path: Path) -> None:
    res = run(count=150, seed=3, work=tmp_path, fabrics=("lab", "pod"))
    assert not res.failures, "\n".join(res.failures[:5])
    assert res.outcomes.get("problems", 0) > 100, res.summary()  # mostly invalid, as meant


def test_cluster512_mutants(tmp_path: Path) -> None:
    res = run(count=12, seed=4, work=tmp_path, fabrics=("cluster512",))
    assert not res.failures, "\n".join(res.failures[:5])


def test_device_id_too_big_for_the_derived_mac_is_located(tmp_path: Path) -> None:
    """Found by the campaign: a device_id above 2^32-1 without a mac was an OverflowError."""
    doc = yaml.safe_load((REPO / "fabrics/lab.yaml").read_text())
    doc["switches"][0]["device_id"] = 10**12
    doc["switches"][0].pop("mac", None)
    path = tmp_path / "big.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    try:
        load_fabric(path)
        raise AssertionError("loaded")
    except FabricError as err:
        [p] = [p for p in err.problems if p.key.endswith("device_id")]
        assert p.file == str(path) and p.line > 1 and "explicit mac" in p.reason
    doc["switches"][0]["mac"] = "02:53:00:00:00:99"  # control: with a mac the big id is fine
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    assert load_fabric(path).switches[doc["switches"][0]["name"]].device_id == 10**12


def test_checker_reports_tracebacks_and_unlocated_problems(tmp_path: Path, monkeypatch) -> None:
    """Negative controls of the campaign's judge."""
    import control_plane.model as model
    from control_plane.errors import Problem

    good = (REPO / "fabrics/lab.yaml").read_bytes()
    assert check_one(tmp_path / "a.yaml", good, "unmodified", render_valid=True) == ("ok", None)

    def crash(_path):
        raise KeyError("boom")

    monkeypatch.setattr(model, "load_fabric", crash)
    outcome, text = check_one(tmp_path / "a.yaml", good, "crash", render_valid=False)
    assert outcome == "traceback" and "KeyError" in text

    def unlocated(path):
        raise FabricError([Problem(str(path), 0, "", "somewhere")])

    monkeypatch.setattr(model, "load_fabric", unlocated)
    assert check_one(tmp_path / "a.yaml", good, "no line", render_valid=False)[0] == "unlocated"
