"""The P4Runtime gRPC service of ``p4sim run`` (p4runtime 1.4.1 protos).

Whole-request problems become the RPC's status (NOT_FOUND for another device id,
PERMISSION_DENIED for a non-primary writer, FAILED_PRECONDITION before a pipeline); per-update
problems of a Write become status UNKNOWN with one ``p4.v1.Error`` per update in the
``grpc-status-details-bin`` trailer, like PI/BMv2.  No handler lets an exception escape as a
crash: anything unexpected is an INTERNAL status and the server keeps serving.

Write atomicity: CONTINUE_ON_ERROR (default) applies each update on its own, all or nothing per
update; ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC apply the batch under the switch lock and undo it
at the first failure (that update reports its error, every other one ABORTED).

Roles (``roles.py``): each request is judged for the role it names -- Writes and pipeline pushes
only from that role's primary (a role with no primary is PERMISSION_DENIED: unknown), updates
outside a restricted role's P4 ids PERMISSION_DENIED one by one, its reads filtered; packet-ins
and digests go to the primary of every role that takes them.  Transport (``security.py``):
plaintext, TLS or mutual TLS.
"""
from __future__ import annotations

import errno
import logging
import socket
import threading
from concurrent import futures
from typing import Any

import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from p4sim.p4rt.arbitration import Arbiter, StreamClient
from p4sim.p4rt.device import Device
from p4sim.p4rt.digests import DigestEngine
from p4sim.p4rt.errors import P4RTError, write_error_status
from p4sim.p4rt.packetio import packet_in_message, packet_out_bytes
from p4sim.p4rt.pipeline import Pipeline
from p4sim.p4rt.reads import read_entity
from p4sim.p4rt.roles import RolePolicy, entity_p4_id
from p4sim.p4rt.security import ServerTLS
from p4sim.p4rt.undo import apply_all_or_nothing
from p4sim.p4rt.writes import apply_update

log = logging.getLogger("p4sim.p4rt")

API_VERSION = "1.4.1"
SetAction = p4runtime_pb2.SetForwardingPipelineConfigRequest
GetType = p4runtime_pb2.GetForwardingPipelineConfigRequest
WriteReq = p4runtime_pb2.WriteRequest


def _check_p4info_matches(p4info: p4info_pb2.P4Info, program_p4info: Any) -> None:
    """Refuse a P4Info that does not describe the device config's program.

    Compared by (id, name) of tables and actions: a P4Info from another program (or another
    version) would make every later write address the wrong objects.
    """
    if program_p4info is None or not hasattr(program_p4info, "tables"):
        return
    have = {(t.preamble.id, t.preamble.name) for t in program_p4info.tables}
    have |= {(a.preamble.id, a.preamble.name) for a in program_p4info.actions}
    given = {(t.preamble.id, t.preamble.name) for t in p4info.tables}
    given |= {(a.preamble.id, a.preamble.name) for a in p4info.actions}
    unknown = sorted(given - have)
    if unknown:
        raise P4RTError(
            "INVALID_ARGUMENT",
            f"P4Info does not match the device config: unknown (id, name) {unknown[:3]}",
        )


