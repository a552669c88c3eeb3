"""``python -m bmv2_env traffic FABRIC``: RoCEv2 traffic between the GPUs of a running fabric.

A small generator for an operator's first look (``stellarctl stats`` and ``watch`` then show
counters that move), not a benchmark: each chosen pair of hosts on different leaves sends
``--packets`` RoCEv2 RDMA-write frames (UDP 4791, one queue pair per pair, DSCP 26, ECT(0)) at
``--rate`` packets per second in total, and the command reports what arrived where.  It attaches
where ``bmv2_env up`` put the hosts: the wires' ``hosts.ipc`` (nn) or the far ends of the host
veths (veth, AF_PACKET).
"""
from __future__ import annotations

import struct
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Optional

from bmv2_env.env import EnvError
from bmv2_env.fabric import FabricState

HDR = struct.Struct("<iii")
PACKET_IN, PACKET_OUT = 3, 4


@dataclass
class TrafficReport:
    pairs: list[tuple[str, str]]
    sent: Counter = field(default_factory=Counter)        # (src, dst) -> frames sent
    received: Counter = field(default_factory=Counter)    # (src, dst) -> frames that reached dst
    stray: int = 0                                        # frames a host got that were not for it
    seconds: float = 0.0

    def text(self) -> str:
        lines = [f"traffic: {len(self.pairs)} host pairs, {sum(self.sent.values())} RoCEv2 frames sent in "
                 f"{self.seconds:.2f}s, {sum(self.received.values())} delivered"
                 + (f", {self.stray} stray" if self.stray else "")]
        for pair in self.pairs:
            lines.append(f"  {pair[0]:>6} -> {pair[1]:<6} sent {self.sent[pair]:6d}  delivered {self.received[pair]:6d}")
        if self.sent and not self.received:
            lines.append("nothing arrived: do the switches run the program? (stellarctl push FABRIC; "
                         "stellarctl stats FABRIC shows where the frames stopped)")
        return "\n".join(lines) + "\n"


def default_pairs(fabric) -> list[tuple[str, str]]:
    """Each host sends to the host at the same position on the next leaf (all cross a spine)."""
    by_leaf: dict[str, list] = {}
    for h in fabric.hosts.values():
        by_leaf.setdefault(h.leaf, []).append(h)
    leaves = sorted(by_leaf)
    pairs = []
    for i, leaf in enumerate(leaves):
        nxt = by_leaf[leaves[(i + 1) % len(leaves)]]
        for j, h in enumerate(by_leaf[leaf]):
            if nxt and leaves[(i + 1) % len(leaves)] != leaf:
                pairs.append((h.name, nxt[j % len(nxt)].name))
    return pairs


class _NanomsgHosts:
    def __init__(self, address: str, hosts: list) -> None:
        import pynng

        self._pynng = pynng
        self.index = {h.name: i for i, h in enumerate(hosts)}
        self.names = [h.name for h in hosts]
        self.sock = pynng.Pair0(dial=address, block_on_dial=True)
        self.sock.recv_timeout = 50
        self.sock.send_timeout = 1000

    def send(self, host: str, frame: bytes) -> None:
        self.sock.send(HDR.pack(PACKET_IN, self.index[host], len(frame)) + frame)

    def receive(self) -> Optional[tuple[str, bytes]]:
        try:
            msg = self.sock.recv()
        except self._pynng.Timeout:
            return None
        kind, index, length = HDR.unpack_from(msg)
        return (self.names[index], msg[HDR.size:HDR.size + length]) if kind == PACKET_OUT else None

    def close(self) -> None:
        self.sock.close()


class _VethHosts:
    def __init__(self, interfaces: dict[str, str]) -> None:
        import select
        import socket

        self._select = select
        self.socks = {}
        for host, ifname in interfaces.items():
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
            s.bind((ifname, 0))
            s.setblocking(False)
            self.socks[host] = s
        self.by_fd = {s.fileno(): h for h, s in self.socks.items()}

    def send(self, host: str, frame: bytes) -> None:
        self.socks[host].send(frame)

    def receive(self) -> Optional[tuple[str, bytes]]:
        import socket

        ready, _, _ = self._select.select(list(self.socks.values()), [], [], 0.05)
        for s in ready:
            frame, addr = s.recvfrom(65535)
            if addr[2] != socket.PACKET_OUTGOING:  # a packet socket also sees what it sent
                return self.by_fd[s.fileno()], frame
        return None

    def close(self) -> None:
        for s in self.socks.values():
            s.close()


def run(state: FabricState, pairs: Optional[Iterable[tuple[str, str]]] = None, packets: int = 100,
        rate: float = 1000.0, payload: int = 256, settle_s: float = 2.0) -> TrafficReport:
    """Send ``packets`` frames per pair, interleaved, at ``rate`` frames/s in total; then wait up
    to ``settle_s`` for the last ones to arrive."""
    from control_plane.model import load_fabric
    from fabric_sim.roce import RoceFlowTemplate

    fabric = load_fabric(state.fabric)
    pairs = list(pairs) if pairs is not None else default_pairs(fabric)
    for src, dst in pairs:
        for h in (src, dst):
            if h not in fabric.hosts:
                raise EnvError(f"{state.fabric}: no host {h!r} (hosts: {', '.join(fabric.hosts)})")
    report = TrafficReport(pairs)
    templates, expect = {}, {}
    for qp, (src, dst) in enumerate(pairs, start=0x100):
        s, d = fabric.hosts[src], fabric.hosts[dst]
        templates[(src, dst)] = RoceFlowTemplate(s.mac, fabric.switches[s.leaf].mac, str(s.ip), str(d.ip), qp,
                                                 payload_len=payload, udp_sport=49152 + qp)
        expect[(dst, str(s.ip))] = (src, dst)
    ports = (_NanomsgHosts(state.hosts_ipc, list(fabric.hosts.values())) if state.transport == "nn"
             else _VethHosts({h: i for h, i in state.host_interfaces.items()
                              if any(h in p for p in pairs)}))
    import ipaddress

    def drain(until: float) -> None:
        while time.monotonic() < until:
            got = ports.receive()
            if got is None:
                if time.monotonic() >= until:
                    return
                continue
            host, frame = got
            src_ip = str(ipaddress.IPv4Address(frame[26:30])) if len(frame) >= 34 else ""
            pair = expect.get((host, src_ip))
            if pair is None:
                report.stray += 1
            else:
                report.received[pair] += 1

    started = time.monotonic()
    try:
        gap = 1.0 / rate if rate > 0 else 0.0
        next_send = started
        for psn in range(packets):
            for pair in pairs:
                ports.send(pair[0], templates[pair].packet(psn))
                report.sent[pair] += 1
                next_send += gap
                drain(next_send)  # pace the sends; collect arrivals while waiting
        deadline = time.monotonic() + settle_s
        while time.monotonic() < deadline and sum(report.received.values()) < sum(report.sent.values()):
            drain(min(deadline, time.monotonic() + 0.1))
    finally:
        ports.close()
    report.seconds = time.monotonic() - started
    return report
