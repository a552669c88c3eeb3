"""Push rendered entry documents to switches over P4Runtime and keep them in sync.

Reconcile = read-diff-write: read what a switch holds (wildcard table reads, the default
actions, meter configs and register cells the document manages, and -- for a document with
``clone_sessions`` -- every clone session by a wildcard PRE read), compare it with the document
by `render.entry_identity`, and write only the difference, in batches: deletes first (entries
whose identity the document no longer has), then modifies (same identity, other action or
params; defaults; meters; registers), then inserts -- except that a path set is inserted
before anything may point at it and deleted only after nothing does (`Diff.phases`).  A second reconcile of the same document
therefore writes nothing, and a restarted controller converges a switch instead of wiping it.

The client is finsy (`finsy.p4client.P4Client` for gRPC and the stream, `P4Schema` for P4Info by
name, finsy's entities for encoding and decoding); this module adds what finsy does not have:
documents, the diff and its write order, per-update error reporting by switch and entry, and a
synchronous face for the CLI and the pusher.  Every session's calls run on one asyncio loop
(`_EventLoop`), so a fabric push or a controller delta has every switch's Write in flight at once.

Use::

    program = ProgramFiles.load("build/stellar.json", "build/stellar.p4info.txtpb")
    result = push_fabric(fabric, render_fabric(fabric).documents, program)   # all switches at once
    with SwitchSession("127.0.0.1:9501", device_id=1, name="leaf1") as s:    # one switch
        s.reconcile(document, dry_run=True).lines()                           # what would change
        s.modify_entries([path_set_entry_with_new_levels])                    # controller deltas
        s.read_counters(["StellarEgress.ecn.marks"], [9, 10])

Values are sent in canonical (shortest) bytes.  finsy checks them against the P4Info widths, so
a value that is too wide is refused before it is sent, with the code a switch gives it
(OUT_OF_RANGE) and named with switch and entry; the rest of the batch still goes.
"""
from __future__ import annotations

import asyncio
import hashlib
import ipaddress
import sys
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, Mapping, Optional, Sequence, TextIO

import finsy as fy
from finsy.grpcutil import GRPCCredentialsTLS, GRPCStatusCode
from finsy.p4client import P4Client, P4ClientError
from finsy.p4schema import P4MatchType
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from . import contract
from .render import entry_identity

Update = p4runtime_pb2.Update
Entity = p4runtime_pb2.Entity

DEFAULT_BATCH = 256
RPC_TIMEOUT_S = 60.0  # per Read/Write: a hung switch must not hang a fabric push forever
# finsy 0.30 gives every unary RPC a fixed 10 s gRPC deadline (p4client._DEFAULT_RPC_TIMEOUT, read
# at each call).  A pipeline push to a loaded target (a BMv2 JSON load, or p4sim compiling the
# program, six servers sharing one process in the demo) can take longer; our own wait above
# (RPC_TIMEOUT_S around each call) is the bound that matters, so finsy's deadline follows it.
import finsy.p4client as _finsy_p4client  # noqa: E402

_finsy_p4client._DEFAULT_RPC_TIMEOUT = RPC_TIMEOUT_S
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


class P4RuntimePushError(Exception):
    """A switch could not be reached, arbitrated, configured or read.  Names the switch."""


@dataclass(frozen=True)
class Transport:
    """How sessions reach switches: TLS / mutual TLS credentials (finsy's GRPCCredentialsTLS,
    from PEM files) and the P4Runtime role (with an optional packed ``role.config``).

    A switch served with TLS refuses a plaintext client and the reverse; with client auth it
    refuses a client without a certificate its CA signed.  ``role`` "" is the default role
    (full pipeline access).
    """

    tls: Optional[GRPCCredentialsTLS] = None
    role: str = ""
    role_config: Optional[Any] = None  # google.protobuf.Any

    @classmethod
    def from_files(cls, ca: Optional[str] = None, cert: Optional[str] = None, key: Optional[str] = None,
                   server_name: str = "", role: str = "") -> "Transport":
        """ValueError (naming the option) for an unreadable file or a cert without its key."""
        if bool(cert) != bool(key):
            raise ValueError("a client certificate needs its key (--grpc-tls-cert with --grpc-tls-key)")
        if not (ca or cert):
            return cls(role=role)
        for what, path in (("--grpc-tls-ca", ca), ("--grpc-tls-cert", cert), ("--grpc-tls-key", key)):
            if path and not Path(path).is_file():
                raise ValueError(f"{what} {path}: no such file")
        tls = GRPCCredentialsTLS(cacert=Path(ca) if ca else None, cert=Path(cert) if cert else None,
                                 private_key=Path(key) if key else None, target_name_override=server_name)
        return cls(tls=tls, role=role)