class P4RuntimeService(p4runtime_pb2_grpc.P4RuntimeServicer):
    def __init__(self, device: Device) -> None:
        self.device = device
        self.arbiter = Arbiter(device.device_id)
        self.pipe: Pipeline | None = None
        self.digests: DigestEngine | None = None
        self._saved: tuple[p4info_pb2.P4Info, bytes, int, Any] | None = None
        # Writes and pipeline changes are serialized: each sees a consistent pipeline.
        self._config_lock = threading.RLock()
        device.on_packet_in = self._packet_in
        device.on_digests = self._digests

    # -- helpers ----------------------------------------------------------------------------
    def _check_device(self, device_id: int) -> None:
        if device_id != self.device.device_id:
            raise P4RTError("NOT_FOUND", f"unknown device id {device_id}")

    def _role(self, request) -> str:
        if getattr(request, "role_id", 0) and not getattr(request, "role", ""):
            # role_id (uint64) is deprecated since 1.4; taking it for the default role would give
            # a restricted client full access.
            raise P4RTError("INVALID_ARGUMENT", "role_id is deprecated since P4Runtime 1.4: name the role")
        return getattr(request, "role", "") or ""

    def _check_primary(self, request) -> RolePolicy:
        """The policy of the request's role, if it comes from that role's primary."""
        role = self._role(request)
        election = request.election_id if request.HasField("election_id") else None
        if not self.arbiter.is_primary(role, election):
            if self.arbiter.primary(role) is None:
                raise P4RTError(
                    "PERMISSION_DENIED", f"role {role or '(default)'!s} has no primary: "
                    "arbitrate on a StreamChannel with this role first (unknown role)")
            raise P4RTError(
                "PERMISSION_DENIED", f"only the primary client of role {role or '(default)'} "
                "(highest election id) may write"
            )
        return self.arbiter.policy(role)

    def _require_pipeline(self) -> Pipeline:
        if self.pipe is None:
            raise P4RTError("FAILED_PRECONDITION", "no forwarding pipeline config set")
        return self.pipe

    @staticmethod
    def _abort(context, err: P4RTError):
        context.abort(err.grpc_code, err.message)

    def install_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes, cookie: int,
                         switch: Any) -> None:
        """Commit: build the P4Runtime view first (it reads defaults), then swap the switch in."""
        with self._config_lock:
            pipe = Pipeline(p4info, device_config, cookie, switch)
            self.device.install(switch)
            self.pipe = pipe
            self.digests = DigestEngine(pipe)

    # -- RPCs -------------------------------------------------------------------------------
    def Capabilities(self, request, context):
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=API_VERSION)

    def SetForwardingPipelineConfig(self, request, context):
        try:
            self._check_device(request.device_id)
            policy = self._check_primary(request)
            if not policy.can_push_pipeline:
                raise P4RTError("PERMISSION_DENIED", f"role {self._role(request)!r} may not push "
                                "a pipeline (its role.config has can_push_pipeline false)")
            with self._config_lock:
                self._set_pipeline(request)
        except P4RTError as err:
            self._abort(context, err)
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def _set_pipeline(self, request) -> None:
        action = request.action
        if action == SetAction.COMMIT:
            if self._saved is None:
                raise P4RTError("FAILED_PRECONDITION", "COMMIT without a saved config")
            self.install_pipeline(*self._saved)
            self._saved = None
            return
        if action == SetAction.UNSPECIFIED:
            raise P4RTError("INVALID_ARGUMENT", "SetForwardingPipelineConfig needs an action")
        if action not in (SetAction.VERIFY, SetAction.VERIFY_AND_SAVE, SetAction.VERIFY_AND_COMMIT):
            raise P4RTError("UNIMPLEMENTED", f"action {SetAction.Action.Name(action)}")
        if not request.HasField("config"):
            raise P4RTError("INVALID_ARGUMENT", "config missing")
        config = request.config
        if not config.HasField("p4info") or not config.p4_device_config:
            raise P4RTError("INVALID_ARGUMENT", "config needs both p4info and p4_device_config")
        try:
            program, switch = self.device.build_switch(config.p4_device_config)
        except Exception as err:  # noqa: BLE001 - any load failure is the client's config
            raise P4RTError("INVALID_ARGUMENT", f"device config rejected: {err}") from err
        _check_p4info_matches(config.p4info, getattr(program, "p4info", None))
        p4info = p4info_pb2.P4Info()
        p4info.CopyFrom(config.p4info)
        cookie = config.cookie.cookie if config.HasField("cookie") else 0
        if action == SetAction.VERIFY:
            return
        if action == SetAction.VERIFY_AND_SAVE:
            self._saved = (p4info, config.p4_device_config, cookie, switch)
            return
        self.install_pipeline(p4info, config.p4_device_config, cookie, switch)

    def GetForwardingPipelineConfig(self, request, context):
        try:
            self._check_device(request.device_id)
        except P4RTError as err:
            self._abort(context, err)
        resp = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        pipe = self.pipe
        if pipe is None:
            return resp
        rtype = request.response_type
        if rtype in (GetType.ALL, GetType.P4INFO_AND_COOKIE):
            resp.config.p4info.CopyFrom(pipe.p4info)
        if rtype in (GetType.ALL, GetType.DEVICE_CONFIG_AND_COOKIE):
            resp.config.p4_device_config = pipe.device_config
        resp.config.cookie.cookie = pipe.cookie
        return resp

    def Write(self, request, context):
        try:
            self._check_device(request.device_id)
            policy = self._check_primary(request)
            atomicity = request.atomicity
            if atomicity not in (WriteReq.CONTINUE_ON_ERROR, WriteReq.ROLLBACK_ON_ERROR,
                                 WriteReq.DATAPLANE_ATOMIC):
                raise P4RTError("INVALID_ARGUMENT", f"unknown atomicity {atomicity}")
            with self._config_lock:
                pipe = self._require_pipeline()

                def apply(pipe_: Pipeline, update) -> None:
                    if not policy.may_write(entity_p4_id(update.entity)):
                        raise P4RTError("PERMISSION_DENIED", f"role {self._role(request)!r} may "
                                        "not write this entity (not in its role.config)")
                    self._apply_or_raise(pipe_, update)

                if atomicity == WriteReq.CONTINUE_ON_ERROR:
                    results = [self._apply_one(pipe, update, apply) for update in request.updates]
                else:
                    # Both all-or-none modes: applied under the switch lock, so packets never
                    # see a partial batch (DATAPLANE_ATOMIC), and undone on the first failure.
                    results = apply_all_or_nothing(pipe, request.updates, apply)
        except P4RTError as err:
            self._abort(context, err)
        if any(r is not None for r in results):
            for r in results:
                if r is not None:
                    log.info("write refused: %s", r)
            message, details = write_error_status(results)
            context.set_trailing_metadata((("grpc-status-details-bin", details),))
            context.set_code(grpc.StatusCode.UNKNOWN)
            context.set_details(message)
        return p4runtime_pb2.WriteResponse()

    @staticmethod
    def _apply_or_raise(pipe: Pipeline, update) -> None:
        try:
            apply_update(pipe, update)
        except P4RTError:
            raise
        except Exception as err:  # noqa: BLE001 - never kill the server
            log.exception("write failed unexpectedly")
            raise P4RTError("INTERNAL", f"{type(err).__name__}: {err}") from err

    @staticmethod
    def _apply_one(pipe: Pipeline, update, apply) -> P4RTError | None:
        try:
            apply(pipe, update)
            return None
        except P4RTError as err:
            return err

    def Read(self, request, context):
        try:
            self._check_device(request.device_id)
            with self._config_lock:
                pipe = self._require_pipeline()
                responses = [p4runtime_pb2.ReadResponse()]

                def new_entity() -> p4runtime_pb2.Entity:
                    # Chunked so a huge table does not make one oversized message.
                    if len(responses[-1].entities) >= 1000:
                        responses.append(p4runtime_pb2.ReadResponse())
                    return responses[-1].entities.add()

                policy = self.arbiter.policy(self._role(request))
                for entity in request.entities:
                    if not policy.full:
                        pid = entity_p4_id(entity)
                        if pid is None or (pid and not policy.may_write(pid)):
                            raise P4RTError("PERMISSION_DENIED", f"role {self._role(request)!r} "
                                            "may not read this entity (not in its role.config)")
                    for _ in read_entity(pipe, entity, new_entity):
                        pass
                if not policy.full:  # wildcard reads: only the role's own entities
                    for resp in responses:
                        keep = [e for e in resp.entities if policy.may_write(entity_p4_id(e))]
                        if len(keep) != len(resp.entities):
                            del resp.entities[:]
                            resp.entities.extend(keep)
        except P4RTError as err:
            self._abort(context, err)
        except Exception as err:  # noqa: BLE001
            log.exception("read failed unexpectedly")
            context.abort(grpc.StatusCode.INTERNAL, f"{type(err).__name__}: {err}")
        yield from responses

    # -- stream -----------------------------------------------------------------------------
    def StreamChannel(self, request_iterator, context):
        client = self.arbiter.new_client()
        failure: list[P4RTError] = []

        def read_requests() -> None:
            try:
                for req in request_iterator:
                    self._stream_request(client, req)
            except P4RTError as err:
                failure.append(err)
            except Exception:  # noqa: BLE001 - the peer went away (cancelled stream)
                pass
            finally:
                client.outbox.put(None)

        context.add_callback(lambda: client.outbox.put(None))
        threading.Thread(target=read_requests, name=f"p4rt-stream-{client.id}", daemon=True).start()
        try:
            while True:
                msg = client.outbox.get()
                if msg is None:
                    break
                yield msg
        finally:
            self.arbiter.remove(client)
        if failure:
            self._abort(context, failure[0])

    def _stream_request(self, client: StreamClient, req: p4runtime_pb2.StreamMessageRequest) -> None:
        kind = req.WhichOneof("update")
        if kind == "arbitration":
            self.arbiter.arbitrate(client, req.arbitration)
            return
        if client.role is None:
            raise P4RTError("FAILED_PRECONDITION", "send a MasterArbitrationUpdate first")
        try:
            if kind == "packet":
                self._packet_out(client, req.packet)
            elif kind == "digest_ack":
                if self.digests is not None:
                    self.digests.ack(req.digest_ack.digest_id, req.digest_ack.list_id)
            else:
                raise P4RTError("UNIMPLEMENTED", f"stream message {kind}")
        except P4RTError as err:
            resp = p4runtime_pb2.StreamMessageResponse()
            resp.error.canonical_code = err.rpc_code
            resp.error.message = err.message
            if kind == "packet":
                resp.error.packet_out.packet_out.CopyFrom(req.packet)
            elif kind == "digest_ack":
                resp.error.digest_list_ack.digest_list_ack.CopyFrom(req.digest_ack)
            client.send(resp)

    def _packet_out(self, client: StreamClient, packet: p4runtime_pb2.PacketOut) -> None:
        primary = self.arbiter.primary(client.role or "")
        if primary is not client:
            raise P4RTError("PERMISSION_DENIED", "only the primary client may send packets")
        pipe = self._require_pipeline()
        if self.device.cpu_port is None:
            raise P4RTError("FAILED_PRECONDITION", "the switch has no CPU port (--cpu-port)")
        data = packet_out_bytes(pipe.index, packet)
        self.device.inject(self.device.cpu_port, data)

    # -- switch -> controller ---------------------------------------------------------------
    def _packet_in(self, data: bytes) -> None:
        """To the primary of every role that takes it (full access, or receives_packet_ins and
        a matching packet_in_filter)."""
        pipe = self.pipe
        if pipe is None:
            return
        msg = p4runtime_pb2.StreamMessageResponse()
        msg.packet.CopyFrom(packet_in_message(pipe.index, data))
        metadata = {m.metadata_id: m.value for m in msg.packet.metadata}
        for primary, policy in self.arbiter.primaries():
            if policy.takes_packet_in(metadata):
                primary.send(msg)

    def _digests(self, digests: list) -> None:
        engine = self.digests
        if engine is None:
            return
        for dlist in engine.lists_for(digests):
            msg = p4runtime_pb2.StreamMessageResponse()
            msg.digest.CopyFrom(dlist)
            for primary, policy in self.arbiter.primaries():
                if policy.may_write(dlist.digest_id):  # full access or the role lists the digest
                    primary.send(msg)


