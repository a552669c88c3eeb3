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
