"""Shared helpers for runtime tests: run a hand-built program on one packet and read fields back."""
from __future__ import annotations

from typing import Callable, Optional

import p4sim
from p4sim.frontend import ir

from irb import assign, lit, mem, program, struct


def pack(fields: list[tuple[int, int]]) -> bytes:
    """(value, width) pairs MSB-first into bytes (total width must be whole bytes)."""
    acc, n = 0, 0
    for v, w in fields:
        acc = (acc << w) | (v & ((1 << w) - 1))
        n += w
    assert n % 8 == 0, n
    return acc.to_bytes(n // 8, "big")


def unpack(data: bytes, widths: list[int]) -> list[int]:
    total = sum(widths)
    x = int.from_bytes(data[: (total + 7) // 8], "big") >> ((-total) % 8)
    out = []
    for w in widths:
        total -= w
        out.append((x >> total) & ((1 << w) - 1))
    return out


def switch_for(prog: ir.Program, **kw) -> p4sim.Switch:
    return p4sim.Switch(p4sim.Program(prog), **kw)


def eval_fields(widths: list[int], body: Callable[[list[ir.Expr], object], list], inputs: list[int],
                signed: Optional[list[bool]] = None) -> list[int]:
    """A header ``h`` with one field per width (f0, f1, ...) is parsed from ``inputs``; ingress runs
    ``body(fields, block)`` and forwards to port 1; returns the fields of the output packet."""
    signed = signed or [False] * len(widths)
    pad = (-sum(widths)) % 8
    fl = [(f"f{i}", w) for i, w in enumerate(widths)] + ([("pad", pad)] if pad else [])
    h = ir.HeaderT("h_t", [ir.Field(n, ir.BitT(w, signed[i] if i < len(signed) else False)) for i, (n, w) in enumerate(fl)])
    H = struct("headers", ("h", h))

    def ingress(b):
        fields = [mem(mem(b.hdr, "h"), f"f{i}") for i in range(len(widths))]
        return body(fields, b) + [assign(mem(b.sm, "egress_spec"), lit(1, 9))]

    sw = switch_for(program(H, ingress=ingress))
    sw.send(0, pack(list(zip(inputs, widths)) + ([(0, pad)] if pad else [])))
    out = sw.take_output()
    assert len(out) == 1, (out, sw.stats)
    return unpack(out[0][1], widths)