def address_in_use(address: str) -> bool:
    """True if a TCP socket on ``address`` (host:port, IPv4, IPv6 in brackets or a name) cannot
    be bound because another socket holds it: why gRPC refused to listen there."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]") or "0.0.0.0"
    try:
        infos = socket.getaddrinfo(host, int(port), type=socket.SOCK_STREAM)
    except (OSError, ValueError):
        return False
    for family, kind, proto, _, sockaddr in infos:
        with socket.socket(family, kind, proto) as probe:
            try:
                probe.bind(sockaddr)
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    return True
    return False


class P4RuntimeServer:
    """A gRPC server running ``P4RuntimeService`` on ``address`` (host:port); ``tls``: TLS or
    mutual TLS (``security.ServerTLS``), else plaintext."""

    def __init__(self, device: Device, address: str, max_workers: int = 32,
                 tls: ServerTLS | None = None) -> None:
        self.service = P4RuntimeService(device)
        self.grpc = grpc.server(
            futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="p4rt"),
            options=[
                ("grpc.max_receive_message_length", 256 << 20),
                ("grpc.max_send_message_length", 256 << 20),
                # gRPC shares a port between servers (SO_REUSEPORT) by default: a second switch
                # on the same address would "serve" it too and clients would alternate between
                # them.  simple_switch_grpc refuses an address in use; so does p4sim.
                ("grpc.so_reuseport", 0),
            ],
        )
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self.service, self.grpc)
        self.tls = tls
        try:
            if tls is None:
                self.port = self.grpc.add_insecure_port(address)
            else:
                self.port = self.grpc.add_secure_port(address, tls.credentials())
        except RuntimeError:  # grpcio >= 1.50 raises where older versions returned port 0
            self.port = 0
        if self.port == 0:
            raise OSError(errno.EADDRINUSE if address_in_use(address) else errno.EADDRNOTAVAIL,
                          f"cannot listen on {address}: " + ("address already in use" if address_in_use(address)
                                                             else "gRPC could not bind it"))
        self.address = address

    def start(self) -> None:
        self.grpc.start()

    def stop(self, grace: float | None = 0.5) -> None:
        self.grpc.stop(grace).wait()
