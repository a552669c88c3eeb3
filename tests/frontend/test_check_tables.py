"""Tables, actions, parsers, externs and sub-controls in the IR."""
import pytest

from p4sim.errors import CompileError
from p4sim.frontend import ir


def ingress(prog):
    return prog.blocks["ingress"]


TABLE_LOCALS = """
direct_counter(CounterType.packets) hits;
action set_x(bit<8> v) { meta.x = v; }
action fwd(inout bit<9> port, bit<9> p) { port = p; }
@name(".global_drop") action drop() { mark_to_drop(sm); }
table t {
    key = {
        hdr.h.a : exact;
        hdr.h.c : lpm @name("dst");
        meta.y  : ternary;
    }
    actions = { set_x; fwd(sm.egress_spec); @defaultonly drop; @tableonly NoAction; }
    const default_action = drop();
    counters = hits;
    const entries = {
        (1, 0x0A000000 &&& 0xFF000000, 0x00FF &&& 0x00FF) : set_x(7);
        (2, 0x0B000000, _) : fwd(3);
        (3, 0x0C000000 &&& 0xFFFF0000, default) : set_x(1) @priority(5);
        (4, _, 16w5) : set_x(2) @priority(2);
    }
}
"""


def test_table_keys_actions_and_names(build):
    prog = build(ingress_locals=TABLE_LOCALS, ingress_apply="t.apply();")
    t = ingress(prog).tables["t"]
    assert t.qualified_name == "I.t"
    assert [(k.name, k.match_kind) for k in t.keys] == \
        [("hdr.h.a", "exact"), ("dst", "lpm"), ("meta.y", "ternary")]
    assert [r.action.qualified_name for r in t.actions] == \
        ["I.set_x", "I.fwd", "global_drop", "NoAction"]
    fwd = t.actions[1]
    assert isinstance(fwd.args[0], ir.Member) and fwd.args[1] is None
    assert "defaultonly" in t.actions[2].annotations
    assert "tableonly" in t.actions[3].annotations
    assert t.default_is_const and t.default_action.action.name == "drop"
    assert t.direct_counter.qualified_name == "I.hits"
    assert t.entries_are_const and len(t.const_entries) == 4


def test_const_entry_keysets_and_priorities(build):
    prog = build(ingress_locals=TABLE_LOCALS, ingress_apply="t.apply();")
    e = ingress(prog).tables["t"].const_entries
    k0 = e[0].keysets
    assert isinstance(k0[0], ir.KsValue) and k0[0].value == 1
    assert isinstance(k0[1], ir.KsMask) and (k0[1].value, k0[1].mask) == (0x0A000000, 0xFF000000)
    assert isinstance(k0[2], ir.KsMask) and k0[2].mask == 0x00FF
    assert e[0].action.args[0].value == 7
    # an lpm value without mask is a full-length prefix
    assert isinstance(e[1].keysets[1], ir.KsMask) and e[1].keysets[1].mask == 0xFFFFFFFF
    assert isinstance(e[1].keysets[2], ir.KsDefault)
    # fwd's directional argument is the one bound in the actions list
    assert isinstance(e[1].action.args[0], ir.Member) and e[1].action.args[1].value == 3
    assert isinstance(e[2].keysets[2], ir.KsDefault)
    # BMv2: @priority(N) or the position 1, 2, ...; the smallest wins, ties to the earlier entry:
    # 1 (e0), 2 (e1), 5 (e2), 2 (e3) -> e0, e1, e3, e2; run-time priorities are larger-wins
    assert [x.priority for x in e] == [4, 3, 1, 2]


def test_lpm_mask_must_be_a_prefix(build):
    locals_ = TABLE_LOCALS.replace("0x0C000000 &&& 0xFFFF0000", "0x0C000000 &&& 0xFF00FF00")
    with pytest.raises(CompileError, match="lpm mask must be a prefix"):
        build(ingress_locals=locals_)


