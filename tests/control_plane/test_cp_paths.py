"""Path sets, collective demands and the job-aware placement against plain ECMP."""
from __future__ import annotations

from pathlib import Path

import pytest

from control_plane.demands import job_flows
from control_plane.model import Fabric, load_fabric, load_fabric_text
from control_plane.paths import assign_jobs, ecmp_estimate, equal_cost_paths, greedy_place, link_capacities

FABRICS = Path(__file__).resolve().parents[2] / "fabrics"


@pytest.fixture(scope="module")
def lab() -> Fabric:
    return load_fabric(FABRICS / "lab.yaml")


@pytest.fixture(scope="module")
def pod() -> Fabric:
    return load_fabric(FABRICS / "pod.yaml")


def lab_variant(old: str, new: str) -> Fabric:
    text = (FABRICS / "lab.yaml").read_text()
    assert old in text
    return load_fabric_text(text.replace(old, new), "lab-variant.yaml")


# ---------------------------------------------------------------------------------------------
# path sets
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name,leaves,spines", [("lab", 4, 2), ("pod", 8, 4), ("cluster512", 32, 8)])
def test_every_leaf_pair_has_one_path_per_spine(name: str, leaves: int, spines: int) -> None:
    fabric = load_fabric(FABRICS / f"{name}.yaml")
    paths = equal_cost_paths(fabric)
    assert len(paths) == leaves * (leaves - 1)
    for (src, dst), options in paths.items():
        assert [p.spine for p in options] == sorted(s.name for s in fabric.spines)
        assert all(p.src_leaf == src and p.dst_leaf == dst for p in options)


def test_path_members_are_the_wired_ports(lab: Fabric) -> None:
    paths = equal_cost_paths(lab)
    via_spine1, via_spine2 = paths[("leaf1", "leaf3")]
    assert (via_spine1.spine, via_spine1.up_port, via_spine1.down_port) == ("spine1", 9, 3)
    assert (via_spine2.spine, via_spine2.up_port, via_spine2.down_port) == ("spine2", 10, 3)
    # every hop's port really leads to the next switch
    for options in paths.values():
        for p in options:
            assert lab.switches[p.src_leaf].ports[p.up_port].peer_switch == p.spine
            assert lab.switches[p.spine].ports[p.down_port].peer_switch == p.dst_leaf


def test_path_sets_are_symmetric(pod: Fabric) -> None:
    paths = equal_cost_paths(pod)
    for (src, dst), options in paths.items():
        back = paths[(dst, src)]
        assert [p.spine for p in options] == [p.spine for p in back]


PARTIAL = """\
name: partial
switches:
  - {name: s1, role: spine, device_id: 101, p4runtime: "h:1", ports: {1: {peer: "l1:9"}, 2: {peer: "l2:9"}, 3: {peer: "l3:9"}}}
  - {name: s2, role: spine, device_id: 102, p4runtime: "h:2", ports: {1: {peer: "l1:10"}, 2: {peer: "l2:10"}}}
  - {name: l1, role: leaf, device_id: 1, p4runtime: "h:3", subnet: 10.0.1.0/24, ports: {9: {peer: "s1:1"}, 10: {peer: "s2:1"}}}
  - {name: l2, role: leaf, device_id: 2, p4runtime: "h:4", subnet: 10.0.2.0/24, ports: {9: {peer: "s1:2"}, 10: {peer: "s2:2"}}}
  - {name: l3, role: leaf, device_id: 3, p4runtime: "h:5", subnet: 10.0.3.0/24, ports: {9: {peer: "s1:3"}}}
"""


def test_missing_link_removes_exactly_that_path() -> None:
    fabric = load_fabric_text(PARTIAL, "partial.yaml")
    paths = equal_cost_paths(fabric)
    assert [p.spine for p in paths[("l1", "l2")]] == ["s1", "s2"]
    assert [p.spine for p in paths[("l1", "l3")]] == ["s1"]
    assert [p.spine for p in paths[("l3", "l2")]] == ["s1"]


# ---------------------------------------------------------------------------------------------
# demands
# ---------------------------------------------------------------------------------------------
def test_collective_demand_patterns(lab: Fabric) -> None:
    moe = job_flows(lab, lab.jobs["moe"])
    assert len(moe) == 8 * 7
    assert all(f.gbps == pytest.approx(40 / 7) for f in moe)
    for member in lab.jobs["moe"].hosts:  # every member injects exactly its bandwidth
        assert sum(f.gbps for f in moe if f.src == member) == pytest.approx(40)
    ring = job_flows(lab, lab.jobs["dense"])
    assert [(f.src, f.dst) for f in ring][:2] == [("l1g3", "l1g4"), ("l1g4", "l2g3")]
    assert ring[-1].dst == "l1g3" and all(f.gbps == 50 for f in ring)
    assert sum(f.crosses_fabric for f in ring) == 4


def test_parameter_server_and_broadcast(pod: Fabric) -> None:
    ps = pod.jobs["ps"]
    flows = job_flows(pod, ps)
    workers = len(ps.hosts) - 1
    assert sum(f.dst == ps.root for f in flows) == workers
    assert sum(f.gbps for f in flows if f.src == ps.root) == pytest.approx(ps.bandwidth_gbps)
    ckpt = pod.jobs["ckpt"]
    bflows = job_flows(pod, ckpt)
    assert {f.src for f in bflows} == {ckpt.root}
    assert {f.dst for f in bflows} == set(ckpt.hosts) - {ckpt.root}


