"""Time-window adaptive ECN (issue 4, "ECN").

Port 3 is the only uplink and sends at 100 kpps (10 us per packet), so the queue delay of every
packet is known exactly on the virtual clock: in a burst sent at once, packet i waits 10*i us.
"""
from __future__ import annotations

from scapy.all import IP

from testkit.leaf import (ECN_CE, ECN_ECT0, ECN_ECT1, ECN_NOT_ECT, EGR, UPLINK_PATH_SET,
                                ip_checksum_ok, roce)

PORT = 3
SRC, DST = "10.0.1.1", "10.0.2.5"
K_REG = f"{EGR}.ecn.k_us"
# The adaptive state is per (port, queue); the test traffic (DSCP 26) is an elastic mouse: queue 4.
MOUSE_QUEUE = 4
QI = PORT << 3 | MOUSE_QUEUE


def _single_uplink(leaf, pps=100_000):
    leaf.set_path_set(UPLINK_PATH_SET, [PORT], modify=True)
    leaf.sw.set_queue_rate(pps, port=PORT)


def test_static_thresholds_mark_only_ect_packets_at_or_above_kmax(leaf):
    _single_uplink(leaf)
    # pmax 0: no probabilistic ramp, so only packets waiting >= Kmax (32 us) are marked.
    leaf.set_ecn_port(PORT, adapt=0, k_init_us=16, kmin_us=4, kmax_us=32, pmax=0)
    sent = []
    for i in range(20):
        ecn = [ECN_ECT0, ECN_NOT_ECT, ECN_ECT1, ECN_NOT_ECT][i % 4]
        sent.append(ecn)
        leaf.send(1, roce(SRC, DST, qp=1, psn=i, ecn=ecn))
    out = leaf.drain_output(settle_us=1000)
    assert [d.psn for d in out] == list(range(20))
    expected_marks = 0
    for i, d in enumerate(out):
        waited = 10 * i
        if sent[i] == ECN_NOT_ECT:
            assert d.ecn == ECN_NOT_ECT, f"not-ECT packet {i} was marked"
        elif waited >= 32:
            assert d.ecn == ECN_CE, f"ECT packet {i} waited {waited} us >= Kmax and was not marked"
            expected_marks += 1
        else:
            assert d.ecn == sent[i], f"ECT packet {i} waited {waited} us < Kmax, pmax 0, marked"
        assert ip_checksum_ok(d.pkt), f"packet {i}: checksum not updated with the ECN bits"
    assert expected_marks > 0
    assert leaf.ecn_marks(PORT) == expected_marks


def test_below_k_nothing_is_marked_even_with_certain_ramp(leaf):
    _single_uplink(leaf)
    leaf.set_ecn_port(PORT, adapt=0, k_init_us=16, kmax_us=32, pmax=65536)
    # Two packets at a time: the second waits 10 us < K = 16.
    for i in range(0, 40, 2):
        leaf.send(1, roce(SRC, DST, qp=1, psn=i))
        leaf.send(1, roce(SRC, DST, qp=1, psn=i + 1))
        leaf.advance(50)
    out = leaf.drain_output(settle_us=100)
    assert len(out) == 40
    assert all(d.ecn == ECN_ECT0 for d in out)
    assert leaf.ecn_marks(PORT) == 0


def test_marking_off_on_a_port_marks_nothing(leaf):
    _single_uplink(leaf)
    leaf.sw.insert_entry(f"{EGR}.ecn.config", {"standard_metadata.egress_port": PORT},
                         f"{EGR}.ecn.ecn_off")
    for i in range(20):
        leaf.send(1, roce(SRC, DST, qp=1, psn=i))
    out = leaf.drain_output(settle_us=1000)
    assert len(out) == 20 and all(d.ecn == ECN_ECT0 for d in out)


def _standing_queue_then_light_load(leaf, standing_us=2000, light_us=3000):
    """Phase 1: one packet every 10 us behind a 1-packet backlog (every packet waits 10 us).
    Phase 2: one packet every 50 us (no queue, few bytes).  Returns K sampled every 100 us and
    the CE marks seen in phase 1."""
    sw = leaf.sw
    k_trace = []
    psn = 0
    leaf.send(1, roce(SRC, DST, qp=2, psn=psn))
    psn += 1
    for t in range(0, standing_us, 10):
        leaf.send(1, roce(SRC, DST, qp=2, psn=psn))
        psn += 1
        leaf.advance(10)
        if t % 100 == 0:
            k_trace.append(leaf.register(K_REG, QI))
    phase1 = leaf.drain_output(settle_us=20)
    k_after_standing = leaf.register(K_REG, QI)
    for t in range(0, light_us, 50):
        leaf.send(1, roce(SRC, DST, qp=2, psn=psn))
        psn += 1
        leaf.advance(50)
        if t % 100 == 0:
            k_trace.append(leaf.register(K_REG, QI))
    leaf.drain_output(settle_us=20)
    marks = sum(1 for d in phase1 if d.ecn == ECN_CE)
    return k_trace, k_after_standing, leaf.register(K_REG, QI), marks


ADAPTIVE = dict(window_us=100, target_us=4, kmin_us=4, kmax_us=32, k_init_us=16, step_us=2,
                pmax=65536, idle_bytes=600)


