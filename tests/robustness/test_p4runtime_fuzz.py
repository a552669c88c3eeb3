"""P4Runtime robustness of p4sim's server: random malformed batches under every atomicity
(state checked by reading everything back), edge requests, two roles writing at once, streams
cut mid-arbitration, and pipeline swaps under writes.  Small counts (CI);
``bench/fuzz_p4runtime.py --count N`` runs more."""
from __future__ import annotations


from p4sim.p4rt.client import load_p4info, update
from testkit.fake_switch import fake_p4info
from testkit.p4sim_process import REPO, compile_program
from testkit.p4runtime_fuzz import (concurrent_roles, edge_requests, lpm,
                                        pipeline_swap_while_writing, random_batches, snapshot,
                                        streams_cut_mid_arbitration, write_raw)


def test_random_batches_on_the_fake_switch(harness):
    c = harness.primary_with_pipeline()
    res = random_batches(c, fake_p4info(), count=120, seed=1)
    assert not res.violations, "\n".join(res.violations[:10])
    # The generator reaches refusals of several kinds and the all-or-none aborts.
    assert {"OK", "INVALID_ARGUMENT", "NOT_FOUND", "ABORTED"} <= set(res.codes), res.codes


def test_random_batches_on_the_real_core(real_harness, tmp_path):
    json_path, info_path = compile_program(REPO / "tests/p4rt/p4/match_kinds.p4", tmp_path)
    info = load_p4info(str(info_path))
    c = real_harness.client()
    c.set_pipeline(info, json_path.read_bytes())
    res = random_batches(c, info, count=80, seed=2)
    assert not res.violations, "\n".join(res.violations[:10])


def test_snapshot_sees_a_change(harness):
    """Negative control for the state checks: a successful write changes the snapshot."""
    c = harness.primary_with_pipeline()
    before = snapshot(c)
    assert write_raw(c, [update("INSERT", table_entry=lpm(c, 0x0A000000))])[1] == ["OK"]
    assert snapshot(c) != before


def test_edge_requests(harness):
    assert edge_requests(harness) == []


def test_two_roles_write_concurrently(harness):
    assert concurrent_roles(harness, per_role=60) == []


def test_streams_cut_mid_arbitration(harness):
    assert streams_cut_mid_arbitration(harness, count=12) == []


def test_pipeline_swap_while_writing(harness):
    assert pipeline_swap_while_writing(harness, writes=150, swaps=6) == []


def test_continue_on_error_batches_equal_one_write_per_update():
    from testkit.p4rt_harness import Harness
    from testkit.p4runtime_fuzz import twin_batches

    a, b = Harness(), Harness()
    try:
        res = twin_batches(a.primary_with_pipeline(), b.primary_with_pipeline(), fake_p4info(), count=60, seed=9)
    finally:
        a.close()
        b.close()
    assert not res.violations, "\n".join(res.violations[:10])
    assert res.codes["OK"] > 50 and len(set(res.codes) - {"OK"}) >= 3, res.codes  # a real mix
