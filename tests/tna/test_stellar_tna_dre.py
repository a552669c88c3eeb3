"""Stellar on Tofino: the utilisation estimate (DRE) and the controller's member levels.

A group of four uplinks (ports 2..5).  New flows choose by the estimate of bytes each member
was given in this and the previous 16 us window, normalised by the port's rate through the
dre.level<k> range tables (a 40 % port's levels are 40 % as wide), plus the controller's level
of the member (dre_base.levels).  Flows that start at the same instant see each other: a choosing
packet is resubmitted with its choice and its second pass adds its bytes before the next
packet chooses.  The flows used here all hash to one member, so following the hash (estimator
off: the negative control) piles them onto one uplink.  The last tests combine the estimate
with the congestion feedback's best member (params.dre_delay_penalty levels for the others)."""
from __future__ import annotations

from collections import Counter

import pytest

from control_plane.contract import TNA_DRE_SCORE_SCALE, TNA_DRE_UNIT_BYTES

from tna_leaf import CHANGE_NEW, ING, TnaLeaf, roce

G4 = 5
PORTS = {0: 2, 1: 3, 2: 4, 3: 5}
DST = "10.0.5.9"
PAYLOAD = 1000            # IPv4 total length 1044 B: 16 units of 64 B per packet
UNITS_PER_LEVEL = 1024 // TNA_DRE_UNIT_BYTES   # a full-rate port's level here is 1 KiB wide


def four_uplinks(dre: bool = True, rates: dict[int, float] | None = None,
                 target: int = 1, no_dre: bool = False) -> TnaLeaf:
    """``no_dre``: the profile without the estimate, which has no level tables to fill."""
    leaf = TnaLeaf(target=target, feedback=False, dre=dre, no_dre=no_dre)
    sw = leaf.sw
    sw.insert_entry(f"{ING}.routing.lpm", {"hdr.ipv4.dst_addr": (0x0A000500, 24)},
                    f"{ING}.routing.set_group", {"group": G4, "count": 4, "prior": 0})
    for m, port in PORTS.items():
        sw.insert_entry(f"{ING}.member_port.members", {"meta.group": G4, "meta.chosen": m},
                        f"{ING}.member_port.set_port", {"port": port})
    for i in range(8):
        sw.insert_entry(f"{ING}.path_choice.hash_member",
                        {"meta.group": G4, "meta.flow_hash[2:0]": i},
                        f"{ING}.path_choice.set_hashed", {"member": i % 4})
    rates = rates or {}
    for m in ([] if no_dre else PORTS):   # the controller's quantised division by the port's rate
        width = max(1, round(UNITS_PER_LEVEL * rates.get(m, 1.0)))
        for level in range(64):
            sw.insert_entry(f"{ING}.dre.level{m}",
                            {"meta.group": G4, "meta.prior": 0,
                             f"q{m}": (level * width, level * width + width - 1)},
                            f"{ING}.dre.set_level{m}", {"level": TNA_DRE_SCORE_SCALE * level}, priority=1)
    return leaf


def send_flow(leaf: TnaLeaf, qp: int, psn: int = 0) -> int:
    leaf.send(roce("10.0.1.1", DST, qp, psn, payload=PAYLOAD))
    (port, _), = leaf.out()
    return port


_HASHED: dict[int, list[int]] = {}


def qps_hashing_to(member: int, n: int = 16) -> list[int]:
    """QPs whose flow hash picks `member` (found on a leaf that follows the hash)."""
    if member not in _HASHED:
        leaf = four_uplinks(dre=False)
        _HASHED[member] = [q for q in range(1, 400) if send_flow(leaf, q) == PORTS[member]][:n]
    assert len(_HASHED[member]) == n
    return _HASHED[member]


@pytest.mark.parametrize("target", [1, 2], ids=["tofino", "tofino2"])
def test_sixteen_flows_starting_together_spread_over_four_uplinks(target):
    leaf = four_uplinks(target=target)
    counts = Counter(send_flow(leaf, q) for q in qps_hashing_to(0))   # no clock advance
    assert set(counts) == set(PORTS.values())
    assert all(3 <= c <= 5 for c in counts.values()), counts
    assert leaf.counter(f"{ING}.telemetry.path_changes", CHANGE_NEW) == 16
    assert leaf.sw.stats["resubmitted"] == 16      # one second pass per new flow


