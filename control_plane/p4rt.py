"""Push rendered entry documents to switches over P4Runtime and keep them in sync.

Reconcile = read-diff-write: read what a switch holds (wildcard table reads, the default
actions, meter configs and register cells the document manages), compare it with the document
by `render.entry_identity`, and write only the difference, in batches: deletes first (entries
whose identity the document no longer has), then modifies (same identity, other action or
params; defaults; meters; registers), then inserts -- except that a path set is inserted
before anything may point at it and deleted only after nothing does (`Diff.phases`).  A second reconcile of the same document
therefore writes nothing, and a restarted controller converges a switch instead of wiping it.

Why the p4runtime stubs (through `p4sim.p4rt.client.P4RuntimeClient`) and not p4runtime-shell:
the shell keeps one global connection per process (`shell.setup()` / `shell.teardown()`), while
`push_fabric` talks to every switch of a fabric at once, a thread per switch, each with its own
stream and arbitration.  The client works against any P4Runtime server (p4sim or
simple_switch_grpc) and exposes the per-update error details that error messages need.

Use::

    program = ProgramFiles.load("build/stellar.json", "build/stellar.p4info.txtpb")
    result = push_fabric(fabric, render_fabric(fabric).documents, program)   # all switches at once
    with SwitchSession("127.0.0.1:9501", device_id=1, name="leaf1") as s:    # one switch
        s.reconcile(document, dry_run=True).lines()                           # what would change
        s.modify_entries([path_set_entry_with_new_levels])                    # controller deltas
        s.read_counters(["StellarEgress.ecn.marks"], [9, 10])

Values are sent in canonical (shortest) bytes and are *not* checked against field widths here:
the contract check happens at render time, and a switch is the authority on what it accepts, so
a value that is too wide comes back as the switch's OUT_OF_RANGE, named with switch and entry.
"""
from __future__ import annotations

import hashlib
import ipaddress
import queue
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional, Sequence, TextIO

import grpc
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4sim.p4rt.client import P4RuntimeClient, WriteFailed, parse_write_error

from . import contract
from .render import entry_identity

Update = p4runtime_pb2.Update
Entity = p4runtime_pb2.Entity
MatchType = p4info_pb2.MatchField.MatchType
GetType = p4runtime_pb2.GetForwardingPipelineConfigRequest

DEFAULT_BATCH = 256
RPC_TIMEOUT_S = 60.0  # per Read/Write: a hung switch must not hang a fabric push forever
# Entries that other entries point at: (table, key field) <- action param holding that key.
# Routes and reservations name a path set by id; `Diff.phases` orders writes so that no entry
# ever names a path set the switch does not hold, not even between two batches.
REFERENCED_TABLE = "StellarIngress.routing.path_set"
REFERENCED_KEY = "meta.route.path_set_id"
REFERENCE_PARAM = "path_set_id"
_REFERENCED_FIRST = (REFERENCED_TABLE,)


class P4RuntimePushError(Exception):
    """A switch could not be reached, arbitrated, configured or read.  Names the switch."""


@dataclass
class WriteError:
    """One refused update: which change, the switch's canonical code and message."""

    change: "Change"
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.change.op.upper()} {self.change.describe()}: {self.code}: {self.message}"


class ReconcileError(P4RuntimePushError):
    """Some updates were refused; the others were applied (CONTINUE_ON_ERROR).  `diff` says
    what was attempted and `errors` which updates failed."""

    def __init__(self, switch: str, errors: list[WriteError], diff: "Diff") -> None:
        self.switch = switch
        self.errors = errors
        self.diff = diff
        lines = "\n  ".join(str(e) for e in errors[:20])
        more = f"\n  ... and {len(errors) - 20} more" if len(errors) > 20 else ""
        super().__init__(f"switch {switch}: {len(errors)} of {diff.total} writes refused:\n  {lines}{more}")


