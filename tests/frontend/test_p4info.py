"""P4Info generation: p4c's id scheme, names and message contents."""
from pathlib import Path

import pytest
from p4.config.v1 import p4info_pb2

from p4sim.frontend import load
from p4sim.p4info import build_p4info, jenkins_one_at_a_time

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def basic_info():
    return build_p4info(load(HERE / "p4" / "basic_l3.p4"))


def _by_name(items):
    return {x.preamble.name: x for x in items}


def test_known_p4c_ids_of_the_tutorial_names(basic_info):
    tables = _by_name(basic_info.tables)
    actions = _by_name(basic_info.actions)
    assert tables["MyIngress.ipv4_lpm"].preamble.id == 37375156
    assert actions["MyIngress.ipv4_forward"].preamble.id == 28792405
    assert actions["MyIngress.drop"].preamble.id == 25652968
    assert actions["NoAction"].preamble.id == 21257015


def test_id_is_prefix_and_low_24_bits_of_the_jenkins_hash():
    assert (0x02 << 24) | (jenkins_one_at_a_time("MyIngress.ipv4_lpm") & 0xFFFFFF) == 37375156
    assert jenkins_one_at_a_time("a") != jenkins_one_at_a_time("b")


def test_table_contents(basic_info):
    t = _by_name(basic_info.tables)["MyIngress.ipv4_lpm"]
    assert t.preamble.alias == "ipv4_lpm"
    assert [(m.id, m.name, m.bitwidth, m.match_type) for m in t.match_fields] == \
        [(1, "hdr.ip4.dst", 32, p4info_pb2.MatchField.LPM)]
    assert [r.id for r in t.action_refs] == [28792405, 25652968, 21257015]
    assert t.size == 1024
    assert not t.is_const_table
    assert t.const_default_action_id == 0


def test_action_params_numbered_from_one(basic_info):
    a = _by_name(basic_info.actions)["MyIngress.ipv4_forward"]
    assert [(p.id, p.name, p.bitwidth) for p in a.params] == [(1, "dstAddr", 48), (2, "port", 9)]


def test_arch_is_v1model(basic_info):
    assert basic_info.pkg_info.arch == "v1model"
