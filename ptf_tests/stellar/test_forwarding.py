"""L3 forwarding through the Stellar leaf: TTL, checksum, MAC rewrite; unknown destinations."""
from __future__ import annotations

import ptf.testutils as tu

from ptf_tests.stellar.stellar_base import (DROP_NO_ROUTE, DROP_TTL_EXPIRED, HOST_IP, HOST_PORT,
                                            SINGLE_PORT, StellarTest, roce, udp)


class ForwardingTest(StellarTest):
    """A RoCEv2 and a plain UDP packet leave on the routed port with the next hop's MACs,
    TTL - 1 and a correct IPv4 checksum (compared with one Scapy computes from scratch); BTH,
    ICRC and payload are untouched.  Traffic back to the host takes its /32 route."""

    def runTest(self):
        out = roce("10.0.4.7", qp=0x100, psn=5, ttl=64)
        tu.send_packet(self, HOST_PORT, out)
        tu.verify_packet(self, self.routed(out, SINGLE_PORT), SINGLE_PORT)
        plain = udp("10.0.4.8", sport=4000, ttl=2)   # TTL 2 -> 1 still forwards
        tu.send_packet(self, HOST_PORT, plain)
        tu.verify_packet(self, self.routed(plain, SINGLE_PORT), SINGLE_PORT)
        back = roce(HOST_IP, qp=0x101, psn=9, src="10.0.4.7")
        tu.send_packet(self, SINGLE_PORT, back)
        tu.verify_packet(self, self.routed(back, HOST_PORT), HOST_PORT)
        tu.verify_no_other_packets(self)


class UnknownDestinationTest(StellarTest):
    """No route: nothing leaves, and the drop is counted under no_route (read over P4Runtime).
    Control: the same packet to a routed destination is forwarded and not counted."""

    def runTest(self):
        before = self.drops(DROP_NO_ROUTE)
        for i in range(3):
            self.send_settled(HOST_PORT, roce("10.9.9.9", qp=0x200, psn=i))
        tu.verify_no_other_packets(self)
        self.assertEqual(self.drops(DROP_NO_ROUTE), before + 3)

        control = roce("10.0.4.9", qp=0x200, psn=3)
        tu.send_packet(self, HOST_PORT, control)
        tu.verify_packet(self, self.routed(control, SINGLE_PORT), SINGLE_PORT)
        tu.verify_no_other_packets(self)
        self.assertEqual(self.drops(DROP_NO_ROUTE), before + 3)


class TtlExpiredTest(StellarTest):
    """TTL 1 on arrival is dropped and counted as ttl_expired, not forwarded with TTL 0."""

    def runTest(self):
        before = self.drops(DROP_TTL_EXPIRED)
        self.send_settled(HOST_PORT, roce("10.0.4.7", qp=0x300, psn=0, ttl=1))
        tu.verify_no_other_packets(self)
        self.assertEqual(self.drops(DROP_TTL_EXPIRED), before + 1)
