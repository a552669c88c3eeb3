"""Drain detection and queues *downstream* of this switch.

The drain point proves a flow's packets left this switch's queue, not that they left the next
hop's.  The controller's congestion level of the flow's current member is its estimate of that
downstream queue (e.g. the spine's congested downlink), so a drain move waits
``drain_margin_us + level(current member)`` after the flow's last departure.  Control: the same
flow with level 0 moves as soon as the plain margin has passed.
"""
from tests.stellar.leaf import CHANGE_DRAIN, UPLINK_PATH_SET, roce

SRC, DST, QP = "10.0.1.1", "10.0.2.9", 0x5151
OLD, NEW = 3, 4
MARGIN = 8


def _moves_at(leaf, remote_level: int, probe_times: list[int]) -> list[int]:
    """Place a hinted elephant on OLD, make NEW cheaper with OLD's level = ``remote_level``
    (the remote part of OLD's score), then send one packet at each probe time; returns the
    egress port of each probe."""
    leaf.set_params(flowlet_timeout_us=100_000, gap_moves=0, drain_moves=1, drain_margin_us=MARGIN,
                    hysteresis_us=1)
    leaf.hint("hint_elephant", SRC, DST, QP)
    leaf.set_path_set(UPLINK_PATH_SET, [OLD, NEW], [0, 1000], modify=True)
    leaf.send(1, roce(SRC, DST, QP, 0))  # placed on OLD; departs at once (unlimited rate)
    assert {d.port for d in leaf.drain_output()} == {OLD}
    # Now the controller reports OLD's remote hop congested and NEW free.
    leaf.set_path_set(UPLINK_PATH_SET, [OLD, NEW], [remote_level, 0], modify=True)
    ports, now, psn = [], 0, 1
    for t in probe_times:
        leaf.advance(t - now)
        now = t
        leaf.send(1, roce(SRC, DST, QP, psn))
        psn += 1
        ports += [d.port for d in leaf.drain_output()]
        leaf.advance(0)
    return ports


def test_drain_move_waits_for_the_remote_queue_of_the_old_path(leaf):
    # Last departure at t=0.  Probes at 20 us and 60 us keep it "recent"; each probe that stays
    # on OLD restarts the clock, so probe spacing must exceed margin + level to move.
    ports = _moves_at(leaf, remote_level=100, probe_times=[20, 60, 200])
    assert ports[:2] == [OLD, OLD]      # 20 and 40 us after a departure < 8 + 100
    assert ports[2] == NEW              # 140 us after the last departure >= 108
    assert leaf.path_changes(CHANGE_DRAIN) == 1


def test_control_without_remote_congestion_the_plain_margin_suffices(leaf):
    leaf.set_params()
    ports = _moves_at(leaf, remote_level=5, probe_times=[20])
    # 20 us >= 8 + 5: the move happens at the first probe (NEW scores 0 < OLD's 5, beyond hysteresis 1)
    assert ports == [NEW]
    assert leaf.path_changes(CHANGE_DRAIN) == 1
