"""The program holds the controls and parsers a package instantiates, nothing else: p4c's
front end drops a declaration no instance reaches (a control applied inside another is
inlined into it), and so do its digests."""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tna"))
import tnakit  # noqa: E402

SUB = """
struct learn_t { bit<8> a; }
control Sub(inout bit<8> v) {
    table t { actions = { NoAction; } size = 1; }
    apply { t.apply(); }
}
control Unused(inout bit<8> v) {
    apply { digest<learn_t>(1, { v }); }
}
parser UnusedP(packet_in pkt, out bit<8> v) { state start { transition accept; } }
"""


def test_v1model_program_holds_only_the_package_blocks(build):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = build(decls=SUB, ingress_locals="Sub() s;", ingress_apply="s.apply(meta.x);")
    assert set(prog.controls) == {"VC", "I", "E", "CC", "D"}
    assert set(prog.parsers) == {"P"}
    assert set(prog.blocks["ingress"].tables) == {"s.t"}


def test_v1model_a_digest_only_a_dropped_control_sends_is_not_the_programs(build):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = build(decls=SUB + "struct other_t { bit<8> b; }\n",
                     ingress_apply="digest<other_t>(1, { meta.x });")
    assert [d.name for d in prog.digests] == ["other_t"]


def test_tna_program_holds_only_the_package_blocks(tmp_path):
    decls = SUB.replace("bit<8>", "bit<32>").replace("digest<learn_t>(1, { v });", "")
    prog, _ = tnakit.build(tmp_path, decls=decls, ig_locals="Sub() s;", ig_apply="s.apply(md.x);")
    assert set(prog.ir.controls) == {"Ig", "ID", "Eg", "ED"}
    assert set(prog.ir.parsers) == {"IP", "EP"}
    assert [t.qualified_name for t in prog.ir.blocks["ingress"].tables.values()] == ["pipe.Ig.s.t"]

