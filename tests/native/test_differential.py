"""The native backend against the reference: byte-identical outputs (port, bytes), identical
register, counter, meter and table state, stats and digests, on the L3 example and the Stellar
leaf (with idle unlimited queues, and with rate-limited shallow ones: every packet departs from
a queue), with a few hundred seeded mutated frames each (bench/fuzz_diff.py runs 100,000+)."""
from __future__ import annotations

import pytest

from p4sim.native.compare import diff_state, state
from p4sim.runtime.pipeline import Pipeline
from testkit.native_workloads import BUILDERS, traffic

pytestmark = pytest.mark.filterwarnings("error::p4sim.native.NativeFallbackWarning")


def run(name: str, backend: str, count: int, seed: int = 3) -> dict:
    build, ports = BUILDERS[name]
    sw, frames = build(backend)
    outs = []
    for port, frame, gap in traffic(frames, count, seed, ports):
        sw.send(port, frame)
        if gap:
            sw.advance(gap)
        outs.append(sw.take_output())
    return {"sw": sw, "outs": outs, "state": state(sw), "stats": dict(sw.stats), "digests": sw.digests()}


def mismatches(a: dict, b: dict) -> list[str]:
    bad = [f"frame {i}" for i, (x, y) in enumerate(zip(a["outs"], b["outs"])) if x != y]
    bad += diff_state(a["state"], b["state"])
    if a["stats"] != b["stats"]:
        bad.append("stats")
    if a["digests"] != b["digests"]:
        bad.append("digests")
    return bad


@pytest.fixture(scope="module", params=sorted(BUILDERS))
def both(request) -> tuple[str, dict, dict]:
    name = request.param
    return name, run(name, "python", 300), run(name, "native", 300)


def test_native_backend_runs_the_program(both):
    name, ref, nat = both
    assert type(ref["sw"].pipeline) is Pipeline
    assert nat["sw"].pipeline.backend == "native", f"{name} fell back to the reference"


def test_outputs_state_stats_and_digests_are_identical(both):
    name, ref, nat = both
    assert mismatches(ref, nat) == []
    # the workload exercises what it claims to compare
    assert sum(map(len, ref["outs"])) > 50
    assert ref["stats"].get("dropped", 0) + ref["stats"].get("parser_error", 0) > 0
    if name == "stellar-queued":
        assert ref["stats"].get("queue_full", 0) > 0, "no queue filled: the queued path was not exercised"
    if name.startswith("stellar"):
        assert ref["digests"], "no digest generated: the comparison of digests would be vacuous"
        cells = ref["state"]["meter StellarIngress.qos.tenant_meter"]
        assert cells[1][2] != cells[1][0].pburst, "tenant 1's meter never ran"
    else:
        assert any(c and c[0] for *_, c, _ in ref["state"]["table MyIngress.ipv4_lpm"]), "no direct count"


def test_a_perturbed_native_result_is_detected(both):
    """Negative control: the comparison reports a changed output byte, a changed register or
    counter cell, and a changed direct counter."""
    name, ref, nat = both
    outs = [list(o) for o in nat["outs"]]
    i = next(k for k, o in enumerate(outs) if o)
    port, data = outs[i][0]
    outs[i][0] = (port, data[:-1] + bytes([data[-1] ^ 1]))
    assert mismatches(ref, dict(nat, outs=outs)) == [f"frame {i}"]
    sw = nat["sw"]
    if sw.pipeline.registers:
        rname, reg = next(iter(sw.pipeline.registers.items()))
        sw.register_write(rname, 0, (reg.cells[0] + 1) & reg.mask)
        assert diff_state(ref["state"], state(sw)) == [f"register {rname}"]
        sw.register_write(rname, 0, reg.cells[0] - 1 if reg.cells[0] else reg.mask)
    if sw.pipeline.counters:
        cname = next(iter(sw.pipeline.counters))
        packets, nbytes = sw.counter_read(cname, 0)
        sw.counter_write(cname, 0, packets + 1, nbytes)
        assert diff_state(ref["state"], state(sw)) == [f"counter {cname}"]
        sw.counter_write(cname, 0, packets, nbytes)
    direct = [(n, t) for n, t in sw.pipeline.tables.items() if t.has_counter and t.entries]
    for tname, t in direct[:1]:
        e = t.public_entries()[0]
        sw.direct_counter_write(tname, e.match, e.counter[0] + 1, e.counter[1], priority=e.priority)
        assert diff_state(ref["state"], state(sw)) == [f"table {tname}"]
    assert sw.pipeline.registers or sw.pipeline.counters or direct, "nothing stateful was perturbed"


