"""P4Info for externs, digests, controller headers, @id and collisions."""
import pytest
from p4.config.v1 import p4info_pb2

from p4sim import p4info as p4info_mod
from p4sim.errors import CompileError
from p4sim.p4info import IdAllocator, build_p4info, jenkins_one_at_a_time

EXTRAS = """
@controller_header("packet_in")
header cpu_in_h { bit<9> ingress_port; bit<7> pad; }
@controller_header("packet_out")
header cpu_out_h { bit<9> egress_port; bit<7> pad; }
struct learn_t { bit<8> a; bit<16> b; }
register<bit<32>>(128) top_reg;
"""

LOCALS = """
counter(64, CounterType.bytes) port_bytes;
meter(16, MeterType.packets) tenant_meter;
direct_meter<bit<2>>(MeterType.bytes) dm;
@id(0x77) action tagged(bit<8> v) { meta.x = v; }
action mark() { dm.read(meta.s2); }
table policed {
    key = { meta.x : exact; hdr.h.isValid() : exact; }
    actions = { mark; tagged; }
    meters = dm;
    const default_action = mark();
    size = 77;
    const entries = { (1, true) : tagged(3); }
}
"""


@pytest.fixture
def info(compile_src):
    from tests.frontend.conftest import make_program
    src = make_program(decls=EXTRAS, ingress_locals=LOCALS,
                       ingress_apply="policed.apply(); port_bytes.count(1);"
                                     "digest<learn_t>(1, { hdr.h.a, hdr.h.b });"
                                     "top_reg.write(0, 1);")
    src = src.replace("int<8> s; bool f; }", "int<8> s; bool f; bit<2> s2; }")
    return build_p4info(compile_src(src))


def by_name(items):
    return {x.preamble.name: x for x in items}


def test_counters_meters_registers(info):
    c = by_name(info.counters)["I.port_bytes"]
    assert c.spec.unit == p4info_pb2.CounterSpec.BYTES and c.size == 64
    assert c.preamble.id >> 24 == 0x12
    m = by_name(info.meters)["I.tenant_meter"]
    assert m.spec.unit == p4info_pb2.MeterSpec.PACKETS and m.size == 16
    dm = by_name(info.direct_meters)["I.dm"]
    assert dm.spec.unit == p4info_pb2.MeterSpec.BYTES
    t = by_name(info.tables)["I.policed"]
    assert dm.direct_table_id == t.preamble.id and list(t.direct_resource_ids) == [dm.preamble.id]
    r = by_name(info.registers)["top_reg"]
    assert r.type_spec.bitstring.bit.bitwidth == 32 and r.size == 128
    assert r.preamble.id == (0x16 << 24) | (jenkins_one_at_a_time("top_reg") & 0xFFFFFF)


def test_const_table_and_match_fields(info):
    t = by_name(info.tables)["I.policed"]
    assert t.is_const_table and t.size == 77
    assert t.const_default_action_id == by_name(info.actions)["I.mark"].preamble.id
    assert [(m.name, m.bitwidth) for m in t.match_fields] == \
        [("meta.x", 8), ("hdr.h.isValid()", 1)]


def test_explicit_id_gets_prefix(info):
    assert by_name(info.actions)["I.tagged"].preamble.id == (0x01 << 24) | 0x77


def test_digest_and_type_info(info):
    d = by_name(info.digests)["learn_t"]
    assert d.type_spec.struct.name == "learn_t"
    assert d.preamble.id == (0x17 << 24) | (jenkins_one_at_a_time("learn_t") & 0xFFFFFF)
    members = info.type_info.structs["learn_t"].members
    assert [(m.name, m.type_spec.bitstring.bit.bitwidth) for m in members] == [("a", 8), ("b", 16)]


def test_controller_packet_metadata(info):
    cpm = by_name(info.controller_packet_metadata)
    pin = cpm["packet_in"]
    assert pin.preamble.id == (0x04 << 24) | (jenkins_one_at_a_time("cpu_in_h") & 0xFFFFFF)
    assert [(m.id, m.name, m.bitwidth) for m in pin.metadata] == \
        [(1, "ingress_port", 9), (2, "pad", 7)]
    assert "packet_out" in cpm


