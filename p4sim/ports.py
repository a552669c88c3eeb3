"""Packet ports of ``p4sim run``: where packets enter and leave the switch.

Three transports, chosen per port exactly like simple_switch's command line:

* ``InProcessPorts`` -- a list/callback, for tests that own the switch in the same process;
* ``RawInterfacePort`` -- ``-i PORT@IFACE``: an AF_PACKET raw socket bound to a Linux interface
  (veth, tap...), needs root or CAP_NET_RAW;
* ``NanomsgPorts`` -- ``--packet-in ipc://PATH``: one nanomsg Pair0 socket carrying all ports, the
  protocol of PTF's ``--platform nn`` (and BMv2's ``--packet-in``).  The switch side listens.
  Message = little-endian ``<iii`` (type, port, length-or-arg) + payload.  No root needed.

A ``PortMap`` combines them and owns the sender thread, so the switch's output callback only
enqueues and never blocks on a slow socket while holding the switch lock.
"""
from __future__ import annotations

import logging
import queue
import socket
import struct
import threading
from collections import Counter
from typing import Callable, Protocol

log = logging.getLogger("p4sim.ports")

Deliver = Callable[[int, bytes], None]  # (ingress port, frame) -> switch
PortStatus = Callable[[int, bool], None]  # (port, up) -> device

# PTF nn platform message types (ptf/dataplane.py, DataPlanePacketSourceNN).
MSG_PORT_ADD = 0
MSG_PORT_REMOVE = 1
MSG_PORT_SET_STATUS = 2
MSG_PACKET_IN = 3  # to the switch
MSG_PACKET_OUT = 4  # from the switch
MSG_INFO_REQ = 5
MSG_INFO_REP = 6
PORT_STATUS_UP = 0
PORT_STATUS_DOWN = 1
INFO_HWADDR = 0
INFO_CTRS = 1
INFO_SUCCESS = 0
INFO_NOT_SUPPORTED = 1
_HDR = struct.Struct("<iii")


class Transport(Protocol):
    def start(self, deliver: Deliver, port_status: PortStatus) -> None: ...
    def transmit(self, port: int, data: bytes) -> None: ...
    def close(self) -> None: ...


class InProcessPorts:
    """Ports for in-process use: output lands in ``self.output`` (and an optional callback)."""

    def __init__(self, on_output: Deliver | None = None) -> None:
        self.output: list[tuple[int, bytes]] = []
        self.on_output = on_output
        self._deliver: Deliver | None = None

    def start(self, deliver: Deliver, port_status: PortStatus) -> None:
        self._deliver = deliver

    def send(self, port: int, data: bytes) -> None:
        """Inject a frame as if it arrived on ``port``."""
        if self._deliver is None:
            raise RuntimeError("ports not started")
        self._deliver(port, data)

    def transmit(self, port: int, data: bytes) -> None:
        self.output.append((port, data))
        if self.on_output is not None:
            self.on_output(port, data)

    def close(self) -> None:
        pass


class RawInterfacePort:
    """One switch port on a Linux interface through an AF_PACKET raw socket."""

    ETH_P_ALL = 0x0003
    PACKET_OUTGOING = 4
    PACKET_IGNORE_OUTGOING = 23  # Linux >= 4.20; older kernels: filter on pkttype instead
    SOL_PACKET = getattr(socket, "SOL_PACKET", 263)  # not exported by every Python build

    def __init__(self, port: int, ifname: str) -> None:
        self.port = port
        self.ifname = ifname
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(self.ETH_P_ALL))
        self.sock.bind((ifname, 0))
        try:
            self.sock.setsockopt(self.SOL_PACKET, self.PACKET_IGNORE_OUTGOING, 1)
        except OSError:
            pass
        self._thread: threading.Thread | None = None
        self._closed = False

    def start(self, deliver: Deliver, port_status: PortStatus) -> None:
        def loop() -> None:
            while not self._closed:
                try:
                    data, addr = self.sock.recvfrom(65535)
                except OSError:
                    return
                if addr[2] == self.PACKET_OUTGOING:  # our own transmissions
                    continue
                deliver(self.port, data)

        self._thread = threading.Thread(target=loop, name=f"port-{self.port}@{self.ifname}", daemon=True)
        self._thread.start()

    def transmit(self, port: int, data: bytes) -> None:
        self.sock.send(data)

    def close(self) -> None:
        self._closed = True
        self.sock.close()


