"""p4sim's TNA pipe: one test per rule of the six-block Tofino pipeline, each with the case
that must not happen (or the other branch of the rule) next to it."""
from __future__ import annotations

import crcmod.predefined
import pytest
import zlib
from pathlib import Path

import p4sim
from p4sim.errors import CompileError, Unsupported
from p4sim.runtime.tna import TnaRuleError
from p4sim.runtime.tna_switch import TnaSwitch
from tnakit import build, eth, ipv4, line_of


def run(prog, packets, port=1, **kw):
    sw = p4sim.Switch(prog, **kw)
    for p in packets:
        sw.send(port, p)
    return sw, sw.take_output()


def test_tna_program_runs_on_the_tofino_pipe_and_forwards_by_ucast_egress_port(tmp_path):
    prog, _ = build(tmp_path)
    assert prog.ir.arch == "tna" and prog.ir.tofino_target == 1
    sw, out = run(prog, [eth()])
    assert isinstance(sw, TnaSwitch)
    assert out == [(2, eth())]


def test_unset_ucast_egress_port_means_no_destination(tmp_path):
    prog, _ = build(tmp_path, ig_apply="md.x = 1;")
    sw, out = run(prog, [eth()])
    assert out == [] and sw.stats["no_destination"] == 1
    # written to 0 is a destination (port 0), not "unset"
    prog0, _ = build(tmp_path, "p0.p4", ig_apply="ig_tm_md.ucast_egress_port = 0;")
    assert run(prog0, [eth()])[1] == [(0, eth())]


def test_ingress_parser_sees_intrinsic_then_port_metadata_before_the_packet(tmp_path):
    # ig_intr_md carries the port and a ns timestamp; the port metadata follows it
    prog, _ = build(tmp_path, ig_apply="""
        ig_tm_md.ucast_egress_port = 2;
        hdr.eth.src = ig_intr_md.ingress_mac_tstamp;
        hdr.eth.dst = (bit<48>) ig_intr_md.ingress_port;
    """)
    sw = p4sim.Switch(prog)
    sw.advance(1.5)  # us
    sw.send(7, eth())
    (port, data), = sw.take_output()
    assert int.from_bytes(data[6:12], "big") == 1500  # ns
    assert int.from_bytes(data[0:6], "big") == 7
    # without skipping the port metadata the "Ethernet" header is the port metadata (zeros)
    bad, _ = build(tmp_path, "bad.p4", ig_parser_skip="")
    sw2, out = run(bad, [eth()])
    assert out and out[0][1] != eth()


def test_port_metadata_unpack_reads_what_the_control_plane_set(tmp_path):
    prog, _ = build(tmp_path, decls="struct port_md_t { bit<16> tag; bit<48> rest; }",
                    ig_parser_skip="md.y = (bit<32>) port_metadata_unpack<port_md_t>(pkt).tag;",
                    ig_apply="ig_tm_md.ucast_egress_port = 2; hdr.eth.etype = (bit<16>) md.y;")
    sw = p4sim.Switch(prog)
    sw.set_port_metadata(1, 0xBEEF << 48)
    sw.send(1, eth())
    sw.send(3, eth())  # no metadata set for port 3: zeros
    out = sw.take_output()
    assert [d[12:14] for _, d in out] == [b"\xbe\xef", b"\x00\x00"]


PAIR = """
Register<pair_t, bit<8>>(16, {0, 0}) flows;
RegisterAction<pair_t, bit<8>, bit<32>>(flows) bump = {
    void apply(inout pair_t v, out bit<32> rv) {
        v.lo = v.lo + 1;
        v.hi = (bit<32>) hdr.eth.etype;
        rv = v.lo;
    }
};
RegisterAction<pair_t, bit<8>, bit<32>>(flows) peek = {
    void apply(inout pair_t v, out bit<32> rv) { rv = v.hi; }
};
"""


def test_register_action_is_one_read_modify_write_of_a_paired_cell(tmp_path):
    prog, _ = build(tmp_path, ig_locals=PAIR, ig_apply="""
        ig_tm_md.ucast_egress_port = 2;
        md.x = bump.execute(hdr.eth.src[7:0]);
        hdr.eth.dst = (bit<48>) md.x;
    """)
    sw, out = run(prog, [eth(src=3), eth(src=3), eth(src=4)])
    assert [int.from_bytes(d[0:6], "big") for _, d in out] == [1, 2, 1]
    assert sw.register_read("Ig.flows", 3) == (2 << 32) | 0x88B5  # lo (first field) high
    assert sw.register_read("Ig.flows", 5) == 0


