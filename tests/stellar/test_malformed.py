"""Malformed and unusual input: counted by kind, dropped or forwarded by policy, never a crash."""
from __future__ import annotations

import pytest
from scapy.all import IP, UDP, Ether, IPOption_NOP, IPOption_RR, Raw, raw

from testkit.leaf import (DROP_BAD_CHECKSUM, DROP_MALFORMED, MALFORMED_BAD_IHL,
                                MALFORMED_BAD_VERSION, MALFORMED_IPV4_OPTIONS,
                                MALFORMED_TRUNC_BTH, MALFORMED_TRUNC_ETHERNET,
                                MALFORMED_TRUNC_IPV4, MALFORMED_TRUNC_TCP, MALFORMED_TRUNC_UDP,
                                UPLINKS, ip_checksum_ok, roce, tcp, udp)

ROCE = roce("10.0.1.1", "10.0.2.7", qp=3, psn=10)
ETH, IPV4, UDP_LEN, BTH_LEN = 14, 20, 8, 12


def _set_byte(frame: bytes, offset: int, value: int) -> bytes:
    return frame[:offset] + bytes([value]) + frame[offset + 1:]


def _fix_ip_checksum(frame: bytes) -> bytes:
    pkt = Ether(frame)
    pkt[IP].chksum = None
    return raw(pkt)


CASES = [
    # (name, frame, malformed kind)
    ("truncated ethernet", ROCE[:10], MALFORMED_TRUNC_ETHERNET),
    ("truncated ipv4", ROCE[:ETH + 12], MALFORMED_TRUNC_IPV4),
    ("truncated udp", ROCE[:ETH + IPV4 + 4], MALFORMED_TRUNC_UDP),
    ("truncated bth", ROCE[:ETH + IPV4 + UDP_LEN + 6], MALFORMED_TRUNC_BTH),
    ("truncated tcp", tcp("10.0.1.1", "10.0.2.7")[:ETH + IPV4 + 10], MALFORMED_TRUNC_TCP),
    ("ip version 6 in an ipv4 ethertype", _set_byte(ROCE, ETH, 0x65), MALFORMED_BAD_VERSION),
    ("ihl below 5", _set_byte(ROCE, ETH, 0x44), MALFORMED_BAD_IHL),
]


@pytest.mark.parametrize("name,frame,kind", CASES, ids=[c[0] for c in CASES])
def test_malformed_packet_is_counted_by_kind_and_dropped(leaf, name, frame, kind):
    leaf.send(1, frame)
    assert leaf.drain_output(settle_us=10) == []
    assert leaf.malformed(kind) == 1
    assert leaf.drops(DROP_MALFORMED) == 1
    # The switch keeps working afterwards.
    leaf.send(1, ROCE)
    assert len(leaf.drain_output(settle_us=10)) == 1


def test_truncated_bth_is_forwarded_as_non_roce_when_policy_says_so(leaf):
    leaf.set_params(malformed_l4_forward=1)
    frame = ROCE[:ETH + IPV4 + UDP_LEN + 6]
    leaf.send(1, frame)
    out = leaf.drain_output(settle_us=10)
    assert len(out) == 1 and out[0].port in UPLINKS
    assert leaf.malformed(MALFORMED_TRUNC_BTH) == 1
    assert leaf.drops(DROP_MALFORMED) == 0
    # The bytes after the headers are carried through untouched.
    assert out[0].frame[ETH + IPV4 + UDP_LEN:] == frame[ETH + IPV4 + UDP_LEN:]


def test_truncated_ipv4_is_dropped_even_when_l4_forwarding_is_allowed(leaf):
    leaf.set_params(malformed_l4_forward=1)
    leaf.send(1, ROCE[:ETH + 12])
    assert leaf.drain_output(settle_us=10) == []
    assert leaf.drops(DROP_MALFORMED) == 1


def test_bad_ipv4_checksum_is_dropped(leaf):
    bad = _set_byte(ROCE, ETH + 10, ROCE[ETH + 10] ^ 0xFF)
    leaf.send(1, bad)
    assert leaf.drain_output(settle_us=10) == []
    assert leaf.drops(DROP_BAD_CHECKSUM) == 1


def test_ipv4_options_are_counted_and_forwarded_intact_with_a_correct_checksum(leaf):
    pkt = (Ether() / IP(src="10.0.1.1", dst="10.0.2.7", options=[IPOption_RR(), IPOption_NOP()])
           / UDP(sport=7, dport=4791) / Raw(b"\x04" + b"\x00" * 40))
    frame = raw(pkt)
    assert Ether(frame)[IP].ihl > 5
    leaf.send(1, frame)
    out = leaf.drain_output(settle_us=10)
    assert len(out) == 1
    assert leaf.malformed(MALFORMED_IPV4_OPTIONS) == 1
    got = out[0].pkt[IP]
    assert got.ttl == pkt[IP].ttl - 1
    assert raw(got.options[0]) == raw(pkt[IP].options[0])
    assert ip_checksum_ok(out[0].pkt), "options are covered by the checksum; update was wrong"
    # Everything after the IPv4 header is unchanged.
    ihl_bytes = Ether(frame)[IP].ihl * 4
    assert out[0].frame[ETH + ihl_bytes:] == frame[ETH + ihl_bytes:]


def test_ipv4_options_truncated_inside_the_options_count_as_truncated_ipv4(leaf):
    pkt = Ether() / IP(src="10.0.1.1", dst="10.0.2.7", options=[IPOption_RR()]) / UDP()
    frame = raw(pkt)[:ETH + IPV4 + 2]
    leaf.send(1, frame)
    assert leaf.drain_output(settle_us=10) == []
    assert leaf.malformed(MALFORMED_TRUNC_IPV4) == 1


def test_non_first_fragment_is_routed_without_l4(leaf):
    frag = raw(Ether() / IP(src="10.0.1.1", dst="10.0.2.7", frag=100, proto=17) / Raw(b"\x00" * 40))
    leaf.send(1, frag)
    out = leaf.drain_output(settle_us=10)
    assert len(out) == 1 and out[0].port in UPLINKS
    assert sum(leaf.malformed(k) for k in range(1, 10)) == 0


def test_a_burst_of_garbage_never_stops_forwarding(leaf):
    import random
    rng = random.Random(7)
    for n in range(200):
        size = rng.randrange(0, 80)
        leaf.send(1, bytes(rng.randrange(256) for _ in range(size)))
    leaf.drain_output(settle_us=10)
    leaf.send(1, udp("10.0.1.1", "10.0.2.7"))
    assert len(leaf.drain_output(settle_us=10)) == 1
