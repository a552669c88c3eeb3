"""The controller's incremental failover delta equals what a full re-plan would change.

`failover_delta` recomputes only the path sets a failed link was in; these tests compare it with
`plan_fabric` on the fabric without the link (the old, whole-fabric way), on every link of the
lab and on links of the 512-GPU fabric, and check the controller then writes exactly those sets.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from control_plane import contract
from control_plane.controller import Controller, InProcessOps, apply_delta, failover_delta
from control_plane.model import load_fabric
from control_plane.plan import plan_fabric

ROOT = Path(__file__).resolve().parents[2]


def full_replan_changes(fabric, plans, link):
    """{switch: {id: slots or None}} of the routing sets a full re-plan changes or drops."""
    after = plan_fabric(fabric.without_links([(link.leaf, link.spine)]), None)
    out = {}
    for name, plan in plans.items():
        new = {p.id: p.slots for p in after[name].path_sets}
        for ps in plan.path_sets:
            if ps.id >= 0x1000:
                continue  # host and job sets are not routing sets
            if new.get(ps.id) != ps.slots:
                out.setdefault(name, {})[ps.id] = new.get(ps.id)
    return out


def as_slots(delta):
    return {n: {i: (ps.slots if ps is not None else None) for i, ps in sets.items()} for n, sets in delta.items()}


@pytest.mark.parametrize("fabric_file,every", [("lab.yaml", 1), ("cluster512.yaml", 37)])
def test_incremental_delta_equals_full_replan(fabric_file, every):
    fabric = load_fabric(ROOT / "fabrics" / fabric_file)
    plans = plan_fabric(fabric, None)
    links = list(fabric.links)[::every]
    assert links
    for link in links:
        delta = failover_delta(fabric, plans, link)
        assert as_slots(delta) == full_replan_changes(fabric, plans, link), link
        # the plans after the delta are the re-plan's routing sets
        after = apply_delta(plans, delta, fabric.without_links([(link.leaf, link.spine)]))
        replanned = plan_fabric(fabric.without_links([(link.leaf, link.spine)]), None)
        for name in plans:
            assert [(p.id, p.slots) for p in after[name].path_sets] == \
                   [(p.id, p.slots) for p in replanned[name].path_sets]
            assert after[name].routes == replanned[name].routes


def test_a_second_failure_builds_on_the_first():
    fabric = load_fabric(ROOT / "fabrics" / "lab.yaml")
    plans = plan_fabric(fabric, None)
    first = fabric.link("leaf1", "spine2")
    plans1 = apply_delta(plans, failover_delta(fabric, plans, first), fabric.without_links([("leaf1", "spine2")]))
    fabric1 = fabric.without_links([("leaf1", "spine2")])
    second = fabric1.link("leaf2", "spine1")
    delta = failover_delta(fabric1, plans1, second)
    assert as_slots(delta) == full_replan_changes(fabric1, plans1, second)
    # leaf1 (only spine1 left) and leaf2 (only spine2 left) have no common spine any more
    assert delta["leaf1"][2] is None and delta["leaf2"][1] is None


def test_negative_control_the_old_plan_is_not_the_answer():
    """Without the delta the plans still route through the failed link: the comparison above
    can tell a changed set from an unchanged one."""
    fabric = load_fabric(ROOT / "fabrics" / "lab.yaml")
    plans = plan_fabric(fabric, None)
    link = fabric.link("leaf1", "spine2")
    assert full_replan_changes(fabric, plans, link)
    assert as_slots({}) != full_replan_changes(fabric, plans, link)


class CountingOps(InProcessOps):
    def __init__(self):
        self.modified: list[dict] = []
        self.cells: list = []

    def modify_entries(self, entries):
        self.modified += [dict(e, params=dict(e["params"])) for e in entries]
        return len(entries)

    def write_registers(self, cells):
        self.cells += list(cells)
        return len(cells)


def test_controller_writes_exactly_the_delta_and_times_first_and_last_ack():
    from control_plane.render import render_fabric

    fabric = load_fabric(ROOT / "fabrics" / "lab.yaml")
    rendered = render_fabric(fabric)
    ops = {name: CountingOps() for name in fabric.switches}
    controller = Controller(fabric, ops, rendered.plans, rendered.documents)
    link = fabric.link("leaf1", "spine2")
    want = full_replan_changes(fabric, plan_fabric(fabric, None), link)
    report = controller.handle_link_failure("leaf1", "spine2", [("leaf1", link.leaf_port), ("spine2", link.spine_port)])
    written = {(n, e["match"]["meta.route.path_set_id"]) for n, o in ops.items() for e in o.modified
               if "meta.route.path_set_id" in e["match"]}
    assert written == {(n, i) for n, sets in want.items() for i, slots in sets.items() if slots is not None}
    assert report.entries_written == len(written) == 6
    # The ports are marked down through the liveness tables (table writes, which BMv2's P4Runtime
    # accepts), never through registers.
    marks = {n: [(e["table"], e["match"], e["action"]) for e in o.modified
                 if e["table"].startswith("StellarIngress.failover.liveness")] for n, o in ops.items()}
    assert marks["leaf1"] == [(t, {f"meta.route.port{i}": link.leaf_port}, "StellarIngress.failover.port_down")
                              for i, t in enumerate(contract.LIVENESS_TABLES)]
    assert len(marks["spine2"]) == 8 and all(ops[n].cells == [] for n in ops)
    assert report.switches_written == 5  # leaf1 (sets + port), spine2 (port), leaf2..4 (one set each)
    assert report.first_ack_ms is not None and report.compute_ms <= report.first_ack_ms <= report.wall_ms
    assert controller.plans["leaf1"].path_set(2).slots == want["leaf1"][2]
