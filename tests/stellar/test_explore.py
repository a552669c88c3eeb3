"""Exploration under pressure (issue 32, item 3): a flow whose host pair keeps receiving
congestion signals (CNPs on the reverse path) while its member scores best at this switch tries
the next best member at its next safe point.

Scenario, on the virtual clock: uplink 3 sends one packet per 10 us, uplink 4 is unlimited; the
controller's level of 4 is 500 us (stale or wrong: what this leaf cannot check), so 3 scores best
here and no ordinary move ever leaves it (hysteresis 10 ms).  A RoCE flow bursts 20 packets onto 3
and keeps sending 2 packets every 40 us; the receiver's NIC sends CNPs back (4 of them, through
uplink 3 into the leaf).  The flow explores port 4 once its packets on 3 have all left (the drain
proof), never before.  Negative controls: no exploration without the signals; without the drain
proof (move guard cleared) the explore move overtakes the flow's own queued packets.
"""
from __future__ import annotations

from testkit.leaf import (CHANGE_DRAIN, CHANGE_EXPLORE, CHANGE_GAP, ING, MOVE_GUARD_DRAIN_PROOF, OP_CNP,
                                UPLINK_PATH_SET, Leaf, psns_in_order, roce)

SRC, DST, QP, SENDER_QP = "10.0.1.1", "10.0.2.9", 0x4343, 0x4344
SLOW, FAST = 3, 4
BURST, ROUND_PKTS, ROUND_GAP_US, ROUNDS = 20, 2, 40, 25


FRESH_SLOT = (2 << 3) | 0    # feedback entry of (leaf 2, member position 0)


def _fresh_feedback_on_the_slow_path(leaf: Leaf) -> None:
    """Path feedback on (this leaf is leaf 1, DST behind leaf 2), and an entry for the flow's
    member (position 0, port SLOW) that arrived just now: the switch sees that path."""
    leaf.sw.set_default_action(f"{ING}.feedback_lookup.params", f"{ING}.feedback_lookup.set_feedback",
                               {"enabled": 1, "leaf_id": 1, "max_age_us": 500, "suspect_silence_us": 0,
                                "retx_threshold": 0, "retx_window_us": 1000, "suspect_hold_us": 2000})
    leaf.sw.insert_entry(f"{ING}.feedback_lookup.dest_leaf", {"hdr.ipv4.dst_addr": ("10.0.2.0", 24)},
                         f"{ING}.feedback_lookup.set_dest_leaf", {"leaf_id": 2})
    leaf.sw.register_write("fb_to_stamp", FRESH_SLOT, max(1, int(leaf.sw.now_us)))


def _run(leaf: Leaf, cnps: int = 4, ecmp: bool = False, qp: int = QP, fresh: bool = False) -> dict:
    leaf.set_params(flowlet_timeout_us=1000, hysteresis_us=10_000)
    leaf.sw.set_queue_rate(100_000, port=SLOW)
    leaf.set_path_set(UPLINK_PATH_SET, [SLOW, FAST], [0, 500], modify=True, ecmp=ecmp)
    if fresh:
        _fresh_feedback_on_the_slow_path(leaf)
    psn = 0
    for _ in range(BURST):
        leaf.send(1, roce(SRC, DST, qp, psn))
        psn += 1
    for _ in range(cnps):
        leaf.advance(1)
        leaf.send(SLOW, roce(DST, SRC, SENDER_QP, 0, opcode=OP_CNP))
    departures, first_fast = [], None
    for _ in range(ROUNDS):
        leaf.advance(ROUND_GAP_US - 1)
        if fresh:
            leaf.sw.register_write("fb_to_stamp", FRESH_SLOT, int(leaf.sw.now_us))
        sent_at = int(leaf.sw.now_us)
        for _ in range(ROUND_PKTS):
            leaf.send(1, roce(SRC, DST, qp, psn))
            psn += 1
        leaf.advance(1)
        out = [d for d in leaf.drain_output() if d.qp == qp]
        if first_fast is None and any(d.port == FAST for d in out):
            first_fast = sent_at
        departures += out
    departures += [d for d in leaf.drain_output(settle_us=2000) if d.qp == qp]
    return {"psns": psns_in_order(departures, qp), "ports": [d.port for d in departures],
            "explore": leaf.path_changes(CHANGE_EXPLORE), "drain": leaf.path_changes(CHANGE_DRAIN),
            "gap": leaf.path_changes(CHANGE_GAP), "reorders": leaf.reorder_total(), "first_fast": first_fast}