def test_two_accesses_to_one_register_in_a_pass_is_an_error(tmp_path):
    prog, path = build(tmp_path, ig_locals=PAIR, ig_apply="""
        ig_tm_md.ucast_egress_port = 2;
        md.x = bump.execute(0);
        md.y = peek.execute(0);
    """)
    sw = p4sim.Switch(prog)
    with pytest.raises(TnaRuleError) as ei:
        sw.send(1, eth())
    assert f"prog.p4:{line_of(path, 'md.y = peek')}" in str(ei.value)
    assert "one access per register per packet" in str(ei.value)
    # the same two actions on exclusive branches: one access per packet, allowed
    ok, _ = build(tmp_path, "ok.p4", ig_locals=PAIR, ig_apply="""
        ig_tm_md.ucast_egress_port = 2;
        if (hdr.eth.src == 1) { md.x = bump.execute(0); } else { md.y = peek.execute(0); }
    """)
    sw2, out = run(ok, [eth(src=1), eth(src=2), eth(src=1)])
    assert len(out) == 3 and sw2.register_read("Ig.flows", 0) >> 32 == 2


def test_a_register_belongs_to_one_gress(tmp_path):
    with pytest.raises(CompileError) as ei:
        build(tmp_path, decls="""
            Register<bit<32>, bit<8>>(4) shared;
        """, ig_locals="""
            RegisterAction<bit<32>, bit<8>, bit<32>>(shared) w = {
                void apply(inout bit<32> v) { v = 7; } };
        """, ig_apply="ig_tm_md.ucast_egress_port = 2; w.execute(0);",
              eg_locals="""
            RegisterAction<bit<32>, bit<8>, bit<32>>(shared) r = {
                void apply(inout bit<32> v, out bit<32> rv) { rv = v; } };
        """, eg_apply="md.x = r.execute(0);")
    assert "belongs to one gress" in ei.value.message and ei.value.pos.line > 0


def test_tofino_register_cells_are_at_most_a_pair_of_32_bits(tmp_path):
    with pytest.raises(CompileError) as ei:
        build(tmp_path, ig_locals="Register<bit<48>, bit<8>>(4) wide;")
    assert "bit<48>" in ei.value.message
    assert ei.value.pos.file.endswith("prog.p4")


RATE_LIMIT = """
Register<bit<32>, bit<8>>(4, 0) last;
RegisterAction<bit<32>, bit<8>, bit<1>>(last) due = {
    void apply(inout bit<32> v, out bit<1> rv) {
        rv = 0;
        if (COND) { v = md.x; rv = 1; }
    }
};
"""


def _rate_limited(tmp_path, cond: str, name: str = "prog.p4"):
    """md.x = now (the eth source), md.y = the interval or now - interval; forward if due."""
    return build(tmp_path, name, ig_locals=RATE_LIMIT.replace("COND", cond), ig_apply="""
        md.x = (bit<32>) hdr.eth.src;
        md.y = INTERVAL;
        if (due.execute(0) == 1) { ig_tm_md.ucast_egress_port = 2; }
    """.replace("INTERVAL", "md.x - 100" if "md.y - v" in cond else "100"))


def test_a_stateful_alu_compare_takes_one_phv_operand(tmp_path):
    # the form bfas refused in feedback.last_report: `now - v >= interval`, two PHV inputs
    with pytest.raises(CompileError) as ei:
        _rate_limited(tmp_path, "md.x - v >= md.y")
    assert "one PHV operand" in ei.value.message and "md.x" in ei.value.message
    assert ei.value.pos.file.endswith("prog.p4")
    assert ei.value.pos.line == line_of(tmp_path / "prog.p4", "if (md.x - v >= md.y)")
    # the same test with the interval subtracted outside: one PHV input per compare, accepted,
    # and it rate-limits (the packet at 50 is not due, at 150 it is, at 200 not)
    prog, _ = _rate_limited(tmp_path, "md.y - v < 32w0x80000000 || md.x - v >= 32w0x80000000",
                            "ok.p4")
    _, out = run(prog, [eth(src=50), eth(src=150), eth(src=200), eth(src=260)])
    assert len(out) == 2


