"""The placement signal for flows that start together (issue 8, item 3).

Queue delay alone is blind when flows start in the same microsecond: every queue is still empty,
so every member ties and the flows follow the hash.  The utilisation estimator (a CONGA-style
DRE per port, ``port_dre_ps``) moves when a packet is *assigned* to a port, normalised by the
port's configured rate (``placement.port_rate``), so the next new flow already sees the load the
previous one added.  Negative control: ``util_weight`` 0 (estimator off) -> the hash decides.
"""
from __future__ import annotations

from collections import Counter

from testkit.leaf import ING, Leaf, roce

SRC = "10.0.1.1"
WIDE_SUBNET, WIDE_SET, WIDE_PORTS = ("10.0.3.0", 24), 2, (3, 4, 5, 6)
DST = "10.0.3.7"


def _wide(leaf: Leaf, ports=WIDE_PORTS, *, ecmp: bool = False) -> None:
    leaf.sw.insert_entry(f"{ING}.routing.lpm", {"hdr.ipv4.dst_addr": WIDE_SUBNET},
                         f"{ING}.routing.set_path_set", {"path_set_id": WIDE_SET})
    leaf.set_path_set(WIDE_SET, list(ports), ecmp=ecmp)


def _rate(leaf: Leaf, port: int, gbps: float) -> None:
    leaf.sw.insert_entry(f"{ING}.placement.port_rate", {"standard_metadata.egress_spec": port},
                         f"{ING}.placement.set_rate", {"ps_per_byte": round(8000 / gbps)})


def _start_together(leaf: Leaf, qps) -> dict[int, int]:
    """One packet of every flow in the same microsecond (the clock does not move); qp -> port."""
    for qp in qps:
        leaf.send(1, roce(SRC, DST, qp, 0, payload=1000))
    return {d.qp: d.port for d in leaf.drain_output()}


def _hash_ports(stellar_program, p4sim, qps, ports=WIDE_PORTS) -> dict[int, int]:
    ref = Leaf(p4sim, stellar_program)
    _wide(ref, ports, ecmp=True)
    return _start_together(ref, qps)


QPS = range(0x100, 0x110)   # 16 flows; their hash spreads them unevenly over the four members


def test_sixteen_flows_starting_together_spread_evenly(leaf):
    _wide(leaf)
    per_port = Counter(_start_together(leaf, QPS).values())
    assert set(per_port) == set(WIDE_PORTS)
    assert all(3 <= n <= 5 for n in per_port.values()), per_port


def test_control_estimator_off_flows_starting_together_follow_the_hash(leaf, stellar_program):
    import p4sim
    hashed = _hash_ports(stellar_program, p4sim, QPS)
    assert max(Counter(hashed.values()).values()) >= 6, "pick flows whose hash is uneven"
    leaf.set_params(util_weight=0)
    _wide(leaf)
    assert _start_together(leaf, QPS) == hashed


def test_degraded_link_gets_proportionally_fewer_new_flows(leaf):
    # Two members, one at 40% of the other's rate: 28 flows split ~20:8 (1 : 0.4).
    _wide(leaf, (3, 4))
    _rate(leaf, 3, 100)
    _rate(leaf, 4, 40)
    per_port = Counter(_start_together(leaf, range(0x200, 0x200 + 28)).values())
    assert 19 <= per_port[3] <= 21 and 7 <= per_port[4] <= 9, per_port


def test_control_equal_rates_split_evenly(leaf):
    _wide(leaf, (3, 4))
    _rate(leaf, 3, 100)
    _rate(leaf, 4, 100)
    per_port = Counter(_start_together(leaf, range(0x200, 0x200 + 28)).values())
    assert per_port[3] == per_port[4] == 14, per_port


