"""Type checking, width inference and constant folding."""
import pytest

from p4sim.errors import CompileError
from p4sim.frontend import ir


def ingress(prog):
    return prog.blocks["ingress"]


def stmts(prog):
    return ingress(prog).apply.stmts


def test_program_roles_and_errors(build):
    prog = build()
    assert list(prog.blocks) == list(ir.V1MODEL_ROLES)
    assert prog.package == "V1Switch"
    assert isinstance(prog.blocks["parser"], ir.ParserDecl)
    assert prog.errors[:3] == ["NoError", "PacketTooShort", "NoMatch"]


def test_int_literal_takes_the_width_of_its_target(build):
    prog = build(ingress_apply="meta.x = 5; meta.y = meta.y + 1;")
    a, b = stmts(prog)
    assert isinstance(a.rhs, ir.Literal) and a.rhs.type == ir.BitT(8) and a.rhs.value == 5
    assert isinstance(b.rhs, ir.Binary) and b.rhs.right.type == ir.BitT(16)
    assert b.rhs.type == ir.BitT(16)


def test_negative_literal_becomes_twos_complement_pattern(build):
    prog = build(ingress_apply="meta.s = -1; meta.x = -1;")
    a, b = stmts(prog)
    assert a.rhs.type == ir.BitT(8, True) and a.rhs.value == 0xFF
    assert b.rhs.value == 0xFF


def test_constants_fold_with_wraparound(build):
    prog = build(decls="""
const bit<8> A = 3;
const bit<8> B = A * 2 + 1;
const bit<8> W = 8w255 + 1;
const bit<16> C = 8w1 ++ 8w2;
const bit<4> T = (bit<4>) 8w0x1F;
const bit<8> S = 16w0xABCD[15:8];
const bool LT = (int<8>) -1 < 8s1;
const bit<8> SAT = 8w250 |+| 8w10;
const bit<8> SH = 8w1 << 3;
""", ingress_apply="meta.x = B; meta.x = W; meta.y = C; meta.x = (bit<8>) T; meta.x = S;"
                   "meta.f = LT; meta.x = SAT; meta.x = SH;")
    vals = [s.rhs.value for s in stmts(prog)]
    assert vals == [7, 0, 0x0102, 0xF, 0xAB, True, 255, 8]
    assert all(isinstance(s.rhs, ir.Literal) for s in stmts(prog))


def test_literal_out_of_range_is_truncated_with_a_warning_as_p4c(build):
    # p4c (IR::Constant::handleOverflow): "value does not fit in 8 bits", keeps the low bits
    from p4sim.frontend.check_base import CompileWarning
    with pytest.warns(CompileWarning) as rec:
        prog = build(ingress_apply="meta.x = 300; meta.y = 16w65537;")
    assert stmts(prog)[0].rhs.value == 300 & 0xFF and stmts(prog)[1].rhs.value == 1
    msg = str(rec[0].message)
    assert "300 does not fit in bit<8>" in msg and "t.p4:" in msg


def test_implicit_width_change_is_rejected(build):
    with pytest.raises(CompileError) as ei:
        build(ingress_apply="meta.x = meta.y;")
    assert "bit<16>" in ei.value.message and "bit<8>" in ei.value.message
    # ingress_apply starts at a known line of the generated program
    src = ei.value.pos
    assert src.line > 5 and src.col == 10


def test_binary_operands_must_match(build):
    with pytest.raises(CompileError, match="different types: bit<8> and bit<16>"):
        build(ingress_apply="meta.x = meta.x + meta.y;")


def test_casts(build):
    prog = build(ingress_apply="meta.y = (bit<16>) meta.x; meta.x = (bit<8>) meta.s;"
                               "meta.f = (bool) hdr.h.a[0:0];")
    a, b, c = stmts(prog)
    assert isinstance(a.rhs, ir.Cast) and a.rhs.type == ir.BitT(16)
    assert isinstance(b.rhs, ir.Cast) and b.rhs.operand.type == ir.BitT(8, True)
    assert isinstance(c.rhs, ir.Cast) and c.rhs.type == ir.BoolT()
    assert isinstance(c.rhs.operand, ir.Slice) and (c.rhs.operand.hi, c.rhs.operand.lo) == (0, 0)


def test_cast_between_signedness_and_width_at_once_is_rejected(build):
    with pytest.raises(CompileError, match="cannot cast int<8> to bit<16>"):
        build(ingress_apply="meta.y = (bit<16>) meta.s;")