def test_a_stateful_alu_compare_takes_one_half_of_the_cell(tmp_path):
    with pytest.raises(CompileError) as ei:
        build(tmp_path, ig_locals="""
            Register<pair_t, bit<8>>(4, {0, 0}) cells;
            RegisterAction<pair_t, bit<8>, bit<32>>(cells) grow = {
                void apply(inout pair_t v, out bit<32> rv) {
                    rv = 0;
                    if (v.hi - v.lo > 10) { rv = 1; }
                }
            };
        """, ig_apply="md.x = grow.execute(0); ig_tm_md.ucast_egress_port = 2;")
    assert "one register operand" in ei.value.message and "v.hi" in ei.value.message


def _crc_msb_first(data: bytes, poly: int, width: int, init: int, xorout: int) -> int:
    """A plain shift-register CRC (not reflected), written out so the test does not trust the
    library p4sim uses."""
    reg, top, mask = init, 1 << (width - 1), (1 << width) - 1
    for byte in data:
        reg ^= byte << (width - 8)
        for _ in range(8):
            reg = ((reg << 1) ^ poly) & mask if reg & top else (reg << 1) & mask
    return reg ^ xorout


def test_crc_helper_matches_the_catalogue_check_value():
    assert _crc_msb_first(b"123456789", 0x1021, 16, 0xFFFF, 0) == 0x29B1  # CRC-16/CCITT-FALSE


def test_hash_crc16_crc32_and_custom_polynomial(tmp_path):
    prog, _ = build(tmp_path, ig_locals="""
        Hash<bit<16>>(HashAlgorithm_t.CRC16) h16;
        Hash<bit<32>>(HashAlgorithm_t.CRC32) h32;
        CRCPolynomial<bit<16>>(16w0x1021, false, false, false, 16w0xFFFF, 16w0) ccitt;
        Hash<bit<16>>(HashAlgorithm_t.CUSTOM, ccitt) hc;
        Hash<bit<8>>(HashAlgorithm_t.CRC32) h8;
    """, ig_apply="""
        ig_tm_md.ucast_egress_port = 2;
        hdr.eth.dst[15:0] = h16.get({hdr.eth.src, hdr.eth.etype});
        hdr.eth.dst[47:16] = h32.get({hdr.eth.src, hdr.eth.etype});
        hdr.eth.src[15:0] = hc.get({hdr.eth.etype});
        hdr.eth.src[23:16] = h8.get({hdr.eth.etype});
    """)
    _, out = run(prog, [eth(src=0x0102030405, etype=0x1234)])
    d = out[0][1]
    key = (0x0102030405).to_bytes(6, "big") + b"\x12\x34"
    assert int.from_bytes(d[4:6], "big") == crcmod.predefined.mkCrcFun("crc-16")(key)
    assert int.from_bytes(d[0:4], "big") == zlib.crc32(key)
    assert int.from_bytes(d[10:12], "big") == _crc_msb_first(b"\x12\x34", 0x1021, 16, 0xFFFF, 0)
    assert d[9] == zlib.crc32(b"\x12\x34") & 0xFF  # W low bits of the CRC


def test_bridged_header_reaches_the_egress_parser_after_egress_intrinsic_metadata(tmp_path):
    prog, _ = build(tmp_path, ig_apply="""
        ig_tm_md.ucast_egress_port = 2;
        hdr.bridge.setValid();
        hdr.bridge.a = 0xCAFE;
        hdr.bridge.b = (bit<32>) ig_intr_md.ingress_port;
    """, ep_body="""
        pkt.extract(hdr.bridge);
        pkt.extract(hdr.eth);
    """, eg_apply="""
        hdr.eth.etype = hdr.bridge.a[15:0] + (bit<16>) hdr.bridge.b;
        hdr.bridge.setInvalid();
    """)
    _, out = run(prog, [eth()], port=5)
    assert out == [(2, eth(etype=0xCAFE + 5))]
    # not removed in egress, the bridged header goes out on the wire
    keep, _ = build(tmp_path, "keep.p4", ig_apply="""
        ig_tm_md.ucast_egress_port = 2; hdr.bridge.setValid(); hdr.bridge.a = 1;
    """, ep_body="pkt.extract(hdr.bridge); pkt.extract(hdr.eth);")
    _, out2 = run(keep, [eth()])
    assert len(out2[0][1]) == len(eth()) + 8


