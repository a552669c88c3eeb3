"""Path feedback between leaves (issue 32, item 1), on two leaves and two spines (fabric2.py).

* The shim is on the wire between leaves and never at a host port: the host receives the same
  bytes with feedback on as with it off, and the RoCE ICRC still verifies.
* Feedback on vs off: spine 1's downlink to leaf B is congested by traffic leaf A cannot see.
  With feedback, A learns it from B's reverse packets and places new flows on spine 2; without,
  A's view is local only (both uplinks idle) and half of the new flows go into the congestion.
"""
from __future__ import annotations

from collections import Counter

import pytest
from scapy.all import Ether, raw
from scapy.contrib.roce import BTH

from tests.stellar.fabric2 import A_HOST, B_HOST, Fabric2, unshim
from testkit.leaf import ING, OP_ACK, roce

ETHERTYPE_FB = 0x88B5


def _icrc_ok(frame: bytes) -> bool:
    bth = Ether(frame)[BTH]
    data = raw(bth)
    return bth.compute_icrc(data) == data[-4:]


@pytest.fixture
def fabric(stellar_program):
    import p4sim
    return Fabric2(p4sim, stellar_program)


def _one_packet(stellar_program, feedback: bool) -> tuple[list[bytes], list[bytes]]:
    import p4sim
    f = Fabric2(p4sim, stellar_program, feedback=feedback)
    f.send("A", roce(A_HOST, B_HOST, 0x51, 3, payload=256))
    f.step(5)
    return f.delivered["B"], [fr for n, _, fr in f.on_wire if n == "A"]


def test_the_shim_crosses_the_fabric_and_never_reaches_a_host(stellar_program):
    [with_fb], wire = _one_packet(stellar_program, True)
    [without], _ = _one_packet(stellar_program, False)
    assert [int.from_bytes(fr[12:14], "big") for fr in wire] == [ETHERTYPE_FB]
    assert with_fb == without                       # bit for bit what the host gets without feedback
    assert int.from_bytes(with_fb[12:14], "big") == 0x0800 and _icrc_ok(with_fb)
    assert len(wire[0]) == len(with_fb) + 8         # the shim's headroom: 8 bytes on fabric links


def test_control_feedback_off_sends_no_shim(stellar_program):
    _, wire = _one_packet(stellar_program, False)
    assert [int.from_bytes(fr[12:14], "big") for fr in wire] == [0x0800]


def test_destination_records_the_path_and_returns_it_on_reverse_traffic(fabric):
    fabric.send("A", roce(A_HOST, B_HOST, 0x51, 0))
    fabric.step(3)
    uplink = fabric.first_hop()[0]
    pos = (3, 4).index(uplink)
    b = fabric.sw["B"]
    assert b.register("fb_from_new", 1) == 1 << pos
    fabric.send("B", roce(B_HOST, A_HOST, 0x52, 0, opcode=OP_ACK))   # an ACK back to A
    fabric.step(3)
    assert b.register("fb_from_new", 1) == 0                          # returned once
    a = fabric.sw["A"]
    assert a.register("fb_to_stamp", (2 << 3) | pos) > 0              # A: congestion-to-leaf 2
    assert a.counter(f"{ING}.feedback.shims", 3) == 1
    assert len(fabric.delivered["A"]) == 1 and _icrc_ok(fabric.delivered["A"][0])


CONGESTED_DOWNLINK = ("S1", 2)


def _congest_and_place(stellar_program, feedback: bool) -> Counter:
    """Spine 1's downlink to B runs at 1 packet / 2 us and holds a standing queue of background
    traffic (injected at spine 1 as if from a third leaf); A sends a few flows, B answers each
    packet with an ACK (the reverse traffic that carries feedback), then 20 new flows start."""
    import p4sim
    f = Fabric2(p4sim, stellar_program, feedback=feedback)
    s1 = f.sw["S1"]
    s1.sw.set_queue_rate(500_000, port=2)
    qp_bg, qp = 0x900, 0x100
    for t in range(300):
        if t % 2 == 0:
            for _ in range(2):                  # background: 1 packet/us into a 0.5 packet/us link
                s1.send(3, roce("10.0.3.1", B_HOST, qp_bg, t))
        if t % 10 == 0:
            for i in range(4):                  # A's warm-up flows, both paths
                f.send("A", roce(A_HOST, B_HOST, qp + i, t // 10))
        for frame in f.delivered["B"][:]:
            pkt = Ether(frame)
            if pkt[BTH].dqpn != qp_bg:
                f.send("B", roce(B_HOST, A_HOST, pkt[BTH].dqpn + 0x1000, pkt[BTH].psn, opcode=OP_ACK))
        f.delivered["B"].clear()
        f.step(1)
    start = len(f.on_wire)
    for i in range(20):
        f.send("A", roce(A_HOST, B_HOST, 0x300 + i, 0))
        f.step(1)
    return Counter(p for n, p, fr in f.on_wire[start:] if n == "A"
                   and 0x300 <= Ether(unshim(fr))[BTH].dqpn < 0x320)


def test_feedback_steers_new_flows_away_from_remote_congestion(stellar_program):
    per_port = _congest_and_place(stellar_program, feedback=True)
    assert per_port[4] >= 18, per_port


def test_control_without_feedback_half_the_new_flows_meet_the_remote_congestion(stellar_program):
    per_port = _congest_and_place(stellar_program, feedback=False)
    assert per_port[3] >= 8, per_port
