"""Stellar on Tofino: exploration under pressure (p4src/tna/include/control/pressure.p4).

A flow sits on uplink P, its group's best member by this leaf's feedback (P's queue is empty);
the far end's NIC sends CNPs back (congestion this leaf cannot see).  Once explore_signals of
them arrive within the window, the pair's packets report P saturated in their feedback copies;
the next report of the other uplink Q (an idle queue: a feedback packet standing for Q's other
traffic) takes "best" over, and the flow leaves P at its next drain point (a drain move, with
the drain proof), in order.  Negative controls: without the CNPs, or with exploration off, Q's
report cannot take P's place (the hysteresis) and the flow stays on P; with ECMP (no feedback)
nothing reports.  The move's guard is the drain proof (test_stellar_tna_paths.py: without it a
drain move reorders).
"""
from __future__ import annotations

from scapy.all import Ether

from test_stellar_tna_paths import _feedback
from tna_leaf import CHANGE_DRAIN, GROUP, ING, TnaLeaf, roce

SRC, DST, QP, SENDER_QP = "10.0.1.1", "10.0.2.9", 0x51, 0x52
OP_CNP = 0x81
EVENTS = f"{ING}.pressure.events"


def _run(cnps: int = 4, explore_signals: int = 4, feedback: bool = True) -> dict:
    leaf = TnaLeaf(flowlet_timeout_ns=10_000_000, drain_any=True, feedback=feedback, dre=feedback)
    leaf.sw.set_default_action(f"{ING}.pressure.params", f"{ING}.pressure.set_params",
                               {"explore_signals": explore_signals, "explore_window_ns": 200_000})
    P = leaf.flow_port(QP, SRC, DST)                       # P reports its idle queue: best
    Q = 5 - P
    leaf.sw.advance(5)
    for _ in range(cnps):                                  # the receiver's NIC, back through P
        leaf.send(roce(DST, SRC, SENDER_QP, 0, opcode=OP_CNP), port=P)
        leaf.sw.advance(10)
    leaf.out()
    psn = 1
    leaf.send(roce(SRC, DST, QP, psn))                     # hot: P's report says saturated
    leaf.sw.advance(10)
    if feedback:
        leaf.send(_feedback(Q, 0), port=68)                # Q's idle queue
    for psn in range(2, 6):
        leaf.sw.advance(20)
        leaf.send(roce(SRC, DST, QP, psn))
    leaf.sw.advance(50)
    out = leaf.out()
    return {"P": P, "Q": Q, "ports": [p for p, _ in out], "psns": [Ether(f)["BTH"].psn for _, f in out],
            "hot": leaf.counter(EVENTS, 1), "cnps": leaf.counter(EVENTS, 0),
            "best": leaf.sw.register_read(f"{ING}.path_choice.group_best", GROUP) >> 16,
            "drain": leaf.counter(f"{ING}.telemetry.path_changes", CHANGE_DRAIN)}


def test_cnps_make_the_best_member_report_saturated_and_the_flow_leaves_at_its_drain_point():
    run = _run()
    P, Q = run["P"], run["Q"]
    assert run["cnps"] == 4 and run["hot"] >= 1
    assert run["ports"][0] == P                            # the hot packet itself stays
    assert run["ports"][1:] == [Q] * 4 and run["drain"] == 1
    assert run["psns"] == sorted(run["psns"])
    assert run["best"] == {2: 0, 3: 1}[Q]


def test_negative_control_without_cnps_the_flow_stays_on_the_best_member():
    run = _run(cnps=0)
    assert run["hot"] == 0 and set(run["ports"]) == {run["P"]} and run["drain"] == 0


def test_negative_control_with_exploration_off_the_flow_stays():
    run = _run(explore_signals=0)
    assert run["cnps"] == 0 and set(run["ports"]) == {run["P"]}


def test_ecmp_never_explores():
    # no feedback (the ECMP baseline: no reports, no DRE): the pair is hot, nothing moves
    run = _run(feedback=False)
    assert run["hot"] >= 1 and set(run["ports"]) == {run["P"]} and run["drain"] == 0
