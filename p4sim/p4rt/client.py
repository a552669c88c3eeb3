"""A small P4Runtime client on the generated stubs, for tests, PTF and ``bmv2_env``.

The controller talks through finsy (``control_plane.p4rt``) and engineers through p4runtime-shell
(``make shell``, with its own interop test); this one exists because server tests need what both
hide: several clients with chosen election ids in one process, raw requests with deliberately
bad bytes, streams opened without arbitrating, and the per-update error details as sent.  It
talks to any P4Runtime server (p4sim or simple_switch_grpc).
"""
from __future__ import annotations

import queue
import threading
from dataclasses import dataclass

import grpc
from google.protobuf import text_format
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc


@dataclass
class UpdateError:
    """One update's outcome in a failed Write: canonical code name and message."""

    code: str
    message: str


class WriteFailed(Exception):
    """A Write with per-update errors (gRPC UNKNOWN + p4.v1.Error details)."""

    def __init__(self, errors: list[UpdateError]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"#{i} {e.code} {e.message}" for i, e in enumerate(errors)
                                   if e.code != "OK"))


def parse_write_error(err: grpc.RpcError) -> list[UpdateError]:
    """Decode the per-update errors of a failed Write (empty if the trailer is missing)."""
    for key, value in err.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            out = []
            for detail in status.details:
                e = p4runtime_pb2.Error()
                detail.Unpack(e)
                out.append(UpdateError(code_pb2.Code.Name(e.canonical_code), e.message))
            return out
    return []


def load_p4info(path: str) -> p4info_pb2.P4Info:
    info = p4info_pb2.P4Info()
    with open(path) as f:
        text_format.Merge(f.read(), info)
    return info


