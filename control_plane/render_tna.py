"""The Tofino program's (p4src/tna/stellar.p4) per-switch context, rendered by templates/tna/.

Why a module of its own: the TNA program is structured differently from the v1model one
(p4src/tna/README.md), so the same fabric plan maps to other tables:
  - a v1model path set (eight ports in one action) becomes a *group*: 8-bit id, one
    member_port.members row per member position and eight path_choice.hash_member rows (the
    flow hash's low three bits -> member, round robin over the group's members).  Path sets with
    the same member ports are one group (the program's DRE state is per group and member, so
    prefixes that share uplinks must share the group to see each other's bytes);
  - the rate becomes the widths of the dre.level<k> range rows (no run-time division): each
    member's end-to-end bottleneck (prior.member_bottlenecks: the slower of the uplink and the
    spine's downlink towards the destination, at the operating rate port status reported), one
    set of rows per *capacity prior* -- the distinct bottleneck lists of the path sets sharing a
    group -- which routing.lpm/reservation name per destination (``group_priors``);
  - liveness is the data plane's bitmap: the controller maps each port to the (group, member)
    its port-down packet clears (failover.port_member; a port clears one group, the largest
    that holds it);
  - ECN is a quantised probability ramp per port (ecn.prob), not per-packet arithmetic;
  - congestion feedback: every member port of a group with a choice reports its queue delay
    (feedback.ports, one copy per TNA_FEEDBACK_INTERVAL_NS) and its feedback packets are mapped
    back to the same (group, member) as its port-down packets (path_choice.port_member).  The
    copies need mirror session 1 to the recirculation port, truncated: the document's
    ``clone_sessions`` carries it (a P4Runtime CloneSessionEntry, pushed with the entries) unless
    the fabric runs ECMP (no feedback then: flows stay on their hash member).
"""
from __future__ import annotations

from typing import Any, Optional

import jinja2

from . import context, contract, document, feedback, params, prior
from .document import RenderError
from .model import Fabric
from .plan import SwitchPlan, known_downstream_mask

FULL = (1 << 16) - 1


def groups_of(plan: SwitchPlan, fabric: Fabric | None = None,
              ids: Optional[dict[tuple[int, ...], int]] = None) -> tuple[list[dict[str, Any]], dict[int, int]]:
    """Groups (deduplicated path sets) and the map path-set id -> group id.  With the fabric,
    each group also carries the ``measured`` bitmap it is rendered with (members whose next hop
    is a host or a leaf: known without a reading; the v1model rule of routing.path_set).

    Group ids: without ``ids``, 1.. in path-set order (a fresh render).  With ``ids`` (the
    switch's history, member ports -> id, which this call extends), a group keeps the id its
    member list had before and a new member list takes an id never used on the switch: a
    re-plan never gives an id other members.  The data plane keeps state per group and member
    position (``path_choice.group_best``'s best member, the DRE cells),
    which only feedback and traffic replace: an id renumbered in place would make the old best
    member's position name another port (p4src/tna/README.md, "What is needed next").  Only
    when all 255 ids were used is the lowest id the render does not use now taken again."""
    by_ports: dict[tuple[int, ...], dict[str, Any]] = {}
    of_set: dict[int, int] = {}
    for path_set in plan.path_sets:
        ports = tuple(m.port for m in path_set.slots)
        group = by_ports.get(ports)
        if group is None:
            group = {"id": len(by_ports) + 1 if ids is None else _group_id(ids, ports, by_ports),
                     "purposes": [], "ecmp": path_set.ecmp,
                     "members": [{"slot": i, "port": m.port, "via": m.via} for i, m in enumerate(path_set.slots)],
                     "measured": known_downstream_mask(fabric, path_set.slots) if fabric is not None else 0}
            by_ports[ports] = group
        group["purposes"].append(path_set.purpose)
        of_set[path_set.id] = group["id"]
    groups = sorted(by_ports.values(), key=lambda g: g["id"])
    if len(groups) >= 1 << contract.TNA_GROUP_WIDTH:
        raise RenderError(f"{plan.switch.name}: {len(groups)} groups; the TNA program has 255")
    for g in groups:
        if len(g["members"]) > contract.TNA_MEMBERS:
            raise RenderError(f"{plan.switch.name}: group {g['id']} has {len(g['members'])} members (max 8)")
        g["purpose"] = "; ".join(g.pop("purposes"))
        g["count"] = len(g["members"])
    return groups, of_set


