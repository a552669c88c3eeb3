"""Per-switch plans: path-set ids, weights carried by repeated slots, routes, reservations."""
from __future__ import annotations

from pathlib import Path

from control_plane.model import load_fabric, load_fabric_text
from control_plane.paths import assign_jobs
from control_plane.plan import Member, plan_fabric, weighted_slots

FABRICS = Path(__file__).resolve().parents[2] / "fabrics"
A, B, C = Member(9, "spine1"), Member(10, "spine2"), Member(11, "spine3")


def test_equal_weights_take_one_slot_each() -> None:
    assert weighted_slots([(A, 5.0), (B, 5.0), (C, 5.0)]) == (A, B, C)


def test_unequal_weights_repeat_members_in_proportion() -> None:
    slots = weighted_slots([(A, 20.0), (B, 10.0)])
    assert len(slots) == 8
    assert slots.count(A) > slots.count(B) >= 1
    assert abs(slots.count(A) / len(slots) - 2 / 3) < 0.15
    assert slots[:2] == (A, B)  # interleaved, not grouped


def test_one_member_is_one_slot() -> None:
    assert weighted_slots([(A, 7.5)]) == (A,)


def test_lab_plan_shape() -> None:
    lab = load_fabric(FABRICS / "lab.yaml")
    plans = plan_fabric(lab, assign_jobs(lab))
    spine = plans["spine1"]
    assert [(p.id, [m.port for m in p.slots]) for p in spine.path_sets] == [(1, [1]), (2, [2]), (3, [3]), (4, [4])]
    assert [str(r.prefix) for r in spine.routes] == ["10.0.1.0/24", "10.0.2.0/24", "10.0.3.0/24", "10.0.4.0/24"]
    leaf = plans["leaf1"]
    uplinks = leaf.path_set(2)  # towards leaf2: id = leaf2's position in name order
    assert [m.port for m in uplinks.slots] == [9, 10] and uplinks.purpose == "to leaf2"
    assert [p.id for p in leaf.path_sets] == [2, 3, 4, 0x1001, 0x1002, 0x1003, 0x1004, 0x2000, 0x2001]
    assert len(leaf.routes) == 3 + 4  # three remote leaf subnets, four local /32s
    assert {r.job for r in leaf.reservations} == {"moe", "dense"}
    moe = {r.path_set for r in leaf.reservations if r.job == "moe"}
    assert len(moe) == 1 and [m.via for m in leaf.path_set(moe.pop()).slots] == ["spine1"]


def test_adding_a_job_does_not_renumber_routing_path_sets() -> None:
    """Routes keep their path-set ids when jobs change, so a job update touches only its own sets."""
    text = (FABRICS / "lab.yaml").read_text()
    before = load_fabric_text(text, "a.yaml")
    after = load_fabric_text(text + """\
  - name: extra
    collective: Broadcast
    bandwidth_gbps: 10
    hosts: [l3g1, l4g1]
""", "b.yaml")
    plan_before = plan_fabric(before, assign_jobs(before))["leaf3"]
    plan_after = plan_fabric(after, assign_jobs(after))["leaf3"]
    assert [(str(r.prefix), r.path_set) for r in plan_before.routes] == \
           [(str(r.prefix), r.path_set) for r in plan_after.routes]


def test_no_assignment_means_no_reservations() -> None:
    lab = load_fabric(FABRICS / "lab.yaml")
    plans = plan_fabric(lab, None)
    assert all(not p.reservations for p in plans.values())
    assert all(len(p.path_sets) == 3 + 4 for name, p in plans.items() if name.startswith("leaf"))


def test_faster_spine_gets_more_slots_in_the_default_path_set() -> None:
    """spine2's links are 200G, spine1's 100G: uplink path sets weight spine2 2:1 by repetition."""
    import re
    text = (FABRICS / "lab.yaml").read_text()
    text = re.sub(r'(\d+): \{peer: "(leaf\d):10"\}', r'\1: {peer: "\2:10", capacity_gbps: 200}', text)
    text = re.sub(r'10: \{peer: "(spine2:\d)"\}', r'10: {peer: "\1", capacity_gbps: 200}', text)
    fabric = load_fabric_text(text, "fast-spine2.yaml")
    uplinks = plan_fabric(fabric, None)["leaf1"].path_set(2)
    weights = uplinks.weights
    assert set(weights) == {9, 10}
    assert weights[10] > weights[9] and len(uplinks.slots) == 8
    assert abs(weights[10] / 8 - 2 / 3) < 0.15
