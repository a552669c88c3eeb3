"""ECN marking by queue delay, on the virtual clock or in real time (realtime.py).

SINGLE_PORT sends at 100 kpps, so in a burst that arrives at one instant packet i waits exactly
10*i µs (deq_timedelta).  The port marks with a static K = Kmin = 25 µs, Kmax = 45 µs and the
steepest ramp (pmax = 1.0): delays 0/10/20 are below Kmin, 30/40 fall in the random ramp,
50/60/70 are above Kmax.

Marking, per architecture: v1model computes pmax * (d - K) / (Kmax - K) per packet; TNA looks
the delay up in the port's ecn.prob rows, the render's quantised ramp (control_plane.render_tna
.ecn_ramp): the same certain-below-Kmin / certain-above-Kmax edges, a stepped ramp between.
Adapting K per window is the v1model data plane's; on TNA it is the controller moving the rows,
so the two K-adaptation tests skip there with that reason.

Real time (BMv2, ``p4sim run --clock wall``): every time above is multiplied by the scale S
(service 10*S µs, K and windows alike), and a verdict that depends on a delay is only asserted
where the delay is at least one service time away from the threshold (``MARGIN_SERVICES``).
"""
from __future__ import annotations

import time

import ptf.testutils as tu
from scapy.layers.inet import IP
from ptf.dataplane import match_exp_pkt

from ptf_tests.stellar.stellar_base import (ECN_CE, ECN_ECT0, ECN_ECT1, ECN_NOT_ECT, HOST_PORT,
                                            SINGLE_PORT, StellarTest, ecn_dont_care, roce)

DST = "10.0.4.50"
PPS, SPACING_US = 100_000, 10
KMIN_US, KMAX_US = 25, 45
BURST = 8
# Real time: how many service times a delay must clear a threshold by for the test to assert
# which side it is on (a packet's delay is off by how late its ingress ran behind the burst's).
MARGIN_SERVICES = 2


class _EcnTest(StellarTest):
    def send_burst(self, pkts: list) -> None:
        """Send the burst at once, then until it left SINGLE_PORT: on a virtual clock the time
        it takes plus one service time; in real time, until its egress counted them."""
        sent = self.realtime.departed([SINGLE_PORT]) if self.realtime else 0
        self.send_at_once(HOST_PORT, pkts)
        if self.realtime:
            self.realtime.wait_departed([SINGLE_PORT], len(pkts), sent,
                                        service_us=self.t_us(SPACING_US))
        else:
            self.advance_us(SPACING_US * len(pkts) + SPACING_US)


class EcnMarkingTest(_EcnTest):
    """ECT(0)/ECT(1) packets that waited above Kmax leave CE-marked (checksum updated);
    below Kmin none is marked even with a certain ramp; not-ECT packets queued just as long
    are never marked; the marks counter counts exactly the CE packets.

    Real time: packet i waits about 10*i test-µs (x S), i service times; the test asserts
    "unmarked" only for delays two service times (40 ms on BMv2) below Kmin (packet 0) and
    "marked" only two above Kmax (packet 7); the ones between may go either way.  Packet 7
    would need its ingress to run 2.5 service times behind the burst's first packet, or the
    queue to serve faster than its rate, to fall below Kmax; packet 0 to be held 2.5 service
    times by an idle queue to reach Kmin.  The counter check and the not-ECT control do not
    depend on time at all."""

    def burst(self, qp: int, ecns: list[int]) -> list:
        pkts = [roce(DST, qp, psn, ecn=ecn) for psn, ecn in enumerate(ecns)]
        self.send_burst(pkts)
        return pkts

    def runTest(self):
        self.require_timing()
        self.ecn_port(SINGLE_PORT, kmin_us=KMIN_US, kmax_us=KMAX_US, pmax=65536, adapt=0)
        self.target_op(self.target.set_queue_rate, self.t_pps(PPS), port=SINGLE_PORT)
        MARKS = self.name("ecn_marks")
        margin = MARGIN_SERVICES * SPACING_US if self.realtime else 0
        try:
            marks = self.packets(MARKS, SINGLE_PORT)
            ects = [ECN_ECT0 if i % 2 == 0 else ECN_ECT1 for i in range(BURST)]
            sent = self.burst(0xA00, ects)
            ce = 0
            for i, pkt in enumerate(sent):
                waited = SPACING_US * i
                certain = True
                if waited + margin < KMIN_US:
                    exp = self.routed(pkt, SINGLE_PORT)                    # never marked
                elif waited >= KMAX_US + margin:
                    exp = self.routed(pkt, SINGLE_PORT, ecn=ECN_CE)        # always marked
                    ce += 1
                else:
                    exp = ecn_dont_care(self.routed(pkt, SINGLE_PORT))     # ramp (or margin)
                    certain = False
                res = tu.dp_poll(self, port_number=SINGLE_PORT, timeout=5)
                self.assertIsInstance(res, self.dataplane.PollSuccess, f"packet {i} missing")
                got = bytes(res.packet)
                if (got[15] & 3) == ECN_CE and not certain:
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


