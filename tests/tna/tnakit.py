"""A small TNA program template for the p4sim TNA rule tests: each test fills in the parts it
exercises (ingress locals/apply, egress locals/apply, deparser bodies) and keeps the rest."""
from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Optional

import p4sim

TEMPLATE = """\
#include <core.p4>
#include <{include}>

header ethernet_h {{ bit<48> dst; bit<48> src; bit<16> etype; }}
/* carried from ingress to egress in front of the packet */
header bridge_h {{ bit<32> a; bit<32> b; }}
header ipv4_h {{
    bit<4> version; bit<4> ihl; bit<8> dscp; bit<16> total_len;
    bit<16> id; bit<3> flags; bit<13> frag; bit<8> ttl; bit<8> proto;
    bit<16> csum; bit<32> src; bit<32> dst;
}}
struct headers_t {{ bridge_h bridge; ethernet_h eth; ipv4_h ipv4; }}
struct meta_t {{ bit<32> x; bit<32> y; }}
struct pair_t {{ bit<32> lo; bit<32> hi; }}
struct digest_t {{ bit<48> src; bit<16> etype; }}
{decls}

parser IP(packet_in pkt, out headers_t hdr, out meta_t md, out ingress_intrinsic_metadata_t ig_intr_md) {{
    state start {{
        pkt.extract(ig_intr_md);
{ig_parser_skip}
        transition parse_eth;
    }}
    state parse_eth {{
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etype) {{ 0x0800: parse_ipv4; default: accept; }}
    }}
    state parse_ipv4 {{ pkt.extract(hdr.ipv4); transition accept; }}
}}

control Ig(inout headers_t hdr, inout meta_t md,
           in ingress_intrinsic_metadata_t ig_intr_md,
           in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
           inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
           inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {{
{ig_locals}
    apply {{
{ig_apply}
    }}
}}

control ID(packet_out pkt, inout headers_t hdr, in meta_t md,
           in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {{
{id_locals}
    apply {{
{id_apply}
        pkt.emit(hdr);
    }}
}}

parser EP(packet_in pkt, out headers_t hdr, out meta_t md, out egress_intrinsic_metadata_t eg_intr_md) {{
{ep_locals}
    state start {{
        pkt.extract(eg_intr_md);
{ep_body}
        transition accept;
    }}
}}

control Eg(inout headers_t hdr, inout meta_t md,
           in egress_intrinsic_metadata_t eg_intr_md,
           in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
           inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
           inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {{
{eg_locals}
    apply {{
{eg_apply}
    }}
}}

control ED(packet_out pkt, inout headers_t hdr, in meta_t md,
           in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {{
    apply {{ pkt.emit(hdr); }}
}}

Pipeline(IP(), Ig(), ID(), EP(), Eg(), ED()) pipe;
Switch(pipe) main;
"""

DEFAULTS = dict(
    include="tna.p4", decls="",
    ig_parser_skip="        pkt.advance(PORT_METADATA_SIZE);",
    ig_locals="", ig_apply="        ig_tm_md.ucast_egress_port = 2;",
    id_locals="", id_apply="",
    ep_locals="", ep_body="        pkt.extract(hdr.eth);",
    eg_locals="", eg_apply="",
)


def source(**parts: str) -> str:
    d = dict(DEFAULTS)
    for k, v in parts.items():
        if k not in d:
            raise KeyError(k)
        d[k] = textwrap.indent(textwrap.dedent(v).strip("\n"), "        ") \
            if k in ("ig_apply", "eg_apply", "id_apply", "ep_body", "ig_parser_skip") else \
            textwrap.indent(textwrap.dedent(v).strip("\n"), "    ") if k.endswith("locals") else v
    return TEMPLATE.format(**d)


def build(tmp_path: Path, name: str = "prog.p4", defines: Optional[dict] = None, **parts: str):
    path = tmp_path / name
    path.write_text(source(**parts))
    return p4sim.compile(str(path), defines=defines), path


def line_of(path: Path, needle: str) -> int:
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in {path}")


def eth(dst: int = 0xAA, src: int = 0x05, etype: int = 0x88B5, payload: bytes = b"\x00" * 46) -> bytes:
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + etype.to_bytes(2, "big") + payload


def ipv4(ttl: int = 64, payload: bytes = b"\x00" * 26) -> bytes:
    hdr = bytes([0x45, 0, 0, 20 + len(payload), 0, 1, 0, 0, ttl, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2])
    return eth(etype=0x0800, payload=hdr + payload)
