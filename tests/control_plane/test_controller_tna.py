"""The controller drives the Tofino program (p4src/tna/stellar.p4) in-process on p4sim.

The lab fabric rendered with ``--arch tna`` on six TnaSwitches (no wiring between them: each
test sends into one switch and looks at where it sends).  Leaf1's uplinks: port 9 to spine1,
port 10 to spine2; without reservations its remote leaves share group 1 = {9, 10}.
Each mechanism has its negative control.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

p4sim = pytest.importorskip("p4sim")
from scapy.all import IP, UDP, Ether, Raw, raw  # noqa: E402
from scapy.contrib.roce import BTH  # noqa: E402

from control_plane import archnames  # noqa: E402
from control_plane.contract import TNA_DRE_SCORE_SCALE as SCALE  # noqa: E402
from control_plane.controller import CongestionMap, InProcessOps, make_controller  # noqa: E402
from control_plane.controller_tna import TnaController  # noqa: E402
from control_plane.inprocess import apply_document  # noqa: E402
from control_plane.model import load_fabric  # noqa: E402
from control_plane.render import render_fabric  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
ALIVE = archnames.TNA.alive_register
MEMBERS = "pipe.StellarIngress.member_port.members"
LEAF1_TO_SPINE1 = [("leaf1", 9), ("spine1", 1)]


@pytest.fixture(scope="module")
def program():
    return p4sim.compile(str(ROOT / "p4src" / "tna" / "stellar.p4"), defines={"__TARGET_TOFINO__": "1"})


@pytest.fixture(scope="module")
def fabric():
    lab = load_fabric(str(ROOT / "fabrics" / "lab.yaml"))
    return replace(lab, dataplane=replace(lab.dataplane, reservations=False))


def build(program, fabric, pktgen: bool = True, feedback: bool = False):
    """The rendered switches.  ``feedback``: with the document's feedback mirror session (its
    copies recirculate into each switch's own ingress); without it (the default here) these
    tests see the DRE and the controller's levels alone."""
    rendered = render_fabric(fabric, arch="tna")
    switches = {}
    for name, doc in rendered.documents.items():
        sw = p4sim.Switch(program, priority_queues=8)
        apply_document(sw, doc if feedback else dict(doc, clone_sessions=[]))
        if pktgen:
            sw.enable_pktgen_port_down(1)
        switches[name] = sw
    ops = {n: InProcessOps(s) for n, s in switches.items()}
    return switches, make_controller("tna", fabric, ops, rendered.plans, rendered.documents)


def roce(qp: int, dst: str = "10.0.2.1") -> bytes:
    return raw(Ether() / IP(src="10.0.1.1", dst=dst, tos=(26 << 2) | 2) / UDP(sport=49152, dport=4791)
               / BTH(opcode=4, dqpn=qp, psn=0) / Raw(b"\x00" * 64))


def new_flows(sw, base: int, n: int = 16, dst: str = "10.0.2.1") -> list[int]:
    """The egress port of each of ``n`` new flows (one packet each, 50 us apart)."""
    out = []
    for qp in range(base, base + n):
        sw.send(1, roce(qp, dst))
        sw.advance(50)
        out += [p for p, _ in sw.take_output()]
    return out


def fail(switches, ends) -> None:
    for name, port in ends:
        switches[name].set_port_up(port, False)
        switches[name].advance(1)


def test_make_controller_picks_the_program() -> None:
    assert archnames.names("tna").level_table == "pipe.StellarIngress.dre_base.levels"
    with pytest.raises(ValueError, match="unknown architecture"):
        archnames.names("psa")


def test_levels_steer_new_flows_off_a_congested_remote_hop(program, fabric) -> None:
    switches, ctl = build(program, fabric)
    assert isinstance(ctl, TnaController)
    leaf1 = switches["leaf1"]
    # negative control first: no levels -> the DRE spreads new flows over both uplinks
    assert set(new_flows(leaf1, 100)) == {9, 10}
    # spine1's port down to leaf2 (its port 2) is congested: leaves reaching leaf2 over it
    cmap = CongestionMap(0.0, {("spine1", 2): 50})
    assert ctl.push_levels(cmap) == 3            # leaf1, leaf3, leaf4: their group 1
    (entry,) = leaf1.table_entries(archnames.TNA.level_table)
    # headroom 2 x 50 us = level 100, written x16 (the program's encoding); not measured yet:
    # member 0's group also serves leaf3 and leaf4, whose hops this map has not read
    assert entry.params["l0"] == 100 * SCALE and entry.params["l1"] == 0 and entry.params["measured"] == 0
    assert set(new_flows(leaf1, 200)) == {10}
    # a quiet repeat writes nothing; a map below the quantum writes nothing either
    assert ctl.push_levels(cmap) == 0
    assert ctl.push_levels(CongestionMap(0.0, {("spine1", 2): 50, ("spine2", 2): 0})) == 0
    assert ctl.push_levels(CongestionMap(0.0, {})) == 3   # back to 0 everywhere
    assert set(new_flows(leaf1, 300)) == {9, 10}


