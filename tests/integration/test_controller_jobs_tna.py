"""The TNA controller's levels and measured bits for job (reservation) groups, on the pod fabric
(the mirror of test_controller_jobs.py for p4src/tna/stellar.p4).

On the TNA program path sets with the same member ports are one group, so on the lab a job set
(both spines) is the routing group.  On the pod (4 spines) the job ``moe`` on l1g1, l1g2 (leaf1),
l2g1 (leaf2) and l3g1 (leaf3) gets groups of its own on leaf1: {9 via spine1, 11 via spine3}
towards leaf2 and {10, 12} towards leaf3.  The controller gives a job group's member the highest
level over the job's destinations behind it and its measured bit once every one of them was read
(``Controller.member_hops`` + ``highest_level``, the code the v1model controller uses); without
that the job group stays unmeasured and no gap or drain move ever leaves its members.
"""
from __future__ import annotations

from pathlib import Path

import pytest

p4sim = pytest.importorskip("p4sim")

from control_plane import archnames, contract  # noqa: E402
from control_plane.controller import CongestionMap, InProcessOps, make_controller  # noqa: E402
from control_plane.controller_tna import TnaController  # noqa: E402
from control_plane.inprocess import apply_document  # noqa: E402
from control_plane.render import render_fabric  # noqa: E402
from tests.control_plane.test_controller_tna import program  # noqa: E402,F401  (the fixture)
from tests.integration.test_controller_jobs import moe_fabric  # noqa: E402

SCALE = contract.TNA_DRE_SCORE_SCALE   # dre.p4: score data written x16

ROOT = Path(__file__).resolve().parents[2]
HIST = archnames.TNA.qdelay_hist
LEVELS = archnames.TNA.level_table
SRC = "10.2.1.1"   # l1g1
DOWN = {"leaf2": 2, "leaf3": 3}   # every pod spine's port down to leaf2 / leaf3


@pytest.fixture(scope="module")
def job_fabric():
    return moe_fabric("pod")


class RoutingSetsOnly(TnaController):
    """Negative control: the TNA controller as it was, levels for routing groups only."""

    def _job_remote_hops(self):
        return {}


def build(program, fabric, cls=TnaController):
    rendered = render_fabric(fabric, arch="tna")
    switches = {}
    for name, doc in rendered.documents.items():
        sw = p4sim.Switch(program, priority_queues=8)
        apply_document(sw, dict(doc, clone_sessions=[]))   # the controller's levels alone
        switches[name] = sw
    ops = {n: InProcessOps(s) for n, s in switches.items()}
    if cls is TnaController:
        return switches, make_controller("tna", fabric, ops, rendered.plans, rendered.documents)
    return switches, cls(fabric, ops, rendered.plans, rendered.documents)


def job_group(ctl, dest_subnet: str) -> tuple[int, list[int]]:
    """leaf1's moe group towards ``dest_subnet`` and its member ports, checked to be a group of
    its own (not the routing group)."""
    plan = ctl.plans["leaf1"]
    (ps_id,) = {r.path_set for r in plan.reservations if str(r.src) == SRC and str(r.dst) == dest_subnet}
    group = ctl._group_of["leaf1"][ps_id]
    routing = {ctl._group_of["leaf1"][r.path_set] for r in plan.routes if r.path_set < 0x1000}
    assert group not in routing
    return group, [m.port for m in plan.path_set(ps_id).slots]


def levels(switch, group) -> dict:
    (entry,) = [e for e in switch.table_entries(LEVELS) if e.match["meta.group"] == group]
    return entry.params


def departures(switch, port, delay_us, packets=100):
    """``packets`` more packets left ``port`` after ``delay_us`` (the egress histogram)."""
    index = port * len(contract.QDELAY_BUCKET_LOWER_US) + contract.qdelay_bucket(delay_us)
    have, nbytes = switch.counter_read(HIST, index)
    switch.counter_write(HIST, index, have + packets, nbytes + 1000 * packets)


def test_a_job_group_gets_its_hops_level_and_its_bit_once_every_hop_was_read(program, job_fabric) -> None:
    switches, ctl = build(program, job_fabric)
    group, ports = job_group(ctl, "10.2.2.0/24")
    assert ports == [9, 11]                        # via spine1 and spine3, towards leaf2
    leaf1 = switches["leaf1"]
    assert levels(leaf1, group)["measured"] == 0   # both via spines: unmeasured as rendered
    # spine1's hop towards leaf2 read, spine3's not: member 0's level, no bit for member 1
    ctl.push_levels(CongestionMap(0.0, {("spine1", DOWN["leaf2"]): 48}))
    p = levels(leaf1, group)
    assert (p["l0"], p["l1"], p["measured"]) == (SCALE * 96, 0, 0b01)
    # both hops read by the controller's own poll (the spines' histograms)
    departures(switches["spine1"], DOWN["leaf2"], 37)
    departures(switches["spine3"], DOWN["leaf2"], 100)
    ctl.step(now_us=10)
    p = levels(leaf1, group)
    assert p["measured"] == 0b11 and p["l0"] == SCALE * 96 and p["l1"] == SCALE * 127   # 256 capped at 127
    # a repeat of the same readings writes nothing to the job group (nor anything else)
    written = ctl.writes
    departures(switches["spine1"], DOWN["leaf2"], 37)
    departures(switches["spine3"], DOWN["leaf2"], 100)
    ctl.step(now_us=20)
    assert ctl.writes == written


def test_control_routing_groups_only_never_measure_the_job_group(program, job_fabric) -> None:
    switches, ctl = build(program, job_fabric, RoutingSetsOnly)
    group, _ = job_group(ctl, "10.2.2.0/24")
    departures(switches["spine1"], DOWN["leaf2"], 37)
    departures(switches["spine3"], DOWN["leaf2"], 100)
    ctl.step(now_us=10)
    assert ctl.writes > 0                          # the routing groups were written ...
    p = levels(switches["leaf1"], group)
    assert p["measured"] == 0 and p["l0"] == p["l1"] == 0   # ... the job group not


def test_job_groups_are_still_measured_after_a_link_failed_and_came_back(program, job_fabric) -> None:
    """A TNA failure or return re-renders the whole fabric (job placement included): the job
    groups of the re-plan are in the controller's model, so their levels are still pushed."""
    switches, ctl = build(program, job_fabric)
    ends = [("leaf2", 10), ("spine2", 2)]
    for name, port in ends:
        switches[name].set_port_up(port, False)
    ctl.handle_link_failure("leaf2", "spine2", ends)
    for name, port in ends:
        switches[name].set_port_up(port, True)
    ctl.handle_link_restore("leaf2", "spine2", ends)
    group, ports = job_group(ctl, "10.2.3.0/24")
    assert ports == [10, 12] and levels(switches["leaf1"], group)["measured"] == 0
    for spine in ("spine2", "spine4"):
        departures(switches[spine], DOWN["leaf3"], 13)
    ctl.step(now_us=10)
    p = levels(switches["leaf1"], group)
    assert p["measured"] == 0b11 and p["l0"] == p["l1"] == SCALE * 32
