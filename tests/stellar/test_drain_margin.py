"""The drain margin with fresh path feedback (flowlet.p4): drain_margin_us + 2 x the old path's
fresh level, on the virtual clock (tests/tna/test_stellar_tna_drain_margin.py is the TNA twin).

Feedback reports the worst hop beyond the port, and the packets behind the drain point still
cross two downstream hops (the spine's downlink and the destination's host port), so a fresh
level L counts twice.  Scenario: a hinted elephant on OLD (member 0), then path feedback for
OLD's path arrives at L = 50 us and NEW scores 0.  Downstream, OLD's packets are held for two
hops at the measured L.  The flow's probes at 60 us and 107 us after its previous departure stay
on OLD (both under 8 + 2 x 50 = 108, the first beyond 8 + 50), a probe exactly 108 us after moves,
and the arrivals stay in order.  Negative control: the same L as the controller's level (no fresh
entry) counts once, so the first probe, 60 us >= 8 + 50, moves and overtakes the packet OLD's
spine still holds.
"""
from __future__ import annotations

from testkit.leaf import CHANGE_DRAIN, ING, UPLINK_PATH_SET, Leaf, roce

SRC, DST, QP = "10.0.1.1", "10.0.2.9", 0x5252
OLD, NEW = 3, 4
MARGIN, LEVEL = 8, 50
HOLD_US = 2 * LEVEL                    # OLD's two downstream hops, each at the measured level
SLOT = (2 << 3) | 0                    # feedback entry of (leaf 2, member position 0 = OLD)
GAPS = (60, 107, 108)                  # each probe's distance from the previous one's departure


def _run(leaf: Leaf, fresh: bool) -> dict:
    leaf.set_params(flowlet_timeout_us=100_000, gap_moves=0, drain_moves=1, drain_margin_us=MARGIN,
                    hysteresis_us=1)
    leaf.sw.set_default_action(f"{ING}.feedback_lookup.params", f"{ING}.feedback_lookup.set_feedback",
                               {"enabled": 1, "leaf_id": 1, "max_age_us": 500, "suspect_silence_us": 0,
                                "retx_threshold": 0, "retx_window_us": 1000, "suspect_hold_us": 2000})
    leaf.sw.insert_entry(f"{ING}.feedback_lookup.dest_leaf", {"hdr.ipv4.dst_addr": ("10.0.2.0", 24)},
                         f"{ING}.feedback_lookup.set_dest_leaf", {"leaf_id": 2})
    leaf.hint("hint_elephant", SRC, DST, QP)
    leaf.set_path_set(UPLINK_PATH_SET, [OLD, NEW], [0, 1000], modify=True)
    leaf.advance(1)
    arrivals: list[tuple[int, int]] = []          # (arrival at the receiver, psn)
    ports: list[int] = []

    def send(psn: int) -> None:
        leaf.send(1, roce(SRC, DST, QP, psn))
        for d in leaf.drain_output():
            if d.qp == QP:
                ports.append(d.port)
                now = int(leaf.sw.now_us)
                arrivals.append((now + (HOLD_US if d.port == OLD else 0), d.psn))

    send(0)                                        # placed on OLD; departs at once
    if fresh:                                      # leaf 2 returned L for OLD's path just now
        leaf.sw.register_write("fb_to_metric", SLOT, LEVEL)
        leaf.sw.register_write("fb_to_stamp", SLOT, int(leaf.sw.now_us))
        leaf.set_path_set(UPLINK_PATH_SET, [OLD, NEW], [0, 0], modify=True)
    else:                                          # the controller's level, the same number
        leaf.set_path_set(UPLINK_PATH_SET, [OLD, NEW], [LEVEL, 0], modify=True)
    for psn, gap in enumerate(GAPS, start=1):
        leaf.advance(gap)
        send(psn)
    return {"ports": ports, "order": [psn for _, psn in sorted(arrivals)],
            "drain": leaf.path_changes(CHANGE_DRAIN)}


def test_a_drain_move_waits_twice_the_fresh_level_beyond_the_margin(leaf):
    run = _run(leaf, fresh=True)
    # 60 and 107 us after a departure: under 8 + 2 x 50; 108 us: exactly the margin, it moves
    assert run["ports"] == [OLD, OLD, OLD, NEW] and run["drain"] == 1
    assert run["order"] == [0, 1, 2, 3]            # behind everything OLD's hops still held


def test_control_the_level_counted_once_moves_early_and_reorders(leaf):
    run = _run(leaf, fresh=False)
    assert run["ports"] == [OLD, NEW, NEW, NEW] and run["drain"] == 1
    assert run["order"].index(1) < run["order"].index(0)   # psn 1 overtook psn 0 held on OLD's path
