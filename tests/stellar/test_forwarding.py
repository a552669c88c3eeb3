"""Routing basics of stellar.p4: LPM -> path set -> member, TTL, checksum, MAC rewrite, drops."""
from __future__ import annotations

from scapy.all import IP

from testkit.leaf import (DROP_NO_PATH_SET, DROP_NO_ROUTE, DROP_NOT_IPV4, DROP_TTL_EXPIRED,
                                ING, UPLINKS, ip_checksum_ok, mac_of, neighbour_mac, roce, udp)


def test_remote_destination_leaves_on_an_uplink_with_ttl_checksum_and_macs_rewritten(leaf):
    leaf.send(1, roce("10.0.1.1", "10.0.2.7", qp=5, psn=1, ttl=64))
    out = leaf.drain_output(settle_us=10)
    assert len(out) == 1
    d = out[0]
    assert d.port in UPLINKS
    assert d.pkt[IP].ttl == 63
    assert ip_checksum_ok(d.pkt), "incremental checksum update after the TTL decrement is wrong"
    assert d.pkt.src == mac_of(d.port) and d.pkt.dst == neighbour_mac(d.port)
    assert d.psn == 1 and d.qp == 5


def test_local_host_route_uses_its_single_member_port(leaf):
    leaf.send(3, roce("10.0.2.7", "10.0.1.2", qp=9, psn=0))
    out = leaf.drain_output(settle_us=10)
    assert [d.port for d in out] == [2]


def test_unknown_destination_is_dropped_and_counted(leaf):
    leaf.send(1, udp("10.0.1.1", "192.0.2.1"))
    assert leaf.drain_output(settle_us=10) == []
    assert leaf.drops(DROP_NO_ROUTE) == 1


def test_ttl_one_is_dropped_not_forwarded(leaf):
    leaf.send(1, roce("10.0.1.1", "10.0.2.7", qp=5, psn=1, ttl=1))
    assert leaf.drain_output(settle_us=10) == []
    assert leaf.drops(DROP_TTL_EXPIRED) == 1


def test_route_to_a_missing_path_set_is_dropped(leaf):
    leaf.sw.insert_entry(f"{ING}.routing.lpm", {"hdr.ipv4.dst_addr": ("10.9.0.0", 16)},
                         f"{ING}.routing.set_path_set", {"path_set_id": 999})
    leaf.send(1, udp("10.0.1.1", "10.9.1.1"))
    assert leaf.drain_output(settle_us=10) == []
    assert leaf.drops(DROP_NO_PATH_SET) == 1


def test_non_ipv4_is_dropped_and_counted(leaf):
    arp_like = bytes.fromhex("ffffffffffff020000000909" "0806") + b"\x00" * 28
    leaf.send(1, arp_like)
    assert leaf.drain_output(settle_us=10) == []
    assert leaf.drops(DROP_NOT_IPV4) == 1


def test_received_packets_are_counted_per_ingress_port(leaf):
    for _ in range(3):
        leaf.send(2, udp("10.0.1.2", "10.0.2.1"))
    leaf.drain_output(settle_us=10)
    assert leaf.counter(f"{ING}.telemetry.rx_port", 2) == 3


def test_a_flow_stays_on_one_uplink_without_congestion(leaf):
    for psn in range(20):
        leaf.send(1, roce("10.0.1.1", "10.0.2.7", qp=77, psn=psn))
        leaf.advance(1)
    ports = {d.port for d in leaf.drain_output(settle_us=10)}
    assert len(ports) == 1


def test_vlan_tagged_packet_is_routed_with_its_tag(leaf):
    from scapy.all import UDP, Dot1Q, Ether, Raw, raw
    frame = raw(Ether() / Dot1Q(vlan=42, prio=3) / IP(src="10.0.1.1", dst="10.0.2.7")
                / UDP(sport=1, dport=2) / Raw(b"\x00" * 20))
    leaf.send(1, frame)
    out = leaf.drain_output(settle_us=10)
    assert len(out) == 1 and out[0].port in UPLINKS
    assert out[0].pkt[Dot1Q].vlan == 42 and out[0].pkt[IP].ttl == 63
    assert ip_checksum_ok(out[0].pkt)


def test_switch_without_priority_queues_works_with_an_empty_queue_map(stellar_program):
    """BMv2's default is one queue per port; an unconfigured queue_map must then keep every
    packet in queue 0 (priority >= the number of queues would be dropped)."""
    import p4sim

    from testkit.leaf import Leaf
    single = Leaf(p4sim, stellar_program, priority_queues=1, queue_map=False)
    for dscp in (0, 8, 46, 48):
        single.send(1, roce("10.0.1.1", "10.0.2.7", qp=dscp, psn=0, dscp=dscp))
    assert len(single.drain_output(settle_us=10)) == 4
