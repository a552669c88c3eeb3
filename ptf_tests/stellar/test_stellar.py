"""Stellar over P4Runtime and PTF ports: forwarding, failover, adaptive choice, malformed input.

The in-process tests (tests/stellar/) study each mechanism in depth; these check that the same
program, configured only through P4Runtime, behaves the same across a real port boundary, so
the suite can run unchanged against BMv2.
"""
from __future__ import annotations

import ptf.testutils as tu
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from ptf_tests.stellar.stellar_base import (CHANGE_FAILOVER, DROP_MALFORMED, DROP_NO_ROUTE, ING,
                                            MALFORMED_IPV4_OPTIONS, MALFORMED_TRUNC_IPV4,
                                            SWITCH_MAC, StellarTest, udp_flow)

NEXT_HOP = "02:00:00:00:02:02"
FLOWS = range(7000, 7024)


class StellarForwardTest(StellarTest):
    """Route -> path set -> port, next-hop MACs from port_mac, TTL - 1, checksum updated."""

    def runTest(self):
        self.route("10.0.2.0", 24, 1)
        self.path_set(1, [2])
        self.port_macs(2, SWITCH_MAC, NEXT_HOP)
        pkt = udp_flow(7000)
        tu.send_packet(self, 1, pkt)
        exp = pkt.copy()
        exp[Ether].src, exp[Ether].dst = SWITCH_MAC, NEXT_HOP
        exp[IP].ttl -= 1
        del exp[IP].chksum
        tu.verify_packet(self, Ether(bytes(exp)), 2)
        tu.verify_no_other_packets(self)
        # Negative control: no route -> dropped and counted as no_route.
        before = self.counter(f"{ING}.telemetry.drops", DROP_NO_ROUTE)
        self.send_settled(1, udp_flow(7001, dst="10.9.9.9"))
        tu.verify_no_other_packets(self)
        self.assertEqual(self.counter(f"{ING}.telemetry.drops", DROP_NO_ROUTE), before + 1)


class StellarFailoverTest(StellarTest):
    """After the controller marks a member dead, no packet leaves on it and its flows move."""

    def round(self) -> dict[int, int]:
        for sport in FLOWS:
            tu.send_packet(self, 1, udp_flow(sport))
        return {Ether(data)[UDP].sport: port for port, data in self.collect(len(FLOWS))}

    def runTest(self):
        self.route("10.0.2.0", 24, 1)
        self.path_set(1, [2, 3], ecmp=True)  # hash spreads the flows over both members
        before = self.round()
        on_2 = {s for s, p in before.items() if p == 2}
        self.assertTrue(0 < len(on_2) < len(FLOWS), f"setup: flows should use both ports: {before}")
        self.assertEqual(self.round(), before)  # control: without the write nothing moves
        moves = self.counter(f"{ING}.flowlet.path_changes", CHANGE_FAILOVER)
        self.port_down(2)
        after = self.round()
        self.assertNotIn(2, after.values())
        self.assertEqual(self.counter(f"{ING}.flowlet.path_changes", CHANGE_FAILOVER), moves + len(on_2))
        self.assertTrue(all(after[s] == before[s] for s in FLOWS if s not in on_2))


class StellarAdaptiveChoiceTest(StellarTest):
    """New flows avoid the member whose congestion level the controller raised; ECMP does not."""

    def ports_of_new_flows(self, first_sport: int) -> set[int]:
        sports = range(first_sport, first_sport + 16)
        for sport in sports:
            tu.send_packet(self, 1, udp_flow(sport))
        return {port for port, _ in self.collect(len(sports))}

    def runTest(self):
        self.route("10.0.2.0", 24, 1)
        self.path_set(1, [2, 3], levels=[500, 0])
        self.assertEqual(self.ports_of_new_flows(8000), {3})
        # Control: the same levels in ECMP mode -> hashing uses the congested port too.
        self.p4rt.write(self._undo.pop())  # the path set's own undo (DELETE), run early
        self.path_set(1, [2, 3], levels=[500, 0], ecmp=True)
        self.assertEqual(self.ports_of_new_flows(9000), {2, 3})


