"""Table keys of every type p4c accepts for BMv2 work at run time (bit, int, bool, serializable
enum, ``error``), or are refused at compile time with file:line:col -- never a Python crash."""
from __future__ import annotations

import pytest

import p4sim
from p4sim.errors import CompileError

PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct hs_t { h_t h; }
struct m_t { bit<8> unused; }
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) { 0xFF: reject; default: accept; }
    }
}
control VC(inout hs_t hdr, inout m_t meta) { apply { } }
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    action mark(bit<8> v) { hdr.h.a = v; }
    table by_error {
        key = { sm.parser_error : exact; }
        actions = { mark; NoAction; }
        default_action = mark(0x11);
    }
    apply {
        sm.egress_spec = 1;
        by_error.apply();
    }
}
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pkt, in hs_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def switch(tmp_path, src: str) -> p4sim.Switch:
    p = tmp_path / "keys.p4"
    p.write_text(src)
    return p4sim.Switch(p4sim.compile(str(p)))


def test_table_key_of_type_error_matches_the_error_member(tmp_path):
    sw = switch(tmp_path, PROGRAM)
    sw.send(0, bytes([0x01]))
    assert sw.take_output() == [(1, bytes([0x11]))]  # default action
    no_error = 0  # error.NoError is the first member (core.p4)
    sw.insert_entry("I.by_error", {"sm.parser_error": no_error}, "I.mark", {"v": 0x22})
    sw.send(0, bytes([0x01]))
    assert sw.take_output() == [(1, bytes([0x22]))]


def test_const_entries_on_an_error_key_are_refused_as_p4c_does(tmp_path):
    src = PROGRAM.replace("default_action = mark(0x11);",
                          "const entries = { error.NoError : mark(1); }")
    with pytest.raises(CompileError) as ei:
        switch(tmp_path, src)
    assert ei.value.pos is not None and ei.value.pos.line > 0


ENUM_HASH = PROGRAM.replace("struct m_t { bit<8> unused; }", "enum Kind { A, B, C }\nstruct m_t { bit<8> unused; }").replace(
    "        by_error.apply();",
    "        bit<32> h1; bit<32> h2; bit<32> h3;\n"
    "        Kind e = Kind.C;\n"
    "        hash(h1, HashAlgorithm.crc32, 32w0, { e }, 32w0xFFFFFFFF);\n"
    "        hash(h2, HashAlgorithm.crc32, 32w0, { 32w2 }, 32w0xFFFFFFFF);\n"
    "        hash(h3, HashAlgorithm.crc32, 32w0, { 8w2 }, 32w0xFFFFFFFF);\n"
    "        hdr.h.a = (h1 == h2 ? 8w1 : 8w0) | (h1 == h3 ? 8w2 : 8w0);")


def test_plain_enum_in_hash_data_is_32_bits_as_bmv2(tmp_path):
    # p4c's BMv2 mid end turns user enums into bit<32> holding the member's index
    sw = switch(tmp_path, ENUM_HASH)
    sw.send(0, bytes([0x01]))
    assert sw.take_output() == [(1, bytes([1]))]  # same as 32w2, not as 8w2


def test_register_of_a_struct_is_refused_as_p4c_bm2_ss(tmp_path):
    src = PROGRAM.replace("struct m_t { bit<8> unused; }",
                          "struct m_t { bit<8> unused; }\nstruct S { bit<32> f; }")
    src = src.replace("    action mark(bit<8> v)", "    register<S>(4) r;\n    action mark(bit<8> v)")
    with pytest.raises(CompileError) as ei:
        switch(tmp_path, src)
    assert "registers with bit or int types" in ei.value.message and ei.value.pos.line == 15


ENUM_KEY = PROGRAM.replace(
    "struct m_t { bit<8> unused; }",
    "enum Kind { A, B, C }\nenum bit<4> SK { X = 3, Y = 5 }\n"
    "struct m_t { bit<8> unused; Kind k; SK s; bool b; int<8> i; }").replace(
    "key = { sm.parser_error : exact; }",
    "key = { meta.k : exact; meta.s : exact; meta.b : exact; meta.i : ternary; }").replace(
    "default_action = mark(0x11);",
    "default_action = mark(0x11);\n        const entries = { (Kind.C, SK.Y, true, -2) : mark(0x33); }").replace(
    "        by_error.apply();",
    "        meta.k = (hdr.h.a == 1) ? Kind.B : Kind.C;\n"
    "        meta.s = SK.Y; meta.b = true; meta.i = -2;\n"
    "        by_error.apply();")


def test_table_key_of_a_plain_enum_matches_the_member_as_bmv2(tmp_path):
    # p4c accepts plain enum keys (Key ... must be a scalar type: bit, serializable enum, error,
    # bool, enum); BMv2 holds the enum as bit<32> = the member's index (EnumOn32Bits)
    sw = switch(tmp_path, ENUM_KEY)
    sw.send(0, bytes([0x02]))
    assert sw.take_output() == [(1, bytes([0x33]))]  # Kind.C, SK.Y, true, -2: the const entry
    sw.send(0, bytes([0x01]))
    assert sw.take_output() == [(1, bytes([0x11]))]  # Kind.B: no entry, default action


def test_p4info_of_a_plain_enum_key_is_refused_as_p4c(tmp_path):
    # p4c's P4Runtime serializer: "width not well-defined for values of type Kind"
    p = tmp_path / "enumkey.p4"
    p.write_text(ENUM_KEY)
    prog = p4sim.compile(str(p))
    with pytest.raises(CompileError) as ei:
        prog.p4info
    key_line = ENUM_KEY[:ENUM_KEY.index("key = { meta.k")].count("\n") + 1
    assert "width not well-defined" in ei.value.message and ei.value.pos.line == key_line
