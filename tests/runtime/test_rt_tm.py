"""Traffic manager and clock: queue metadata, rates, depths, strict priority, ports (virtual time)."""
from pathlib import Path

import pytest

import p4sim
from p4sim.clock import VirtualClock, WallClock
from p4sim.errors import RuntimeApiError
from rtkit import pack, unpack

PROBE = Path(__file__).parent / "p4" / "queue_probe.p4"
WIDTHS = [16, 8, 8, 32, 32, 32, 32, 48, 48, 16, 32]
NAMES = ["out_port", "prio", "instance_type", "enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth",
         "ingress_ts", "egress_ts", "egress_port", "packet_length"]


@pytest.fixture(scope="module")
def prog():
    return p4sim.compile(str(PROBE))


def probe(out_port=1, prio=0, payload=b""):
    return pack([(out_port, 16), (prio, 8)] + [(0, w) for w in WIDTHS[2:]]) + payload


def read(data):
    return dict(zip(NAMES, unpack(data, WIDTHS)))


def outputs(sw):
    return [(port, read(d)) for port, d in sw.take_output()]


def test_unlimited_rate_departs_immediately(prog):
    sw = p4sim.Switch(prog)
    sw.send(0, probe(3))
    [(port, p)] = outputs(sw)
    assert port == 3 and p["egress_port"] == 3
    assert p["enq_qdepth"] == 0 and p["deq_qdepth"] == 0 and p["deq_timedelta"] == 0


def test_nothing_moves_until_virtual_clock_advances(prog):
    sw = p4sim.Switch(prog)
    sw.set_queue_rate(1000, port=1)  # 1 ms per packet
    for _ in range(3):
        sw.send(0, probe(1))
    assert len(sw.take_output()) == 1  # the first leaves at once (idle port)
    assert sw.now_us == 0
    assert sw.take_output() == []
    sw.advance(999)
    assert sw.take_output() == []
    sw.advance(1)
    assert len(sw.take_output()) == 1


def test_rate_spaces_departures_by_one_over_pps(prog):
    sw = p4sim.Switch(prog)
    sw.set_queue_rate(10_000, port=1)  # 100 us per packet
    for _ in range(4):
        sw.send(0, probe(1))
    sw.advance(1000)
    ts = [p["egress_ts"] for _, p in outputs(sw)]
    assert ts == [0, 100, 200, 300]


def test_enq_qdepth_counts_packets_before_push(prog):
    sw = p4sim.Switch(prog)
    sw.set_queue_rate(1000, port=1)
    for _ in range(4):
        sw.send(0, probe(1))
    sw.advance(10_000)
    # the first departs on an idle port without queueing; the rest find 0, 1, 2 ahead of them
    assert [p["enq_qdepth"] for _, p in outputs(sw)] == [0, 0, 1, 2]


def test_deq_qdepth_counts_packets_left_after_pop(prog):
    sw = p4sim.Switch(prog)
    sw.set_queue_rate(1000, port=1)
    for _ in range(4):
        sw.send(0, probe(1))
    sw.advance(10_000)
    assert [p["deq_qdepth"] for _, p in outputs(sw)] == [0, 2, 1, 0]


def test_deq_timedelta_is_dequeue_minus_enqueue(prog):
    sw = p4sim.Switch(prog)
    sw.set_queue_rate(1000, port=1)
    sw.send(0, probe(1))
    sw.send(0, probe(1))
    sw.advance(250)
    sw.send(0, probe(1))  # enqueued at 250, leaves at 2000
    sw.advance(5000)
    ps = [p for _, p in outputs(sw)]
    assert [p["deq_timedelta"] for p in ps] == [0, 1000, 1750]
    assert [p["enq_timestamp"] for p in ps] == [0, 0, 250]
    assert all(p["egress_ts"] - p["enq_timestamp"] == p["deq_timedelta"] for p in ps)


def test_timestamps_are_microseconds_since_switch_start(prog):
    sw = p4sim.Switch(prog)
    sw.advance(1234)
    sw.send(0, probe(1))
    [(_, p)] = outputs(sw)
    assert p["ingress_ts"] == 1234 and p["enq_timestamp"] == 1234 and p["egress_ts"] == 1234


def test_egress_runs_at_departure_time(prog):
    sw = p4sim.Switch(prog)
    sw.set_queue_rate(100, port=1)  # 10 ms
    sw.send(0, probe(1))
    sw.send(0, probe(1))
    sw.advance(50_000)
    ps = [p for _, p in outputs(sw)]
    assert ps[1]["ingress_ts"] == 0 and ps[1]["egress_ts"] == 10_000


