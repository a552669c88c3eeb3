"""The controller's congestion map, read the way the controller reads it: the egress queue-delay
histogram (counter StellarEgress.telemetry.qdelay_hist) over P4Runtime.  Counters, because
BMv2's P4Runtime (PI) reads counters but not registers -- so these run on TARGET=bmv2 too
(only the one that needs a controlled queue delay skips where the clock cannot be driven).
On TNA the same counter is pipe.StellarEgress.telemetry.qdelay_hist (index port ++ bucket,
the bucket from deq_timedelta in ns by a const range table): both run there too."""
from __future__ import annotations

import ptf.testutils as tu

from control_plane import contract
from control_plane.controller import qdelay_quantile_us
from ptf_tests.stellar.stellar_base import HOST_PORT, SINGLE_PORT, StellarTest, roce

DST = "10.0.4.40"
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
    on an unlimited port reads as (almost) no queue."""

    def burst(self) -> list[int]:
        before = self.histogram(SINGLE_PORT)
        self.send_at_once(HOST_PORT, [roce(DST, 0xC02, psn) for psn in range(10)])
        self.advance_us(200)
        self.take()
        return [a - b for a, b in zip(self.histogram(SINGLE_PORT), before)]

    def runTest(self):
        self.require_virtual_clock()
        self.start_tap()
        self.assertLessEqual(qdelay_quantile_us(self.burst()), 1)
        self.target_op(self.target.set_queue_rate, 100_000, port=SINGLE_PORT)
        try:
            self.assertEqual(qdelay_quantile_us(self.burst()), 96)
        finally:
            self.target_op(self.target.set_queue_rate, 0, port=SINGLE_PORT)