def test_dre_decays_per_window(leaf):
    _wide(leaf)
    _start_together(leaf, QPS)
    loaded = [leaf.register("port_dre_ps", p) for p in WIDE_PORTS]
    assert all(v > 0 for v in loaded)
    # 1000-byte payload frames at the default 100 Gb/s (80 ps per byte), 3-5 per port.
    assert all(3 * 1000 * 80 <= v <= 5 * 1100 * 80 for v in loaded), loaded
    # Forty windows later (2^5 us each) the estimate has decayed to nothing: a flow placed then
    # sees idle ports again and follows the rotation.
    leaf.advance(40 * 32)
    leaf.send(1, roce(SRC, DST, 0x300, 0, payload=1000))
    [d] = leaf.drain_output()
    assert leaf.register("port_dre_ps", d.port) == (len(roce(SRC, DST, 0x300, 0, payload=1000))) * 80


# ------------------------------------------------------------------------------------------------
# Rate-true scores and the capacity prior (issue 32, item 2).  The leaf's two uplinks both run at
# 100 Gb/s, but the path through port 4 ends on a link running at 40 Gb/s further on (a degraded
# spine downlink).  Nothing has been measured yet: the only knowledge is the controller's prior,
# each member's end-to-end bottleneck rate (path_choice.prior).  Twenty-eight equal flows start
# together; the fluid share of each path is its flows' rate, so the split that finishes first is
# the capacity split, 20:8 (WCMP's weights).

def _prior(leaf: Leaf, path_set: int, gbps: list[float], slot: int = 0) -> None:
    params = {"slot": slot}
    for i in range(8):
        params[f"ps{i}"] = round(8000 / gbps[i]) if i < len(gbps) else 0
        params[f"first{i}"] = i
    leaf.sw.insert_entry(f"{ING}.path_choice.prior", {"meta.route.path_set_id": path_set},
                         f"{ING}.path_choice.set_prior", params)


def _slowest_path_load(per_port: Counter, gbps: dict[int, float]) -> float:
    """Flows per Gb/s on the most loaded path: what sets the finish time of equal flows."""
    return max(per_port[p] / g for p, g in gbps.items())


BOTTLENECK = {3: 100.0, 4: 40.0}


def test_capacity_prior_spreads_new_flows_by_end_to_end_capacity(leaf):
    _wide(leaf, (3, 4))
    _prior(leaf, WIDE_SET, [BOTTLENECK[3], BOTTLENECK[4]])
    per_port = Counter(_start_together(leaf, range(0x200, 0x200 + 28)).values())
    assert 19 <= per_port[3] <= 21 and 7 <= per_port[4] <= 9, per_port
    assert _slowest_path_load(per_port, BOTTLENECK) <= 0.23      # ~ 28 flows / 140 Gb/s = 0.2


def test_control_without_the_prior_the_remote_40g_path_gets_half_the_flows(leaf):
    _wide(leaf, (3, 4))
    per_port = Counter(_start_together(leaf, range(0x200, 0x200 + 28)).values())
    assert per_port[3] == per_port[4] == 14, per_port
    assert _slowest_path_load(per_port, BOTTLENECK) >= 0.35      # 14 flows on 40 Gb/s


def test_configured_rate_overloads_a_40g_uplink_that_the_operating_rate_spares(leaf, stellar_program):
    """Rate-true: port 4 is configured 100G but runs at 40G.  With the configured rate in
    placement.port_rate (what is rendered) the split is even and the 40G link carries half of the
    flows; with the operating rate the controller writes from port status it carries its share."""
    import p4sim
    real = {3: 100.0, 4: 40.0}
    biased = Leaf(p4sim, stellar_program)
    _wide(biased, (3, 4))
    _rate(biased, 3, 100)
    _rate(biased, 4, 100)                                       # configured, not operating
    per_biased = Counter(_start_together(biased, range(0x200, 0x200 + 28)).values())
    _wide(leaf, (3, 4))
    _rate(leaf, 3, real[3])
    _rate(leaf, 4, real[4])
    per_true = Counter(_start_together(leaf, range(0x200, 0x200 + 28)).values())
    assert _slowest_path_load(per_biased, real) >= 0.35
    assert _slowest_path_load(per_true, real) <= 0.23


