"""C for a whole Tofino pass: ``p4n_ig_pass`` and ``p4n_eg_pass`` run one gress's parser,
control and deparser in one call, on per-switch scratch structs, where the block-by-block path
(``NativeTnaPipeline``'s view objects) makes six Python objects, packs the intrinsic header in
Python and crosses into C three times.  Each does what the reference's
``TnaSwitch._ingress_blocks``/``_egress_blocks`` do, step for step: the intrinsic metadata
header (and port metadata) in front of the packet, fresh metadata (all ones without
@pa_auto_init_metadata), the global timestamp, the parser (an error: the packet is dropped
unless the gress reads ``parser_err``, which then holds the error's flags), the control, the
deparser, and the deparsed bytes followed by the unparsed payload.

The blocks take their arguments in the order ``TnaSwitch`` passes them; a program whose blocks
take other types there gets no pass functions (``None``): the block-by-block path runs it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from p4sim.frontend import ir
from p4sim.native.cgen import c_name as _cid
from p4sim.runtime.objects import scalar_width

if TYPE_CHECKING:  # pragma: no cover
    from p4sim.native.cgen import CGen

# scratch name -> the type the switch builds there (a name in tna.p4, or the parser's user types)
INTRINSIC = {"ig": "ingress_intrinsic_metadata_t", "tm": "ingress_intrinsic_metadata_for_tm_t",
             "ip": "ingress_intrinsic_metadata_from_parser_t", "id": "ingress_intrinsic_metadata_for_deparser_t",
             "eg": "egress_intrinsic_metadata_t", "ep": "egress_intrinsic_metadata_from_parser_t",
             "ed": "egress_intrinsic_metadata_for_deparser_t", "eo": "egress_intrinsic_metadata_for_output_port_t"}
# each block's arguments, as TnaSwitch passes them (the first n of them, n = its parameters)
ARGS = {"ingress_parser": ("ih", "im", "ig", "tm", "ip"), "ingress": ("ih", "im", "ig", "ip", "id", "tm"),
        "ingress_deparser": ("ih", "im", "id", "ig"), "egress_parser": ("eh", "em", "eg", "ep", "ed"),
        "egress": ("eh", "em", "eg", "ep", "ed", "eo"), "egress_deparser": ("eh", "em", "ed", "eg", "ep")}
# TnaSwitch's egress_intrinsic_metadata_t values, in the order of p4n_eg_pass's i0..i7
EG_FIELDS = ("egress_port", "enq_qdepth", "deq_qdepth", "enq_tstamp", "deq_timedelta", "egress_rid", "egress_qid",
             "pkt_length")
TM_FIELDS = ("bypass_egress", "copy_to_cpu", "mcast_grp_a", "mcast_grp_b", "qid", "ucast_egress_port")
API = """int64_t p4n_ig_pass(inst_t *S, const char *md, int64_t mdbytes, const char *data, int64_t len, uint64_t port,
                    uint64_t resubmitted, uint64_t ns_now, double now, uint64_t pass_id, int reads_err, char *out,
                    int64_t *res);
int64_t p4n_eg_pass(inst_t *S, const char *data, int64_t len, uint64_t i0, uint64_t i1, uint64_t i2, uint64_t i3,
                    uint64_t i4, uint64_t i5, uint64_t i6, uint64_t i7, uint64_t ns_t, double t, uint64_t pass_id,
                    uint64_t orig_len, int reads_err, char *out, int64_t *res);
uint8_t *p4n_pass_buf(inst_t *S, int64_t n);"""


def _pack(obj: str, t: ir.HeaderT, buf: str) -> list[str]:
    """Write header ``obj``'s fields MSB first into the zeroed ``buf`` (its ``_pack``)."""
    lines = [f"{{ uint64_t nb = 0;"]
    for path, ft in ir.leaf_fields(t):
        fld = "".join(f".f_{_cid(p)}" for p in path)
        lines.append(f"  p4n_wr({buf}, &nb, {obj}{fld}, {scalar_width(ft)});")
    return lines + ["}"]


