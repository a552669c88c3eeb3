"""``Switch.send_many`` (the native backend's batch, p4sim/native/batch.py) against one ``send``
per frame: byte-identical outputs in the same order, identical registers, counters, meters,
tables, stats and digests, on the native backend per frame and on the reference backend; on the
L3 example, the Stellar leaf (idle queues, digests, meters, mutated frames with parser errors
and drops), the Stellar leaf with rate-limited queues (every frame hands back to Python),
ops.p4 (asserts, exit, log_msg), pick.p4 (multicast, unknown groups, a rate-limited port) and a
program that clones (the loop of send).  ``bench/fuzz_diff.py --backends --batch`` runs the same
comparison over 100,000+ frames.  The negative control fills the batch's fast table without
asking the traffic manager: queued frames then skip their queue and the comparison fails."""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

import p4sim
from p4sim.clock import WallClock
from p4sim.native.batch import Batch
from p4sim.native.compare import diff_state, state
from testkit.native_workloads import BUILDERS, runs

pytestmark = pytest.mark.filterwarnings("error::p4sim.native.NativeFallbackWarning")

OPS_P4 = Path(__file__).parent / "p4" / "ops.p4"


def drive(sw: Any, frames: list[bytes], ports: tuple[int, ...], batch: bool, count: int = 1500) -> dict:
    outs = []
    for port, run, gap in runs(frames, count, 5, ports):
        if batch:
            sw.send_many(port, run)
        else:
            for f in run:
                sw.send(port, f)
        if gap:
            sw.advance(gap)
        outs.append(sw.take_output())
    return {"outs": outs, "state": state(sw), "stats": dict(sw.stats), "digests": sw.digests()}


def mismatches(a: dict, b: dict) -> list[str]:
    bad = [f"group {i}" for i, (x, y) in enumerate(zip(a["outs"], b["outs"])) if x != y]
    bad += diff_state(a["state"], b["state"])
    bad += [k for k in ("stats", "digests") if a[k] != b[k]]
    return bad


class StopCount:
    """How many frames the batch handed back to Python (``Batch._finish`` calls)."""

    def __init__(self, monkeypatch: Any) -> None:
        self.n = 0
        self.times: set[int] = set()
        finish = Batch._finish

        def counted(batch: Batch, sw: Any, why: int, data: bytes, t: float) -> None:
            self.n += 1
            self.times.add(int(t))
            finish(batch, sw, why, data, t)

        monkeypatch.setattr(Batch, "_finish", counted)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_batch_equals_send_per_frame_on_both_backends(name, monkeypatch):
    build, ports = BUILDERS[name]
    ref_sw, frames = build("python")
    ref = drive(ref_sw, frames, ports, batch=False)
    one_sw, _ = build("native")
    one = drive(one_sw, frames, ports, batch=False)
    stops = StopCount(monkeypatch)
    many_sw, _ = build("native")
    assert many_sw.pipeline.batch is not None
    many = drive(many_sw, frames, ports, batch=True)
    assert mismatches(one, many) == []
    assert mismatches(ref, many) == []
    # the workload exercises what it claims to compare
    st = ref["stats"]
    assert st["transmitted"] > 100 and st.get("dropped", 0) > 0 and st.get("parser_error", 0) > 0
    if name.startswith("stellar"):
        assert ref["digests"], "no digest: the digest comparison would be vacuous"
    if name == "stellar-queued":  # every arrival meets a rate-limited queue: each one hands back
        assert st.get("queue_full", 0) > 0 and stops.n >= st["transmitted"]
    else:  # most frames ran in the C loop
        assert stops.n < st["received"] // 3, (stops.n, st["received"])


def test_a_fast_table_that_ignores_the_traffic_manager_is_detected(monkeypatch):
    """Negative control: every (port, priority) marked fast, queues never consulted."""
    build, ports = BUILDERS["stellar-queued"]
    one_sw, frames = build("native")
    one = drive(one_sw, frames, ports, batch=False, count=300)

    def all_fast(batch: Batch) -> None:
        batch.ffi.buffer(batch.fast)[:] = b"\x01" * len(batch.fast)

    monkeypatch.setattr(Batch, "_forget", all_fast)
    monkeypatch.setattr(Batch, "_finish", lambda batch, sw, why, data, t: None)
    many_sw, _ = build("native")
    many = drive(many_sw, frames, ports, batch=True, count=300)
    bad = mismatches(one, many)
    assert "stats" in bad and any(b.startswith("group") for b in bad)