def test_k_falls_under_a_standing_queue_and_recovers_when_load_goes(leaf):
    _single_uplink(leaf)
    leaf.set_ecn_port(PORT, adapt=1, **{k: v for k, v in ADAPTIVE.items() if k != "adapt"})
    trace, k_standing, k_end, marks = _standing_queue_then_light_load(leaf)
    assert trace[0] == 16
    assert k_standing == 4, f"K should reach Kmin under a standing queue, trace {trace}"
    # Monotone: down while the queue stands, up once it is gone.
    low = trace.index(4)
    assert all(a >= b for a, b in zip(trace[:low], trace[1:low + 1])), trace
    assert k_end == 32, f"K should climb back to Kmax under light load, trace {trace}"
    assert marks > 0, "with K below the 10 us standing delay some ECT packets must be marked"


def test_control_static_k_does_not_adapt_and_marks_differently(leaf):
    _single_uplink(leaf)
    params = dict(ADAPTIVE, adapt=0)
    leaf.set_ecn_port(PORT, **params)
    trace, k_standing, k_end, marks = _standing_queue_then_light_load(leaf)
    assert set(trace) == {16} and k_standing == 16 and k_end == 16
    # Every packet waits 10 us < static K (16): the standing queue goes unmarked.
    assert marks == 0


def test_window_summary_is_published(leaf):
    _single_uplink(leaf)
    leaf.set_ecn_port(PORT, **ADAPTIVE)
    _standing_queue_then_light_load(leaf, standing_us=500, light_us=0)
    assert leaf.register(f"{EGR}.ecn.last_min_us", QI) == 10
    assert leaf.register(f"{EGR}.ecn.last_bytes", QI) > 0


def test_adaptive_state_is_per_queue(leaf):
    # A standing queue of an elephant (hinted: queue 3) lowers K of (port, 3) only; a mouse that
    # shares the port in queue 4 keeps its own K: strict priority, so its packets wait at most
    # one elephant packet (10 us), under the 12 us target, and its light windows raise K.
    _single_uplink(leaf)
    leaf.set_ecn_port(PORT, **dict(ADAPTIVE, target_us=12))
    leaf.hint("hint_elephant", SRC, DST, 9)
    elephant_qi = PORT << 3 | 3
    for i in range(3):
        leaf.send(1, roce(SRC, DST, qp=9, psn=i))
    for t in range(100):                      # 2 elephant packets per 10 us: a standing queue
        leaf.send(1, roce(SRC, DST, qp=9, psn=3 + 2 * t))
        if t % 10 == 0:
            leaf.send(1, roce(SRC, DST, qp=2, psn=t // 10))
        leaf.advance(10)
    leaf.drain_output()
    assert leaf.register(K_REG, elephant_qi) == 4          # down to Kmin
    assert leaf.register(K_REG, QI) >= 16                   # the mouse queue's K did not fall


# ------------------------------------------------------------------------------------------------
# K's floor relative to the measured rate (issue 32, item 5).  A port draining 1 packet per us
# (~1.1 KB/us) holds a standing queue of ~16 packets (16 us) for 3 ms: the same departures, so
# the same throughput, whatever K is.  Static K is 12 us.  Without a floor adaptive K walks down
# to Kmin (4 us) and marks far more than static; with K's floor at 12 packets' bytes (12 us at
# this port's measured rate) it never marks more than static.
FLOOR_FRAME = len(roce(SRC, DST, qp=1, psn=0, payload=1024))


def _standing_queue_marks(leaf, *, adapt: int, kfloor_bytes: int) -> tuple[int, int, int]:
    _single_uplink(leaf, pps=1_000_000)
    leaf.set_ecn_port(PORT, adapt=adapt, k_init_us=12, kmin_us=4, kmax_us=64, step_us=2, target_us=4,
                      window_us=100, idle_bytes=1000)
    leaf.set_ecn_floor(kfloor_bytes)
    psn = 0
    for _ in range(16):                       # the standing queue
        leaf.send(1, roce(SRC, DST, qp=1, psn=psn, payload=1024))
        psn += 1
    sent = 0
    for _ in range(3000):                     # then exactly the drain rate
        leaf.advance(1)
        leaf.send(1, roce(SRC, DST, qp=1, psn=psn, payload=1024))
        psn += 1
        sent += 1
    out = leaf.drain_output(settle_us=200)
    marks = sum(1 for d in out if d.ecn == ECN_CE)
    return marks, len(out), leaf.register(K_REG, QI)


def test_adaptive_with_the_rate_floor_marks_no_more_than_static(stellar_program):
    import p4sim
    from testkit.leaf import Leaf
    static, n_static, _ = _standing_queue_marks(Leaf(p4sim, stellar_program), adapt=0, kfloor_bytes=0)
    adaptive, n_adaptive, k = _standing_queue_marks(Leaf(p4sim, stellar_program), adapt=1,
                                                    kfloor_bytes=12 * FLOOR_FRAME)
    assert n_static == n_adaptive                  # equal throughput
    assert static > 0 and adaptive <= static, (adaptive, static)
    assert k >= 12


def test_control_adaptive_without_the_floor_marks_more_than_static(stellar_program):
    import p4sim
    from testkit.leaf import Leaf
    static, _, _ = _standing_queue_marks(Leaf(p4sim, stellar_program), adapt=0, kfloor_bytes=0)
    adaptive, _, k = _standing_queue_marks(Leaf(p4sim, stellar_program), adapt=1, kfloor_bytes=0)
    assert k == 4 and adaptive > 2 * static, (adaptive, static)
