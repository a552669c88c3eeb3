"""The native backend on p4sim's Tofino pipe against the reference: stellar.p4 (TNA) with the
lab leaf's rendered entries and with the test leaf's (digests on), byte-identical outputs and
identical register/counter/meter/table state, stats and digests over a few thousand seeded
mutated RoCEv2 frames (resubmits, mirrors to the recirculation port, tail drops, meters and
parser errors included; bench/fuzz_diff.py --backends runs 100,000+);
the TNA externs' C against the reference's Python; and the whole-program fallback."""
from __future__ import annotations

import random
import sys
from pathlib import Path

import crcmod
import pytest

import p4sim
from p4sim.native import NativeFallbackWarning
from p4sim.runtime.tna import TnaPipeline, TnaRuleError
from testkit.native_workloads import TNA_BUILDERS, lockstep

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tna"))
import tnakit  # noqa: E402
from tna_leaf import TnaLeaf, roce, udp  # noqa: E402


def stellar_tna_leaf(backend: str) -> tuple[p4sim.Switch, list[bytes]]:
    """The TNA test leaf (tests/tna/tna_leaf.py: entries as its controller writes them, digests
    of elephants and path changes on, the port-down packet generator) with RoCEv2 frames of
    several flows, classes, ECN marks and opcodes, and UDP; uplink 2 rate-limited and shallow,
    so that egress sees queue delay and feedback copies recirculate."""
    lf = TnaLeaf(backend=backend, elephant_bytes=2000, feedback_interval_ns=1000)
    lf.sw.set_queue_rate(20_000, port=2)
    lf.sw.set_queue_depth(3, port=2)
    frames = []
    for i in range(40):
        dst = "10.0.2.%d" % (1 + i % 7) if i % 5 else "10.0.1.1"
        frames.append(roce("10.0.1.%d" % (1 + i % 3), dst, qp=0x100 + i % 9, psn=i, dscp=(26, 46, 8)[i % 3],
                           ecn=(2, 1, 0)[i % 3], payload=64 + 8 * (i % 5), opcode=(4, 4, 0, 1, 2)[i % 5]))
    for i in range(8):
        frames.append(udp("10.0.1.%d" % (1 + i % 2), "10.0.2.9", sport=1000 + i))
    return lf.sw, frames


LEAF = (stellar_tna_leaf, (1, 1, 1, 2, 3))

FRAMES = {"stellar-tna": 2500, "stellar-tna-leaf": 1500}


@pytest.mark.parametrize("name", sorted(FRAMES))
def test_stellar_tna_is_identical_on_both_backends(name, monkeypatch):
    monkeypatch.setitem(TNA_BUILDERS, "stellar-tna-leaf", LEAF)  # (testkit does not import tests)
    result = lockstep(name, FRAMES[name], seed=11, check_every=1500)
    assert result["bad_frames"] == [] and result["bad_state"] == []
    assert result["stats_equal"] and result["digest_mismatches"] == 0
    assert result["transmitted"] > FRAMES[name] // 2
    if name == "stellar-tna-leaf":
        assert result["digests"] > 0, "no digest: their comparison would be vacuous"


def test_the_workload_exercises_what_it_compares():
    """Negative control of the comparison: the same traffic with a different seed for the
    switch's random numbers, or a register written behind one backend's back, differs."""
    from p4sim.native.compare import diff_state, state
    from testkit.native_workloads import traffic

    build, ports = TNA_BUILDERS["stellar-tna"]
    ref, frames = build("python")
    nat, _ = build("native")
    assert nat.pipeline.backend == "native" and type(ref.pipeline) is TnaPipeline
    meters = {n: [(c.tc, c.tp) for c in m.cells] for n, m in ref.pipeline.meters.items()}
    for sw in (ref, nat):
        for port, frame, gap in traffic(frames, 1000, 4, ports):
            sw.send(port, frame)
            if gap:
                sw.advance(gap)
    assert diff_state(state(ref), state(nat)) == []
    for key in ("resubmitted", "mirrored", "recirculated", "queue_full", "parser_error", "transmitted"):
        assert ref.stats.get(key, 0) > 0, key
    assert any([(c.tc, c.tp) for c in m.cells] != meters[n] for n, m in ref.pipeline.meters.items()), \
        "no meter bucket moved: the meters' comparison would be vacuous"
    busy = [n for n, r in nat.pipeline.registers.items() if any(r.cells)]
    assert len(busy) >= 8, busy
    reg = nat.pipeline.registers[busy[0]]
    i = next(k for k, v in enumerate(reg.cells) if v)
    reg.cells[i] ^= 1  # C memory: the comparison sees it
    assert diff_state(state(ref), state(nat)) == ["register " + busy[0]]


def test_the_block_by_block_path_is_identical_too():
    """The blocks one C call each (the path of a program whose blocks take other arguments than
    TnaSwitch passes, so that p4sim/native/tna_pass.py makes no whole-pass functions)."""
    from p4sim.native.compare import diff_state, state
    from testkit.native_workloads import traffic

    build, ports = LEAF
    ref, frames = build("python")
    nat, _ = build("native")
    assert nat.pipeline.ingress_pass is not None and nat.pipeline.egress_pass is not None
    nat.pipeline.ingress_pass = nat.pipeline.egress_pass = None
    outs = []
    for sw in (ref, nat):
        for port, frame, gap in traffic(frames, 800, 6, ports):
            sw.send(port, frame)
            if gap:
                sw.advance(gap)
        outs.append(sw.take_output())
    assert outs[0] == outs[1] and len(outs[0]) > 400
    assert diff_state(state(ref), state(nat)) == [] and ref.stats == nat.stats
    assert ref.stats.get("mirrored", 0) > 0 and ref.stats.get("resubmitted", 0) > 0