def test_default_action_must_be_listed(build):
    with pytest.raises(CompileError, match="'set_y' is not in the actions of table 't'"):
        build(ingress_locals="""
action set_y() { }
action set_x() { }
table t { key = { meta.x : exact; } actions = { set_x; } default_action = set_y(); }""")


def test_apply_hit_miss_and_action_run_switch(build):
    prog = build(ingress_locals="""
action a1() { } action a2() { }
table t { key = { meta.x : exact; } actions = { a1; a2; } }
table u { key = { meta.y : exact; } actions = { a1; } }
table v { key = { meta.y : exact; } actions = { a1; a2; } }""", ingress_apply="""
if (t.apply().hit) { meta.x = 1; }
if (u.apply().miss) { meta.x = 2; }
switch (v.apply().action_run) {
    a1: { meta.x = 3; }
    a2:
    default: { meta.x = 4; }
}""")
    s = ingress(prog).apply.stmts
    assert s[0].cond.field == "hit" and s[0].cond.type == ir.BoolT()
    assert s[1].cond.field == "miss" and s[1].cond.table.name == "u"
    sw = s[2]
    assert isinstance(sw, ir.SwitchStmt) and sw.subject.field == "action_run"
    assert sw.cases[0].labels[0].name == "a1"
    assert [x if isinstance(x, str) else x.name for x in sw.cases[1].labels] == ["a2", "default"]
    assert sw.cases[1].body is not None


def test_value_switch(build):
    prog = build(ingress_apply="switch (meta.x) { 1: { meta.y = 1; } 2: { meta.y = 2; } }")
    sw = ingress(prog).apply.stmts[0]
    assert [c.labels[0].value for c in sw.cases] == [1, 2]
    assert sw.cases[0].labels[0].type == ir.BitT(8)


def test_unknown_table_property_is_unsupported(build):
    with pytest.raises(CompileError) as ei:
        build(ingress_locals="action a() { }\n"
                             "table t { key = { meta.x : exact; } actions = { a; } "
                             "support_timeout = true; }")
    assert "unsupported by p4sim: idle timeouts" in str(ei.value)


PARSER = """
state start {
    pkt.extract(hdr.h);
    transition select(hdr.h.a, hdr.h.b) {
        (1, 0x0800): s1;
        (2 &&& 0x0F, _): s2;
        (10 .. 20, default): accept;
        default: reject;
    }
}
state s1 {
    pkt.extract(hdr.stk.next);
    verify(hdr.h.b != 0, error.HeaderTooShort);
    transition select(pkt.lookahead<bit<8>>()) { 0: accept; default: s2; }
}
state s2 { pkt.advance(16); transition accept; }
"""


def test_parser_states_and_select(build):
    prog = build(parser_body=PARSER)
    p = prog.blocks["parser"]
    assert set(p.states) == {"start", "s1", "s2"}
    sel = p.states["start"].transition
    assert isinstance(sel, ir.Select) and len(sel.keys) == 2
    c = sel.cases
    assert isinstance(c[0].keysets[0], ir.KsValue) and c[0].keysets[1].value == 0x0800
    assert isinstance(c[1].keysets[0], ir.KsMask) and isinstance(c[1].keysets[1], ir.KsDefault)
    assert isinstance(c[2].keysets[0], ir.KsRange) and (c[2].keysets[0].lo, c[2].keysets[0].hi) == (10, 20)
    assert [x.next_state for x in c] == ["s1", "s2", "accept", "reject"]
    assert all(isinstance(k, ir.KsDefault) for k in c[3].keysets)
    s1 = p.states["s1"]
    ext = s1.stmts[0].call
    assert isinstance(ext, ir.PacketCall) and isinstance(ext.args[0], ir.StackProp)
    assert isinstance(s1.stmts[1].call, ir.BuiltinCall) and s1.stmts[1].call.name == "verify"
    look = s1.transition.keys[0]
    assert isinstance(look, ir.PacketCall) and look.method == "lookahead" and look.type == ir.BitT(8)
    assert p.states["s2"].stmts[0].call.method == "advance"