def test_queue_depth_is_in_cells_and_delay_in_ns(tmp_path):
    prog, _ = build(tmp_path, eg_apply="""
        hdr.eth.src = (bit<48>) eg_intr_md.enq_qdepth;
        hdr.eth.dst = (bit<48>) eg_intr_md.deq_timedelta;
    """)
    sw = p4sim.Switch(prog)
    sw.set_queue_rate(1000)  # 1 ms per packet
    big = eth(payload=b"\x00" * 186)  # 200 B = 3 cells of 80 B
    for _ in range(3):
        sw.send(1, big)
    sw.advance(5000)
    out = sw.take_output()
    # the first packet finds the port idle and leaves at once; the third has the second's
    # 3 cells ahead of it
    assert [int.from_bytes(d[6:12], "big") for _, d in out] == [0, 0, 3]
    # deq_timedelta: ns, in tna.p4's 18 bits (the 2nd packet waited 1 ms, the 3rd 2 ms)
    assert [int.from_bytes(d[0:6], "big") for _, d in out] == [0, 1_000_000 & 0x3FFFF,
                                                                2_000_000 & 0x3FFFF]


def test_t2na_has_32_bit_stamps_and_7_bit_queue_ids(tmp_path):
    prog, _ = build(tmp_path, include="t2na.p4", eg_apply="""
        hdr.eth.dst = (bit<48>) eg_intr_md.deq_timedelta;
    """, ig_apply="ig_tm_md.ucast_egress_port = 2; ig_tm_md.qid = 100;")
    assert prog.ir.arch == "t2na" and prog.ir.tofino_target == 2
    sw = p4sim.Switch(prog, priority_queues=8)
    sw.send(1, eth())
    assert sw.stats["qid_invalid"] == 1  # qid 100 fits QueueId_t (7 bits) but no such queue
    prog2, _ = build(tmp_path, "t2.p4", include="t2na.p4",
                     eg_apply="hdr.eth.dst = (bit<48>) eg_intr_md.deq_timedelta;")
    sw2 = p4sim.Switch(prog2)
    sw2.set_queue_rate(1000)
    sw2.send(1, eth())
    sw2.send(1, eth())
    sw2.advance(3000)
    assert int.from_bytes(sw2.take_output()[1][1][0:6], "big") == 1_000_000  # not truncated
    with pytest.raises(CompileError):  # 100 does not fit tna.p4's 5-bit QueueId_t on Tofino
        build(tmp_path, "t1.p4", ig_apply="ig_tm_md.qid = 8w100;")


def test_drop_ctl_drops_and_bypass_egress_skips_egress(tmp_path):
    prog, _ = build(tmp_path, ig_apply="ig_tm_md.ucast_egress_port = 2; ig_dprsr_md.drop_ctl = 1;")
    sw, out = run(prog, [eth()])
    assert out == [] and sw.stats["dropped"] == 1
    byp, _ = build(tmp_path, "b.p4", ig_apply="""
        ig_tm_md.ucast_egress_port = 2;
        ig_tm_md.bypass_egress = (bit<1>) (hdr.eth.src == 9);
    """, eg_apply="hdr.eth.etype = 0xEEEE;")
    _, out = run(byp, [eth(src=9), eth(src=1)])
    assert [d[12:14] for _, d in out] == [b"\x88\xb5", b"\xee\xee"]


def test_parser_error_drops_unless_the_program_reads_parser_err(tmp_path):
    prog, _ = build(tmp_path)
    sw, out = run(prog, [eth()[:10]])
    assert out == [] and sw.stats["malformed"] == 1 and sw.stats["dropped"] == 1
    reads, _ = build(tmp_path, "r.p4", ig_apply="""
        ig_tm_md.ucast_egress_port = 2;
        if (ig_prsr_md.parser_err != 0) {
            ig_tm_md.ucast_egress_port = 3;
            ig_tm_md.bypass_egress = 1;  /* the egress parser would fail on it too */
        }
    """)
    sw2, out2 = run(reads, [eth()[:10]])
    assert [p for p, _ in out2] == [3] and sw2.stats["malformed"] == 1


def test_digest_pack_in_the_ingress_deparser(tmp_path):
    prog, _ = build(tmp_path, id_locals="Digest<digest_t>(1) learn;", id_apply="""
        if (ig_dprsr_md.digest_type == 1) { learn.pack({hdr.eth.src, hdr.eth.etype}); }
    """, ig_apply="ig_tm_md.ucast_egress_port = 2; if (hdr.eth.src == 5) { ig_dprsr_md.digest_type = 1; }")
    sw, _ = run(prog, [eth(src=5), eth(src=6)])
    d = sw.digests()
    assert len(d) == 1 and d[0].name == "pipe.ID.learn" and d[0].fields[0] == ("src", 48, 5)


