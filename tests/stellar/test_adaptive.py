"""Adaptive path choice vs ECMP (issue 4, "Adaptive routing")."""
from __future__ import annotations

from testkit.leaf import CHANGE_NEW, UPLINK_PATH_SET, roce

SRC, DST = "10.0.1.1", "10.0.2.40"
HOT, COOL = 3, 4


def _congest_hot_uplink(leaf, *, ecmp: bool) -> None:
    """Park a 30-packet backlog on port 3 (100 kpps) and let 5 packets leave, so the egress
    pipeline has reported a ~50 us queue delay for port 3; port 4 stays idle."""
    leaf.sw.set_queue_rate(100_000, port=HOT)
    leaf.set_path_set(UPLINK_PATH_SET, [HOT, COOL], [0, 1000], modify=True)  # pin the hog to 3
    for psn in range(30):
        leaf.send(1, roce(SRC, DST, qp=1, psn=psn))
    leaf.set_path_set(UPLINK_PATH_SET, [HOT, COOL], ecmp=ecmp, modify=True)  # levels back to 0
    leaf.advance(50)
    leaf.drain_output()


def _place_new_flows(leaf, n=24) -> dict[int, int]:
    for qp in range(1000, 1000 + n):
        leaf.send(2, roce("10.0.1.2", DST, qp=qp, psn=0))
    out = leaf.drain_output(settle_us=1000)
    return {d.qp: d.port for d in out if d.qp >= 1000}


def test_new_flows_avoid_the_congested_uplink(leaf):
    _congest_hot_uplink(leaf, ecmp=False)
    placed = _place_new_flows(leaf)
    assert len(placed) == 24
    assert set(placed.values()) == {COOL}


def test_control_ecmp_mode_ignores_congestion(leaf):
    _congest_hot_uplink(leaf, ecmp=True)
    placed = _place_new_flows(leaf)
    assert len(placed) == 24
    on_hot = sum(1 for p in placed.values() if p == HOT)
    assert 0 < on_hot < 24, f"ECMP should hash flows onto both uplinks, got {on_hot} of 24 on {HOT}"


def test_controller_congestion_level_steers_new_flows(leaf):
    leaf.set_path_set(UPLINK_PATH_SET, [HOT, COOL], [0, 500], modify=True)
    placed = _place_new_flows(leaf)
    assert set(placed.values()) == {HOT}
    assert leaf.path_changes(CHANGE_NEW) == 24


def test_equal_paths_are_shared_by_flow_hash(leaf):
    placed = _place_new_flows(leaf, n=32)
    on_hot = sum(1 for p in placed.values() if p == HOT)
    assert 8 <= on_hot <= 24, f"ties should spread flows, got {on_hot} of 32 on port {HOT}"


def test_stale_queue_delay_expires(leaf):
    _congest_hot_uplink(leaf, ecmp=False)
    leaf.set_params(qdelay_max_age_us=100)
    leaf.advance(2000)                           # backlog gone, nothing left port 3 since
    leaf.drain_output()
    placed = _place_new_flows(leaf, n=32)
    assert HOT in placed.values(), "an idle port's old delay reading must not keep repelling flows"


def test_reservation_overrides_the_lpm_path_set(leaf):
    from testkit.leaf import ING
    leaf.set_path_set(77, [COOL])
    leaf.sw.insert_entry(f"{ING}.routing.reservation",
                         {"hdr.ipv4.src_addr": ("10.0.1.2", 0xFFFFFFFF), "hdr.ipv4.dst_addr": (DST, 0xFFFFFFFF)},
                         f"{ING}.routing.reserve_path_set", {"path_set_id": 77}, priority=1)
    leaf.set_path_set(UPLINK_PATH_SET, [HOT, COOL], [0, 500], modify=True)  # LPM set prefers HOT
    placed = _place_new_flows(leaf, n=8)
    assert set(placed.values()) == {COOL}
