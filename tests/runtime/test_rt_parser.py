"""Parser state machine and deparser rules (v1model/BMv2 behaviour)."""
from irb import (ERRORS, assign, binop, bit, builtin, call, err, extract, header, if_, is_valid, lit,
                 mem, path, program, ref, select, set_valid, state, struct)
from p4sim.frontend import ir
from rtkit import pack, switch_for

A = header("a_t", ("x", 8), ("y", 8))
B = header("b_t", ("v", 16))
MARK = header("mark_t", ("err", 8), ("flag", 8))


def mark_program(parser, hdr_fields, deparse=None, ingress_extra=None):
    """Ingress copies parser_error into a pre-made 'mark' header (emitted first) and forwards."""
    H = struct("headers", ("mark", MARK), *hdr_fields)

    def ingress(b):
        m = mem(b.hdr, "mark")
        return [set_valid(m), assign(mem(m, "err"), ir.Cast(bit(8), None, ir.Literal(bit(8), None, 0))),
                *[if_(binop("==", mem(b.sm, "parser_error"), err(e)), assign(mem(m, "err"), lit(i, 8)))
                  for i, e in enumerate(ERRORS)],
                *(ingress_extra(b) if ingress_extra else []),
                assign(mem(b.sm, "egress_spec"), lit(1, 9))]

    return program(H, parser=parser, ingress=ingress, deparser=deparse)


def run(prog, data):
    sw = switch_for(prog)
    sw.send(0, data)
    out = sw.take_output()
    assert len(out) == 1, (out, sw.stats)
    return out[0][1], sw


def parse_a_then_b(b):
    return [state("start", [extract(b, mem(b.hdr, "a"))], "parse_b"),
            state("parse_b", [extract(b, mem(b.hdr, "b"))], "accept")]


def test_parser_error_does_not_drop_in_v1model():
    prog = mark_program(parse_a_then_b, [("a", A), ("b", B)])
    out, sw = run(prog, bytes([1, 2, 3]))  # 'a' fits, 'b' needs 2 bytes, only 1 left
    assert out[0] == ERRORS.index("PacketTooShort")  # ingress ran and saw the error
    assert out[2:4] == bytes([1, 2])  # 'a' stayed valid and is emitted
    assert out[4:] == bytes([3])  # the unparsed byte is kept as payload
    assert sw.stats["parser_error"] == 1 and sw.stats["malformed"] == 1


def test_parser_without_error_leaves_noerror():
    prog = mark_program(parse_a_then_b, [("a", A), ("b", B)])
    out, sw = run(prog, bytes([1, 2, 3, 4, 5]))
    assert out[0] == ERRORS.index("NoError")
    assert sw.stats["parser_error"] == 0


def test_select_without_match_sets_NoMatch():
    def parser(b):
        return [state("start", [extract(b, mem(b.hdr, "a"))],
                      select([path(b.hdr, "a.x")], [([ir.KsValue(1)], "parse_b")])),
                state("parse_b", [extract(b, mem(b.hdr, "b"))], "accept")]

    prog = mark_program(parser, [("a", A), ("b", B)])
    out, _ = run(prog, bytes([9, 0, 7, 7]))
    assert out[0] == ERRORS.index("NoMatch")
    assert out[2:] == bytes([9, 0, 7, 7])  # 'b' not extracted: its bytes stay payload


def select_program(cases):
    def parser(b):
        return [state("start", [extract(b, mem(b.hdr, "a"))], select([path(b.hdr, "a.x"), path(b.hdr, "a.y")], cases)),
                state("parse_b", [extract(b, mem(b.hdr, "b"))], "accept")]

    def flag_b(b):
        return [if_(is_valid(mem(b.hdr, "b")), assign(path(b.hdr, "mark.flag"), lit(1, 8)))]

    return mark_program(parser, [("a", A), ("b", B)], ingress_extra=flag_b)


def took_b(prog, x, y):
    out, _ = run(prog, bytes([x, y, 0xAA, 0xBB]))
    assert out[0] == 0
    return out[1] == 1


def test_select_value_mask_range_and_default():
    prog = select_program([
        ([ir.KsValue(1), ir.KsDefault()], "parse_b"),
        ([ir.KsMask(0x20, 0xF0), ir.KsValue(5)], "parse_b"),
        ([ir.KsRange(100, 110), ir.KsDefault()], "parse_b"),
        ([ir.KsDefault(), ir.KsDefault()], "accept"),
    ])
    assert took_b(prog, 1, 77)
    assert took_b(prog, 0x2F, 5) and not took_b(prog, 0x2F, 6) and not took_b(prog, 0x3F, 5)
    assert took_b(prog, 100, 0) and took_b(prog, 110, 0) and not took_b(prog, 111, 0) and not took_b(prog, 99, 0)
    assert not took_b(prog, 200, 200)


