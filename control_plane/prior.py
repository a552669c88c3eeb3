"""The capacity prior and the operating port rates (p4src/CONTRACT.md: path_choice.prior,
placement.port_rate).

Before the data plane has measured anything, a new flow is placed by utilisation alone.  For that
to be at least as good as WCMP, utilisation must be counted against what each path can carry:

* a port's own utilisation against its *operating* rate (a 100G port that negotiated 40G, or a
  degraded link), which the controller reads from port status -- ``port_rate_entries``;
* a member's path against its end-to-end bottleneck: the slowest of the leaf's uplink and the
  spine's downlink to the destination leaf -- ``prior_entries``.  The data plane keeps a
  utilisation estimate per (path set, member) at that rate and scores a member of a set with a
  prior by that estimate plus the wire time of the packet being placed, so each set splits its
  traffic in proportion to its members' bottlenecks (p4src/include/functions.p4 member_util).

The render installs both from the fabric's configured rates; ``Controller.port_rates`` rewrites
them when port status reports another rate.  Pure functions of the model: no target access.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

from . import contract
from .model import Fabric
from .plan import SwitchPlan

PRIOR_TABLE = "StellarIngress.path_choice.prior"
PRIOR_ACTION = "StellarIngress.path_choice.set_prior"
RATE_TABLE = "StellarIngress.placement.port_rate"
RATE_ACTION = "StellarIngress.placement.set_rate"
MAX_MEMBERS = 8

# (switch, port) -> operating rate, Gb/s; a port not listed runs at its configured rate.
Rates = Mapping[tuple[str, int], float]


def port_gbps(fabric: Fabric, switch: str, port: int, rates: Optional[Rates] = None) -> float:
    """The rate a port runs at: the reported operating rate, else the configured one."""
    if rates and (switch, port) in rates:
        return rates[(switch, port)]
    return fabric.switches[switch].ports[port].capacity_gbps


def member_bottlenecks(fabric: Fabric, plan: SwitchPlan, rates: Optional[Rates] = None) -> dict[int, list[float]]:
    """Path set id -> each slot's end-to-end bottleneck, Gb/s, for the switch's multi-member sets.

    A slot via a spine is limited by the spine's downlink to the set's destination leaf (every
    destination of a job set: the slowest); a spine without a link to it (failed) leaves the
    uplink's rate, since the data plane's liveness already keeps flows off such a member."""
    name = plan.switch.name
    by_subnet = {s.subnet: s.name for s in fabric.leaves}
    down = {s.name: {p.peer_switch: p.number for p in s.ports.values() if p.peer_switch}
            for s in fabric.spines}
    dests: dict[int, set[str]] = {}
    for prefix, ps_id in [(r.prefix, r.path_set) for r in plan.routes] + \
                         [(r.dst, r.path_set) for r in plan.reservations]:
        leaf = by_subnet.get(prefix)
        if leaf is not None and leaf != name:
            dests.setdefault(ps_id, set()).add(leaf)
    out: dict[int, list[float]] = {}
    for ps in plan.path_sets:
        if len(ps.slots) < 2:
            continue
        caps = []
        for m in ps.slots:
            cap = port_gbps(fabric, name, m.port, rates)
            for leaf in dests.get(ps.id, ()):
                spine_port = down.get(m.via, {}).get(leaf)
                if spine_port is not None:
                    cap = min(cap, port_gbps(fabric, m.via, spine_port, rates))
            caps.append(cap)
        out[ps.id] = caps
    return out


def prior_entries(fabric: Fabric, plan: SwitchPlan, rates: Optional[Rates] = None) -> list[dict[str, Any]]:
    """path_choice.prior entries of one switch: prior slot (the set's rank in id order), each
    slot's bottleneck as ps per byte and the first position of each slot's port (a repeated
    member shares one estimate)."""
    entries = []
    for slot, (ps_id, caps) in enumerate(sorted(member_bottlenecks(fabric, plan, rates).items())):
        ports = [m.port for m in plan.path_set(ps_id).slots]
        params: dict[str, int] = {"slot": slot}
        for i in range(MAX_MEMBERS):
            params[f"ps{i}"] = contract.ps_per_byte(caps[i]) if i < len(caps) else 0
            params[f"first{i}"] = ports.index(ports[i]) if i < len(ports) else i
        entries.append({"table": PRIOR_TABLE, "match": {"meta.route.path_set_id": ps_id},
                        "action": PRIOR_ACTION, "params": params,
                        "comment": "end-to-end bottleneck per member: "
                                   + ", ".join(f"{c:g}" for c in caps) + " Gbps"})
    return entries


def port_rate_entries(fabric: Fabric, switch: str, rates: Rates) -> list[dict[str, Any]]:
    """placement.port_rate entries of the switch's ports whose operating rate is reported."""
    return [{"table": RATE_TABLE, "match": {"standard_metadata.egress_spec": port},
             "action": RATE_ACTION, "params": {"ps_per_byte": contract.ps_per_byte(gbps)},
             "comment": f"port {port}: operating at {gbps:g} Gbps (port status)"}
            for (name, port), gbps in sorted(rates.items()) if name == switch]