def test_queue_full_drops_the_arriving_packet(prog):
    sw = p4sim.Switch(prog)
    sw.set_queue_rate(1000, port=1)
    sw.set_queue_depth(2, port=1)
    for i in range(5):
        sw.send(0, probe(1, payload=bytes([i])))
    sw.advance(100_000)
    out = sw.take_output()
    # #0 leaves at once, #1 and #2 fill the 2-deep queue, #3 and #4 are dropped at the tail
    assert [d[-1] for _, d in out] == [0, 1, 2]
    assert sw.stats["queue_full"] == 2


def test_default_queue_depth_is_64_packets(prog):
    sw = p4sim.Switch(prog)
    sw.set_queue_rate(1, port=1)
    for _ in range(70):
        sw.send(0, probe(1))
    assert sw.queue_occupancy(1) == 64  # 1 departed immediately, 64 queued
    assert sw.stats["queue_full"] == 5


def test_strict_priority_queue_serves_highest_first(prog):
    sw = p4sim.Switch(prog, priority_queues=4)
    sw.set_queue_rate(1000, port=1)
    sw.send(0, probe(1, prio=0, payload=b"L0"))  # leaves at once: port idle
    sw.send(0, probe(1, prio=0, payload=b"L1"))
    sw.send(0, probe(1, prio=0, payload=b"L2"))
    sw.send(0, probe(1, prio=3, payload=b"H1"))
    sw.send(0, probe(1, prio=2, payload=b"M1"))
    sw.advance(10_000)
    assert [d[-2:] for _, d in sw.take_output()] == [b"L0", b"H1", b"M1", b"L1", b"L2"]


def test_single_queue_is_fifo_whatever_the_priority_field_with_one_queue(prog):
    sw = p4sim.Switch(prog, priority_queues=1)
    sw.set_queue_rate(1000, port=1)
    for tag in (b"A", b"B", b"C"):
        sw.send(0, probe(1, prio=0, payload=tag))
    sw.advance(10_000)
    assert [d[-1:] for _, d in sw.take_output()] == [b"A", b"B", b"C"]


def test_priority_at_or_above_queue_count_is_dropped(prog):
    sw = p4sim.Switch(prog, priority_queues=2)
    sw.send(0, probe(1, prio=2))
    assert sw.take_output() == []
    assert sw.stats["priority_invalid"] == 1
    sw.send(0, probe(1, prio=1))
    assert len(sw.take_output()) == 1


def test_queue_rate_per_port_and_priority_overrides_the_global_one(prog):
    sw = p4sim.Switch(prog, priority_queues=2)
    sw.set_queue_rate(1000)
    sw.set_queue_rate(10_000, port=2, priority=1)
    assert sw.tm.rate(1, 0) == 1000 and sw.tm.rate(2, 0) == 1000 and sw.tm.rate(2, 1) == 10_000
    assert sw.tm.rate(7, 1) == 1000  # ports first used later get the global setting


def test_ports_are_independent_queues(prog):
    sw = p4sim.Switch(prog)
    sw.set_queue_rate(1000)
    sw.send(0, probe(1))
    sw.send(0, probe(1))
    sw.send(0, probe(2))
    out = [(port, p["egress_ts"]) for port, p in outputs(sw)]
    assert out == [(1, 0), (2, 0)]  # port 2 is not behind port 1's queue
    sw.advance(1000)
    assert [(port, p["egress_ts"]) for port, p in outputs(sw)] == [(1, 1000)]


def test_take_output_is_in_departure_order(prog):
    sw = p4sim.Switch(prog)
    sw.set_queue_rate(1000, port=1)
    sw.set_queue_rate(400, port=2)  # 2500 us
    for _ in range(3):
        sw.send(0, probe(1))
        sw.send(0, probe(2))
    sw.advance(10_000)
    ts = [p["egress_ts"] for _, p in outputs(sw)]
    assert ts == sorted(ts) and len(ts) == 6


def test_next_departure_us_reports_the_head_of_line(prog):
    sw = p4sim.Switch(prog)
    assert sw.next_departure_us() is None
    sw.set_queue_rate(1000, port=1)
    sw.send(0, probe(1))
    sw.send(0, probe(1))
    assert sw.next_departure_us() == 1000