# ---------------------------------------------------------------------------------------------
# Program files
# ---------------------------------------------------------------------------------------------
@dataclass
class ProgramFiles:
    """What SetForwardingPipelineConfig carries: the P4Info and the target's device config."""

    p4info: p4info_pb2.P4Info
    device_config: bytes

    @property
    def cookie(self) -> int:
        """A 64-bit fingerprint of P4Info + device config: the pipeline's identity on a switch."""
        digest = hashlib.sha256(self.p4info.SerializeToString(deterministic=True) + self.device_config).digest()
        return int.from_bytes(digest[:8], "big")

    @classmethod
    def load(cls, device_config: str | Path, p4info: str | Path) -> "ProgramFiles":
        """Files as `p4c-bm2-ss` or `p4sim compile` write them (P4Info in text, JSON or binary)."""
        info = p4info_pb2.P4Info()
        data = Path(p4info).read_bytes()
        suffix = Path(p4info).suffix.lower()
        if suffix in (".bin", ".pb"):
            info.ParseFromString(data)
        elif suffix == ".json":
            from google.protobuf import json_format
            json_format.Parse(data.decode(), info)
        else:
            text_format.Merge(data.decode(), info)
        return cls(info, Path(device_config).read_bytes())

    @classmethod
    def compile(cls, source: str | Path, include_dirs: Sequence[str | Path] = (), out_dir: Optional[Path] = None) -> "ProgramFiles":
        """Compile with p4sim (the embedded p4c counterpart) into `out_dir` (a temp dir if None)."""
        import tempfile

        from p4sim.compiler import compile_files

        with tempfile.TemporaryDirectory() as tmp:
            where = Path(out_dir) if out_dir is not None else Path(tmp)
            stem = Path(source).stem
            json_path, info_path = where / f"{stem}.json", where / f"{stem}.p4info.txtpb"
            compile_files(str(source), include_dirs=[str(d) for d in include_dirs], out_json=json_path,
                          p4info_out=info_path)
            return cls.load(json_path, info_path)


# ---------------------------------------------------------------------------------------------
# P4Info by name
# ---------------------------------------------------------------------------------------------
@dataclass
class _Field:
    id: int
    name: str
    kind: int
    width: int


@dataclass
class _Table:
    id: int
    name: str
    fields: dict[str, _Field]
    by_id: dict[int, _Field]
    const: bool


@dataclass
class _Action:
    id: int
    name: str
    params: dict[str, tuple[int, int]]  # name -> (id, width)
    by_id: dict[int, str]


@dataclass
class _Array:
    id: int
    name: str
    size: int
    width: int = 0