def test_congestion_signals_move_a_locally_best_flow_at_its_drain_point(leaf):
    leaf.set_adapt(explore_signals=4, explore_window_us=1000)
    run = _run(leaf)
    assert len(run["psns"]) == BURST + ROUND_PKTS * ROUNDS
    assert run["explore"] == 1 and run["drain"] == 0 and run["gap"] == 0
    assert run["psns"] == sorted(run["psns"]) and run["reorders"] == 0
    ports = run["ports"]
    assert max(i for i, p in enumerate(ports) if p == SLOW) < min(i for i, p in enumerate(ports) if p == FAST)
    assert run["first_fast"] is not None and run["first_fast"] >= 200   # the burst needed ~200 us


def test_fresh_feedback_on_its_path_means_no_exploration(leaf):
    """With fresh feedback the member's score already holds its remote congestion; CNPs it does
    not explain come from the destination (its host port), which no member avoids.  The same run
    without the entry is the exploring run above."""
    leaf.set_adapt(explore_signals=4, explore_window_us=1000)
    run = _run(leaf, fresh=True)
    assert len(run["psns"]) == BURST + ROUND_PKTS * ROUNDS
    assert run["explore"] == 0 and set(run["ports"]) == {SLOW}


def test_control_without_signals_the_flow_stays_on_the_locally_best_port(leaf):
    leaf.set_adapt(explore_signals=4, explore_window_us=1000)
    run = _run(leaf, cnps=3)                     # below the threshold
    assert run["explore"] == 0 and set(run["ports"]) == {SLOW}


def test_control_exploration_off_ignores_the_signals(leaf):
    leaf.set_adapt(explore_signals=0)
    run = _run(leaf)
    assert run["explore"] == 0 and set(run["ports"]) == {SLOW}


def test_control_explore_without_the_drain_proof_reorders(leaf):
    leaf.set_adapt(explore_signals=4, explore_window_us=1000, move_guards=0xF & ~MOVE_GUARD_DRAIN_PROOF)
    run = _run(leaf)
    assert run["explore"] >= 1
    assert run["reorders"] > 0 and run["psns"] != sorted(run["psns"])


def test_signals_older_than_the_window_do_not_count(leaf):
    leaf.set_adapt(explore_signals=4, explore_window_us=2)   # 4 CNPs 1 us apart span 3 us
    run = _run(leaf)
    assert run["explore"] == 0


def test_an_ecmp_path_set_never_explores(leaf):
    """ECMP keeps each flow on its hash member whatever the signals (the same run as the first
    test, which explores, with the path set in ECMP mode)."""
    leaf.set_adapt(explore_signals=4, explore_window_us=1000)
    leaf.set_path_set(UPLINK_PATH_SET, [SLOW, FAST], [0, 500], modify=True, ecmp=True)
    qp = next(q for q in range(QP, QP + 64, 2) if _hash_port(leaf, q) == SLOW)  # a flow ECMP puts on SLOW
    run = _run(leaf, ecmp=True, qp=qp)
    assert run["explore"] == 0 and set(run["ports"]) == {SLOW}
    assert run["psns"] == sorted(run["psns"]) and run["reorders"] == 0


def _hash_port(leaf: Leaf, qp: int) -> int:
    """The port one packet of ``qp`` leaves on (PSN 2^24 - 1: the run's PSN 0 comes next)."""
    leaf.send(1, roce(SRC, DST, qp, 0xFFFFFF))
    return next(d.port for d in leaf.drain_output(settle_us=100) if d.qp == qp)
