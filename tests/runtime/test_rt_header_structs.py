"""Struct-typed fields inside headers, lookahead of typedef'd types, and literals too wide for
their type (tests/runtime/p4/header_structs.p4).

The wire layout of a header with struct fields is its leaves in order, first field in the most
significant bits (P4_16 and p4c's FlattenHeaders for BMv2); these tests build packets and
expected values from that layout byte by byte, not from p4sim's own packing.
"""
import warnings
from pathlib import Path

import pytest

import p4sim
from p4sim.errors import CompileError
from p4sim.frontend.check_base import CompileWarning

PROG = Path(__file__).parent / "p4" / "header_structs.p4"

# sh_t: x=0x11 | hi=0xA p=3 q=0 | r=6 lo=7 | k=1 v=5
SH = bytes([0x11, 0b1010_011_0, 0b0110_0111, 0x15])


@pytest.fixture(scope="module")
def prog():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)  # op 9's literals warn on purpose
        return p4sim.compile(str(PROG))


@pytest.fixture(scope="module")
def sw(prog):
    return p4sim.Switch(prog)


def send(sw, op: int, a: int = 0, sh: bytes = SH) -> bytes:
    sw.send(0, bytes([op, a, 0, 0, 0, 0]) + sh)
    out = sw.take_output()
    assert len(out) == 1 and out[0][0] == 1, (out, sw.stats)
    return out[0][1]


def results(out: bytes) -> tuple[int, int, int, int]:
    return tuple(out[2:6])


def crc16_arc(data: bytes) -> int:
    """CRC-16/ARC (BMv2's crc16): reflected poly 0x8005, init 0."""
    crc = 0
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def test_struct_fields_in_headers_extract_and_emit_their_leaves_in_order(sw):
    out = send(sw, 1)
    assert out[6:] == SH  # untouched: emitted exactly as extracted


def test_struct_fields_in_headers_member_reads(sw):
    assert results(send(sw, 1)) == (6, 0, 1, 0xA7)  # s.mid.r, s.mid.q, t.k, s.hi ++ s.lo


def test_struct_fields_in_headers_member_writes_land_in_their_wire_bits(sw):
    out = send(sw, 2)
    # p=5 q=1 -> 1010_101_1; lo=7+1 -> 0110_1000; k=B(2) -> 0010_0101
    assert out[6:] == bytes([0x11, 0b1010_101_1, 0b0110_1000, 0x25])


def test_struct_field_assignment_from_initialisers(sw):
    out = send(sw, 3, a=0x37)
    # s = {hi 1, mid {p 2, q false, r 3}, lo 4}; t = {A, a[3:0] = 7}
    assert out[6:] == bytes([0x11, 0b0001_010_0, 0b0011_0100, 0x17])


def test_struct_field_assignment_copies_the_value(sw):
    out = send(sw, 4)
    # tmp kept lo=7 after hdr.sh.s.lo = 0; the header copy's change did not reach hdr.sh
    assert results(out)[:2] == (7, 0xA)
    assert out[6:] == bytes([0x11, 0b1010_011_0, 0b1001_0111, 0x15])  # s = tmp (r=9, lo=7)


def test_struct_field_equality_compares_every_leaf(sw):
    assert results(send(sw, 5)) == (1, 0, 1, 0)


def test_struct_fields_in_hash_data_are_packed_msb_first(sw):
    r = results(send(sw, 6))
    # { hdr.sh.x, hdr.sh.s.mid.r }: 8 + 4 bits back to back, zero padded to 16
    assert (r[0] << 8 | r[1]) == crc16_arc(bytes([SH[0], (SH[2] >> 4) << 4]))
    assert (r[2] << 8 | r[3]) == crc16_arc(SH)  # { hdr.sh }: the header's 32 wire bits
    # negative control: one byte per leaf (no bit packing) would hash differently
    assert (r[2] << 8 | r[3]) != crc16_arc(bytes([0x11, 0xA, 3, 0, 6, 7, 1, 5]))


def test_struct_fields_in_checksum_data(sw):
    out = send(sw, 10)
    assert out[6:10] == SH
    # csum16 over { hdr.sh } = its 32 wire bits: words 0x11A6, 0x6715
    s = 0x11A6 + 0x6715
    s = (s & 0xFFFF) + (s >> 16)
    assert out[10:12] == ((~s) & 0xFFFF).to_bytes(2, "big")