@pytest.mark.parametrize("no_dre", [False, True], ids=["dre-off", "no-dre-profile"])
def test_negative_control_without_the_estimate_flows_follow_the_hash(no_dre):
    # the DRE switched off by the controller, or the profile without it (Tofino-1; there the
    # controller's switch is left on, which that profile ignores): with no feedback yet, new
    # flows take their hash member, in one pass
    leaf = four_uplinks(dre=no_dre, no_dre=no_dre)
    counts = Counter(send_flow(leaf, q) for q in qps_hashing_to(0))
    assert counts == {PORTS[0]: 16}               # all on the hash member's uplink
    assert leaf.sw.stats["resubmitted"] == 0


def test_a_forty_percent_uplink_gets_proportionally_fewer_new_flows():
    leaf = four_uplinks(rates={3: 0.4})
    counts = Counter(send_flow(leaf, q) for q in qps_hashing_to(3))
    slow = counts[PORTS[3]]
    fast = [counts[PORTS[m]] for m in (0, 1, 2)]
    # proportional share: 16 * 0.4 / 3.4 = 1.9 flows
    assert 1 <= slow <= 3 and all(f > slow for f in fast), counts


def test_negative_control_an_equal_rate_table_gives_the_slow_uplink_an_equal_share():
    leaf = four_uplinks()                          # the controller did not write the 40 %
    counts = Counter(send_flow(leaf, q) for q in qps_hashing_to(3))
    assert counts[PORTS[3]] >= 4, counts


def _load_member_1(leaf: TnaLeaf) -> None:
    busy = qps_hashing_to(1)[0]
    for psn in range(6):                           # one flow, kept on member 1: ~6 levels
        assert send_flow(leaf, busy, psn) == PORTS[1]


def test_the_estimate_decays_after_two_windows():
    leaf = four_uplinks()
    _load_member_1(leaf)
    leaf.sw.advance(40)                            # two 16.4 us windows later: the bytes are gone
    assert send_flow(leaf, qps_hashing_to(1)[1]) == PORTS[1]   # all equal: the hash member


def test_negative_control_the_previous_window_still_counts():
    leaf = four_uplinks()
    _load_member_1(leaf)
    leaf.sw.advance(20)                            # the next window: last window's bytes count
    assert send_flow(leaf, qps_hashing_to(1)[1]) != PORTS[1]


def test_established_flows_count_their_bytes():
    leaf = four_uplinks()
    _load_member_1(leaf)
    assert send_flow(leaf, qps_hashing_to(1)[1]) != PORTS[1]   # member 1 is the busiest


def test_negative_control_a_new_flow_alone_takes_its_hash_member():
    leaf = four_uplinks()
    assert send_flow(leaf, qps_hashing_to(1)[1]) == PORTS[1]


def _levels(leaf: TnaLeaf, levels: list[int]) -> None:
    leaf.sw.insert_entry(f"{ING}.dre_base.levels", {"meta.group": G4}, f"{ING}.dre_base.set_levels",
                         {**{f"l{i}": TNA_DRE_SCORE_SCALE * v for i, v in enumerate(levels + [0] * (8 - len(levels)))},
                          "measured": 0xFF})


def test_the_controllers_level_keeps_new_flows_off_a_member():
    leaf = four_uplinks()
    _levels(leaf, [100, 0, 0, 0])                 # remote congestion behind member 0
    counts = Counter(send_flow(leaf, q) for q in qps_hashing_to(0))
    assert PORTS[0] not in counts and sum(counts.values()) == 16


def test_negative_control_level_zero_leaves_the_member_in_use():
    leaf = four_uplinks()
    _levels(leaf, [0, 0, 0, 0])
    counts = Counter(send_flow(leaf, q) for q in qps_hashing_to(0))
    assert counts[PORTS[0]] >= 3


def _two_uplinks_with_feedback_best(penalty: int) -> Counter:
    """The test leaf's group 1 (ports 2, 3) with DRE levels; feedback has named member 1
    (port 3) the best; then eight 1 KB flows start together."""
    from test_stellar_tna_paths import _feedback
    from tna_leaf import GROUP
    leaf = TnaLeaf(dre_delay_penalty=penalty)
    sw = leaf.sw
    for m in (0, 1):
        for level in range(64):
            sw.insert_entry(f"{ING}.dre.level{m}",
                            {"meta.group": GROUP, "meta.prior": 0,
                             f"q{m}": (level * UNITS_PER_LEVEL, level * UNITS_PER_LEVEL + UNITS_PER_LEVEL - 1)},
                            f"{ING}.dre.set_level{m}", {"level": TNA_DRE_SCORE_SCALE * level}, priority=1)
    leaf.send(_feedback(3, 1000), port=68)
    assert leaf.best() == 1
    ports = []
    for q in range(1, 9):
        leaf.send(roce("10.0.1.1", "10.0.2.9", q, 0, payload=PAYLOAD))
        ports += [p for p, _ in leaf.out()]
    return Counter(ports)


