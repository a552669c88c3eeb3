"""Objects exist only for the instances a package reaches, as with p4c: a control declaration
is not compiled on its own (its tables, counters and registers exist once per instance, under
the instance's name), and a short name that matches several objects is an error, never a pick.
Each rule on v1model and on TNA."""
from __future__ import annotations

import sys
import textwrap
import warnings
from pathlib import Path

import pytest

import p4sim
from p4sim.errors import RuntimeApiError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tna"))
import tnakit  # noqa: E402

V1 = """\
#include <core.p4>
#include <v1model.p4>
header h_t {{ bit<8> a; bit<8> b; }}
struct hs_t {{ h_t h; }}
struct m_t {{ bit<8> x; }}
{decls}
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {{
    state start {{ pkt.extract(hdr.h); transition accept; }}
}}
control VC(inout hs_t hdr, inout m_t meta) {{ apply {{ }} }}
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {{
{ig_locals}
    apply {{
{ig_apply}
        sm.egress_spec = 1;
    }}
}}
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control CC(inout hs_t hdr, inout m_t meta) {{ apply {{ }} }}
control D(packet_out pkt, in hs_t hdr) {{ apply {{ pkt.emit(hdr.h); }} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

# a control with a table, a counter and a register; `@name`s are filled in per test
SUB_V1 = """
control Sub(inout bit<8> v) {{
    {ca}counter(4, CounterType.packets) c;
    {ra}register<bit<8>>(4) r;
    {aa}action set(bit<8> x) {{ v = x; }}
    {ta}table t {{ actions = {{ set; }} default_action = set(7); size = 1; }}
    apply {{ t.apply(); c.count(0); r.write(0, v); }}
}}
"""


def v1_switch(tmp_path: Path, decls: str, ig_locals: str = "", ig_apply: str = "") -> p4sim.Switch:
    path = tmp_path / "v1.p4"
    path.write_text(V1.format(decls=decls, ig_locals=ig_locals, ig_apply=ig_apply))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return p4sim.Switch(p4sim.compile(str(path)), clock="virtual")


def sub_v1(ca: str = "", ra: str = "", aa: str = "", ta: str = "") -> str:
    return SUB_V1.format(ca=ca, ra=ra, aa=aa, ta=ta)


def objects(sw: p4sim.Switch) -> dict[str, set[str]]:
    pl = sw.pipeline
    return {k: set(getattr(pl, k)) for k in ("tables", "counters", "registers")}


def run_v1(sw: p4sim.Switch) -> int:
    """One packet through; the output's second byte (hdr.h.b)."""
    sw.send(0, b"\x01\x02")
    sw.advance(1000)
    out = sw.take_output()
    assert len(out) == 1, out
    return out[0][1][1]


# ---------------------------------------------------------------- no objects for declarations


def test_v1model_a_control_declaration_has_no_objects_of_its_own(tmp_path):
    """Sub, instantiated as I.s, and Unused, never instantiated: the switch has I.s's table,
    counter and register and nothing named after either declaration."""
    unused = "control Unused(inout bit<8> v) { counter(2, CounterType.packets) uc;\n" \
             "  table u { actions = { NoAction; } } apply { u.apply(); uc.count(0); } }\n"
    sw = v1_switch(tmp_path, sub_v1() + unused, ig_locals="Sub() s;",
                   ig_apply="s.apply(hdr.h.b);")
    assert objects(sw) == {"tables": {"I.s.t"}, "counters": {"I.s.c"}, "registers": {"I.s.r"}}
    for name in ("Sub.t", "Unused.u"):
        with pytest.raises(RuntimeApiError) as ei:
            sw.set_default_action(name, "NoAction")
        assert ei.value.code == "NOT_FOUND"
    sw.set_default_action("s.t", "I.s.set", {"x": 9})  # the instance, by a unique short name
    assert run_v1(sw) == 9 and sw.counter_read("s.c", 0)[0] == 1 and sw.register_read("s.r", 0) == 9


