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
