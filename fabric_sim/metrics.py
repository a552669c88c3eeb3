"""Metrics of one fabric-study run that need more than the transfers' own counters: link
utilisation measured over exactly the window it is divided by, uplink imbalance, NCCL bus
bandwidth and per-iteration times.

Why a ``LinkMeter``: utilisation used to be (frames counted until the simulation stopped) x (one
frame time) / (time of the last completion).  The simulation runs on after the last completion
(ACKs, a controller poll at 1 ms, go-back-N tails), so frames sent *after* the window were
divided by the window: 1.06-1.19 on a link degraded to 40%.  The meter records each frame's
departure time and size and counts only the bytes whose serialisation ended inside the window,
at the port's real (possibly degraded) rate; a port serves one frame at a time, so the result
cannot exceed 1.
"""
from __future__ import annotations

import bisect
from array import array
from typing import Optional, Sequence

from fabric_sim.roce import ipv4_offset

# NCCL's bus-bandwidth factors (nccl-tests, doc/PERFORMANCE.md): busbw = algbw x factor(n).
BUSBW_FACTOR = {
    "allreduce": lambda n: 2 * (n - 1) / n,
    "allgather": lambda n: (n - 1) / n,
    "reducescatter": lambda n: (n - 1) / n,
    "alltoall": lambda n: (n - 1) / n,
    "sendrecv": lambda n: 1.0,
}


def busbw_gbps(collective: str, ranks: int, bytes_per_rank: float, seconds: float) -> float:
    """NCCL bus bandwidth: algbw = the per-rank buffer size / time (nccl-tests' "size": the
    whole AllReduce buffer, or every peer's slice of an AlltoAll, own slice included), times
    the collective's factor, so that busbw compares with the link rate whatever n is."""
    return bytes_per_rank * 8 / seconds / 1e9 * BUSBW_FACTOR[collective](ranks)


class LinkMeter:
    """Frames that switch-to-switch ports of a ``SimFabric`` put on the wire, with their
    departure times.  Installs itself around every device's ``transmit`` (the SimFabric's wiring
    callback), so it sees exactly what the links carry; frames on a port that is down are not
    carried and not counted."""

    def __init__(self, sim) -> None:
        self.sim = sim
        self.times: dict = {ref: array("d") for ref in sim.peer}
        self.sizes: dict = {ref: array("I") for ref in sim.peer}
        for name, dev in sim.devices.items():
            dev.transmit = self._wrap(name, dev.transmit)

    def _wrap(self, name: str, inner):
        from fabric_sim.simfabric import PortRef

        dev = self.sim.devices[name]
        down = self.sim.down
        # port -> (PortRef, its times, its sizes), or None for a port not metered: looked up
        # once per port rather than hashing a PortRef for every frame
        arrays: dict[int, Optional[tuple]] = {}

        def transmit(port: int, frame: bytes) -> None:
            meter = arrays.get(port, False)
            if meter is False:
                ref = PortRef(name, port)
                meter = arrays[port] = (ref, self.times[ref], self.sizes[ref]) if ref in self.times else None
            if meter is not None and not (down and meter[0] in down):
                meter[1].append(dev.switch.clock.now_us)
                meter[2].append(len(frame))
            inner(port, frame)

        return transmit

    def util(self, ref, gbps: float, start_us: float, end_us: float) -> float:
        """Share of ``[start_us, end_us]`` the port spent serialising frames at ``gbps``: bytes of
        the frames that left at or after ``start_us`` and finished by ``end_us``."""
        if end_us <= start_us:
            return 0.0
        ts, sz = self.times[ref], self.sizes[ref]
        lo = bisect.bisect_left(ts, start_us)
        hi = bisect.bisect_right(ts, end_us)
        bits_per_us = gbps * 1e3
        busy = 0.0
        for i in range(lo, hi):
            wire = sz[i] * 8 / bits_per_us
            if ts[i] + wire <= end_us + 1e-9:
                busy += wire
        return busy / (end_us - start_us)


