"""Helpers that generated pipeline code calls at run time.

Kept out of the generated text so the tricky cases (runtime shift amounts, signed saturation,
division by zero, stack bounds) are written and tested once.
"""
from __future__ import annotations


class ParserError(Exception):
    """Raised inside a generated parser; ``code`` is the ``error`` member's value."""

    def __init__(self, code: int) -> None:
        self.code = code


class ExitBlock(Exception):
    """``exit``: ends the current top-level control block (v1model then goes on to the next).

    ``vals``: an action left by ``exit`` puts the current values of its scalar ``out``/``inout``
    parameters here, so its caller can still copy them back (P4_16: copy-out happens even when the
    callee exits)."""

    vals: tuple = ()


class AssertFailed(Exception):
    """``assert``/``assume`` failed: the packet is dropped and counted, the switch keeps running."""

    def __init__(self, where: str) -> None:
        super().__init__(where)
        self.where = where




def shl(a: int, b: int, width: int) -> int:
    """``a << b`` in ``width`` bits for a runtime amount: shifting by >= width gives 0 (and never
    builds a huge intermediate int for a huge amount)."""
    if b >= width:
        return 0
    return (a << b) & ((1 << width) - 1)


def sext(a: int, width: int) -> int:
    """The signed value of a ``width``-bit pattern."""
    h = 1 << (width - 1)
    return (a ^ h) - h


def sat_add_signed(a: int, b: int, width: int) -> int:
    h = 1 << (width - 1)
    r = sext(a, width) + sext(b, width)
    r = max(-h, min(h - 1, r))
    return r & ((1 << width) - 1)


def sat_sub_signed(a: int, b: int, width: int) -> int:
    h = 1 << (width - 1)
    r = sext(a, width) - sext(b, width)
    r = max(-h, min(h - 1, r))
    return r & ((1 << width) - 1)


def udiv(a: int, b: int) -> int:
    """Unsigned division; division by zero gives 0 rather than crashing the switch."""
    return a // b if b else 0


def umod(a: int, b: int) -> int:
    return a % b if b else 0


def sdiv(a: int, b: int, width: int) -> int:
    """Signed division truncating toward zero, as C and BMv2 do."""
    x, y = sext(a, width), sext(b, width)
    if y == 0:
        return 0
    q = abs(x) // abs(y)
    if (x < 0) != (y < 0):
        q = -q
    return q & ((1 << width) - 1)


def smod(a: int, b: int, width: int) -> int:
    x, y = sext(a, width), sext(b, width)
    if y == 0:
        return 0
    r = abs(x) % abs(y)
    if x < 0:
        r = -r
    return r & ((1 << width) - 1)


def struct_eq(a, b) -> bool:
    """``==`` on headers/structs/stacks: invalid headers are equal to each other whatever their
    fields; otherwise every field must match."""
    return a._eq(b)
