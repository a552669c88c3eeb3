"""P4Runtime table entries <-> the p4sim core's by-name table API.

Validation lives here, before anything touches the switch, so that a bad update is rejected as a
whole and never half-applied.  The rules are the P4Runtime spec's (section "TableEntry"): a
don't-care field is *omitted* (an all-zero ternary mask or a zero-length prefix is an error, not
a wildcard), LPM values have no bits past the prefix, ternary values none outside the mask,
priorities are required exactly for tables with ternary/range/optional fields.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4sim.p4rt.codec import decode, encode
from p4sim.p4rt.errors import P4RTError
from p4sim.p4rt.p4info_index import ActionInfo, MatchType, P4InfoIndex, TableInfo

_KIND_OF_ONEOF = {
    "exact": MatchType.EXACT,
    "lpm": MatchType.LPM,
    "ternary": MatchType.TERNARY,
    "range": MatchType.RANGE,
    "optional": MatchType.OPTIONAL,
}


@dataclass
class EntryKey:
    """What identifies one entry of a table for the core: names and normalized match values."""

    table: TableInfo
    match: dict[str, Any]
    priority: int | None


@dataclass
class ActionCall:
    action: ActionInfo
    params: dict[str, int]


def match_to_core(index: P4InfoIndex, entry: p4runtime_pb2.TableEntry) -> EntryKey:
    """Validate an entry's table, match and priority; returns the core's view of its key."""
    table = index.table(entry.table_id)
    match: dict[str, Any] = {}
    seen: set[int] = set()
    for fm in entry.match:
        info = table.fields.get(fm.field_id)
        if info is None:
            raise P4RTError(
                "INVALID_ARGUMENT", f"table {table.name} has no match field id {fm.field_id}"
            )
        if fm.field_id in seen:
            raise P4RTError("INVALID_ARGUMENT", f"match field {info.name} given twice")
        seen.add(fm.field_id)
        kind = fm.WhichOneof("field_match_type")
        if kind not in _KIND_OF_ONEOF:
            raise P4RTError("INVALID_ARGUMENT", f"match field {info.name}: unsupported kind {kind}")
        if _KIND_OF_ONEOF[kind] != info.match_type:
            raise P4RTError(
                "INVALID_ARGUMENT",
                f"match field {info.name} is {MatchType.Name(info.match_type).lower()}, got {kind}",
            )
        what = f"{table.name} match field {info.name}"
        width = info.bitwidth
        if kind == "exact":
            match[info.name] = decode(fm.exact.value, width, what)
        elif kind == "optional":
            match[info.name] = decode(fm.optional.value, width, what)
        elif kind == "lpm":
            value = decode(fm.lpm.value, width, what)
            plen = fm.lpm.prefix_len
            if plen <= 0 or plen > width:
                raise P4RTError(
                    "INVALID_ARGUMENT",
                    f"{what}: prefix length {plen} not in 1..{width} (omit the field for a wildcard)",
                )
            host_mask = (1 << (width - plen)) - 1
            if value & host_mask:
                raise P4RTError(
                    "INVALID_ARGUMENT", f"{what}: value has bits set past the /{plen} prefix"
                )
            match[info.name] = (value, plen)
        elif kind == "ternary":
            value = decode(fm.ternary.value, width, what)
            mask = decode(fm.ternary.mask, width, what + " mask")
            if mask == 0:
                raise P4RTError(
                    "INVALID_ARGUMENT", f"{what}: all-zero mask (omit the field for a wildcard)"
                )
            if value & ~mask:
                raise P4RTError("INVALID_ARGUMENT", f"{what}: value has bits outside the mask")
            match[info.name] = (value, mask)
        else:  # range
            low = decode(fm.range.low, width, what + " low")
            high = decode(fm.range.high, width, what + " high")
            if low > high:
                raise P4RTError("INVALID_ARGUMENT", f"{what}: low {low} > high {high}")
            if low == 0 and high == (1 << width) - 1:
                raise P4RTError(
                    "INVALID_ARGUMENT", f"{what}: full range (omit the field for a wildcard)"
                )
            match[info.name] = (low, high)
    for info in table.fields.values():
        if info.match_type == MatchType.EXACT and info.id not in seen and not entry.is_default_action:
            raise P4RTError("INVALID_ARGUMENT", f"{table.name}: exact field {info.name} missing")
    priority: int | None = None
    if table.needs_priority and not entry.is_default_action:
        if entry.priority <= 0:
            raise P4RTError(
                "INVALID_ARGUMENT",
                f"table {table.name} has ternary/range/optional fields: priority must be > 0",
            )
        priority = entry.priority
    elif entry.priority != 0:
        raise P4RTError(
            "INVALID_ARGUMENT", f"table {table.name} has no ternary/range/optional field: no priority"
        )
    return EntryKey(table, match, priority)


def action_to_core(
    index: P4InfoIndex, table: TableInfo, entry: p4runtime_pb2.TableEntry, default: bool
) -> ActionCall:
    """Validate the direct action of an entry (action in the table, scope, all params, widths)."""
    kind = entry.action.WhichOneof("type")
    if kind is None:
        raise P4RTError("INVALID_ARGUMENT", f"{table.name}: entry has no action")
    if kind != "action":
        raise P4RTError("UNIMPLEMENTED", f"{table.name}: action profiles are not supported")
    return action_call(index, table, entry.action.action, default)


def action_call(
    index: P4InfoIndex, table: TableInfo, action: p4runtime_pb2.Action, default: bool
) -> ActionCall:
    info = index.actions.get(action.action_id)
    if info is None:
        raise P4RTError("NOT_FOUND", f"unknown action id {action.action_id}")
    scope = table.action_scopes.get(action.action_id)
    if scope is None:
        raise P4RTError("INVALID_ARGUMENT", f"action {info.name} is not an action of {table.name}")
    if default and scope == p4info_pb2.ActionRef.TABLE_ONLY:
        raise P4RTError("INVALID_ARGUMENT", f"action {info.name} cannot be {table.name}'s default")
    if not default and scope == p4info_pb2.ActionRef.DEFAULT_ONLY:
        raise P4RTError("INVALID_ARGUMENT", f"action {info.name} is default-only in {table.name}")
    params: dict[str, int] = {}
    for p in action.params:
        pinfo = info.params.get(p.param_id)
        if pinfo is None:
            raise P4RTError("INVALID_ARGUMENT", f"action {info.name} has no param id {p.param_id}")
        if pinfo.name in params:
            raise P4RTError("INVALID_ARGUMENT", f"action {info.name}: param {pinfo.name} given twice")
        params[pinfo.name] = decode(p.value, pinfo.bitwidth, f"action {info.name} param {pinfo.name}")
    missing = [p.name for p in info.params.values() if p.name not in params]
    if missing:
        raise P4RTError("INVALID_ARGUMENT", f"action {info.name}: missing params {missing}")
    return ActionCall(info, params)


# -- core -> P4Runtime ---------------------------------------------------------------------

def match_from_core(table: TableInfo, match: dict[str, Any], out) -> None:
    """Append the core's normalized match dict to ``out`` (a repeated FieldMatch) as P4Runtime
    FieldMatches in canonical bytes.  Built in place: with the pure-Python protobuf runtime that
    p4runtime 1.4.1 pins, every intermediate message copy costs measurable time per entry."""
    for info in table.fields.values():
        if info.name not in match:
            continue
        value = match[info.name]
        fm = out.add(field_id=info.id)
        w = info.bitwidth
        kind = info.match_type
        if kind == MatchType.EXACT:
            fm.exact.value = encode(value, w)
        elif kind == MatchType.OPTIONAL:
            fm.optional.value = encode(value, w)
        elif kind == MatchType.LPM:
            fm.lpm.value = encode(value[0], w)
            fm.lpm.prefix_len = value[1]
        elif kind == MatchType.TERNARY:
            fm.ternary.value = encode(value[0], w)
            fm.ternary.mask = encode(value[1], w)
        elif kind == MatchType.RANGE:
            fm.range.low = encode(value[0], w)
            fm.range.high = encode(value[1], w)


def action_from_core(index: P4InfoIndex, action_name: str, params: dict[str, int] | None,
                     out: p4runtime_pb2.Action) -> None:
    """Fill ``out`` with the core's (action name, params)."""
    info = index.action_by_name.get(action_name)
    if info is None:
        raise P4RTError("INTERNAL", f"core reported action {action_name} unknown to P4Info")
    out.action_id = info.id
    params = params or {}
    for p in info.params.values():
        out.params.add(param_id=p.id, value=encode(params.get(p.name, 0), p.bitwidth))