def test_select_first_matching_case_wins():
    prog = select_program([([ir.KsDefault(), ir.KsDefault()], "accept"),
                           ([ir.KsValue(1), ir.KsDefault()], "parse_b")])
    assert not took_b(prog, 1, 0)


def test_lookahead_does_not_consume_bits():
    def parser(b):
        look = ir.PacketCall(bit(8), None, [], [], ref(b.pkt), "lookahead")
        return [state("start", [], select([look], [([ir.KsValue(7)], "parse_b"), ([ir.KsDefault()], "accept")])),
                state("parse_b", [extract(b, mem(b.hdr, "b"))], "accept")]

    prog = mark_program(parser, [("b", B)])
    out, _ = run(prog, bytes([7, 8, 9]))
    assert out[2:4] == bytes([7, 8]) and out[4:] == bytes([9])  # b was extracted from the first byte on


def test_advance_skips_bits():
    def parser(b):
        adv = call(ir.PacketCall(ir.VoidT(), None, [lit(16, 32)], [None], ref(b.pkt), "advance"))
        return [state("start", [adv, extract(b, mem(b.hdr, "b"))], "accept")]

    prog = mark_program(parser, [("b", B)])
    out, _ = run(prog, bytes([1, 2, 3, 4, 5]))
    assert out[2:] == bytes([3, 4, 5])  # skipped bytes are gone, b = 03 04, payload 05


def test_verify_false_sets_the_given_error():
    def parser(b):
        v = builtin("verify", [binop("==", path(b.hdr, "a.x"), lit(1, 8)), err("HeaderTooShort")])
        return [state("start", [extract(b, mem(b.hdr, "a")), v], "accept")]

    prog = mark_program(parser, [("a", A)])
    assert run(prog, bytes([1, 0]))[0][0] == 0
    assert run(prog, bytes([2, 0]))[0][0] == ERRORS.index("HeaderTooShort")


STACK = ir.StackT(B, 3)


def stack_program():
    """Extract b's into a 3-deep stack while the value is not 0 (the last one has v == 0)."""
    def parser(b):
        s = mem(b.hdr, "s")
        nxt = ir.StackProp(B, None, s, "next")
        last = ir.StackProp(B, None, s, "last")
        return [state("start", [extract(b, nxt)],
                      select([mem(last, "v")], [([ir.KsValue(0)], "accept"), ([ir.KsDefault()], "start")]))]

    return mark_program(parser, [("s", STACK)])


def test_header_stack_next_and_last():
    out, _ = run(stack_program(), bytes([0, 5, 0, 6, 0, 0, 0xEE]))
    assert out[0] == 0
    assert out[2:] == bytes([0, 5, 0, 6, 0, 0, 0xEE])


def test_header_stack_overflow_sets_StackOutOfBounds():
    out, _ = run(stack_program(), bytes([0, 5, 0, 6, 0, 7, 0, 8, 0, 0]))
    assert out[0] == ERRORS.index("StackOutOfBounds")
    assert out[2:] == bytes([0, 5, 0, 6, 0, 7, 0, 8, 0, 0])  # three emitted + the rest as payload


def test_deparser_emits_valid_headers_only_then_payload():
    H2 = header("c_t", ("z", 8))

    def ingress_extra(b):
        return [set_valid(mem(b.hdr, "c")), assign(path(b.hdr, "c.z"), lit(0x77, 8)),
                set_valid(mem(b.hdr, "a"), False)]

    prog = mark_program(lambda b: [state("start", [extract(b, mem(b.hdr, "a"))], "accept")],
                        [("a", A), ("c", H2)], ingress_extra=ingress_extra)
    out, _ = run(prog, bytes([1, 2, 3, 4]))
    assert out[2:] == bytes([0x77, 3, 4])  # a removed, c added, payload kept


def test_reading_a_field_of_an_invalid_header_gives_zero():
    def ingress_extra(b):
        return [assign(path(b.hdr, "mark.flag"), path(b.hdr, "b.v"))]  # b never extracted

    prog = mark_program(lambda b: [state("start", [], "accept")], [("b", ir.HeaderT("b16", [ir.Field("v", bit(8))]))],
                        ingress_extra=ingress_extra)
    out, _ = run(prog, bytes([9, 9]))
    assert out[1] == 0


