"""Failures without the controller (issue 32, item 4), on two leaves and two spines (fabric2.py).

* Silent remote failure: spine 1's downlink to leaf B stops forwarding (no port goes down at leaf
  A, the controller is not told).  A keeps sending on spine 1 and hears no feedback for that path:
  after suspect_silence_us the path is suspect, A's flows leave it at their next safe point and
  new flows avoid it.  Control: with silence detection off, A keeps sending into the dead link.
* Gray failure: spine 1's downlink drops 1% of packets.  Feedback still flows, but the senders'
  retransmissions (PSNs not ahead of the flow's highest) go onto that path; above the threshold
  it is suspect and the flows leave.  Control: with the threshold off they stay and keep losing.
"""
from __future__ import annotations

from scapy.all import Ether
from scapy.contrib.roce import BTH

from tests.stellar.fabric2 import A_HOST, B_HOST, Fabric2, unshim
from testkit.leaf import CHANGE_RESTART, CHANGE_SUSPECT, OP_ACK, roce

QPS = range(0x100, 0x108)
CUT_AT = 200


def _run(stellar_program, *, until: int, fault, retransmit: bool = False, before=None, ack: bool = True,
         **fb) -> tuple[Fabric2, dict]:
    """Eight flows from A's host, one packet each per 4 us; B acks each packet it receives.
    ``fault(f)`` is applied at CUT_AT.  With ``retransmit`` the sender resends every dropped
    packet (same PSN) 20 us later, as go-back-N's first resend would."""
    import p4sim
    f = Fabric2(p4sim, stellar_program, **fb)
    if before is not None:
        before(f)
    psn = {qp: 0 for qp in QPS}
    lost: list[tuple[int, int, int]] = []
    sent_at: dict = {}
    base_drop = f.drop
    for t in range(until):
        if t == CUT_AT:
            fault(f)
            inner = f.drop

            def record(sw, port, frame, _inner=inner):
                dropped = _inner(sw, port, frame)
                if dropped:
                    pkt = Ether(unshim(frame))
                    lost.append((t + 20, pkt[BTH].dqpn, pkt[BTH].psn))
                return dropped
            f.drop = record
        if t % 4 == 0:
            for qp in QPS:
                f.send("A", roce(A_HOST, B_HOST, qp, psn[qp]))
                sent_at[(qp, psn[qp])] = t
                psn[qp] += 1
        if retransmit:
            for item in [x for x in lost if x[0] == t]:
                f.send("A", roce(A_HOST, B_HOST, item[1], item[2]))
        for frame in f.delivered["B"] if ack else ():
            pkt = Ether(frame)
            f.send("B", roce(B_HOST, A_HOST, pkt[BTH].dqpn + 0x1000, pkt[BTH].psn, opcode=OP_ACK))
        f.delivered["B"].clear()
        f.step(1)
    del base_drop
    return f, {"lost": len(lost)}


def _a_sent_on(f: Fabric2, port: int, after_frame: int) -> int:
    return sum(1 for n, p, _ in f.on_wire[after_frame:] if (n, p) == ("A", port))


def _silent(f: Fabric2) -> None:
    f.cut("S1", 2)


