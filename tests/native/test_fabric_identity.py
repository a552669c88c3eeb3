"""Whole fabric runs give the same row on p4sim's native backend as on its reference backend.

The fabric study runs on the native backend by default; its figures stand only if every row is
the one the reference interpreter gives.  These runs cover both programs (stellar.p4 and the
baselines' lb.p4), a degraded link, a link failure with the controller's reaction, a lossless
incast with PFC pauses, a lossy gray failure with retransmissions and a Poisson workload.  Every
key of the row must be equal except ``WALL_KEYS`` (wall time).  bench/fabric_identity.py runs
the same comparison over every row of ``make eval``'s quick matrix.
"""
from __future__ import annotations

import warnings

import pytest

from fabric_sim.experiment import WALL_KEYS, RunSpec, run
from p4sim.native import NativeFallbackWarning

SPECS = (
    RunSpec("a2a", "deg40", "stellar", 1, nbytes=8192),
    RunSpec("a2a", "deg40", "ecmp", 1, nbytes=8192),
    RunSpec("a2a", "fail", "stellar", 1, nbytes=32768),
    RunSpec("incast", "sym", "stellar", 3, nbytes=65536, dcqcn="off"),
    RunSpec("websearch-50", "deg40", "conga", 1, nbytes=8192, duration_us=40.0),
    RunSpec("a2a", "gray", "drill", 1, nbytes=8192, buffer="lossy"),
)


def differing(a: dict, b: dict) -> list[str]:
    """Row keys whose values differ (a key in one row only counts), wall time aside."""
    return sorted(k for k in a.keys() | b.keys() if k not in WALL_KEYS and a.get(k, KeyError) != b.get(k, KeyError))


def backend_run(spec: RunSpec, backend: str) -> dict:
    """The row, after checking that every switch ran on ``backend`` (no silent fallback)."""
    keep: dict = {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", NativeFallbackWarning)
        row = run(spec, keep, backend=backend)
    sim = keep["sim"]
    assert {sim.switch(n).pipeline.backend for n in sim.devices} == {backend}
    return row


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.workload}/{s.topo}/{s.mode}")
def test_native_and_reference_rows_are_identical(spec: RunSpec):
    ref, nat = backend_run(spec, "python"), backend_run(spec, "native")
    assert ref["incomplete"] == 0 and ref["traversals"] > 1000
    assert differing(ref, nat) == []


def test_the_runs_exercise_what_they_are_chosen_for():
    """Each mechanism the identity covers happened in these runs (else its identity is vacuous)."""
    by = {(s.workload, s.topo, s.mode): s for s in SPECS}
    fail = backend_run(by[("a2a", "fail", "stellar")], "native")
    assert fail["moves_failover"] > 0 and fail["drops_wire"] > 0 and fail["retransmits"] > 0
    pfc = backend_run(by[("incast", "sym", "stellar")], "native")
    assert pfc["xoff_sent"] > 0 and pfc["pause_us_total"] > 0
    gray = backend_run(by[("a2a", "gray", "drill")], "native")
    assert gray["drops_gray"] > 0 and gray["retransmits"] > 0


def test_the_comparison_sees_a_different_run():
    """Negative control: another seed (other hash salts and arrivals) gives a differing row, so
    an empty difference above means the same run, not a comparison that cannot fail."""
    one = backend_run(SPECS[1], "native")
    other = backend_run(RunSpec("a2a", "deg40", "ecmp", 2, nbytes=8192), "native")
    assert "link_packets" in differing(one, other)


def test_the_study_runs_native_unless_told_otherwise(monkeypatch):
    from fabric_sim.cli import parser
    from fabric_sim.experiment import study_backend

    monkeypatch.delenv("P4SIM_BACKEND", raising=False)
    assert study_backend() == "native"
    assert study_backend("python") == "python"
    monkeypatch.setenv("P4SIM_BACKEND", "python")
    assert study_backend() == "python" and study_backend("native") == "native"
    with pytest.raises(ValueError, match="unknown p4sim backend 'fast'"):
        study_backend("fast")
    args = parser().parse_args(["--workload", "a2a", "--mode", "ecmp", "--backend", "python"])
    assert args.backend == "python"
    with pytest.raises(SystemExit):
        parser().parse_args(["--workload", "a2a", "--mode", "ecmp", "--backend", "fast"])


def test_without_a_c_compiler_the_study_runs_on_the_reference(tmp_path, monkeypatch):
    """A machine without a C compiler: one clear warning per program, the reference runs, and the
    row is the one the reference gives."""
    import fabric_sim.experiment as ex

    spec = RunSpec("a2a", "sym", "ecmp", 1, nbytes=4096)
    ref = backend_run(spec, "python")
    monkeypatch.setattr(ex, "_programs", {})  # a fresh process: the program not yet loaded natively
    monkeypatch.setenv("P4SIM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    keep: dict = {}
    with pytest.warns(NativeFallbackWarning, match="no C compiler") as caught:
        row = run(spec, keep)
    assert len(caught) == 1
    sim = keep["sim"]
    assert {sim.switch(n).pipeline.backend for n in sim.devices} == {"python"}
    assert differing(ref, row) == []