class DeadPathResends:
    """Resends that other leaves put on the path through a failed link: RoCE data frames whose
    PSN their QP already sent, leaving a leaf on its uplink to the failed link's spine, for a
    host behind the failed link's leaf.  Those are lost.  The data plane promises that none goes
    there once the path is suspect; ``late`` counts the ones sent from ``after_us`` on (the
    failure plus the silence after which a path can be suspect), ``early`` the ones before.
    The highest PSN per QP is tracked over every leaf uplink, so a resend is recognised whatever
    path the first copy took.  Wraps ``transmit`` as ``LinkMeter`` does."""

    def __init__(self, sim, fabric, failed_leaf: str, spine: str, after_us: float) -> None:
        self.sim, self.after_us = sim, after_us
        self.doomed_ips = {int(h.ip).to_bytes(4, "big") for h in fabric.hosts.values() if h.leaf == failed_leaf}
        self.top: dict = {}
        self.early = self.late = 0
        uplinks: dict = {}
        for ref, (peer, _) in sim.peer.items():
            if ref.switch != failed_leaf and fabric.switches[ref.switch].role == "leaf":
                uplinks.setdefault(ref.switch, {})[ref.port] = peer.switch == spine
        for name, ports in uplinks.items():
            dev = sim.devices[name]
            dev.transmit = self._wrap(dev, ports, dev.transmit)

    def _wrap(self, dev, ports: dict, inner):
        def transmit(port: int, frame: bytes) -> None:
            to_spine = ports.get(port)
            if to_spine is not None:
                self._see(frame, to_spine, dev.switch.now_us)
            inner(port, frame)

        return transmit

    def _see(self, frame: bytes, to_spine: bool, now: float) -> None:
        ip = ipv4_offset(frame)
        if ip is None:
            return
        bth = ip + 28
        if len(frame) < bth + 12 or frame[ip + 9] != 17 or frame[ip + 22:ip + 24] != b"\x12\xb7":
            return
        op = frame[bth]
        if op > 0x10 or op == 0x0C:  # RC SEND/WRITE/READ-response opcodes are data
            return
        key = (frame[ip + 16:ip + 20], frame[bth + 5:bth + 8])
        psn = int.from_bytes(frame[bth + 9:bth + 12], "big")
        top = self.top.get(key)
        ahead = None if top is None else (psn - top) & 0xFFFFFF
        if ahead is None or 0 < ahead < 0x800000:
            self.top[key] = psn
        elif to_spine and key[0] in self.doomed_ips:
            if now >= self.after_us:
                self.late += 1
            else:
                self.early += 1


def link_utils(meter: LinkMeter, fabric, capacity: dict, start_us: float, end_us: float) -> dict:
    """(switch, port) -> utilisation of every switch-to-switch port over the window, at its real
    rate (``capacity`` holds degraded ports' rates, Gb/s)."""
    out = {}
    for ref in meter.times:
        gbps = capacity.get((ref.switch, ref.port), fabric.switches[ref.switch].ports[ref.port].capacity_gbps)
        out[(ref.switch, ref.port)] = meter.util(ref, gbps, start_us, end_us)
    return out


def uplink_imbalance(utils: dict, fabric) -> Optional[float]:
    """Worst leaf's (max - min) / mean utilisation of its uplinks (0 = perfectly even, each
    uplink measured against its own real rate); None without a leaf with two uplinks in use."""
    worst = None
    for name, s in fabric.switches.items():
        if s.role != "leaf":
            continue
        ups = [utils[(name, n)] for n, p in s.ports.items()
               if p.peer_switch is not None and (name, n) in utils]
        mean = sum(ups) / len(ups) if ups else 0.0
        if len(ups) < 2 or mean <= 0:
            continue
        x = (max(ups) - min(ups)) / mean
        worst = x if worst is None else max(worst, x)
    return worst


def iteration_times(transfers: Sequence) -> list[float]:
    """Per measured iteration: its last completion minus its first start.  A transfer belongs
    to iteration ``t.iteration`` (workloads that repeat a collective set it; warm-up iterations
    set ``t.warmup``, and are left out); a workload without iterations is one iteration."""
    its: dict[int, list] = {}
    for t in transfers:
        if t.kind != "job" or getattr(t, "warmup", False):
            continue
        its.setdefault(getattr(t, "iteration", 0) or 0, []).append(t)
    out = []
    for _, ts in sorted(its.items()):
        if all(t.done_us is not None and t.started_us is not None for t in ts):
            out.append(max(t.done_us for t in ts) - min(t.started_us for t in ts))
    return out
