"""Workloads (collectives and RoCE mice) and the receiver-side measurements the demo reports.

A workload is a list of RoCEv2 flows, each a queue pair sending PSN 0..n-1 at a fixed pace (a
NIC's rate limiter); ``Workload.schedule()`` merges them into one time-ordered send list.  The
``Collector`` plays the receiving NICs: it matches each delivered frame to its flow by
(src IP, dst IP, dest QP), and records latency, PSN regressions (what makes RDMA go-back-N),
ECN CE marks and completion times.  Everything is in the fabric's (virtual) microseconds.
"""
from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass, field
from typing import Callable, Iterator, Optional, Sequence, Union

from fabric_sim.roce import RoceFlowTemplate, parse_roce


@dataclass(frozen=True)
class Endpoint:
    """A GPU NIC: where its packets enter the fabric and how it is addressed."""

    name: str
    ip: str
    mac: str
    leaf: str
    port: int


@dataclass
class Flow:
    fid: int
    src: Endpoint
    dst: Endpoint
    dqpn: int
    packets: int
    start_us: float
    gap_us: float  # pacing between this QP's packets
    kind: str  # "job" | "mouse"
    job: Optional[str] = None
    dscp: int = 26
    payload_len: int = 1024
    udp_sport: int = 49152
    burst: int = 0  # packets per message (0 = one continuous message)
    idle_us: float = 0.0  # pause between messages (RDMA message boundaries)
    template: Optional[RoceFlowTemplate] = field(default=None, repr=False)

    def build(self, gateway_mac: str) -> None:
        self.template = RoceFlowTemplate(
            self.src.mac, gateway_mac, self.src.ip, self.dst.ip, self.dqpn,
            payload_len=self.payload_len, dscp=self.dscp, udp_sport=self.udp_sport,
        )


@dataclass(frozen=True)
class Send:
    time_us: float
    src: Endpoint
    frame: bytes
    fid: int
    psn: int


class Workload:
    def __init__(self) -> None:
        self.flows: list[Flow] = []
        self._next_qp = 0x100

    def add(self, src: Endpoint, dst: Endpoint, packets: int, start_us: float, gap_us: float,
            kind: str, job: Optional[str] = None, dscp: int = 26, payload_len: int = 1024,
            burst: int = 0, idle_us: float = 0.0) -> Flow:
        """A QP sending ``packets`` at ``gap_us`` spacing; with ``burst`` > 0 it sends messages
        of ``burst`` packets separated by an extra ``idle_us`` pause."""
        qp = self._next_qp
        self._next_qp += 1
        # Distinct UDP source ports per QP, as RoCEv2 NICs do to give ECMP entropy.
        flow = Flow(len(self.flows), src, dst, qp, packets, start_us, gap_us, kind, job, dscp,
                    payload_len, udp_sport=49152 + (qp % 16384), burst=burst, idle_us=idle_us)
        self.flows.append(flow)
        return flow

    def alltoall(self, members: Sequence[Endpoint], packets_per_pair: int, start_us: float,
                 gap_us: float, job: str, jitter_us: float = 0.0, seed: int = 7, **kw) -> list[Flow]:
        """Every member sends to every other member on its own QP: the AlltoAll pattern of
        expert-parallel training, where cross-leaf pairs contend for uplinks.  ``jitter_us``
        spreads the QPs' first packets over that window (a NIC starts its QPs one after another,
        not in the same microsecond)."""
        rng = random.Random(seed)
        return [self.add(s, d, packets_per_pair, start_us + (rng.uniform(0, jitter_us) if jitter_us else 0),
                         gap_us, "job", job, **kw)
                for s in members for d in members if s is not d]

    def mice(self, pairs: Sequence[tuple[Endpoint, Endpoint]], count: int, packets: int,
             start_us: float, end_us: float, gap_us: float, seed: int = 1, **kw) -> list[Flow]:
        """Short latency-sensitive RoCE messages (RPCs, small AllReduce steps) at random times."""
        rng = random.Random(seed)
        return [self.add(*rng.choice(pairs), packets, rng.uniform(start_us, end_us), gap_us,
                         "mouse", None, **kw) for _ in range(count)]

    def schedule(self, gateway_mac: Union[str, Callable[[Endpoint], str]]) -> Iterator[Send]:
        """All packets of all flows, in send-time order (ties by flow id, then PSN).

        ``gateway_mac``: the destination MAC a NIC uses (its leaf's router MAC), or a function of
        the sending endpoint giving it."""
        for f in self.flows:
            if f.template is None:
                f.build(gateway_mac(f.src) if callable(gateway_mac) else gateway_mac)
        heap = [(f.start_us, f.fid, 0) for f in self.flows if f.packets > 0]
        heapq.heapify(heap)
        while heap:
            t, fid, psn = heapq.heappop(heap)
            f = self.flows[fid]
            yield Send(t, f.src, f.template.packet(psn, ip_id=psn), fid, psn)
            if psn + 1 < f.packets:
                pause = f.idle_us if f.burst and (psn + 1) % f.burst == 0 else 0.0
                heapq.heappush(heap, (t + f.gap_us + pause, fid, psn + 1))


