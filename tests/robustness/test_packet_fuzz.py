"""Packet robustness of the Stellar pipeline on p4sim: mutated and hypothesis-made frames, zero
crashes, zero hangs, every drop counted under a reason, forwarding intact afterwards.  Small
counts here (CI); ``bench/fuzz_packets.py --count 100000`` runs the full campaign."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import p4sim
from testkit.packet_fuzz import (base_frame, campaign_leaf, forwards_normally, mutate,
                                      mutated_frames, run_campaign)
from testkit.leaf import STELLAR_P4, Leaf, roce

HYPO = settings(max_examples=150, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture(scope="module")
def program():
    return p4sim.compile(str(STELLAR_P4))


@pytest.fixture(scope="module")
def fuzz_leaf(program):
    """One leaf for the whole module: state left by one case is part of what the next one meets."""
    return campaign_leaf(p4sim, program)


def test_structure_aware_mutations(fuzz_leaf):
    res = run_campaign(fuzz_leaf, mutated_frames(seed=11, count=1500))
    assert res.ok, res.summary() + "\n" + "\n".join(res.crashes[:5] + res.hangs[:5] + res.accounting)
    # The corpus reaches the program's drop reasons and malformed kinds, not only one of them.
    assert len(res.drops_by_reason) >= 6 and res.delivered > 100, res.summary()
    assert len(res.malformed_by_kind) >= 5, res.malformed_by_kind


def test_mutations_with_malformed_l4_forwarded(program):
    """The other malformed-L4 policy (forward as non-RoCE): same guarantees."""
    leaf = campaign_leaf(p4sim, program)
    leaf.set_params(malformed_l4_forward=1)
    res = run_campaign(leaf, mutated_frames(seed=12, count=600))
    assert res.ok, res.summary() + "\n" + "\n".join(res.crashes[:5] + res.hangs[:5] + res.accounting)


def test_the_same_seed_gives_the_same_corpus():
    a = list(mutated_frames(seed=5, count=50))
    assert a == list(mutated_frames(seed=5, count=50))
    assert a != list(mutated_frames(seed=6, count=50))


@HYPO
@given(data=st.binary(min_size=0, max_size=300), port=st.sampled_from([1, 2, 3, 4]))
def test_raw_bytes(fuzz_leaf, data, port):
    res = run_campaign(fuzz_leaf, [(port, data, "hypothesis raw")])
    assert not (res.crashes or res.hangs or res.accounting), res.summary()


@HYPO
@given(seed=st.integers(min_value=0, max_value=2**32 - 1), port=st.sampled_from([1, 3]))
def test_hypothesis_driven_structured_mutations(fuzz_leaf, seed, port):
    import random

    rng = random.Random(seed)
    data, what = mutate(base_frame(rng), rng)
    res = run_campaign(fuzz_leaf, [(port, data, what)])
    assert not (res.crashes or res.hangs or res.accounting), res.summary()


def test_switch_forwards_normally_after_the_hypothesis_runs(fuzz_leaf):
    assert forwards_normally(fuzz_leaf)


def test_accounting_catches_a_frame_lost_without_a_reason(program):
    """Negative control: a port that is down in the target (not in the program) loses frames
    that no drop reason counts; the campaign must flag them."""
    leaf = Leaf(p4sim, program)
    leaf.sw.set_port_up(3, False)
    leaf.sw.set_port_up(4, False)
    res = run_campaign(leaf, [(1, roce("10.0.1.1", "10.0.2.7", qp=1, psn=k), "to a dead uplink")
                              for k in range(4)])
    assert res.accounting and not res.ok


def test_forwarding_check_catches_a_broken_switch(program):
    """Negative control: without its routes the switch does not 'forward normally'."""
    leaf = Leaf(p4sim, program)
    leaf.sw.clear_table("StellarIngress.routing.lpm")
    assert not forwards_normally(leaf)


def test_hang_detection(program, monkeypatch):
    """Negative control: a send that never returns is reported as a hang, and the run goes on."""
    leaf = Leaf(p4sim, program)
    real_send = leaf.sw.send

    def stuck(port, data):
        if data == b"stuck":
            while True:
                pass
        return real_send(port, data)

    monkeypatch.setattr(leaf.sw, "send", stuck)
    res = run_campaign(leaf, [(1, b"stuck", "loops"), (1, roce("10.0.1.1", "10.0.2.7", qp=1, psn=1), "ok")],
                       hang_s=0.3)
    assert len(res.hangs) == 1 and res.delivered == 1


def test_differential_harness_against_the_in_process_leaf(program, tmp_path):
    """bench/fuzz_diff.py's target side (a `p4sim run` process on nanomsg, the leaf's entries
    replayed over P4Runtime, sentinel-delimited outputs) gives the in-process leaf's decisions;
    with the routes left out it does not (negative control).  BMv2 runs through the same code
    when installed (bench/fuzz_packets.py --bmv2)."""
    from testkit.differential import classify, run_target
    from testkit.packet_fuzz import mutated_frames

    frames = list(mutated_frames(seed=3, count=60))
    leaf = campaign_leaf(p4sim, program)
    expected = []
    for port, data, what in frames:
        leaf.send(port, data)
        leaf.advance(50)
        expected.append(classify([(p, bytes(f)) for p, f in leaf.sw.take_output()]))
    assert sum(e != "drop" for e in expected) >= 5  # the sample forwards some frames
    run = run_target("p4sim", frames, tmp_path / "ok")
    assert run.lost_sentinels == 0 and run.decisions == expected
    from testkit.leaf import REMOTE_SUBNET

    no_remote_route = lambda call: call[2] == {"hdr.ipv4.dst_addr": REMOTE_SUBNET}  # noqa: E731
    broken = run_target("p4sim", frames, tmp_path / "broken", skip=no_remote_route)
    assert broken.lost_sentinels == 0
    assert broken.decisions != expected


def test_differential_against_bmv2(tmp_path):
    """Where BMv2 is installed (PATH or /opt/p4tools/bin): the same corpus through p4sim run and
    simple_switch_grpc, every forwarding decision equal.  Skipped with the reason otherwise."""
    from testkit.differential import bmv2_missing, differential

    missing = bmv2_missing()
    if missing:
        pytest.skip(f"differential vs BMv2: {missing}")
    res = differential(seed=21, count=200, grace_s=0.05)  # a wide grace: CI machines are busy
    assert res.a.lost_sentinels == 0 and res.b.lost_sentinels == 0
    assert res.agreement == 1.0, res.text()