def test_shift_amount_keeps_int_type_and_runtime_shift(build):
    prog = build(ingress_apply="meta.z = meta.z << 3; meta.z = meta.z >> meta.x;")
    a, b = stmts(prog)
    assert a.rhs.op == "<<" and a.rhs.right.type == ir.IntT() and a.rhs.right.value == 3
    assert b.rhs.op == ">>" and b.rhs.right.type == ir.BitT(8)


def test_generic_type_closing_angles_and_shift_tokens(build):
    prog = build(decls="register<bit<32>>(16) r;\n",
                 ingress_apply="bit<32> v; r.read(v, 1); meta.z = v >> 2;")
    assert prog.externs[0].type_args == [ir.BitT(32)]
    assert stmts(prog)[2].rhs.op == ">>"


def test_concat_slice_and_mux(build):
    prog = build(ingress_apply="meta.y = meta.x ++ hdr.h.a; meta.x = meta.f ? meta.x : 8w7;"
                               "meta.x = meta.z[31:24];")
    a, b, c = stmts(prog)
    assert a.rhs.op == "++" and a.rhs.type == ir.BitT(16)
    assert isinstance(b.rhs, ir.Mux) and b.rhs.type == ir.BitT(8)
    assert isinstance(c.rhs, ir.Slice) and c.rhs.type == ir.BitT(8)


def test_slice_out_of_range(build):
    with pytest.raises(CompileError, match=r"slice \[40:0\] out of range"):
        build(ingress_apply="meta.z = (bit<32>) meta.z[40:0];")


def test_enum_error_and_serializable_enum_values(build):
    prog = build(decls="""
enum Color { Red, Green }
enum bit<8> Kind { A = 10, B = 20 }
struct holder_t { Color c; Kind k; }
""", ingress_locals="holder_t st;",
        ingress_apply="st.c = Color.Green; st.k = Kind.B; meta.x = (bit<8>) Kind.A;"
                      "meta.f = sm.parser_error == error.NoMatch;")
    a, b, c, d = stmts(prog)
    assert a.rhs.value == 1 and isinstance(a.rhs.type, ir.EnumT)
    assert b.rhs.value == 20
    assert c.rhs.value == 10 and c.rhs.type == ir.BitT(8)
    assert d.rhs.right.type == ir.ErrorT() and d.rhs.right.value == 2


def test_header_methods_and_stack_operations(build):
    prog = build(ingress_apply="""
hdr.h.setValid(); meta.f = hdr.h.isValid(); hdr.stk[1].a = 3;
hdr.stk.push_front(1); meta.z = hdr.stk.size;""")
    s = stmts(prog)
    assert isinstance(s[0].call, ir.HeaderCall) and s[0].call.method == "setValid"
    assert isinstance(s[1].rhs, ir.HeaderCall) and s[1].rhs.type == ir.BoolT()
    assert isinstance(s[2].lhs.base, ir.StackIndex)
    assert isinstance(s[3].call, ir.StackCall) and s[3].call.args[0].value == 1
    assert isinstance(s[4].rhs, ir.Literal) and s[4].rhs.value == 3


def test_stack_index_out_of_bounds(build):
    with pytest.raises(CompileError, match="index 3 out of bounds"):
        build(ingress_apply="hdr.stk[3].a = 1;")


def test_assign_to_in_parameter_is_rejected(compile_src):
    from tests.frontend.conftest import make_program
    src = make_program().replace("control D(packet_out pkt, in hs_t hdr) { apply { pkt.emit(hdr.h); } }",
                                 "control D(packet_out pkt, in hs_t hdr) { apply { hdr.h.a = 1; pkt.emit(hdr.h); } }")
    with pytest.raises(CompileError, match="read-only parameter 'hdr'"):
        compile_src(src)


def test_struct_initializer_and_list_assignment(build):
    prog = build(decls="struct pair_t { bit<8> p; bit<16> q; }\n",
                 ingress_locals="pair_t pr;",
                 ingress_apply="pr = { p = 1, q = 2 }; pr = { 3, 4 }; hdr.h = { 1, 2, 3 };")
    a, b, c = stmts(prog)
    for s in (a, b):
        assert isinstance(s.rhs, ir.StructExpr) and s.rhs.fields["q"].type == ir.BitT(16)
    assert isinstance(c.rhs, ir.StructExpr) and c.rhs.type.name == "h_t"


