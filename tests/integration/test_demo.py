"""The demo's scenarios at a small size, with reacting RoCEv2 NICs: what the report states must
hold (virtual time, so deterministic).  Each mechanism is compared with its negative control."""
import pytest

from fabric_sim import demo
from fabric_sim.rdma import NicParams


@pytest.fixture(scope="module")
def congestion(lab_fabric_full, stellar_files):
    return {m: demo.run_congestion(lab_fabric_full, stellar_files, m, messages=2).metrics
            for m in ("ecmp", "stellar", "no-drain")}


def _silence_rule_off(mp: pytest.MonkeyPatch) -> None:
    """Stellar without its own recovery from a path that stopped delivering: the path-silence
    rule (a path whose feedback stops is suspect) and the restart move point (a go-back-N resend
    may take the best member, which a stalled queue is not)."""
    import control_plane.contract as contract

    mp.setattr(contract, "FEEDBACK_DEFAULTS", {**contract.FEEDBACK_DEFAULTS, "suspect_silence_us": 0})
    mp.setattr(contract, "ADAPT_DEFAULTS", {**contract.ADAPT_DEFAULTS, "move_guards": 1})  # drain proof only


@pytest.fixture(scope="module")
def failure(lab_fabric_full, stellar_files):
    runs = {"local": demo.run_failure(lab_fabric_full, stellar_files, "stellar", messages=2).metrics,
            "ecmp": demo.run_failure(lab_fabric_full, stellar_files, "ecmp", messages=2).metrics}
    with pytest.MonkeyPatch.context() as mp:   # the control: no local marking, no silence rule
        _silence_rule_off(mp)
        runs["none"] = demo.run_failure(lab_fabric_full, stellar_files, "stellar", messages=2,
                                        local_failover=False).metrics
    return runs


def _done(m):
    a, b = m["transfers completed"].split("/")
    return int(a) == int(b) > 0


def test_every_transfer_of_the_congestion_scenario_completes(congestion):
    for m in congestion.values():
        assert _done(m) and m["job completion (us)"] is not None


def test_flows_that_start_together_complete_and_are_reported(lab_fabric_full, stellar_files):
    m = demo.run_congestion(lab_fabric_full, stellar_files, "stellar", messages=1, together=True)
    assert m.scenario.startswith("together") and _done(m.metrics)
    assert "mice p99 FCT (us)" not in m.metrics  # the AlltoAll alone


def test_ecmp_never_moves_a_flow_and_nothing_reorders_with_drain_detection(congestion):
    assert congestion["ecmp"]["path changes gap/drain/failover"] == "0/0/0"
    for mode in ("ecmp", "stellar"):
        assert congestion[mode]["PSN regressions at receivers"] == 0
        assert congestion[mode]["reorder events (switch counters)"] == 0


def test_local_failover_recovers_without_the_controller_and_its_control_waits(failure):
    reaction = demo.CONTROLLER_REACTION_US
    for key in ("local", "ecmp"):
        m = failure[key]
        assert _done(m)
        # the failure is local to leaf1's outgoing flows: the liveness entries move them at once; what was
        # queued on the dead port is lost and comes back by NAK or, for a tail, by one RTO
        assert m["  longest stall leaving leaf1, local failure (us)"] <= NicParams(
            timeout_exp=demo.FAILURE_TIMEOUT_EXP).rto_us + 50
        assert m["controller entries written"] > 0
    # flows entering leaf1 through the dead spine link: ECMP waits for the controller; Stellar's
    # source leaves find the path silent (no feedback) and leave it in the data plane
    assert failure["ecmp"]["  longest stall entering leaf1, remote failure (us)"] >= reaction
    assert failure["local"]["  longest stall entering leaf1, remote failure (us)"] < reaction / 4
    assert failure["local"]["path changes for failover"] > 0
    # negative control: nobody marks the port down, so leaf1's own flows wait for the controller too
    none = failure["none"]
    assert none["  longest stall leaving leaf1, local failure (us)"] >= reaction
    assert none["path changes for failover"] == 0
    # (Retransmission totals are no signal here: with two messages per flow most data is delivered
    # before the failure, and the resends counted in both modes are the senders' RTOs while their
    # last ACKs are lost on the remote direction, which only the controller repairs.)


def test_without_silence_detection_a_remote_failure_waits_for_the_controller(lab_fabric_full, stellar_files,
                                                                             monkeypatch):
    """Negative control of the remote recovery above: the same run with the path-silence rule off."""
    _silence_rule_off(monkeypatch)
    m = demo.run_failure(lab_fabric_full, stellar_files, "stellar", messages=2).metrics
    assert m["  longest stall entering leaf1, remote failure (us)"] >= demo.CONTROLLER_REACTION_US


def _reservations(lab_fabric_full, stellar_files, mode: str) -> int:
    lab = demo.Lab(lab_fabric_full, stellar_files, mode)
    try:
        return sum(len(lab.sim.switch(n).table_entries("StellarIngress.routing.reservation"))
                   for n in lab.sim.devices)
    finally:
        lab.close()


def test_the_jobs_mode_pushes_the_yaml_jobs_reservations_and_the_run_completes_in_order(
        lab_fabric_full, stellar_files):
    assert _reservations(lab_fabric_full, stellar_files, "stellar-jobs") > 0
    m = demo.run_congestion(lab_fabric_full, stellar_files, "stellar-jobs", messages=2).metrics
    assert _done(m)
    assert m["PSN regressions at receivers"] == 0 == m["reorder events (switch counters)"]


def test_control_plain_stellar_pushes_no_reservation(lab_fabric_full, stellar_files):
    assert _reservations(lab_fabric_full, stellar_files, "stellar") == 0