def test_asserts_exit_and_log_msg_hand_back_in_order(caplog):
    """ops.p4: frames that fail an assert in ingress (dropped, counted, logged) between frames
    that exit early and frames that run whole; the log lines in the same order."""
    prog = p4sim.compile(str(OPS_P4))
    rnd = random.Random(4)
    frames = [bytes([rnd.randrange(8), rnd.randrange(6), rnd.randrange(12)]) + bytes(9) for _ in range(400)]
    seen = {}
    caplog.set_level("INFO", logger="p4sim")
    for how in ("each", "many", "python"):
        sw = p4sim.Switch(prog, backend="python" if how == "python" else "native")
        caplog.clear()
        if how == "many":
            sw.send_many(0, frames)
        else:
            for f in frames:
                sw.send(0, f)
        seen[how] = (sw.take_output(), dict(sw.stats), [r.getMessage() for r in caplog.records], state(sw))
    assert seen["many"][:3] == seen["each"][:3] == seen["python"][:3]
    assert diff_state(seen["many"][3], seen["each"][3]) == []
    assert seen["each"][1]["assert_failed"] > 0 and seen["each"][1]["transmitted"] > 0


def test_on_output_sees_each_output_before_the_next_frame():
    """With an ``on_output`` callback the frames go one by one: the callback runs before the
    next frame arrives, as with ``send``."""
    sw, frames = BUILDERS["l3"][0]("native")
    forwarded = []
    for f in frames:
        sw.send(0, f)
        if sw.take_output():
            forwarded.append(f)
    sw.stats.clear()
    seen: list[int] = []
    sw.on_output = lambda port, data: seen.append(sw.stats["received"])
    sw.send_many(0, forwarded)
    assert seen == list(range(1, len(forwarded) + 1))


def test_wall_clock_batch_matches_and_stamps_digests_per_frame(monkeypatch):
    """On the wall clock each frame arrives at its own time, read in C: the L3 outputs equal
    one send per frame, and the Stellar leaf's digests carry non-decreasing times inside the
    call's span, frames run in C their own (not the time of the last frame Python finished)."""
    outs = []
    for batch in (False, True):
        sw, frames = BUILDERS["l3"][0]("native")
        sw.clock = WallClock()
        if batch:
            sw.send_many(2, frames * 20)
        else:
            for f in frames * 20:
                sw.send(2, f)
        outs.append((sw.take_output(), dict(sw.stats)))
    assert outs[0] == outs[1] and outs[0][1]["transmitted"] > 100

    sw, frames = BUILDERS["stellar"][0]("native")
    sw.clock = WallClock()
    stops = StopCount(monkeypatch)
    t0 = sw.now_us
    sw.send_many(1, frames * 10)
    t1 = sw.now_us
    stamps = [d.timestamp_us for d in sw.digests()]
    assert stamps and stamps == sorted(stamps) and int(t0) <= stamps[0] and stamps[-1] <= t1
    assert set(stamps) - stops.times, "every digest carries the time of a frame Python finished"


def test_multicast_unknown_groups_queues_and_short_frames_hand_back(monkeypatch):
    """tests/native/p4/pick.p4: unicast (C), multicast to known and unknown groups, the drop
    port, a rate-limited port and frames too short to parse, interleaved: every kind that leaves
    the C loop does so in order, with the outputs and stats of one send per frame."""
    prog = p4sim.compile(str(Path(__file__).parent / "p4" / "pick.p4"))
    rnd = random.Random(6)
    kinds = [b"\x00\x01\x00", b"\x00\x02\x00", b"\x00\x03\x00", b"\x00\xff\x00", b"\x01\x00\x00",
             b"\x02\x00\x00", b"\x09\x00\x00", b"\x00\x01", b""]
    runs = [[rnd.choice(kinds) + bytes(rnd.randrange(4)) for _ in range(rnd.randrange(1, 40))] for _ in range(30)]
    seen = {}
    stops = StopCount(monkeypatch)
    for how in ("python", "each", "many"):
        sw = p4sim.Switch(prog, backend="python" if how == "python" else "native")
        sw.set_mcast_group(1, [(1, 4), (2, 5)])
        sw.set_mcast_group(2, [(3, 6)])
        sw.set_queue_rate(1000, port=3)  # 1 ms per packet on port 3
        outs = []
        for run in runs:
            if how == "many":
                sw.send_many(0, run)
            else:
                for f in run:
                    sw.send(0, f)
            sw.advance(500)
            outs.append(sw.take_output())
        seen[how] = (outs, dict(sw.stats), state(sw))
    assert seen["many"][:2] == seen["each"][:2] == seen["python"][:2]
    st = seen["python"][1]
    assert all(st.get(k, 0) > 0 for k in ("unknown_mcast_group", "dropped", "parser_error", "transmitted"))
    assert any(p == 3 for o in seen["python"][0] for p, _ in o) and sum(map(len, runs)) > stops.n > 0