def test_unaligned_header_fields_are_extracted_msb_first():
    N = header("n_t", ("hi", 3), ("mid", 7), ("lo", 6))
    H = struct("headers", ("n", N))

    def ingress(b):
        return [assign(path(b.hdr, "n.lo"), path(b.hdr, "n.hi")), assign(mem(b.sm, "egress_spec"), lit(1, 9))]

    sw = switch_for(program(H, ingress=ingress))
    sw.send(0, pack([(5, 3), (99, 7), (33, 6)]))
    assert sw.take_output()[0][1] == pack([(5, 3), (99, 7), (5, 6)])


def test_lookahead_of_a_header_type_reads_its_fields_without_consuming():
    def parser(b):
        look = ir.PacketCall(A, None, [], [], ref(b.pkt), "lookahead")
        return [state("start", [], select([mem(look, "y")], [([ir.KsValue(0x22)], "parse_a"), ([ir.KsDefault()], "accept")])),
                state("parse_a", [extract(b, mem(b.hdr, "a"))], "accept")]

    prog = mark_program(parser, [("a", A)])
    assert run(prog, bytes([0x11, 0x22, 0x33]))[0][2:] == bytes([0x11, 0x22, 0x33])
    out, _ = run(prog, bytes([0x11, 0x23, 0x33]))
    assert out[2:] == bytes([0x11, 0x23, 0x33])  # not extracted: same bytes, but as payload


def test_struct_initializer_assigned_to_a_header_makes_it_valid():
    def ingress_extra(b):
        return [assign(mem(b.hdr, "a"), ir.StructExpr(A, None, {"x": lit(0x0A, 8), "y": lit(0x0B, 8)}))]

    prog = mark_program(lambda b: [state("start", [], "accept")], [("a", A)], ingress_extra=ingress_extra)
    out, _ = run(prog, bytes([0xEE]))
    assert out[2:] == bytes([0x0A, 0x0B, 0xEE])


def test_stack_index_at_runtime_and_out_of_range_write_is_ignored():
    def parser(b):
        s = mem(b.hdr, "s")
        return [state("start", [extract(b, ir.StackProp(B, None, s, "next")),
                                extract(b, ir.StackProp(B, None, s, "next"))], "accept")]

    def ingress_extra(b):
        s = mem(b.hdr, "s")
        idx = ir.Cast(bit(32), None, path(b.hdr, "mark.flag"))  # 0 in the packet
        one = binop("+", idx, lit(1, 32))
        far = binop("+", idx, lit(7, 32))
        return [assign(mem(ir.StackIndex(B, None, s, one), "v"), lit(0x0102, 16)),
                assign(mem(ir.StackIndex(B, None, s, far), "v"), lit(0x0304, 16))]

    prog = mark_program(parser, [("s", STACK)], ingress_extra=ingress_extra)
    out, sw = run(prog, bytes([0, 9, 0, 8]))
    assert out[2:] == bytes([0, 9, 1, 2]) and sw.stats["runtime_error"] == 0


def test_fields_of_a_header_made_invalid_read_as_zero():
    def ingress_extra(b):
        return [set_valid(mem(b.hdr, "a"), False), assign(path(b.hdr, "mark.flag"), path(b.hdr, "a.y"))]

    prog = mark_program(lambda b: [state("start", [extract(b, mem(b.hdr, "a"))], "accept")], [("a", A)],
                        ingress_extra=ingress_extra)
    out, _ = run(prog, bytes([1, 2]))
    assert out[1] == 0 and out[2:] == b""  # a.y was 2 before setInvalid; a is not emitted


def test_writing_a_field_of_an_invalid_header_is_allowed_and_keeps_it_invalid():
    def ingress_extra(b):
        return [assign(path(b.hdr, "a.x"), lit(5, 8)),
                if_(is_valid(mem(b.hdr, "a")), assign(path(b.hdr, "mark.flag"), lit(1, 8)),
                    assign(path(b.hdr, "mark.flag"), path(b.hdr, "a.x")))]

    prog = mark_program(lambda b: [state("start", [], "accept")], [("a", A)], ingress_extra=ingress_extra)
    out, sw = run(prog, bytes([9]))
    assert out[1] == 5 and out[2:] == bytes([9]) and sw.stats["runtime_error"] == 0