def test_a_shared_group_takes_the_worst_destination_per_member(program, fabric) -> None:
    _, ctl = build(program, fabric)
    levels = ctl.group_levels(CongestionMap(0.0, {("spine1", 2): 10, ("spine1", 3): 40, ("spine2", 4): 7}))
    assert levels["leaf1"][1]["l0"] == 80 * SCALE and levels["leaf1"][1]["l1"] == 14 * SCALE
    capped = ctl.group_levels(CongestionMap(0.0, {("spine1", 2): 10_000}))
    assert capped["leaf1"][1]["l0"] == 127 * SCALE    # level 127, the cap


def test_measured_bits_need_every_destination_read_and_the_first_reading_is_written(program, fabric) -> None:
    """A member's measured bit (no gap or drain move leaves an unmeasured member) is set once
    every remote hop behind it has a reading, and that first all-zero reading is written even
    though its levels equal the rendered 0s.  Negative control: a map missing one destination's
    hop leaves the bit clear."""
    switches, ctl = build(program, fabric)
    leaf1 = switches["leaf1"]
    (rendered,) = leaf1.table_entries(archnames.TNA.level_table)
    assert rendered.params["measured"] == 0          # both uplinks via spines: unknown
    spine_ports = {(s, p) for s in ("spine1", "spine2") for p in (1, 2, 3, 4)}   # down to leaf1..4
    partial = CongestionMap(0.0, {h: 0 for h in spine_ports - {("spine2", 4)}})
    assert ctl.group_levels(partial)["leaf1"][1]["measured"] == 0b01   # spine2 lacks leaf4's hop
    full = CongestionMap(0.0, {h: 0 for h in spine_ports})
    assert ctl.push_levels(full) == 4                # all zeros, but the bits are news (4 leaves)
    (entry,) = leaf1.table_entries(archnames.TNA.level_table)
    assert entry.params["measured"] == 0b11 and entry.params["l0"] == 0
    assert ctl.push_levels(full) == 0                # a repeat writes nothing


GROUP_BEST = "pipe.StellarIngress.path_choice.group_best"


@pytest.mark.parametrize("feedback", [True, False])
def test_the_documents_mirror_session_brings_feedback_to_ingress(program, fabric, feedback) -> None:
    """The rendered clone session (mirror session 1 -> port 68, 64 bytes) is what carries the
    uplinks' feedback copies back into ingress: group 1's best-member cell learns a member.
    Negative control: the same document without the session -- no copy is made (the session is
    unknown), no feedback packet reaches ingress, the cell keeps "none" (0x100) and the choice
    falls back to the DRE and the flow hash."""
    switches, _ = build(program, fabric, feedback=feedback)
    leaf1 = switches["leaf1"]
    assert leaf1.clone_sessions() == ({1: ([(68, 0)], 64)} if feedback else {})
    new_flows(leaf1, 100)
    member = leaf1.register_read(GROUP_BEST, 1) >> 16     # the paired cell: {member, score}
    if feedback:
        assert leaf1.stats["mirrored"] > 0 and member < 8
    else:
        assert leaf1.stats["mirrored"] == 0 and leaf1.stats["unknown_clone_session"] > 0
        assert member == 0x100


