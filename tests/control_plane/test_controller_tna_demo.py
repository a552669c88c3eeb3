"""A cheap smoke of ``make demo ARCH=tna``: the demo's failure scenario on p4src/tna/stellar.p4
(six TnaSwitches, entries pushed over P4Runtime, the TNA controller reacting after its
reaction time).  Every transfer completes; the negative control is the bug the demo found: with
the group alive cells reset to all ones after the re-plan, flows entering the failed leaf keep
a member position past their group's new count and never finish.  The data plane's own recovery
(a silent path is suspect, a go-back-N resend is a move point) would rescue those flows without
the controller, so the control turns it off to show the controller's bug by itself."""
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


def _without_data_plane_recovery(monkeypatch) -> None:
    """Declared defaults with silence detection, gray-loss suspicion and restart moves off."""
    import dataclasses

    from control_plane import params

    off = {"suspect_silence_us": 0, "retx_threshold": 0, "move_guards": 1}  # bit 0 only: drain proof
    changed = tuple(dataclasses.replace(p, default=off[p.name]) if p.name in off else p for p in params.PARAMS)
    monkeypatch.setattr(params, "PARAMS", changed)
    monkeypatch.setattr(params, "BY_NAME", {p.name: p for p in changed})


def _done(metrics) -> tuple[int, int]:
    a, b = metrics["transfers completed"].split("/")
    return int(a), int(b)


@pytest.mark.parametrize("alive", ["members", "all-ones"])
def test_demo_failure_scenario_on_the_tna_program(tna_files, monkeypatch, alive) -> None:
    if alive == "all-ones":
        monkeypatch.setattr(archnames.ArchNames, "alive_mask", staticmethod(lambda count: 0xFF))
        _without_data_plane_recovery(monkeypatch)
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


@pytest.mark.parametrize("session", ["pushed", "none"])
def test_the_tna_demos_feedback_comes_from_the_pushed_mirror_session(tna_files, monkeypatch, session) -> None:
    """The demo sets no mirror session itself: the feedback copies reach ingress through the
    clone session the entry documents carry, pushed over P4Runtime with the entries.  Negative
    control: the documents without it -- the copies are refused (no session), no feedback packet
    reaches ingress, no group's best-member cell is ever set, so choices fall back to the DRE
    and the flow hash."""
    from control_plane import render_tna

    pushed: list[int] = []
    real = demo.Lab.__init__

    def spy(self, *a, **k):
        real(self, *a, **k)
        pushed.extend(sum(c.kind == "clone_session" for c in r.diff.inserts) for r in self.push.results.values())

    monkeypatch.setattr(demo.Lab, "__init__", spy)
    if session == "none":
        monkeypatch.setattr(render_tna, "feedback_sessions", lambda fabric, reporting: [])
    fabric = load_fabric(ROOT / "fabrics" / "lab.yaml")
    m = demo.run_congestion(fabric, tna_files, "stellar", messages=1, together=True, arch="tna").metrics
    copies, refused, learned = map(int, m["feedback copies / refused / groups with a best member"].split("/"))
    assert m["job completion (us)"] is not None
    if session == "pushed":
        assert sum(pushed) == 4                      # one per leaf (spines have no choice to feed)
        assert copies > 0 and learned > 0
    else:
        assert sum(pushed) == 0
        assert copies == 0 and refused > 0 and learned == 0
