"""Stellar on Tofino: rate-true DRE levels and the capacity prior (render_tna.group_priors,
TnaController.port_rates), on the lab fabric rendered for the TNA program and run on p4sim.

Leaf1's remote leaves share group 1 = {member 0: port 9 via spine1, member 1: port 10 via
spine2}.  When port status reports spine1's downlink to leaf2 (spine1 port 2) at 40 Gb/s, the
member via spine1 carries at most 40 Gb/s towards leaf2 but 100 Gb/s towards leaf3: the render
gives the group a second capacity prior whose member-0 levels are 40 % as wide, and the route to
leaf2 names it.  Sixteen flows that start together towards leaf2 then split about 40:100 (WCMP's
share), while those towards leaf3 still split evenly.  Negative control: without the operating
rate (or with the capacity prior off) the slow path takes an even share.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

p4sim = pytest.importorskip("p4sim")
from scapy.all import IP, UDP, Ether, Raw, raw  # noqa: E402
from scapy.contrib.roce import BTH  # noqa: E402

from control_plane import render_tna  # noqa: E402
from control_plane.controller import InProcessOps, make_controller  # noqa: E402
from control_plane.inprocess import apply_document  # noqa: E402
from control_plane.model import load_fabric  # noqa: E402
from control_plane.render import render_fabric  # noqa: E402
from tna_leaf import program as tna_program  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LPM = "pipe.StellarIngress.routing.lpm"
SPINE1_TO_LEAF2 = ("spine1", 2)
VIA_SPINE1, VIA_SPINE2 = 9, 10
FRAME = 4096   # the fabric's RoCE frames: one packet is ~0.65 of a level at 100 Gb/s, 1.6 at 40


@pytest.fixture(scope="module")
def program():
    return tna_program(1)          # Tofino-1, the full profile


@pytest.fixture(scope="module")
def fabric():
    """The lab without job reservations: leaf1's remote leaves share one group."""
    lab = load_fabric(str(ROOT / "fabrics" / "lab.yaml"))
    return replace(lab, dataplane=replace(lab.dataplane, reservations=False))


def leaf1(program, fabric):
    """Leaf1 as rendered (no feedback session: the DRE and its levels alone) and the controller."""
    rendered = render_fabric(fabric, arch="tna")
    sw = p4sim.Switch(program, priority_queues=8)
    apply_document(sw, dict(rendered.documents["leaf1"], clone_sessions=[]))
    ops = {n: InProcessOps(sw) if n == "leaf1" else _Discard() for n in rendered.documents}
    return sw, make_controller("tna", fabric, ops, rendered.plans, rendered.documents)


class _Discard:
    """The other switches' sessions: this test looks at leaf1 only."""

    def apply_changes(self, changes) -> None:
        pass


def together(sw, dst: str, base: int, n: int = 16) -> Counter:
    """The uplinks of ``n`` new flows starting in the same instant (one frame each)."""
    ports = []
    for qp in range(base, base + n):
        sw.send(1, raw(Ether() / IP(src="10.0.1.1", dst=dst, tos=(26 << 2) | 2) / UDP(sport=49152, dport=4791)
                       / BTH(opcode=4, dqpn=qp, psn=0) / Raw(b"\x00" * FRAME)))
        ports += [p for p, _ in sw.take_output()]
    sw.advance(40)   # two DRE windows: the next batch starts from an empty estimate
    return Counter(ports)


def test_a_slow_remote_downlink_gets_its_capacity_share_of_new_flows(program, fabric):
    sw, ctl = leaf1(program, fabric)
    written = ctl.port_rates({SPINE1_TO_LEAF2: 40.0})
    assert written > 0
    (route,) = [e for e in sw.table_entries(LPM) if e.match["hdr.ipv4.dst_addr"] == (0x0A000200, 24)]
    assert route.params["prior"] == 1                      # leaf2's own prior
    to_leaf2 = together(sw, "10.0.2.1", 100)
    # 16 x 40 / 140 = 4.6 flows on the slow path
    assert 3 <= to_leaf2[VIA_SPINE1] <= 6 and to_leaf2[VIA_SPINE2] >= 10, to_leaf2
    to_leaf3 = together(sw, "10.0.3.1", 200)               # the same member is 100 G towards leaf3
    assert 7 <= to_leaf3[VIA_SPINE1] <= 9, to_leaf3
    assert ctl.port_rates({SPINE1_TO_LEAF2: 40.0}) == 0     # nothing moved: nothing written


def test_negative_control_without_the_operating_rate_the_slow_path_takes_an_even_share(program, fabric):
    sw, _ = leaf1(program, fabric)                         # rendered at the configured 100 G
    to_leaf2 = together(sw, "10.0.2.1", 100)
    assert to_leaf2[VIA_SPINE1] >= 7, to_leaf2


def test_negative_control_the_capacity_prior_off_leaves_member_rates_at_the_port(program, fabric, monkeypatch):
    monkeypatch.setattr(render_tna, "CAPACITY_PRIOR", False)
    sw, ctl = leaf1(program, fabric)
    assert ctl.port_rates({SPINE1_TO_LEAF2: 40.0}) == 0    # leaf1's own ports did not change
    assert together(sw, "10.0.2.1", 100)[VIA_SPINE1] >= 7


def test_the_render_gives_each_bottleneck_list_a_prior_of_its_own(fabric):
    rendered = render_fabric(fabric, arch="tna")
    plan = rendered.plans["leaf1"]
    _, of_set = render_tna.groups_of(plan, fabric)
    priors, prior_of = render_tna.group_priors(fabric, plan, of_set, {SPINE1_TO_LEAF2: 40.0})
    assert priors[1] == [[100.0, 100.0], [40.0, 100.0]]
    by_leaf = {r.prefix.network_address.packed[2]: prior_of[r.path_set] for r in plan.routes if of_set[r.path_set] == 1}
    assert by_leaf == {2: 1, 3: 0, 4: 0}
    # the operating rate of leaf1's own uplink is every destination's bottleneck: one prior
    priors, _ = render_tna.group_priors(fabric, plan, of_set, {("leaf1", VIA_SPINE1): 40.0})
    assert priors[1] == [[40.0, 100.0]]