def test_poll_reads_the_tna_queue_delay_histogram(program, fabric) -> None:
    switches, ctl = build(program, fabric)
    leaf1 = switches["leaf1"]
    assert all(v == 0 for v in ctl.poll(0.0, only={"leaf1"}).qdelay_us.values())
    leaf1.set_queue_rate(100_000, port=9)   # 10 us per packet on both uplinks
    leaf1.set_queue_rate(100_000, port=10)
    for qp in range(20):
        leaf1.send(1, roce(1000 + qp))
    leaf1.advance(1000)
    leaf1.take_output()
    cmap = ctl.poll(1000.0, only={"leaf1"})
    assert cmap.qdelay_us[("leaf1", 9)] >= 24 and cmap.qdelay_us[("leaf1", 10)] >= 24
    # deltas: nothing left since -> idle
    assert ctl.poll(2000.0, only={"leaf1"}).qdelay_us[("leaf1", 9)] == 0


def test_mark_ports_down_clears_the_alive_bit_where_pktgen_is_off(program, fabric) -> None:
    switches, ctl = build(program, fabric, pktgen=False)
    leaf1 = switches["leaf1"]
    fail(switches, LEAF1_TO_SPINE1)
    # negative control: nothing told the data plane -> flows still choose the dead port
    assert 9 not in new_flows(leaf1, 100) and leaf1.stats["port_down"] > 0
    ctl.mark_ports_down(LEAF1_TO_SPINE1)
    assert leaf1.register_read(ALIVE, 1) == 0xFE
    dropped = leaf1.stats["port_down"]
    assert set(new_flows(leaf1, 200)) == {10} and leaf1.stats["port_down"] == dropped


def test_link_failure_replans_and_resets_the_alive_bitmap(program, fabric) -> None:
    switches, ctl = build(program, fabric)
    leaf1 = switches["leaf1"]
    fail(switches, LEAF1_TO_SPINE1)
    assert leaf1.register_read(ALIVE, 1) == 0xFE          # the port-down packet cleared member 0
    report = ctl.handle_link_failure("leaf1", "spine1", LEAF1_TO_SPINE1, mark_down=False)
    assert report.entries_written > 0 and ctl.failed == [("leaf1", "spine1")]
    group = route_group(leaf1, 0x0A000200)               # leaf1 -> leaf2 now: a new group {10}
    assert group != 1 and members(leaf1, group) == {10}
    assert members(leaf1, 1) == set()                      # {9, 10}'s group is gone, its id not reused
    assert leaf1.register_read(ALIVE, group) == 0x01      # {10} is member 0, alone
    assert set(new_flows(leaf1, 100)) == {10}
    assert leaf1.counter_read(archnames.TNA.drops, 6)[0] == 0
    # spine1 no longer routes to leaf1
    routes = {e.match["hdr.ipv4.dst_addr"][0] for e in switches["spine1"].table_entries(
        "pipe.StellarIngress.routing.lpm")}
    assert 0x0A000100 not in routes


def route_group(switch, prefix: int) -> int:
    (entry,) = [e for e in switch.table_entries("pipe.StellarIngress.routing.lpm")
                if e.match["hdr.ipv4.dst_addr"][0] == prefix]
    return entry.params["group"]


def members(switch, group: int) -> set[int]:
    return {e.params["port"] for e in switch.table_entries(MEMBERS) if e.match["meta.group"] == group}


def test_without_the_alive_reset_a_group_renumbered_in_place_drops(program, fabric, monkeypatch) -> None:
    """Negative control of the reset, where groups are renumbered in place (stable ids off):
    the bit cleared for the old member 0 (port 9) now stops the new member 0 (port 10), and the
    lowest live member (1) has no row any more."""
    switches, ctl = build(program, fabric)
    ctl.stable_group_ids = False
    leaf1 = switches["leaf1"]
    fail(switches, LEAF1_TO_SPINE1)
    monkeypatch.setattr(ctl, "_alive_resets", lambda delta, after: {})
    ctl.handle_link_failure("leaf1", "spine1", LEAF1_TO_SPINE1, mark_down=False)
    dropped = leaf1.stats["dropped"]
    assert new_flows(leaf1, 100) == []
    assert leaf1.stats["dropped"] - dropped == 16


