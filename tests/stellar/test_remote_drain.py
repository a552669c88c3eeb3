"""Drain detection and queues *downstream* of this switch.

The drain point proves a flow's packets left this switch's queue, not that they left the next
hop's.  The controller's congestion level of the flow's current member is its estimate of that
downstream queue (e.g. the spine's congested downlink), so a drain move waits
``drain_margin_us + level(current member)`` after the flow's last departure.  Control: the same
flow with level 0 moves as soon as the plain margin has passed.
"""
from scapy.all import Ether
from scapy.contrib.roce import BTH

from testkit.leaf import CHANGE_DRAIN, UPLINK_PATH_SET, roce

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


# ------------------------------------------------------------------------------------------------
# An unmeasured level is unknown, not 0.  The rendered entries carry level 0 on every uplink; until
# the controller's first histogram reading of a member's remote hop, the leaf cannot know how deep
# that hop's queue is.  Two switches on lock-stepped virtual clocks: the Stellar leaf, and behind
# its OLD uplink a second Stellar switch (the spine) whose downlink drains at one packet per µs, so
# a burst the leaf sends in one microsecond is still queued there tens of µs later.  NEW reaches the
# destination directly (an idle spine: no queue).  The leaf's own queues are unlimited: the burst
# drains locally at once, so the local drain proof holds after the plain margin.
BURST = 40           # packets the spine holds: its downlink needs 40 us for them
SPINE_IN, SPINE_DOWN = 1, 3
PROBE_AT = 20        # > margin (8 us) after the burst left the leaf; < 40 us: the spine still queues


def _through_spine(leaf, spine, measured: int) -> list[int]:
    """PSNs in the order they reach the destination; the leaf's path set is [OLD, NEW] with both
    levels 0 and ``measured`` as the ``measured`` bitmap when the probe arrives."""
    leaf.set_params(flowlet_timeout_us=100_000, gap_moves=0, drain_moves=1, drain_margin_us=MARGIN,
                    hysteresis_us=1)
    leaf.hint("hint_elephant", SRC, DST, QP)
    leaf.set_path_set(UPLINK_PATH_SET, [OLD], modify=True)  # placed on OLD: the only member
    spine.set_path_set(UPLINK_PATH_SET, [SPINE_DOWN], modify=True)
    spine.sw.set_queue_rate(1_000_000, SPINE_DOWN)  # 1 packet per virtual us
    arrived: list[int] = []
    sends = {0: list(range(BURST)), PROBE_AT: [BURST]}
    for t in range(PROBE_AT + BURST + 20):
        if t:
            spine.advance(1)
        arrived += [Ether(f)[BTH].psn for _, f in spine.sw.take_output()]  # left the spine by t
        if t:
            leaf.advance(1)
        if t == 1:
            # NEW joins, both levels 0: OLD's is the rendered one (measured bit 0 = unknown).
            # The burst's bytes in OLD's utilisation estimate make NEW the better member.
            leaf.set_path_set(UPLINK_PATH_SET, [OLD, NEW], [0, 0], modify=True, measured=measured)
        for psn in sends.get(t, ()):
            leaf.send(1, roce(SRC, DST, QP, psn, payload=1000))
        for port, frame in leaf.sw.take_output():
            if port == OLD:
                spine.send(SPINE_IN, frame)
            else:
                assert port == NEW
                arrived.append(Ether(frame)[BTH].psn)
    assert sorted(arrived) == list(range(BURST + 1)), "every packet reached the destination"
    return arrived


def _late(psns: list[int]) -> int:
    """Packets that arrived behind a higher PSN (what the responder sees as reordering)."""
    top, late = -1, 0
    for psn in psns:
        late += psn < top
        top = max(top, psn)
    return late


def test_no_drain_move_off_an_unmeasured_member(leaf, stellar_program):
    import p4sim
    from testkit.leaf import Leaf

    spine = Leaf(p4sim, stellar_program)
    order = _through_spine(leaf, spine, measured=0b10)  # NEW measured (idle), OLD never measured
    assert _late(order) == 0 and order == list(range(BURST + 1))
    assert leaf.path_changes(CHANGE_DRAIN) == 0  # the probe stayed on OLD, behind the burst


def test_control_trusting_an_unmeasured_level_0_reorders(leaf, stellar_program):
    """Negative control: the same run with OLD's rendered level 0 taken as a measurement (what
    the program did before the measured bit): the probe moves at the plain margin and overtakes
    the burst still queued on the spine."""
    import p4sim
    from testkit.leaf import Leaf

    spine = Leaf(p4sim, stellar_program)
    order = _through_spine(leaf, spine, measured=0b11)
    assert leaf.path_changes(CHANGE_DRAIN) == 1
    assert order.index(BURST) < order.index(BURST - 1)  # the probe arrived before the burst's tail
    assert _late(order) > 0
