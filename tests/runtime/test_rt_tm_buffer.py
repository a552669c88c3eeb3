"""p4sim's traffic manager beyond BMv2: byte-rate queues, a shared buffer with dynamic
thresholds, and PFC pause/resume (p4sim.tm, p4sim.buffer)."""
import pytest

from p4sim.buffer import BufferConfig, headroom_for
from p4sim.tm import TrafficManager


def _drain(tm, limit=1e12):
    out = []
    while (d := tm.pop_due(limit)) is not None:
        out.append(d)
    return out


def test_byte_rate_serialises_by_frame_length():
    tm = TrafficManager(2)
    tm.set_byte_rate(100e9, port=1)
    for size in (4096, 64, 64, 4096):
        assert tm.enqueue(size, 1, 0, 0.0, size) >= 0
    times = [d[0] for d in _drain(tm)]
    gaps = [round(b - a, 6) for a, b in zip(times, times[1:])]
    assert gaps == [round(4096 * 8 / 1e5, 6), round(64 * 8 / 1e5, 6), round(64 * 8 / 1e5, 6)]


def test_packet_rate_charges_an_ack_like_a_full_frame():  # the negative control: BMv2's model
    tm = TrafficManager(1)
    tm.set_rate(100e9 / (8 * 4096), port=1)
    for size in (4096, 64, 64, 4096):
        tm.enqueue(size, 1, 0, 0.0, size)
    times = [d[0] for d in _drain(tm)]
    assert len({round(b - a, 6) for a, b in zip(times, times[1:])}) == 1


def test_byte_rate_setting_follows_the_last_matching_rule_and_is_checked():
    tm = TrafficManager(2)
    tm.set_byte_rate(100e9)
    tm.set_byte_rate(400e9, port=3)
    assert tm._port(1).queues[1].rate_bps == 100e9 and tm._port(3).queues[0].rate_bps == 400e9
    with pytest.raises(ValueError):
        tm.set_byte_rate(-1)


def _lossless(size=200_000, headroom=20_000, alpha=1.0):
    tm = TrafficManager(2)
    tm.set_byte_rate(100e9)
    tm.set_depth(10_000)
    events = []
    buf = tm.set_buffer(BufferConfig(size, alpha=alpha, classes=(0, 1), headroom_bytes={5: headroom, 6: headroom},
                                     xon_offset_bytes=2000))
    buf.on_pfc = lambda port, cls, xoff, t: events.append((port, cls, xoff))
    return tm, buf, events


def test_lossless_ingress_over_its_threshold_sends_xoff_then_uses_headroom_and_resumes():
    tm, buf, events = _lossless()
    # shared = 200000 - 2 ports x 20000 x 2 classes = 120000; alpha 1: threshold = free shared,
    # so ingress 5 may hold up to half of it (60000) before XOFF
    admitted = sum(tm.enqueue(i, 1, 0, 0.0, 1000, ingress=5) >= 0 for i in range(75))
    assert admitted == 75 and events == [(5, 0, True)]
    assert buf.headroom[(5, 0)] == 15_000 and buf.drops == 0
    _drain(tm)
    assert events == [(5, 0, True), (5, 0, False)]
    assert buf.used == 0 and buf.headroom[(5, 0)] == 0


def test_lossless_headroom_overflow_drops_and_counts():
    tm, buf, _ = _lossless(headroom=5000)
    results = [tm.enqueue(i, 1, 0, 0.0, 1000, ingress=5) for i in range(100)]
    assert results.count(-1) == buf.headroom_drops == buf.drops > 0


def test_lossy_mode_drops_over_the_dynamic_threshold_and_never_pauses():
    tm = TrafficManager(1)
    tm.set_depth(10_000)
    events = []
    buf = tm.set_buffer(BufferConfig(100_000, alpha=1.0, lossless=False))
    buf.on_pfc = lambda *a: events.append(a)
    results = [tm.enqueue(i, 1, 0, 0.0, 1000, ingress=5) for i in range(100)]
    assert 0 < results.count(-1) == buf.drops and events == []
    assert 45 <= 100 - results.count(-1) <= 55  # one queue holds about alpha/(1+alpha) of it


def test_a_paused_class_does_not_send_and_the_others_go_on():
    tm = TrafficManager(2)
    tm.set_byte_rate(100e9)
    tm.pause(1, 0, True, 0.0)
    tm.enqueue("low", 1, 0, 0.0, 1000)
    tm.enqueue("high", 1, 1, 0.0, 1000)
    assert [d[5] for d in _drain(tm, 100.0)] == ["high"]
    assert tm.next_departure() is None and 1 in tm.busy
    tm.pause(1, 0, False, 50.0)
    out = _drain(tm)
    assert [(d[0], d[5]) for d in out] == [(50.0, "low")]
    assert tm.pause_time_us(60.0) == {(1, 0): 50.0}


def test_pause_time_counts_an_ongoing_pause():
    tm = TrafficManager(1)
    tm.pause(4, 0, True, 10.0)
    assert tm.pause_time_us(25.0) == {(4, 0): 15.0}


def test_headroom_covers_both_directions_of_the_wire_plus_frames():
    assert headroom_for(100, 1.0, 4200) == 2 * 12_500 + 2 * 4200
    assert headroom_for(400, 1.0, 4200) == 2 * 50_000 + 2 * 4200
