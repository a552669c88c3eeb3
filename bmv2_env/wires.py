"""The links of a nanomsg fabric: ``python -m bmv2_env.wires build/fabric/lab/fabric.json``.

Started by ``bmv2_env up`` (``--transport nn``).  Each switch listens on its own nanomsg socket
(PTF's nn protocol: ``<iii`` type, port, length + frame; PACKET_IN 3 into the switch,
PACKET_OUT 4 out of it).  This process dials every one of them and carries each frame a switch
sends on a link port into the switch at the other end of that link, as a cable would.  Frames
sent on a host port go to ``hosts.ipc``, tagged with the host's index in the fabric's host order;
frames ``traffic`` puts there enter the host's leaf port.  Frames for a port with no cable are
counted and dropped.
"""
from __future__ import annotations

import signal
import struct
import sys
import threading
from collections import Counter
from pathlib import Path

HDR = struct.Struct("<iii")
PACKET_IN, PACKET_OUT = 3, 4


def main(argv: list[str] | None = None) -> int:
    import pynng

    from bmv2_env.fabric import FabricState
    from control_plane.model import load_fabric

    argv = sys.argv[1:] if argv is None else argv
    state = FabricState.load(Path(argv[0]))
    fabric = load_fabric(state.fabric)
    hosts = list(fabric.hosts.values())
    peer: dict[tuple[str, int], tuple[str, int]] = {}
    for link in fabric.links:
        peer[(link.leaf, link.leaf_port)] = (link.spine, link.spine_port)
        peer[(link.spine, link.spine_port)] = (link.leaf, link.leaf_port)
    host_at = {(h.leaf, h.port): i for i, h in enumerate(hosts)}
    socks = {}
    for name, sw in state.switches.items():
        sock = pynng.Pair0(dial=sw.ipc, block_on_dial=True)
        sock.recv_timeout = 200
        sock.send_timeout = 1000
        socks[name] = sock
    host_sock = pynng.Pair0(listen=state.hosts_ipc)
    host_sock.recv_timeout = 200
    host_sock.send_timeout = 1000
    stop = threading.Event()
    dropped: Counter[tuple[str, int]] = Counter()
    locks = {name: threading.Lock() for name in [*socks, "hosts"]}

    def send(name: str, sock, msg: bytes) -> None:
        with locks[name]:
            try:
                sock.send(msg)
            except (pynng.Timeout, pynng.TryAgain):
                dropped[(name, -1)] += 1

    def pump(sock, handle) -> None:
        """Hand every message ``sock`` receives to ``handle`` until the wires stop."""
        while not stop.is_set():
            try:
                msg = sock.recv()
            except pynng.Timeout:
                continue
            except pynng.Closed:
                return
            kind, port, length = HDR.unpack_from(msg)
            handle(kind, port, msg[HDR.size:HDR.size + length])

    def from_switch(name: str, kind: int, port: int, frame: bytes) -> None:
        if kind != PACKET_OUT:
            return
        if (name, port) in peer:
            other, other_port = peer[(name, port)]
            send(other, socks[other], HDR.pack(PACKET_IN, other_port, len(frame)) + frame)
        elif (name, port) in host_at:
            send("hosts", host_sock, HDR.pack(PACKET_OUT, host_at[(name, port)], len(frame)) + frame)
        else:
            dropped[(name, port)] += 1

    def from_hosts(kind: int, index: int, frame: bytes) -> None:
        if kind == PACKET_IN and 0 <= index < len(hosts):
            h = hosts[index]
            send(h.leaf, socks[h.leaf], HDR.pack(PACKET_IN, h.port, len(frame)) + frame)

    threads = [threading.Thread(target=pump, args=(sock, lambda *m, n=name: from_switch(n, *m)), daemon=True)
               for name, sock in socks.items()]
    threads.append(threading.Thread(target=pump, args=(host_sock, from_hosts), daemon=True))
    for t in threads:
        t.start()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    print(f"wires ready: {len(fabric.links)} links between {len(socks)} switches, {len(hosts)} hosts on "
          f"{state.hosts_ipc}", flush=True)
    stop.wait()
    for sock in [*socks.values(), host_sock]:
        sock.close()
    if dropped:
        print("dropped (no cable): " + ", ".join(f"{n}:{p} {c}" for (n, p), c in sorted(dropped.items())), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
