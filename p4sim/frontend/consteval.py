"""Compile-time arithmetic on P4 values (constant folding).

Values follow ir.py's convention: ``bit<W>``/``int<W>`` are the W-bit pattern as a non-negative
Python int; ``int`` (IntT, compile-time only) is an unbounded Python int.
"""
from __future__ import annotations

import operator
from typing import Optional

from p4sim.frontend import ir


def mask(width: int) -> int:
    return (1 << width) - 1


def to_signed(value: int, width: int) -> int:
    """The signed value of a W-bit pattern."""
    return value - (1 << width) if width and (value >> (width - 1)) & 1 else value


def to_pattern(value: int, t: ir.BitT) -> int:
    return value & mask(t.width)


def parse_int_literal(text: str) -> tuple[int, Optional[ir.BitT]]:
    """``8w0xFF`` -> (255, bit<8>); ``4s3`` -> (3, int<4>); ``42`` -> (42, None)."""
    width: Optional[ir.BitT] = None
    body = text
    for sep, signed in (("w", False), ("s", True)):
        head, s, tail = text.partition(sep)
        if s and head.isdigit():
            width = ir.BitT(int(head), signed)
            body = tail
            break
    body = body.replace("_", "")
    low = body[:2].lower()
    if low == "0x":
        value = int(body[2:], 16)
    elif low == "0b":
        value = int(body[2:], 2)
    elif low == "0o":
        value = int(body[2:], 8)
    elif low == "0d":
        value = int(body[2:], 10)
    else:
        value = int(body, 10)
    return value, width


class FoldError(Exception):
    """Arithmetic that is an error at compile time (division by zero ...)."""


def fold_binary(op: str, t: ir.Type, a, b):
    """Fold ``a op b`` where both operands have type ``t`` (the unified operand type); for shifts
    ``b`` is an unsigned amount.  Returns the result value (bool for comparisons)."""
    if isinstance(t, ir.BoolT) or isinstance(a, bool):
        if op == "&&":
            return a and b
        if op == "||":
            return a or b
        if op == "==":
            return a == b
        if op == "!=":
            return a != b
        raise FoldError(f"operator {op} on bool")
    if isinstance(t, ir.IntT) or not isinstance(t, ir.BitT):
        return _fold_unbounded(op, a, b)
    w, signed = t.width, t.signed
    m = mask(w)
    sa, sb = (to_signed(a, w), to_signed(b, w)) if signed else (a, b)
    if op == "+":
        return (a + b) & m
    if op == "-":
        return (a - b) & m
    if op == "*":
        return (a * b) & m
    if op in ("/", "%"):
        if b == 0:
            raise FoldError("division by zero")
        if signed:
            q = abs(sa) // abs(sb) * (1 if (sa >= 0) == (sb >= 0) else -1)
            return (q if op == "/" else sa - q * sb) & m
        return (a // b) if op == "/" else (a % b)
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    if op == "^":
        return a ^ b
    if op == "<<":
        return (a << b) & m if b < w else 0
    if op == ">>":
        if signed:
            return (sa >> min(b, w)) & m
        return a >> b
    if op == "|+|":
        if signed:
            return max(min(sa + sb, (1 << (w - 1)) - 1), -(1 << (w - 1))) & m
        return min(a + b, m)
    if op == "|-|":
        if signed:
            return max(min(sa - sb, (1 << (w - 1)) - 1), -(1 << (w - 1))) & m
        return max(a - b, 0)
    if op in ("==", "!="):
        return _COMPARE[op](a, b)  # bit patterns: signedness does not matter for equality
    if op in _COMPARE:
        return _COMPARE[op](sa, sb)
    raise FoldError(f"operator {op}")


_COMPARE = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
            ">": operator.gt, ">=": operator.ge}


def _fold_unbounded(op: str, a: int, b: int):
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op in ("/", "%"):
        if b == 0:
            raise FoldError("division by zero")
        if a < 0 or b < 0:
            raise FoldError(f"operator {op} on a negative compile-time integer")
        return a // b if op == "/" else a % b
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    if op == "^":
        return a ^ b
    if op == "<<":
        return a << b
    if op == ">>":
        return a >> b
    if op in _COMPARE:
        return _COMPARE[op](a, b)
    raise FoldError(f"operator {op} on compile-time integers")


def fold_cast(value, src: ir.Type, dst: ir.Type):
    """Fold ``(dst) value`` for scalar types."""
    if isinstance(dst, ir.BoolT):
        return bool(value)
    if isinstance(dst, ir.BitT):
        if isinstance(value, bool):
            return int(value)
        if isinstance(src, ir.BitT) and src.signed and dst.width > src.width:
            value = to_signed(value, src.width)  # sign-extend int<W1> -> int<W2>
        return value & mask(dst.width)
    return value
