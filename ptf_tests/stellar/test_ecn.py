"""ECN marking by queue delay, on the virtual clock.

SINGLE_PORT sends at 100 kpps, so in a burst that arrives at one instant packet i waits exactly
10*i µs (deq_timedelta).  The port marks with a static K = Kmin = 25 µs, Kmax = 45 µs and the
steepest ramp (pmax = 1.0): delays 0/10/20 are below Kmin, 30/40 fall in the random ramp,
50/60/70 are above Kmax.

Marking, per architecture: v1model computes pmax * (d - K) / (Kmax - K) per packet; TNA looks
the delay up in the port's ecn.prob rows, the render's quantised ramp (control_plane.render_tna
.ecn_ramp): the same certain-below-Kmin / certain-above-Kmax edges, a stepped ramp between.
Adapting K per window is the v1model data plane's; on TNA it is the controller moving the rows,
so the two K-adaptation tests skip there with that reason.
"""
from __future__ import annotations

import ptf.testutils as tu
from scapy.layers.inet import IP
from ptf.dataplane import match_exp_pkt

from ptf_tests.stellar.stellar_base import (ECN_CE, ECN_ECT0, ECN_ECT1, ECN_NOT_ECT, HOST_PORT,
                                            SINGLE_PORT, StellarTest, ecn_dont_care, roce)

DST = "10.0.4.50"
PPS, SPACING_US = 100_000, 10
KMIN_US, KMAX_US = 25, 45
BURST = 8


class EcnMarkingTest(StellarTest):
    """ECT(0)/ECT(1) packets that waited above Kmax leave CE-marked (checksum updated);
    below Kmin none is marked even with a certain ramp; not-ECT packets queued just as long
    are never marked; the marks counter counts exactly the CE packets."""

    def burst(self, qp: int, ecns: list[int]) -> list:
        pkts = [roce(DST, qp, psn, ecn=ecn) for psn, ecn in enumerate(ecns)]
        self.send_at_once(HOST_PORT, pkts)
        self.advance_us(SPACING_US * BURST + SPACING_US)   # the whole burst leaves
        return pkts

    def runTest(self):
        self.require_virtual_clock()
        self.ecn_port(SINGLE_PORT, kmin_us=KMIN_US, kmax_us=KMAX_US, pmax=65536, adapt=0)
        self.target_op(self.target.set_queue_rate, PPS, port=SINGLE_PORT)
        MARKS = self.name("ecn_marks")
        try:
            marks = self.packets(MARKS, SINGLE_PORT)
            ects = [ECN_ECT0 if i % 2 == 0 else ECN_ECT1 for i in range(BURST)]
            sent = self.burst(0xA00, ects)
            ce = 0
            for i, pkt in enumerate(sent):
                waited = SPACING_US * i
                if waited < KMIN_US:
                    exp = self.routed(pkt, SINGLE_PORT)                    # never marked
                elif waited >= KMAX_US:
                    exp = self.routed(pkt, SINGLE_PORT, ecn=ECN_CE)        # always marked
                    ce += 1
                else:
                    exp = ecn_dont_care(self.routed(pkt, SINGLE_PORT))     # random ramp
                res = tu.dp_poll(self, port_number=SINGLE_PORT, timeout=5)
                self.assertIsInstance(res, self.dataplane.PollSuccess, f"packet {i} missing")
                got = bytes(res.packet)
                if (got[15] & 3) == ECN_CE and KMIN_US <= waited < KMAX_US:
                    ce += 1                                          # marked in the ramp
                self.assertTrue(match_exp_pkt(exp, got),
                                f"packet {i} (waited {waited} µs, ECN {ects[i]}) wrong: "
                                f"ToS {got[15]:#04x}")
            tu.verify_no_other_packets(self)
            self.assertEqual(self.packets(MARKS, SINGLE_PORT), marks + ce)

            # Control: not-ECT packets queued exactly as long are never marked.
            for pkt in self.burst(0xA01, [ECN_NOT_ECT] * BURST):
                tu.verify_packet(self, self.routed(pkt, SINGLE_PORT), SINGLE_PORT)
            tu.verify_no_other_packets(self)
            self.assertEqual(self.packets(MARKS, SINGLE_PORT), marks + ce)
        finally:
            self.target_op(self.target.set_queue_rate, 0, port=SINGLE_PORT)


