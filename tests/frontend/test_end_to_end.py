"""Front end + p4sim runtime: the IR the front end builds runs with P4's semantics.

These use the in-process switch only as an oracle for what the front end produced (inlined
controls, folded constants, const entries); the runtime's own rules are tested in tests/runtime.
"""
import pytest

import p4sim
from tests.frontend.conftest import make_program

SUB = """
const bit<8> BASE = 8w200 + 8w100;   // folds with wrap-around to 44
control AddTo(inout bit<8> acc, in bit<8> k) {
    bit<8> doubled = k + k;
    apply { acc = acc + doubled; }
}
"""


def _switch(tmp_path, **kw):
    p = tmp_path / "e2e.p4"
    p.write_text(make_program(**kw))
    return p4sim.Switch(p4sim.compile(str(p)))


def _run(sw, payload: bytes):
    sw.send(0, payload)
    sw.advance(1000)
    return sw.take_output()


def test_inlined_controls_copy_in_and_out(tmp_path):
    sw = _switch(tmp_path, decls=SUB,
                 ingress_locals="AddTo() one; AddTo() two;",
                 ingress_apply="""
sm.egress_spec = 1;
meta.x = BASE;
one.apply(meta.x, hdr.h.a);      // x = 44 + 2a
two.apply(hdr.h.a, 8w3);         // a = a + 6
hdr.h.b = (bit<16>) meta.x;""")
    out = _run(sw, bytes([5, 0, 0, 0, 0, 0, 0]))
    assert out, "packet was not forwarded"
    port, data = out[0]
    assert port == 1
    assert data[0] == 11                      # 5 + 6
    assert int.from_bytes(data[1:3], "big") == 44 + 10


def test_const_entries_drive_forwarding(tmp_path):
    sw = _switch(tmp_path, ingress_locals="""
action fwd(bit<9> p) { sm.egress_spec = p; }
action drop() { mark_to_drop(sm); }
table t {
    key = { hdr.h.a : ternary; }
    actions = { fwd; drop; }
    const default_action = drop();
    const entries = {
        0x10 &&& 0xF0 : fwd(3);
        _ : fwd(2);
    }
}""", ingress_apply="t.apply();")
    assert _run(sw, bytes([0x1A, 0, 0, 0, 0, 0, 0]))[0][0] == 3
    assert _run(sw, bytes([0x2A, 0, 0, 0, 0, 0, 0]))[0][0] == 2


def test_same_variable_twice_is_copied_not_aliased(tmp_path):
    # with aliasing `acc = 0` would also clear `k` and the result would be 0
    sw = _switch(tmp_path, decls="""
control Reset(inout bit<8> acc, in bit<8> k) {
    apply { acc = 0; acc = acc + k; }
}
""", ingress_locals="Reset() r; bit<8> v;", ingress_apply="""
sm.egress_spec = 1;
v = hdr.h.a;
r.apply(v, v);
hdr.h.a = v + 1;""")
    port, data = _run(sw, bytes([9, 0, 0, 0, 0, 0, 0]))[0]
    assert data[0] == 10


def test_return_in_an_inlined_control_ends_only_that_control(tmp_path):
    sw = _switch(tmp_path, decls="""
control Early(inout bit<8> v) {
    apply {
        if (v == 1) {
            v = 50;
            return;
        }
        v = v + 100;
    }
}
""", ingress_locals="Early() e;", ingress_apply="""
sm.egress_spec = 1;
e.apply(hdr.h.a);
hdr.h.b = 16w7;                   // runs after the sub-control returned""")
    _, data = _run(sw, bytes([1, 0, 0, 0, 0, 0, 0]))[0]
    assert data[0] == 50 and int.from_bytes(data[1:3], "big") == 7
    _, data = _run(sw, bytes([2, 0, 0, 0, 0, 0, 0]))[0]
    assert data[0] == 102 and int.from_bytes(data[1:3], "big") == 7