class P4InfoNames:
    """P4Info objects by name (full name or alias) and by id, for encoding and decoding."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self.tables: dict[str, _Table] = {}
        self.tables_by_id: dict[int, _Table] = {}
        for t in p4info.tables:
            fields = {f.name: _Field(f.id, f.name, f.match_type, f.bitwidth) for f in t.match_fields}
            table = _Table(t.preamble.id, t.preamble.name, fields, {f.id: f for f in fields.values()}, t.is_const_table)
            self._add(self.tables, t.preamble, table)
            self.tables_by_id[table.id] = table
        self.actions: dict[str, _Action] = {}
        self.actions_by_id: dict[int, _Action] = {}
        for a in p4info.actions:
            action = _Action(a.preamble.id, a.preamble.name, {p.name: (p.id, p.bitwidth) for p in a.params},
                             {p.id: p.name for p in a.params})
            self._add(self.actions, a.preamble, action)
            self.actions_by_id[action.id] = action
        self.registers: dict[str, _Array] = {}
        self.registers_by_id: dict[int, _Array] = {}
        for r in p4info.registers:
            reg = _Array(r.preamble.id, r.preamble.name, r.size, r.type_spec.bitstring.bit.bitwidth)
            self._add(self.registers, r.preamble, reg)
            self.registers_by_id[reg.id] = reg
        self.counters: dict[str, _Array] = {}
        self.counters_by_id: dict[int, _Array] = {}
        for c in p4info.counters:
            ctr = _Array(c.preamble.id, c.preamble.name, c.size)
            self._add(self.counters, c.preamble, ctr)
            self.counters_by_id[ctr.id] = ctr
        self.meters: dict[str, _Array] = {}
        self.meters_by_id: dict[int, _Array] = {}
        for m in p4info.meters:
            met = _Array(m.preamble.id, m.preamble.name, m.size)
            self._add(self.meters, m.preamble, met)
            self.meters_by_id[met.id] = met

    @staticmethod
    def _add(by_name: dict, preamble: Any, obj: Any) -> None:
        by_name[preamble.name] = obj
        if preamble.alias and preamble.alias not in by_name:
            by_name[preamble.alias] = obj

    def _get(self, kind: str, name: str) -> Any:
        found = getattr(self, kind).get(name)
        if found is None:
            raise KeyError(f"no {kind[:-1]} named {name!r} in the switch's P4Info")
        return found

    def table(self, name: str) -> _Table:
        return self._get("tables", name)

    def action(self, name: str) -> _Action:
        return self._get("actions", name)

    def register(self, name: str) -> _Array:
        return self._get("registers", name)

    def counter(self, name: str) -> _Array:
        return self._get("counters", name)

    def meter(self, name: str) -> _Array:
        return self._get("meters", name)


def _bytes(value: int) -> bytes:
    if value < 0:
        raise ValueError(f"negative value {value}")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def _int(data: bytes) -> int:
    return int.from_bytes(data, "big")


# ---------------------------------------------------------------------------------------------
# Document form <-> P4Runtime
# ---------------------------------------------------------------------------------------------
def encode_entry(names: P4InfoNames, entry: Mapping[str, Any]) -> p4runtime_pb2.TableEntry:
    """A document entry (or default action) as a P4Runtime TableEntry."""
    table = names.table(entry["table"])
    out = p4runtime_pb2.TableEntry(table_id=table.id)
    if entry.get("default_action"):
        out.is_default_action = True
    else:
        for fname, value in entry.get("match", {}).items():
            f = table.fields.get(fname)
            if f is None:
                raise KeyError(f"table {table.name} has no match field {fname!r}")
            fm = out.match.add(field_id=f.id)
            if f.kind == MatchType.LPM:
                fm.lpm.value = _bytes(contract.value_to_int(value["value"]))
                fm.lpm.prefix_len = int(value["prefix_len"])
            elif f.kind == MatchType.TERNARY:
                fm.ternary.value = _bytes(contract.value_to_int(value["value"]))
                fm.ternary.mask = _bytes(contract.value_to_int(value["mask"]))
            elif f.kind == MatchType.RANGE:
                fm.range.low = _bytes(contract.value_to_int(value["low"]))
                fm.range.high = _bytes(contract.value_to_int(value["high"]))
            elif f.kind == MatchType.OPTIONAL:
                fm.optional.value = _bytes(contract.value_to_int(value))
            else:
                fm.exact.value = _bytes(contract.value_to_int(value))
        out.priority = int(entry.get("priority") or 0)
    if entry.get("action"):
        action = names.action(entry["action"])
        out.action.action.action_id = action.id
        for pname, value in entry.get("params", {}).items():
            if pname not in action.params:
                raise KeyError(f"action {action.name} has no param {pname!r}")
            out.action.action.params.add(param_id=action.params[pname][0], value=_bytes(contract.value_to_int(value)))
    return out


def decode_entry(names: P4InfoNames, te: p4runtime_pb2.TableEntry) -> dict[str, Any]:
    """A TableEntry read from a switch in document form (ints for every value)."""
    table = names.tables_by_id.get(te.table_id)
    if table is None:
        raise P4RuntimePushError(f"switch returned an entry of unknown table id {te.table_id}")
    out: dict[str, Any] = {"table": table.name}
    if te.is_default_action:
        out["default_action"] = True
    else:
        match: dict[str, Any] = {}
        for fm in te.match:
            f = table.by_id[fm.field_id]
            kind = fm.WhichOneof("field_match_type")
            if kind == "lpm":
                match[f.name] = {"value": _int(fm.lpm.value), "prefix_len": fm.lpm.prefix_len}
            elif kind == "ternary":
                match[f.name] = {"value": _int(fm.ternary.value), "mask": _int(fm.ternary.mask)}
            elif kind == "range":
                match[f.name] = {"low": _int(fm.range.low), "high": _int(fm.range.high)}
            elif kind == "optional":
                match[f.name] = _int(fm.optional.value)
            else:
                match[f.name] = _int(fm.exact.value)
        out["match"] = match
    if te.action.WhichOneof("type") == "action":
        action = names.actions_by_id[te.action.action.action_id]
        out["action"] = action.name
        out["params"] = {action.by_id[p.param_id]: _int(p.value) for p in te.action.action.params}
    else:
        out["action"] = None
        out["params"] = {}
    if te.priority:
        out["priority"] = te.priority
    return out


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


# ---------------------------------------------------------------------------------------------
# Diff
# ---------------------------------------------------------------------------------------------
@dataclass
class Change:
    """One write: op insert|modify|delete of kind entry|default|meter|register.

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
        would leave a dangling reference: path sets to insert go before the modifies (a
        modified route may point at one), and a path set still named by an entry the switch
        keeps is deleted last, after the modifies have moved that entry away."""
        deleted = {entry_identity(c.item) for c in self.deletes}
        in_use: set[int] = set()
        if state is not None:
            for key, entry in state.entries.items():
                if key not in deleted and REFERENCE_PARAM in (entry.get("params") or {}):
                    in_use.add(contract.value_to_int(entry["params"][REFERENCE_PARAM]))

        def still_named(change: Change) -> bool:
            item = change.item
            return (item["table"] == REFERENCED_TABLE
                    and contract.value_to_int(item.get("match", {}).get(REFERENCED_KEY, -1)) in in_use)

        early_deletes = [c for c in self.deletes if not still_named(c)]
        late_deletes = [c for c in self.deletes if still_named(c)]
        targets = [c for c in self.inserts if c.item["table"] == REFERENCED_TABLE]
        others = [c for c in self.inserts if c.item["table"] != REFERENCED_TABLE]
        return [phase for phase in (early_deletes, targets, self.modifies, others, late_deletes) if phase]

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
    diff.inserts.sort(key=lambda c: c.item["table"] not in _REFERENCED_FIRST)
    diff.deletes.sort(key=lambda c: c.item["table"] in _REFERENCED_FIRST)
    return diff


@dataclass
class SwitchState:
    """What a switch holds, in document form, keyed like the reconcile compares it."""

    entries: dict[tuple, dict[str, Any]] = field(default_factory=dict)  # entry_identity -> entry
    defaults: dict[str, dict[str, Any]] = field(default_factory=dict)  # table -> default entry
    meters: dict[tuple[str, int], Optional[dict[str, int]]] = field(default_factory=dict)
    registers: dict[tuple[str, int], int] = field(default_factory=dict)

    def as_document(self) -> dict[str, Any]:
        """The state as a (partial) entry document: entries, meters and registers lists."""
        return {
            "entries": [*self.defaults.values(), *self.entries.values()],
            "meters": [{"name": n, "index": i, **cfg} for (n, i), cfg in self.meters.items() if cfg is not None],
            "registers": [{"name": n, "index": i, "value": v} for (n, i), v in self.registers.items()],
        }


# ---------------------------------------------------------------------------------------------
# One switch
# ---------------------------------------------------------------------------------------------
class SwitchSession:
    """A primary P4Runtime connection to one switch, with read-diff-write on documents."""

    def __init__(self, address: str, device_id: int, p4info: Optional[p4info_pb2.P4Info] = None,
                 election_id: tuple[int, int] = (0, 1), name: Optional[str] = None,
                 batch_size: int = DEFAULT_BATCH, timeout: float = 10.0) -> None:
        self.address = address
        self.device_id = device_id
        self.name = name or f"{address}#{device_id}"
        self.batch_size = batch_size
        self.timeout = timeout
        self.client = P4RuntimeClient(address, device_id=device_id, election_id=election_id)
        self.names: Optional[P4InfoNames] = None
        if p4info is not None:
            self.use_p4info(p4info)
        self._connected = False

    # -- connection ---------------------------------------------------------------------------
    def connect(self, read_only: bool = False) -> "SwitchSession":
        """Open the stream and arbitrate; fail unless this client becomes primary.

        `read_only`: no stream and no arbitration (P4Runtime Reads need neither), so reading
        counters never competes with the controller that is primary.
        """
        if read_only:
            try:
                grpc.channel_ready_future(self.client.channel).result(timeout=self.timeout)
            except grpc.FutureTimeoutError:
                self.client.close()
                raise P4RuntimePushError(f"switch {self.name}: cannot connect to {self.address} "
                                         f"(device id {self.device_id}): not reachable within {self.timeout:g}s") from None
            self._connected = True
            return self
        try:
            answer = self.client.connect(timeout=self.timeout)
        except (grpc.FutureTimeoutError, grpc.RpcError, ConnectionError) as exc:
            self.client.close()
            if isinstance(exc, grpc.FutureTimeoutError):
                why = f"not reachable within {self.timeout:g}s"
            elif isinstance(exc, ConnectionError) and self.client.stream_status is not None:
                why = _rpc_text(self.client.stream_status)  # the server closed the stream: its status
            else:
                why = _rpc_text(exc)
            raise P4RuntimePushError(f"switch {self.name}: cannot connect to {self.address} "
                                     f"(device id {self.device_id}): {why}") from None
        except queue.Empty:
            self.client.close()
            raise P4RuntimePushError(f"switch {self.name}: no arbitration answer from {self.address} "
                                     f"(device id {self.device_id}) within {self.timeout:g}s") from None
        if answer.status.code != 0:
            self.client.close()
            raise P4RuntimePushError(f"switch {self.name}: not primary at {self.address} "
                                     f"(election id {self.client.election_id}): {answer.status.message}")
        self._connected = True
        return self

    def close(self) -> None:
        if self._connected:
            self._connected = False
            self.client.close()

    def __enter__(self) -> "SwitchSession":
        return self.connect() if not self._connected else self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- pipeline -----------------------------------------------------------------------------
    def use_p4info(self, p4info: p4info_pb2.P4Info) -> None:
        self.names = P4InfoNames(p4info)
        self.client.p4info = p4info

    def current_pipeline(self) -> tuple[Optional[p4info_pb2.P4Info], int]:
        """(P4Info, cookie) the switch runs; (None, 0) when it has no pipeline yet."""
        req = GetType(device_id=self.device_id, response_type=GetType.P4INFO_AND_COOKIE)
        try:
            resp = self.client.stub.GetForwardingPipelineConfig(req, timeout=self.timeout)
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.FAILED_PRECONDITION:  # BMv2 without a pipeline
                return None, 0
            raise P4RuntimePushError(f"switch {self.name}: GetForwardingPipelineConfig: {_rpc_text(exc)}") from None
        config = resp.config
        if not config.HasField("p4info") or not (config.p4info.tables or config.p4info.actions):
            return None, 0
        return config.p4info, config.cookie.cookie

    def load_switch_p4info(self) -> p4info_pb2.P4Info:
        """Use the P4Info the switch runs (for sessions that do not push a pipeline)."""
        p4info, _ = self.current_pipeline()
        if p4info is None:
            raise P4RuntimePushError(f"switch {self.name}: no forwarding pipeline at {self.address}; "
                                     "push one first (stellarctl push)")
        self.use_p4info(p4info)
        return p4info

    def ensure_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes) -> bool:
        """Push the pipeline unless the switch already runs it (same P4Info and cookie).

        Returns True when it was pushed.  Pushing resets the switch's tables, so skipping an
        identical pipeline is what keeps a second push from wiping state.
        """
        program = ProgramFiles(p4info, device_config)
        have, cookie = self.current_pipeline()
        same = (have is not None and cookie == program.cookie
                and have.SerializeToString(deterministic=True) == p4info.SerializeToString(deterministic=True))
        if not same:
            try:
                self.client.set_pipeline(p4info, device_config, cookie=program.cookie)
            except grpc.RpcError as exc:
                raise P4RuntimePushError(f"switch {self.name}: SetForwardingPipelineConfig refused: "
                                         f"{_rpc_text(exc)}") from None
        self.use_p4info(p4info)
        return not same

    def _names(self) -> P4InfoNames:
        if self.names is None:
            self.load_switch_p4info()
        assert self.names is not None
        return self.names

    # -- reads --------------------------------------------------------------------------------
    def _read(self, entities: list[Entity], what: str) -> list[Entity]:
        if not entities:
            return []
        try:
            req = p4runtime_pb2.ReadRequest(device_id=self.device_id, entities=entities)
            return [e for resp in self.client.stub.Read(req, timeout=RPC_TIMEOUT_S) for e in resp.entities]
        except grpc.RpcError as exc:
            raise P4RuntimePushError(f"switch {self.name}: reading {what}: {_rpc_text(exc)}") from None

    def read_entries(self, table: Optional[str] = None) -> list[dict[str, Any]]:
        """Every entry of one table, or of all tables (one wildcard read), in document form."""
        names = self._names()
        te = p4runtime_pb2.TableEntry(table_id=names.table(table).id if table else 0)
        return [decode_entry(names, e.table_entry) for e in self._read([Entity(table_entry=te)], "table entries")]

    def read_defaults(self, tables: Iterable[str]) -> dict[str, dict[str, Any]]:
        names = self._names()
        wants = [Entity(table_entry=p4runtime_pb2.TableEntry(table_id=names.table(t).id, is_default_action=True))
                 for t in dict.fromkeys(tables)]
        out = {}
        for e in self._read(wants, "default actions"):
            entry = decode_entry(names, e.table_entry)
            out[entry["table"]] = entry
        return out

    def read_registers(self, names: Iterable[str], indexes: Optional[Iterable[int]] = None) -> dict[str, dict[int, int]]:
        """Register cells: `{name: {index: value}}`; indexes None = every cell."""
        info = self._names()
        wants = []
        for name in names:
            reg = info.register(name)
            for idx in ([None] if indexes is None else indexes):
                e = p4runtime_pb2.RegisterEntry(register_id=reg.id)
                if idx is not None:
                    e.index.index = idx
                wants.append(Entity(register_entry=e))
        out: dict[str, dict[int, int]] = {}
        for e in self._read(wants, "registers"):
            r = e.register_entry
            out.setdefault(info.registers_by_id[r.register_id].name, {})[r.index.index] = _int(r.data.bitstring)
        return out

    def read_counters(self, names: Iterable[str], indexes: Optional[Iterable[int] | Mapping[str, Iterable[int]]] = None
                      ) -> dict[str, dict[int, tuple[int, int]]]:
        """Counter cells: `{name: {index: (packets, bytes)}}`.  `indexes`: None = all cells,
        a list for every counter, or a dict name -> list."""
        info = self._names()
        wants = []
        for name in names:
            ctr = info.counter(name)
            chosen = indexes.get(name) if isinstance(indexes, Mapping) else indexes
            for idx in ([None] if chosen is None else chosen):
                e = p4runtime_pb2.CounterEntry(counter_id=ctr.id)
                if idx is not None:
                    e.index.index = idx
                wants.append(Entity(counter_entry=e))
        out: dict[str, dict[int, tuple[int, int]]] = {name: {} for name in names}
        for e in self._read(wants, "counters"):
            c = e.counter_entry
            out[info.counters_by_id[c.counter_id].name][c.index.index] = (c.data.packet_count, c.data.byte_count)
        return out

    def read_meters(self, cells: Iterable[tuple[str, int]]) -> dict[tuple[str, int], Optional[dict[str, int]]]:
        info = self._names()
        wants = []
        for name, idx in cells:
            e = p4runtime_pb2.MeterEntry(meter_id=info.meter(name).id)
            e.index.index = idx
            wants.append(Entity(meter_entry=e))
        out: dict[tuple[str, int], Optional[dict[str, int]]] = {}
        for e in self._read(wants, "meters"):
            m = e.meter_entry
            cfg = None
            if m.HasField("config"):
                cfg = {"cir": m.config.cir, "cburst": m.config.cburst, "pir": m.config.pir, "pburst": m.config.pburst}
            out[(info.meters_by_id[m.meter_id].name, m.index.index)] = cfg
        return out

    def read_state(self, document: Optional[Mapping[str, Any]] = None) -> SwitchState:
        """All table entries (wildcard read) plus the defaults, meters and registers the
        document names (no document: the defaults of every table, no meters or registers)."""
        names = self._names()
        state = SwitchState()
        for entry in self.read_entries():
            if names.table(entry["table"]).const:
                continue
            state.entries[entry_identity(entry)] = entry
        doc = document or {}
        default_tables = ([e["table"] for e in doc.get("entries", []) if e.get("default_action")]
                          if document is not None else [t.name for t in names.tables_by_id.values()])
        state.defaults = self.read_defaults(default_tables)
        state.meters = self.read_meters([(m["name"], m["index"]) for m in doc.get("meters", [])])
        regs: dict[str, list[int]] = {}
        for r in doc.get("registers", []):
            regs.setdefault(r["name"], []).append(r["index"])
        for name, idxs in regs.items():
            for idx, value in self.read_registers([name], idxs).get(name, {}).items():
                state.registers[(name, idx)] = value
        return state

    # -- writes -------------------------------------------------------------------------------
    def _update(self, change: Change) -> Update:
        names = self._names()
        kind = {"insert": Update.INSERT, "modify": Update.MODIFY, "delete": Update.DELETE}[change.op]
        item = change.item
        if change.kind in ("entry", "default"):
            te = encode_entry(names, item)
            if change.op == "delete":
                te.ClearField("action")
            return Update(type=kind, entity=Entity(table_entry=te))
        if change.kind == "register":
            reg = names.register(item["name"])
            e = p4runtime_pb2.RegisterEntry(register_id=reg.id)
            e.index.index = item["index"]
            e.data.bitstring = _bytes(contract.value_to_int(item["value"]))
            return Update(type=kind, entity=Entity(register_entry=e))
        met = names.meter(item["name"])
        e = p4runtime_pb2.MeterEntry(meter_id=met.id)
        e.index.index = item["index"]
        e.config.cir, e.config.cburst, e.config.pir, e.config.pburst = (item["cir"], item["cburst"], item["pir"],
                                                                        item["pburst"])
        return Update(type=kind, entity=Entity(meter_entry=e))

    def _write(self, updates: list[Update]) -> None:
        """One Write RPC (CONTINUE_ON_ERROR), with a deadline; WriteFailed carries per-update codes."""
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id, updates=updates)
        req.election_id.high, req.election_id.low = self.client.election_id
        try:
            self.client.stub.Write(req, timeout=RPC_TIMEOUT_S)
        except grpc.RpcError as err:
            details = parse_write_error(err) if err.code() == grpc.StatusCode.UNKNOWN else []
            if details:
                raise WriteFailed(details) from err
            raise

    def apply(self, changes: Sequence[Change], diff: Optional[Diff] = None) -> list[WriteError]:
        """Write `changes` in batches (CONTINUE_ON_ERROR); returns the refused ones.

        A change the client cannot even encode (unknown name) is refused locally with code
        INVALID_ARGUMENT and never sent.  Transport failures raise P4RuntimePushError.
        """
        errors: list[WriteError] = []
        pending: list[tuple[Change, Update]] = []
        for change in changes:
            try:
                pending.append((change, self._update(change)))
            except (KeyError, ValueError) as exc:
                errors.append(WriteError(change, "INVALID_ARGUMENT", f"not sent: {exc}"))
        for start in range(0, len(pending), self.batch_size):
            batch = pending[start:start + self.batch_size]
            try:
                self._write([u for _, u in batch])
                acked = len(batch)
            except WriteFailed as failed:
                acked = 0
                if len(failed.errors) != len(batch):
                    # not one status per update (not what the spec asks): blame the whole batch
                    first = next((e for e in failed.errors if e.code != "OK"), None)
                    code, message = (first.code, first.message) if first else ("UNKNOWN", str(failed))
                    errors.extend(WriteError(change, code, f"{message} (batch-wide)") for change, _ in batch)
                else:
                    for (change, _), result in zip(batch, failed.errors):
                        if result.code == "OK":
                            acked += 1
                        else:
                            errors.append(WriteError(change, result.code, result.message))
            except grpc.RpcError as exc:
                raise P4RuntimePushError(f"switch {self.name}: Write of {len(batch)} updates "
                                         f"(first: {batch[0][0].op.upper()} {batch[0][0].describe()}): "
                                         f"{_rpc_text(exc)}") from None
            if diff is not None:
                diff.written += acked
                diff.batches += 1
                if acked:
                    diff.last_ack = time.perf_counter()
        return errors

    def reconcile(self, document: Mapping[str, Any], dry_run: bool = False,
                  managed_tables: Optional[Iterable[str]] = None) -> Diff:
        """Make the switch hold exactly `document`; returns the diff (with `written` counts).

        Raises ReconcileError (after writing everything else) when the switch refused updates.
        """
        state = self.read_state(document)
        diff = compute_diff(self.name, document, state, managed_tables)
        diff.dry_run = dry_run
        if dry_run or diff.empty:
            return diff
        errors: list[WriteError] = []
        for phase in diff.phases(state):
            errors.extend(self.apply(phase, diff))
        if errors:
            raise ReconcileError(self.name, errors, diff)
        return diff

    def modify_entries(self, entries: Iterable[Mapping[str, Any]]) -> int:
        """MODIFY existing entries (or default actions) in one batch, e.g. path-set congestion
        levels from a controller.  Returns the number written; raises ReconcileError on refusals."""
        changes = [Change("modify", "default" if e.get("default_action") else "entry", dict(e)) for e in entries]
        diff = Diff(self.name, modifies=changes)
        errors = self.apply(changes, diff)
        if errors:
            raise ReconcileError(self.name, errors, diff)
        return diff.written

    def write_registers(self, cells: Iterable[tuple[str, int, int]]) -> int:
        """Write register cells `(name, index, value)`; returns how many the switch acknowledged."""
        changes = [Change("modify", "register", {"name": n, "index": i, "value": v}) for n, i, v in cells]
        diff = Diff(self.name, modifies=changes)
        errors = self.apply(changes, diff)
        if errors:
            raise ReconcileError(self.name, errors, diff)
        return diff.written


def _rpc_text(exc: BaseException) -> str:
    if isinstance(exc, grpc.RpcError) and hasattr(exc, "code"):
        try:
            return f"{exc.code().name}: {exc.details()}"
        except Exception:  # noqa: BLE001 - some RpcErrors carry no status
            pass
    return f"{type(exc).__name__}: {exc}"


# ---------------------------------------------------------------------------------------------
# A whole fabric
# ---------------------------------------------------------------------------------------------
@dataclass
class SwitchResult:
    """One switch's outcome in a fabric push."""

    switch: str
    address: str
    diff: Optional[Diff] = None
    seconds: float = 0.0
    pipeline_pushed: bool = False
    error: Optional[str] = None
    write_errors: list[WriteError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class FabricPush:
    results: dict[str, SwitchResult]
    seconds: float
    dry_run: bool = False

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results.values())

    @property
    def written(self) -> int:
        return sum(r.diff.written for r in self.results.values() if r.diff is not None)

    @property
    def in_sync(self) -> bool:
        return self.ok and all(r.diff is not None and r.diff.empty for r in self.results.values())


