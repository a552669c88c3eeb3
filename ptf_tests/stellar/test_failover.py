"""Data-plane failover: a member the controller marks down (liveness tables) is never used,
and the flows on it continue on the other member at once."""
from __future__ import annotations

import ptf.testutils as tu

from ptf_tests.stellar.stellar_base import (CHANGE_FAILOVER, DROP_NO_LIVE_MEMBER, HOST_PORT,
                                            UPLINK_A, UPLINK_B, UPLINK_SET, StellarTest, roce)

DST = "10.0.2.60"
MEMBERS = [UPLINK_A, UPLINK_B]


class FailoverTest(StellarTest):
    """ECMP mode makes every flow's port its hash choice, so the test knows beforehand which
    flows use the port that will die.  Negative control first: before the liveness write those
    flows do leave on UPLINK_A (and keep doing so); after it, nothing leaves on UPLINK_A, they
    continue on UPLINK_B with their PSNs in order, and the others do not move.

    Marking down, per architecture: v1model, the controller's liveness-table write; TNA, the
    link goes down and the packet generator's port-down packet clears the member in the data
    plane (no controller).  Counting, per architecture: v1model rewrites the moved flow's member
    once, so each moved flow is one failover change; TNA re-steers a flow on a dead member in
    every packet until its next gap (one register access per pass leaves its stored member), so
    each re-steered packet is one failover change."""

    def send_round(self, flows: dict[int, int], psn: int) -> None:
        """One packet per flow; each must leave on the port ``flows`` names."""
        for qp, port in flows.items():
            pkt = roce(DST, qp, psn)
            tu.send_packet(self, HOST_PORT, pkt)
            tu.verify_packet(self, self.routed(pkt, port), port)
        tu.verify_no_other_packets(self)

    def runTest(self):
        self.modify_path_set(UPLINK_SET, MEMBERS, ecmp=True)
        on_a = self.qps_hashing_to(0, DST, 2, n=4, start=0x500)
        on_b = self.qps_hashing_to(1, DST, 2, n=4, start=0x500)
        flows = {**{qp: UPLINK_A for qp in on_a}, **{qp: UPLINK_B for qp in on_b}}
        moves = self.path_changes(CHANGE_FAILOVER)

        self.send_round(flows, psn=0)      # control: the hashed flows do use UPLINK_A
        self.send_round(flows, psn=1)      # ... and stay there without the write
        self.assertEqual(self.path_changes(CHANGE_FAILOVER), moves)

        self.port_down(UPLINK_A)
        survivors = {qp: UPLINK_B for qp in flows}
        self.send_round(survivors, psn=2)
        self.send_round(survivors, psn=3)  # moved once, then stay
        per_flow = 2 if self.leaf.failover_counts_per_packet else 1   # two rounds since the failure
        self.assertEqual(self.path_changes(CHANGE_FAILOVER), moves + per_flow * len(on_a))


class AllMembersDownTest(StellarTest):
    """With every member down the packet cannot be placed: dropped and counted as
    no_live_member (not sent to a dead port).  Control: one member back up forwards again
    (TNA: the link is back and the controller sets its bit in the group's bitmap)."""

    def runTest(self):
        before = self.drops(DROP_NO_LIVE_MEMBER)
        self.port_down(UPLINK_A)
        self.port_down(UPLINK_B)
        self.send_settled(HOST_PORT, roce(DST, 0x600, 0))
        tu.verify_no_other_packets(self)
        self.assertEqual(self.drops(DROP_NO_LIVE_MEMBER), before + 1)
        self.port_up(UPLINK_B)
        pkt = roce(DST, 0x600, 1)
        tu.send_packet(self, HOST_PORT, pkt)
        tu.verify_packet(self, self.routed(pkt, UPLINK_B), UPLINK_B)
        tu.verify_no_other_packets(self)
