"""The controller's congestion map, read the way the controller reads it: the egress queue-delay
histogram (counter StellarEgress.telemetry.qdelay_hist) over P4Runtime.  Counters, because
BMv2's P4Runtime (PI) reads counters but not registers -- so these run on TARGET=bmv2 too
(the one that needs a controlled queue delay runs in real-time mode on a wall clock, see
HistogramShowsTheQueueDelayTest).  On TNA the same counter is pipe.StellarEgress.telemetry.qdelay_hist (index port ++ bucket,
the bucket from deq_timedelta in ns by a const range table): both run there too."""
from __future__ import annotations

import time

import ptf.testutils as tu

from control_plane import contract
from control_plane.controller import qdelay_quantile_us
from ptf_tests.stellar.stellar_base import HOST_PORT, SINGLE_PORT, StellarTest, roce

DST = "10.0.4.40"
PPS, SPACING_US = 100_000, 10
BUCKETS = len(contract.QDELAY_BUCKET_LOWER_US)


class _Histogram(StellarTest):
    def histogram(self, port: int) -> list[int]:
        hist = self.name("qdelay_hist")
        return [self.read_counter(hist, port * BUCKETS + b)[0] for b in range(BUCKETS)]


class HistogramCountsEveryDepartureTest(_Histogram):
    """Every packet that leaves a port is counted in exactly one of that port's buckets; the
    other ports' histograms do not move (negative control)."""

    def runTest(self):
        before, other = self.histogram(SINGLE_PORT), self.histogram(HOST_PORT)
        for psn in range(5):
            pkt = roce(DST, 0xC01, psn)
            tu.send_packet(self, HOST_PORT, pkt)
            tu.verify_packet(self, self.routed(pkt, SINGLE_PORT), SINGLE_PORT)
        delta = [a - b for a, b in zip(self.histogram(SINGLE_PORT), before)]
        self.assertEqual(sum(delta), 5)
        self.assertEqual(self.histogram(HOST_PORT), other)


class HistogramShowsTheQueueDelayTest(_Histogram):
    """A burst of 10 on a 100 kpps port: packet i waits 10*i us, so 90% of them left within
    the [64, 96) us bucket -- what the controller turns into a level.  Control: the same burst
    on an unlimited port reads as (almost) no queue.

    Real time (scale S, realtime.py): the packets arrive SPACING_US / 4 (scaled) apart instead
    of at once -- 5 ms on BMv2 -- because a software switch has a queue of its own: a burst
    sent at once waits behind BMv2's per-packet processing (hundreds of µs each on this shared
    machine, measured 4 µs to over 512 µs within one burst of 10), which the histogram cannot
    tell from the rate limit's.  On the slowed queue, serving a packet every 10*S µs (20 ms at
    the default), packet i still waits 7.5*i scaled µs (15 ms and more), 30 times the top
    bucket's lower edge (512 µs): the 90% quantile is the top bucket unless the sender is late
    by 3/4 of a service time twice.  On the unlimited port each packet has left before the next
    arrives, so a reading of 512 µs needs the switch to hold that packet alone for 512 µs --
    which BMv2's egress thread, woken per packet on this loaded machine, does to about one
    packet in ten (measured: 0-1 of 10 in the top bucket, a few in [256, 512)).  So the
    control's verdict is on the median, not the 90% quantile: it stays below the top bucket
    unless half the packets are each held 512 µs alone, which no queue-free port does, and a
    histogram that read the rate limit where there is none (or counted every packet in its
    top bucket) fails it."""

    PKTS = 10

    def burst(self) -> list[int]:
        before = self.histogram(SINGLE_PORT)
        sent = self.realtime.departed([SINGLE_PORT]) if self.realtime else 0
        pkts = [roce(DST, 0xC02, psn) for psn in range(self.PKTS)]
        if self.realtime:
            wire, start = [bytes(p) for p in pkts], time.monotonic()
            for i, frame in enumerate(wire):
                self.realtime.pace_until(start + i * self.realtime.seconds(SPACING_US / 4))
                tu.send_packet(self, HOST_PORT, frame)
            self.realtime.wait_departed([SINGLE_PORT], self.PKTS, sent,
                                        service_us=self.t_us(SPACING_US))
        else:
            self.send_at_once(HOST_PORT, pkts)
            self.advance_us(200)
        self.take()
        return [a - b for a, b in zip(self.histogram(SINGLE_PORT), before)]

    def runTest(self):
        self.require_timing()
        self.start_tap()
        top = contract.qdelay_bucket_upper_us(BUCKETS - 1)
        unlimited = self.burst()
        if self.realtime:
            self.assertLess(qdelay_quantile_us(unlimited, 0.5), top)
        else:
            self.assertLessEqual(qdelay_quantile_us(unlimited), 1)
        self.target_op(self.target.set_queue_rate, self.t_pps(PPS), port=SINGLE_PORT)
        try:
            self.assertEqual(qdelay_quantile_us(self.burst()), top if self.realtime else 96)
        finally:
            self.target_op(self.target.set_queue_rate, 0, port=SINGLE_PORT)
