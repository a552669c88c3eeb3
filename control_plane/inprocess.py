"""Apply a rendered entry document to an in-process `p4sim.Switch` (no P4Runtime in between).

Tests and the in-process fabric use this to run the real stellar.p4 with exactly the entries
`stellarctl render` writes; the P4Runtime pusher (p4rt.py) does the same over gRPC.  It only
translates the document's match encoding ({value, prefix_len} / {value, mask}) into p4sim's
(tuples) and calls the matching Switch method per entry, meter, register and clone session.
"""
from __future__ import annotations

from typing import Any


def p4sim_match(match: dict[str, Any]) -> dict[str, Any]:
    """Document match -> p4sim.Switch match: exact value | (value, prefix_len) | (value, mask) | (low, high)."""
    result: dict[str, Any] = {}
    for field, value in match.items():
        if isinstance(value, dict) and "prefix_len" in value:
            result[field] = (value["value"], value["prefix_len"])
        elif isinstance(value, dict) and "mask" in value:
            result[field] = (value["value"], value["mask"])
        elif isinstance(value, dict) and "low" in value:  # range (the TNA program's tables)
            result[field] = (value["low"], value["high"])
        else:
            result[field] = value
    return result


def apply_document(switch: Any, doc: dict[str, Any]) -> dict[str, int]:
    """Install every entry, default action, meter config and register value; return counts."""
    counts = {"entries": 0, "defaults": 0, "meters": 0, "registers": 0, "clone_sessions": 0}
    for entry in doc["entries"]:
        if entry.get("default_action"):
            switch.set_default_action(entry["table"], entry["action"], dict(entry.get("params", {})))
            counts["defaults"] += 1
        else:
            switch.insert_entry(entry["table"], p4sim_match(entry["match"]), entry["action"],
                                dict(entry.get("params", {})), entry.get("priority"))
            counts["entries"] += 1
    for meter in doc.get("meters", []):
        switch.meter_set_config(meter["name"], meter["index"], _bmv2_rate(meter["cir"]), meter["cburst"],
                                _bmv2_rate(meter["pir"]), meter["pburst"])
        counts["meters"] += 1
    for register in doc.get("registers", []):
        switch.register_write(register["name"], register["index"], register["value"])
        counts["registers"] += 1
    for session in doc.get("clone_sessions", []):  # a TNA switch's mirror sessions
        switch.set_clone_session(session["session_id"],
                                 [(r["egress_port"], r.get("instance", 0)) for r in session["replicas"]],
                                 truncate_bytes=session.get("packet_length_bytes", 0))
        counts["clone_sessions"] += 1
    return counts


def _bmv2_rate(bytes_per_second: int) -> int:
    """The document gives P4Runtime units (bytes/s); p4sim's Switch API takes them as is.

    Kept as a function so the one place that knows the unit is obvious if the target's in-process
    API ever switches to BMv2's bytes/us.
    """
    return bytes_per_second