def _ones(obj: str, t: ir.StructT) -> list[str]:
    """The reference's fresh_metadata without @pa_auto_init_metadata: unsigned and bool fields
    all ones (nested structs too)."""
    out = []
    for f in t.fields:
        ft, a = f.type, f"{obj}.f_{_cid(f.name)}"
        if isinstance(ft, ir.BitT) and not ft.signed:
            out.append(f"{a} = UINT64_C({(1 << ft.width) - 1});")
        elif isinstance(ft, ir.BoolT):
            out.append(f"{a} = 1;")
        elif isinstance(ft, ir.StructT):
            out += _ones(a, ft)
    return out


def pass_code(g: "CGen", roles: dict[str, str], params: dict[str, list[tuple[str, ir.Type]]],
              auto_init: bool) -> Optional[tuple[list[str], str]]:
    """(inst_t fields, C functions) of the two pass functions, or None when a block's
    arguments are not what TnaSwitch passes."""
    types = g.prog.types
    scratch: dict[str, ir.Type] = {k: types[v] for k, v in INTRINSIC.items() if v in types}
    if len(scratch) != len(INTRINSIC):
        return None
    scratch["ih"], scratch["im"] = params["ingress_parser"][0][1], params["ingress_parser"][1][1]
    scratch["eh"], scratch["em"] = params["egress_parser"][0][1], params["egress_parser"][1][1]
    calls: dict[str, str] = {}
    for role, names in ARGS.items():
        ps = params[role]
        if len(ps) > len(names) or any(g.sname(t) != g.sname(scratch[n]) for (_, t), n in zip(ps, names)):
            return None
        calls[role] = ", ".join(f"&S->x_{n}" for n in names[:len(ps)])
    if not isinstance(scratch["ig"], ir.HeaderT) or not isinstance(scratch["eg"], ir.HeaderT) or \
            scratch["ig"].width != 64 or scratch["eg"].width % 8:
        return None
    tm_struct = g.struct_scalars[g.sname(scratch["tm"])]
    eg_struct = g.struct_scalars[g.sname(scratch["eg"])]
    if any(f not in tm_struct for f in TM_FIELDS) or any(f not in eg_struct for f in EG_FIELDS) or \
            "drop_ctl" not in g.struct_scalars[g.sname(scratch["id"])]:
        return None
    fields = [f"    struct {g.sname(t)} x_{n};" for n, t in scratch.items()]
    fields += ["    uint8_t *pbuf;", "    int64_t pcap;"]
    ig_w, eg_w = scratch["ig"].width, scratch["eg"].width
    too_short = g.err.get("PacketTooShort", -99)
    ones_i = [] if auto_init else _ones("S->x_im", scratch["im"])
    ones_e = [] if auto_init else _ones("S->x_em", scratch["em"])
    set_eg = [f"S->x_eg.f_{f} = i{i};" for i, f in enumerate(EG_FIELDS)]
    tm_out = [f"res[{3 + i}] = (int64_t)S->x_tm.f_{f};" for i, f in enumerate(TM_FIELDS)]
    nl = "\n    "

    def parse(role: str, prsr: str) -> str:
        """The parser; an error drops the packet (-3) unless the gress reads ``parser_err``, which
        then holds the error's flags (the reference's ``parser_error_flags``)."""
        return f"""int32_t err = -2;
    int64_t pos = {roles[role]}(S, buf, total << 3, {calls[role]}, &err);
    res[0] = err; res[1] = pos;
    if (err != -2) {{
        if (!reads_err) return -3;
        S->x_{prsr}.f_parser_err = err == {too_short} ? 2 : 1;
    }}"""

    def tail(dep: str, ctl: str, dprs: str, extra: list[str]) -> str:
        """Control and deparser, then what the switch reads (``extra``: more of it), and the
        deparsed bytes and the payload into ``out``."""
        return f"""S->exited = 0; {roles[ctl]}(S, {calls[ctl]});
    if (S->assert_at || S->rule_at) return -5;
    memset(S->out, 0, sizeof S->out); S->nb = 0; S->exited = 0; {roles[dep]}(S, {calls[dep]});
    if (S->assert_at || S->rule_at) return -5;
    res[2] = (int64_t)S->x_{dprs}.f_drop_ctl;
    {nl.join(extra)}
    res[9] = S->mirror_set; res[10] = (int64_t)S->mirror_session; res[11] = (int64_t)S->mirror_nb;
    res[12] = S->resub_set; res[13] = (int64_t)S->resub_nb;
    int64_t hb = (int64_t)((S->nb + 7) >> 3), skip = pos >> 3, plen = skip < total ? total - skip : 0;
    memcpy(out, S->out, (size_t)hb);
    memcpy(out + hb, S->pbuf + skip, (size_t)plen);
    return hb + plen;"""

    code = f"""
uint8_t *p4n_pass_buf(inst_t *S, int64_t n) {{
    if (n > S->pcap) {{ free(S->pbuf); S->pcap = 2 * n; S->pbuf = (uint8_t *)malloc((size_t)S->pcap); }}
    return S->pbuf;
}}
/* TnaSwitch._ingress_blocks in one call.  Returns the output's length, or -3 (a parser error
 * dropped it), -4 (the parser did not skip the metadata), -5 (an assert or a register rule:
 * p4n_status says which); res = [parser error (-2 none), pos, drop_ctl, TM fields (TM_FIELDS),
 * mirror set, session, bits, resubmit set, bits, ucast_egress_port written]. */
int64_t p4n_ig_pass(inst_t *S, const char *md, int64_t mdbytes, const char *data, int64_t len, uint64_t port,
                    uint64_t resubmitted, uint64_t ns_now, double now, uint64_t pass_id, int reads_err, char *out,
                    int64_t *res) {{
    p4n_begin(S, now, (uint64_t)len, pass_id);
    memset(&S->x_ih, 0, sizeof S->x_ih); memset(&S->x_im, 0, sizeof S->x_im); memset(&S->x_ig, 0, sizeof S->x_ig);
    memset(&S->x_tm, 0, sizeof S->x_tm); memset(&S->x_ip, 0, sizeof S->x_ip); memset(&S->x_id, 0, sizeof S->x_id);
    {nl.join(ones_i)}
    S->x_ig.f_resubmit_flag = resubmitted; S->x_ig.f_ingress_port = port;
    S->x_ig.f_ingress_mac_tstamp = ns_now & p4n_mask(48); S->x_ig._v = 1;
    S->x_ip.f_global_tstamp = ns_now & p4n_mask(48);
    int64_t pre = {ig_w // 8} + mdbytes, total = pre + len;
    uint8_t *buf = p4n_pass_buf(S, total + 8);
    memset(buf, 0, {ig_w // 8});
    {nl.join(_pack("S->x_ig", scratch["ig"], "buf"))}
    memcpy(buf + {ig_w // 8}, md, (size_t)mdbytes); memcpy(buf + pre, data, (size_t)len);
    {parse("ingress_parser", "ip")}
    if (pos < (pre << 3)) return -4;
    {tail("ingress_deparser", "ingress", "id", tm_out + ["res[14] = S->x_tm._w;"])}
}}
/* TnaSwitch._egress_blocks in one call (i0..i7: EG_FIELDS); returns and res as p4n_ig_pass. */
int64_t p4n_eg_pass(inst_t *S, const char *data, int64_t len, uint64_t i0, uint64_t i1, uint64_t i2, uint64_t i3,
                    uint64_t i4, uint64_t i5, uint64_t i6, uint64_t i7, uint64_t ns_t, double t, uint64_t pass_id,
                    uint64_t orig_len, int reads_err, char *out, int64_t *res) {{
    p4n_begin(S, t, orig_len, pass_id);
    memset(&S->x_eh, 0, sizeof S->x_eh); memset(&S->x_em, 0, sizeof S->x_em); memset(&S->x_eg, 0, sizeof S->x_eg);
    memset(&S->x_ep, 0, sizeof S->x_ep); memset(&S->x_ed, 0, sizeof S->x_ed); memset(&S->x_eo, 0, sizeof S->x_eo);
    {nl.join(ones_e)}
    {nl.join(set_eg)}
    S->x_eg._v = 1;
    S->x_ep.f_global_tstamp = ns_t & p4n_mask(48);
    int64_t total = {eg_w // 8} + len;
    uint8_t *buf = p4n_pass_buf(S, total + 8);
    memset(buf, 0, {eg_w // 8});
    {nl.join(_pack("S->x_eg", scratch["eg"], "buf"))}
    memcpy(buf + {eg_w // 8}, data, (size_t)len);
    {parse("egress_parser", "ep")}
    {tail("egress_deparser", "egress", "ed", [])}
}}
"""
    return fields, code
