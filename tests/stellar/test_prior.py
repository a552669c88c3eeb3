"""The controller's side of rate-true scores: operating rates and the capacity prior
(control_plane/prior.py, Controller.port_rates), on the lab fabric (2 spines, 4 leaves)."""
from __future__ import annotations

from pathlib import Path

import pytest

from control_plane import prior
from control_plane.model import load_fabric
from control_plane.render import render_fabric

LAB = Path(__file__).resolve().parents[2] / "fabrics" / "lab.yaml"


@pytest.fixture(scope="module")
def lab():
    fabric = load_fabric(LAB)
    return fabric, render_fabric(fabric)


def _spine_port_to(fabric, spine: str, leaf: str) -> int:
    return next(p.number for p in fabric.switches[spine].ports.values() if p.peer_switch == leaf)


def _set_to(fabric, plan, leaf: str) -> int:
    subnet = fabric.switches[leaf].subnet
    return next(r.path_set for r in plan.routes if r.prefix == subnet)


def test_configured_rates_give_every_member_its_own_link_rate(lab):
    fabric, rendered = lab
    plan = rendered.plans["leaf1"]
    caps = prior.member_bottlenecks(fabric, plan)
    ps = _set_to(fabric, plan, "leaf2")
    expected = [min(fabric.switches["leaf1"].ports[m.port].capacity_gbps,
                    fabric.switches[m.via].ports[_spine_port_to(fabric, m.via, "leaf2")].capacity_gbps)
                for m in plan.path_set(ps).slots]
    assert caps[ps] == expected


def test_a_slow_remote_downlink_is_the_members_bottleneck(lab):
    fabric, rendered = lab
    plan = rendered.plans["leaf1"]
    ps = _set_to(fabric, plan, "leaf2")
    rates = {("spine1", _spine_port_to(fabric, "spine1", "leaf2")): 40.0}
    caps = dict(zip([m.via for m in plan.path_set(ps).slots], prior.member_bottlenecks(fabric, plan, rates)[ps]))
    assert caps["spine1"] == 40.0 and caps["spine2"] == fabric.switches["leaf1"].ports[
        next(m.port for m in plan.path_set(ps).slots if m.via == "spine2")].capacity_gbps
    # ... and only the sets towards leaf2 see it
    other = _set_to(fabric, plan, "leaf3")
    assert 40.0 not in prior.member_bottlenecks(fabric, plan, rates)[other]


class _Ops:
    def __init__(self) -> None:
        self.modified: list[dict] = []

    def modify_entries(self, entries: list[dict]) -> int:
        self.modified += entries
        return len(entries)


def test_port_rates_rewrites_port_rate_and_the_priors_that_depend_on_it(lab):
    from control_plane.controller import Controller
    fabric, rendered = lab
    ops = {name: _Ops() for name in fabric.switches}
    ctl = Controller(fabric, ops, rendered.plans, rendered.documents)
    uplink = next(p.number for p in fabric.switches["leaf1"].ports.values() if p.peer_switch == "spine1")
    written = ctl.port_rates({("leaf1", uplink): 40.0})
    rate = [e for e in ops["leaf1"].modified if e["table"] == prior.RATE_TABLE]
    assert rate == [{"table": prior.RATE_TABLE, "match": {"standard_metadata.egress_spec": uplink},
                     "action": prior.RATE_ACTION, "params": {"ps_per_byte": 200},
                     "comment": f"port {uplink}: operating at 40 Gbps (port status)"}]
    priors = [e for e in ops["leaf1"].modified if e["table"] == prior.PRIOR_TABLE]
    assert priors and all(200 in e["params"].values() for e in priors)
    assert written == sum(len(o.modified) for o in ops.values())
    # every leaf's prior entries exist in the rendered documents (MODIFY, not INSERT)
    for name, o in ops.items():
        rendered_keys = {(e["table"], str(e.get("match"))) for e in rendered.documents[name]["entries"]}
        assert all((e["table"], str(e["match"])) in rendered_keys for e in o.modified)
