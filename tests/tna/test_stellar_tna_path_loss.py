"""Stellar on Tofino: suspect paths by retransmissions, gray loss (p4src/tna/include/control/path_loss.p4).

A leaf tags its traffic to leaf 2 (path_feedback: uplink 2 is path 0, uplink 3 path 1).  A flow
sits on uplink P, the best member; the path beyond P drops packets silently, so the sender's NIC
resends ranges (go-back-N: a PSN behind the flow's last leaves the leaf again).  After
retx_threshold resends within the window, the path is lossy: the tags that go on it report it
saturated, the other uplink's idle report takes "best" over and the flow leaves P at its next
drain point, in order.  Negative controls: detection off, or fewer resends than the threshold:
the other uplink cannot take P's place and the flow stays on the lossy path.  The suspect hold
keeps a path lossy past its window (v1model's suspect_hold_us): after a pause beyond the window,
the flow still leaves P with the default 2 ms hold, and stays with a hold of 0.
"""
from __future__ import annotations

from test_stellar_tna_path_feedback import unshim
from test_stellar_tna_paths import _feedback
from tna_leaf import CHANGE_DRAIN, EGR, GROUP, ING, TnaLeaf, roce

SRC, DST, QP = "10.0.1.1", "10.0.2.9", 0x61
EVENTS = f"{EGR}.path_loss.events"


def _tagging(leaf: TnaLeaf, threshold: int, window_ns: int = 1_000_000, hold_ns: int = 2_000_000) -> None:
    """This leaf is leaf 1 of path feedback (silence off), leaf 2 is behind 10.0.2.0/24."""
    sw = leaf.sw
    sw.set_default_action(f"{EGR}.path_feedback.params", f"{EGR}.path_feedback.set_params",
                          {"on": 1, "leaf": 1, "interval_ns": 2000, "max_age_ns": 500_000,
                           "suspect_silence_ns": 0, "suspect_hold_ns": 2_000_000})
    for index, port in enumerate((2, 3)):
        sw.insert_entry(f"{EGR}.path_feedback.port_kind", {"eg_intr_md.egress_port": port},
                        f"{EGR}.path_feedback.fabric_port", {"index": index})
    sw.insert_entry(f"{EGR}.path_feedback.dest_leaf", {"hdr.ipv4.dst_addr": (0x0A000200, 24)},
                    f"{EGR}.path_feedback.set_dest_leaf", {"leaf": 2, "mask": 1})
    sw.set_default_action(f"{EGR}.path_loss.params", f"{EGR}.path_loss.set_params",
                          {"retx_threshold": threshold, "retx_window_ns": window_ns, "suspect_hold_ns": hold_ns})


def resend_ranges(leaf: TnaLeaf, resends: int) -> int:
    """``resends`` times a range of five PSNs sent 5 us apart, then resent from its middle;
    returns the highest PSN sent."""
    top = 0
    for _ in range(resends):
        for psn in range(top + 1, top + 6):
            leaf.sw.advance(5)
            leaf.send(roce(SRC, DST, QP, psn))
        leaf.sw.advance(5)
        leaf.send(roce(SRC, DST, QP, top + 3))
        top += 5
    return top


def _run(resends: int = 8, threshold: int = 8, hold_ns: int = 2_000_000, quiet_us: int = 0) -> dict:
    """``quiet_us``: the flow pauses this long after the resends (past the 1 ms window when
    long enough: then only the suspect hold keeps the path lossy)."""
    leaf = TnaLeaf(flowlet_timeout_ns=10_000_000, drain_any=True)
    _tagging(leaf, threshold, hold_ns=hold_ns)
    P = leaf.flow_port(QP, SRC, DST)                       # psn 0; P reports its idle queue: best
    Q = 5 - P
    top = resend_ranges(leaf, resends)
    leaf.sw.advance(5 + quiet_us)
    leaf.send(roce(SRC, DST, QP, top + 1))                 # a tag of the path, after the resends
    leaf.sw.advance(10)
    before = [p for p, _ in leaf.out()]
    leaf.send(_feedback(Q, 0), port=68)                    # the other uplink's idle queue
    for psn in range(top + 2, top + 6):
        leaf.sw.advance(20)
        leaf.send(roce(SRC, DST, QP, psn))
    leaf.sw.advance(50)
    out = leaf.out()
    return {"P": P, "Q": Q, "before": before, "after": [p for p, _ in out],
            "psns": [unshim(f)["BTH"].psn for _, f in out],
            "resends": leaf.counter(EVENTS, 0), "lossy": leaf.counter(EVENTS, 1),
            "best": leaf.sw.register_read(f"{ING}.path_choice.group_best", GROUP) >> 16,
            "drain": leaf.counter(f"{ING}.telemetry.path_changes", CHANGE_DRAIN)}


def test_a_lossy_path_loses_best_and_its_flow_leaves_at_its_drain_point():
    run = _run()
    assert run["resends"] == 8 and run["lossy"] >= 1
    assert set(run["before"]) == {run["P"]}                # nothing moved while it was measured
    assert run["after"] == [run["Q"]] * 4 and run["drain"] == 1
    assert run["psns"] == sorted(run["psns"])
    assert run["best"] == {2: 0, 3: 1}[run["Q"]]


def test_negative_control_without_detection_the_flow_stays_on_the_lossy_path():
    run = _run(threshold=0)
    assert run["resends"] == 0 and set(run["after"]) == {run["P"]} and run["drain"] == 0


def test_negative_control_fewer_resends_than_the_threshold_leave_the_path_best():
    run = _run(resends=7)
    assert run["resends"] == 7 and run["lossy"] == 0 and set(run["after"]) == {run["P"]}


QUIET_US = 1_000       # the resends' window (1 ms) is over when the flow sends again


def test_the_suspect_hold_keeps_the_path_lossy_past_its_window():
    run = _run(quiet_us=QUIET_US)
    assert run["resends"] == 8 and run["lossy"] >= 1
    assert run["after"] == [run["Q"]] * 4 and run["drain"] == 1


def test_negative_control_without_the_hold_the_path_is_lossy_only_within_its_window():
    run = _run(quiet_us=QUIET_US, hold_ns=0)
    assert run["resends"] == 8 and run["lossy"] == 0
    assert set(run["after"]) == {run["P"]} and run["drain"] == 0
