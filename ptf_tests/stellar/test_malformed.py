"""Malformed input: truncated IPv4, UDP and BTH headers are dropped and counted by kind (the
malformed counter, read over P4Runtime), and the switch keeps forwarding afterwards.

Per architecture: v1model counts each truncation under the header that was cut; the TNA program
counts every truncation as MALFORMED_OTHER (its ingress sees the parser's error code, which does
not say which header was short) and has no policy to forward a truncated L4 header (every
parser error is dropped), so the forward-policy test skips there."""
from __future__ import annotations

import ptf.testutils as tu
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from ptf_tests.stellar.stellar_base import (DROP_MALFORMED, HOST_MAC, HOST_PORT,
                                            MALFORMED_IPV4_OPTIONS, MALFORMED_OTHER,
                                            MALFORMED_TRUNC_BTH, MALFORMED_TRUNC_IPV4,
                                            MALFORMED_TRUNC_UDP, ROUTER_MAC, SINGLE_PORT,
                                            StellarTest, roce)

ETH, IPV4, UDP_LEN = 14, 20, 8
DST = "10.0.4.20"


class TruncatedHeadersTest(StellarTest):
    """Each truncation is dropped, counted once under its own kind and once as a malformed
    drop; a whole packet of the same flow sent right after each is forwarded unchanged."""

    CASES = [  # (what, bytes kept, malformed kind)
        ("IPv4 header cut at 12 of 20 bytes", ETH + 12, MALFORMED_TRUNC_IPV4),
        ("UDP header cut at 4 of 8 bytes", ETH + IPV4 + 4, MALFORMED_TRUNC_UDP),
        ("BTH cut at 6 of 12 bytes", ETH + IPV4 + UDP_LEN + 6, MALFORMED_TRUNC_BTH),
    ]

    def runTest(self):
        cases = [(what, keep, kind if self.leaf.truncation_kinds else MALFORMED_OTHER)
                 for what, keep, kind in self.CASES]
        kinds = {kind for _, _, kind in cases}
        for psn, (what, keep, kind) in enumerate(cases):
            counts = {k: self.malformed(k) for k in kinds}
            drops = self.drops(DROP_MALFORMED)
            whole = roce(DST, 0x700, psn)
            self.send_settled(HOST_PORT, bytes(whole)[:keep])
            tu.verify_no_other_packets(self)
            counts[kind] += 1
            self.assertEqual({k: self.malformed(k) for k in kinds}, counts, what)
            self.assertEqual(self.drops(DROP_MALFORMED), drops + 1, what)
            # The switch keeps forwarding.
            tu.send_packet(self, HOST_PORT, whole)
            tu.verify_packet(self, self.routed(whole, SINGLE_PORT), SINGLE_PORT)
            tu.verify_no_other_packets(self)


class TruncatedBthForwardPolicyTest(StellarTest):
    """Control for the drop policy: with malformed_l4_forward = 1 a truncated BTH is still
    counted as one, but forwarded (as non-RoCE, routed normally) instead of dropped."""

    def runTest(self):
        self.set_params(malformed_l4_forward=1)
        counted, drops = self.malformed(MALFORMED_TRUNC_BTH), self.drops(DROP_MALFORMED)
        cut = bytes(roce(DST, 0x701, 0))[:ETH + IPV4 + UDP_LEN + 6]
        tu.send_packet(self, HOST_PORT, cut)
        tu.verify_packet(self, self.routed(cut, SINGLE_PORT), SINGLE_PORT)
        tu.verify_no_other_packets(self)
        self.assertEqual(self.malformed(MALFORMED_TRUNC_BTH), counted + 1)
        self.assertEqual(self.drops(DROP_MALFORMED), drops)


class Ipv4OptionsTest(StellarTest):
    """IPv4 with options is counted as notable but not dropped: options kept intact, TTL - 1
    and the checksum (which covers the options) right."""

    def runTest(self):
        before = self.malformed(MALFORMED_IPV4_OPTIONS)
        pkt = (Ether(src=HOST_MAC, dst=ROUTER_MAC)
               / IP(src="10.0.1.1", dst=DST, ttl=9, options=b"\x01\x01\x01\x00")
               / UDP(sport=7101, dport=5000) / Raw(b"o" * 30))
        tu.send_packet(self, HOST_PORT, pkt)
        tu.verify_packet(self, self.routed(pkt, SINGLE_PORT), SINGLE_PORT)
        tu.verify_no_other_packets(self)
        self.assertEqual(self.malformed(MALFORMED_IPV4_OPTIONS), before + 1)