@dataclass
class FlowResult:
    sent: int = 0
    received: int = 0
    max_psn: int = -1
    reorders: int = 0
    ce_marks: int = 0
    first_send_us: Optional[float] = None
    last_recv_us: Optional[float] = None
    latencies_us: list[float] = field(default_factory=list)


class Collector:
    """Receiving NICs: per-flow delivery bookkeeping."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.results = {f.fid: FlowResult() for f in workload.flows}
        self._by_key = {(f.src.ip, f.dst.ip, f.dqpn): f for f in workload.flows}
        self._sent_at: dict[tuple[int, int], float] = {}
        self.unmatched = 0

    def on_send(self, s: Send) -> None:
        r = self.results[s.fid]
        r.sent += 1
        if r.first_send_us is None:
            r.first_send_us = s.time_us
        self._sent_at[(s.fid, s.psn)] = s.time_us

    def on_receive(self, time_us: float, frame: bytes) -> None:
        from ipaddress import IPv4Address

        rf = parse_roce(frame)
        flow = rf and self._by_key.get((str(IPv4Address(rf.src_ip)), str(IPv4Address(rf.dst_ip)),
                                        rf.dqpn))
        if flow is None:
            self.unmatched += 1
            return
        r = self.results[flow.fid]
        r.received += 1
        if rf.psn < r.max_psn:
            r.reorders += 1  # a PSN regression: what an RDMA receiver treats as loss
        r.max_psn = max(r.max_psn, rf.psn)
        r.ce_marks += rf.ecn == 3
        r.last_recv_us = time_us
        sent = self._sent_at.pop((flow.fid, rf.psn), None)
        if sent is not None:
            r.latencies_us.append(time_us - sent)

    # ---- summaries
    def job_completion_us(self, job: str) -> Optional[float]:
        """From the job's first send to its last delivery; None if any packet was lost."""
        flows = [f for f in self.workload.flows if f.job == job]
        rs = [self.results[f.fid] for f in flows]
        if not rs or any(r.received < f.packets for f, r in zip(flows, rs)):
            return None
        return max(r.last_recv_us for r in rs) - min(r.first_send_us for r in rs)

    def latencies(self, kind: str) -> list[float]:
        return [x for f in self.workload.flows if f.kind == kind
                for x in self.results[f.fid].latencies_us]

    def total(self, attr: str, kind: Optional[str] = None) -> int:
        return sum(getattr(self.results[f.fid], attr) for f in self.workload.flows
                   if kind is None or f.kind == kind)


def percentile(values: Sequence[float], p: float) -> Optional[float]:
    """Nearest-rank percentile (no interpolation: a reported p99 is a latency that happened)."""
    if not values:
        return None
    s = sorted(values)
    k = max(0, min(len(s) - 1, math.ceil(p / 100 * len(s)) - 1))
    return s[k]