def test_header_with_struct_fields_stays_usable_after_set_invalid(sw):
    out = send(sw, 8)
    assert results(out)[0] == 3
    assert out[7] >> 4 == 3  # the emitted s.hi is the one written after setValid


def test_lookahead_on_a_typedefd_type(sw):
    # typedef bit<16>, typedef of a header, of a struct with a nested struct, of a header with
    # a struct field, and a header with a serializable-enum leaf: all read the same bits
    # without consuming them
    out = send(sw, 7)
    w = SH[0] << 8 | SH[1]
    assert results(out) == ((w >> 8) ^ (w & 0xFF), w >> 4 & 0xF, SH[2] & 0xF, SH[3] >> 4)
    assert out[6:] == SH  # the header after the lookaheads is extracted from the same bytes


def test_literal_width_inference_truncates_with_a_warning_as_p4c():
    # p4c inserts an implicit cast and folds it with IR::Constant::handleOverflow: a warning
    # ("value does not fit", "signed value does not fit", "negative value with unsigned type")
    # and the low W bits -- not an error.
    with pytest.warns(CompileWarning) as rec:
        prog = p4sim.compile(str(PROG))
    msgs = [str(w.message) for w in rec]
    assert any("value 4 does not fit in bit<1>" in m for m in msgs)
    assert any("signed value 9 does not fit in int<4>" in m for m in msgs)
    assert any("negative value -1 with unsigned type bit<8>" in m for m in msgs)
    assert any("value 300 does not fit in bit<8>" in m for m in msgs)
    assert all("header_structs.p4:" in m for m in msgs)
    sw = p4sim.Switch(prog)
    # bit<1> one = 4 -> 0; a + 300 -> a + 44; int<4> s = 9 -> 0b1001; bit<8> m = -1 -> 255
    assert results(send(sw, 9, a=0x37)) == (0, (0x37 + 44) & 0xFF, 9, 0xFF)


def test_literals_that_fit_and_explicit_casts_give_no_warning(tmp_path):
    # p4c folds an explicit cast without the warning (noWarning = !implicit): (bit<8>) 300 is 44
    src = PROG.read_text().replace("bit<1> one = 4;", "bit<1> one = 1;").replace(
        "int<4> s = 9;", "int<4> s = -7;").replace("bit<8> m = -1;", "bit<8> m = 255;").replace(
        "hdr.c.a + 300", "hdr.c.a + (bit<8>) 300")
    p = tmp_path / "fits.p4"
    p.write_text(src)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CompileWarning)
        sw = p4sim.Switch(p4sim.compile(str(p)))
    assert results(send(sw, 9, a=0x37)) == (1, (0x37 + 44) & 0xFF, 9, 0xFF)


def test_controller_header_with_a_struct_field_lists_its_leaves_in_p4info(prog):
    # p4c's FlattenHeader: one metadata entry per leaf, named by its path, ids in wire order
    info = prog.p4info
    cm = next(c for c in info.controller_packet_metadata if c.preamble.name == "packet_in")
    assert [(m.id, m.name, m.bitwidth) for m in cm.metadata] == [
        (1, "ingress_port", 9), (2, "info.pad", 7), (3, "info.reason", 16)]


@pytest.mark.parametrize("field", ["error e;", "hh_t h;", "plain_t p;"])
def test_struct_fields_in_headers_must_hold_only_bits_as_p4c_requires(tmp_path, field):
    src = PROG.read_text().replace("struct tag_t {\n    kind_t k;",
                                   f"enum plain_t {{ X, Y }}\nheader hh_t {{ bit<8> b; }}\nstruct tag_t {{\n    {field}\n    kind_t k;")
    p = tmp_path / "bad.p4"
    p.write_text(src)
    with pytest.raises(CompileError) as ei, warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)
        p4sim.compile(str(p))
    # p4c: "Field 't' of 'header sh_t' cannot have type 'tag_t'", at the field
    assert "header field 't'" in ei.value.message and ei.value.pos.line == src.count("\n", 0, src.index("    tag_t  t;")) + 1
