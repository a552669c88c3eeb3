"""Base class of every PTF test: P4Runtime session, pipeline, entries by name, target control.

Test parameters (``ptf --test-params``, set by ``ptf_tests/run.sh``):
``grpc_addr``, ``device_id``, ``p4info``, ``config`` (device config path), ``cpu_port``,
``target`` (p4sim|bmv2), ``control_addr`` (p4sim side channel) or ``thrift_port`` (BMv2),
``interfaces`` (dict port -> Linux interface, veth transport only).

Every write made through the helpers is undone in tearDown (reverse order), so tests do not
see each other's entries; the pipeline is pushed once per run (its cookie marks it).
"""
from __future__ import annotations

import zlib
from typing import Any

import grpc
from p4.v1 import p4runtime_pb2
from ptf import testutils
from ptf.base_tests import BaseTest

from bmv2_env.target import NotSupportedByTarget, TargetControl, connect
from p4sim.p4rt.client import P4RuntimeClient, load_p4info, update


def _param(key: str, default: Any = None) -> Any:
    return testutils.test_param_get(key, default)


_TARGET_CHECKED: set[str] = set()


def require_target(grpc_addr: str) -> None:
    """Stop the whole run at once, naming the address, when no P4Runtime server answers there:
    every test would otherwise wait out its own connection timeout, each with a traceback that
    never says which address it tried, and PTF's dataplane thread keeps the process alive after.
    Checked once per address per run."""
    if grpc_addr in _TARGET_CHECKED:
        return
    from ptf_tests.preflight import grpc_problem

    problem = grpc_problem(grpc_addr)
    if problem:
        import os
        import sys

        print(f"ptf: target missing: {problem} (grpc_addr test parameter); no test run", file=sys.stderr, flush=True)
        os._exit(2)  # not sys.exit: PTF's dataplane thread would keep the process waiting
    _TARGET_CHECKED.add(grpc_addr)


