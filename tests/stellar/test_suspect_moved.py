"""After a silent remote failure (issue 32, item 4): the path a flow fled to is not blamed for
the flow's resends, and flows without state leave the silent path too (fabric2.py).

* A flow that moved off a dead path resends there what it had lost: those PSNs were first sent
  on the dead path (``flow_move_psn``), so they are not counted against the live path.  If they
  were, the live path turns lossy too, every member of the destination is suspect, and nothing
  is left to move to (in the lab AlltoAll with a 524 us timeout that kept 6 flows on the dead
  spine until the controller's re-push, 5.4 ms).  Control: the same resends from a flow that
  has always been on the live path are counted.
* A flow whose slot another active flow holds is routed by hash (untracked).  The hash skips a
  silent member while a live one is left: what goes to a silent path is lost, so leaving it
  cannot reorder.  Control: with silence detection off the hashed flow keeps feeding the dead
  link.
"""
from __future__ import annotations

import ipaddress
import zlib

from scapy.all import Ether
from scapy.contrib.roce import BTH

from tests.stellar.fabric2 import A_HOST, B_HOST, Fabric2, unshim
from tests.stellar.test_suspect import CUT_AT, _a_packets, _run, _silent
from testkit.leaf import CHANGE_RESTART, CHANGE_SUSPECT, OP_ACK, roce

LIVE_PATH = (2 << 3) | 1     # fb_* index of (leaf B, member 1 = port 4, spine 2)
DEAD_PATH = (2 << 3) | 0     # (leaf B, member 0 = port 3, spine 1, whose downlink is cut)
FLOW_SLOTS = 8192


def _moved_resends(f: Fabric2) -> int:
    """Resends A sent on the live port (4) by flows that had been on the dead one (3)."""
    sent = _a_packets(f)
    were_on_3 = {qp for _, port, qp, _ in sent if port == 3}
    return sum(1 for _, port, qp, again in sent if again and port == 4 and qp in were_on_3)


def test_resends_after_leaving_a_dead_path_do_not_make_the_live_path_lossy(stellar_program):
    f, _ = _run(stellar_program, until=CUT_AT + 600, fault=_silent, retransmit=True,
                retx_threshold=2, retx_window_us=2000)
    moves = sum(f.sw["A"].counter("StellarIngress.flowlet.path_changes", r) for r in (CHANGE_SUSPECT, CHANGE_RESTART))
    assert moves >= 1
    assert _moved_resends(f) >= 2                    # enough to reach the threshold if counted
    assert f.sw["A"].register("fb_retx", LIVE_PATH) == 0
    late = [p for n, p, _ in f.on_wire if n == "A"][-100:]
    assert set(late) == {4}                          # nobody went back to the dead path


def test_control_resends_of_a_flow_that_stayed_are_counted(stellar_program):
    f, _ = _run(stellar_program, until=CUT_AT + 600, fault=_silent, retransmit=True,
                retx_threshold=2, retx_window_us=2000)
    sent = _a_packets(f)
    stayed = sorted({qp for _, p, qp, _ in sent} - {qp for _, p, qp, _ in sent if p == 3})
    assert stayed, "no flow was on the live path from the start"
    before = f.sw["A"].register("fb_retx", LIVE_PATH)
    for _ in range(3):
        f.send("A", roce(A_HOST, B_HOST, stayed[0], 0))
        f.step(1)
    assert f.sw["A"].register("fb_retx", LIVE_PATH) == before + 3


# ----------------------------------------------------------------------------- flows without state
def _key(qp: int) -> bytes:
    return (int(ipaddress.IPv4Address(A_HOST)).to_bytes(4, "big")
            + int(ipaddress.IPv4Address(B_HOST)).to_bytes(4, "big") + bytes([17]) + qp.to_bytes(4, "big"))


def _colliding_pair_hashed_to_spine1() -> tuple[int, int]:
    """(owner, other): two QPs in the same flow slot (crc32 of the flow key mod FLOW_SLOTS), the
    other's hash member being member 0 (rotation crc32 mod 65521 mod 2 == 0: port 3)."""
    seen: dict[int, int] = {}
    for qp in range(0x100, 200_000):
        crc = zlib.crc32(_key(qp))
        slot = crc % FLOW_SLOTS
        if slot in seen and crc % 65521 % 2 == 0:
            return seen[slot], qp
        seen.setdefault(slot, qp)
    raise AssertionError("no colliding pair")


def _qp_on_spine1() -> int:
    """A QP whose rotation puts it on member 0 (port 3) when the members score alike."""
    return next(qp for qp in range(0x100, 0x1000) if zlib.crc32(_key(qp)) % 65521 % 2 == 0)