def test_down_port_drops_and_counts(prog):
    sw = p4sim.Switch(prog)
    sw.set_port_up(1, False)
    sw.send(0, probe(1))
    assert sw.take_output() == [] and sw.stats["port_down"] == 1
    sw.send(1, probe(2))  # a down port receives nothing either
    assert sw.take_output() == [] and sw.stats["port_down"] == 2
    sw.set_port_up(1, True)
    sw.send(0, probe(1))
    assert len(sw.take_output()) == 1


def test_port_going_down_drops_its_queue(prog):
    sw = p4sim.Switch(prog)
    sw.set_queue_rate(1000, port=1)
    for _ in range(3):
        sw.send(0, probe(1))
    sw.take_output()
    sw.set_port_up(1, False)
    sw.advance(10_000)
    assert sw.take_output() == [] and sw.stats["port_down"] == 2


def test_on_output_callback_and_disabling_the_buffer(prog):
    sw = p4sim.Switch(prog)
    seen = []
    sw.on_output = lambda port, data: seen.append(port)
    sw.buffer_output = False
    sw.send(0, probe(4))
    assert seen == [4] and sw.take_output() == []


def test_mark_to_drop_drops_and_counts(prog):
    sw = p4sim.Switch(prog)
    sw.send(0, probe(511))
    assert sw.take_output() == [] and sw.stats["dropped"] == 1


def test_packet_length_is_the_received_length_in_bytes(prog):
    sw = p4sim.Switch(prog)
    sw.send(0, probe(1, payload=b"x" * 10))
    [(_, p)] = outputs(sw)
    assert p["packet_length"] == sum(WIDTHS) // 8 + 10


def test_bad_queue_settings_are_rejected(prog):
    sw = p4sim.Switch(prog, priority_queues=2)
    with pytest.raises(RuntimeApiError):
        sw.set_queue_rate(-1)
    with pytest.raises(RuntimeApiError):
        sw.set_queue_depth(5, port=1, priority=2)


def test_virtual_clock_only_moves_forward():
    c = VirtualClock()
    c.advance(5)
    assert c.now_us == 5
    with pytest.raises(ValueError):
        c.advance(-1)


def test_wall_clock_mode_service_sends_due_packets(prog):
    sw = p4sim.Switch(prog, clock="wall")
    assert isinstance(sw.clock, WallClock)
    sw.set_queue_rate(1_000_000, port=1)  # 1 us per packet: due almost at once
    sw.send(0, probe(1))
    sw.send(0, probe(1))
    got = len(sw.take_output())  # the first left at once
    deadline = sw.now_us + 2_000_000
    while got < 2 and sw.now_us < deadline:  # spin on the wall clock (no sleep)
        sw.service()
        got += len(sw.take_output())
    assert got == 2 and sw.next_departure_us() is None


def test_cpu_port_packets_in_and_out(prog):
    sw = p4sim.Switch(prog, cpu_port=255)
    assert sw.cpu_port == 255
    sw.send(0, probe(255))  # egress on the CPU port = a packet-in for the controller
    assert [port for port, _ in sw.take_output()] == [255]
    sw.send(255, probe(2))  # a packet-out enters ingress on the CPU port
    [(port, data)] = sw.take_output()
    assert port == 2