def test_queue_delay_and_utilisation_combine_feedback_best_takes_more_then_spills():
    counts = _two_uplinks_with_feedback_best(penalty=4)
    assert 5 <= counts[3] <= 7 and counts[2] >= 1, counts


def test_negative_controls_delay_alone_piles_up_and_utilisation_alone_splits_evenly():
    assert _two_uplinks_with_feedback_best(penalty=127) == Counter({3: 8})
    even = _two_uplinks_with_feedback_best(penalty=0)
    assert even[2] == even[3] == 4, even


# --- the rendered level rows' range: a loaded group is still ranked by its bytes -----------
# The render's dre.level<k> rows (control_plane.render_tna.dre_rows) span what the two-window
# estimate holds at line rate (64 levels of 6.4 KB at 100 Gbps).  With 1 KiB levels (the render
# before) every member above 64 KiB read the capped level 63, so a loaded group's choice was the
# feedback penalty alone: every new flow went to the member feedback named best, however many
# bytes it already had, and the others, given nothing, sent no feedback to take over with (the
# herding measured by bench/tna_congestion_probe.py).
FRAME_PAYLOAD = 4096      # the fabric's RoCE frames: ~4.1 KB IPv4 packets


def _loaded_pair_then_new_flows(rows) -> Counter:
    """Group 1 (member 0 = port 2, member 1 = port 3) with ``rows`` as its level tables; member 0
    is given 60 frames (~250 KB), member 1 20 (~80 KB), both within one window; feedback names
    member 0 best (it carries the traffic, so it is the one reporting); then eight new flows."""
    from test_stellar_tna_paths import _feedback
    from tna_leaf import GROUP
    leaf = TnaLeaf(feedback=False, dre_delay_penalty=16)   # the rendered penalty (16 levels)
    sw = leaf.sw
    for m in (0, 1):
        for r in rows:
            sw.insert_entry(f"{ING}.dre.level{m}", {"meta.group": GROUP, "meta.prior": 0, f"q{m}": (r["low"], r["high"])},
                            f"{ING}.dre.set_level{m}", {"level": TNA_DRE_SCORE_SCALE * r["level"]}, priority=1)
    hashed = {0: [], 1: []}
    plain = TnaLeaf(dre=False, feedback=False)   # new flows take their hash member
    for q in range(1000, 1100):
        hashed[{2: 0, 3: 1}[plain.flow_port(q)]].append(q)
    for member, frames in ((0, 60), (1, 20)):
        qp = hashed[member][0]                     # alone and equal: placed on its hash member
        for psn in range(frames):
            leaf.send(roce("10.0.1.1", "10.0.2.9", qp, psn, payload=FRAME_PAYLOAD))
            assert [p for p, _ in leaf.out()] == [UPLINK_PORT[member]]
    leaf.send(_feedback(2, 1000), port=68)
    assert leaf.best() == 0
    ports = []
    for qp in hashed[0][1:9]:
        leaf.send(roce("10.0.1.1", "10.0.2.9", qp, 0, payload=FRAME_PAYLOAD))
        ports += [p for p, _ in leaf.out()]
    return Counter(ports)


UPLINK_PORT = {0: 2, 1: 3}


def test_rendered_levels_rank_a_loaded_group_by_its_bytes():
    from control_plane.render_tna import dre_rows
    rows = dre_rows(100.0)
    assert len(rows) == 64 and (rows[0]["high"] + 1) * TNA_DRE_UNIT_BYTES == 6400   # 6.4 KB per level
    counts = _loaded_pair_then_new_flows(rows)
    # member 0: ~250 KB = level 38; member 1: ~80 KB = level 12, + the 16-level penalty
    assert counts == Counter({3: 8}), counts


def test_negative_control_capped_levels_send_every_new_flow_to_the_feedback_best():
    u = 1024 // TNA_DRE_UNIT_BYTES
    old = [{"level": j, "low": u * j, "high": u * j + u - 1 if j < 63 else 0xFFFF} for j in range(64)]
    counts = _loaded_pair_then_new_flows(old)             # 1 KiB levels: both members read 63
    assert counts == Counter({2: 8}), counts