class EcnOffControlTest(StellarTest):
    """Control: the same ECT burst through a port with marking off (ecn_off, the suite's
    default) leaves unmarked however long it waited."""

    def runTest(self):
        self.require_virtual_clock()
        self.target_op(self.target.set_queue_rate, PPS, port=SINGLE_PORT)
        MARKS = self.name("ecn_marks")
        try:
            marks = self.packets(MARKS, SINGLE_PORT)
            pkts = [roce(DST, 0xA02, psn, ecn=ECN_ECT0) for psn in range(BURST)]
            self.send_at_once(HOST_PORT, pkts)
            self.advance_us(SPACING_US * BURST + SPACING_US)
            for pkt in pkts:
                tu.verify_packet(self, self.routed(pkt, SINGLE_PORT), SINGLE_PORT)
            tu.verify_no_other_packets(self)
            self.assertEqual(self.packets(MARKS, SINGLE_PORT), marks)
        finally:
            self.target_op(self.target.set_queue_rate, 0, port=SINGLE_PORT)


# Adaptation scenario: every packet of phase 1 waits exactly 10 µs (a one-packet standing
# queue); K starts at 12 = Kmax, so only an adapted K (<= 8) can mark a 10 µs packet.
# K is per (port, queue): index port << 3 | queue; this leaf installs no queue map (queue 0).
K_INDEX = SINGLE_PORT << 3
ADAPT = dict(kmin_us=4, kmax_us=12, k_init_us=12, step_us=2, window_us=100, target_us=4,
             pmax=65536, idle_bytes=600)
STANDING_US, LIGHT_US, LIGHT_GAP_US = 1000, 1600, 50


class _EcnWindows(StellarTest):
    qp = 0

    def standing_then_light(self, adapt: int) -> tuple[list[int], int, int, int]:
        """Phase 1: a packet every 10 µs behind a one-packet backlog (standing 10 µs queue).
        Phase 2: a packet every 50 µs, no queue, few bytes (light load).  Returns K sampled at
        every window of phase 1, K after each phase, and the CE marks of phase 1."""
        self.require_virtual_clock()
        K_REG, MARKS = self.name("ecn_k"), self.name("ecn_marks")
        self.ecn_port(SINGLE_PORT, adapt=adapt, **ADAPT)
        self.target_op(self.target.set_queue_rate, PPS, port=SINGLE_PORT)
        marks = self.packets(MARKS, SINGLE_PORT)
        self.start_tap()
        psn, trace, phase1 = 0, [], []
        try:
            self.send_at_once(HOST_PORT, [roce(DST, self.qp, 0)])
            psn = 1
            for t in range(0, STANDING_US, SPACING_US):
                self.send_at_once(HOST_PORT, [roce(DST, self.qp, psn)])
                psn += 1
                self.advance_us(SPACING_US)
                if t % ADAPT["window_us"] == 0:
                    phase1 += self.take()
                    trace.append(self.read_register(K_REG, K_INDEX))
            self.advance_us(2 * SPACING_US)
            phase1 += self.take()
            k_standing = self.read_register(K_REG, K_INDEX)
            for _ in range(0, LIGHT_US, LIGHT_GAP_US):
                self.send_at_once(HOST_PORT, [roce(DST, self.qp, psn)])
                psn += 1
                self.advance_us(LIGHT_GAP_US)
            self.take()
            k_light = self.read_register(K_REG, K_INDEX)
        finally:
            self.target_op(self.target.set_queue_rate, 0, port=SINGLE_PORT)
        ce = sum(1 for _, p in phase1 if p[IP].tos & 3 == ECN_CE)
        self.assertEqual(len(phase1), STANDING_US // SPACING_US + 1, "phase 1 packets lost")
        self.assertEqual(self.packets(MARKS, SINGLE_PORT) - marks, ce)
        return trace, k_standing, k_light, ce


class EcnAdaptiveThresholdTest(_EcnWindows):
    """Under a standing queue K falls window by window to Kmin, so the 10 µs packets get
    marked; once the load goes K climbs back to Kmax."""

    qp = 0xA10

    def runTest(self):
        trace, k_standing, k_light, ce = self.standing_then_light(adapt=1)
        self.assertEqual(trace[0], ADAPT["k_init_us"], trace)
        self.assertEqual(k_standing, ADAPT["kmin_us"], f"K should reach Kmin, trace {trace}")
        self.assertTrue(all(a >= b for a, b in zip(trace, trace[1:])), f"K rose under load: {trace}")
        self.assertGreater(ce, 0, "K below the standing delay must mark some ECT packets")
        self.assertEqual(k_light, ADAPT["kmax_us"], "K should recover to Kmax under light load")


class EcnStaticThresholdControlTest(_EcnWindows):
    """Control: adaptation off (static K = 12 µs): K never moves and the 10 µs standing queue
    is never marked."""

    qp = 0xA11

    def runTest(self):
        trace, k_standing, k_light, ce = self.standing_then_light(adapt=0)
        self.assertEqual(set(trace) | {k_standing, k_light}, {ADAPT["k_init_us"]})
        self.assertEqual(ce, 0)
