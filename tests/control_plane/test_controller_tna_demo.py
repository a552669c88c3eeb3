"""A cheap smoke of ``make demo ARCH=tna``: the demo's failure scenario on p4src/tna/stellar.p4
(six TnaSwitches, entries pushed over P4Runtime, the TNA controller reacting after its
reaction time).  Every transfer completes; the negative control is the bug the demo found: with
the group alive cells reset to all ones after the re-plan, flows entering the failed leaf keep
a member position past their group's new count and never finish."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("p4sim")

from control_plane import archnames  # noqa: E402
from control_plane.model import load_fabric  # noqa: E402
from fabric_sim import demo  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tna_files(tmp_path_factory):
    return demo.build_program(tmp_path_factory.mktemp("stellar_tna"), arch="tna")


def _done(metrics) -> tuple[int, int]:
    a, b = metrics["transfers completed"].split("/")
    return int(a), int(b)


@pytest.mark.parametrize("alive", ["members", "all-ones"])
def test_demo_failure_scenario_on_the_tna_program(tna_files, monkeypatch, alive) -> None:
    if alive == "all-ones":
        monkeypatch.setattr(archnames.ArchNames, "alive_mask", staticmethod(lambda count: 0xFF))
    fabric = load_fabric(ROOT / "fabrics" / "lab.yaml")
    m = demo.run_failure(fabric, tna_files, "stellar", messages=2, arch="tna").metrics
    done, total = _done(m)
    assert m["controller entries written"] > 0 and m["path changes for failover"] > 0
    if alive == "members":
        assert done == total == 8
        assert m["  longest stall entering leaf1, remote failure (us)"] < 2 * demo.CONTROLLER_REACTION_US
        assert m["PSN regressions at receivers"] == 0
    else:
        assert done < total
