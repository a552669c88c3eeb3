"""The controller's levels and measured bits for job (reservation) path sets, on the lab fabric.

A leaf's job set can serve several destination leaves (one id per distinct member list, plan.py),
so a member's traffic may leave its spine by any of those leaves' downlinks.  The controller
gives the member the highest of those hops' levels, and its measured bit only once every one of
them was read (``controller.highest_level``).  Without that, a job flow is never measured and so
never drain- or gap-moved off a congested member (p4src/README.md, "Unmeasured means unknown").

The fabric: the lab with one job, ``moe``, on l1g1, l1g2 (leaf1), l2g1 (leaf2) and l3g1 (leaf3):
leaf1's job set 0x2000 is [port 9 via spine1, port 10 via spine2], shared by leaf2 and leaf3.
"""
from dataclasses import replace
from pathlib import Path

import pytest

from control_plane.controller import CongestionMap, Controller, InProcessOps
from control_plane.plan import JOB_SET_BASE
from tests.integration.test_controller import departures, path_set_params

ROOT = Path(__file__).resolve().parents[2]
SRC, DST = "10.0.1.1", "10.0.2.1"  # l1g1 -> l2g1: a moe flow, reserved on leaf1's job set
CHANGE_DRAIN = 2  # flowlet.path_changes index of a drain move (CONTRACT.md)
SPINE_PORT = {"spine1": 9, "spine2": 10}  # leaf1's uplink to each spine
DOWN = {"leaf2": 2, "leaf3": 3}  # each spine's port down to the leaf


def moe_fabric(name: str):
    """fabrics/<name>.yaml with one job, moe, on l1g1, l1g2 (leaf1), l2g1 (leaf2), l3g1 (leaf3)."""
    from control_plane.model import load_fabric

    fabric = load_fabric(ROOT / "fabrics" / f"{name}.yaml")
    assert fabric.dataplane.reservations
    moe = replace(fabric.jobs["moe"], hosts=("l1g1", "l1g2", "l2g1", "l3g1"), bandwidth_gbps=60)
    return replace(fabric, jobs={"moe": moe})


@pytest.fixture(scope="module")
def job_fabric():
    return moe_fabric("lab")


@pytest.fixture()
def job_sim(stellar_program, job_fabric):
    from control_plane.inprocess import apply_document
    from control_plane.render import render_fabric
    from fabric_sim.simfabric import SimFabric

    sim = SimFabric(job_fabric, queue_depth=1000)
    sim.install_program(stellar_program)
    rendered = render_fabric(job_fabric)
    for name, doc in rendered.documents.items():
        apply_document(sim.switch(name), doc)
    sim.rendered = rendered
    yield sim
    sim.stop()


class RoutingSetsOnly(Controller):
    """Negative control: the controller as it was, levels for routing sets only."""

    def _job_remote_hops(self):
        return {}


def make_controller(sim, fabric, cls=Controller):
    ops = {name: InProcessOps(sim.switch(name)) for name in sim.devices}
    return cls(fabric, ops, sim.rendered.plans, sim.rendered.documents, quantum_us=2, headroom=2.0)


def job_set(plan) -> int:
    """leaf1's moe set, checked to be the shared two-spine one the tests are about."""
    ids = {r.path_set for r in plan.reservations if str(r.src) == SRC}
    assert len(ids) == 1, ids
    ps = plan.path_set(ids.pop())
    assert ps.id >= JOB_SET_BASE and [m.port for m in ps.slots] == [9, 10], ps
    assert {str(r.dst) for r in plan.reservations if r.path_set == ps.id} == {"10.0.2.0/24", "10.0.3.0/24"}
    return ps.id


def by_port(params, key):
    """{member port: its level (key "level") or its measured bit (key "measured")}."""
    if key == "measured":
        return {params[f"port{i}"]: (params["measured"] >> i) & 1 for i in range(params["count"])}
    return {params[f"port{i}"]: params[f"{key}{i}"] for i in range(params["count"])}


def test_a_shared_job_set_gets_the_highest_level_and_its_bit_once_every_hop_was_read(job_sim, job_fabric):
    controller = make_controller(job_sim, job_fabric)
    ps = job_set(controller.plans["leaf1"])
    rendered = path_set_params(job_sim, "leaf1", ps)
    assert rendered["measured"] == 0  # both members via a spine: unmeasured as rendered

    # Only spine1's hop towards leaf2 has a reading: the member's level covers it, but the hop
    # towards leaf3 is unknown, so the member stays unmeasured; spine2's member likewise.
    controller.push_levels(CongestionMap(0.0, {("spine1", DOWN["leaf2"]): 48}))
    p = path_set_params(job_sim, "leaf1", ps)
    assert by_port(p, "level") == {9: 96, 10: 0}
    assert p["measured"] == 0
    # Control: the routing set towards leaf2 (one destination) is measured by that reading.
    to_leaf2 = next(r.path_set for r in controller.plans["leaf1"].routes if str(r.prefix) == "10.0.2.0/24")
    assert by_port(path_set_params(job_sim, "leaf1", to_leaf2), "measured")[9] == 1

    # Every hop read (a poll reads all of a spine's ports): spine1 towards leaf3 is the worse
    # hop (100 us -> the [96, 128) bucket -> 256), towards leaf2 37 us (-> 96): the max wins.
    spine1 = job_sim.switch("spine1")
    departures(spine1, DOWN["leaf2"], 37)
    departures(spine1, DOWN["leaf3"], 100)
    controller.step(now_us=10)
    p = path_set_params(job_sim, "leaf1", ps)
    assert by_port(p, "level") == {9: 256, 10: 0}
    assert by_port(p, "measured") == {9: 1, 10: 1}
    # The routing sets keep their own destination's level.
    assert by_port(path_set_params(job_sim, "leaf1", to_leaf2), "level")[9] == 96
    # The other way round (leaf2 the worse hop): still the max, not the last destination's.
    departures(spine1, DOWN["leaf2"], 100)
    departures(spine1, DOWN["leaf3"], 37)
    controller.step(now_us=20)
    assert by_port(path_set_params(job_sim, "leaf1", ps), "level") == {9: 256, 10: 0}
    # The same readings again: nothing moved by a quantum, no bit is new, nothing is written.
    written = controller.writes
    departures(spine1, DOWN["leaf2"], 100)
    departures(spine1, DOWN["leaf3"], 37)
    controller.step(now_us=30)
    assert controller.writes == written