def test_unknown_state_is_an_error(build):
    with pytest.raises(CompileError, match="unknown parser state 'nowhere'"):
        build(parser_body="state start { transition nowhere; }")


def test_top_level_extern_shared_by_two_controls(build):
    prog = build(decls="register<bit<16>>(64) shared;\ncounter(32, CounterType.packets_and_bytes) c;\n",
                 ingress_apply="shared.write(1, 5); c.count(2);",
                 egress_apply="bit<16> v; shared.read(v, 1);")
    reg = prog.externs[0]
    assert reg.qualified_name == "shared" and reg.ctor_args == [64] and reg.extern == "register"
    assert prog.externs[1].ctor_args == [32, "packets_and_bytes"]
    w = ingress(prog).apply.stmts[0].call
    assert isinstance(w, ir.ExternCall) and w.instance is reg and w.method == "write"
    assert w.args[1].type == ir.BitT(16) and w.directions == ["in", "in"]
    r = prog.blocks["egress"].apply.stmts[1].call
    assert r.instance is reg and r.directions == ["out", "in"]


def test_builtin_calls_hash_random_digest_clone(build):
    prog = build(decls="struct learn_t { bit<8> a; bit<16> b; }\n",
                 ingress_apply="""
hash(meta.y, HashAlgorithm.crc16, 16w0, { hdr.h.a, hdr.h.b }, 32w1024);
random(meta.x, 0, 100);
digest<learn_t>(1, { hdr.h.a, hdr.h.b });
clone(CloneType.I2E, 5);
log_msg("x={}", { meta.x });""")
    s = [x.call for x in ingress(prog).apply.stmts]
    h = s[0]
    assert h.name == "hash" and h.args[1].value == 2 and isinstance(h.args[1].type, ir.EnumT)
    assert h.type_args[0] == ir.BitT(16) and isinstance(h.type_args[2], ir.TupleT)
    assert s[1].name == "random" and s[1].args[2].type == ir.BitT(8)
    assert s[2].name == "digest" and isinstance(s[2].args[1], ir.StructExpr)
    assert prog.digests[0].name == "learn_t"
    assert s[3].name == "clone" and s[3].args[1].type == ir.BitT(32)
    assert s[4].name == "log_msg" and s[4].args[0].value == "x={}"


def test_out_argument_must_be_an_lvalue(build):
    with pytest.raises(CompileError, match="not an lvalue"):
        build(ingress_apply="random(8w1, 0, 100);")


def test_action_call_with_data_args(build):
    prog = build(ingress_locals="action set(bit<8> v) { meta.x = v; }",
                 ingress_apply="set(9);")
    call = ingress(prog).apply.stmts[0].call
    assert isinstance(call, ir.ActionCall) and call.args[0].value == 9
    assert call.action.params[0].direction is None


SUB = """
control Sub(inout m_t m, in bit<8> k) {
    counter(4, CounterType.packets) cnt;
    action put(bit<16> v) { m.y = v; }
    table st { key = { k : exact; } actions = { put; NoAction; } }
    apply { st.apply(); cnt.count(0); }
}
"""


def test_sub_control_is_inlined_with_p4c_names(build):
    prog = build(decls=SUB, ingress_locals="Sub() one; Sub() two;",
                 ingress_apply="one.apply(meta, hdr.h.a); two.apply(meta, 8w3);")
    ing = ingress(prog)
    names = sorted(t.qualified_name for t in ing.tables.values())
    assert names == ["I.one.st", "I.two.st"]
    assert sorted(a.qualified_name for a in ing.actions.values()) == ["I.one.put", "I.two.put"]
    assert sorted(x.qualified_name for x in ing.locals if isinstance(x, ir.ExternInstance)) == \
        ["I.one.cnt", "I.two.cnt"]
    first = ing.apply.stmts[0]
    # copy-in of (meta, hdr.h.a), the body, copy-out of the inout meta
    assert isinstance(first, ir.Block)
    assert isinstance(first.stmts[0], ir.Assign) and isinstance(first.stmts[-1], ir.Assign)
    assert isinstance(first.stmts[-1].lhs, ir.VarRef) and first.stmts[-1].lhs.var.name == "meta"