class NanomsgPorts:
    """All ports over one nanomsg Pair0 socket (PTF ``--platform nn``); the switch listens."""

    def __init__(self, address: str) -> None:
        import pynng  # imported here: only this transport needs it

        self._pynng = pynng
        self.address = address
        self.sock = pynng.Pair0(listen=address)
        self.sock.recv_timeout = 200  # ms, so close() is noticed
        # Bursts (multicast, a queue draining) must not be lost while the peer reads: buffer
        # messages, and block (bounded) in the sender thread rather than drop.
        self.sock.send_buffer_size = 8192
        self.sock.recv_buffer_size = 8192
        self.sock.send_timeout = 1000  # ms; no reader for that long = no peer, drop
        self.removed: set[int] = set()
        self.rx: Counter[int] = Counter()
        self.tx: Counter[int] = Counter()
        self.dropped_no_peer = 0
        self._closed = False
        self._thread: threading.Thread | None = None
        self._send_lock = threading.Lock()

    def _send(self, msg: bytes) -> bool:
        with self._send_lock:
            try:
                self.sock.send(msg)
                return True
            except (self._pynng.Timeout, self._pynng.TryAgain):
                self.dropped_no_peer += 1
                return False
            except self._pynng.Closed:
                return False

    def start(self, deliver: Deliver, port_status: PortStatus) -> None:
        def loop() -> None:
            while not self._closed:
                try:
                    msg = self.sock.recv()
                except self._pynng.Timeout:
                    continue
                except self._pynng.Closed:
                    return
                try:
                    self._handle(msg, deliver, port_status)
                except Exception:  # noqa: BLE001 - a bad message must not stop the port
                    log.exception("bad nanomsg message dropped")

        self._thread = threading.Thread(target=loop, name="nanomsg-ports", daemon=True)
        self._thread.start()

    def _handle(self, msg: bytes, deliver: Deliver, port_status: PortStatus) -> None:
        if len(msg) < _HDR.size:
            log.warning("short nanomsg message (%d bytes) dropped", len(msg))
            return
        mtype, port, more = _HDR.unpack_from(msg)
        payload = msg[_HDR.size:]
        if mtype == MSG_PACKET_IN:
            if more != len(payload):
                log.warning("PACKET_IN length %d != payload %d; dropped", more, len(payload))
                return
            self.rx[port] += 1
            deliver(port, payload)
        elif mtype == MSG_PORT_ADD:
            self.removed.discard(port)
        elif mtype == MSG_PORT_REMOVE:
            self.removed.add(port)
        elif mtype == MSG_PORT_SET_STATUS:
            port_status(port, more == PORT_STATUS_UP)
        elif mtype == MSG_INFO_REQ:
            self._send(self._info_reply(port, more))
        else:
            log.warning("unknown nanomsg message type %d dropped", mtype)

    def _info_reply(self, port: int, info_type: int) -> bytes:
        head = _HDR.pack(MSG_INFO_REP, port, info_type)
        if info_type == INFO_CTRS:
            return head + struct.pack("<iii", INFO_SUCCESS, self.rx[port], self.tx[port])
        # Virtual ports have no hardware address; say so rather than invent one.
        return head + struct.pack("<i", INFO_NOT_SUPPORTED)

    def transmit(self, port: int, data: bytes) -> None:
        if port in self.removed:
            return
        if self._send(_HDR.pack(MSG_PACKET_OUT, port, len(data)) + data):
            self.tx[port] += 1

    def close(self) -> None:
        self._closed = True
        self.sock.close()
        if self._thread is not None:
            self._thread.join(timeout=2)


class PortMap:
    """Which transport serves which port, plus the sender thread that drains switch output."""

    def __init__(self) -> None:
        self.interfaces: dict[int, RawInterfacePort] = {}
        self.default: Transport | None = None
        self._outq: "queue.Queue[tuple[int, bytes] | None]" = queue.Queue()
        self._sender: threading.Thread | None = None

    def add_interface(self, port: int, ifname: str) -> None:
        self.interfaces[port] = RawInterfacePort(port, ifname)

    def set_default(self, transport: Transport) -> None:
        """The transport for every port without its own interface (e.g. the nanomsg socket)."""
        self.default = transport

    def transports(self) -> list:
        out: list = list(self.interfaces.values())
        if self.default is not None:
            out.append(self.default)
        return out

    def start(self, deliver: Deliver, port_status: PortStatus) -> None:
        for t in self.transports():
            t.start(deliver, port_status)
        self._sender = threading.Thread(target=self._send_loop, name="port-sender", daemon=True)
        self._sender.start()

    def transmit(self, port: int, data: bytes) -> None:
        """Called by the switch (under its lock): only enqueue."""
        self._outq.put((port, data))

    def _send_loop(self) -> None:
        while True:
            item = self._outq.get()
            try:
                if item is None:
                    return
                port, data = item
                transport = self.interfaces.get(port, self.default)
                if transport is not None:
                    transport.transmit(port, data)
            except OSError as err:
                log.warning("transmit on port %d failed: %s", port, err)
            finally:
                self._outq.task_done()

    def flush(self) -> None:
        """Return once everything the switch emitted so far has been handed to its transport."""
        if self._sender is not None and self._sender.is_alive():
            self._outq.join()

    def close(self) -> None:
        self._outq.put(None)
        if self._sender is not None:
            self._sender.join(timeout=2)
        for t in self.transports():
            t.close()


def parse_interface_arg(text: str) -> tuple[int, str]:
    """``-i 3@veth5`` -> (3, "veth5")."""
    port, sep, ifname = text.partition("@")
    if not sep or not port.isdigit() or not ifname:
        raise ValueError(f"expected PORT@IFACE, got {text!r}")
    return int(port), ifname
