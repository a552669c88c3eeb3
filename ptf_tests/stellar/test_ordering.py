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
"""
from __future__ import annotations

from dataclasses import dataclass

from ptf_tests.stellar.stellar_base import (CHANGE_DRAIN, CHANGE_GAP, HOST_PORT, UPLINK_A,
                                            UPLINK_B, UPLINK_SET, StellarTest, psn_of, qp_of,
                                            roce)

DST = "10.0.2.9"
SLOW, FAST = UPLINK_A, UPLINK_B
BURST, ROUND_PKTS, ROUND_GAP_US, ROUNDS = 20, 2, 40, 25
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
        self.require_virtual_clock()
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
        mine = [(port, p) for port, p in out if qp_of(p) == self.qp]
        self.assertEqual(len(mine), psn, "packets were lost")
        return Run([port for port, _ in mine], [psn_of(p) for _, p in mine],
                   self.path_changes(CHANGE_DRAIN) - drains, self.path_changes(CHANGE_GAP) - gaps,
                   self.reorder_total((SLOW, FAST)) - reorders, first_fast)


class DrainDetectionKeepsOrderTest(_OrderingScenario):
    """Drain detection moves the flow once, only after its last packet left SLOW: PSNs leave in
    order and the switch counts no reordering -- and it moves long before the (safe) flowlet
    timeout could ever fire for a flow that never idles."""

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
        self.assertGreaterEqual(run.first_fast_send_us, 300)
        # ... and left well before a safe flowlet timeout.
        self.assertLess(run.first_fast_send_us, SAFE_TIMEOUT_US)


class ShortFlowletTimeoutWaitsForTheDrainTest(_OrderingScenario):
    """A flowlet timeout (20 µs) shorter than the queue delay: the gap move also proves the
    local drain (ordering guard bit 0), so it happens without reordering."""

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
    reorder detector)."""

    qp = 0x4302

    def runTest(self):
        run = self.run_scenario(flowlet_timeout_us=20, drain_moves=0, gap_moves=1, order_guards=0xE)
        self.assertGreaterEqual(run.gap_moves, 1)
        self.assertNotEqual(run.psns, sorted(run.psns), "expected reordering without drain check")
        self.assertGreater(run.reorders, 0)


class SafeTimeoutWithoutDrainStaysTest(_OrderingScenario):
    """Control: a safe flowlet timeout without drain detection keeps order only by never
    leaving the congested port."""

    qp = 0x4303

    def runTest(self):
        run = self.run_scenario(flowlet_timeout_us=SAFE_TIMEOUT_US, drain_moves=0, gap_moves=1)
        self.assertEqual((run.drain_moves, run.gap_moves, run.reorders), (0, 0, 0))
        self.assertEqual(set(run.ports), {SLOW})
        self.assertEqual(run.psns, sorted(run.psns))
