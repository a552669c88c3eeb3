"""Hash and checksum algorithms with BMv2's exact results.

BMv2 feeds a hash the data fields packed MSB-first back to back (no per-field byte alignment),
zero-padded at the end to a whole byte.  ``pack_bits`` does that packing once so every algorithm
sees the same bytes.  CRCs come from ``crcmod`` (a well-kept library) with the catalogue
parameters BMv2 uses: crc16 = CRC-16/ARC, crc32 = IEEE 802.3 (the same as ``zlib.crc32``).
"""
from __future__ import annotations

import struct
import zlib
from typing import Callable

import crcmod.predefined

# CRC-16/ARC: poly 0x8005, reflected in/out, init 0, xorout 0 ("crc-16" in crcmod's catalogue).
crc16_arc: Callable[[bytes], int] = crcmod.predefined.mkCrcFun("crc-16")


def crc32_ieee(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def pack_bits(value: int, nbits: int) -> bytes:
    """``value`` (nbits wide, MSB first) as bytes, zero-padded at the end to a whole byte."""
    pad = (-nbits) & 7
    return (value << pad).to_bytes((nbits + pad) >> 3, "big")


def csum16(data: bytes) -> int:
    """Internet checksum (RFC 1071): ones'-complement of the ones'-complement sum of 16-bit words;
    an odd trailing byte is padded with a zero byte, as BMv2 does."""
    if len(data) & 1:
        data += b"\x00"
    s = sum(struct.unpack(f"!{len(data) >> 1}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def xor16(data: bytes) -> int:
    """XOR of the 16-bit big-endian words (odd length zero-padded)."""
    if len(data) & 1:
        data += b"\x00"
    r = 0
    for (w,) in struct.iter_unpack("!H", data):
        r ^= w
    return r


def identity(data: bytes) -> int:
    """BMv2's identity hash: the first (up to) 8 bytes read as a big-endian number."""
    return int.from_bytes(data[:8], "big")


def csum16_int(value: int, nbits: int) -> int:
    """``csum16(pack_bits(value, nbits))`` without building bytes: 2**16 = 1 (mod 0xFFFF), so the
    ones'-complement sum of the 16-bit words of x is x mod 0xFFFF (reading a remainder of 0 as
    0xFFFF unless x is 0).  One big-int operation instead of a loop; this is on every packet
    of a router that checks/updates the IPv4 checksum."""
    nbytes = (nbits + 7) >> 3
    x = value << (((-nbits) & 7) + (8 if nbytes & 1 else 0))
    s = x % 0xFFFF
    if s == 0 and x:
        s = 0xFFFF
    return (~s) & 0xFFFF


def on_int(fn: Callable[[bytes], int]) -> Callable[[int, int], int]:
    return lambda value, nbits: fn(pack_bits(value, nbits))


# v1model's HashAlgorithm members -> implementation.  The *_custom variants behave like the
# plain ones until a control plane reconfigures them (BMv2's defaults); "random" is handled by
# the caller because it needs the switch's seeded generator.
ALGORITHMS: dict[str, Callable[[bytes], int]] = {
    "crc32": crc32_ieee,
    "crc32_custom": crc32_ieee,
    "crc16": crc16_arc,
    "crc16_custom": crc16_arc,
    "identity": identity,
    "csum16": csum16,
    "xor16": xor16,
}


def algorithm(name: str) -> Callable[[bytes], int]:
    try:
        return ALGORITHMS[name]
    except KeyError:
        raise ValueError(f"unknown hash algorithm {name!r}") from None


# The same algorithms taking (value, nbits): what generated code calls for field lists.
ALGORITHMS_INT: dict[str, Callable[[int, int], int]] = {k: on_int(f) for k, f in ALGORITHMS.items()}
ALGORITHMS_INT["csum16"] = csum16_int