class StellarMalformedTest(StellarTest):
    """A truncated IPv4 header is dropped and counted; IPv4 with options is forwarded intact."""

    def runTest(self):
        self.route("10.0.2.0", 24, 1)
        self.path_set(1, [2])
        trunc_before = self.counter(f"{ING}.telemetry.malformed", MALFORMED_TRUNC_IPV4)
        drop_before = self.counter(f"{ING}.telemetry.drops", DROP_MALFORMED)
        truncated = bytes(udp_flow(7100))[:14 + 10]
        self.send_settled(1, truncated)
        tu.verify_no_other_packets(self)
        self.assertEqual(self.counter(f"{ING}.telemetry.malformed", MALFORMED_TRUNC_IPV4), trunc_before + 1)
        self.assertEqual(self.counter(f"{ING}.telemetry.drops", DROP_MALFORMED), drop_before + 1)

        opts_before = self.counter(f"{ING}.telemetry.malformed", MALFORMED_IPV4_OPTIONS)
        pkt = (Ether(dst=SWITCH_MAC, src="02:00:00:00:01:01")
               / IP(src="10.0.1.1", dst="10.0.2.7", ttl=9, options=b"\x01\x01\x01\x00")
               / UDP(sport=7101, dport=5000) / (b"o" * 30))
        tu.send_packet(self, 1, pkt)
        exp = pkt.copy()
        exp[IP].ttl -= 1
        del exp[IP].chksum
        tu.verify_packet(self, Ether(bytes(exp)), 2)
        self.assertEqual(self.counter(f"{ING}.telemetry.malformed", MALFORMED_IPV4_OPTIONS), opts_before + 1)


class StellarEcnVirtualClockTest(StellarTest):
    """With a 1000 pps queue, a burst's later ECT packets wait >= 1000 µs (above Kmax) and leave
    marked CE; the first (no queue) is not; a non-ECT burst is never marked."""

    def burst(self, tos: int, first_sport: int) -> list[int]:
        pkts = [udp_flow(first_sport, tos=tos) for _ in range(5)]
        before = self.received_count()
        for p in pkts:
            tu.send_packet(self, 1, p)
        self.wait_ingested(before, len(pkts))
        out = self.collect(1)  # the head of the burst leaves at once
        self.advance_us(4000)  # the other four, one per 1000 µs
        out += self.collect(4)
        self.advance_us(1000)  # let the port finish sending the last one
        return [Ether(data)[IP].tos & 3 for _, data in out]

    def runTest(self):
        self.require_virtual_clock()
        self.route("10.0.2.0", 24, 1)
        self.path_set(1, [2])
        self.target.set_queue_rate(1000, port=2)
        try:
            marks = self.counter("StellarEgress.ecn.marks", 2)
            self.assertEqual(self.burst(tos=0x02, first_sport=7200), [2, 3, 3, 3, 3])  # ECT(0) -> CE
            self.assertEqual(self.counter("StellarEgress.ecn.marks", 2), marks + 4)
            # Control: the same queueing with non-ECT packets marks nothing.
            self.assertEqual(self.burst(tos=0x00, first_sport=7300), [0, 0, 0, 0, 0])
            self.assertEqual(self.counter("StellarEgress.ecn.marks", 2), marks + 4)
        finally:
            self.target.set_queue_rate(0, port=2)


class StellarQueueDelayAdaptiveTest(StellarTest):
    """A backlog on port 2 (its egress reports the queue delay) steers new flows to port 3 with
    adaptive choice; ECMP mode (control) keeps hashing flows onto the congested port."""

    HOT, COOL = 2, 3

    def place_new_flows(self, ecmp: bool, base: int) -> set[int]:
        """Flows use ports ``base``.. so that no flow state from another test applies."""
        self.route("10.0.2.0", 24, 1)
        self.path_set(1, [self.HOT, self.COOL], levels=[0, 1000])  # pin the hog flow to HOT
        self.target.set_queue_rate(100_000, port=self.HOT)          # one packet per 10 µs
        try:
            before = self.received_count()
            for _ in range(30):
                tu.send_packet(self, 1, udp_flow(base))
            self.wait_ingested(before, 30)
            self.modify_path_set(1, [self.HOT, self.COOL], ecmp=ecmp)  # levels back to 0
            self.advance_us(50)           # a few hog packets leave: egress reports ~50 µs delay
            self.collect(6)
            sports = range(base + 1, base + 17)
            before = self.received_count()
            for sport in sports:
                tu.send_packet(self, 1, udp_flow(sport, src="10.0.1.2"))
            self.wait_ingested(before, len(sports))
            self.advance_us(1000)         # long enough for the whole backlog (and anything behind it)
            placed = {Ether(d)[UDP].sport: port for port, d in self.collect_ports(len(sports), sports)}
        finally:
            self.target.set_queue_rate(0, port=self.HOT)
            self.advance_us(1000)         # drain the rest of the backlog before the next test
        return set(placed.values())

    def collect_ports(self, count: int, sports) -> list[tuple[int, bytes]]:
        """New-flow packets, skipping any hog packet that left meanwhile."""
        out = []
        while len(out) < count:
            port, data = self.collect(1)[0]
            if Ether(data)[UDP].sport in sports:
                out.append((port, data))
        return out

    def runTest(self):
        self.require_virtual_clock()
        self.assertEqual(self.place_new_flows(ecmp=False, base=6000), {self.COOL})


class StellarQueueDelayEcmpControlTest(StellarQueueDelayAdaptiveTest):
    def runTest(self):
        self.require_virtual_clock()
        self.assertEqual(self.place_new_flows(ecmp=True, base=6100), {self.HOT, self.COOL})
