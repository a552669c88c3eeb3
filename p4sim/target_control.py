"""p4sim's target-control side channel: what ``simple_switch_CLI`` is to BMv2, plus the clock.

``p4sim run --control-addr 127.0.0.1:PORT`` serves one JSON object per line over TCP:
request ``{"op": NAME, "args": {...}}``, reply ``{"ok": true, "result": ...}`` or
``{"ok": false, "error": "...", "kind": "invalid"|"not_supported"}``.  Operations:

====================  ==========================================  ==========================
op                    args                                        result
====================  ==========================================  ==========================
``info``              --                                          clock, device_id, cpu_port
``now_us``            --                                          current switch time (µs)
``advance``           ``us`` (virtual clock only)                 new time (µs)
``set_queue_rate``    ``pps``, optional ``port``, ``priority``    --
``set_queue_depth``   ``pkts``, optional ``port``, ``priority``   --
``set_queue_weight``  ``weight`` (0 = strict; DWRR, p4sim.tm),     --
                      optional ``port``, ``priority``, ``group``
``set_port``          ``port``, ``up`` (bool)                     --
``enable_pktgen_``    ``app_id`` (TNA pipelines only: Tofino's      --
``port_down``         packet-generator port-down app)
``stats``             --                                          the switch's packet tallies
``sync``              --                                          -- (returns once all packets
                                                                  taken in are processed and
                                                                  their output sent)
====================  ==========================================  ==========================

Why JSON over TCP and not another gRPC service: the messages are tiny, the client must be
trivial to write from any harness (even ``nc``), and a second proto would add a build step.
It listens on loopback by default for the same reason P4Runtime does: no authentication.
"""
from __future__ import annotations

import json
import socket
import socketserver
import threading
from typing import Any

from p4sim.p4rt.device import Device


class ControlError(Exception):
    """A refused control request; ``kind`` is "invalid" or "not_supported"."""

    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        super().__init__(message)


def _int_arg(args: dict, name: str, optional: bool = False) -> int | None:
    value = args.get(name)
    if value is None:
        if optional:
            return None
        raise ControlError("invalid", f"missing argument {name!r}")
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ControlError("invalid", f"argument {name!r} must be a non-negative integer")
    return value


def dispatch(device: Device, op: str, args: dict[str, Any]) -> Any:
    """Run one control operation on ``device``."""
    if op == "info":
        return {"clock": device.clock_name, "device_id": device.device_id,
                "cpu_port": device.cpu_port, "pipeline": device.switch is not None}
    if op == "stats":
        with device.lock:
            tallies = dict(device.switch.stats) if device.switch is not None else {}
        tallies["dropped_no_pipeline"] = device.dropped_no_pipeline
        return tallies
    if op == "sync":
        device.sync()
        return None
    if op == "now_us":
        return device.now_us()
    if op == "advance":
        if not device.virtual_clock:
            raise ControlError("not_supported", "advance needs --clock virtual")
        if device.switch is None:
            raise ControlError("invalid", "no pipeline installed")
        return device.advance(_int_arg(args, "us"))
    if op in ("set_queue_rate", "set_queue_depth"):
        amount = _int_arg(args, "pps" if op == "set_queue_rate" else "pkts")
        port = _int_arg(args, "port", optional=True)
        prio = _int_arg(args, "priority", optional=True)
        getattr(device, op)(amount, port, prio)
        return None
    if op == "set_queue_weight":
        weight = _int_arg(args, "weight")
        port = _int_arg(args, "port", optional=True)
        prio = _int_arg(args, "priority", optional=True)
        group = _int_arg(args, "group", optional=True)
        device.set_queue_weight(weight, port, prio, group)
        return None
    if op == "set_port":
        up = args.get("up")
        if not isinstance(up, bool):
            raise ControlError("invalid", "argument 'up' must be true or false")
        device.set_port_up(_int_arg(args, "port"), up)
        return None
    if op == "enable_pktgen_port_down":
        # Tofino's packet-generator port-down app (a BfRt setting on a real switch, outside
        # P4Runtime): only a TNA pipe has one.
        with device.lock:
            switch = device.switch
            if switch is None or not hasattr(switch, "enable_pktgen_port_down"):
                raise ControlError("not_supported", "enable_pktgen_port_down needs a TNA pipeline")
            switch.enable_pktgen_port_down(_int_arg(args, "app_id"))
        return None
    raise ControlError("not_supported", f"unknown operation {op!r}")


class _Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        device: Device = self.server.device  # type: ignore[attr-defined]
        for line in self.rfile:
            if not line.strip():
                continue
            try:
                req = json.loads(line)
                if not isinstance(req, dict) or not isinstance(req.get("op"), str):
                    raise ControlError("invalid", "request must be {\"op\": str, \"args\": {}}")
                args = req.get("args") or {}
                if not isinstance(args, dict):
                    raise ControlError("invalid", "args must be an object")
                reply = {"ok": True, "result": dispatch(device, req["op"], args)}
            except json.JSONDecodeError as err:
                reply = {"ok": False, "kind": "invalid", "error": f"bad JSON: {err}"}
            except ControlError as err:
                reply = {"ok": False, "kind": err.kind, "error": str(err)}
            except Exception as err:  # noqa: BLE001 - core refusals (bad port...) are the caller's
                reply = {"ok": False, "kind": "invalid", "error": f"{type(err).__name__}: {err}"}
            self.wfile.write((json.dumps(reply) + "\n").encode())
            self.wfile.flush()


class ControlServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, device: Device, address: str) -> None:
        host, _, port = address.rpartition(":")
        super().__init__((host or "127.0.0.1", int(port)), _Handler)
        self.device = device
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self.server_address[1]

    def start(self) -> None:
        self._thread = threading.Thread(target=self.serve_forever, name="control", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


class ControlClient:
    """Blocking client of the side channel (one TCP connection, one request at a time)."""

    def __init__(self, address: str, timeout: float = 10.0) -> None:
        host, _, port = address.rpartition(":")
        self._sock = socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout)
        self._file = self._sock.makefile("rwb")
        self._lock = threading.Lock()

    def call(self, op: str, **args: Any) -> Any:
        with self._lock:
            self._file.write((json.dumps({"op": op, "args": args}) + "\n").encode())
            self._file.flush()
            line = self._file.readline()
        if not line:
            raise ConnectionError("p4sim control channel closed")
        reply = json.loads(line)
        if not reply.get("ok"):
            raise ControlError(reply.get("kind", "invalid"), reply.get("error", "refused"))
        return reply.get("result")

    def close(self) -> None:
        self._file.close()
        self._sock.close()