class P4RuntimeTest(BaseTest):
    """Connects as primary (election id (0, 1)); exposes ``self.p4rt`` and ``self.target``."""

    election_id = (0, 1)

    def setUp(self) -> None:
        BaseTest.setUp(self)
        self.dataplane = __import__("ptf").dataplane_instance
        self.dataplane.flush()
        self.grpc_addr = _param("grpc_addr", "127.0.0.1:9559")
        require_target(self.grpc_addr)
        self.device_id = int(_param("device_id", 1))
        self.cpu_port = int(_param("cpu_port", 255))
        self.target_name = _param("target", "p4sim")
        self.p4info = load_p4info(_param("p4info"))
        with open(_param("config"), "rb") as f:
            self.device_config = f.read()
        self._undo: list[p4runtime_pb2.Update] = []
        try:
            self.p4rt = self.new_client(self.election_id)
            self._push_pipeline_once()
            self.p4rt.p4info = self.p4info
            self.target: TargetControl = connect(
                self.target_name, control_addr=_param("control_addr"),
                thrift_port=_param("thrift_port"), interfaces=_param("interfaces"))
        except Exception:
            # unittest skips tearDown when setUp fails: close the sessions here, or the next
            # test's primary would collide with this one's election id.
            for c in getattr(self, "_clients", []):
                c.close()
            raise

    def tearDown(self) -> None:
        try:
            for upd in reversed(self._undo):
                try:
                    self.p4rt.write(upd)
                except Exception as err:  # noqa: BLE001 - report, keep cleaning
                    print(f"autocleanup: could not undo {upd.type}: {err}")
        finally:
            self.target.close()
            for c in self._clients:
                c.close()
            BaseTest.tearDown(self)

    # -- sessions ---------------------------------------------------------------------------
    def new_client(self, election_id: tuple[int, int] | None, connect: bool = True) -> P4RuntimeClient:
        """Another P4Runtime session (closed in tearDown); ``connect`` arbitrates it."""
        if not hasattr(self, "_clients"):
            self._clients: list[P4RuntimeClient] = []
        c = P4RuntimeClient(self.grpc_addr, self.device_id, election_id)
        self._clients.append(c)
        if connect:
            c.connect()
        c.p4info = getattr(self, "p4info", None)
        return c

    def _cookie(self) -> int:
        return zlib.crc32(self.device_config) ^ zlib.crc32(self.p4info.SerializeToString())

    def _push_pipeline_once(self) -> None:
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.COOKIE_ONLY)
        try:
            current = self.p4rt.stub.GetForwardingPipelineConfig(req).config.cookie.cookie
        except grpc.RpcError:
            current = None
        if current != self._cookie():
            self.p4rt.set_pipeline(self.p4info, self.device_config, cookie=self._cookie())

    # -- writes with autocleanup ------------------------------------------------------------
    def insert(self, table: str, match: dict, action: str, params: dict | None = None,
               priority: int = 0) -> p4runtime_pb2.TableEntry:
        entry = self.p4rt.table_entry(table, match, action, params, priority)
        self.p4rt.write(update("INSERT", table_entry=entry))
        self._undo.append(update("DELETE", table_entry=entry))
        return entry

    def set_default(self, table: str, action: str, params: dict | None = None) -> None:
        self.p4rt.write(update("MODIFY", table_entry=self.p4rt.table_entry(
            table, action=action, params=params, default=True)))
        self._undo.append(update("MODIFY", table_entry=self.p4rt.table_entry(table, default=True)))

    def write_undoable(self, do: p4runtime_pb2.Update, undo: p4runtime_pb2.Update) -> None:
        self.p4rt.write(do)
        self._undo.append(undo)

    def add_mcast_group(self, group_id: int, ports: list[int], rid: int = 0) -> None:
        pre = p4runtime_pb2.PacketReplicationEngineEntry()
        pre.multicast_group_entry.multicast_group_id = group_id
        for port in ports:
            pre.multicast_group_entry.replicas.add(egress_port=port, instance=rid)
        undo = p4runtime_pb2.PacketReplicationEngineEntry()
        undo.multicast_group_entry.multicast_group_id = group_id
        self.write_undoable(update("INSERT", packet_replication_engine_entry=pre),
                            update("DELETE", packet_replication_engine_entry=undo))

    def add_clone_session(self, session_id: int, ports: list[int], truncate: int = 0) -> None:
        pre = p4runtime_pb2.PacketReplicationEngineEntry()
        pre.clone_session_entry.session_id = session_id
        pre.clone_session_entry.packet_length_bytes = truncate
        for port in ports:
            pre.clone_session_entry.replicas.add(egress_port=port, instance=0)
        undo = p4runtime_pb2.PacketReplicationEngineEntry()
        undo.clone_session_entry.session_id = session_id
        self.write_undoable(update("INSERT", packet_replication_engine_entry=pre),
                            update("DELETE", packet_replication_engine_entry=undo))

    # -- reads by name ------------------------------------------------------------------------
    def read_counter(self, name: str, index: int) -> tuple[int, int]:
        ce = p4runtime_pb2.CounterEntry(counter_id=self.p4rt.object_id("counters", name))
        ce.index.index = index
        [e] = self.p4rt.read(p4runtime_pb2.Entity(counter_entry=ce))
        return e.counter_entry.data.packet_count, e.counter_entry.data.byte_count

    def read_register(self, name: str, index: int) -> int:
        """A register cell by P4Info name (or alias): over P4Runtime where the target serves
        register reads (p4sim), else through its Thrift CLI (``simple_switch_CLI register_read``:
        BMv2's PI answers UNIMPLEMENTED, "Register reads are not supported yet")."""
        reg_id = self.p4rt.object_id("registers", name)
        re = p4runtime_pb2.RegisterEntry(register_id=reg_id)
        re.index.index = index
        try:
            [e] = self.p4rt.read(p4runtime_pb2.Entity(register_entry=re))
            return int.from_bytes(e.register_entry.data.bitstring, "big")
        except grpc.RpcError as err:
            if err.code() != grpc.StatusCode.UNIMPLEMENTED or not hasattr(self.target, "run_cli"):
                raise
        full = next(r.preamble.name for r in self.p4rt.p4info.registers if r.preamble.id == reg_id)
        out = self.target.run_cli([f"register_read {full} {index}"])
        for line in out.splitlines():  # simple_switch_CLI prints "<name>[<index>]= <value>"
            if f"{full}[{index}]" in line and "=" in line:
                return int(line.rsplit("=", 1)[1].strip())
        raise RuntimeError(f"register_read {full} {index}: no value in the CLI output: {out!r}")

    def read_table(self, table: str) -> list[p4runtime_pb2.TableEntry]:
        want = p4runtime_pb2.TableEntry(table_id=self.p4rt.table_id(table))
        return [e.table_entry for e in self.p4rt.read(p4runtime_pb2.Entity(table_entry=want))]

    # -- target control and the clock ---------------------------------------------------------
    def require_virtual_clock(self) -> None:
        """Skip (printing why) when the target's time cannot be driven by the test."""
        if not self.target.has_virtual_clock:
            reason = f"{self.target.name} has no virtual clock; timing cannot be controlled"
            print(f"SKIP {self.id()}: {reason}")
            self.skipTest(reason)

    def advance_us(self, us: int) -> int:
        self.require_virtual_clock()
        return self.target.advance_us(us)

    def wait_ingested(self, before: int, count: int, timeout: float = 10.0) -> None:
        """Block until the switch has taken in ``count`` packets since ``before`` (= an earlier
        ``received_count()``).  A synchronisation barrier for packets still in the socket -- not
        a timing assumption; skips where the target cannot tell."""
        import time

        deadline = time.monotonic() + timeout
        while self.received_count() < before + count:
            if time.monotonic() > deadline:
                self.fail(f"switch took in fewer than {count} packets within {timeout}s")
            time.sleep(0.005)  # polling interval of the barrier, not a timing assumption

    def send_settled(self, port: int, pkt) -> None:
        """send_packet, then (where the target can tell) wait until the switch took it in, so a
        following verify_no_other_packets cannot pass just because the packet was still in the
        socket."""
        from ptf import testutils as tu

        try:
            before = int(self.target.stats().get("received", 0))
        except NotSupportedByTarget:
            before = None
        tu.send_packet(self, port, pkt)
        if before is not None:
            self.wait_ingested(before, 1)
            self.target.sync()  # and its output (if any) is on the wire before we look

    def received_count(self) -> int:
        return int(self.target_op(self.target.stats).get("received", 0))

    def target_op(self, fn, *args, **kwargs):
        """Run a target-control operation, skipping (with the reason) where unsupported."""
        try:
            return fn(*args, **kwargs)
        except NotSupportedByTarget as err:
            print(f"SKIP {self.id()}: {err}")
            self.skipTest(str(err))