_default_transport = Transport()


def set_default_transport(transport: Transport) -> None:
    """What sessions use when not told otherwise (stellarctl sets it once from its options)."""
    global _default_transport
    _default_transport = transport


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
    def compile(cls, source: str | Path, include_dirs: Sequence[str | Path] = (), out_dir: Optional[Path] = None,
                defines: Optional[Mapping[str, str]] = None) -> "ProgramFiles":
        """Compile with p4sim (the embedded p4c counterpart) into `out_dir` (a temp dir if None)."""
        import tempfile

        from p4sim.compiler import compile_files

        with tempfile.TemporaryDirectory() as tmp:
            where = Path(out_dir) if out_dir is not None else Path(tmp)
            stem = Path(source).stem
            json_path, info_path = where / f"{stem}.json", where / f"{stem}.p4info.txtpb"
            compile_files(str(source), include_dirs=[str(d) for d in include_dirs], defines=defines,
                          out_json=json_path, p4info_out=info_path)
            return cls.load(json_path, info_path)


# ---------------------------------------------------------------------------------------------
# Document form <-> P4Runtime table entries (P4Info by name: finsy's P4Schema)
# ---------------------------------------------------------------------------------------------
class EntryCodec:
    """Document entries <-> P4Runtime TableEntry protos, by the ids and widths of finsy's P4Schema.

    finsy's own entity codec (P4TableEntry.encode/decode) is the reference and gives the same
    protos (tests/control_plane/test_entry_codec.py checks every entry of the 512-GPU fabric
    both ways), but it resolves every name through the schema per value: measured on the 512-GPU
    fabric's 8,595 entries, 55 µs to encode and 75 µs to decode an entry, against 25-32 and 16 µs
    for this codec, whose look-ups are made once per P4Info.  The controller's failover delta
    and every reconcile read-back go through here.
    """

    def __init__(self, schema: fy.P4Schema) -> None:
        self.schema = schema
        self.tables: dict[str, tuple] = {}
        self.tables_by_id: dict[int, tuple] = {}
        for t in schema.tables:
            fields = {f.name: (f.id, f.match_type, f.bitwidth) for f in t.match_fields}
            by_id = {f.id: (f.name, f.match_type) for f in t.match_fields}
            info = (t.id, t.name, fields, by_id)
            self.tables_by_id[t.id] = info
            self.tables[t.name] = self.tables[t.alias] = info
        self.actions: dict[str, tuple] = {}
        self.actions_by_id: dict[int, tuple] = {}
        for act in schema.actions:
            params = {p.name: (p.id, p.bitwidth) for p in act.params}
            info = (act.id, act.name, params, {p.id: p.name for p in act.params})
            self.actions_by_id[act.id] = info
            self.actions[act.name] = self.actions[act.alias] = info

    @staticmethod
    def _bytes(value: int, width: int, what: str) -> bytes:
        if value < 0 or (width and value.bit_length() > width):
            raise ValueError(f"{what}: value {value} does not fit in {width} bits")
        return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")

    def encode(self, entry: Mapping[str, Any], with_action: bool = True) -> p4runtime_pb2.TableEntry:
        """KeyError: an unknown name; ValueError: a value too wide for its field (OUT_OF_RANGE)."""
        table = self.tables.get(entry["table"])
        if table is None:
            raise KeyError(f"no table named {entry['table']!r} in the switch's P4Info")
        tid, tname, fields, _ = table
        out = p4runtime_pb2.TableEntry(table_id=tid)
        b = self._bytes
        if entry.get("default_action"):
            out.is_default_action = True
        else:
            for fname, value in (entry.get("match") or {}).items():
                f = fields.get(fname)
                if f is None:
                    raise KeyError(f"table {tname} has no match field {fname!r}")
                fid, kind, width = f
                if kind == P4MatchType.LPM:
                    plen = int(value["prefix_len"])
                    if plen == 0:
                        continue  # don't care: omitted, as the spec asks
                    fm = out.match.add(field_id=fid)
                    fm.lpm.value = b(contract.value_to_int(value["value"]), width, fname)
                    fm.lpm.prefix_len = plen
                elif kind == P4MatchType.TERNARY:
                    mask = contract.value_to_int(value["mask"])
                    if mask == 0:
                        continue
                    fm = out.match.add(field_id=fid)
                    fm.ternary.value = b(contract.value_to_int(value["value"]), width, fname)
                    fm.ternary.mask = b(mask, width, fname)
                elif kind == P4MatchType.RANGE:
                    fm = out.match.add(field_id=fid)
                    fm.range.low = b(contract.value_to_int(value["low"]), width, fname)
                    fm.range.high = b(contract.value_to_int(value["high"]), width, fname)
                elif kind == P4MatchType.OPTIONAL:
                    if value is None:
                        continue
                    out.match.add(field_id=fid).optional.value = b(contract.value_to_int(value), width, fname)
                else:
                    out.match.add(field_id=fid).exact.value = b(contract.value_to_int(value), width, fname)
            out.priority = int(entry.get("priority") or 0)
        if with_action and entry.get("action"):
            action = self.actions.get(entry["action"])
            if action is None:
                raise KeyError(f"no action named {entry['action']!r} in the switch's P4Info")
            aid, aname, params, _ = action
            out.action.action.action_id = aid
            add = out.action.action.params.add
            for pname, value in (entry.get("params") or {}).items():
                p = params.get(pname)
                if p is None:
                    raise KeyError(f"action {aname} has no param {pname!r}")
                add(param_id=p[0], value=b(contract.value_to_int(value), p[1], pname))
        return out

    def decode(self, te: p4runtime_pb2.TableEntry) -> dict[str, Any]:
        """A TableEntry read from a switch in document form (full names, ints for every value)."""
        table = self.tables_by_id.get(te.table_id)
        if table is None:
            raise P4RuntimePushError(f"switch returned an entry of unknown table id {te.table_id}")
        _, tname, _, by_id = table
        out: dict[str, Any] = {"table": tname}
        frombytes = int.from_bytes
        if te.is_default_action:
            out["default_action"] = True
        else:
            match: dict[str, Any] = {}
            for fm in te.match:
                fname = by_id[fm.field_id][0]
                kind = fm.WhichOneof("field_match_type")
                if kind == "exact":
                    match[fname] = frombytes(fm.exact.value, "big")
                elif kind == "lpm":
                    match[fname] = {"value": frombytes(fm.lpm.value, "big"), "prefix_len": fm.lpm.prefix_len}
                elif kind == "ternary":
                    match[fname] = {"value": frombytes(fm.ternary.value, "big"), "mask": frombytes(fm.ternary.mask, "big")}
                elif kind == "range":
                    match[fname] = {"low": frombytes(fm.range.low, "big"), "high": frombytes(fm.range.high, "big")}
                else:
                    match[fname] = frombytes(fm.optional.value, "big")
            out["match"] = match
        if te.action.WhichOneof("type") == "action":
            _, aname, _, pnames = self.actions_by_id[te.action.action.action_id]
            out["action"] = aname
            out["params"] = {pnames[p.param_id]: frombytes(p.value, "big") for p in te.action.action.params}
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


