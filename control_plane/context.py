"""Template context shared by every architecture: classes, tenants, ports.

The tables these feed (qos.dscp_class, queueing.queue_map, qos.tenant and its meter,
rewrite.port_mac) have the same contents on every program, so each renderer takes them from
here and adds its own (render_v1model.py, render_tna.py).
"""
from __future__ import annotations

from typing import Any

from . import contract
from .model import CLASSES, Fabric, Switch

GBPS_TO_BYTES_PER_S = 125_000_000


def class_context(dp: Any) -> dict[str, Any]:
    """DSCP -> class, the default class and (class, elephant) -> queue: the same tables on every
    architecture, so the v1model and TNA renders share them."""
    return {
        "dscp_classes": [{"dscp": d, "name": c.name, "value": contract.TRAFFIC_CLASS_VALUE[c.name]}
                         for c in dp.classes for d in sorted(c.dscp)],
        "default_class": {"name": dp.default_class, "value": contract.TRAFFIC_CLASS_VALUE[dp.default_class]},
        "queue_map": [{"name": c.name, "value": contract.TRAFFIC_CLASS_VALUE[c.name], "elephant": e,
                       "queue": c.elephant_queue if e else c.queue}
                      for c in sorted(dp.classes, key=lambda c: CLASSES.index(c.name)) for e in (0, 1)],
    }


def ports(fabric: Fabric, switch: Switch) -> list[dict[str, Any]]:
    """The switch's ports in order: peer, capacity, the MACs a packet leaving it carries and
    the port's wire time per byte."""
    result = []
    for number, port in sorted(switch.ports.items()):
        if port.host is not None:
            host = fabric.hosts[port.host]
            peer, dst_mac = host.name, host.mac
        else:
            peer, dst_mac = f"{port.peer_switch}:{port.peer_port}", fabric.switches[port.peer_switch].mac
        result.append({"port": number, "peer": peer, "capacity_gbps": port.capacity_gbps,
                       "src_mac": switch.mac, "dst_mac": dst_mac,
                       "ps_per_byte": contract.ps_per_byte(port.capacity_gbps)})
    return result


def tenants(fabric: Fabric, switch: Switch) -> list[dict[str, Any]]:
    """Tenant ids 1.. in file order; meters sized on this switch's fabric capacity.

    A tenant is promised `guaranteed_share` of the switch's fabric links (CIR, green) and may
    borrow the share nobody reserved (PIR, yellow -> background); beyond that it is dropped (red).
    """
    basis = sum(p.capacity_gbps for p in switch.uplinks)
    unreserved = max(0.0, 1.0 - sum(t.guaranteed_share for t in fabric.tenants.values()))
    result = []
    for ident, tenant in enumerate(fabric.tenants.values(), start=1):
        burst = int(tenant.burst_kbytes * 1024)
        peak_share = tenant.guaranteed_share + unreserved
        result.append({
            "id": ident, "name": tenant.name, "share": tenant.guaranteed_share, "peak_share": peak_share,
            "basis_gbps": basis,
            "subnets": [{"address": str(s.network_address), "prefix_len": s.prefixlen} for s in tenant.subnets],
            "cir": int(round(tenant.guaranteed_share * basis * GBPS_TO_BYTES_PER_S)), "cburst": burst,
            "pir": int(round(peak_share * basis * GBPS_TO_BYTES_PER_S)), "pburst": burst,
        })
    return result
