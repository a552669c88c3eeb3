"""Group ids across re-plans on the TNA program (p4src/tna/stellar.p4): the best-member cell.

``path_choice.group_best`` keeps, per group, the member position feedback last found best
(data-plane state: only a feedback packet replaces it, and PI refuses P4Runtime register
writes, so the controller cannot reset it).  If a re-plan gave a group id other members, that
position would name another port, carrying the old port's delay, and new flows would follow it
until feedback corrected it.  The TNA controller therefore keeps ids stable: a member list keeps
its id, a new list takes an id never used on the switch (its cell is the program's initial
"none known"), a list that returns takes its old id back.

The pod (4 spines): leaf1's group 1 = {9, 10, 11, 12} serves every other leaf.  The test puts
member 1 (port 10) in group 1's cell, as feedback would have left it, then leaf2-spine2 fails:
leaf1's route to leaf2 becomes {9, 11, 12}.  Feedback copies are off here (the documents
without their mirror session), so nothing but that cell speaks for feedback.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

p4sim = pytest.importorskip("p4sim")
from scapy.all import IP, UDP, Ether, Raw, raw  # noqa: E402
from scapy.contrib.roce import BTH  # noqa: E402

from control_plane.controller import InProcessOps  # noqa: E402
from control_plane.controller_tna import TnaController  # noqa: E402
from control_plane.inprocess import apply_document  # noqa: E402
from control_plane.model import load_fabric  # noqa: E402
from control_plane.render import render_fabric  # noqa: E402
from tests.control_plane.test_controller_tna import program  # noqa: E402,F401  (the fixture)

ROOT = Path(__file__).resolve().parents[2]
GROUP_BEST = "pipe.StellarIngress.path_choice.group_best"
LPM = "pipe.StellarIngress.routing.lpm"
MEMBERS = "pipe.StellarIngress.member_port.members"
FAILED = [("leaf2", 10), ("spine2", 2)]   # the leaf2-spine2 link's two ends
LEAF2, LEAF3 = "10.2.2.1", "10.2.3.1"


class RenumberedInPlace(TnaController):
    """Negative control: group ids renumbered in path-set order at every re-plan (as before)."""

    stable_group_ids = False


@pytest.fixture(scope="module")
def pod():
    fabric = load_fabric(str(ROOT / "fabrics" / "pod.yaml"))
    return replace(fabric, dataplane=replace(fabric.dataplane, reservations=False))


def build(program, fabric, cls=TnaController):
    rendered = render_fabric(fabric, arch="tna")
    switches = {}
    for name, doc in rendered.documents.items():
        sw = p4sim.Switch(program, priority_queues=8)
        apply_document(sw, dict(doc, clone_sessions=[]))
        sw.enable_pktgen_port_down(1)
        switches[name] = sw
    ops = {n: InProcessOps(s) for n, s in switches.items()}
    return switches, cls(fabric, ops, rendered.plans, rendered.documents), rendered.documents


def new_flows(sw, base: int, dst: str, n: int = 16) -> set[int]:
    out = set()
    for qp in range(base, base + n):
        sw.send(1, raw(Ether() / IP(src="10.2.1.1", dst=dst, tos=(26 << 2) | 2) / UDP(sport=49152, dport=4791)
                       / BTH(opcode=4, dqpn=qp, psn=0) / Raw(b"\x00" * 64)))
        sw.advance(50)
        out |= {p for p, _ in sw.take_output()}
    return out


def route_group(sw, dst: str) -> int:
    prefix = int.from_bytes(bytes(int(x) for x in dst.split(".")[:3]) + b"\x00", "big")
    (entry,) = [e for e in sw.table_entries(LPM) if e.match["hdr.ipv4.dst_addr"][0] == prefix]
    return entry.params["group"]


def ports_of(sw, group: int) -> list[int]:
    rows = sorted((e.match["meta.chosen"], e.params["port"]) for e in sw.table_entries(MEMBERS)
                  if e.match["meta.group"] == group)
    return [p for _, p in rows]


def fail_leaf2_spine2(switches, ctl) -> None:
    for name, port in FAILED:
        switches[name].set_port_up(port, False)
        switches[name].advance(1)
    ctl.handle_link_failure("leaf2", "spine2", FAILED)


@pytest.mark.parametrize("ids", ["stable", "renumbered"])
def test_a_replan_never_lets_a_stale_best_member_name_another_port(program, pod, ids) -> None:
    switches, ctl, documents = build(program, pod, TnaController if ids == "stable" else RenumberedInPlace)
    held_before = {g["id"] for g in documents["leaf1"]["path_sets"]}
    leaf1 = switches["leaf1"]
    assert route_group(leaf1, LEAF2) == 1 and ports_of(leaf1, 1) == [9, 10, 11, 12]
    leaf1.register_write(GROUP_BEST, 1, (1 << 16) | 1000 // 16)  # feedback: member 1 (port 10) best, 1 us
    assert new_flows(leaf1, 100, LEAF2) == {10}              # the cell steers new flows
    fail_leaf2_spine2(switches, ctl)
    group = route_group(leaf1, LEAF2)
    assert ports_of(leaf1, group) == [9, 11, 12]
    if ids == "stable":
        assert group not in held_before                       # an id the switch never used
        assert leaf1.register_read(GROUP_BEST, group) >> 16 == 0x100   # "none known"
        assert new_flows(leaf1, 200, LEAF2) == {9, 11, 12}    # the DRE spreads them
        # group 1 kept its members, so its cell still names port 10, truthfully
        assert route_group(leaf1, LEAF3) == 1 and new_flows(leaf1, 300, LEAF3) == {10}
    else:
        # group 1 renumbered in place: its cell's member 1 is now port 11, with port 10's delay
        assert group == 1
        assert new_flows(leaf1, 200, LEAF2) == {11}


def test_a_returning_member_list_takes_its_old_id_back(program, pod) -> None:
    """After the link returns every switch holds exactly the intact render again (same ids), and
    the ids the failure used are not handed to other member lists by the next failure."""
    switches, ctl, documents = build(program, pod)
    fail_leaf2_spine2(switches, ctl)
    failed_group = route_group(switches["leaf1"], LEAF2)
    for name, port in FAILED:
        switches[name].set_port_up(port, True)
    ctl.handle_link_restore("leaf2", "spine2", FAILED)
    assert route_group(switches["leaf1"], LEAF2) == 1
    tables = ctl.names.topology_tables
    for name, doc in documents.items():
        def rows(d):
            return sorted(repr((e["table"], e.get("match"), e.get("params"))) for e in d["entries"]
                          if e["table"] in tables)
        assert rows(ctl._docs[name]) == rows(doc), name
    # the next failure of the same link reuses the id of the same member list {9, 11, 12}
    fail_leaf2_spine2(switches, ctl)
    assert route_group(switches["leaf1"], LEAF2) == failed_group
