"""A remote link failure reported by the leaf that sees it (issue 32, item 4): the destination
leaf's own uplink went down, so it reports the paths that crossed it dead (FB_METRIC_DEAD) on
whatever it sends back, and the source leaf moves a flow off at once, before any silence could
be proven.  This is the case silence cannot cover: every flow of a job waits out its
retransmission timeout, nobody sends, and the first resend is the first packet in a long time.

    host A -- A:3 -- S1 -- B:3 (cut, B's port 3 marked down) -- B -- host B
           -- A:4 -- S2 -- B:4

Control: the same failure while B still believes its port up (the controller has not marked
it): nothing is reported and the resend goes back to the dead spine.
"""
from __future__ import annotations

from scapy.all import Ether
from scapy.contrib.roce import BTH

from tests.stellar.fabric2 import A_HOST, B_HOST, Fabric2, unshim
from testkit.leaf import CHANGE_SUSPECT, OP_ACK, roce

QPS = range(0x100, 0x108)
CUT_AT = 100
DEAD_PATH = (2 << 3) | 0     # fb_* index at A of (leaf B, member 0 = port 3, spine 1)
FB_METRIC_DEAD = 8191


def _run(stellar_program, *, b_knows: bool) -> tuple[Fabric2, list[int]]:
    """Eight flows send from A until the cut, then stop (a job waiting out its timeout); B keeps
    sending a packet to A every 10 us (its own traffic); 60 us after the cut, far below the
    300 us silence, every flow resends its last PSN.  Returns the fabric and the A uplinks of
    those resends."""
    import p4sim
    f = Fabric2(p4sim, stellar_program)
    psn = {qp: 0 for qp in QPS}
    resent_from = 0
    for t in range(CUT_AT + 100):
        if t == CUT_AT:
            f.cut("S1", 2)
            if b_knows:
                f.sw["B"].port_down(3)
        if t < CUT_AT and t % 4 == 0:
            for qp in QPS:
                f.send("A", roce(A_HOST, B_HOST, qp, psn[qp]))
                psn[qp] += 1
        if t >= CUT_AT and t % 10 == 0:
            f.send("B", roce(B_HOST, A_HOST, 0x900, t, opcode=OP_ACK))
        if t == CUT_AT + 60:
            resent_from = len(f.on_wire)
            for qp in QPS:
                f.send("A", roce(A_HOST, B_HOST, qp, psn[qp] - 1))
        f.delivered["B"].clear()
        f.step(1)
    ports = [p for n, p, fr in f.on_wire[resent_from:]
             if n == "A" and Ether(unshim(fr)).haslayer(BTH) and Ether(unshim(fr))[BTH].dqpn in QPS]
    return f, ports


def test_a_leaf_reports_its_dead_uplink_and_the_first_resend_takes_the_live_spine(stellar_program):
    f, ports = _run(stellar_program, b_knows=True)
    assert f.sw["B"].counter("StellarIngress.feedback.shims", 4) >= 1      # B reported the dead path
    assert f.sw["A"].register("fb_to_metric", DEAD_PATH) == FB_METRIC_DEAD
    assert len(ports) == len(QPS) and set(ports) == {4}                    # every resend on spine 2
    assert f.sw["A"].counter("StellarIngress.flowlet.path_changes", CHANGE_SUSPECT) >= 1


def test_control_a_leaf_that_does_not_know_its_uplink_died_reports_nothing(stellar_program):
    f, ports = _run(stellar_program, b_knows=False)
    assert f.sw["B"].counter("StellarIngress.feedback.shims", 4) == 0
    assert f.sw["A"].register("fb_to_metric", DEAD_PATH) != FB_METRIC_DEAD
    assert 3 in ports                                                      # resends go to the dead spine