# ---------------------------------------------------------------------------------------------
# One switch
# ---------------------------------------------------------------------------------------------
class _EventLoop:
    """One asyncio loop, in a daemon thread, for every finsy client of the process.

    finsy is asyncio; the pusher, the CLI and the controller are synchronous.  Callers hand
    coroutines to this loop (`run` waits, `submit` returns a future), so writes to many switches
    are in flight at once on one thread instead of a thread per switch.
    """

    _loop: Optional[asyncio.AbstractEventLoop] = None
    _lock = threading.Lock()

    @classmethod
    def get(cls) -> asyncio.AbstractEventLoop:
        with cls._lock:
            if cls._loop is None or cls._loop.is_closed():
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="stellar-p4rt-loop", daemon=True).start()
                cls._loop = loop
            return cls._loop

    @classmethod
    def submit(cls, coro: Awaitable[Any]) -> "Future[Any]":
        return asyncio.run_coroutine_threadsafe(coro, cls.get())  # type: ignore[arg-type]

    @classmethod
    def run(cls, coro: Awaitable[Any], timeout: Optional[float] = None) -> Any:
        return cls.submit(coro).result(timeout)


def _code_name(code: Any) -> str:
    return getattr(code, "name", str(code))


class SwitchSession:
    """A primary P4Runtime connection to one switch (finsy's P4Client), with read-diff-write
    on documents.  Implements the controller's `SwitchOps`."""

    def __init__(self, address: str, device_id: int, p4info: Optional[p4info_pb2.P4Info] = None,
                 election_id: tuple[int, int] = (0, 1), name: Optional[str] = None,
                 batch_size: int = DEFAULT_BATCH, timeout: float = 10.0,
                 credentials: Optional[GRPCCredentialsTLS] = None,
                 transport: Optional[Transport] = None) -> None:
        transport = transport or _default_transport
        if credentials is not None:
            transport = replace(transport, tls=credentials)
        self.transport = transport
        self.role = transport.role
        credentials = transport.tls
        self.address = address
        self.device_id = device_id
        self.election_id = election_id
        self.name = name or f"{address}#{device_id}"
        self.batch_size = batch_size
        self.timeout = timeout
        self._credentials = credentials
        self.client = P4Client(address, credentials, wait_for_ready=False)
        self.schema: Optional[fy.P4Schema] = None
        self.codec: Optional[EntryCodec] = None
        self.p4info: Optional[p4info_pb2.P4Info] = None
        if p4info is not None:
            self.use_p4info(p4info)
        self._connected = False
        self._drain: Optional[asyncio.Task] = None
        self.primary = False  # cleared when the switch tells this client another one took over

    # -- connection ---------------------------------------------------------------------------
    def _fail(self, why: str) -> P4RuntimePushError:
        _EventLoop.run(self.client.close(), self.timeout)
        return P4RuntimePushError(f"switch {self.name}: cannot connect to {self.address} "
                                  f"(device id {self.device_id}): {why}")

    # A session this process closed a moment ago may still hold its election id on the server
    # (the server drops a stream when it sees the cancel, not when the client returns), so a
    # reconnect with the same id is retried for this long before the refusal is reported.
    ELECTION_ID_RELEASE_S = 2.0

    def connect(self, read_only: bool = False) -> "SwitchSession":
        """Open the channel and arbitrate; see `_connect_once`.  An "election id already used"
        refusal is retried for ELECTION_ID_RELEASE_S, then reported as it came."""
        deadline = time.monotonic() + self.ELECTION_ID_RELEASE_S
        while True:
            try:
                return self._connect_once(read_only)
            except P4RuntimePushError as exc:
                if "already used" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)
                self.client = P4Client(self.address, self._credentials, wait_for_ready=False)

    def _connect_once(self, read_only: bool = False) -> "SwitchSession":
        """Open the channel and arbitrate (StreamChannel); fail unless this client becomes primary.

        `read_only`: no stream and no arbitration (P4Runtime Reads need neither), so reading
        counters never competes with the controller that is primary.
        """
        try:
            _EventLoop.run(self._open(), self.timeout + 1)
        except (asyncio.TimeoutError, TimeoutError, FutureTimeout):
            raise self._fail(f"not reachable within {self.timeout:g}s") from None
        if read_only:
            self._connected = True
            return self
        try:
            answer = _EventLoop.run(self._arbitrate(), self.timeout + 1)
        except (asyncio.TimeoutError, TimeoutError, FutureTimeout):
            _EventLoop.run(self.client.close(), self.timeout)
            raise P4RuntimePushError(f"switch {self.name}: no arbitration answer from {self.address} "
                                     f"(device id {self.device_id}) within {self.timeout:g}s") from None
        except P4ClientError as exc:  # the server closed the stream: its status says why
            raise self._fail(f"{_code_name(exc.code)}: {exc.message}") from None
        if answer.status.code != 0:
            _EventLoop.run(self.client.close(), self.timeout)
            raise P4RuntimePushError(f"switch {self.name}: not primary at {self.address} "
                                     f"(election id {self.election_id}): {answer.status.message}")
        self.primary = True
        self._connected = True
        return self

    def reconnect(self) -> "SwitchSession":
        """A new channel and arbitration, keeping the P4Info: after the switch restarted (a
        restarted switch knows no primary) or the stream broke.  Raises P4RuntimePushError."""
        if self._connected:
            try:
                self.close()
            except Exception:  # noqa: BLE001 - the old channel may be half dead; it is dropped
                pass
        self._connected = False
        self.primary = False
        self.client = P4Client(self.address, self.transport.tls, wait_for_ready=False)
        return self.connect()

    async def _open(self) -> None:
        await self.client.open()
        assert self.client.channel is not None
        await asyncio.wait_for(self.client.channel.channel_ready(), self.timeout)

    async def _arbitrate(self) -> p4runtime_pb2.MasterArbitrationUpdate:
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.high, req.arbitration.election_id.low = self.election_id
        if self.role:
            req.arbitration.role.name = self.role
            if self.transport.role_config is not None:
                req.arbitration.role.config.CopyFrom(self.transport.role_config)
        await self.client.send(req)
        while True:
            msg = await asyncio.wait_for(self.client.receive(), self.timeout)
            if msg.WhichOneof("update") == "arbitration":
                break
        self._drain = asyncio.get_running_loop().create_task(self._read_stream())
        return msg.arbitration

    async def _read_stream(self) -> None:
        """Keep reading the stream (a switch's messages must not pile up unread); track primacy."""
        try:
            while True:
                msg = await self.client.receive()
                if msg.WhichOneof("update") == "arbitration":
                    self.primary = msg.arbitration.status.code == 0
        except (P4ClientError, RuntimeError, asyncio.CancelledError):
            self.primary = False

    def close(self) -> None:
        if self._connected:
            self._connected = False
            _EventLoop.run(self._close(), self.timeout)

    async def _close(self) -> None:
        if self._drain is not None:
            self._drain.cancel()
            self._drain = None
        await self.client.close()

    def __enter__(self) -> "SwitchSession":
        return self.connect() if not self._connected else self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- unary calls --------------------------------------------------------------------------
    def _call(self, coro: Awaitable[Any], what: str) -> Any:
        try:
            return _EventLoop.run(coro, RPC_TIMEOUT_S)
        except P4ClientError as exc:
            raise P4RuntimePushError(f"switch {self.name}: {what}: {_code_name(exc.code)}: {exc.message}") from None
        except (FutureTimeout, TimeoutError):
            raise P4RuntimePushError(f"switch {self.name}: {what}: no answer within {RPC_TIMEOUT_S:g}s") from None

    # -- pipeline -----------------------------------------------------------------------------
    def use_p4info(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self.schema = fy.P4Schema(p4info)
        self.codec = EntryCodec(self.schema)

    def current_pipeline(self) -> tuple[Optional[p4info_pb2.P4Info], int]:
        """(P4Info, cookie) the switch runs; (None, 0) when it has no pipeline yet."""
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        try:
            resp = _EventLoop.run(self.client.request(req), RPC_TIMEOUT_S)
        except P4ClientError as exc:
            if exc.code == GRPCStatusCode.FAILED_PRECONDITION:  # BMv2 without a pipeline
                return None, 0
            raise P4RuntimePushError(f"switch {self.name}: GetForwardingPipelineConfig: "
                                     f"{_code_name(exc.code)}: {exc.message}") from None
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
            req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
                device_id=self.device_id,
                action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT, role=self.role)
            req.election_id.high, req.election_id.low = self.election_id
            req.config.p4info.CopyFrom(p4info)
            req.config.p4_device_config = device_config
            req.config.cookie.cookie = program.cookie
            try:
                _EventLoop.run(self.client.request(req), RPC_TIMEOUT_S)
            except P4ClientError as exc:
                raise P4RuntimePushError(f"switch {self.name}: SetForwardingPipelineConfig refused: "
                                         f"{_code_name(exc.code)}: {exc.message}") from None
        self.use_p4info(p4info)
        return not same

    def _schema(self) -> fy.P4Schema:
        if self.schema is None:
            self.load_switch_p4info()
        assert self.schema is not None
        return self.schema

    # -- reads --------------------------------------------------------------------------------
    async def _aread(self, entities: list[Entity]) -> list[Entity]:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id, entities=entities, role=self.role)
        return [e async for resp in self.client.request_iter(req) for e in resp.entities]

    def _read(self, entities: list[Entity], what: str) -> list[Entity]:
        if not entities:
            return []
        return self._call(self._aread(entities), f"reading {what}")

    def read_entries(self, table: Optional[str] = None) -> list[dict[str, Any]]:
        """Every entry of one table, or of all tables (one wildcard read), in document form."""
        schema = self._schema()
        if table is not None and schema.tables.get(table) is None:
            raise KeyError(f"no table named {table!r} in the switch's P4Info")
        want = fy.P4TableEntry(schema.tables[table].name if table else "").encode(schema)
        assert self.codec is not None
        return [self.codec.decode(e.table_entry) for e in self._read([want], "table entries")]

    def read_defaults(self, tables: Iterable[str]) -> dict[str, dict[str, Any]]:
        schema = self._schema()
        wants = [fy.P4TableEntry(t, is_default_action=True).encode(schema) for t in dict.fromkeys(tables)]
        out = {}
        assert self.codec is not None
        for e in self._read(wants, "default actions"):
            entry = self.codec.decode(e.table_entry)
            out[entry["table"]] = entry
        return out

    def _array(self, kind: str, name: str) -> Any:
        found = getattr(self._schema(), kind).get(name)
        if found is None:
            raise KeyError(f"no {kind[:-1]} named {name!r} in the switch's P4Info")
        return found

    def read_registers(self, names: Iterable[str], indexes: Optional[Iterable[int]] = None) -> dict[str, dict[int, int]]:
        """Register cells: `{name: {index: value}}`; indexes None = every cell."""
        schema = self._schema()
        idxs = None if indexes is None else list(indexes)
        wants = [fy.P4RegisterEntry(self._array("registers", n).name, index=i).encode(schema)
                 for n in names for i in ([None] if idxs is None else idxs)]
        out: dict[str, dict[int, int]] = {}
        for e in self._read(wants, "registers"):
            r = e.register_entry
            out.setdefault(schema.registers[r.register_id].name, {})[r.index.index] = int.from_bytes(r.data.bitstring, "big")
        return out

    def read_counters(self, names: Iterable[str], indexes: Optional[Iterable[int] | Mapping[str, Iterable[int]]] = None
                      ) -> dict[str, dict[int, tuple[int, int]]]:
        """Counter cells: `{name: {index: (packets, bytes)}}`.  `indexes`: None = all cells,
        a list for every counter, or a dict name -> list."""
        schema = self._schema()
        names = list(names)
        wants = []
        for name in names:
            chosen = indexes.get(name) if isinstance(indexes, Mapping) else indexes
            wants += [fy.P4CounterEntry(self._array("counters", name).name, index=i).encode(schema)
                      for i in ([None] if chosen is None else chosen)]
        out: dict[str, dict[int, tuple[int, int]]] = {name: {} for name in names}
        for e in self._read(wants, "counters"):
            c = fy.P4CounterEntry.decode(e, schema)
            out[schema.counters[c.counter_id].name][c.index or 0] = (c.packet_count, c.byte_count)
        return out

    def read_meters(self, cells: Iterable[tuple[str, int]]) -> dict[tuple[str, int], Optional[dict[str, int]]]:
        schema = self._schema()
        wants = [fy.P4MeterEntry(self._array("meters", name).name, index=idx).encode(schema) for name, idx in cells]
        out: dict[tuple[str, int], Optional[dict[str, int]]] = {}
        for e in self._read(wants, "meters"):
            m = e.meter_entry
            cfg = None
            if m.HasField("config"):
                cfg = {"cir": m.config.cir, "cburst": m.config.cburst, "pir": m.config.pir, "pburst": m.config.pburst}
            out[(schema.meters[m.meter_id].name, m.index.index)] = cfg
        return out

    def read_clone_sessions(self, optional: bool = False) -> dict[int, dict[str, Any]]:
        """Every clone session (one wildcard PRE read: session id 0), in document form.
        ``optional``: a server that cannot read clone sessions (UNIMPLEMENTED: an older PI)
        counts as holding none, for a caller that has none to manage."""
        want = Entity(packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry(
            clone_session_entry=p4runtime_pb2.CloneSessionEntry()))
        try:
            found = _EventLoop.run(self._aread([want]), RPC_TIMEOUT_S)
        except P4ClientError as exc:
            if optional and exc.code == GRPCStatusCode.UNIMPLEMENTED:
                return {}
            raise P4RuntimePushError(f"switch {self.name}: reading clone sessions: "
                                     f"{_code_name(exc.code)}: {exc.message}") from None
        except (FutureTimeout, TimeoutError):
            raise P4RuntimePushError(f"switch {self.name}: reading clone sessions: "
                                     f"no answer within {RPC_TIMEOUT_S:g}s") from None
        out: dict[int, dict[str, Any]] = {}
        for e in found:
            c = e.packet_replication_engine_entry.clone_session_entry
            replicas = []
            for r in c.replicas:
                port = (int.from_bytes(r.port, "big") if r.WhichOneof("port_kind") == "port" else r.egress_port)
                replicas.append({"egress_port": port, "instance": r.instance})
            out[c.session_id] = {"session_id": c.session_id, "replicas": replicas,
                                 "class_of_service": c.class_of_service,
                                 "packet_length_bytes": c.packet_length_bytes}
        return out

    def read_state(self, document: Optional[Mapping[str, Any]] = None) -> SwitchState:
        """All table entries (wildcard read) plus the defaults, meters and registers the
        document names, and every clone session when the document manages them (no document:
        the defaults of every table and the clone sessions, no meters or registers)."""
        schema = self._schema()
        state = SwitchState()
        for entry in self.read_entries():
            if schema.tables[entry["table"]].is_const:
                continue
            state.entries[entry_identity(entry)] = entry
        doc = document or {}
        default_tables = ([e["table"] for e in doc.get("entries", []) if e.get("default_action")]
                          if document is not None else [t.name for t in schema.tables])
        state.defaults = self.read_defaults(default_tables)
        state.meters = self.read_meters([(m["name"], m["index"]) for m in doc.get("meters", [])])
        regs: dict[str, list[int]] = {}
        for r in doc.get("registers", []):
            regs.setdefault(r["name"], []).append(r["index"])
        for name, idxs in regs.items():
            for idx, value in self.read_registers([name], idxs).get(name, {}).items():
                state.registers[(name, idx)] = value
        if document is None or "clone_sessions" in doc:
            state.clone_sessions = self.read_clone_sessions(optional=not doc.get("clone_sessions"))
        return state

    # -- writes -------------------------------------------------------------------------------
    def _update(self, change: Change) -> Update:
        """The P4Runtime Update of a change.  KeyError: unknown name; ValueError: a value the
        P4Info's width cannot hold."""
        schema = self._schema()
        kind = {"insert": Update.INSERT, "modify": Update.MODIFY, "delete": Update.DELETE}[change.op]
        item = change.item
        if change.kind in ("entry", "default"):
            assert self.codec is not None
            entity = Entity(table_entry=self.codec.encode(item, with_action=change.op != "delete"))
        elif change.kind == "clone_session":
            entity = self._clone_entity(item, with_config=change.op != "delete")
        elif change.kind == "register":
            entity = fy.P4RegisterEntry(self._array("registers", item["name"]).name, index=item["index"],
                                        data=contract.value_to_int(item["value"])).encode(schema)
        else:
            config = fy.P4MeterConfig(cir=item["cir"], cburst=item["cburst"], pir=item["pir"], pburst=item["pburst"])
            entity = fy.P4MeterEntry(self._array("meters", item["name"]).name, index=item["index"],
                                     config=config).encode(schema)
        return Update(type=kind, entity=entity)

    @staticmethod
    def _clone_entity(item: Mapping[str, Any], with_config: bool = True) -> Entity:
        """A CloneSessionEntry.  Replicas use ``egress_port`` (the uint32 form), which PI and
        Stratum both take (Stratum reads only that one).  ValueError: a value the proto
        cannot hold (refused locally, OUT_OF_RANGE)."""
        entry = p4runtime_pb2.CloneSessionEntry(session_id=int(item["session_id"]))
        if with_config:
            for r in item.get("replicas", []):
                port, instance = int(r["egress_port"]), int(r.get("instance", 0))
                if not (0 <= port < 1 << 32 and 0 <= instance < 1 << 32):
                    raise ValueError(f"clone session {item['session_id']}: replica {r} out of range")
                entry.replicas.add(egress_port=port, instance=instance)
            entry.class_of_service = int(item.get("class_of_service", 0))
            length = int(item.get("packet_length_bytes", 0))
            if not 0 <= length < 1 << 31:
                raise ValueError(f"clone session {item['session_id']}: packet_length_bytes {length} out of range")
            entry.packet_length_bytes = length
        return Entity(packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry(
            clone_session_entry=entry))

    def _encode(self, changes: Sequence[Change]) -> tuple[list[tuple[Change, Update]], list[WriteError]]:
        """Encode every change; the ones that cannot be are refused locally and never sent:
        an unknown name as INVALID_ARGUMENT, a value too wide for its field as OUT_OF_RANGE
        (what a switch answers for it)."""
        pending: list[tuple[Change, Update]] = []
        errors: list[WriteError] = []
        for change in changes:
            try:
                pending.append((change, self._update(change)))
            except KeyError as exc:
                errors.append(WriteError(change, "INVALID_ARGUMENT", f"not sent: {exc.args[0]}"))
            except ValueError as exc:
                errors.append(WriteError(change, "OUT_OF_RANGE", f"not sent: {exc}"))
        return pending, errors

    async def _awrite(self, batch: list[tuple[Change, Update]]) -> tuple[int, list[WriteError]]:
        """One Write RPC (CONTINUE_ON_ERROR): (updates acknowledged, refused ones).  A failure
        without per-update details (transport, arbitration) raises P4RuntimePushError."""
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id, updates=[u for _, u in batch], role=self.role)
        req.election_id.high, req.election_id.low = self.election_id
        try:
            await self.client.request(req)
            return len(batch), []
        except P4ClientError as exc:
            if exc.code != GRPCStatusCode.UNKNOWN or not exc.details:
                raise P4RuntimePushError(
                    f"switch {self.name}: Write of {len(batch)} updates (first: {batch[0][0].op.upper()} "
                    f"{batch[0][0].describe()}): {_code_name(exc.code)}: {exc.message}") from None
            errors = [WriteError(batch[i][0], _code_name(err.canonical_code), err.message)
                      for i, err in sorted(exc.details.items()) if i < len(batch)]
            return len(batch) - len(errors), errors

    async def apply_async(self, changes: Sequence[Change], diff: Optional[Diff] = None,
                          on_ack: Optional[Callable[[float], None]] = None) -> list[WriteError]:
        """`apply` as a coroutine on the session loop; `on_ack(perf_counter)` after every
        acknowledged batch (the controller times first data-plane effect and last ack).
        The P4Info must be known already (`_schema()` would block the loop it runs on)."""
        pending, errors = self._encode(changes)
        for start in range(0, len(pending), self.batch_size):
            batch = pending[start:start + self.batch_size]
            acked, refused = await self._awrite(batch)
            errors.extend(refused)
            now = time.perf_counter()
            if diff is not None:
                diff.written += acked
                diff.batches += 1
                if acked:
                    diff.last_ack = now
            if acked and on_ack is not None:
                on_ack(now)
        return errors

    def apply(self, changes: Sequence[Change], diff: Optional[Diff] = None) -> list[WriteError]:
        """Write `changes` in batches (CONTINUE_ON_ERROR); returns the refused ones.

        A change that cannot even be encoded is refused locally (see `_encode`) and never sent.
        Transport failures raise P4RuntimePushError.
        """
        self._schema()  # loaded here: apply_async runs on the loop and must not wait on it
        try:
            return _EventLoop.run(self.apply_async(changes, diff), RPC_TIMEOUT_S * (1 + len(changes) // self.batch_size))
        except FutureTimeout:
            raise P4RuntimePushError(f"switch {self.name}: Write: no answer within {RPC_TIMEOUT_S:g}s") from None

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

    @staticmethod
    def entry_changes(entries: Iterable[Mapping[str, Any]]) -> list[Change]:
        return [Change("modify", "default" if e.get("default_action") else "entry", dict(e)) for e in entries]

    @staticmethod
    def register_changes(cells: Iterable[tuple[str, int, int]]) -> list[Change]:
        return [Change("modify", "register", {"name": n, "index": i, "value": v}) for n, i, v in cells]

    def _checked(self, changes: list[Change]) -> int:
        diff = Diff(self.name, modifies=changes)
        errors = self.apply(changes, diff)
        if errors:
            raise ReconcileError(self.name, errors, diff)
        return diff.written

    def modify_entries(self, entries: Iterable[Mapping[str, Any]]) -> int:
        """MODIFY existing entries (or default actions) in one batch, e.g. path-set congestion
        levels from a controller.  Returns the number written; raises ReconcileError on refusals."""
        return self._checked(self.entry_changes(entries))

    def write_registers(self, cells: Iterable[tuple[str, int, int]]) -> int:
        """Write register cells `(name, index, value)`; returns how many the switch acknowledged."""
        return self._checked(self.register_changes(cells))

    async def _apply_checked(self, changes: list[Change], on_ack: Optional[Callable[[float], None]]) -> int:
        diff = Diff(self.name, modifies=changes)
        errors = await self.apply_async(changes, diff, on_ack)
        if errors:
            raise ReconcileError(self.name, errors, diff)
        return diff.written

    def submit(self, changes: list[Change], on_ack: Optional[Callable[[float], None]] = None) -> "Future[int]":
        """Start writing `changes` without waiting: a future of the count acknowledged (raising
        ReconcileError on refusals)."""
        self._schema()  # loaded here: the coroutine runs on the loop and must not wait on it
        return _EventLoop.submit(self._apply_checked(changes, on_ack))

    @staticmethod
    def submit_many(jobs: Sequence[tuple["SwitchSession", list[Change]]],
                    on_ack: Optional[Callable[[float], None]] = None) -> "Future[list[int | BaseException]]":
        """Write to many switches at once: one hand-over to the loop for all of them (not one per
        switch: every cross-thread hand-over costs a GIL round trip), every switch's Write in
        flight together.  A future of each job's count acknowledged, or its exception."""
        for session, _ in jobs:
            session._schema()

        async def run() -> list[int | BaseException]:
            return await asyncio.gather(*(s._apply_checked(c, on_ack) for s, c in jobs), return_exceptions=True)
        return _EventLoop.submit(run())


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
