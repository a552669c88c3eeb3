"""Flowlet-safe path switching with drain detection, across real ports on the virtual clock.

The scenario of tests/stellar/test_ordering.py, driven over P4Runtime and PTF ports: a hinted
RoCE elephant starts on UPLINK_A, slowed to 100 kpps (10 µs per packet); it sends a burst of 20
packets, then keeps sending 2 packets every 40 µs -- slower than the port drains, so the backlog
shrinks to nothing after ~400 µs, but the flow never pauses long.  Right after the burst the
controller makes UPLINK_B the cheap path.  Departure order is the order the switch sent the
packets (PTF's dataplane keeps it across ports); the switch's own PSN-regression detector
(StellarEgress.reorder.total) must agree.

Feedback, per architecture: v1model's ingress reads each member's queue delay that egress wrote,
so FAST is cheaper the moment the levels change.  On TNA the group's best member changes only
when FAST reports a lower delay than SLOW (HULA's rule), and the flow can move only once SLOW's
departure feedback shows its last packet left: FAST is probed once per round (as HULA probes
each path; a no-op on v1model), and drain is proven by feedback packets through the
recirculation port.  Units: TNA's parameters are in ns (the leaf converts); its drain margin is
one tunable (v1model adds the member's level).  The reorder count is per port on v1model and
switch-wide on TNA.

Real time (BMv2, ``p4sim run --clock wall``; realtime.py): every time is multiplied by the
scale S -- SLOW serves a packet every 10*S µs (20 ms on BMv2), a round goes out every 40*S
µs on the sender's schedule (20 rounds, ROUNDS_REALTIME), the flowlet timeouts are 20*S and
1000*S µs.  The burst alone keeps SLOW busy for 20 service times, the rounds only lengthen
that.  After the run the test waits until egress counted every packet, then reads departure
order from PTF (one socket carries every port, in the switch's order) and the switch's
reorder counter.  What each verdict needs from the wall clock is in its test's docstring.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import ptf.testutils as tu

from ptf_tests.stellar.stellar_base import (CHANGE_DRAIN, CHANGE_GAP, HOST_PORT, UPLINK_A,
                                            UPLINK_B, UPLINK_SET, StellarTest, psn_of, qp_of,
                                            roce)

DST = "10.0.2.9"
SLOW, FAST = UPLINK_A, UPLINK_B
BURST, ROUND_PKTS, ROUND_GAP_US, ROUNDS = 20, 2, 40, 25
# Real time: the backlog is gone after ~10 rounds (later where the switch serves its queue
# late: p4sim's Python pipeline, busy with the burst's ingress); 20 leave 10 after it.
ROUNDS_REALTIME = 20
SAFE_TIMEOUT_US = 1000


@dataclass
class Run:
    ports: list[int]
    psns: list[int]
    drain_moves: int
    gap_moves: int
    reorders: int
    first_fast_send_us: int | None   # since the burst, when the first packet to leave on FAST was sent


class _OrderingScenario(StellarTest):
    qp = 0   # each test its own flow (and reorder slot), so no state carries over

    def send_flow(self, psns: range) -> None:
        """The flow's packets as its link delivers them: at one instant on v1model (its drain
        test compares sequence numbers), ``arrival_spacing_us`` apart on TNA (its drain test
        compares 64 ns arrival stamps, so packets within 64 ns are one to it)."""
        gap = self.leaf.arrival_spacing_us
        if not gap:
            self.send_at_once(HOST_PORT, [roce(DST, self.qp, psn) for psn in psns])
            return
        for psn in psns:
            self.send_at_once(HOST_PORT, [roce(DST, self.qp, psn)])
            self.advance_us(gap)

    def run_scenario(self, **params: int) -> Run:
        self.require_timing()
        if self.realtime:
            return self.run_scenario_realtime(**params)
        self.set_params(**params)
        self.hint_elephant(DST, self.qp)
        self.modify_path_set(UPLINK_SET, [SLOW, FAST], levels=[0, 1000])   # start on SLOW
        drains, gaps = self.path_changes(CHANGE_DRAIN), self.path_changes(CHANGE_GAP)
        reorders = self.reorder_total((SLOW, FAST))
        self.target_op(self.target.set_queue_rate, 100_000, port=SLOW)
        out, first_fast = [], None
        self.start_tap()
        try:
            start = self.target.now_us()
            self.send_flow(range(BURST))
            psn = BURST
            self.advance_us(1)
            # The cheaper path appears: FAST loses its level; SLOW is dear through its own backlog
            # (no remote level, so the drain margin stays the plain one).
            self.modify_path_set(UPLINK_SET, [SLOW, FAST], levels=[0, 0])
            for _ in range(ROUNDS):
                self.advance_us(ROUND_GAP_US - 1 - ROUND_PKTS * self.leaf.arrival_spacing_us)
                out += self.take()
                sent_at = self.target.now_us() - start
                self.probe(FAST)
                self.send_flow(range(psn, psn + ROUND_PKTS))
                psn += ROUND_PKTS
                self.advance_us(1)
                got = self.take()
                if first_fast is None and any(port == FAST and qp_of(p) == self.qp for port, p in got):
                    first_fast = sent_at
                out += got
            self.advance_us(2000)            # whatever is still queued leaves
            out += self.take()
        finally:
            self.target_op(self.target.set_queue_rate, 0, port=SLOW)
        return self.result(out, psn, drains, gaps, reorders, first_fast)

    def result(self, out: list, sent: int, drains: int, gaps: int, reorders: int,
               first_fast: int | None) -> Run:
        mine = [(port, p) for port, p in out if qp_of(p) == self.qp]
        self.assertEqual(len(mine), sent, "packets were lost")
        return Run([port for port, _ in mine], [psn_of(p) for _, p in mine],
                   self.path_changes(CHANGE_DRAIN) - drains, self.path_changes(CHANGE_GAP) - gaps,
                   self.reorder_total((SLOW, FAST)) - reorders, first_fast)

    def run_scenario_realtime(self, **params: int) -> Run:
        """The same flow on a wall clock: the burst, then a round of ROUND_PKTS every
        ROUND_GAP_US (scaled) on the sender's schedule, each round's packets back to back
        (a round's second packet must wait a service time behind its first, the reading that
        keeps SLOW dear after the drain); then, until egress counted every packet, the
        departures.  ``first_fast_send_us`` (in test µs) is when the round whose
        packet first left on FAST was sent, since the burst was sent."""
        rt = self.realtime
        self.set_params(**params)
        self.hint_elephant(DST, self.qp)
        self.modify_path_set(UPLINK_SET, [SLOW, FAST], levels=[0, 1000])   # start on SLOW
        drains, gaps = self.path_changes(CHANGE_DRAIN), self.path_changes(CHANGE_GAP)
        reorders = self.reorder_total((SLOW, FAST))
        self.target_op(self.target.set_queue_rate, self.t_pps(100_000), port=SLOW)
        sent_at: dict[int, float] = {}
        wire = [bytes(roce(DST, self.qp, p)) for p in range(BURST + ROUND_PKTS * ROUNDS_REALTIME)]
        try:
            before, left = self.transmitted(), rt.departed((SLOW, FAST))
            burst_at = time.monotonic()
            self.send_flow(range(BURST))
            psn = BURST
            self.modify_path_set(UPLINK_SET, [SLOW, FAST], levels=[0, 0])
            start = time.monotonic()   # the schedule starts once the burst is in, as on a virtual clock
            for r in range(1, ROUNDS_REALTIME + 1):
                rt.pace_until(start + r * rt.seconds(ROUND_GAP_US))
                now = time.monotonic()
                for p in range(psn, psn + ROUND_PKTS):
                    sent_at[p] = now - burst_at
                self.probe(FAST)
                for p in wire[psn:psn + ROUND_PKTS]:   # no barrier: its reads would slow p4sim
                    tu.send_packet(self, HOST_PORT, p)
                psn += ROUND_PKTS
            rt.wait_departed((SLOW, FAST), psn, left, self.t_us(10))
            out = self.collect_sent_since(before)
        finally:
            self.target_op(self.target.set_queue_rate, 0, port=SLOW)
        fast = [psn_of(p) for port, p in out if port == FAST and qp_of(p) == self.qp]
        first_fast = None
        if fast:
            first_fast = round(sent_at.get(fast[0], 0.0) * 1e6 / rt.scale)
        return self.result(out, psn, drains, gaps, reorders, first_fast)


class DrainDetectionKeepsOrderTest(_OrderingScenario):
    """Drain detection moves the flow once, only after its last packet left SLOW: PSNs leave in
    order and the switch counts no reordering -- and it moves long before the (safe) flowlet
    timeout could ever fire for a flow that never idles.

    Real time: order and the single drain move are the mechanism's, not the clock's.  No gap
    move needs every pause of the flow under 1000 scaled µs (2 s on BMv2) where the schedule
    pauses 40: 960 of margin.  The move comes after the burst's own 20 service times at the
    earliest (the lower bound asserted: 200, not 300, since a late sender lets the backlog
    drain sooner) and, the backlog draining at half a packet per service time, around 400:
    the last round goes out at 800, so no move at all needs the switch 400 scaled µs (10
    rounds, 800 ms on BMv2) behind its queue rate."""

    qp = 0x4301

    def runTest(self):
        run = self.run_scenario(flowlet_timeout_us=SAFE_TIMEOUT_US, drain_moves=1, gap_moves=1,
                                drain_margin_us=8)
        self.assertEqual(run.psns, sorted(run.psns), "PSNs left the switch out of order")
        self.assertEqual((run.drain_moves, run.gap_moves, run.reorders), (1, 0, 0))
        last_slow = max(i for i, p in enumerate(run.ports) if p == SLOW)
        first_fast = min(i for i, p in enumerate(run.ports) if p == FAST)
        self.assertLess(last_slow, first_fast, "moved while packets were still on SLOW")
        # The backlog (20 packets + arrivals at 10 µs each) lasts ~400 µs: a move before ~300 µs
        # would have reordered, so the flow waited for the drain ...
        self.assertIsNotNone(run.first_fast_send_us)
        self.assertGreaterEqual(run.first_fast_send_us, BURST * 10 if self.realtime else 300)
        # ... and left well before a safe flowlet timeout.
        self.assertLess(run.first_fast_send_us, SAFE_TIMEOUT_US)


class ShortFlowletTimeoutWaitsForTheDrainTest(_OrderingScenario):
    """A flowlet timeout (20 µs) shorter than the queue delay: the gap move also proves the
    local drain (ordering guard bit 0), so it happens without reordering.

    Real time: the rounds pause 40 scaled µs against the 20 of the timeout (40 ms of margin
    on BMv2); a round the sender is late for only moves the one gap move to a later round,
    and no move can happen before the drain whatever the clock does."""

    qp = 0x4305

    def runTest(self):
        run = self.run_scenario(flowlet_timeout_us=20, drain_moves=0, gap_moves=1)
        self.assertEqual(run.gap_moves, 1)
        self.assertEqual(run.psns, sorted(run.psns))
        self.assertEqual(run.reorders, 0)


class ShortFlowletTimeoutReordersTest(_OrderingScenario):
    """Negative control: drain detection off, the gap-move drain guard off (order_guards bit
    0), and a flowlet timeout (20 µs) shorter than the queue delay -> the flow moves while its
    packets are still queued, and PSNs leave out of order (seen by PTF and by the switch's
    reorder detector).

    Real time: the burst holds SLOW for 20 service times (400 ms on BMv2) and rounds go out
    every 4, each after a pause twice the timeout; one of the four or five rounds before the
    drain moving the flow is enough to reorder."""

    qp = 0x4302

    def runTest(self):
        run = self.run_scenario(flowlet_timeout_us=20, drain_moves=0, gap_moves=1, order_guards=0xE)
        self.assertGreaterEqual(run.gap_moves, 1)
        self.assertNotEqual(run.psns, sorted(run.psns), "expected reordering without drain check")
        self.assertGreater(run.reorders, 0)


class SafeTimeoutWithoutDrainStaysTest(_OrderingScenario):
    """Control: a safe flowlet timeout without drain detection keeps order only by never
    leaving the congested port.  Real time: a move needs a pause of the flow of 1000 scaled
    µs (2 s on BMv2) where the schedule has 40."""

    qp = 0x4303

    def runTest(self):
        run = self.run_scenario(flowlet_timeout_us=SAFE_TIMEOUT_US, drain_moves=0, gap_moves=1)
        self.assertEqual((run.drain_moves, run.gap_moves, run.reorders), (0, 0, 0))
        self.assertEqual(set(run.ports), {SLOW})
        self.assertEqual(run.psns, sorted(run.psns))