def test_routing_sets_only_never_measures_the_job_set(job_sim, job_fabric):
    controller = make_controller(job_sim, job_fabric, RoutingSetsOnly)
    ps = job_set(controller.plans["leaf1"])
    departures(job_sim.switch("spine1"), DOWN["leaf2"], 37)
    controller.step(now_us=10)
    assert controller.writes > 0  # the routing sets were written ...
    p = path_set_params(job_sim, "leaf1", ps)
    assert p["measured"] == 0 and by_port(p, "level") == {9: 0, 10: 0}  # ... the job set not


def _run_job_flow(sim, controller):
    """A moe flow l1g1 -> l2g1: a burst at t=0..9 us, the member it took is then reported
    congested (its spine's downlinks towards leaf2 and leaf3 ~13 us deep: level 32), the
    controller steps at 20 us, a second burst at 100 us (past margin 8 + level 32 after the
    last departure, within the 200 us flowlet timeout: only a drain move can move it).
    Returns (the first burst's port, the second burst's ports, PSNs in arrival order)."""
    from fabric_sim.simfabric import PortRef
    from testkit.leaf import roce

    leaf1 = sim.switch("leaf1")
    arrived: list[int] = []

    def deliver(t, host, frame):
        from scapy.all import Ether
        from scapy.contrib.roce import BTH

        if host == "l2g1":
            arrived.append(Ether(frame)[BTH].psn)

    sim.deliver = deliver
    for psn in range(10):
        sim.inject(float(psn), "l1g1", roce(SRC, DST, 0x77, psn, payload=1000))
    sim.run(until_us=15)
    tx = {port: sim.tx_packets.get(PortRef("leaf1", port), 0) for port in (9, 10)}
    old = next(p for p, n in tx.items() if n)
    assert tx[old] == 10 and sum(tx.values()) == 10, tx  # one flow, one member
    spine = next(s for s, p in SPINE_PORT.items() if p == old)

    def congest_and_step():
        for leaf in ("leaf2", "leaf3"):
            departures(sim.switch(spine), DOWN[leaf], 13)
        controller.step(now_us=20)

    sim.at(20.0, congest_and_step)
    for psn in range(10, 20):
        sim.inject(100.0 + psn - 10, "l1g1", roce(SRC, DST, 0x77, psn, payload=1000))
    sim.run(until_us=400)
    after = {port: sim.tx_packets.get(PortRef("leaf1", port), 0) - tx[port]
             for port in (9, 10)}
    drains = leaf1.counter_read("StellarIngress.flowlet.path_changes", CHANGE_DRAIN)[0]
    return old, after, drains, arrived


def test_a_job_flow_on_a_congested_member_drain_moves_once_measured(job_sim, job_fabric):
    controller = make_controller(job_sim, job_fabric)
    old, after, drains, arrived = _run_job_flow(job_sim, controller)
    new = 19 - old  # the other uplink (9 <-> 10)
    p = path_set_params(job_sim, "leaf1", job_set(controller.plans["leaf1"]))
    assert by_port(p, "measured") == {9: 1, 10: 1} and by_port(p, "level")[old] == 32
    assert after == {old: 0, new: 10}, after  # the second burst left by the other member
    assert drains == 1
    assert arrived == list(range(20))  # and nothing arrived out of order


def test_control_a_job_flow_is_never_moved_without_job_set_levels(job_sim, job_fabric):
    controller = make_controller(job_sim, job_fabric, RoutingSetsOnly)
    old, after, drains, arrived = _run_job_flow(job_sim, controller)
    p = path_set_params(job_sim, "leaf1", job_set(controller.plans["leaf1"]))
    assert p["measured"] == 0
    assert after[old] == 10 and drains == 0  # held on the congested member
    assert sorted(arrived) == list(range(20))


def test_job_sets_are_still_measured_after_a_link_failed_and_came_back(job_sim, job_fabric):
    # A return re-plans the routing sets from the fabric alone (no job placement); the job sets
    # and reservations stay in the controller's model, so their levels are still pushed.
    controller = make_controller(job_sim, job_fabric)
    ps = job_set(controller.plans["leaf1"])
    controller.handle_link_failure("leaf2", "spine2", [("leaf2", 10), ("spine2", DOWN["leaf2"])])
    controller.handle_link_restore("leaf2", "spine2", [("leaf2", 10), ("spine2", DOWN["leaf2"])])
    assert path_set_params(job_sim, "leaf1", ps)["measured"] == 0
    controller.step(now_us=10)
    assert by_port(path_set_params(job_sim, "leaf1", ps), "measured") == {9: 1, 10: 1}