def test_tna_an_absolute_name_in_a_control_declaration_names_only_the_instance(tmp_path):
    """P's table and counter carry absolute names (.Ig.t, .Ig.c) and P is applied from Ig: the
    switch has pipe.Ig.t and pipe.Ig.c only, and the short names reach them (a stand-alone copy
    of P named Ig.t would take the write and leave the packet's value at 7)."""
    decls = """
control P(inout meta_t md, inout bit<32> v) {
    @name(".Ig.c") Counter<bit<32>, bit<1>>(1, CounterType_t.PACKETS) c;
    @name(".Ig.set") action set(bit<32> x) { v = x; }
    @name(".Ig.t") table t { actions = { set; } default_action = set(7); size = 1; }
    apply { t.apply(); c.count(0); }
}
control Unused(inout bit<32> v) {
    table u { actions = { NoAction; } size = 1; }
    apply { u.apply(); }
}
"""
    prog, _ = tnakit.build(tmp_path, decls=decls, ig_locals="P() p;\nbit<32> loc = 1;",
                           ig_apply="p.apply(md, loc);\nhdr.ipv4.ttl = (bit<8>) loc;\n"
                                    "ig_tm_md.ucast_egress_port = 1;")
    sw = p4sim.Switch(prog, clock="virtual")
    assert set(sw.pipeline.tables) == {"pipe.Ig.t"}
    assert set(sw.pipeline.counters) == {"pipe.Ig.c"}
    sw.set_default_action("Ig.t", "Ig.set", {"x": 9})
    sw.send(0, tnakit.ipv4(ttl=64))
    sw.advance(1000)
    out = sw.take_output()
    assert out[0][1][22] == 9
    assert sw.counter_read("Ig.c", 0)[0] == 1


# ---------------------------------------------------------------- ambiguous short names


def test_v1model_a_short_name_of_two_objects_is_an_error(tmp_path):
    """Two instances of Sub: "t", "c" and "r" each name two objects; "s1.t" names one; a full
    name is never ambiguous, even when it ends another's name."""
    decls = sub_v1() + "control Z(inout bit<8> v) { @name(\".Z.I.own\") table own " \
                       "{ actions = { NoAction; } size = 1; } apply { own.apply(); } }\n"
    sw = v1_switch(tmp_path, decls,
                   ig_locals="Sub() s1; Sub() s2; Z() z;\n"
                             "table own { actions = { NoAction; } size = 1; }",
                   ig_apply="s1.apply(hdr.h.a); s2.apply(hdr.h.b); z.apply(hdr.h.a); own.apply();")
    for call in (lambda: sw.set_default_action("t", "Sub.set", {"x": 9}),
                 lambda: sw.counter_read("c", 0), lambda: sw.register_read("r", 0)):
        with pytest.raises(RuntimeApiError) as ei:
            call()
        assert "ambiguous" in ei.value.message
        assert "I.s1." in ei.value.message and "I.s2." in ei.value.message
    sw.set_default_action("s2.t", "I.s2.set", {"x": 9})
    assert run_v1(sw) == 9
    assert sw.get_default_action("I.own")[0] == "NoAction"  # exact: not Z.I.own
    assert {"I.own", "Z.I.own"} <= set(sw.pipeline.tables)


def test_tna_a_short_name_of_two_objects_is_an_error(tmp_path):
    decls = """
control P(inout bit<32> v) {
    Counter<bit<32>, bit<1>>(1, CounterType_t.PACKETS) c;
    action set(bit<32> x) { v = x; }
    table t { actions = { set; } default_action = set(7); size = 1; }
    apply { t.apply(); c.count(0); }
}
"""
    prog, _ = tnakit.build(tmp_path, decls=decls, ig_locals="P() p1;\nP() p2;",
                           ig_apply="p1.apply(md.x);\np2.apply(md.y);\n"
                                    "ig_tm_md.ucast_egress_port = 1;")
    sw = p4sim.Switch(prog, clock="virtual")
    assert set(sw.pipeline.tables) == {"pipe.Ig.p1.t", "pipe.Ig.p2.t"}
    for call in (lambda: sw.set_default_action("t", "P.set", {"x": 9}),
                 lambda: sw.counter_read("c", 0)):
        with pytest.raises(RuntimeApiError) as ei:
            call()
        assert "ambiguous" in ei.value.message
        assert "pipe.Ig.p1." in ei.value.message and "pipe.Ig.p2." in ei.value.message
    sw.set_default_action("p2.t", "Ig.p2.set", {"x": 9})
    assert sw.get_default_action("Ig.p2.t") == ("Ig.p2.set", {"x": 9})