# ---------------------------------------------------------------------------------------------
# ECMP baseline and the greedy heuristic on a case small enough to work out by hand
# ---------------------------------------------------------------------------------------------
TWO_FLOWS = PARTIAL + """\
hosts:
  - {name: a1, ip: 10.0.1.1, mac: "02:00:00:00:01:01", leaf: l1, port: 1}
  - {name: a2, ip: 10.0.1.2, mac: "02:00:00:00:01:02", leaf: l1, port: 2}
  - {name: b1, ip: 10.0.2.1, mac: "02:00:00:00:02:01", leaf: l2, port: 1}
  - {name: b2, ip: 10.0.2.2, mac: "02:00:00:00:02:02", leaf: l2, port: 2}
jobs:
  - {name: x, collective: AllReduce, bandwidth_gbps: 60, hosts: [a1, b1]}
"""


def test_ecmp_collisions_versus_greedy_by_hand() -> None:
    """Two 60G flows l1->l2 over two 100G spines: ECMP collides half the time.

    Expected ECMP peak = 1/2 * 120% + 1/2 * 60% = 90%; even split (fluid) = 60%; the greedy
    puts them on different spines: 60%.
    """
    fabric = load_fabric_text(TWO_FLOWS, "two.yaml")
    flows = [f for f in job_flows(fabric, fabric.jobs["x"]) if f.src_leaf == "l1"]
    flows = flows + [type(flows[0])(job="y", src="a2", dst="b2", src_leaf="l1", dst_leaf="l2", gbps=60.0)]
    paths, caps = equal_cost_paths(fabric), link_capacities(fabric)
    estimate = ecmp_estimate(flows, paths, caps, trials=4000)
    assert estimate.fluid_max_utilisation == pytest.approx(0.6)
    assert estimate.expected_max_utilisation == pytest.approx(0.9, abs=0.03)
    placed = greedy_place(flows, paths, caps)
    assert {p.spine for p in placed.paths_of.values()} == {"s1", "s2"}
    assert placed.max_utilisation == pytest.approx(0.6)


# ---------------------------------------------------------------------------------------------
# job-aware assignment
# ---------------------------------------------------------------------------------------------
def _check_consistent(fabric: Fabric, assignment) -> None:
    """Loads equal the sum of placed flows, and every flow sits on a real path of its pair."""
    paths = equal_cost_paths(fabric)
    load: dict = {}
    crossing = [f for f in assignment.flows if f.crosses_fabric]
    assert sorted(assignment.placement.paths_of) == sorted(crossing)
    for flow, path in assignment.placement.paths_of.items():
        assert path in paths[(flow.src_leaf, flow.dst_leaf)]
        for link in path.links:
            load[link] = load.get(link, 0.0) + flow.gbps
    assert load.keys() == assignment.placement.load.keys()
    for link, value in load.items():
        assert assignment.placement.load[link] == pytest.approx(value)


@pytest.mark.parametrize("name", ["lab", "pod"])
def test_assignment_beats_or_equals_ecmp_and_isolates_jobs(name: str) -> None:
    fabric = load_fabric(FABRICS / f"{name}.yaml")
    assignment = assign_jobs(fabric)
    _check_consistent(fabric, assignment)
    print(f"\n{name}: heuristic peak {assignment.max_utilisation:.1%}, ECMP expected "
          f"{assignment.ecmp.expected_max_utilisation:.1%} (fluid {assignment.ecmp.fluid_max_utilisation:.1%})")
    assert assignment.max_utilisation <= assignment.ecmp.expected_max_utilisation + 1e-9
    assert assignment.max_utilisation <= 1.0
    assert assignment.isolated
    assert assignment.overlapping_jobs() == []
    jobs = list(fabric.jobs)
    for i, a in enumerate(jobs):
        for b in jobs[i + 1:]:
            assert not assignment.placement.job_spines(a) & assignment.placement.job_spines(b)
            assert not set(assignment.partition[a]) & set(assignment.partition[b])


def test_when_capacity_does_not_allow_isolation_it_says_so() -> None:
    """Negative control: moe at 70G per GPU needs 120G out of each leaf, more than one spine."""
    fabric = lab_variant("bandwidth_gbps: 40", "bandwidth_gbps: 70")
    assignment = assign_jobs(fabric)
    _check_consistent(fabric, assignment)
    assert not assignment.isolated
    assert any("capacity does not allow disjoint paths" in n for n in assignment.notes)
    assert assignment.overlapping_jobs(), "jobs must visibly share spines when isolation failed"
    # the report still compares honestly with ECMP and does not exceed link capacity
    assert assignment.max_utilisation <= 1.0
    assert assignment.max_utilisation <= assignment.ecmp.expected_max_utilisation + 1e-9


def test_more_jobs_than_spines_cannot_be_isolated(lab: Fabric) -> None:
    text = (FABRICS / "lab.yaml").read_text() + """\
  - name: third
    collective: AllReduce
    bandwidth_gbps: 10
    hosts: [l1g1, l2g1]
"""
    fabric = load_fabric_text(text, "three-jobs.yaml")
    assignment = assign_jobs(fabric)
    assert not assignment.isolated
    assert any("only 2 spines" in n for n in assignment.notes)


def test_assignment_is_deterministic(pod: Fabric) -> None:
    first, second = assign_jobs(pod), assign_jobs(pod)
    assert first.placement.paths_of == second.placement.paths_of
    assert first.ecmp == second.ecmp
    assert first.notes == second.notes
