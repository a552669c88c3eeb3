"""A program using many constructs at once compiles to the expected IR and P4Info."""
from pathlib import Path

import pytest

from p4sim.frontend import ir, load
from p4sim.p4info import build_p4info

FEATURES = Path(__file__).parent / "p4" / "features.p4"


@pytest.fixture(scope="module")
def prog():
    return load(FEATURES)


def test_macros_and_constants_are_expanded(prog):
    reg = prog.externs[0]
    assert reg.qualified_name == "flow_bytes" and reg.ctor_args == [64]
    acl = prog.blocks["ingress"].tables["acl"]
    assert acl.size == 1024


def test_parser_select_forms(prog):
    p = prog.blocks["parser"]
    start = p.states["start"].transition
    assert isinstance(start.cases[1].keysets[0], ir.KsMask)
    vlan = p.states["parse_vlan"].transition
    assert isinstance(vlan.keys[0], ir.Member) and isinstance(vlan.keys[0].base, ir.StackProp)
    assert vlan.cases[0].keysets[1].value == 1 and vlan.keys[1].type == ir.BitT(8)
    ipv4 = p.states["parse_ipv4"].transition
    assert isinstance(ipv4.cases[0].keysets[0], ir.KsRange)
    assert [c.next_state for c in ipv4.cases] == ["reject", "accept", "skip_options"]
    assert isinstance(p.locals[0], ir.VarDecl) and p.locals[0].init.value == 0


def test_const_entries_with_bool_and_lpm_keys(prog):
    acl = prog.blocks["ingress"].tables["acl"]
    assert [k.name for k in acl.keys] == ["sm.ingress_port", "ether_type", "hdr.ipv4.dst",
                                          "hdr.ipv4.isValid()"]
    e0, e1 = acl.const_entries
    assert isinstance(e0.keysets[0], ir.KsDefault) and e0.keysets[3].value == 0
    assert (e1.keysets[2].value, e1.keysets[2].mask) == (0x0A000000, 0xFF000000)
    assert e1.keysets[3].value == 1 and e1.action.args[0].value == 2


def test_nested_sub_controls_are_flattened_into_ingress(prog):
    ing = prog.blocks["ingress"]
    assert "classify.by_dscp" in ing.tables
    assert ing.tables["classify.by_dscp"].qualified_name == "FIngress.classify.by_dscp"
    # Mark is applied with members (copy-in/copy-out through variables of the ingress)
    names = [loc.var.name for loc in ing.locals if isinstance(loc, ir.VarDecl)]
    assert "mark.ip" in names and "mark.level" in names


def test_enum_switch_with_fallthrough(prog):
    def find(stmts):
        for s in stmts:
            if isinstance(s, ir.SwitchStmt) and not isinstance(s.subject, ir.ApplyResult):
                return s
    sw = find(prog.blocks["ingress"].apply.stmts)
    assert [len(c.labels) for c in sw.cases] == [1, 2]
    assert [lab.value for lab in sw.cases[1].labels] == [1, 2]


def test_p4info_of_features(prog):
    info = build_p4info(prog)
    names = sorted(t.preamble.name for t in info.tables)
    assert names == ["FIngress.acl", "FIngress.classify.by_dscp", "FIngress.l2"]
    assert [c.preamble.name for c in info.controller_packet_metadata] == ["packet_in"]
    assert [d.preamble.name for d in info.digests] == ["learn_t"]
    acl = next(t for t in info.tables if t.preamble.name == "FIngress.acl")
    assert acl.is_const_table and acl.size == 1024
    assert [m.bitwidth for m in acl.match_fields] == [9, 16, 32, 1]
    set_level = next(a for a in info.actions if a.preamble.name == "FIngress.classify.set_level")
    assert set_level.params[0].bitwidth == 2