def test_a_program_that_clones_runs_the_loop_of_send():
    """ptf_tests/p4/ptf_basic.p4 clones (I2E mirror) and multicasts: the native backend runs it
    through the switch's own reinjection code, so send_many is one send per frame, same result."""
    prog = p4sim.compile(str(Path(__file__).parents[2] / "ptf_tests" / "p4" / "ptf_basic.p4"))
    mirror, flood = b"\x02\x00\x00\x00\x00\x01", b"\x02\x00\x00\x00\x00\x02"
    frames = [dst + bytes([0, 0, 0, 0, 0, i]) + b"\x88\xb5" + bytes(20) for i in range(20) for dst in (mirror, flood)]
    seen = {}
    for how in ("python", "each", "many"):
        sw = p4sim.Switch(prog, backend="python" if how == "python" else "native")
        assert sw.pipeline.batch is None
        sw.insert_entry("BasicIngress.l2_special", {"hdr.ethernet.dstAddr": mirror}, "BasicIngress.mirror", {"session": 7})
        sw.insert_entry("BasicIngress.l2_special", {"hdr.ethernet.dstAddr": flood}, "BasicIngress.set_mcast_grp",
                        {"grp": 3})
        sw.set_clone_session(7, [(5, 0)])
        sw.set_mcast_group(3, [(1, 1), (2, 2)])
        if how == "many":
            sw.send_many(0, frames)
        else:
            for f in frames:
                sw.send(0, f)
        seen[how] = (sw.take_output(), dict(sw.stats), sw.digests())
    assert seen["many"] == seen["each"] == seen["python"]
    assert {p for p, _ in seen["python"][0]} == {1, 2, 5} and seen["python"][2]


def test_frames_larger_than_the_output_buffer():
    """A frame bigger than the batch's whole output buffer (256 KB) between ordinary ones: the
    buffer grows, and the outputs are those of one send per frame."""
    outs = []
    for batch in (False, True):
        sw, frames = BUILDERS["l3"][0]("native")
        big = [frames[0] + bytes(300_000), *frames[:5], frames[1] + bytes(600_000)]
        if batch:
            sw.send_many(0, big)
        else:
            for f in big:
                sw.send(0, f)
        outs.append((sw.take_output(), dict(sw.stats)))
    assert outs[0] == outs[1]
    assert max(len(d) for _, d in outs[0][0]) > 600_000


def test_wall_clock_hands_the_rest_to_send_once_a_queue_holds_a_packet(monkeypatch):
    """On the wall clock, queued packets depart between arrivals, which only ``send`` serves:
    once a frame leaves a packet in a queue, the rest of the list goes one send at a time."""
    probe, frames = BUILDERS["l3"][0]("native")
    for first in frames:
        probe.send(0, first)
        out = probe.take_output()
        if out:
            break
    slow = out[0][0]
    run = [first, first, *frames[:20]]  # the second copy waits a second behind the first
    ran: list[int] = []
    batch_run = Batch.run
    monkeypatch.setattr(Batch, "run", lambda b, *a: ran.append(batch_run(b, *a)) or ran[-1])
    outs = []
    for batch in (False, True):
        sw, _ = BUILDERS["l3"][0]("native")
        sw.clock = WallClock()
        sw.set_queue_rate(1, port=slow)
        if batch:
            sw.send_many(0, run)
        else:
            for f in run:
                sw.send(0, f)
        outs.append((sw.take_output(), dict(sw.stats), sw.queue_occupancy(slow)))
    assert outs[0] == outs[1] and outs[0][2] >= 1
    assert ran == [2], "the batch stopped after the frame that queued"