def _group_id(ids: dict[tuple[int, ...], int], ports: tuple[int, ...],
              taken: dict[tuple[int, ...], dict[str, Any]]) -> int:
    """The id of the group with member ports ``ports``: its old one, else the lowest never used,
    else (all used) the lowest this render does not use; ``ids`` records it."""
    if ports in ids and all(g["id"] != ids[ports] for g in taken.values()):
        return ids[ports]
    used = set(ids.values())
    limit = (1 << contract.TNA_GROUP_WIDTH) - 1
    fresh = next((i for i in range(1, limit + 1) if i not in used), None)
    if fresh is None:
        now = {g["id"] for g in taken.values()}
        fresh = next((i for i in range(1, limit + 1) if i not in now), None)
        if fresh is None:
            raise RenderError(f"more than {limit} groups")
        for old in [k for k, v in ids.items() if v == fresh]:
            del ids[old]
    ids[ports] = fresh
    return fresh


def group_history(document: dict[str, Any]) -> dict[tuple[int, ...], int]:
    """A rendered TNA document's groups as a history for ``groups_of``: member ports -> id."""
    return {tuple(m["port"] for m in g["members"]): g["id"] for g in document.get("path_sets", [])}


def dre_rows(capacity_gbps: float) -> list[dict[str, int]]:
    """level<k> rows for a member on a port of this rate: level j covers `width` units of contract.TNA_DRE_UNIT_BYTES,
    width proportional to the rate (a 40 % port fills its levels 40 % as fast: a quantised
    division by the rate; contract.TNA_DRE_UNITS_PER_LEVEL: the 64 levels span what the two-window
    estimate holds at line rate, so loaded members are still told apart); the last row is
    open-ended, so a saturated member never reads 0."""
    width = max(1, round(contract.TNA_DRE_UNITS_PER_LEVEL * capacity_gbps / contract.TNA_DRE_REFERENCE_GBPS))
    rows = []
    for level in range(contract.TNA_DRE_LEVELS):
        low = level * width
        if low > FULL:
            break
        high = FULL if level == contract.TNA_DRE_LEVELS - 1 else min(FULL, low + width - 1)
        rows.append({"level": level, "low": low, "high": high})
        if high == FULL:
            break
    return rows


def group_priors(fabric: Fabric, plan: SwitchPlan, of_set: dict[int, int],
                 rates: Optional[prior.Rates] = None,
                 capacity_prior: bool = True) -> tuple[dict[int, list[list[float]]], dict[int, int]]:
    """Per group id, its capacity priors (each a list of the members' rates, Gb/s), and path set
    id -> its prior's index in its group (routing's ``prior``).

    A group serves every path set with its member ports, and those can lead to destinations
    behind spine downlinks of other rates: each distinct list of member bottlenecks is one prior,
    so a flow is normalised against its own destination's bottleneck while the group's bytes stay
    one estimate (the leaf's uplinks carry them all).  Prior 0 is always the members' own port
    rates, so a destination whose path is no slower than the leaf's uplinks keeps prior 0 and a
    slow downlink adds a prior without renumbering the others' rows.
    ``capacity_prior`` False: every member at its own port's rate (the negative control: a slow
    remote downlink is invisible until the controller's level arrives)."""
    caps = prior.member_bottlenecks(fabric, plan, rates) if capacity_prior else {}
    name = plan.switch.name
    priors: dict[int, list[list[float]]] = {}
    index: dict[int, int] = {}
    for ps in plan.path_sets:
        gid = of_set[ps.id]
        own = [prior.port_gbps(fabric, name, m.port, rates) for m in ps.slots]
        vector = caps.get(ps.id) or own
        listed = priors.setdefault(gid, [own])
        if vector not in listed:
            listed.append(vector)
        index[ps.id] = listed.index(vector)
        if index[ps.id] >= 1 << contract.TNA_PRIOR_WIDTH:
            raise RenderError(f"{name}: group {gid} needs more than {1 << contract.TNA_PRIOR_WIDTH} capacity "
                              f"priors (prior_t is {contract.TNA_PRIOR_WIDTH} bits)")
    return priors, index


