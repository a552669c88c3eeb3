"""The demo's scenarios at a small size: what the report claims must hold (virtual time, so
deterministic).  Each comparison is a mechanism against its own negative control."""
import pytest

from fabric_sim import demo


@pytest.fixture(scope="module")
def congestion(lab_fabric_full, stellar_files):
    return {m: demo.run_congestion(lab_fabric_full, stellar_files, m, messages=3).metrics
            for m in ("ecmp", "stellar", "no-drain")}


@pytest.fixture(scope="module")
def failure(lab_fabric_full, stellar_files):
    return {m: demo.run_failure(lab_fabric_full, stellar_files, m, messages=3).metrics
            for m in ("ecmp", "stellar")}


def test_every_packet_of_the_congestion_scenario_is_delivered(congestion):
    for m in congestion.values():
        assert m["packets delivered"] == m["packets sent"] > 0


def test_mice_beat_the_elephant_backlog_only_with_elephant_separation(congestion):
    assert congestion["stellar"]["mice p99 latency (us)"] < congestion["ecmp"]["mice p99 latency (us)"] / 2


def test_drain_detection_moves_flows_without_reordering_and_its_control_reorders(congestion):
    assert congestion["stellar"]["PSN regressions at receivers"] == 0
    assert congestion["stellar"]["reorder events (switch counters)"] == 0
    assert congestion["no-drain"]["PSN regressions at receivers"] > 0
    assert congestion["no-drain"]["reorder events (switch counters)"] > 0
    assert congestion["ecmp"]["PSN regressions at receivers"] == 0  # ECMP never moves a flow


def test_adaptive_routing_costs_the_job_nothing_against_ecmp_around_a_degraded_link(lab_fabric_full, stellar_files):
    # Measured job times (µs), ECMP / Stellar: 4 messages 430 / 432, 8 messages 860 / 783,
    # 12 messages 1280 / 1279.  Around one degraded link, moving elephants only at drain points
    # keeps the job at least as fast as hashing them (while the mice and ordering win above);
    # the claim checked is "no worse than ECMP by more than 2%", on an 8-message run.
    jct = {m: demo.run_congestion(lab_fabric_full, stellar_files, m, messages=8).metrics["job completion (us)"]
           for m in ("ecmp", "stellar")}
    assert jct["stellar"] <= 1.02 * jct["ecmp"]


def test_ecmp_mode_never_moves_a_flow_and_stellar_does_at_drain_points(congestion):
    assert congestion["ecmp"]["path changes gap/drain/failover"] == "0/0/0"
    gap, drain, fail = map(int, congestion["stellar"]["path changes gap/drain/failover"].split("/"))
    assert drain > 0


def test_local_failover_loses_less_than_waiting_for_the_controller(failure):
    assert failure["stellar"]["path changes for failover"] > 0
    assert failure["ecmp"]["path changes for failover"] == 0
    assert failure["stellar"]["packets lost"] < failure["ecmp"]["packets lost"]
    # where the failure is local to the sending leaf, port_down saves most of the loss ...
    assert (failure["stellar"]["  lost leaving leaf1 (failure is local)"]
            < failure["ecmp"]["  lost leaving leaf1 (failure is local)"] / 2)
    # ... where it is remote, both wait for the controller's re-plan
    assert failure["ecmp"]["controller entries written"] > 0
