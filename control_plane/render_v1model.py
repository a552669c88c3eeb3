"""The v1model program's (p4src/v1model/stellar.p4) per-switch context, rendered by templates/*.j2.

The plan's path sets map one to one onto ``routing.path_set`` rows (eight ports and levels in
one action), the switch-wide tunables onto the ``config.params`` default action and ECN onto one
``ecn.config`` row per port; the values of both come from the parameter declarations
(params.py), so a tunable's unit and scale are stated once.
"""
from __future__ import annotations

from typing import Any, Optional

import jinja2

from . import context, contract, document, feedback, params, prior
from .model import Fabric, Switch
from .plan import SwitchPlan, known_downstream_mask

CONFIG_ACTION = "StellarIngress.config.set_params"
ECN_ACTION = "StellarEgress.ecn.set_ecn_params"


def switch_params(fabric: Fabric) -> dict[str, int]:
    """config.params' action data: every declared tunable bound to it, and the ordering guards
    (all on; p4src/README.md "Ordering rule").  A fabric without drain detection is plain
    flowlet switching (the baseline): its gap moves trust the timeout alone."""
    values = params.action_values("v1model", CONFIG_ACTION, fabric.dataplane)
    values["order_guards"] = (contract.ORDER_GUARDS_ALL if fabric.dataplane.flowlet.drain_detection
                              else contract.ORDER_GUARDS_ALL & ~contract.ORDER_GUARD_GAP_DRAIN)
    return values


def ports(fabric: Fabric, switch: Switch) -> list[dict[str, Any]]:
    """The shared port context plus each port's ecn.config action data (None: ECN off)."""
    ecn = fabric.dataplane.ecn
    shared = params.action_values("v1model", ECN_ACTION, fabric.dataplane) if ecn.enabled else None
    result = []
    for port in context.ports(fabric, switch):
        ecn_params = None if shared is None else dict(shared, idle_bytes=ecn.idle_bytes(port["capacity_gbps"]))
        result.append(dict(port, ecn=ecn_params))
    return result


def switch_context(fabric: Fabric, plan: SwitchPlan) -> dict[str, Any]:
    switch = plan.switch
    dp = fabric.dataplane
    return {
        "params": switch_params(fabric),
        "adapt": dict(contract.ADAPT_DEFAULTS),
        "kfloor_bytes": contract.ECN_KFLOOR_BYTES,
        **context.class_context(dp),
        "tenants": context.tenants(fabric, switch),
        "ports": ports(fabric, switch),
        "path_sets": [{"id": p.id, "count": len(p.slots), "ecmp": int(p.ecmp),
                       "ports": [m.port for m in p.slots] + [0] * (8 - len(p.slots)),
                       "levels": [0] * 8, "measured": known_downstream_mask(fabric, p.slots),
                       "purpose": p.purpose} for p in plan.path_sets],
        "routes": [{"address": str(r.prefix.network_address), "prefix_len": r.prefix.prefixlen,
                    "path_set": r.path_set, "purpose": r.purpose} for r in plan.routes],
        "priors": prior.prior_entries(fabric, plan),
        "feedback": feedback.feedback_entries(fabric, switch),
        "reservations": [{"job": r.job, "src": str(r.src), "dst": str(r.dst.network_address),
                          "dst_mask": str(r.dst.netmask), "prefix_len": r.dst.prefixlen, "path_set": r.path_set,
                          "priority": r.priority, "gbps": r.reserved_gbps} for r in plan.reservations],
    }


def render_switch(env: jinja2.Environment, fabric: Fabric, plan: SwitchPlan, known_sizes: dict[str, int],
                  group_ids: Optional[dict[tuple[int, ...], int]] = None) -> dict[str, Any]:
    """One switch's document (``group_ids`` is the TNA renderer's; this program has no groups)."""
    return document.build_document(env, fabric, plan, known_sizes, switch_context(fabric, plan), "v1model")