def test_successive_failures_compose_and_a_restore_undoes_one(program, fabric) -> None:
    switches, ctl = build(program, fabric)
    leaf1, leaf3 = switches["leaf1"], switches["leaf3"]
    fail(switches, LEAF1_TO_SPINE1)
    ctl.handle_link_failure("leaf1", "spine1", LEAF1_TO_SPINE1)
    fail(switches, [("leaf2", 9), ("spine1", 2)])
    ctl.handle_link_failure("leaf2", "spine1", [("leaf2", 9), ("spine1", 2)])
    assert ctl.failed == [("leaf1", "spine1"), ("leaf2", "spine1")]
    # routes avoid both: leaf1 has no member on port 9; leaf3 reaches leaf1 and leaf2 only via spine2
    assert 9 not in {e.params["port"] for e in leaf1.table_entries(MEMBERS)}
    assert set(new_flows(leaf3, 100, dst="10.0.1.1")) == {10}
    assert set(new_flows(leaf3, 200, dst="10.0.2.1")) == {10}
    # ... while leaf3 -> leaf4 still uses both spines
    assert set(new_flows(leaf3, 300, dst="10.0.4.1")) == {9, 10}
    spine1_routes = {e.match["hdr.ipv4.dst_addr"][0] for e in switches["spine1"].table_entries(
        "pipe.StellarIngress.routing.lpm")}
    assert spine1_routes == {0x0A000300, 0x0A000400}
    with pytest.raises(ValueError):
        ctl.handle_link_failure("leaf1", "spine1", LEAF1_TO_SPINE1)   # already down
    # the first link returns: leaf1 -> leaf3 uses both spines again; leaf2 still avoided
    for name, port in LEAF1_TO_SPINE1:
        switches[name].set_port_up(port, True)
    ctl.handle_link_restore("leaf1", "spine1", LEAF1_TO_SPINE1)
    assert ctl.failed == [("leaf2", "spine1")]
    assert set(new_flows(leaf1, 400, dst="10.0.3.1")) == {9, 10}
    assert set(new_flows(leaf1, 500, dst="10.0.2.1")) == {10}
    with pytest.raises(ValueError, match="not failed"):
        ctl.handle_link_restore("leaf1", "spine1")


def test_without_tracking_the_second_failure_re_adds_the_first_link(program, fabric) -> None:
    """Negative control: a controller that forgets the first failure (re-plans from the intact
    fabric) puts port 9 back into leaf1's group while leaf1-spine1 is still down."""
    switches, ctl = build(program, fabric)
    leaf1 = switches["leaf1"]
    fail(switches, LEAF1_TO_SPINE1)
    ctl.handle_link_failure("leaf1", "spine1", LEAF1_TO_SPINE1)
    ctl.failed = []                         # forget it
    ctl.fabric = ctl.intact_fabric
    fail(switches, [("leaf2", 9), ("spine1", 2)])
    ctl.handle_link_failure("leaf2", "spine1", [("leaf2", 9), ("spine1", 2)])
    assert 9 in {e.params["port"] for e in leaf1.table_entries(MEMBERS)}
    assert leaf1.stats["port_down"] == 0
    new_flows(leaf1, 100, dst="10.0.3.1")
    assert leaf1.stats["port_down"] > 0      # flows sent into the dead link


def _established_on_member_1(switches) -> bytes:
    """A flow leaf1 placed on port 10 (member 1 of group 1 = {9, 10})."""
    leaf1 = switches["leaf1"]
    for qp in range(100, 200):
        leaf1.send(1, roce(qp))
        leaf1.advance(1)
        if [p for p, _ in leaf1.take_output()] == [10]:
            return roce(qp)
    raise AssertionError("no flow placed on port 10")


@pytest.mark.parametrize("reset", ["members", "all-ones"])
def test_an_established_flow_past_the_shrunk_count_moves(program, fabric, monkeypatch, reset) -> None:
    """After leaf1-spine1 fails, group 1 = {10} (count 1); a flow that held member 1 (port 10)
    keeps that member in its slot.  The alive reset to the group's members marks position 1
    down, so the flow moves to member 0 = port 10 and keeps flowing.  Negative control: an
    all-ones reset leaves position 1 "up", and the flow picks the deleted member row: dropped."""
    switches, ctl = build(program, fabric)
    leaf1 = switches["leaf1"]
    packet = _established_on_member_1(switches)
    if reset == "all-ones":
        monkeypatch.setattr(archnames.ArchNames, "alive_mask", staticmethod(lambda count: 0xFF))
    fail(switches, LEAF1_TO_SPINE1)
    ctl.handle_link_failure("leaf1", "spine1", LEAF1_TO_SPINE1, mark_down=False)
    out = []
    for _ in range(5):
        leaf1.send(1, packet)
        leaf1.advance(1)
        out += [p for p, _ in leaf1.take_output()]
    assert out == ([10] * 5 if reset == "members" else [])