class _Progress:
    """`push lab: 3/6 switches, 120 writes, 1 failed, 0.8s` on one rewritten stderr line."""

    def __init__(self, label: str, total: int, stream: Optional[TextIO]) -> None:
        self.label, self.total, self.stream = label, total, stream
        self.done = self.writes = self.failed = 0
        self.started = time.perf_counter()
        self.lock = threading.Lock()
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())

    def update(self, result: SwitchResult) -> None:
        with self.lock:
            self.done += 1
            self.writes += result.diff.written if result.diff else 0
            self.failed += 0 if result.ok else 1
            self._show(last=result.switch)

    def _show(self, last: str = "") -> None:
        if self.stream is None:
            return
        bar = "#" * self.done + "." * (self.total - self.done)
        text = (f"{self.label}: [{bar}] {self.done}/{self.total} switches, {self.writes} writes"
                + (f", {self.failed} failed" if self.failed else "")
                + f", {time.perf_counter() - self.started:.1f}s" + (f" (last: {last})" if last else ""))
        self.stream.write(("\r\x1b[K" + text) if self.tty else text + "\n")
        if self.tty and self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


def push_fabric(fabric: Any, documents: Mapping[str, Mapping[str, Any]], program: Optional[ProgramFiles] = None,
                addresses: Optional[Mapping[str, str]] = None, concurrency: int = 16, dry_run: bool = False,
                election_id: tuple[int, int] = (0, 1), switches: Optional[Iterable[str]] = None,
                progress: Optional[TextIO] | str = "stderr", batch_size: int = DEFAULT_BATCH,
                label: str = "push", timeout: float = 10.0,
                managed_tables: Optional[Iterable[str]] = None,
                sessions: Optional[Mapping[str, "SwitchSession"]] = None) -> FabricPush:
    """Reconcile every switch (a thread each, up to `concurrency` at once).

    `program` given: the pipeline is pushed where the switch does not already run it; None: the
    switch's own P4Info is used (it must have a pipeline).  `addresses` overrides the fabric's
    `p4runtime` addresses per switch.  A failing switch does not stop the others; its
    `SwitchResult.error` says why.  `sessions`: already connected sessions to use (and leave
    open) for some switches -- a second primary connection with the same election id would be
    refused.
    `managed_tables` limits deletes to those tables (see `compute_diff`), for partial documents.
    `progress`: a stream for the progress line ("stderr" = sys.stderr at call time, None = quiet).
    """
    managed = list(managed_tables) if managed_tables is not None else None
    if progress == "stderr":  # resolved per call, so a replaced sys.stderr (tests, the demo) is honoured
        progress = sys.stderr
    names = list(switches) if switches is not None else list(documents)
    for name in names:
        if name not in documents:
            raise KeyError(f"no document for switch {name!r}")
    bar = _Progress(f"{label} {getattr(fabric, 'name', '')}".strip(), len(names), progress)
    started = time.perf_counter()

    def one(name: str) -> SwitchResult:
        model = fabric.switches[name]
        address = (addresses or {}).get(name, model.p4runtime)
        result = SwitchResult(name, address)
        t0 = time.perf_counter()
        given = (sessions or {}).get(name)
        session = given or SwitchSession(address, model.device_id, election_id=election_id, name=name,
                                         batch_size=batch_size, timeout=timeout)
        try:
            if given is None:
                session.connect()
            if program is not None and not dry_run:
                result.pipeline_pushed = session.ensure_pipeline(program.p4info, program.device_config)
            elif program is not None:
                have, cookie = session.current_pipeline()
                if have is None or cookie != program.cookie:
                    result.pipeline_pushed = True  # would push: diff against an empty switch
                    session.use_p4info(program.p4info)
            if dry_run and result.pipeline_pushed:
                result.diff = compute_diff(name, documents[name], SwitchState(), managed)
                result.diff.dry_run = True
            else:
                result.diff = session.reconcile(documents[name], dry_run=dry_run, managed_tables=managed)
        except ReconcileError as exc:
            result.diff, result.write_errors, result.error = exc.diff, exc.errors, str(exc)
        except P4RuntimePushError as exc:
            result.error = str(exc)
        except Exception as exc:  # noqa: BLE001 - one switch's bug must not hide the others' results
            result.error = f"switch {name}: {type(exc).__name__}: {exc}"
        finally:
            result.seconds = time.perf_counter() - t0  # before the close: that only tears down gRPC
            if given is None:
                session.close()
        bar.update(result)
        return result

    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(names) or 1)),
                            thread_name_prefix="stellar-push") as pool:
        results = list(pool.map(one, names))
    return FabricPush({r.switch: r for r in results}, time.perf_counter() - started, dry_run)
