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
