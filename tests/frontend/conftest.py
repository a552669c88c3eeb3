"""Helpers for front-end tests: build small complete v1model programs around a snippet."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from p4sim.frontend import load

HEADER = """\
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; bit<32> c; }
struct hs_t { h_t h; h_t[3] stk; }
struct m_t { bit<8> x; bit<16> y; bit<32> z; int<8> s; bool f; }
"""

DEFAULT_PARSER = """\
state start { pkt.extract(hdr.h); transition accept; }
"""


def make_program(decls: str = "", ingress_locals: str = "", ingress_apply: str = "",
                 parser_body: str = DEFAULT_PARSER, egress_apply: str = "") -> str:
    """A complete program; the snippets land at fixed places (line numbers are stable:
    ``decls`` starts on line 6)."""
    return HEADER + decls + "\n" + textwrap.dedent(f"""\
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {{
{parser_body}
}}
control VC(inout hs_t hdr, inout m_t meta) {{ apply {{ }} }}
control I(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {{
{ingress_locals}
apply {{
{ingress_apply}
}}
}}
control E(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {{ apply {{ {egress_apply} }} }}
control CC(inout hs_t hdr, inout m_t meta) {{ apply {{ }} }}
control D(packet_out pkt, in hs_t hdr) {{ apply {{ pkt.emit(hdr.h); }} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
""")


@pytest.fixture
def compile_src(tmp_path: Path):
    """compile_src(text, name="t.p4") -> ir.Program, via a real file (so includes resolve)."""
    def _compile(text: str, name: str = "t.p4", **kw):
        p = tmp_path / name
        p.write_text(text)
        return load(p, **kw)
    return _compile


@pytest.fixture
def build(compile_src):
    """build(decls=..., ingress_locals=..., ingress_apply=..., ...) -> ir.Program"""
    def _build(**kw):
        return compile_src(make_program(**kw))
    return _build