class EcnOffControlTest(_EcnTest):
    """Control: the same ECT burst through a port with marking off (ecn_off, the suite's
    default) leaves unmarked however long it waited.  In real time the last packets wait
    about 7 service times, past every threshold EcnMarkingTest marks at; no verdict here
    depends on how long."""

    def runTest(self):
        self.require_timing()
        self.target_op(self.target.set_queue_rate, self.t_pps(PPS), port=SINGLE_PORT)
        MARKS = self.name("ecn_marks")
        try:
            marks = self.packets(MARKS, SINGLE_PORT)
            pkts = [roce(DST, 0xA02, psn, ecn=ECN_ECT0) for psn in range(BURST)]
            self.send_burst(pkts)
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
# Real time: the sender keeps QUEUED_REALTIME = 5 packets queued, topping the queue up when
# egress counts a departure, so a packet waits 6 service times less the time L the sender took
# to notice (a P4Runtime read away: tens of ms on a loaded p4sim).  The band around that is
# wide: the target and Kmin are one service time (a window stays "standing" while the sender
# notices every departure within 5 service times, 100 ms on BMv2), K starts at Kmax = 10
# service times (static K marks only a packet the switch holds 4 service times longer than
# the queue does), and one step goes from Kmax to Kmin, so one window of the five with a
# standing queue suffices; a window counts as light (K back up) only with three 90-byte
# packets or fewer (idle_bytes 300: the sender stalled for 7 service times); the light phase
# sends one every 5, two or three to a window.  pmax = 4.0 makes an adapted
# K mark a packet that waited 3.25 service times or more with certainty.
ADAPT_REALTIME = dict(kmin_us=10, kmax_us=100, k_init_us=100, step_us=90, window_us=100,
                      target_us=10, pmax=4 * 65536, idle_bytes=300)
QUEUED_REALTIME, STANDING_PKTS_REALTIME, LIGHT_PKTS_REALTIME = 5, 50, 8


