"""Adaptive path choice vs ECMP, driven by a real queue: UPLINK_A is made slow (set_queue_rate)
and a backlog is built on it on the virtual clock, so its egress pipeline reports a queue delay
that ingress reads for the next placement.  The new flows are ones whose hash picks UPLINK_A, so
only the congestion signal can send them elsewhere.

Feedback, per architecture: on v1model each new flow's ingress reads the queue delay every
member's egress wrote (a shared register), so the backlog is seen at once.  On TNA the delay
reaches ingress in feedback packets and the group keeps one best member (HULA's rule): it moves
to FAST only once FAST reports a delay lower by the hysteresis, so after the backlog FAST is
probed (one packet out of FAST; a no-op on v1model).  ECMP, per architecture: v1model's path set
mode; on TNA the DRE choice off and the group's ports not reporting (arch.py).

Real time (BMv2, ``p4sim run --clock wall``; realtime.py): SLOW serves a packet every 10*S µs
(20 ms on BMv2), so the 30-packet backlog lasts 30 service times (600 ms); the
test waits until SLOW's egress counted 3 departures (so its recorded queue delay is >= 2
service times, against a hysteresis of 0.4) and sends the new flows as one burst, which
ingress places within a few ms -- 27 service times before the backlog could be gone.  The
queue-delay reading stays fresh (each departure rewrites it; its maximum age is 20 service
times).  No verdict depends on a delay closer to its threshold than 1.6 service times."""
from __future__ import annotations

import ptf.testutils as tu

from ptf_tests.stellar.stellar_base import (HOST_PORT, UPLINK_A, UPLINK_B, UPLINK_SET, StellarTest,
                                            qp_of, roce)

DST = "10.0.2.40"
SLOW, FAST = UPLINK_A, UPLINK_B
SLOW_PPS = 100_000         # one departure per 10 µs
HOG_PKTS, HOG_DRAIN_US = 30, 50
HOG_SEEN_DEPARTED = 3      # real time: SLOW's egress recorded this many of the hog's delays


class _BacklogTest(StellarTest):
    hog_qp = 0

    def build_backlog(self, *, ecmp: bool) -> None:
        """Park HOG_PKTS packets of one flow on SLOW and let HOG_DRAIN_US pass: the packets
        that left meanwhile waited up to ~50 µs, which the egress records for SLOW."""
        self.modify_path_set(UPLINK_SET, [SLOW, FAST], levels=[0, 1000])   # pin the hog to SLOW
        self.target_op(self.target.set_queue_rate, self.t_pps(SLOW_PPS), port=SLOW)
        before = self.transmitted()
        if self.realtime:
            self.hog_since = self.realtime.departed([SLOW])
        self.send_at_once(HOST_PORT, [roce(DST, self.hog_qp, psn) for psn in range(HOG_PKTS)])
        self.modify_path_set(UPLINK_SET, [SLOW, FAST], ecmp=ecmp)          # levels back to 0
        if self.realtime:
            self.realtime.wait_departed([SLOW], HOG_SEEN_DEPARTED, self.hog_since,
                                        self.t_us(10))
        else:
            self.advance_us(HOG_DRAIN_US)
        left = self.collect_sent_since(before)
        self.assertEqual({port for port, _ in left}, {SLOW}, "setup: the hog must be on SLOW")
        self.assertLess(len(left), HOG_PKTS, "setup: a backlog must remain on SLOW")
        self.probe(FAST)
        # The tally up to which PTF's queue has been read (the probe's packet included, on TNA).
        # In real time the backlog keeps leaving meanwhile, so it is what was collected (the
        # real-time mode runs the v1model program, whose probe sends nothing).
        self.collected = before + len(left) if self.realtime else self.transmitted()

    def tearDown(self) -> None:
        try:
            # Leave an idle, unlimited port: the rest of the backlog leaves now, not in the
            # next test.
            if self.target.has_virtual_clock:
                self.target.set_queue_rate(0, port=SLOW)
                self.target.advance_us(1000)
                self.target.sync()
                # sync says the switch sent them; on a loaded machine they may still be on
                # their way to PTF's sockets, and a flush now would let them reach the next test
                while isinstance(tu.dp_poll(self, device_number=0, timeout=0.5), self.dataplane.PollSuccess):
                    pass
                self.dataplane.flush()
            elif getattr(self, "hog_since", None) is not None:
                self.target.set_queue_rate(0, port=SLOW)
                self.realtime.wait_departed([SLOW], HOG_PKTS, self.hog_since)
                self.dataplane.flush()
        finally:
            super().tearDown()

    def send_new_flows(self, qps: list[int]) -> list:
        """One packet of each new flow: one at a time on a virtual clock (which stands still);
        in real time as one burst, so all are placed while the backlog certainly lasts."""
        pkts = [roce(DST, qp, 0) for qp in qps]
        if self.realtime:
            self.send_at_once(HOST_PORT, pkts)
        return pkts


class AdaptiveAvoidsCongestedMemberTest(_BacklogTest):
    """Adaptive mode: new flows that hash onto SLOW leave on FAST while SLOW has a backlog.
    Control: before the backlog, the first such flow does take SLOW (the hash tie-break)."""

    hog_qp = 0x800

    def runTest(self):
        self.require_timing()
        calm, *new = self.qps_hashing_to(0, DST, 2, n=9, start=0x810)
        pkt = roce(DST, calm, 0)
        tu.send_packet(self, HOST_PORT, pkt)
        tu.verify_packet(self, self.routed(pkt, SLOW), SLOW)
        tu.verify_no_other_packets(self)

        self.build_backlog(ecmp=False)
        fast_before = self.realtime.departed([FAST]) if self.realtime else 0
        for pkt in self.send_new_flows(new):
            if not self.realtime:
                tu.send_packet(self, HOST_PORT, pkt)
            tu.verify_packet(self, self.routed(pkt, FAST), FAST)
        if self.realtime:   # the backlog keeps leaving on SLOW; FAST carried the new flows only
            self.assertEqual(self.realtime.departed([FAST]) - fast_before, len(new))
            return
        self.target.sync()
        tu.verify_no_other_packets(self)   # the clock stands still: the backlog stays queued


class EcmpIgnoresCongestionTest(_BacklogTest):
    """Control: the same backlog in ECMP mode (path set ecmp = 1); flows that hash onto SLOW
    go there anyway and wait behind the backlog."""

    hog_qp = 0x900

    def runTest(self):
        self.require_timing()
        new = self.qps_hashing_to(0, DST, 2, n=8, start=0x910)
        self.build_backlog(ecmp=True)
        before = self.collected
        self.send_at_once(HOST_PORT, [roce(DST, qp, 0) for qp in new])
        if self.realtime:   # everything queued behind the backlog leaves on SLOW
            self.realtime.wait_departed([SLOW], HOG_PKTS + len(new), self.hog_since,
                                        self.t_us(10))
        else:
            self.target.sync()
            tu.verify_no_other_packets(self)   # nothing went to the idle FAST port
            self.advance_us(1000)
        out = self.collect_sent_since(before)
        placed = {qp_of(p): port for port, p in out if qp_of(p) in new}
        self.assertEqual(placed, {qp: SLOW for qp in new})
        self.assertEqual({port for port, _ in out}, {SLOW})
