"""BMv2's table-graph rule: no path through a control applies the same table twice.

Each case was compiled with real p4c-bm2-ss 1.2.5.16: the refused ones fail there with "Program
can not be implemented on this target since it contains a path from table I.t back to itself",
the accepted ones compile."""
import pytest

import p4sim
from p4sim.errors import CompileError

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { }
parser P(packet_in p, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { p.extract(hdr.h); transition accept; }
}
control VC(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action addv(bit<8> va) { hdr.h.b = va; }
    table t { key = { hdr.h.a : exact; } actions = { addv; NoAction; } default_action = NoAction(); }
    apply { BODY }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control CC(inout H hdr, inout M m) { apply { } }
control D(packet_out p, in H hdr) { apply { p.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def compile_body(tmp_path, body: str):
    path = tmp_path / "t.p4"
    path.write_text(PROGRAM.replace("BODY", body))
    return p4sim.compile(str(path))


@pytest.mark.parametrize("body", [
    "t.apply(); t.apply();",
    "if (hdr.h.a == 1) { t.apply(); } t.apply();",
    "if (t.apply().hit) { t.apply(); }",
    "switch (t.apply().action_run) { addv: { exit; } } t.apply();",
])
def test_a_table_applied_twice_on_one_path_is_refused_as_p4c_bm2_ss(tmp_path, body):
    with pytest.raises(CompileError) as ei:
        compile_body(tmp_path, body)
    assert "path from table I.t back to itself" in ei.value.message
    assert ei.value.pos is not None and ei.value.pos.line > 1


@pytest.mark.parametrize("body", [
    "t.apply();",
    "if (hdr.h.a == 1) { t.apply(); } else { t.apply(); }",  # two paths, each applies it once
    "if (hdr.h.a == 1) { t.apply(); return; } t.apply();",    # the first path ends at return
])
def test_a_table_applied_once_per_path_is_accepted(tmp_path, body):
    compile_body(tmp_path, body)
