"""``stellar-jobs``: the controller's job-aware allocation (reservations) as a study mode, on top
of the data plane's adaptation (issue 32, item 7).  The run's collective is declared as the
fabric's one job, so the controller reserves paths for the traffic that actually runs."""
from __future__ import annotations

import pytest

from fabric_sim.experiment import JOBS, RunSpec, run

RESERVATION = "StellarIngress.routing.reservation"


def _reservations(mode: str, workload: str = "a2a") -> tuple[dict, int]:
    keep: dict = {}
    row = run(RunSpec(workload, "deg40", mode, 1, nbytes=8192, dcqcn="off"), keep=keep)
    sim = keep["sim"]
    entries = sum(len(sim.switch(n).table_entries(RESERVATION)) for n in sim.devices)
    return row, entries


def test_the_jobs_mode_installs_reservations_for_the_runs_collective_and_completes():
    row, entries = _reservations(JOBS)
    assert entries > 0
    assert row["completion_us"] is not None and row["reorders"] == 0


def test_control_plain_stellar_installs_no_reservation():
    _, entries = _reservations("stellar")
    assert entries == 0


def test_a_workload_without_a_job_model_is_refused_by_name():
    with pytest.raises(ValueError, match="no job model for workload perm"):
        run(RunSpec("perm", "deg40", JOBS, 1, nbytes=8192))
