"""The ordering rule under every move kind at once (issue 32, item 3): a flow never changes
(port, queue) while an earlier packet of it could still leave after a later one.

Randomised traffic on the virtual clock, per seed: eight RoCE flows (half hinted elephants, half
mice, so both queues per port are used) over two rate-limited uplinks, bursts of random size, the
controller's levels changing every 50 us, CNPs arriving for random host pairs; gap, drain and
explore moves all enabled, with a short flowlet timeout.  Every flow's PSNs must leave in order
and the switch's own detector must count nothing, while the flows do move (the run is not
vacuous).  Negative control: the same runs without the drain proof reorder.
"""
from __future__ import annotations

import random

import pytest

from testkit.leaf import (CHANGE_DRAIN, CHANGE_EXPLORE, CHANGE_GAP, MOVE_GUARD_DRAIN_PROOF, OP_CNP,
                                UPLINK_PATH_SET, Leaf, roce)

FLOWS = [(f"10.0.1.{1 + i % 2}", f"10.0.2.{10 + i}", 0x700 + i) for i in range(8)]
SEEDS = (1, 2, 3, 4)


def _run(leaf: Leaf, seed: int) -> tuple[dict[int, list[int]], dict[int, int], int]:
    rng = random.Random(seed)
    # odd seeds: a short flowlet timeout (gap moves win); even: a long one (drain moves)
    leaf.set_params(flowlet_timeout_us=30 if seed % 2 else 1000, hysteresis_us=2)
    leaf.set_adapt(explore_signals=2, explore_window_us=300)
    leaf.sw.set_queue_rate(100_000, port=3)
    leaf.sw.set_queue_rate(150_000, port=4)
    for src, dst, qp in FLOWS[::2]:
        leaf.hint("hint_elephant", src, dst, qp)
    psn = {qp: 0 for _, _, qp in FLOWS}
    seen: dict[int, list[int]] = {qp: [] for _, _, qp in FLOWS}
    for step in range(200):
        if step % 5 == 0:
            leaf.set_path_set(UPLINK_PATH_SET, [3, 4], [rng.choice((0, 20, 80)), rng.choice((0, 20, 80))],
                              modify=True)
        for src, dst, qp in rng.sample(FLOWS, 1):
            for _ in range(rng.choice((1, 1, 2, 4))):
                port = 1 if src.endswith(".1") else 2
                leaf.send(port, roce(src, dst, qp, psn[qp]))
                psn[qp] += 1
        if rng.random() < 0.3:
            src, dst, qp = rng.choice(FLOWS)
            leaf.send(rng.choice((3, 4)), roce(dst, src, qp + 0x100, 0, opcode=OP_CNP))
        leaf.advance(rng.choice((5, 10, 20, 40)))
        for d in leaf.drain_output():
            if d.qp in seen:
                seen[d.qp].append(d.psn)
    for d in leaf.drain_output(settle_us=5000):
        if d.qp in seen:
            seen[d.qp].append(d.psn)
    moves = {r: leaf.path_changes(r) for r in (CHANGE_GAP, CHANGE_DRAIN, CHANGE_EXPLORE)}
    return seen, moves, leaf.reorder_total()


@pytest.mark.parametrize("seed", SEEDS)
def test_no_move_kind_reorders(stellar_program, seed):
    import p4sim
    seen, moves, reorders = _run(Leaf(p4sim, stellar_program), seed)
    assert moves[CHANGE_EXPLORE] > 0 and moves[CHANGE_GAP if seed % 2 else CHANGE_DRAIN] > 0, moves
    assert all(psns == sorted(psns) for psns in seen.values()), seen
    assert reorders == 0


def test_control_without_the_drain_proof_the_same_traffic_reorders(stellar_program):
    import p4sim
    total = 0
    for seed in SEEDS:
        leaf = Leaf(p4sim, stellar_program)
        leaf.set_adapt(move_guards=0xF & ~MOVE_GUARD_DRAIN_PROOF)
        _, _, reorders = _run(leaf, seed)
        total += reorders
    assert total > 0