def path_feedback_context(fabric: Fabric, plan: SwitchPlan) -> dict[str, Any]:
    """path_feedback.p4's rows: this leaf's id and whether it tags (leaves, unless the fabric
    runs ECMP: its baseline takes no feedback), every fabric port with its uplink index (the
    shim's path), the other leaves' subnets with their ids and the mask of their uplink
    indexes (the round robin of the entries returned to them), and index -> port for the
    entries that come back.  A spine only raises the field: its fabric ports, nothing else."""
    switch = plan.switch
    leaf = switch.role == "leaf"
    uplinks = [p.number for p in switch.uplinks]
    if leaf and len(uplinks) > 8:
        raise RenderError(f"{switch.name}: {len(uplinks)} uplinks; the feedback shim's path has 3 bits")
    ids = feedback.leaf_ids(fabric)
    dests = []
    if leaf:
        for other in sorted(fabric.leaves, key=lambda s: s.name):
            if other.name != switch.name:
                mask = (1 << max(0, len(other.uplinks) - 1).bit_length()) - 1
                dests.append({"address": str(other.subnet.network_address), "prefix_len": other.subnet.prefixlen,
                              "leaf": ids[other.name], "name": other.name, "mask": mask})
    return {"on": int(leaf and fabric.dataplane.path_mode != "ecmp"),
            "leaf": ids[switch.name] if leaf else 0, "interval_ns": params.default("feedback_return_interval_ns"),
            **{key: params.param(name).implementation("tna").to_p4(params.default(name))
               for key, name in (("max_age_ns", "feedback_max_age_us"), ("silence_ns", "suspect_silence_us"),
                                 ("hold_ns", "suspect_hold_us"))},
            "ports": [{"port": n, "index": uplinks.index(n) if leaf else 0, "peer": switch.ports[n].peer_switch}
                      for n in uplinks],
            "dests": dests, "uplinks": [{"index": i, "port": n} for i, n in enumerate(uplinks)] if leaf else []}


def ecn_rows(fabric: Fabric, gbps: float, kfloor_bytes: Optional[int] = None) -> list[dict[str, int]]:
    """The quantised ramp of a port running at ``gbps``: queue delay in [K, Kmax) in
    TNA_ECN_STEPS rows of rising probability up to pmax, then always mark at and above Kmax
    (65535 = always).  K is Kmin, raised to the ECN floor: ``kfloor_bytes`` (default: the
    declared ecn_kfloor_bytes) of backlog at the port's rate (DCQCN's static Kmin is a byte
    count: at 40 Gb/s the same bytes are 2.5 times the delay), never above Kmax."""
    ecn = fabric.dataplane.ecn
    if not ecn.enabled:
        return []
    floor = params.default("ecn_kfloor_bytes") if kfloor_bytes is None else kfloor_bytes
    return ecn_ramp(ecn_start_ns(ecn.kmin_us * 1000, ecn.kmax_us * 1000, gbps, floor), ecn.kmax_us * 1000, ecn.pmax)


def ecn_start_ns(kmin_ns: int, kmax_ns: int, gbps: float, kfloor_bytes: int) -> int:
    """Where a port's ramp starts: Kmin, or the floor's bytes at the port's rate if later
    (bytes x 8 / Gb/s = ns), at most Kmax."""
    return min(kmax_ns, max(kmin_ns, int(round(kfloor_bytes * 8 / gbps))))


