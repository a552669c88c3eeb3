"""P4Runtime bytestrings <-> Python ints.

P4Runtime carries every match value, parameter and metadata as a big-endian bytestring.  The
spec's canonical form is the shortest one, but clients in the wild send zero-padded strings
(p4runtime-shell 0.0.6 does, see REFERENCE.md), so decoding accepts both.  What it never accepts
is an empty string or a value that does not fit the field's width: those are client bugs, and
silently truncating them would program a different entry than the one asked for.
"""
from __future__ import annotations

from p4sim.p4rt.errors import P4RTError


def decode(data: bytes, bitwidth: int, what: str) -> int:
    """Decode a bytestring for a ``bitwidth``-bit field; ``what`` names it in error messages."""
    if len(data) == 0:
        raise P4RTError("INVALID_ARGUMENT", f"{what}: empty bytestring")
    value = int.from_bytes(data, "big")
    if bitwidth > 0 and value >> bitwidth:
        raise P4RTError(
            "OUT_OF_RANGE",
            f"{what}: value 0x{value:x} does not fit in {bitwidth} bits",
        )
    return value


def encode(value: int, bitwidth: int | None = None) -> bytes:
    """Canonical (shortest, at least one byte) big-endian form, as servers should send back."""
    if value < 0:
        raise ValueError("negative values have no P4Runtime bytestring")
    if bitwidth is not None and bitwidth > 0:
        value &= (1 << bitwidth) - 1
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def pack_fields(fields: list[tuple[int, int]]) -> bytes:
    """Pack (width, value) pairs MSB-first back to back into whole bytes (header layout)."""
    total = 0
    acc = 0
    for width, value in fields:
        acc = (acc << width) | (value & ((1 << width) - 1))
        total += width
    pad = (-total) % 8
    return (acc << pad).to_bytes((total + pad) // 8, "big")


def unpack_fields(data: bytes, widths: list[int]) -> tuple[list[int], bytes]:
    """Inverse of ``pack_fields``: split the leading header off ``data``; returns (values, rest).

    Raises ValueError when ``data`` is shorter than the header.
    """
    total = sum(widths)
    nbytes = (total + 7) // 8
    if len(data) < nbytes:
        raise ValueError(f"packet of {len(data)} bytes is shorter than the {nbytes}-byte header")
    acc = int.from_bytes(data[:nbytes], "big") >> (nbytes * 8 - total)
    values = []
    shift = total
    for width in widths:
        shift -= width
        values.append((acc >> shift) & ((1 << width) - 1))
    return values, data[nbytes:]
