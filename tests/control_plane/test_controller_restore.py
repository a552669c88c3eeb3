"""The v1model controller tracks failed links: successive failures compose, and
``handle_link_restore`` brings a link back (liveness up, the path sets of a plan with it).
In-process on p4sim with the lab's rendered entries (reservations off, so leaf1's sets towards
the other leaves are its two uplinks: port 9 to spine1, port 10 to spine2)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

p4sim = pytest.importorskip("p4sim")

from control_plane import contract  # noqa: E402
from control_plane.controller import InProcessOps, make_controller  # noqa: E402
from control_plane.inprocess import apply_document  # noqa: E402
from control_plane.model import load_fabric  # noqa: E402
from control_plane.render import render_fabric  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PATH_SET = "StellarIngress.routing.path_set"


@pytest.fixture(scope="module")
def program():
    return p4sim.compile(str(ROOT / "p4src" / "v1model" / "stellar.p4"), include_dirs=[str(ROOT / "p4src")])


@pytest.fixture
def lab(program):
    fabric = load_fabric(str(ROOT / "fabrics" / "lab.yaml"))
    fabric = replace(fabric, dataplane=replace(fabric.dataplane, reservations=False))
    rendered = render_fabric(fabric)
    switches = {}
    for name, doc in rendered.documents.items():
        switches[name] = p4sim.Switch(program, priority_queues=8)
        apply_document(switches[name], dict(doc, meters=[]))
    ctl = make_controller("v1model", fabric, {n: InProcessOps(s) for n, s in switches.items()},
                          rendered.plans, rendered.documents)
    return switches, ctl


def members(sw, path_set_id: int) -> list[int]:
    (e,) = [e for e in sw.table_entries(PATH_SET) if e.match["meta.route.path_set_id"] == path_set_id]
    return [e.params[f"port{i}"] for i in range(e.params["count"])]


def liveness(sw, port: int) -> set[str]:
    return {e.action.rsplit(".", 1)[1] for i, t in enumerate(contract.LIVENESS_TABLES)
            for e in sw.table_entries(t) if e.match[f"meta.route.port{i}"] == port}


def test_failures_compose_and_restore_brings_the_link_back(lab) -> None:
    switches, ctl = lab
    leaf1, leaf3 = switches["leaf1"], switches["leaf3"]
    assert members(leaf1, 3) == [9, 10]                 # leaf1 -> leaf3 (set id = leaf position)
    ctl.handle_link_failure("leaf1", "spine1", [("leaf1", 9), ("spine1", 1)])
    ctl.handle_link_failure("leaf2", "spine1", [("leaf2", 9), ("spine1", 2)])
    assert ctl.failed == [("leaf1", "spine1"), ("leaf2", "spine1")]
    assert members(leaf1, 3) == [10] and members(leaf3, 1) == [10] and members(leaf3, 2) == [10]
    assert members(leaf3, 4) == [9, 10]
    report = ctl.handle_link_restore("leaf1", "spine1", [("leaf1", 9), ("spine1", 1)])
    assert report.entries_written > 0 and ctl.failed == [("leaf2", "spine1")]
    assert liveness(leaf1, 9) == {"port_up"} and liveness(switches["spine1"], 1) == {"port_up"}
    assert members(leaf1, 3) == [9, 10] and members(leaf3, 1) == [9, 10]
    assert members(leaf1, 2) == [10] and members(leaf3, 2) == [10]    # leaf2-spine1 still down
    assert liveness(switches["leaf2"], 9) == {"port_down"}
    with pytest.raises(ValueError, match="not failed"):
        ctl.handle_link_restore("leaf1", "spine1")


def test_a_restore_that_forgets_the_other_failure_re_adds_it(lab) -> None:
    """Negative control: a restore planned from the intact fabric alone (the second failure
    forgotten) puts port 9 back into leaf1's set towards leaf2, over the still-dead leaf2-spine1."""
    switches, ctl = lab
    ctl.handle_link_failure("leaf1", "spine1", [("leaf1", 9), ("spine1", 1)])
    ctl.handle_link_failure("leaf2", "spine1", [("leaf2", 9), ("spine1", 2)])
    ctl.failed = [("leaf1", "spine1")]                 # forget leaf2-spine1
    ctl.handle_link_restore("leaf1", "spine1", [("leaf1", 9), ("spine1", 1)])
    assert members(switches["leaf1"], 2) == [9, 10]
    with pytest.raises(ValueError):                    # and a link never failed is refused
        ctl.handle_link_restore("leaf3", "spine1")
