"""P4_16 constructs p4c accepts that p4sim used to refuse (tests/runtime/p4/newer.p4)."""
from pathlib import Path

import pytest

import p4sim
from p4sim.errors import CompileError

NEWER = Path(__file__).parent / "p4" / "newer.p4"


@pytest.fixture(scope="module")
def sw():
    return p4sim.Switch(p4sim.compile(str(NEWER)))


def run(sw, op: int, a: int = 0, b: int = 0) -> tuple[int, int, int, int]:
    sw.send(0, bytes([op, a, b, 0, 0, 0, 0]))
    out = sw.take_output()
    assert len(out) == 1 and out[0][0] == 1, (out, sw.stats)
    return tuple(out[0][1][3:7])


def test_compound_assignment_applies_the_operator_in_place(sw):
    # x = 10: +=3 -> 13; -=4 -> 9; <<=1 -> 18; >>=2 -> 4; |=0x80 -> 0x84; |+|=0xF0 saturates
    assert run(sw, 1, a=10, b=4) == (13, 9, 0x84, 0xFF)


def test_compound_assignment_evaluates_its_lvalue_once(sw):
    # st[postincr(i)] op= ...: one call per statement, so st[0] |= 5 and st[1] += 7
    assert run(sw, 2)[:3] == (5, 7, 2)


def test_for_loop_in_an_action(sw):
    assert run(sw, 3, a=10)[0] == 55
    assert run(sw, 3, a=0)[0] == 0


def test_for_loop_break_and_continue(sw):
    # i = 0..6 before break at 7: seen 7, odd ones 1, 3, 5
    assert run(sw, 4, a=7)[:2] == (3, 7)


def test_for_in_loops_are_refused_as_p4c_bm2_ss_does(tmp_path):
    src = NEWER.read_text().replace("count_odd(hdr.c.a);",
                                    "for (bit<8> k in 1 .. 3) { hdr.c.r3 = k; }")
    p = tmp_path / "forin.p4"
    p.write_text(src)
    with pytest.raises(CompileError) as ei:
        p4sim.compile(str(p))
    assert "for-in" in ei.value.message and ei.value.pos is not None


def test_header_union_set_valid_invalidates_the_other_members(sw):
    assert run(sw, 6) == (0, 1, 1, 0)


def test_header_union_extract_and_assignment_keep_one_member_valid(sw):
    sw.send(0, bytes([7, 0, 0, 0, 0, 0, 0, 0x42]))
    [(_, out)] = sw.take_output()
    assert out[3:5] == bytes([1, 1]) and out[7:] == bytes([0x42])  # emits u.a
    sw.send(0, bytes([7, 1, 0, 0, 0, 0, 0, 0x42]))
    [(_, out)] = sw.take_output()
    assert out[3:5] == bytes([1, 0]) and out[7:] == bytes([0x12, 0x34])  # u.b replaced u.a


def send(sw, data: bytes) -> bytes:
    sw.send(0, data)
    [(_, out)] = sw.take_output()
    return out


def test_varbit_extract_emit_and_equality(sw):
    # 2 bytes of varbit between the two nibbles: x = 0xA, v = 0x1234, y = 0xB
    out = send(sw, bytes([8, 2, 0, 0, 0, 0, 0, 0xA1, 0x23, 0x4B]))
    assert out[3:7] == bytes([0xAB, 1, 0, 1])
    assert out[7:] == bytes([0xA1, 0x23, 0x4B])  # emitted with its extracted length
    out = send(sw, bytes([8, 0, 0, 0, 0, 0, 0, 0xCD]))  # zero-length varbit
    assert out[3:7] == bytes([0xCD, 1, 0, 1]) and out[7:] == bytes([0xCD])


def test_varbit_extract_errors_as_bmv2(sw):
    # 4 bytes > varbit<24>: HeaderTooShort; 12 bits: ParserInvalidArgument (not whole bytes)
    assert send(sw, bytes([8, 4, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5]))[5:7] == bytes([1, 0])
    assert send(sw, bytes([9, 12, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5]))[5:7] == bytes([2, 0])


def test_checksum_over_a_varbit_covers_its_extracted_bits(sw):
    # ones' complement sum of the 16-bit words A123 4B00 (padded): ~0xEC23 = 0x13DC
    out = send(sw, bytes([10, 2, 0, 0, 0, 0, 0, 0xA1, 0x23, 0x4B]))
    assert out[3:5] == bytes([0x13, 0xDC])
    # negative control: one byte of varbit -> words A12B -> ~0xA12B = 0x5ED4
    out = send(sw, bytes([10, 1, 0, 0, 0, 0, 0, 0xA1, 0x2B]))
    assert out[3:5] == bytes([0x5E, 0xD4])


def test_signed_stack_index_negative_is_out_of_bounds(sw):
    assert run(sw, 11, a=1)[:3] == (0, 9, 1)
    assert run(sw, 11, a=0xFF)[:3] == (0, 0, 0)  # k = -1: the write goes nowhere, reads invalid


