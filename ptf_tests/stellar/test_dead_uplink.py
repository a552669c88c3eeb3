"""A remote failure rerouted in the data plane (p4src/README.md, "A dead uplink is reported by the
leaf that sees it"), one leaf at a time over P4Runtime:

* as the destination leaf, this switch reports a path whose shims came in on an uplink that is
  now down: the packets it sends back to that source leaf carry the entry with the metric
  FB_METRIC_DEAD (control: with the uplink up, no packet does);
* as the source leaf, a flow on a path reported dead leaves it with the next packet (reason
  suspect on v1model; on TNA the member counts as down, reason failover, counted per packet
  until the flow's next gap; control: a live report for the same path keeps the flow where it
  is).

Each test speaks for its own remote leaf id (the per-leaf feedback registers outlive a test).
"""
from __future__ import annotations

import ptf.testutils as tu
from scapy.layers.l2 import Ether

from ptf_tests.stellar.stellar_base import (HOST_IP, HOST_PORT, REMOTE_NET, UPLINK_A, UPLINK_B, UPLINK_SET,
                                            StellarTest, roce)
from ptf_tests.stellar.test_feedback import ETHERTYPE_FB, shim

FB_METRIC_DEAD = 8191   # p4src/include/define.p4
REMOTE_HOST = "10.0.2.7"


def returned(frame: bytes) -> tuple[int, int] | None:
    """The (path, metric) entry a shimmed frame returns, or None."""
    if int.from_bytes(frame[12:14], "big") != ETHERTYPE_FB:
        return None
    word, fb = int.from_bytes(frame[16:18], "big"), int.from_bytes(frame[20:22], "big")
    return (fb >> 13, fb & 0x1FFF) if word & 0x2 else None


class _DeadUplinkTest(StellarTest):
    remote_leaf = 0

    def setUp(self) -> None:
        super().setUp()
        self.on_arch(self.leaf.dead_uplink_feedback, 1, REMOTE_NET, 24, self.remote_leaf, [UPLINK_A, UPLINK_B])

    def from_remote(self, port: int, qp: int, *, path: int, fb: tuple[int, int] | None = None) -> None:
        """A packet of the remote leaf's, tagged for its ``path`` (of 2), in on ``port``; it
        reaches the host without the shim."""
        pkt = roce(HOST_IP, qp=qp, psn=1, src=REMOTE_HOST)
        tu.send_packet(self, port, Ether(shim(bytes(pkt), src_leaf=self.remote_leaf, path=path,
                                              path_count_m1=1, congestion=5, fb=fb)))
        tu.verify_packet(self, self.routed(pkt, HOST_PORT), HOST_PORT)

    def to_remote(self, qp: int, psns: range) -> list[tuple[int, bytes]]:
        """The host's packets of one flow to the remote leaf: (uplink, frame) of each."""
        out = []
        for psn in psns:
            tu.send_packet(self, HOST_PORT, roce(REMOTE_HOST, qp=qp, psn=psn))
            port, frame = self.collect(1)[0]
            out.append((port, bytes(frame)))
        tu.verify_no_other_packets(self)
        return out


class ReportsItsDeadUplinkTest(_DeadUplinkTest):
    """Path 0's shims came in on UPLINK_A; UPLINK_A goes down; within eight packets (one entry
    checked per packet, in turn) the flow to the remote leaf, now on UPLINK_B, carries path 0's
    entry as dead."""
    remote_leaf = 6

    def runTest(self):
        self.from_remote(UPLINK_A, 0x700, path=0)
        self.port_down(UPLINK_A)
        sent = self.to_remote(0x701, range(8))
        self.assertEqual({port for port, _ in sent}, {UPLINK_B})
        self.assertIn((0, FB_METRIC_DEAD), [returned(frame) for _, frame in sent])


class ReportsNothingWhileTheUplinkLivesTest(_DeadUplinkTest):
    """Control: the same with UPLINK_A up; path 0's entry is returned with the congestion it
    carried, never as dead."""
    remote_leaf = 7

    def runTest(self):
        self.from_remote(UPLINK_A, 0x710, path=0)
        sent = self.to_remote(0x711, range(8))
        entries = [returned(frame) for _, frame in sent]
        self.assertIn((0, 5), entries)
        self.assertNotIn((0, FB_METRIC_DEAD), entries)


class _ReroutedTest(_DeadUplinkTest):
    """A flow placed on member 0 (UPLINK_A: the controller's level makes UPLINK_B worse); the
    remote leaf then returns ``metric`` for path 0."""
    metric = 0

    def moved(self, qp: int) -> tuple[int, int, int]:
        """(first uplink, uplink after the report, moves it caused: per flow, or per packet
        where the architecture counts a failover so)."""
        reason = self.leaf.dead_report_reason
        self.modify_path_set(UPLINK_SET, [UPLINK_A, UPLINK_B], levels=[0, 50])
        first = self.to_remote(qp, range(1))[0][0]
        before = self.path_changes(reason)
        self.from_remote(UPLINK_B, qp + 1, path=1, fb=(0, self.metric))
        after = self.to_remote(qp, range(1, 3))
        self.assertEqual(after[0][0], after[1][0])          # then it stays
        moves = self.path_changes(reason) - before
        if self.leaf.failover_counts_per_packet and moves:
            self.assertEqual(moves, len(after))
            moves = 1
        return first, after[0][0], moves


class LeavesAPathReportedDeadTest(_ReroutedTest):
    remote_leaf, metric = 8, FB_METRIC_DEAD

    def runTest(self):
        self.assertEqual(self.moved(0x720), (UPLINK_A, UPLINK_B, 1))


class StaysOnAPathReportedLiveTest(_ReroutedTest):
    """Control: the same report for path 0 with congestion 0."""
    remote_leaf, metric = 9, 0

    def runTest(self):
        self.assertEqual(self.moved(0x730), (UPLINK_A, UPLINK_A, 0))