class P4RuntimeClient:
    """One connection: a StreamChannel (arbitrated on ``connect``) plus unary calls."""

    def __init__(self, address: str, device_id: int = 1, election_id: tuple[int, int] = (0, 1),
                 role: str | None = None, role_config=None,
                 credentials: grpc.ChannelCredentials | None = None,
                 options: tuple = ()) -> None:
        """``role_config``: a packed ``google.protobuf.Any`` sent as ``role.config``
        (``roles.role_config_any``); ``credentials``: ``grpc.ssl_channel_credentials(...)``."""
        self.address = address
        self.device_id = device_id
        self.election_id = election_id
        self.role = role
        self.role_config = role_config
        # A failed Write carries one status per update in a header; a big batch's list exceeds
        # gRPC's default 8 KiB metadata limit, so accept up to 4 MiB.
        opts = [("grpc.max_metadata_size", 4 << 20),
                ("grpc.max_receive_message_length", 256 << 20), *options]
        if credentials is None:
            self.channel = grpc.insecure_channel(address, options=opts)
        else:
            self.channel = grpc.secure_channel(address, credentials, options=opts)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._out: "queue.Queue[p4runtime_pb2.StreamMessageRequest | None]" = queue.Queue()
        self.arbitrations: queue.Queue = queue.Queue()
        self.packets: queue.Queue = queue.Queue()
        self.digests: queue.Queue = queue.Queue()
        self.errors: queue.Queue = queue.Queue()
        self.stream_status: grpc.RpcError | None = None
        self._stream = None
        self._reader: threading.Thread | None = None
        self.p4info: p4info_pb2.P4Info | None = None

    # -- stream -----------------------------------------------------------------------------
    def _requests(self):
        while True:
            msg = self._out.get()
            if msg is None:
                return
            yield msg

    def _read_stream(self) -> None:
        try:
            for msg in self._stream:
                kind = msg.WhichOneof("update")
                {"arbitration": self.arbitrations, "packet": self.packets,
                 "digest": self.digests}.get(kind, self.errors).put(msg)
        except grpc.RpcError as err:
            self.stream_status = err
        except ValueError:  # the channel was closed under the stream (abrupt close)
            pass
        finally:
            self.arbitrations.put(None)

    def open_stream(self, timeout: float = 5.0) -> None:
        """Open the StreamChannel without arbitrating (``connect`` does both)."""
        grpc.channel_ready_future(self.channel).result(timeout=timeout)
        self._stream = self.stub.StreamChannel(self._requests())
        self._reader = threading.Thread(target=self._read_stream, daemon=True)
        self._reader.start()

    def connect(self, timeout: float = 5.0) -> p4runtime_pb2.MasterArbitrationUpdate:
        """Open the stream and arbitrate; returns the server's arbitration answer."""
        self.open_stream(timeout)
        self.send_arbitration(self.election_id)
        return self.next_arbitration(timeout)

    def send_arbitration(self, election_id: tuple[int, int] | None) -> None:
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        if self.role is not None:
            req.arbitration.role.name = self.role
            if self.role_config is not None:
                req.arbitration.role.config.CopyFrom(self.role_config)
        if election_id is not None:
            req.arbitration.election_id.high, req.arbitration.election_id.low = election_id
            self.election_id = election_id
        self._out.put(req)

    def next_arbitration(self, timeout: float = 5.0) -> p4runtime_pb2.MasterArbitrationUpdate:
        msg = self.arbitrations.get(timeout=timeout)
        if msg is None:
            raise ConnectionError(f"stream closed: {self.stream_status}")
        return msg.arbitration

    def stream_send(self, msg: p4runtime_pb2.StreamMessageRequest) -> None:
        self._out.put(msg)

    def packet_out(self, payload: bytes, metadata: dict[str, int] | None = None) -> None:
        req = p4runtime_pb2.StreamMessageRequest()
        req.packet.payload = payload
        header = self._controller_header("packet_out")
        for name, value in (metadata or {}).items():
            md = next(m for m in header.metadata if m.name == name)
            req.packet.metadata.add(metadata_id=md.id,
                                    value=value.to_bytes(max(1, (md.bitwidth + 7) // 8), "big"))
        self._out.put(req)

    def packet_in(self, timeout: float = 5.0) -> tuple[bytes, dict[str, int]]:
        """The next PacketIn as (payload, metadata by name)."""
        msg = self.packets.get(timeout=timeout).packet
        header = self._controller_header("packet_in")
        names = {m.id: m.name for m in header.metadata} if header else {}
        return msg.payload, {names.get(m.metadata_id, str(m.metadata_id)):
                             int.from_bytes(m.value, "big") for m in msg.metadata}

    def _controller_header(self, name: str):
        if self.p4info is None:
            return None
        return next((c for c in self.p4info.controller_packet_metadata
                     if c.preamble.name == name), None)

    def close(self) -> None:
        self._out.put(None)
        if self._reader is not None:
            self._reader.join(timeout=5)
        self.channel.close()

    # -- unary ------------------------------------------------------------------------------
    def _stamp(self, req) -> None:
        req.device_id = self.device_id
        if self.role is not None:
            req.role = self.role
        if self.election_id is not None:
            req.election_id.high, req.election_id.low = self.election_id

    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes,
                     action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
                     cookie: int | None = None) -> None:
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(action=action)
        self._stamp(req)
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        if cookie is not None:
            req.config.cookie.cookie = cookie
        self.stub.SetForwardingPipelineConfig(req)
        if action != p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY:
            self.p4info = p4info

    def get_p4info(self) -> p4info_pb2.P4Info:
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE)
        self.p4info = self.stub.GetForwardingPipelineConfig(req).config.p4info
        return self.p4info

    def write(self, *updates: p4runtime_pb2.Update) -> None:
        """Write a batch; raises WriteFailed with per-update codes, grpc.RpcError otherwise."""
        req = p4runtime_pb2.WriteRequest()
        self._stamp(req)
        req.updates.extend(updates)
        try:
            self.stub.Write(req)
        except grpc.RpcError as err:
            if err.code() == grpc.StatusCode.UNKNOWN:
                details = parse_write_error(err)
                if details:
                    raise WriteFailed(details) from err
            raise

    def read(self, *entities: p4runtime_pb2.Entity) -> list[p4runtime_pb2.Entity]:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        if self.role is not None:
            req.role = self.role
        req.entities.extend(entities)
        out = []
        for resp in self.stub.Read(req):
            out.extend(resp.entities)
        return out

    # -- P4Info look-ups (by name, like p4runtime-shell) -------------------------------------
    def _find(self, kind: str, name: str):
        for obj in getattr(self.p4info, kind):
            if obj.preamble.name == name or obj.preamble.alias == name:
                return obj
        raise KeyError(f"no {kind[:-1]} named {name} in P4Info")

    def table_id(self, name: str) -> int:
        return self._find("tables", name).preamble.id

    def action_id(self, name: str) -> int:
        return self._find("actions", name).preamble.id

    def object_id(self, kind: str, name: str) -> int:
        return self._find(kind, name).preamble.id

    def table_entry(self, table: str, match: dict | None = None, action: str | None = None,
                    params: dict | None = None, priority: int = 0,
                    default: bool = False) -> p4runtime_pb2.TableEntry:
        """Build a TableEntry by names.  Match values: int (exact/optional), (v, plen) lpm,
        (v, mask) ternary, (lo, hi) range; ints are sent in canonical bytes."""
        t = self._find("tables", table)
        entry = p4runtime_pb2.TableEntry(table_id=t.preamble.id, priority=priority,
                                         is_default_action=default)
        fields = {f.name: f for f in t.match_fields}
        mt = p4info_pb2.MatchField
        for name, value in (match or {}).items():
            f = fields[name]
            fm = entry.match.add(field_id=f.id)
            if f.match_type == mt.EXACT:
                fm.exact.value = _b(value)
            elif f.match_type == mt.OPTIONAL:
                fm.optional.value = _b(value)
            elif f.match_type == mt.LPM:
                fm.lpm.value, fm.lpm.prefix_len = _b(value[0]), value[1]
            elif f.match_type == mt.TERNARY:
                fm.ternary.value, fm.ternary.mask = _b(value[0]), _b(value[1])
            elif f.match_type == mt.RANGE:
                fm.range.low, fm.range.high = _b(value[0]), _b(value[1])
        if action is not None:
            a = self._find("actions", action)
            entry.action.action.action_id = a.preamble.id
            pinfo = {p.name: p for p in a.params}
            for name, value in (params or {}).items():
                entry.action.action.params.add(param_id=pinfo[name].id, value=_b(value))
        return entry


def _b(value: int | bytes) -> bytes:
    if isinstance(value, bytes):
        return value
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def update(kind: str, **entity) -> p4runtime_pb2.Update:
    """``update("INSERT", table_entry=e)`` -> an Update."""
    return p4runtime_pb2.Update(type=p4runtime_pb2.Update.Type.Value(kind),
                                entity=p4runtime_pb2.Entity(**entity))