def qdelay_units(ns: int) -> int:
    """ns -> the TNA range key's 8 ns units (whole-us thresholds are whole units)."""
    return min(contract.TNA_QDELAY_KEY_MAX, ns // contract.TNA_QDELAY_UNIT_NS)


def ecn_ramp(kmin: int, kmax: int, pmax_fraction: float) -> list[dict[str, int]]:
    """ecn.prob rows of one port's ramp (kmin, kmax in ns; the rows' low/high in the key's 8 ns
    units): ecn_rows' arithmetic from the numbers alone, so the PTF suite writes exactly what the
    render writes."""
    kmin, kmax = qdelay_units(kmin), qdelay_units(kmax)
    steps = contract.TNA_ECN_STEPS
    pmax = min(FULL - 1, int(round(pmax_fraction * FULL)))
    rows = []
    for j in range(steps):
        low = kmin + (kmax - kmin) * j // steps
        high = kmin + (kmax - kmin) * (j + 1) // steps - 1
        if high >= low:
            rows.append({"low": low, "high": high, "prob": max(1, pmax * (j + 1) // steps)})
    rows.append({"low": kmax, "high": contract.TNA_QDELAY_KEY_MAX, "prob": FULL})
    return rows


def switch_context(fabric: Fabric, plan: SwitchPlan,
                   group_ids: Optional[dict[tuple[int, ...], int]] = None,
                   rates: Optional[prior.Rates] = None) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The template context of one switch; ``rates``: operating rates port status reported
    ((switch, port) -> Gb/s; the configured rate elsewhere), which the DRE levels follow."""
    switch = plan.switch
    dp = fabric.dataplane
    groups, of_set = groups_of(plan, fabric, group_ids)
    priors, prior_of = group_priors(fabric, plan, of_set, rates, CAPACITY_PRIOR)
    with_dre = dp.tna_profile == "full"   # "no-dre": no dre.level<k> tables (contract.TNA_PROFILES)
    liveness: dict[int, dict[str, int]] = {}
    for g in sorted(groups, key=lambda g: -g["count"]):  # a port clears the largest group holding it
        for m in g["members"]:
            liveness.setdefault(m["port"], {"port": m["port"], "group": g["id"], "member": m["slot"],
                                            "clear_mask": 0xFF ^ (1 << m["slot"]), "via": m["via"],
                                            # a member of a real choice reports its queue delay
                                            "feedback": g["count"] > 1})
    ctx = {
        # the declared tunables (flowlet timeout and drain margin in ns, the elephant threshold,
        # drain moves, the DRE penalty); ECMP (path_mode ecmp): no DRE choice, flows stay on
        # their hash member; the no-dre profile has no estimate to choose by
        "params": dict(params.action_values("tna", CONFIG_ACTION, dp),
                       dre_choice=int(dp.path_mode != "ecmp" and with_dre),
                       gap_needs_drain=int(dp.flowlet.drain_detection)),
        **context.class_context(dp),
        "tenants": context.tenants(fabric, switch),
        "groups": [dict(g, dre=[{"member": m["slot"], "port": m["port"], "prior": p, "gbps": gbps[m["slot"]],
                                 "rows": dre_rows(gbps[m["slot"]]),
                                 "scale": contract.TNA_DRE_SCORE_SCALE}   # dre.p4: score data x16
                                for p, gbps in enumerate(priors[g["id"]]) for m in g["members"]]
                        if with_dre else []) for g in groups],
        "routes": [{"address": str(r.prefix.network_address), "prefix_len": r.prefix.prefixlen,
                    "group": of_set[r.path_set], "count": _count(groups, of_set[r.path_set]),
                    "prior": prior_of[r.path_set], "purpose": r.purpose} for r in plan.routes],
        "reservations": [{"job": r.job, "src": str(r.src), "dst": str(r.dst.network_address),
                          "dst_mask": str(r.dst.netmask), "prefix_len": r.dst.prefixlen,
                          "group": of_set[r.path_set], "count": _count(groups, of_set[r.path_set]),
                          "prior": prior_of[r.path_set], "priority": r.priority, "gbps": r.reserved_gbps} for r in plan.reservations],
        "liveness": [liveness[p] for p in sorted(liveness)],
        "ports": context.ports(fabric, switch),   # the next hop's MACs per port (rewrite.port_mac)
        "feedback_interval_ns": TNA_FEEDBACK_INTERVAL_NS,
        "ecn_ports": [{"port": n, "gbps": switch.ports[n].capacity_gbps,
                       "rows": ecn_rows(fabric, switch.ports[n].capacity_gbps)}
                      for n in sorted(switch.ports)] if dp.ecn.enabled else [],
        "qdelay_unit_ns": contract.TNA_QDELAY_UNIT_NS,
        "clone_sessions": feedback_sessions(fabric, any(l["feedback"] for l in liveness.values())),
        "path_feedback": path_feedback_context(fabric, plan),
        "pressure": params.action_values("tna", PRESSURE_ACTION, dp),
        "path_loss": params.action_values("tna", PATH_LOSS_ACTION, dp),
    }
    path_sets = [{"id": g["id"], "purpose": g["purpose"], "ecmp": g["ecmp"], "members": g["members"]} for g in groups]
    return ctx, path_sets


def feedback_sessions(fabric: Fabric, reporting: bool) -> list[dict[str, Any]]:
    """The feedback copies' mirror session (p4src/tna: MIRROR_SESSION_FEEDBACK) to the
    recirculation port, truncated to TNA_FEEDBACK_TRUNCATE_BYTES; none with ECMP (its baseline
    takes no feedback) or where no port reports."""
    if fabric.dataplane.path_mode == "ecmp" or not reporting:
        return []
    return [{"session_id": contract.TNA_MIRROR_SESSION_FEEDBACK,
             "replicas": [{"egress_port": contract.TNA_RECIRC_PORT, "instance": 0}],
             "class_of_service": 0, "packet_length_bytes": contract.TNA_FEEDBACK_TRUNCATE_BYTES,
             "comment": f"feedback copies to the recirculation port {contract.TNA_RECIRC_PORT}, "
                        f"truncated to {contract.TNA_FEEDBACK_TRUNCATE_BYTES} bytes"}]


def _count(groups: list[dict[str, Any]], group_id: int) -> int:
    return next(g["count"] for g in groups if g["id"] == group_id)


CONFIG_ACTION = "StellarIngress.set_params"
PRESSURE_ACTION = "StellarIngress.pressure.set_params"
PATH_LOSS_ACTION = "StellarEgress.path_loss.set_params"
# The capacity prior (group_priors): False renders every member's levels at its own port's
# configured rate, the behaviour without it (tests' negative control).
CAPACITY_PRIOR = True
# Declared in params.py (the penalty's default is define.p4's TNA_DRE_DELAY_PENALTY, checked by
# tests/control_plane/test_params.py).  Feedback copies per uplink at most one per
# interval (feedback.ports; README: "a real deployment sets a few microseconds"): 2 us, a copy
# per ~6 4 KB frames at 100G.
TNA_DRE_DELAY_PENALTY = params.default("dre_delay_penalty")
TNA_FEEDBACK_INTERVAL_NS = params.default("feedback_interval_ns")


def render_switch(env: jinja2.Environment, fabric: Fabric, plan: SwitchPlan,
                  known_sizes: dict[str, int],
                  group_ids: Optional[dict[tuple[int, ...], int]] = None,
                  rates: Optional[prior.Rates] = None) -> dict[str, Any]:
    ctx, path_sets = switch_context(fabric, plan, group_ids, rates)
    return document.build_document(env, fabric, plan, known_sizes, ctx, "tna", path_sets=path_sets)