class _EcnWindows(StellarTest):
    qp = 0

    def standing_then_light(self, adapt: int) -> tuple[list[int], int, int, int, dict]:
        """Phase 1: a packet every 10 µs behind a one-packet backlog (standing 10 µs queue).
        Phase 2: a packet every 50 µs, no queue, few bytes (light load).  Returns K sampled at
        every window of phase 1 (in real time: after the first packet only), K after each
        phase, the CE marks of phase 1 and the ECN parameters used."""
        self.require_timing()
        if self.realtime:
            return self.standing_then_light_realtime(adapt)
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
        return self.phase_marks(phase1, STANDING_US // SPACING_US + 1, marks,
                                trace, k_standing, k_light, ADAPT)

    def phase_marks(self, phase1: list, count: int, marks: int, trace: list[int],
                    k_standing: int, k_light: int, params: dict) -> tuple:
        """Phase 1's CE marks, checked against the switch's marks counter."""
        ce = sum(1 for _, p in phase1 if p[IP].tos & 3 == ECN_CE)
        self.assertEqual(len(phase1), count, "phase 1 packets lost")
        self.assertEqual(self.packets(self.name("ecn_marks"), SINGLE_PORT) - marks, ce)
        return trace, k_standing, k_light, ce, params

    def standing_then_light_realtime(self, adapt: int) -> tuple:
        """The same two phases on a wall clock (ADAPT_REALTIME says why these bounds): the
        standing queue is kept by topping it up on every departure egress counts (the packets
        are sent without an ingress barrier: the departures are the sender's clock), the light
        load is a packet every 5 service times (each finds the queue empty).  K is read over
        P4Runtime where the target serves register reads, else over Thrift (BMv2)."""
        rt = self.realtime
        K_REG, MARKS = self.name("ecn_k"), self.name("ecn_marks")
        self.ecn_port(SINGLE_PORT, adapt=adapt, **ADAPT_REALTIME)
        self.target_op(self.target.set_queue_rate, self.t_pps(PPS), port=SINGLE_PORT)
        port, service = [SINGLE_PORT], self.t_us(SPACING_US)
        marks = self.packets(MARKS, SINGLE_PORT)
        self.start_tap()
        try:
            base = rt.departed(port)
            self.send_at_once(HOST_PORT, [roce(DST, self.qp, 0)])
            rt.wait_departed(port, 1, base, service)
            trace = [rt.read_register(K_REG, K_INDEX)]
            self.take()
            base, psn = rt.departed(port), 1
            for sent in range(STANDING_PKTS_REALTIME):
                if sent > QUEUED_REALTIME:   # QUEUED_REALTIME packets ahead of this one
                    rt.wait_departed(port, sent - QUEUED_REALTIME, base, service)
                tu.send_packet(self, HOST_PORT, roce(DST, self.qp, psn))
                psn += 1
            rt.wait_departed(port, STANDING_PKTS_REALTIME, base, service)
            phase1 = self.take()
            k_standing = rt.read_register(K_REG, K_INDEX)
            start = time.monotonic()
            for i in range(LIGHT_PKTS_REALTIME):
                rt.pace_until(start + i * rt.seconds(LIGHT_GAP_US))
                self.send_at_once(HOST_PORT, [roce(DST, self.qp, psn)])
                psn += 1
            rt.wait_departed(port, STANDING_PKTS_REALTIME + LIGHT_PKTS_REALTIME, base, service)
            self.take()
            k_light = rt.read_register(K_REG, K_INDEX)
        finally:
            self.target_op(self.target.set_queue_rate, 0, port=SINGLE_PORT)
        return self.phase_marks(phase1, STANDING_PKTS_REALTIME, marks, trace, k_standing,
                                k_light, ADAPT_REALTIME)


class EcnAdaptiveThresholdTest(_EcnWindows):
    """Under a standing queue K falls window by window to Kmin, so the 10 µs packets get
    marked; once the load goes K climbs back to Kmax.  Real time (ADAPT_REALTIME): K falls
    to Kmin in one step, as long as one window of five kept every packet a service time (20 ms
    on BMv2) in the queue, where the sender keeps it six; after that every packet that
    waited 3.25 service times is marked."""

    qp = 0xA10

    def runTest(self):
        trace, k_standing, k_light, ce, params = self.standing_then_light(adapt=1)
        self.assertEqual(trace[0], self.t_us(params["k_init_us"]), trace)
        self.assertEqual(k_standing, self.t_us(params["kmin_us"]), f"K should reach Kmin, trace {trace}")
        self.assertTrue(all(a >= b for a, b in zip(trace, trace[1:])), f"K rose under load: {trace}")
        self.assertGreater(ce, 0, "K below the standing delay must mark some ECT packets")
        self.assertEqual(k_light, self.t_us(params["kmax_us"]),
                         "K should recover to Kmax under light load")


class EcnStaticThresholdControlTest(_EcnWindows):
    """Control: adaptation off (static K = 12 µs): K never moves and the 10 µs standing queue
    is never marked.  Real time: static K = Kmax = 10 service times, and a standing packet
    waits at most 6 (five ahead of it) unless the switch holds it 4 service times (80 ms on
    BMv2) longer."""

    qp = 0xA11

    def runTest(self):
        trace, k_standing, k_light, ce, params = self.standing_then_light(adapt=0)
        self.assertEqual(set(trace) | {k_standing, k_light}, {self.t_us(params["k_init_us"])})
        self.assertEqual(ce, 0)