def test_functions_and_return_values(build):
    prog = build(decls="""
bit<8> add_sat(in bit<8> a, in bit<8> b) {
    if (a > 8w255 - b) { return 255; }
    return a + b;
}
""", ingress_apply="meta.x = add_sat(meta.x, 4);")
    call = stmts(prog)[0].rhs
    assert isinstance(call, ir.FunctionCall) and call.function.name == "add_sat"
    assert call.args[1].type == ir.BitT(8) and call.directions == ["in", "in"]


def test_function_missing_return_is_an_error(build):
    with pytest.raises(CompileError, match="does not return a value on every path"):
        build(decls="bit<8> f(in bit<8> a) { if (a == 1) { return 1; } }\n")


def test_unknown_names(build):
    with pytest.raises(CompileError, match="unknown name 'nope'"):
        build(ingress_apply="meta.x = nope;")
    with pytest.raises(CompileError, match="has no field 'q'"):
        build(ingress_apply="meta.q = 1;")


def test_if_needs_bool(build):
    with pytest.raises(CompileError, match="cannot use a value of type bit<8> where bool"):
        build(ingress_apply="if (meta.x) { meta.x = 1; }")


def test_value_named_like_a_type_is_still_a_value(build):
    # `eth` is both a header type and (below) a variable: the tokenizer sees a type name
    prog = build(decls="header eth { bit<8> t; }\nstruct with_eth_t { eth eth; }\n",
                 ingress_locals="with_eth_t w; eth eth;",
                 ingress_apply="eth.setValid(); eth.t = 1; w.eth.t = eth.t;")
    s = stmts(prog)
    assert isinstance(s[0].call, ir.HeaderCall) and s[0].call.target.var.name == "eth"
    assert isinstance(s[1].lhs, ir.Member) and s[1].lhs.base.var.name == "eth"
    assert isinstance(s[2].rhs, ir.Member)


def test_annotations_everywhere_are_accepted_and_kept(build):
    prog = build(decls="""
@my_tag("x") typedef bit<8> tag_t;
@hidden const bit<8> HC = 1;
struct ann_t { @field_list(1, 2) bit<8> f; }
@brief("a") @description("long text, with (parens)")
action top_act(@my_param bit<8> v) { }
""", ingress_locals="""
@name("renamed") @id(0x10) table t {
    @my_prop key = { meta.x : exact @name("mx"); }
    actions = { @tableonly top_act; @defaultonly NoAction; }
    @other default_action = NoAction();
}
@hidden register<bit<8>>(4) r;
""", ingress_apply="@atomic { r.write(0, 1); } @unknown_thing t.apply();")
    ing = prog.blocks["ingress"]
    t = ing.tables["t"]
    assert t.qualified_name == "I.renamed" and t.annotations["id"] == "0x10"
    assert t.keys[0].name == "mx"
    assert prog.actions["top_act"].annotations["description"] == "long text, with (parens)"
    assert prog.actions["top_act"].params[0].annotations == {"my_param": ""}
    assert prog.types["ann_t"].fields[0].annotations == {"field_list": "1, 2"}
    assert isinstance(ing.apply.stmts[0], ir.Block)


def test_explicit_type_arguments_and_nested_closing_angles(build):
    prog = build(ingress_apply="""
hash<bit<16>, bit<16>, tuple<bit<8>, bit<16>>, bit<32>>(meta.y, HashAlgorithm.crc16, 0,
    { hdr.h.a, hdr.h.b }, 1024);
if (meta.x < hdr.h.a && hdr.h.a > (meta.x >> 1)) { meta.x = meta.x >> 2; }""")
    h, cond = stmts(prog)
    assert h.call.type_args[2] == ir.TupleT([ir.BitT(8), ir.BitT(16)]) or \
        [e for e in h.call.type_args[2].elems] == [ir.BitT(8), ir.BitT(16)]
    assert h.call.args[2].type == ir.BitT(16) and h.call.args[4].type == ir.BitT(32)
    assert cond.cond.op == "&&" and cond.cond.right.right.op == ">>"


def test_syntax_error_lists_expected_tokens(build):
    with pytest.raises(CompileError, match=r"unexpected '\}' \(expected "):
        build(ingress_apply="meta.x = (meta.x + 1 };")
