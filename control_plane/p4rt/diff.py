"""What a switch holds against what its document asks: the changes, and the order to write them
in so that no entry ever names a path set or group the switch does not hold."""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional

from .. import contract
from ..render import entry_identity

# Entries that other entries point at: (table, key field) <- action param holding that key.
# Routes and reservations name a path set by id; `Diff.phases` orders writes so that no entry
# ever names a path set the switch does not hold, not even between two batches.
REFERENCED_TABLE = "StellarIngress.routing.path_set"
REFERENCED_KEY = "meta.route.path_set_id"
REFERENCE_PARAM = "path_set_id"
_REFERENCED_FIRST = (REFERENCED_TABLE,)
# The TNA program's group rows: tables keyed by the group id, named by `group` action params
# (routing.lpm/reservation, the port maps).  (kind of reference, param naming it).
GROUP_KEY = "meta.group"
_REFERENCES = (("path_set", REFERENCE_PARAM), ("group", "group"))


def _referenced(item: Mapping[str, Any]) -> Optional[tuple[str, int]]:
    """What a referenced entry is (("path_set"|"group", id)), or None for other entries."""
    match = item.get("match") or {}
    if item.get("table") == REFERENCED_TABLE and REFERENCED_KEY in match:
        return ("path_set", contract.value_to_int(match[REFERENCED_KEY]))
    if GROUP_KEY in match:
        return ("group", contract.value_to_int(match[GROUP_KEY]))
    return None


def _action_value(entry: Mapping[str, Any]) -> tuple:
    """What an entry does, normalised (action name, params as ints): equal = no MODIFY needed."""
    params = tuple(sorted((k, contract.value_to_int(v)) for k, v in (entry.get("params") or {}).items()))
    return entry.get("action"), params


def _fmt_value(field_name: str, value: Any) -> str:
    if isinstance(value, int) and "addr" in field_name and value < (1 << 32):
        return str(ipaddress.IPv4Address(value))
    return str(value)


def describe_entry(entry: Mapping[str, Any]) -> str:
    """`table field=value/plen field2=v&&&mask priority N` (or `table (default action)`)."""
    if entry.get("default_action"):
        return f"{entry['table']} (default action)"
    parts = []
    for fname, value in (entry.get("match") or {}).items():
        if isinstance(value, dict) and "prefix_len" in value:
            parts.append(f"{fname}={_fmt_value(fname, value['value'])}/{value['prefix_len']}")
        elif isinstance(value, dict) and "mask" in value:
            parts.append(f"{fname}={_fmt_value(fname, value['value'])}&&&{_fmt_value(fname, value['mask'])}")
        elif isinstance(value, dict):
            parts.append(f"{fname}={value.get('low')}..{value.get('high')}")
        else:
            parts.append(f"{fname}={_fmt_value(fname, value)}")
    text = f"{entry['table']} {' '.join(parts) or '(no match)'}"
    if entry.get("priority"):
        text += f" priority {entry['priority']}"
    return text


