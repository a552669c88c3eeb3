"""``Switch.send_many`` (the native backend's batch, p4sim/native/batch.py) against one ``send``
per frame: byte-identical outputs in the same order, identical registers, counters, meters,
tables, stats and digests, on the native backend per frame and on the reference backend; on the
L3 example, the Stellar leaf (idle queues, digests, meters, mutated frames with parser errors
and drops), the Stellar leaf with rate-limited queues (every frame hands back to Python) and
ops.p4 (asserts, exit, log_msg).  The negative control fills the batch's fast table without
asking the traffic manager: queued frames then skip their queue and the comparison fails."""
from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Iterator

import pytest

import p4sim
from p4sim.clock import WallClock
from p4sim.native.batch import Batch
from p4sim.native.compare import diff_state, state
from testkit.native_workloads import BUILDERS, mutate

pytestmark = pytest.mark.filterwarnings("error::p4sim.native.NativeFallbackWarning")

OPS_P4 = Path(__file__).parent / "p4" / "ops.p4"


def groups(frames: list[bytes], count: int, seed: int, ports: tuple[int, ...]) -> Iterator[tuple[int, list[bytes], float]]:
    """(port, frames, microseconds to advance after them): runs of 1..60 frames on one port,
    originals and mutations mixed, with gaps for queues, flowlets and meters to matter."""
    rnd = random.Random(seed)
    sent = 0
    while sent < count:
        k = min(count - sent, rnd.choice((1, 2, 5, 20, 60)))
        run = [frames[rnd.randrange(len(frames))] for _ in range(k)]
        run = [mutate(rnd, f) if rnd.random() < 0.4 else f for f in run]
        sent += k
        yield rnd.choice(ports), run, rnd.choice((0.0, 0.5, 40.0, 400.0))


def drive(sw: Any, frames: list[bytes], ports: tuple[int, ...], batch: bool, count: int = 1500) -> dict:
    outs = []
    for port, run, gap in groups(frames, count, 5, ports):
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
