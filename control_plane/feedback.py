"""Path feedback between leaves: what the control plane installs (p4src/CONTRACT.md:
feedback_lookup.params, feedback_lookup.dest_leaf, feedback.port_kind; p4src/README.md,
"Path feedback").

The data plane measures and returns the congestion of every leaf-to-leaf path on its own; the
control plane only names things: each leaf's id (1.. in name order, like the routing sets), which
leaf each subnet lives behind, and which ports face a switch (the shim may cross them; any other
port is a host port, where the shim is removed).  Pure functions of the model.
"""
from __future__ import annotations

from typing import Any

from . import contract
from .model import Fabric, Switch

PARAMS_TABLE = "StellarIngress.feedback_lookup.params"
PARAMS_ACTION = "StellarIngress.feedback_lookup.set_feedback"
DEST_TABLE = "StellarIngress.feedback_lookup.dest_leaf"
DEST_ACTION = "StellarIngress.feedback_lookup.set_dest_leaf"
PORT_TABLE = "StellarIngress.feedback.port_kind"
PORT_ACTION = "StellarIngress.feedback.fabric_port"


def leaf_ids(fabric: Fabric) -> dict[str, int]:
    """Leaf name -> id carried in the shim (8 bits: at most 255 leaves)."""
    names = sorted(s.name for s in fabric.leaves)
    if len(names) > 255:
        raise ValueError(f"{fabric.name}: {len(names)} leaves; the feedback shim's leaf id has 8 bits")
    return {name: i for i, name in enumerate(names, start=1)}


def feedback_entries(fabric: Fabric, switch: Switch) -> list[dict[str, Any]]:
    """The switch's feedback entries: a leaf gets its parameters and the leaf of every subnet;
    every switch marks its fabric ports."""
    entries: list[dict[str, Any]] = []
    ids = leaf_ids(fabric)
    if switch.role == "leaf":
        entries.append({"kind": "default", "table": PARAMS_TABLE, "action": PARAMS_ACTION,
                        "params": dict(contract.FEEDBACK_DEFAULTS, leaf_id=ids[switch.name]),
                        "comment": f"path feedback: this is leaf {ids[switch.name]}"})
        for leaf in sorted(fabric.leaves, key=lambda s: s.name):
            entries.append({"kind": "entry", "table": DEST_TABLE,
                            "match": {"hdr.ipv4.dst_addr": {"value": str(leaf.subnet.network_address),
                                                            "prefix_len": leaf.subnet.prefixlen}},
                            "action": DEST_ACTION, "params": {"leaf_id": ids[leaf.name]},
                            "comment": f"{leaf.name} subnet: leaf {ids[leaf.name]}"})
    for number, port in sorted(switch.ports.items()):
        if port.peer_switch is not None:
            entries.append({"kind": "entry", "table": PORT_TABLE,
                            "match": {"standard_metadata.egress_spec": number}, "action": PORT_ACTION,
                            "params": {}, "comment": f"port {number} faces {port.peer_switch}"})
    return entries