def _hashed_flow_run(stellar_program, **fb) -> tuple[Fabric2, list[int]]:
    """Owner and other both send every 4 us, acked by B, and B's host sends to A's as often;
    S1's downlink to B is cut at CUT_AT.
    Returns the fabric and A's uplink for each of the other's packets."""
    import p4sim

    owner, other = _colliding_pair_hashed_to_spine1()
    f = Fabric2(p4sim, stellar_program, **fb)
    psn = {owner: 0, other: 0}
    for t in range(CUT_AT + 700):
        if t == CUT_AT:
            _silent(f)
        if t % 4 == 0:
            for qp in (owner, other):      # the owner first: it holds the slot
                f.send("A", roce(A_HOST, B_HOST, qp, psn[qp]))
                psn[qp] += 1
            # B's own traffic to A: leaf B keeps sending, so an unanswered path is silent
            f.send("B", roce(B_HOST, A_HOST, 0x3000, t // 4))
        for frame in f.delivered["B"]:
            pkt = Ether(frame)
            f.send("B", roce(B_HOST, A_HOST, pkt[BTH].dqpn + 0x1000, pkt[BTH].psn, opcode=OP_ACK))
        f.delivered["B"].clear()
        f.step(1)
    ports = [p for n, p, fr in f.on_wire if n == "A" and Ether(unshim(fr))[BTH].dqpn == other]
    return f, ports


def test_a_flow_routed_by_hash_leaves_a_silent_path(stellar_program):
    f, ports = _hashed_flow_run(stellar_program)
    assert f.sw["A"].counter("StellarIngress.flowlet.collisions", 0) > 100   # really untracked
    assert ports[:CUT_AT // 4] == [3] * (CUT_AT // 4)                      # hashed to spine 1
    assert set(ports[-60:]) == {4}                 # after the silence: spine 2 only


def test_control_a_flow_routed_by_hash_stays_on_the_dead_link_without_silence(stellar_program):
    f, ports = _hashed_flow_run(stellar_program, suspect_silence_us=0)
    assert f.sw["A"].counter("StellarIngress.flowlet.collisions", 0) > 100
    assert set(ports[-60:]) == {3}
    assert f.sw["A"].register("fb_sent_since", DEAD_PATH) > 0


# ----------------------------------------------------------------------------- a leaf that paused
def _pause_run(stellar_program) -> Fabric2:
    """A's flow and B's host send to each other every 4 us until t=100; B resumes at t=500 and
    A at t=520.  In the pause A sends one packet (t=110), which B can answer only when it sends
    again.  B's first frame after the pause, which carries that answer, is lost on the wire (in
    the lab it sat behind a queue while later frames overtook it), so A hears B for 20 us
    without an answer.  The path is live throughout."""
    import p4sim

    f = Fabric2(p4sim, stellar_program)
    qp, psn = _qp_on_spine1(), 0
    state = {"lost": 0}

    def lose_first_after_pause(sw, port, frame):
        if sw == "B" and port in (3, 4) and state["t"] >= 500 and not state["lost"]:
            state["lost"] = 1
            return True
        return False

    f.drop = lose_first_after_pause
    for t in range(900):
        state["t"] = t
        if (t % 4 == 0 and (t < 100 or t >= 520)) or t == 110:   # 110: unanswered until B resumes
            f.send("A", roce(A_HOST, B_HOST, qp, psn))
            psn += 1
        if t % 4 == 0 and (t < 100 or t >= 500):
            f.send("B", roce(B_HOST, A_HOST, 0x3000, t // 4))
        f.delivered["B"].clear()
        f.step(1)
    assert state["lost"] == 1
    return f


def test_a_leaf_that_paused_has_not_answered_yet(stellar_program):
    """Before the rule, the path went silent on B's second frame after the pause (A's send was
    ~400 us old and B "had been heard" 400 us after it), and the flow moved off a live path."""
    f = _pause_run(stellar_program)
    assert f.sw["A"].counter("StellarIngress.flowlet.path_changes", CHANGE_SUSPECT) == 0
    assert {port for _, port, _, _ in _a_packets(f)} == {3}


def test_control_a_leaf_that_keeps_sending_without_answering_silences_the_path(stellar_program):
    """The same traffic with no pause on B's side and the path really cut: silent, the flow
    moves (a run of B's packets covers half the silence after A's unanswered send)."""
    import p4sim

    f = Fabric2(p4sim, stellar_program)
    qp = _qp_on_spine1()
    for t in range(900):
        if t == 100:
            _silent(f)
        if t % 4 == 0:
            f.send("A", roce(A_HOST, B_HOST, qp, t // 4))
            f.send("B", roce(B_HOST, A_HOST, 0x3000, t // 4))
        f.delivered["B"].clear()
        f.step(1)
    ports = [port for _, port, _, _ in _a_packets(f)]
    assert ports[:25] == [3] * 25                   # on the path that is cut at t=100
    assert f.sw["A"].counter("StellarIngress.flowlet.path_changes", CHANGE_SUSPECT) == 1
    assert set(ports[-50:]) == {4}


def _qp_with_rotation(r: int) -> int:
    return next(qp for qp in range(0x100, 0x1000) if zlib.crc32(_key(qp)) % 65521 % 2 == r)


def test_a_leaf_that_answers_another_path_after_a_pause_silences_the_dead_one(stellar_program):
    """A sends on both paths throughout; spine 1's downlink to B is cut at t=90 while B's host
    is quiet (t=100..500).  When B resumes it answers A's path over spine 2 but never the one
    over spine 1: that proves the silence at once, without waiting for a run of B's packets
    (with the run alone, the flow on the dead path moved 150 us after B resumed, at t=650)."""
    import p4sim

    f = Fabric2(p4sim, stellar_program)
    dead, live = _qp_with_rotation(0), _qp_with_rotation(1)
    moved_at = None
    for t in range(800):
        if t == 90:
            _silent(f)
        if t % 4 == 0:
            for qp in (dead, live):
                f.send("A", roce(A_HOST, B_HOST, qp, t // 4))
            if t < 100 or t >= 500:
                f.send("B", roce(B_HOST, A_HOST, 0x3000, t // 4))
        f.delivered["B"].clear()
        f.step(1)
        if moved_at is None and f.sw["A"].counter("StellarIngress.flowlet.path_changes", CHANGE_SUSPECT):
            moved_at = t
    ports = {qp: [p for n, p, fr in f.on_wire if n == "A" and Ether(unshim(fr))[BTH].dqpn == qp]
             for qp in (dead, live)}
    assert ports[dead][0] == 3 and set(ports[live]) == {4}
    assert moved_at is not None and 500 <= moved_at < 540, moved_at
    assert set(ports[dead][-50:]) == {4}