def test_table_with_an_empty_action_list_misses(sw):
    assert run(sw, 12)[0] == 2


def test_default_parameter_values_fill_left_out_arguments(sw):
    assert run(sw, 13)[:3] == (6, 7, 101)


@pytest.mark.parametrize("table_text", [
    "const default_action = addv(1, 5);",
    "const entries = { 1 : addv(2, 5); }",  # (a key is added below)
])
def test_table_action_data_is_not_filled_from_defaults_as_p4c(tmp_path, table_text):
    # p4c 1.2.5.16: "vb: parameter should be assigned in call" for a default action or an entry
    # that leaves action data to its declared default (direct calls do take the default).
    src = NEWER.read_text()
    if "entries" in table_text:
        src = src.replace("table with_default_arg {      /*", "table with_default_arg {  /* key added; ")
        src = src.replace("        actions = { addv; }\n        const default_action = addv(1, 5);",
                          "        key = { hdr.c.a : exact; }\n        actions = { addv; }\n        " + table_text)
        src = src.replace("        key = { }\n        key = {", "        key = {")
    left_out = table_text.replace(", 5)", ")")
    ok, bad = tmp_path / "ok.p4", tmp_path / "bad.p4"
    ok.write_text(src)
    bad.write_text(src.replace(table_text, left_out))
    p4sim.compile(str(ok))  # every argument given: accepted
    with pytest.raises(CompileError) as ei:
        p4sim.compile(str(bad))
    assert "vb: parameter should be assigned in call addv" in ei.value.message and ei.value.pos is not None


def test_dont_care_argument_discards_an_out_value(sw):
    assert run(sw, 14)[:2] == (3, 2)


def test_lookahead_of_a_struct_and_unused_lookahead_still_checks_length(sw):
    out = send(sw, bytes([15, 0, 0, 0, 0, 0, 0, 0xAB, 0xCD, 0x01, 0x02]))
    assert out[3:6] == bytes([0xA, 0xCD, 0])
    out = send(sw, bytes([15, 0, 0, 0, 0, 0, 0, 0xAB, 0xCD, 0x01]))  # 24 bits left < 32
    assert out[3:6] == bytes([0xA, 0xCD, 1])


def test_tuple_locals_and_constant_indexing(sw):
    assert run(sw, 16, a=4)[:3] == (5, 1, 0)
    assert run(sw, 16, a=7)[:3] == (8, 0, 0)


def test_control_constructor_arguments_are_per_instance_constants(sw):
    assert run(sw, 17, a=5)[:2] == (15, 20)


def test_top_level_block_with_constructor_arguments(tmp_path):
    src = NEWER.read_text()
    src = src.replace(
        "control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }",
        "control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm)(bit<8> mark) {\n"
        "    apply { hdr.c.r4 = mark; }\n}")
    src = src.replace("V1Switch(P(), V(), I(), E(), C(), D()) main;", "V1Switch(P(), V(), I(), E(8w9), C(), D()) main;")
    p = tmp_path / "ctor.p4"
    p.write_text(src)
    sw2 = p4sim.Switch(p4sim.compile(str(p)))
    assert run(sw2, 3, a=2) == (3, 0, 0, 9)


def test_sub_parser_apply_is_inlined_with_copy_in_copy_out(sw):
    out = send(sw, bytes([18, 0, 0, 0, 0, 0, 0, 0x11, 0x22, 0x33]))
    assert out[3:7] == bytes([4, 7, 0x11, 0x22])  # count 1 -> 4 -> 7
    assert out[7:] == bytes([0x11, 0x22, 0x33])  # both headers re-emitted, then the payload


def test_direct_application_of_control_and_parser_types(sw):
    assert run(sw, 19, a=3)[:2] == (12, 0)
    out = send(sw, bytes([20, 1, 0, 0, 0, 0, 0, 0x5A]))
    assert out[3:5] == bytes([4, 0x5A])


def test_parser_constructor_arguments_are_per_instance_constants(sw, tmp_path):
    # two instances of the sub-parser Opt with different `step` arguments: each adds its own
    src = NEWER.read_text().replace("    Opt(8w3) opt;", "    Opt(8w3) opt;\n    Opt(8w40) opt40;")
    src = src.replace("        opt.apply(packet, hdr.sp2, meta.la_hi);", "        opt40.apply(packet, hdr.sp2, meta.la_hi);")
    p = tmp_path / "pctor.p4"
    p.write_text(src)
    sw2 = p4sim.Switch(p4sim.compile(str(p)))
    out = send(sw2, bytes([18, 0, 0, 0, 0, 0, 0, 0x11, 0x22, 0x33]))
    assert out[3:5] == bytes([4, 44])  # count 1 -> +3 (opt) -> 4 -> +40 (opt40) -> 44
    assert send(sw, bytes([18, 0, 0, 0, 0, 0, 0, 0x11, 0x22, 0x33]))[3:5] == bytes([4, 7])  # one instance twice
