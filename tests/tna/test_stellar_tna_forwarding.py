"""Stellar on Tofino (p4src/tna/stellar.p4 in p4sim's TNA pipe): forwarding and malformed input."""
from __future__ import annotations

from scapy.all import IP, Ether

from tna_leaf import (DROP_MALFORMED, DROP_NO_ROUTE, DROP_NOT_IPV4, DROP_TTL_EXPIRED, ING,
                      TnaLeaf, program, roce, udp)


def _ip(frame: bytes):
    return Ether(frame)[IP]


def test_tna_stellar_compiles_for_tofino_and_tofino2():
    assert program(1).ir.arch == "tna" and program(1).ir.tofino_target == 1
    assert program(2).ir.tofino_target == 2
    assert program(2).ir.arch == "t2na"          # Tofino2 builds include t2na.p4


def test_routes_to_the_uplinks_decrements_ttl_and_rewrites_the_checksum():
    leaf = TnaLeaf()
    leaf.send(roce("10.0.1.1", "10.0.2.9", 5, 0, ttl=64))
    (port, frame), = leaf.out()
    ip = _ip(frame)
    assert port in (2, 3) and ip.ttl == 63
    assert _csum_ok(frame[14:34])
    # the bridged header stayed inside the switch: same length as what came in
    assert len(frame) == len(roce("10.0.1.1", "10.0.2.9", 5, 0))


def _csum_ok(hdr: bytes) -> bool:
    s = sum(int.from_bytes(hdr[i:i + 2], "big") for i in range(0, len(hdr), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s == 0xFFFF


def test_local_host_route_and_no_route():
    leaf = TnaLeaf()
    leaf.send(udp("10.0.2.9", "10.0.1.1"), port=2)
    assert [p for p, _ in leaf.out()] == [1]
    leaf.send(udp("10.0.1.1", "192.168.0.1"))
    assert leaf.out() == []
    assert leaf.counter(f"{ING}.telemetry.drops", DROP_NO_ROUTE) == 1


def test_ttl_expiry_is_dropped_and_counted():
    leaf = TnaLeaf()
    leaf.send(roce("10.0.1.1", "10.0.2.9", 5, 0, ttl=1))
    assert leaf.out() == [] and leaf.counter(f"{ING}.telemetry.drops", DROP_TTL_EXPIRED) == 1
    leaf.send(roce("10.0.1.1", "10.0.2.9", 5, 0, ttl=2))  # negative control: TTL 2 passes
    assert len(leaf.out()) == 1


def test_malformed_input_is_dropped_and_counted_nothing_crashes():
    leaf = TnaLeaf()
    good = roce("10.0.1.1", "10.0.2.9", 5, 0)
    for cut in (5, 20, 30, 40, 50):  # truncated in Ethernet, IPv4, UDP, BTH
        leaf.send(good[:cut])
    assert leaf.out() == []
    assert leaf.counter(f"{ING}.telemetry.drops", DROP_MALFORMED) == 5
    assert leaf.sw.stats["runtime_error"] == 0
    leaf.send(bytes(14) + b"\x00" * 40)  # EtherType 0: not IPv4
    assert leaf.out() == [] and leaf.counter(f"{ING}.telemetry.drops", DROP_NOT_IPV4) == 1
    leaf.send(good)  # negative control: the whole packet is forwarded
    assert len(leaf.out()) == 1


def test_random_garbage_never_breaks_the_pipe():
    import random
    rng = random.Random(7)
    leaf = TnaLeaf()
    for i in range(300):
        n = rng.randrange(0, 120)
        data = bytearray(rng.getrandbits(8) for _ in range(n))
        if n > 14 and i % 2:
            data[12:14] = b"\x08\x00"            # half of them claim to be IPv4
        leaf.send(bytes(data), port=rng.choice([1, 2, 3, 68]))
    leaf.sw.advance(1000)
    leaf.out()
    st = leaf.sw.stats
    assert st["runtime_error"] == 0 and st["received"] >= 300
    leaf.send(roce("10.0.1.1", "10.0.2.9", 5, 0))  # and it still forwards
    assert len(leaf.out()) == 1


def _with_options(tos: int = 0, words: int = 4) -> bytes:
    from scapy.all import UDP, IPOption_NOP, Raw, raw
    return raw(Ether() / IP(src="10.0.1.1", dst="10.0.2.9", tos=tos, ttl=64,
                            options=[IPOption_NOP()] * (4 * words)) /
               UDP(sport=1, dport=2) / Raw(b"x" * 32))


def test_ipv4_options_are_counted_and_forwarded_with_a_correct_checksum():
    leaf = TnaLeaf()
    pkt = _with_options(words=4)                 # IHL 9
    leaf.send(pkt)
    (port, frame), = leaf.out()
    hdr = frame[14:14 + 36]
    assert port in (2, 3) and _ip(frame).ttl == 63 and _ip(frame).ihl == 9
    assert frame[34:50] == pkt[34:50]            # the options words are untouched
    assert _csum_ok(hdr)                         # options included (incremental update)
    # negative control: the checksum of the 20 fixed bytes alone (what a deparser that
    # recomputes over the fixed fields writes) is not this packet's checksum
    assert not _csum_ok(hdr[:20])
    assert leaf.counter(f"{ING}.telemetry.malformed", 8) == 1   # MALFORMED_IPV4_OPTIONS


def test_an_ecn_mark_on_a_packet_with_options_keeps_the_checksum_right():
    from tna_leaf import EGR
    leaf = TnaLeaf()
    for port in (2, 3):                          # mark everything with any queue
        leaf.sw.insert_entry(f"{EGR}.ecn.prob", {"port": port, "meta.qdelay_8ns": (0, 0xFFFF)},
                             f"{EGR}.ecn.set_prob", {"prob": 0xFFFF}, priority=10)
    leaf.send(_with_options(tos=2, words=2))     # ECT(0)
    (port, frame), = leaf.out()
    assert _ip(frame).tos & 3 == 3 and _csum_ok(frame[14:14 + 28])


def test_a_vlan_tagged_packet_is_routed_with_its_tag():
    from scapy.all import UDP, Dot1Q, Raw, raw
    from scapy.contrib.roce import BTH
    leaf = TnaLeaf()
    pkt = raw(Ether() / Dot1Q(vlan=7, prio=3) / IP(src="10.0.1.1", dst="10.0.2.9", ttl=64) /
              UDP(sport=49152, dport=4791) / BTH(opcode=4, dqpn=5, psn=0) / Raw(b"\x00" * 64))
    leaf.send(pkt)
    (port, frame), = leaf.out()
    e = Ether(frame)
    assert port in (2, 3) and e[Dot1Q].vlan == 7 and e[Dot1Q].prio == 3
    assert e[IP].ttl == 63 and _csum_ok(frame[18:38]) and e[BTH].dqpn == 5
    assert leaf.counter(f"{ING}.telemetry.elephants", 0) == 1      # parsed as a flow


def test_negative_control_a_tag_without_ipv4_inside_is_not_routed():
    from scapy.all import Dot1Q, Raw, raw
    leaf = TnaLeaf()
    leaf.send(raw(Ether() / Dot1Q(vlan=7, type=0x86DD) / Raw(b"\x00" * 60)))
    assert leaf.out() == [] and leaf.counter(f"{ING}.telemetry.drops", DROP_NOT_IPV4) == 1