@pytest.mark.parametrize("algo,width", [("CRC8", 8), ("CRC16", 16), ("CRC32", 32)])
def test_predefined_crcs_match_the_reference_catalogue(tmp_path, algo, width):
    from p4sim.native.tna_pipeline import TnaNativeProgram
    from p4sim.runtime.tna import TnaHash

    prog = _hash_prog(tmp_path, f"Hash<bit<{width}>>(HashAlgorithm_t.{algo}) h;")
    _check_hash(prog)
    cw, poly, rev, init, xor = TnaHash._PREDEF[algo]
    fn = crcmod.mkCrcFun((1 << cw) | poly, initCrc=init ^ xor, rev=rev, xorOut=xor)
    lib = TnaNativeProgram(prog.ir).mod.lib
    rnd = random.Random(1)
    for n in range(0, 40):
        data = bytes(rnd.getrandbits(8) for _ in range(n))
        assert lib.p4n_crc_bytes(data, n, cw, poly, int(rev), init, xor) == fn(data)


@pytest.mark.parametrize("poly", [
    "CRCPolynomial<bit<16>>(0x1021, false, false, false, 0xFFFF, 0)",   # CRC-16/CCITT-FALSE
    "CRCPolynomial<bit<32>>(0x1EDC6F41, true, false, false, 0xFFFFFFFF, 0xFFFFFFFF)",  # CRC-32C
    "CRCPolynomial<bit<8>>(0x31, true, true, true, 0x12, 0x5)",  # msb and extend
])
def test_custom_crc_polynomials_match(tmp_path, poly):
    _check_hash(_hash_prog(tmp_path, f"{poly} p; Hash<bit<32>>(HashAlgorithm_t.CUSTOM, p) h;"))


def _hash_prog(tmp_path: Path, decl: str) -> p4sim.Program:
    """A program whose ingress writes a hash of the Ethernet addresses into the source address."""
    return tnakit.build(tmp_path, ig_locals=decl, ig_apply="""
        hdr.eth.src = (bit<48>) h.get({hdr.eth.dst, hdr.eth.etype, md.x[2:0]});
        ig_tm_md.ucast_egress_port = 2;
    """)[0]


def _check_hash(prog: p4sim.Program) -> None:
    rnd = random.Random(2)
    frames = [tnakit.eth(dst=rnd.getrandbits(48), etype=rnd.getrandbits(16)) for _ in range(50)]
    outs = {}
    for be in ("python", "native"):
        sw = p4sim.Switch(prog, backend=be)
        assert sw.pipeline.backend == be
        for f in frames:
            sw.send(1, f)
        outs[be] = sw.take_output()
    assert outs["python"] == outs["native"] and len(outs["python"]) == 50
    assert len({o[1][6:12] for o in outs["native"]}) > 40  # the hash varies with the input


def test_register_twice_in_a_pass_raises_as_the_reference(tmp_path):
    prog, _ = tnakit.build(tmp_path, ig_locals="""
        Register<bit<32>, bit<8>>(16) r;
        RegisterAction<bit<32>, bit<8>, bit<32>>(r) inc = { void apply(inout bit<32> v, out bit<32> o) { v = v + 1; o = v; } };
    """, ig_apply="""
        md.x = inc.execute(1);
        if (hdr.eth.etype == 0x88B6) { md.y = inc.execute(2); }
        ig_tm_md.ucast_egress_port = 2;
    """)
    errs = {}
    for be in ("python", "native"):
        sw = p4sim.Switch(prog, backend=be)
        sw.send(1, tnakit.eth())
        with pytest.raises(TnaRuleError) as e:
            sw.send(1, tnakit.eth(etype=0x88B6))
        errs[be] = (str(e.value), sw.pipeline.registers["pipe.Ig.r"].cells[1])
    assert errs["python"] == errs["native"]
    assert "already accessed in this pass" in errs["native"][0]


def test_an_unsupported_construct_falls_back_whole_with_one_warning(tmp_path):
    prog, path = tnakit.build(tmp_path, ig_locals="""
        DirectCounter<bit<32>>(CounterType_t.PACKETS) dc;
        action hit() { dc.count(); }
        table t { key = { hdr.eth.etype : exact; } actions = { hit; } counters = dc; size = 4; }
    """, ig_apply="""
        t.apply();
        ig_tm_md.ucast_egress_port = 2;
    """)
    with pytest.warns(NativeFallbackWarning) as caught:
        sw = p4sim.Switch(prog, backend="native")
        p4sim.Switch(prog, backend="native")
    assert len(caught) == 1
    msg = str(caught[0].message)
    assert "direct counter/meter/register of table pipe.Ig.t" in msg and f"{path.name}:" in msg, msg
    assert type(sw.pipeline) is TnaPipeline
