"""One switch over P4Runtime: a primary finsy client with read-diff-write on documents, the
transport (TLS, role) sessions use, and the one asyncio loop every session's calls run on."""
from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, Mapping, Optional, Sequence

import finsy as fy
import finsy.p4client as _finsy_p4client
from finsy.grpcutil import GRPCCredentialsTLS, GRPCStatusCode
from finsy.p4client import P4Client, P4ClientError
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from .. import contract
from ..render import entry_identity
from .codec import EntryCodec
from .diff import Change, Diff, SwitchState, compute_diff
from .errors import P4RuntimePushError, ReconcileError, WriteError
from .program_files import ProgramFiles

Update = p4runtime_pb2.Update
Entity = p4runtime_pb2.Entity

DEFAULT_BATCH = 256
RPC_TIMEOUT_S = 60.0  # per Read/Write: a hung switch must not hang a fabric push forever
# finsy 0.30 gives every unary RPC a fixed 10 s gRPC deadline (p4client._DEFAULT_RPC_TIMEOUT, read
# at each call).  A pipeline push to a loaded target (a BMv2 JSON load, or p4sim compiling the
# program, six servers sharing one process in the demo) can take longer; our own wait above
# (RPC_TIMEOUT_S around each call) is the bound that matters, so finsy's deadline follows it.
_finsy_p4client._DEFAULT_RPC_TIMEOUT = RPC_TIMEOUT_S


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


class EventLoop:
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
        EventLoop.run(self.client.close(), self.timeout)
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
            EventLoop.run(self._open(), self.timeout + 1)
        except (asyncio.TimeoutError, TimeoutError, FutureTimeout):
            raise self._fail(f"not reachable within {self.timeout:g}s") from None
        if read_only:
            self._connected = True
            return self
        try:
            answer = EventLoop.run(self._arbitrate(), self.timeout + 1)
        except (asyncio.TimeoutError, TimeoutError, FutureTimeout):
            EventLoop.run(self.client.close(), self.timeout)
            raise P4RuntimePushError(f"switch {self.name}: no arbitration answer from {self.address} "
                                     f"(device id {self.device_id}) within {self.timeout:g}s") from None
        except P4ClientError as exc:  # the server closed the stream: its status says why
            raise self._fail(f"{_code_name(exc.code)}: {exc.message}") from None
        if answer.status.code != 0:
            EventLoop.run(self.client.close(), self.timeout)
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
            EventLoop.run(self._close(), self.timeout)

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
            return EventLoop.run(coro, RPC_TIMEOUT_S)
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
            resp = EventLoop.run(self.client.request(req), RPC_TIMEOUT_S)
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
                EventLoop.run(self.client.request(req), RPC_TIMEOUT_S)
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
            found = EventLoop.run(self._aread([want]), RPC_TIMEOUT_S)
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
            return EventLoop.run(self.apply_async(changes, diff), RPC_TIMEOUT_S * (1 + len(changes) // self.batch_size))
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
        return EventLoop.submit(self._apply_checked(changes, on_ack))

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
        return EventLoop.submit(run())