def test_checksum_update_in_the_deparser_is_the_ipv4_checksum(tmp_path):
    prog, _ = build(tmp_path, id_locals="Checksum() ck;", id_apply="""
        hdr.ipv4.csum = ck.update({hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.total_len,
                                   hdr.ipv4.id, hdr.ipv4.flags, hdr.ipv4.frag, hdr.ipv4.ttl,
                                   hdr.ipv4.proto, hdr.ipv4.src, hdr.ipv4.dst});
    """, ig_apply="ig_tm_md.ucast_egress_port = 2; hdr.ipv4.ttl = hdr.ipv4.ttl - 1;",
        ep_body="pkt.extract(hdr.eth); pkt.extract(hdr.ipv4);")
    _, out = run(prog, [ipv4(ttl=64)])
    ip = out[0][1][14:34]
    s = sum(int.from_bytes(ip[i:i + 2], "big") for i in range(0, 20, 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    assert s == 0xFFFF and ip[8] == 63  # a valid header checksum after the TTL change


def test_a_parser_checksum_that_subtracts_gets_the_residual(tmp_path):
    # bf-p4c's residual mode: get() after subtract() is the ones'-complement sum of every
    # header word not subtracted (what a deparser's update() adds to the new fields)
    prog, _ = build(tmp_path, ep_locals="Checksum() ck;", ep_body="""
        pkt.extract(hdr.eth); pkt.extract(hdr.ipv4);
        ck.subtract({hdr.ipv4.csum, hdr.ipv4.ttl, hdr.ipv4.proto});
        md.x = (bit<32>) ck.get();
    """, eg_apply="hdr.eth.src = (bit<48>) md.x;")
    def fold(s: int) -> int:
        while s >> 16:
            s = (s & 0xFFFF) + (s >> 16)
        return s

    pkt = bytearray(ipv4(ttl=64))
    words = [int.from_bytes(pkt[14 + i:16 + i], "big") for i in range(0, 20, 2)]
    pkt[24:26] = (0xFFFF ^ fold(sum(words))).to_bytes(2, "big")     # a valid header checksum
    _, out = run(prog, [bytes(pkt)])
    words = [int.from_bytes(out[0][1][14 + i:16 + i], "big") for i in range(0, 20, 2)]
    assert fold(sum(words)) == 0xFFFF
    rest = fold(sum(w for i, w in enumerate(words) if i not in (4, 5)))   # all but TTL/proto, csum
    assert int.from_bytes(out[0][1][6:12], "big") == rest


def test_a_parser_checksum_that_adds_cannot_get_a_residual(tmp_path):
    with pytest.raises(p4sim.CompileError, match="either verifies .* or computes a residual"):
        build(tmp_path, ep_locals="Checksum() ck;", ep_body="""
            pkt.extract(hdr.eth); pkt.extract(hdr.ipv4);
            ck.add({hdr.ipv4.csum, hdr.ipv4.ttl, hdr.ipv4.proto});
            md.x = (bit<32>) ck.get();
        """)


def test_resubmit_runs_ingress_again_with_the_resubmit_data(tmp_path):
    prog, _ = build(tmp_path, decls="header resub_h { bit<8> tag; bit<56> pad; }",
                    ig_parser_skip="""
        transition select(ig_intr_md.resubmit_flag) { 1: resubmitted; default: port_md; }
    }
    state port_md { pkt.advance(PORT_METADATA_SIZE); transition parse_eth; }
    state resubmitted {
        md.y = (bit<32>) pkt.lookahead<bit<8>>();
        pkt.advance(PORT_METADATA_SIZE);
    """, id_locals="Resubmit() rs;", id_apply="""
        if (ig_dprsr_md.resubmit_type == 1) { rs.emit<resub_h>({8w0x5A, 56w0}); }
    """, ig_apply="""
        ig_tm_md.ucast_egress_port = 2;
        if (ig_intr_md.resubmit_flag == 0) { ig_dprsr_md.resubmit_type = 1; }
        else { hdr.eth.etype = (bit<16>) md.y; }
    """)
    sw, out = run(prog, [eth()])
    assert sw.stats["resubmitted"] == 1 and [d[12:14] for _, d in out] == [b"\x00\x5a"]


def test_meter_red_is_3_in_tna(tmp_path):
    prog, _ = build(tmp_path, ig_locals="Meter<bit<8>>(4, MeterType_t.PACKETS) m;", ig_apply="""
        ig_tm_md.ucast_egress_port = 2;
        hdr.eth.dst = (bit<48>) m.execute(0);
    """)
    sw = p4sim.Switch(prog)
    sw.meter_set_config("Ig.m", 0, 1, 1, 1, 1)
    for _ in range(2):
        sw.send(1, eth())
    assert [d[5] for _, d in sw.take_output()] == [0, 3]


def test_counter_and_direct_counter_counted_by_the_action(tmp_path):
    prog, _ = build(tmp_path, ig_locals="""
        Counter<bit<32>, bit<8>>(4, CounterType_t.PACKETS_AND_BYTES) c;
        DirectCounter<bit<32>>(CounterType_t.PACKETS) dc;
        action counted() { dc.count(); ig_tm_md.ucast_egress_port = 2; }
        action silent() { ig_tm_md.ucast_egress_port = 3; }
        table t { key = { hdr.eth.src: exact; } actions = { counted; silent; }
                  default_action = silent; counters = dc; }
    """, ig_apply="t.apply(); c.count(1);")
    sw = p4sim.Switch(prog)
    sw.insert_entry("Ig.t", {"hdr.eth.src": 1}, "Ig.counted")
    sw.insert_entry("Ig.t", {"hdr.eth.src": 2}, "Ig.silent")
    for s in (1, 1, 2):
        sw.send(1, eth(src=s))
    assert sw.counter_read("Ig.c", 1) == (3, 3 * 60)
    assert sw.direct_counter_read("Ig.t", {"hdr.eth.src": 1})[0] == 2
    assert sw.direct_counter_read("Ig.t", {"hdr.eth.src": 2})[0] == 0  # hit, but no count()


@pytest.mark.parametrize("decl,what", [
    ("Lpf<bit<16>, bit<8>>(4) f;", "Lpf"),
    ("Wred<bit<19>, bit<8>>(4, 1, 0) w;", "Wred"),
    ("ActionProfile(16) ap;", "ActionProfile"),
])
def test_unmodelled_tna_externs_are_refused_at_their_position(tmp_path, decl, what):
    with pytest.raises(Unsupported) as ei:
        build(tmp_path, ig_locals=decl)
    e = ei.value
    assert what in e.message and e.pos.file.endswith("prog.p4") and e.pos.col > 1


def test_ghost_thread_is_refused(tmp_path):
    src = build.__globals__["source"](include="t2na.p4").replace(
        "Pipeline(IP(), Ig(), ID(), EP(), Eg(), ED()) pipe;",
        "control Gh(in ghost_intrinsic_metadata_t g) { apply { } }\n"
        "Pipeline(IP(), Ig(), ID(), EP(), Eg(), ED(), Gh()) pipe;")
    path = tmp_path / "g.p4"
    path.write_text(src)
    with pytest.raises(Unsupported) as ei:
        p4sim.compile(str(path))
    assert "ghost" in ei.value.message and ei.value.pos.line == line_of(path, "Gh()) pipe")


def test_p4info_of_a_tna_program(tmp_path):
    prog, _ = build(tmp_path, ig_locals=PAIR + "Counter<bit<32>, bit<8>>(4, CounterType_t.PACKETS) c;",
                    ig_apply="ig_tm_md.ucast_egress_port = 2; c.count(0); md.x = bump.execute(0);")
    info = prog.p4info
    assert info.pkg_info.arch == "tna"
    # bf-p4c prefixes tables and externs with the Pipeline instance's name, not actions
    assert [r.preamble.name for r in info.registers] == ["pipe.Ig.flows"]
    assert info.registers[0].preamble.id >> 24 == 0x16 and info.registers[0].size == 16
    assert [c.preamble.name for c in info.counters] == ["pipe.Ig.c"]
    assert all("apply" not in a.preamble.name for a in info.actions)  # RegisterAction bodies
    prog2, _ = build(tmp_path, "t.p4", ig_locals="""
        action fwd(PortId_t p) { ig_tm_md.ucast_egress_port = p; }
        table t { key = { hdr.eth.dst: exact; } actions = { fwd; } }
    """, ig_apply="t.apply();", id_locals="Digest<digest_t>(1) learn;",
        id_apply="if (ig_dprsr_md.digest_type == 1) { learn.pack({hdr.eth.src, hdr.eth.etype}); }")
    i2 = prog2.p4info
    assert [t.preamble.name for t in i2.tables] == ["pipe.Ig.t"]
    assert "Ig.fwd" in [a.preamble.name for a in i2.actions]
    assert [d.preamble.name for d in i2.digests] == ["pipe.ID.learn"]
    assert i2.digests[0].preamble.id >> 24 == 0x17


def test_v1model_program_still_gets_the_v1model_switch():
    from p4sim.switch import Switch
    prog = p4sim.compile(str(Path(__file__).resolve().parents[2] / "p4src/examples/l3.p4"))
    sw = p4sim.Switch(prog)
    assert type(sw) is Switch and prog.ir.arch == "v1model"


def test_deparser_externs_are_refused_outside_their_deparser(tmp_path):
    with pytest.raises(CompileError) as ei:
        build(tmp_path, ig_locals="Digest<digest_t>(1) d;",
              ig_apply="ig_tm_md.ucast_egress_port = 2; d.pack({hdr.eth.src, hdr.eth.etype});")
    assert "ingress deparser" in ei.value.message and ei.value.pos.line > 0


def test_direct_register_action_updates_the_hit_entrys_cell(tmp_path):
    prog, _ = build(tmp_path, ig_locals="""
        DirectRegister<bit<32>>(100) seen;
        DirectRegisterAction<bit<32>, bit<32>>(seen) bump = {
            void apply(inout bit<32> v, out bit<32> rv) { v = v + 1; rv = v; }
        };
        action hit() { md.x = bump.execute(); ig_tm_md.ucast_egress_port = 2; }
        action miss() { md.x = 0; ig_tm_md.ucast_egress_port = 2; }
        table t { key = { hdr.eth.src: exact; } actions = { hit; miss; }
                  default_action = miss; registers = seen; }
    """, ig_apply="t.apply(); hdr.eth.dst = (bit<48>) md.x;")
    sw = p4sim.Switch(prog)
    sw.insert_entry("Ig.t", {"hdr.eth.src": 1}, "Ig.hit")
    sw.insert_entry("Ig.t", {"hdr.eth.src": 2}, "Ig.hit")
    for s in (1, 1, 2, 1, 3):
        sw.send(1, eth(src=s))
    # each entry has its own cell, starting at the initial value 100; a miss touches none
    assert [int.from_bytes(d[0:6], "big") for _, d in sw.take_output()] == [101, 102, 101, 103, 0]


def test_direct_register_outside_its_tables_action_is_an_error(tmp_path):
    prog, _ = build(tmp_path, ig_locals="""
        DirectRegister<bit<32>>() seen;
        DirectRegisterAction<bit<32>, bit<32>>(seen) bump = {
            void apply(inout bit<32> v, out bit<32> rv) { v = v + 1; rv = v; }
        };
        action hit() { ig_tm_md.ucast_egress_port = 2; }
        table t { key = { hdr.eth.src: exact; } actions = { hit; } registers = seen; }
    """, ig_apply="t.apply(); md.x = bump.execute();")
    with pytest.raises(TnaRuleError) as ei:
        p4sim.Switch(prog).send(1, eth())
    assert "outside an action" in str(ei.value)


def test_ingress_mirror_sends_the_mirror_header_then_the_packet_to_the_session(tmp_path):
    prog, _ = build(tmp_path, decls="header mir_h { bit<8> tag; }",
                    id_locals="Mirror() m;", id_apply="""
        if (ig_dprsr_md.mirror_type == 1) { m.emit<mir_h>(10w5, {8w0x77}); }
    """, ig_apply="ig_tm_md.ucast_egress_port = 2; if (hdr.eth.src == 9) { ig_dprsr_md.mirror_type = 1; }",
                    ep_body="")
    sw = p4sim.Switch(prog)
    sw.set_clone_session(5, [4], truncate_bytes=20)
    sw.send(1, eth(src=9))
    sw.send(1, eth(src=1))                      # not mirrored
    out = sw.take_output()
    assert sorted(p for p, _ in out) == [2, 2, 4]
    (_, copy), = [(p, d) for p, d in out if p == 4]
    assert copy[0] == 0x77 and copy[1:] == eth(src=9)[:19]   # truncated to 20 bytes


def test_multicast_group_replicates_with_egress_rid(tmp_path):
    prog, _ = build(tmp_path, ig_apply="ig_tm_md.mcast_grp_a = 7;",
                    eg_apply="hdr.eth.etype = eg_intr_md.egress_rid;")
    sw = p4sim.Switch(prog)
    sw.set_mcast_group(7, [(2, 11), (3, 12)])
    sw.send(1, eth())
    assert sorted((p, d[12:14]) for p, d in sw.take_output()) == [(2, b"\x00\x0b"), (3, b"\x00\x0c")]


def test_copy_to_cpu_and_the_second_multicast_group(tmp_path):
    prog, _ = build(tmp_path, ig_apply="""
        ig_tm_md.ucast_egress_port = 2;
        ig_tm_md.copy_to_cpu = 1;
    """)
    sw = p4sim.Switch(prog, cpu_port=64)
    sw.send(1, eth())
    assert sorted(p for p, _ in sw.take_output()) == [2, 64]
    b, _ = build(tmp_path, "b.p4", ig_apply="ig_tm_md.mcast_grp_b = 3;")
    sw2 = p4sim.Switch(b)
    sw2.set_mcast_group(3, [5, 6])
    sw2.send(1, eth())
    assert sorted(p for p, _ in sw2.take_output()) == [5, 6]


# bf-p4c initialises user metadata only under @pa_auto_init_metadata; without it a field read
# before it is written holds what its PHV container held.  p4sim makes such a read all ones.
_READ_UNWRITTEN = dict(ig_apply="""
        ig_tm_md.ucast_egress_port = 2;
        hdr.eth.etype = md.x[15:0];
    """)


def test_metadata_read_before_written_is_not_zero_without_auto_init(tmp_path):
    prog, _ = build(tmp_path, **_READ_UNWRITTEN)
    _, out = run(prog, [eth()])
    assert [d[12:14] for _, d in out] == [b"\xff\xff"]


def test_metadata_is_zero_under_pa_auto_init_metadata(tmp_path):
    # control: the same program with the pragma (on any declaration: bf-p4c collects it as a
    # global pragma) reads zero
    prog, _ = build(tmp_path, decls="@pa_auto_init_metadata struct unused_t { bit<8> a; }",
                    **_READ_UNWRITTEN)
    _, out = run(prog, [eth()])
    assert [d[12:14] for _, d in out] == [b"\x00\x00"]


def test_metadata_written_by_the_parser_is_its_value_without_auto_init(tmp_path):
    prog, _ = build(tmp_path, ig_parser_skip="""
        pkt.advance(PORT_METADATA_SIZE);
        md.x = 0x1234;
    """, **_READ_UNWRITTEN)
    _, out = run(prog, [eth()])
    assert [d[12:14] for _, d in out] == [b"\x12\x34"]


def test_a_lossless_buffer_charges_and_pauses_the_port_a_packet_came_in_on(tmp_path):
    """The shared buffer accounts a TNA packet to its ingress port, so PFC pauses the sender
    (the fabric's lossless mode): XOFF names port 1, and what arrives after it fits the
    port's headroom.  Charged to no port (ingress -1, as a mirrored copy is), the XOFF would
    reach nobody and the headroom, which only real ports have, would drop the overflow."""
    from p4sim.buffer import BufferConfig

    prog, _ = build(tmp_path)
    sw = p4sim.Switch(prog)
    sw.set_queue_rate(1000)  # port 2 drains one packet per ms: the burst stays queued
    buf = sw.tm.set_buffer(BufferConfig(20_000, alpha=0.5, headroom_bytes={1: 3_000, 3: 3_000}))
    xoff: list[tuple[int, int, bool]] = []
    buf.on_pfc = lambda ingress, cls, on, t: xoff.append((ingress, cls, on))
    frame = eth(payload=b"\x00" * 986)  # 1000 B
    for _ in range(20):
        sw.send(1, frame)
        if xoff:
            break
    for _ in range(2):  # in flight while the pause travels: the headroom takes them
        sw.send(1, frame)
    assert xoff and {i for i, _, on in xoff if on} == {1}
    assert buf.headroom_drops == 0 and buf.drops == 0
    mirrored = sw.tm.enqueue(object(), 2, 0, sw.clock.now_us, 6_000, -1)  # no port: no headroom
    assert mirrored < 0 and buf.headroom_drops == 1