def test_concurrent_senders_are_serialised_by_the_lock(prog):
    import threading

    sw = p4sim.Switch(prog)
    sw.set_queue_rate(1000, port=1)

    def sender():
        for _ in range(200):
            sw.send(0, probe(1))

    threads = [threading.Thread(target=sender) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sw.set_queue_depth(1000, port=1)
    sw.advance(10_000_000)
    out = sw.take_output()
    assert len(out) + sw.stats["queue_full"] == 800 and sw.stats["runtime_error"] == 0
    depths = [read(d)["enq_qdepth"] for _, d in out]
    assert max(depths) <= 64


def test_switch_refuses_to_move_time_backwards(prog):
    sw = p4sim.Switch(prog)
    with pytest.raises(RuntimeApiError):
        sw.advance(-5)
    assert sw.now_us == 0


# ---------------------------------------------------------------------------------------- DWRR
def _backlog(sw, port, per_queue, sizes, n=200):
    """Fill each queue in ``per_queue`` with ``n`` probes of ``sizes[q]`` payload bytes (tagged)."""
    sw.set_queue_depth(n + 1, port=port)
    for i in range(n):
        for q in per_queue:
            sw.send(0, probe(port, prio=q, payload=bytes([q]) * sizes[q]))


def _bytes_by_queue(sw, first_n):
    got = {}
    for _, data in sw.take_output()[:first_n]:
        p = read(data)
        got[p["prio"]] = got.get(p["prio"], 0) + p["packet_length"]
    return got


def test_weights_off_is_strict_priority_exactly(prog):
    """No weight set anywhere: the same departures as BMv2's strict priority (the default)."""
    sw = p4sim.Switch(prog, priority_queues=4)
    sw.set_queue_rate(1000, port=1)
    assert sw.tm.weight(1, 2) == (0, 2)
    _backlog(sw, 1, (1, 2), {1: 10, 2: 10}, n=20)
    sw.advance(40_000)
    prios = [read(d)["prio"] for _, d in sw.take_output()]
    assert prios[1:21] == [2] * 20 and prios[21:] == [1] * 19  # the first left at once (idle port)


def test_dwrr_shares_bytes_by_weight_at_virtual_time(prog):
    """Two backlogged weighted queues share the port 3:1 in bytes; the negative control (no
    weights) gives everything to the higher queue."""
    for weights, expect in (({2: 3000, 1: 1000}, 0.75), (None, 1.0)):
        sw = p4sim.Switch(prog, priority_queues=4)
        sw.set_queue_rate(10_000, port=1)  # 100 us per packet
        if weights:
            for q, w in weights.items():
                sw.set_queue_weight(w, port=1, priority=q)
        _backlog(sw, 1, (1, 2), {1: 500, 2: 500})
        sw.advance(400 * 100)
        got = _bytes_by_queue(sw, 200)  # both queues still backlogged: 150 + 50 of 200 each
        share = got.get(2, 0) / sum(got.values())
        assert abs(share - expect) < 0.01, (weights, got)


def test_dwrr_is_byte_fair_not_packet_fair(prog):
    """Equal weights, queue 2 sends 4x larger packets: equal bytes, so 4x fewer of its packets."""
    sw = p4sim.Switch(prog, priority_queues=4)
    sw.set_queue_rate(10_000, port=1)
    sw.set_queue_weight(1500, port=1, priority=1)
    sw.set_queue_weight(1500, port=1, priority=2)
    _backlog(sw, 1, (1, 2), {1: 200, 2: 800})
    sw.advance(300 * 100)
    out = [read(d) for _, d in sw.take_output()[:250]]
    by = {q: sum(p["packet_length"] for p in out if p["prio"] == q) for q in (1, 2)}
    n = {q: sum(1 for p in out if p["prio"] == q) for q in (1, 2)}
    assert abs(by[2] / (by[1] + by[2]) - 0.5) < 0.03, by
    assert n[1] > 3 * n[2], n


def test_small_weights_skip_empty_rounds(prog):
    """Weights far below the packet size give the same shares (rounds are skipped, not looped)."""
    sw = p4sim.Switch(prog, priority_queues=4)
    sw.set_queue_rate(10_000, port=1)
    sw.set_queue_weight(3, port=1, priority=2)
    sw.set_queue_weight(1, port=1, priority=1)
    _backlog(sw, 1, (1, 2), {1: 1000, 2: 1000})
    sw.advance(300 * 100)
    got = _bytes_by_queue(sw, 200)
    assert abs(got[2] / (got[1] + got[2]) - 0.75) < 0.02, got


def test_strict_queue_above_the_weighted_level_preempts_it(prog):
    """Queue 3 strict, 1 and 2 weighted, 0 strict: 3 first, then DWRR, queue 0 only when the
    weighted queues are empty."""
    sw = p4sim.Switch(prog, priority_queues=4)
    sw.set_queue_rate(1000, port=1)
    sw.set_queue_weight(1000, port=1, priority=1)
    sw.set_queue_weight(1000, port=1, priority=2)
    sw.send(0, probe(1, prio=0, payload=b"first"))  # leaves at once
    for q in (0, 1, 2, 1, 2, 3):
        sw.send(0, probe(1, prio=q))
    sw.advance(20_000)
    prios = [read(d)["prio"] for _, d in sw.take_output()]
    assert prios[0] == 0 and prios[1] == 3 and sorted(prios[2:6]) == [1, 1, 2, 2] and prios[6] == 0


def test_group_shares_one_weight_and_serves_its_queues_in_priority(prog):
    """Queues 2 and 3 in one group (a class's mouse and elephant queue) against queue 1 at the
    same weight: the group gets half in total, not two thirds, and 3 goes before 2 inside it."""
    sw = p4sim.Switch(prog, priority_queues=4)
    sw.set_queue_rate(10_000, port=1)
    sw.set_queue_weight(2000, port=1, priority=3, group=3)
    sw.set_queue_weight(2000, port=1, priority=2, group=3)
    sw.set_queue_weight(2000, port=1, priority=1)
    _backlog(sw, 1, (1, 2, 3), {1: 500, 2: 500, 3: 500}, n=100)
    sw.advance(250 * 100)
    out = [read(d)["prio"] for _, d in sw.take_output()]
    both = out[1:181]  # [0] (queue 1) left at once; queue 1 stays backlogged through [180]
    group = [p for p in both if p in (2, 3)]
    assert abs(len(group) / len(both) - 0.5) < 0.02, both
    # inside the group strict priority: queue 3 drains before queue 2 sends at all
    assert set(group) == {3} and out.index(2) > len(out) - 1 - out[::-1].index(3), out


def test_queue_weight_setting_is_checked(prog):
    sw = p4sim.Switch(prog, priority_queues=2)
    for bad in (dict(weight=-1), dict(weight=1, priority=2), dict(weight=1, group=5), dict(weight=1.5)):
        with pytest.raises(RuntimeApiError):
            sw.set_queue_weight(**bad)
    sw.set_queue_weight(7, priority=1)
    assert sw.tm.weight(4, 1) == (7, 1) and sw.tm.weight(4, 0) == (0, 0)  # later ports get it too
    sw.set_queue_weight(0, port=4, priority=1)
    assert sw.tm.weight(4, 1) == (0, 1) and sw.tm.weight(5, 1) == (7, 1)


def test_queue_weight_over_target_control_reaches_the_tm_and_survives_a_new_pipeline(prog):
    """``set_queue_weight`` on p4sim's side channel (what bmv2_env.target.P4simTarget sends)."""
    from p4sim.p4rt import Device, DeviceOptions
    from p4sim.target_control import ControlClient, ControlError, ControlServer

    dev = Device(DeviceOptions(clock="virtual", priority_queues=4), program_loader=lambda cfg: prog)
    dev.install(dev.build_switch(b"")[1])
    server = ControlServer(dev, "127.0.0.1:0")
    server.start()
    client = ControlClient(f"127.0.0.1:{server.port}")
    try:
        client.call("set_queue_weight", weight=3000, port=1, priority=2, group=3)
        assert dev.switch.tm.weight(1, 2) == (3000, 3) and dev.switch.tm.weight(1, 1) == (0, 1)
        for bad in (dict(weight=-1), dict(port=1), dict(weight=1, priority=9)):
            with pytest.raises(ControlError):
                client.call("set_queue_weight", **bad)
        dev.install(dev.build_switch(b"")[1])  # a new pipeline: the device re-applies its settings
        assert dev.switch.tm.weight(1, 2) == (3000, 3)
    finally:
        client.close()
        server.stop()


def test_dwrr_shares_and_work_conservation_over_random_mixes():
    """TrafficManager alone, seeded: three weighted queues with random weights and random packet
    sizes (64..1500 B) stay backlogged; each gets bytes in proportion to its weight (within 3%),
    and the port never idles while a packet waits (departures exactly 1/rate apart)."""
    import random

    from p4sim.tm import TrafficManager

    rng = random.Random(7)
    for _ in range(5):
        tm = TrafficManager(4)
        tm.set_rate(1000, port=1)
        tm.set_depth(5000, port=1)
        weights = {q: rng.randint(1, 20) * 100 for q in (1, 2, 3)}
        for q, w in weights.items():
            tm.set_weight(w, port=1, priority=q)
        for _ in range(3000):
            for q in weights:
                tm.enqueue(None, 1, q, 0.0, rng.randint(64, 1500))
        sent = {q: 0 for q in weights}
        sizes = {q: list(p[2] for p in tm.ports[1].queues[q].items) for q in weights}
        times = []
        for _ in range(3000):
            t, _, q, _, _, _ = tm.pop_due(1e12)
            times.append(t)
            sent[q] += sizes[q].pop(0)
        assert times == [i * 1000.0 for i in range(3000)]
        total_w, total_b = sum(weights.values()), sum(sent.values())
        for q in weights:
            assert abs(sent[q] / total_b - weights[q] / total_w) < 0.03, (weights, sent)
