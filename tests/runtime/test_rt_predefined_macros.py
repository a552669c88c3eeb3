"""Predefined macros as p4c-bm2-ss has them: the include guards ``_CORE_P4_`` and
``_V1_MODEL_P4_`` of p4c's p4include, ``__TARGET_BMV2__`` from the compiler driver and
``V1MODEL_VERSION``; nothing else (no ``__p4c__``: only p4c's Tofino driver defines that).
A program guarded by them compiles and runs the code they select."""
import p4sim

PROGRAM = """\
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct hs_t { h_t h; }
struct m_t { bit<8> unused; }
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout hs_t hdr, inout m_t meta) { apply { } }
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.h.a = 0;
#ifdef _CORE_P4_
        hdr.h.a = hdr.h.a | 1;
#endif
#ifdef _V1_MODEL_P4_
        hdr.h.a = hdr.h.a | 2;
#endif
#ifdef __TARGET_BMV2__
        hdr.h.a = hdr.h.a | 4;
#endif
#if V1MODEL_VERSION >= 20180101
        hdr.h.a = hdr.h.a | 8;
#endif
#ifdef __p4c__
        hdr.h.a = hdr.h.a | 16;
#endif
    }
}
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pkt, in hs_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_core_p4_guard_and_p4c_bm2_ss_predefined_macros_select_code(tmp_path):
    p = tmp_path / "guarded.p4"
    p.write_text(PROGRAM)
    sw = p4sim.Switch(p4sim.compile(str(p)))
    sw.send(0, bytes([0xFF]))
    assert sw.take_output() == [(1, bytes([1 | 2 | 4 | 8]))]  # and not __p4c__ (16)


def test_code_under_an_undefined_guard_is_left_out(tmp_path):
    # negative control: with the guard macro undefined the code it guards is left out
    p = tmp_path / "undef.p4"
    p.write_text(PROGRAM.replace("#ifdef _CORE_P4_", "#undef _CORE_P4_\n#ifdef _CORE_P4_"))
    sw = p4sim.Switch(p4sim.compile(str(p)))
    sw.send(0, bytes([0xFF]))
    assert sw.take_output() == [(1, bytes([2 | 4 | 8]))]
