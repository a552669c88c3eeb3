"""State and output comparison between two switches running the same program (the native
backend against the reference): what the differential tests and ``bench/fuzz_diff.py`` check."""
from __future__ import annotations

from typing import Any


def state(sw: Any) -> dict[str, Any]:
    """Every piece of program state a controller or test can observe: register cells, counter
    packets/bytes, meter buckets and configs, table entries with direct counters (and the
    default entry's), defaults, digests waiting."""
    p = sw.pipeline
    out: dict[str, Any] = {}
    for name, r in p.registers.items():
        out["register " + name] = list(r.cells)
    for name, c in p.counters.items():
        out["counter " + name] = (list(c.packets), list(c.bytes))
    for name, m in p.meters.items():
        out["meter " + name] = [(x.config, x.tc, x.tp, x.last_us) for x in m.cells]
    for name, t in p.tables.items():
        entries = t.public_entries()  # (the native backend reads C's counts and buckets back first)
        out["table " + name] = [(e.match, e.action, e.params, e.priority, e.counter, e.meter_config) for e in entries]
        d = t.default
        out["default " + name] = (t.get_default(), tuple(d.counter) if d.counter is not None else None)
        if t.has_meter:
            out["direct meters " + name] = [(e.meter.config, e.meter.tc, e.meter.tp, e.meter.last_us)
                                            for e in [d, *sorted(t.entries.values(), key=lambda x: x.seq)]]
    return out


def diff_state(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Names of the state items that differ (empty: identical)."""
    keys = sorted(set(a) | set(b))
    return [k for k in keys if a.get(k) != b.get(k)]


def run_frames(sw: Any, frames: list[tuple[int, bytes]], step_us: float = 0.0) -> list[list[tuple[int, bytes]]]:
    """Send each (port, frame), advancing the virtual clock ``step_us`` after each; the outputs
    of each frame in order."""
    outs = []
    for port, data in frames:
        sw.send(port, data)
        if step_us:
            sw.advance(step_us)
        outs.append(sw.take_output())
    return outs
