"""Stellar on Tofino: the ECN floor (render_tna.ecn_rows, ecn_kfloor_bytes).

The static ramp of a port starts at the later of Kmin and the floor's bytes at the port's rate:
100 KB is 8 us at 100 Gb/s but 20 us at 40 Gb/s, so a 40 G port's queue of 19 us (under DCQCN's
byte threshold) is not marked, where a ramp from Kmin (4 us) marks about half its packets
(pmax 1 here, so the two differ sharply).  The rows are the render's, written into p4sim's TNA
pipe; the negative control is the same port rendered without a floor.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from scapy.all import IP, Ether

from control_plane.model import load_fabric
from control_plane.render_tna import ecn_rows
from tna_leaf import ECN_CE, ECN_ECT0, EGR, TnaLeaf, roce

ROOT = Path(__file__).resolve().parents[2]
DST = "10.0.2.9"
DELAY_US = 19


def _fabric():
    lab = load_fabric(str(ROOT / "fabrics" / "lab.yaml"))
    return replace(lab, dataplane=replace(lab.dataplane, ecn=replace(lab.dataplane.ecn, pmax=1.0)))


def _marks(rows: list[dict[str, int]], pairs: int = 20) -> int:
    """CE marks among the second packets of ``pairs`` flows, each queued DELAY_US behind its
    first on the uplink (both uplinks carry ``rows``)."""
    leaf = TnaLeaf()
    for port in (2, 3):
        for r in rows:
            leaf.sw.insert_entry(f"{EGR}.ecn.prob", {"port": port, "meta.qdelay_8ns": (r["low"], r["high"])},
                                 f"{EGR}.ecn.set_prob", {"prob": r["prob"]}, priority=1)
    marks = 0
    for qp in range(100, 100 + pairs):
        port = leaf.flow_port(qp)
        leaf.sw.advance(100)
        leaf.sw.set_queue_rate(1e6 / DELAY_US, port=port)
        leaf.send(roce("10.0.1.1", DST, qp, 1, ecn=ECN_ECT0))
        leaf.send(roce("10.0.1.1", DST, qp, 2, ecn=ECN_ECT0))
        leaf.sw.advance(3 * DELAY_US)
        leaf.sw.set_queue_rate(0, port=port)
        first, second = [Ether(f)[IP].tos & 3 for _, f in leaf.out()]
        assert first == ECN_ECT0                  # the first packet found no queue
        marks += second == ECN_CE
    return marks


def test_the_floor_scales_with_the_port_rate():
    fabric = _fabric()
    assert ecn_rows(fabric, 100.0)[0]["low"] * 8 == 8_000     # 100 KB at 100 Gb/s: 8 us
    assert ecn_rows(fabric, 40.0)[0]["low"] * 8 == 20_000     # ... at 40 Gb/s: 20 us
    assert ecn_rows(fabric, 40.0, kfloor_bytes=0)[0]["low"] * 8 == 4_000   # Kmin
    assert ecn_rows(fabric, 10.0)[0]["low"] * 8 == 32_000     # never above Kmax


def test_a_40g_queue_below_the_floor_is_not_marked():
    assert _marks(ecn_rows(_fabric(), 40.0)) == 0


def test_negative_control_without_the_floor_the_same_queue_is_marked():
    assert _marks(ecn_rows(_fabric(), 40.0, kfloor_bytes=0)) >= 5