def test_silent_remote_failure_is_left_without_the_controller(stellar_program):
    f, stats = _run(stellar_program, until=CUT_AT + 800, fault=_silent)
    # 300 us of silence + the flows' next safe point: by CUT_AT + 500 nothing goes to spine 1
    late = [i for i, (n, p, fr) in enumerate(f.on_wire) if n == "A"][-200:]
    assert all(f.on_wire[i][1] == 4 for i in late)
    assert f.sw["A"].register("fb_sent_since", (2 << 3) | 0) > 0
    assert stats["lost"] < 8 * (500 // 4)           # losses stop well before the end


def test_control_without_silence_detection_flows_keep_feeding_the_dead_link(stellar_program):
    f, stats = _run(stellar_program, until=CUT_AT + 800, fault=_silent, suspect_silence_us=0)
    late = [i for i, (n, p, fr) in enumerate(f.on_wire) if n == "A"][-200:]
    assert sum(1 for i in late if f.on_wire[i][1] == 3) >= 50
    assert stats["lost"] >= 8 * (600 // 4) // 2


def _gray(f: Fabric2) -> None:
    f.loss("S1", 2, 0.01)


def _a_packets(f: Fabric2) -> list[tuple[int, int, int, bool]]:
    """(position on A's wire, port, QP, resent) of every RoCE packet A sent to the fabric."""
    out, top = [], {}
    for i, (n, port, frame) in enumerate(f.on_wire):
        if n != "A":
            continue
        bth = Ether(unshim(frame))[BTH]
        resent = bth.psn <= top.get(bth.dqpn, -1)
        top[bth.dqpn] = max(bth.psn, top.get(bth.dqpn, -1))
        out.append((i, port, bth.dqpn, resent))
    return out


def _left_at_a_resend(f: Fabric2) -> set[int]:
    """QPs that were on the lossy path (port 3), whose resend went to the good one (port 4),
    and that sent nothing on port 3 afterwards."""
    sent = _a_packets(f)
    out = set()
    for i, port, qp, again in sent:
        if (again and port == 4 and any(p == 3 for j, p, q, _ in sent if q == qp and j < i)
                and all(p == 4 for j, p, q, _ in sent if q == qp and j > i)):
            out.add(qp)
    return out


def test_gray_failure_one_percent_loss_is_detected_and_left(stellar_program):
    """Once the path is suspect, a flow leaves it where its sender resends (the resend is the
    move point: a go-back-N receiver discards whatever the old path still holds).  The flows
    send every 4 us, so the drain proof's 8 us margin never holds: the resend is their only
    move point.  The late packets go mostly to the good path."""
    f, stats = _run(stellar_program, until=CUT_AT + 1500, fault=_gray, retransmit=True,
                    retx_threshold=3, retx_window_us=2000)
    assert f.sw["A"].register("fb_retx", (2 << 3) | 0) >= 3
    assert len(_left_at_a_resend(f)) >= 3
    assert f.sw["A"].counter("StellarIngress.flowlet.path_changes", CHANGE_RESTART) >= 3
    late = _a_packets(f)[-400:]
    assert sum(1 for _, port, _, _ in late if port == 3) < len(late) // 4


def test_control_gray_failure_without_the_restart_move_point_keeps_losing(stellar_program):
    """The path is suspect (the retransmission signal is on), but the flows send every 4 us, so
    the drain proof (the 8 us margin) never holds: without the go-back-N restart as a move
    point they stay on the lossy path."""
    from testkit.leaf import MOVE_GUARD_DRAIN_PROOF

    f, stats = _run(stellar_program, until=CUT_AT + 1500, fault=_gray, retransmit=True,
                    retx_threshold=3, retx_window_us=2000, before=lambda f: f.sw["A"].set_adapt(
                        move_guards=MOVE_GUARD_DRAIN_PROOF))
    assert _left_at_a_resend(f) == set()
    assert f.sw["A"].counter("StellarIngress.flowlet.path_changes", CHANGE_RESTART) == 0
    late = [i for i, (n, p, fr) in enumerate(f.on_wire) if n == "A"][-400:]
    assert sum(1 for i in late if f.on_wire[i][1] == 3) >= 100
    assert f.sw["A"].register("fb_retx", (2 << 3) | 0) >= 3


def test_control_gray_failure_without_the_retransmission_signal_keeps_losing(stellar_program):
    f, stats = _run(stellar_program, until=CUT_AT + 1500, fault=_gray, retransmit=True,
                    retx_threshold=0)
    late = [i for i, (n, p, fr) in enumerate(f.on_wire) if n == "A"][-400:]
    assert sum(1 for i in late if f.on_wire[i][1] == 3) >= 100


def test_one_way_traffic_is_never_silent(stellar_program):
    """Without reverse traffic nothing can carry feedback, so no answer proves nothing: a lone
    flow from A, never acked, stays on its path for 1 ms, three times the silence (before the
    rule asked that the destination leaf keep sending, the unanswered path went suspect and the
    flow moved onto the path it had never used).  The acked flows on a cut link are the silent
    case above."""
    import p4sim

    f = Fabric2(p4sim, stellar_program)
    for t in range(1000):
        if t % 4 == 0:
            f.send("A", roce(A_HOST, B_HOST, 0x100, t // 4))
        f.delivered["B"].clear()
        f.step(1)
    assert f.sw["A"].counter("StellarIngress.flowlet.path_changes", CHANGE_SUSPECT) == 0
    assert len({port for _, port, _, _ in _a_packets(f)}) == 1