def test_sub_control_with_whole_variable_arguments_aliases(build):
    prog = build(decls=SUB.replace("in bit<8> k", "in bit<8> k_unused").replace("k : exact", "m.x : exact"),
                 ingress_locals="Sub() one; bit<8> kk;",
                 ingress_apply="one.apply(meta, kk);")
    blk = ingress(prog).apply.stmts[0]
    assert isinstance(blk, ir.Block) and not any(isinstance(s, ir.Assign) for s in blk.stmts)
    key = ingress(prog).tables["one.st"].keys[0].expr
    assert key.base.var is prog.blocks["ingress"].params[1]


def test_field_list_annotations_reach_the_ir(build):
    prog = build(decls="struct keep_t { @field_list(1) bit<8> a; bit<8> b; }\n",
                 ingress_locals="keep_t k;",
                 ingress_apply="resubmit_preserving_field_list(1);")
    t = prog.types["keep_t"]
    assert t.fields[0].annotations == {"field_list": "1"} and t.fields[1].annotations == {}
    call = ingress(prog).apply.stmts[0].call
    assert call.name == "resubmit_preserving_field_list" and call.args[0].type == ir.BitT(8)


def test_inlined_control_variables_are_initialised_after_copy_in(build):
    prog = build(decls="control Sub(inout m_t m, in bit<8> k) {\n"
                       "  bit<8> twice = k + k;\n  apply { m.x = twice; } }\n",
                 ingress_locals="Sub() s;", ingress_apply="s.apply(meta, hdr.h.a);")
    ing = ingress(prog)
    slot = next(l for l in ing.locals if isinstance(l, ir.VarDecl) and l.var.name == "twice")
    assert slot.init is None
    blk = ing.apply.stmts[0]
    copy_in = [s for s in blk.stmts if isinstance(s, ir.Assign)]
    body = next(s for s in blk.stmts if isinstance(s, ir.Block))
    # copy-in of k precedes the body, whose first statement initialises `twice`
    assert blk.stmts.index(copy_in[1]) < blk.stmts.index(body)
    first = body.stmts[0]
    assert isinstance(first, ir.Assign) and first.lhs.var is slot.var
    assert isinstance(first.rhs, ir.Binary)


def test_a_one_key_entry_may_parenthesise_a_mask_range_or_dont_care(build):
    # the spec's tupleKeysetExpression "(" reducedSimpleKeysetExpression ")": (_), (default),
    # (a &&& m) and (lo .. hi) are one-element keysets, as p4c parses them
    prog = build(ingress_locals="""
action a1() { } action a2() { } action a3() { }
table t {
    key = { meta.y : ternary; }
    actions = { a1; a2; a3; }
    const entries = {
        (16w3 &&& 16w3) : a1();
        (_) : a2();
    }
}
table u {
    key = { meta.y : range; }
    actions = { a1; a3; }
    const entries = {
        (16w1 .. 16w9) : a3();
        (default) : a1();
    }
}""", ingress_apply="t.apply(); u.apply();")
    e = ingress(prog).tables["t"].const_entries
    assert isinstance(e[0].keysets[0], ir.KsMask) and (e[0].keysets[0].value, e[0].keysets[0].mask) == (3, 3)
    assert isinstance(e[1].keysets[0], ir.KsDefault)
    f = ingress(prog).tables["u"].const_entries
    assert isinstance(f[0].keysets[0], ir.KsRange) and (f[0].keysets[0].lo, f[0].keysets[0].hi) == (1, 9)
    assert isinstance(f[1].keysets[0], ir.KsDefault)
