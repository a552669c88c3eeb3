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

from pathlib import Path

from test_stellar_tna_path_feedback import unshim
from test_stellar_tna_reorder import _variant
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


# ------------------------------------------------------------------ resends after a move
# A flow that fled a lossy path resends there what it had lost: those PSNs were first sent on
# the path it left (path_loss.p4's move_psn), so they are not charged to the path it fled to.
# If they were, that path turns lossy too and nothing is left to move to (v1model:
# tests/stellar/test_suspect_moved.py).  Controls: a flow that has always been on that path,
# and the moved flow's resends of PSNs first sent there, are charged; the program with the
# rule taken out charges the moved flow's resends and makes the path lossy.
NO_MOVE_RULE = ("(1, 1): do_earlier();", "(1, 1): do_resend();")
STAYER_QP = 0x62
GO_BACKS = 8          # the threshold: enough to make the path lossy if charged
STAYER_GO_BACKS = 3   # charged, and below the threshold with the moved flow's one


def _fled(leaf: TnaLeaf) -> dict:
    """The flow leaves its lossy path P for Q (the first test's run), then its sender goes back
    GO_BACKS times on Q to PSNs it first sent on P; a second flow starts on Q and goes back as
    often; finally the moved flow goes back once to a PSN it first sent on Q."""
    _tagging(leaf, threshold=GO_BACKS)
    P = leaf.flow_port(QP, SRC, DST)
    Q = 5 - P
    top = resend_ranges(leaf, GO_BACKS)                    # P is lossy
    leaf.sw.advance(5)
    leaf.send(roce(SRC, DST, QP, top + 1))
    leaf.sw.advance(10)
    leaf.send(_feedback(Q, 0), port=68)                    # Q takes "best"
    for psn in range(top + 2, top + 6):
        leaf.sw.advance(20)
        leaf.send(roce(SRC, DST, QP, psn))
    moved = [p for p, _ in leaf.out()]
    loss_on_q = (2 << 3) | {2: 0, 3: 1}[Q]
    charged = lambda: leaf.counter(f"{EGR}.path_loss.retransmits", loss_on_q)
    stayer = leaf.flow_port(STAYER_QP, SRC, DST)           # a new flow takes the best member
    for go_back in range(GO_BACKS):                        # first sent on P (at or below top + 1)
        for psn in range(top - 2 + go_back % 3, top + 6):
            leaf.sw.advance(5)
            leaf.send(roce(SRC, DST, QP, psn))
    fled = charged()
    for go_back in range(STAYER_GO_BACKS):                 # the flow that stayed on Q
        for psn in (go_back + 1, go_back + 2, go_back + 1):
            leaf.sw.advance(5)
            leaf.send(roce(SRC, DST, STAYER_QP, psn))
    stayed = charged() - fled
    for psn in (top + 6, top + 7, top + 6):                # first sent on Q
        leaf.sw.advance(5)
        leaf.send(roce(SRC, DST, QP, psn))
    on_q = charged() - fled - stayed
    leaf.sw.advance(10)
    leaf.out()
    lossy_before = leaf.counter(EVENTS, 1)
    leaf.send(roce(SRC, DST, QP, top + 8))                 # a tag of Q: is Q lossy?
    leaf.sw.advance(10)
    leaf.out()
    return {"P": P, "Q": Q, "moved": moved, "stayer": stayer, "fled": fled, "stayed": stayed,
            "on_q": on_q, "earlier": leaf.counter(EVENTS, 2),
            "q_lossy": leaf.counter(EVENTS, 1) - lossy_before}


def test_resends_after_leaving_a_lossy_path_are_not_charged_to_the_path_fled_to():
    run = _fled(TnaLeaf(flowlet_timeout_ns=10_000_000, drain_any=True))
    assert run["moved"][-1] == run["Q"] and run["stayer"] == run["Q"]
    assert run["fled"] == 0 and run["earlier"] == GO_BACKS
    assert run["stayed"] == STAYER_GO_BACKS                # control: a flow that stayed is charged
    assert run["on_q"] == 1                                # control: a PSN first sent on Q is charged
    assert run["q_lossy"] == 0


def test_negative_control_without_the_rule_the_path_fled_to_turns_lossy(tmp_path_factory):
    prog = _variant(tmp_path_factory, NO_MOVE_RULE, Path("p4src/tna/include/control/path_loss.p4"))
    run = _fled(TnaLeaf(flowlet_timeout_ns=10_000_000, drain_any=True, prog=prog))
    assert run["moved"][-1] == run["Q"]
    assert run["fled"] == GO_BACKS and run["earlier"] == 0
    assert run["q_lossy"] == 1                             # the path fled to reports saturated