def test_control_plane_writes_reach_the_native_tables():
    """A route deleted and re-added between packets changes the very next packet's fate, and
    direct counters survive the reload of the C table."""
    out = {}
    for backend in ("python", "native"):
        sw, frames = BUILDERS["l3"][0](backend)
        first: list = []
        for frame in frames:  # the first frame a forwarding route sends on
            sw.send(0, frame)
            first = sw.take_output()
            if first:
                break
        assert first
        entries = sw.table_entries("MyIngress.ipv4_lpm")
        hit = next(e for e in entries if e.counter and e.counter[0])
        sw.delete_entry("MyIngress.ipv4_lpm", hit.match)
        sw.send(0, frame)
        gone = sw.take_output()
        sw.insert_entry("MyIngress.ipv4_lpm", hit.match, hit.action, hit.params)
        sw.send(0, frame)
        back = sw.take_output()
        out[backend] = (first, gone, back, state(sw))
        assert gone != first and back == first
    assert out["python"][:3] == out["native"][:3]
    assert diff_state(out["python"][3], out["native"][3]) == []


def test_operators_exit_and_tables_are_identical(caplog):
    """tests/native/p4/ops.p4: signed/unsigned operators (unsigned products that wrap), shifts by
    run-time amounts, exit in an action (inout copied back) and in apply, a ternary/range table
    and a register, over every (a, b) corner and random values."""
    import random as _random
    from pathlib import Path

    import p4sim

    prog = p4sim.compile(str(Path(__file__).parent / "p4" / "ops.p4"))
    sws = {b: p4sim.Switch(prog, backend=b) for b in ("python", "native")}
    assert sws["native"].pipeline.backend == "native"
    rnd = _random.Random(2)
    corners = [0, 1, 2, 3, 7, 8, 9, 15, 16, 127, 128, 129, 200, 254, 255]
    frames = [bytes([a, b, op]) + bytes(9) for op in range(12) for a in corners for b in corners]
    frames += [bytes(rnd.getrandbits(8) for _ in range(12)) for _ in range(500)]
    outs: dict[str, list] = {b: [] for b in sws}
    logs: dict[str, list] = {b: [] for b in sws}
    caplog.set_level("INFO", logger="p4sim")
    for f in frames:
        for b, sw in sws.items():
            caplog.clear()
            sw.send(0, f)
            outs[b].append(sw.take_output())
            logs[b].append([r.getMessage() for r in caplog.records])
    assert outs["python"] == outs["native"]
    assert logs["python"] == logs["native"]
    assert dict(sws["python"].stats) == dict(sws["native"].stats)
    assert sws["python"].stats["assert_failed"] > 0 and any("a=" in m for x in logs["python"] for m in x)
    assert diff_state(state(sws["python"]), state(sws["native"])) == []
    ports = {o[0][0] for o in outs["python"] if o}
    assert ports == {1, 2}, "exit paths (port 1) and full paths (port 2) both taken"


def test_direct_meters_colour_and_state_are_identical():
    """tests/runtime/p4/direct_meter.p4: per-entry meters configured before and between packets,
    colours read in the action, buckets compared after every phase."""
    from pathlib import Path

    import p4sim

    prog = p4sim.compile(str(Path(__file__).parents[1] / "runtime" / "p4" / "direct_meter.p4"))
    sws = {b: p4sim.Switch(prog, backend=b) for b in ("python", "native")}
    assert sws["native"].pipeline.backend == "native"
    outs: dict[str, list] = {b: [] for b in sws}
    for b, sw in sws.items():
        for key in (1, 2, 3):
            sw.insert_entry("I.t", {"hdr.m.key": key}, "I.colour")
        sw.direct_meter_set_config("I.t", {"hdr.m.key": 1}, cir=500, cburst=1, pir=1500, pburst=2)
        for phase in range(3):
            for i in range(40):
                sw.send(0, bytes([1 + i % 4, 0, 0]))
                sw.advance(20 + 40 * (i % 3))
                outs[b].append(sw.take_output())
            outs[b].append(state(sw))
            sw.direct_meter_set_config("I.t", {"hdr.m.key": 1 + phase % 2}, cir=500 * (phase + 1), cburst=1,
                                       pir=2000, pburst=3)
    assert outs["python"] == outs["native"]
    colours = {o[0][1][1] for o in outs["python"] if isinstance(o, list) and o}
    assert colours == {0, 1, 2}, "green, yellow and red all seen"
