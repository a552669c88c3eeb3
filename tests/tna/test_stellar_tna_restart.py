"""Stellar on Tofino: the go-back-N restart as a move point (p4src/tna/include/control/restart.p4).

The leaf of test_stellar_tna_path_loss: a flow sits on uplink P, the best member, and the path
beyond P drops packets silently, so the sender resends ranges until P is lossy and the other
uplink's idle report takes "best" over.  The flow sends every 5 us against an 8 us drain margin,
so the drain proof never holds: its only move point is its sender's next resend (a go-back-N
receiver takes only the PSN it expects, so what P still holds arrives as duplicates), where it
takes the best member (CHANGE_RESTART).  Negative controls: without MOVE_POINT_RESTART
(move_guards bit 1) it stays on the lossy path; without a resend it stays too.  The v1model
tests: tests/stellar/test_suspect.py (the gray failure).
"""
from __future__ import annotations

from control_plane.contract import PATH_CHANGE_REASONS
from test_stellar_tna_path_loss import DST, QP, SRC, _tagging, resend_ranges
from test_stellar_tna_path_feedback import unshim
from test_stellar_tna_paths import _feedback
from tna_leaf import CHANGE_DRAIN, ING, TnaLeaf, roce

CHANGE_RESTART = PATH_CHANGE_REASONS.index("restart")
MOVE_GUARD_DRAIN_PROOF = 1     # define.p4: bit 0; bit 1 (MOVE_POINT_RESTART) cleared


def _run(move_guards: int = 15, resend: bool = True) -> dict:
    leaf = TnaLeaf(flowlet_timeout_ns=10_000_000, drain_any=True, drain_margin_ns=8000,
                   move_guards=move_guards)
    _tagging(leaf, 8)
    P = leaf.flow_port(QP, SRC, DST)                       # psn 0; P reports its idle queue: best
    Q = 5 - P
    top = resend_ranges(leaf, 8)                           # P turns lossy
    leaf.sw.advance(5)
    leaf.send(roce(SRC, DST, QP, top + 1))                 # a tag of the lossy path
    leaf.sw.advance(2)
    leaf.send(_feedback(Q, 0), port=68)                    # the other uplink's idle queue: best
    before = [p for p, _ in leaf.out()]
    psns = list(range(top + 2, top + 6))
    if resend:
        psns += list(range(top + 3, top + 9))              # go-back-N from top + 3
    for i, psn in enumerate(psns):                         # every 5 us: below the 8 us margin
        leaf.sw.advance(3 if i == 0 else 5)
        leaf.send(roce(SRC, DST, QP, psn))
    leaf.sw.advance(50)
    out = leaf.out()
    return {"P": P, "Q": Q, "before": before, "after": [p for p, _ in out],
            "psns": [unshim(f)["BTH"].psn for _, f in out], "top": top,
            "restart": leaf.counter(f"{ING}.telemetry.path_changes", CHANGE_RESTART),
            "drain": leaf.counter(f"{ING}.telemetry.path_changes", CHANGE_DRAIN)}


def test_a_flow_on_a_lossy_path_leaves_at_its_senders_resend():
    run = _run()
    P, Q, top = run["P"], run["Q"], run["top"]
    assert set(run["before"]) == {P}                       # no move while P was best
    # the flow stays on P until the resend of top + 3, which and everything after go to Q
    assert run["psns"] == list(range(top + 2, top + 6)) + list(range(top + 3, top + 9))
    assert run["after"] == [P] * 4 + [Q] * 6
    assert run["restart"] == 1 and run["drain"] == 0


def test_negative_control_without_the_restart_move_point_the_flow_stays_on_the_lossy_path():
    run = _run(move_guards=MOVE_GUARD_DRAIN_PROOF)
    assert set(run["after"]) == {run["P"]} and run["restart"] == 0 and run["drain"] == 0


def test_negative_control_without_a_resend_the_flow_has_no_move_point():
    run = _run(resend=False)
    assert set(run["after"]) == {run["P"]} and run["restart"] == 0 and run["drain"] == 0