def _repeated(leaf: Leaf, first1: int) -> Counter:
    """Set [3, 3, 4], port 3's path at 40 Gb/s end to end, port 4's at 100 Gb/s."""
    _wide(leaf, (3, 3, 4))
    params = {"slot": 1, "ps0": 200, "ps1": 200, "ps2": 80, "first0": 0, "first1": first1, "first2": 2}
    params.update({f"ps{i}": 0 for i in range(3, 8)})
    params.update({f"first{i}": i for i in range(3, 8)})
    leaf.sw.insert_entry(f"{ING}.path_choice.prior", {"meta.route.path_set_id": WIDE_SET},
                         f"{ING}.path_choice.set_prior", params)
    return Counter(_start_together(leaf, range(0x200, 0x200 + 28)).values())


def test_prior_shares_one_estimate_between_repeated_members(leaf):
    # Weighted sets repeat a member: [3, 3, 4].  The repeated port's two positions read one
    # estimate (first1 = 0), so the split follows capacity (port 4's 100G path takes ~20).
    per_port = _repeated(leaf, first1=0)
    assert 19 <= per_port[4] <= 21, per_port


def test_control_repeated_member_with_its_own_estimate_draws_too_many_flows(leaf):
    per_port = _repeated(leaf, first1=1)   # position 1 reads an estimate nothing ever fills
    assert per_port[3] >= 14, per_port


# A set with a prior is placed by its own bottleneck share, not by the load its uplinks carry for
# other destinations (functions.p4 member_util).  Port 3 (the fast path) already carries twelve
# flows of another destination, whose set has one member and no prior.
OTHER_SUBNET, OTHER_SET, OTHER_DST = ("10.0.4.0", 24), 3, "10.0.4.9"


def _busy_fast_uplink_then_28_flows(leaf: Leaf, *, with_prior: bool) -> Counter:
    leaf.sw.insert_entry(f"{ING}.routing.lpm", {"hdr.ipv4.dst_addr": OTHER_SUBNET},
                         f"{ING}.routing.set_path_set", {"path_set_id": OTHER_SET})
    leaf.set_path_set(OTHER_SET, [3])
    for qp in range(0x400, 0x40C):
        leaf.send(1, roce(SRC, OTHER_DST, qp, 0, payload=1000))
    _wide(leaf, (3, 4))
    if with_prior:
        _prior(leaf, WIDE_SET, [BOTTLENECK[3], BOTTLENECK[4]])
    leaf.drain_output()
    return Counter(_start_together(leaf, range(0x200, 0x200 + 28)).values())


def test_a_busy_uplink_does_not_hide_the_remote_bottleneck(leaf):
    per_port = _busy_fast_uplink_then_28_flows(leaf, with_prior=True)
    assert 19 <= per_port[3] <= 21 and 7 <= per_port[4] <= 9, per_port
    assert _slowest_path_load(per_port, BOTTLENECK) <= 0.23


def test_control_without_the_prior_the_local_load_sends_flows_to_the_40g_path(leaf):
    per_port = _busy_fast_uplink_then_28_flows(leaf, with_prior=False)
    assert per_port[4] >= 18, per_port
    assert _slowest_path_load(per_port, BOTTLENECK) >= 0.45


def _lone_flows(leaf: Leaf, *, with_prior: bool) -> set[int]:
    """Eight flows, each alone on idle members (the estimates decay to nothing in between)."""
    _wide(leaf, (3, 4))
    if with_prior:
        _prior(leaf, WIDE_SET, [BOTTLENECK[3], BOTTLENECK[4]])
    ports = set()
    for qp in range(0x500, 0x508):
        leaf.advance(40 * 32)
        ports.update(_start_together(leaf, [qp]).values())
    return ports


def test_a_lone_flow_takes_the_idle_fast_path(leaf):
    # the placed packet's own wire time at each member's bottleneck breaks the tie by capacity
    assert _lone_flows(leaf, with_prior=True) == {3}


def test_control_without_the_prior_lone_flows_follow_the_rotation(leaf):
    assert _lone_flows(leaf, with_prior=False) == {3, 4}