def test_collision_probes_next_hash(monkeypatch):
    monkeypatch.setattr(p4info_mod, "jenkins_one_at_a_time", lambda name: 0x1234)
    alloc = IdAllocator()
    a, b = object(), object()
    alloc.add(0x01, "b", {}, b)
    alloc.add(0x01, "a", {}, a)
    alloc.assign()
    # sorted order: "a" gets the hash, "b" probes hash + 1
    assert alloc.get(0x01, a) == 0x01001234 and alloc.get(0x01, b) == 0x01001235


def test_explicit_id_wins_over_hash(monkeypatch):
    monkeypatch.setattr(p4info_mod, "jenkins_one_at_a_time", lambda name: 0x55)
    alloc = IdAllocator()
    a, b = object(), object()
    alloc.add(0x02, "a", {}, a)
    alloc.add(0x02, "b", {"id": "0x55"}, b)
    alloc.assign()
    assert alloc.get(0x02, b) == 0x02000055 and alloc.get(0x02, a) == 0x02000056


def test_duplicate_explicit_ids_are_rejected():
    alloc = IdAllocator()
    alloc.add(0x01, "a", {"id": "5"}, object())
    alloc.add(0x01, "b", {"id": "5"}, object())
    with pytest.raises(CompileError, match="used twice"):
        alloc.assign()


def test_actions_called_directly_are_listed_unused_and_hidden_are_not(compile_src):
    from tests.frontend.conftest import make_program
    src = make_program(ingress_locals="""
action direct() { meta.x = 1; }
action unused() { meta.x = 2; }
action via_action() { meta.x = 3; }
action caller() { via_action(); }
@hidden action secret() { }
table t { key = { meta.x : exact; } actions = { caller; secret; } }
@hidden table h { key = { meta.x : exact; } actions = { NoAction; } }
""", ingress_apply="direct(); t.apply(); h.apply();")
    info = build_p4info(compile_src(src))
    assert sorted(a.preamble.name for a in info.actions) == \
        ["I.caller", "I.direct", "I.via_action", "NoAction"]
    assert [t.preamble.name for t in info.tables] == ["I.t"]
    assert len(info.tables[0].action_refs) == 1


def test_alias_is_the_shortest_unique_suffix():
    from p4sim.p4info import _aliases
    names = ["I.a.c", "I.b.c", "E.d", "x"]
    assert _aliases(names) == {"I.a.c": "a.c", "I.b.c": "b.c", "E.d": "d", "x": "x"}


def test_a_table_or_control_instance_never_applied_is_removed_as_p4c_does(compile_src):
    # p4c's front end (UnusedDeclarations) removes a table no apply block applies and a
    # control instance never applied, with a warning; neither reaches the P4Info, nor the
    # actions only they named
    from tests.frontend.conftest import HEADER, make_program
    src = make_program(decls="""
control Sub(inout m_t meta) {
    action sub_act() { meta.x = 9; }
    table sub_t { actions = { sub_act; } default_action = sub_act(); }
    apply { sub_t.apply(); }
}
""", ingress_locals="""
action kept() { meta.x = 1; }
action only_spare() { meta.x = 2; }
table used { key = { meta.x : exact; } actions = { kept; } }
table spare { key = { meta.x : exact; } actions = { only_spare; } }
Sub() never;
Sub() once;
""", ingress_apply="used.apply(); once.apply(meta);")
    with pytest.warns(UserWarning) as seen:
        info = build_p4info(compile_src(src))
    messages = [str(w.message) for w in seen]
    assert any("table 'spare' is unused; removed" in m for m in messages)
    assert any("'never' is unused; removed" in m for m in messages)
    line = HEADER.count("\n") + src[len(HEADER):].splitlines().index("table spare { key = { meta.x : exact; } actions = { only_spare; } }") + 1
    assert any(f":{line}:" in m for m in messages if "spare" in m)
    assert sorted(t.preamble.name for t in info.tables) == ["I.once.sub_t", "I.used"]
    assert sorted(a.preamble.name for a in info.actions) == ["I.kept", "I.once.sub_act"]
