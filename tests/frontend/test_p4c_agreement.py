"""Constructs real p4c rejects must be rejected by p4sim's front end too (found by compiling
every test program with p4c-bm2-ss)."""
import pytest

import p4sim

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header s_t { bit<8> v; }
struct headers { s_t[3] s; }
struct metadata { bit<8> x; }
parser P(packet_in p, out headers h, inout metadata m, inout standard_metadata_t sm) {
    state start { p.extract(h.s.next); transition accept; }
}
control V(inout headers h, inout metadata m) { apply { } }
control I(inout headers h, inout metadata m, inout standard_metadata_t sm) {
    apply { m.x = (bit<8>) h.s.%s; }
}
control E(inout headers h, inout metadata m, inout standard_metadata_t sm) { apply { } }
control C(inout headers h, inout metadata m) { apply { } }
control D(packet_out p, in headers h) { apply { p.emit(h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


@pytest.mark.parametrize("prop", ["lastIndex", "last.v"])
def test_stack_properties_that_need_the_parser_are_rejected_in_a_control(tmp_path, prop):
    src = tmp_path / "prog.p4"
    src.write_text(PROGRAM % prop)
    with pytest.raises(p4sim.CompileError) as err:
        p4sim.compile(str(src))
    assert "can only be used in a parser" in str(err.value)
    assert f"{src}:12:" in str(err.value)