def _describe_change(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """Only what differs: `level0 0 => 12, port1 10 => 0`, or the whole action when it changed."""
    if before.get("action") != after.get("action"):
        return f"{_describe_action(before)} => {_describe_action(after)}"
    old, new = dict(_action_value(before)[1]), dict(_action_value(after)[1])
    changed = [f"{k} {old.get(k)} => {new.get(k)}" for k in (after.get("params") or {}) if old.get(k) != new.get(k)]
    changed += [f"{k} {old[k]} => (unset)" for k in old if k not in new]
    return ", ".join(changed) or "no change"


def _describe_action(entry: Mapping[str, Any]) -> str:
    params = ", ".join(f"{k}={v}" for k, v in (entry.get("params") or {}).items())
    return f"{entry.get('action')}({params})"


@dataclass
class Change:
    """One write: op insert|modify|delete of kind entry|default|meter|register|clone_session.

    `item` is the document form of what the switch should hold (for a delete: what it holds);
    `before` what the switch held, for modifies.
    """

    op: str
    kind: str
    item: dict[str, Any]
    before: Optional[dict[str, Any]] = None

    def describe(self) -> str:
        if self.kind in ("entry", "default"):
            return describe_entry(self.item)
        if self.kind == "clone_session":
            return f"clone session {self.item['session_id']}"
        return f"{self.kind} {self.item['name']}[{self.item['index']}]"

    def line(self) -> str:
        """One human-readable line: `+ table match -> action(params)`, `~ ...`, `- ...`."""
        sign = {"insert": "+", "modify": "~", "delete": "-"}[self.op]
        if self.kind in ("entry", "default"):
            if self.op == "modify" and self.before is not None:
                return f"{sign} {self.describe()}: {_describe_change(self.before, self.item)}"
            return f"{sign} {self.describe()} -> {_describe_action(self.item)}"
        if self.kind == "register":
            was = f"{self.before['value']} => " if self.before else ""
            return f"{sign} {self.describe()} = {was}{self.item['value']}"
        if self.kind == "clone_session":
            was = f"{describe_clone_session(self.before)} => " if self.op == "modify" and self.before else ""
            return f"{sign} {self.describe()}: {was}{describe_clone_session(self.item)}"
        cfg = lambda m: "unset" if m is None else f"cir {m['cir']} cburst {m['cburst']} pir {m['pir']} pburst {m['pburst']}"  # noqa: E731
        return f"{sign} {self.describe()}: {cfg(self.before) + ' => ' if self.op == 'modify' else ''}{cfg(self.item)}"


@dataclass
class Diff:
    """What a reconcile changes (or, for a dry run, would change) on one switch."""

    switch: str
    deletes: list[Change] = field(default_factory=list)
    modifies: list[Change] = field(default_factory=list)
    inserts: list[Change] = field(default_factory=list)
    written: int = 0  # updates the switch acknowledged
    batches: int = 0  # Write RPCs sent
    dry_run: bool = False
    last_ack: Optional[float] = None  # time.perf_counter() when the last write was acknowledged

    @property
    def total(self) -> int:
        return len(self.deletes) + len(self.modifies) + len(self.inserts)

    @property
    def empty(self) -> bool:
        return self.total == 0

    def changes(self) -> list[Change]:
        return [*self.deletes, *self.modifies, *self.inserts]

    def phases(self, state: Optional["SwitchState"] = None) -> list[list[Change]]:
        """The write order: deletes first, then modifies, then inserts, except where that
        would leave a dangling reference: path sets (v1model) and group rows (TNA: entries keyed
        by ``meta.group``) to insert go before the modifies (a modified route may point at
        one), and one still named by an entry the switch keeps is deleted last, after the
        modifies have moved that entry away.  Register cells (TNA: a new group's alive cell)
        are written before the entry modifies."""
        deleted = {entry_identity(c.item) for c in self.deletes if c.kind == "entry"}
        in_use: set[tuple[str, int]] = set()
        if state is not None:
            for key, entry in state.entries.items():
                if key in deleted:
                    continue
                params = entry.get("params") or {}
                for ref, param in _REFERENCES:
                    if param in params:
                        in_use.add((ref, contract.value_to_int(params[param])))

        def still_named(change: Change) -> bool:
            return change.kind == "entry" and _referenced(change.item) in in_use

        def target(change: Change) -> bool:
            return change.kind == "entry" and _referenced(change.item) is not None

        early_deletes = [c for c in self.deletes if not still_named(c)]
        late_deletes = [c for c in self.deletes if still_named(c)]
        targets = [c for c in self.inserts if target(c)]
        others = [c for c in self.inserts if not target(c)]
        modifies = sorted(self.modifies, key=lambda c: c.kind != "register")
        return [phase for phase in (early_deletes, targets, modifies, others, late_deletes) if phase]

    def summary(self) -> str:
        return f"+{len(self.inserts)} ~{len(self.modifies)} -{len(self.deletes)}"

    def lines(self) -> list[str]:
        return [c.line() for c in self.changes()]


def compute_diff(switch: str, document: Mapping[str, Any], state: "SwitchState",
                 managed_tables: Optional[Iterable[str]] = None) -> Diff:
    """Compare a document with what a switch holds.

    Entries of `managed_tables` (default: every non-const table in the P4Info) that the document
    does not name are deleted.  Default actions, meters and registers are managed only where the
    document names them (the program's own defaults stay otherwise).
    """
    diff = Diff(switch)
    managed = set(managed_tables) if managed_tables is not None else None
    wanted: dict[tuple, dict[str, Any]] = {}
    for entry in document.get("entries", []):
        key = entry_identity(entry)
        if entry.get("default_action"):
            have = state.defaults.get(entry["table"])
            if have is None or _action_value(have) != _action_value(entry):
                diff.modifies.append(Change("modify", "default", dict(entry), have))
            continue
        wanted[key] = entry
        have = state.entries.get(key)
        if have is None:
            diff.inserts.append(Change("insert", "entry", dict(entry)))
        elif _action_value(have) != _action_value(entry):
            diff.modifies.append(Change("modify", "entry", dict(entry), have))
    for key, have in state.entries.items():
        if key in wanted or (managed is not None and have["table"] not in managed):
            continue
        diff.deletes.append(Change("delete", "entry", have))
    for meter in document.get("meters", []):
        have = state.meters.get((meter["name"], meter["index"]))
        want = {k: meter[k] for k in ("cir", "cburst", "pir", "pburst")}
        if have != want:
            diff.modifies.append(Change("modify", "meter", dict(meter), None if have is None else {**meter, **have}))
    for register in document.get("registers", []):
        have = state.registers.get((register["name"], register["index"]))
        if have != contract.value_to_int(register["value"]):
            before = None if have is None else {**register, "value": have}
            diff.modifies.append(Change("modify", "register", dict(register), before))
    if "clone_sessions" in document:  # the document holds every clone session the switch should
        have_sessions = state.clone_sessions or {}
        wanted_ids = set()
        for session in document["clone_sessions"]:
            sid = session["session_id"]
            wanted_ids.add(sid)
            have = have_sessions.get(sid)
            if have is None:
                diff.inserts.append(Change("insert", "clone_session", dict(session)))
            elif _clone_value(have) != _clone_value(session):
                diff.modifies.append(Change("modify", "clone_session", dict(session), have))
        for sid, have in sorted(have_sessions.items()):
            if sid not in wanted_ids:
                diff.deletes.append(Change("delete", "clone_session", have))
    diff.inserts.sort(key=lambda c: c.item.get("table") not in _REFERENCED_FIRST)
    diff.deletes.sort(key=lambda c: c.item.get("table") in _REFERENCED_FIRST)
    return diff


def _clone_value(session: Mapping[str, Any]) -> tuple:
    """What a clone session does, normalised (replica order does not matter: a read-back may
    list them in another order, as the spec allows)."""
    replicas = tuple(sorted((int(r["egress_port"]), int(r.get("instance", 0))) for r in session.get("replicas", [])))
    return replicas, int(session.get("class_of_service", 0)), int(session.get("packet_length_bytes", 0))


def describe_clone_session(session: Optional[Mapping[str, Any]]) -> str:
    """`ports 68 (instance 0), truncated to 64 B` (or `cos 2`, `no truncation`)."""
    if session is None:
        return "unset"
    replicas, cos, length = _clone_value(session)
    text = "ports " + ", ".join(f"{p} (instance {i})" for p, i in replicas) if replicas else "no replicas"
    text += f", truncated to {length} B" if length else ", no truncation"
    return text + (f", cos {cos}" if cos else "")


@dataclass
class SwitchState:
    """What a switch holds, in document form, keyed like the reconcile compares it."""

    entries: dict[tuple, dict[str, Any]] = field(default_factory=dict)  # entry_identity -> entry
    defaults: dict[str, dict[str, Any]] = field(default_factory=dict)  # table -> default entry
    meters: dict[tuple[str, int], Optional[dict[str, int]]] = field(default_factory=dict)
    registers: dict[tuple[str, int], int] = field(default_factory=dict)
    # session id -> clone session in document form; None = not read (the document manages none)
    clone_sessions: Optional[dict[int, dict[str, Any]]] = None

    def as_document(self) -> dict[str, Any]:
        """The state as a (partial) entry document: entries, meters, registers and (when read)
        clone sessions."""
        doc = {
            "entries": [*self.defaults.values(), *self.entries.values()],
            "meters": [{"name": n, "index": i, **cfg} for (n, i), cfg in self.meters.items() if cfg is not None],
            "registers": [{"name": n, "index": i, "value": v} for (n, i), v in self.registers.items()],
        }
        if self.clone_sessions is not None:
            doc["clone_sessions"] = [self.clone_sessions[k] for k in sorted(self.clone_sessions)]
        return doc
