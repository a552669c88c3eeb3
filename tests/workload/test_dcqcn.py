"""DCQCN (fabric_sim.rdma, NVIDIA's default parameters) against its published behaviour: flows
that join one bottleneck one after another converge near their fair share while the link stays
near full (Zhu et al., SIGCOMM'15, section 6).  The bottleneck is one byte-served 100G FIFO with
RED/ECN marking (Kmin 50 KB, Kmax 1 MB, Pmax 10%); the reverse path is a plain 2 µs wire.

What this shows and what it does not: the NICs run with their default 64-packet window, which
also bounds each QP's bytes in flight; DCQCN is active (every flow is cut by CNPs) and the
negative control (a rate increase that never fires) loses both fairness and utilisation.  With
the window removed, this model of NVIDIA's defaults does not bound the queue (the byte counter's
fast recovery toward an unclamped target outruns the cuts), so the window matters."""
import heapq
import itertools
import random
from collections import deque
from dataclasses import dataclass, field

from fabric_sim.rdma import DcqcnParams, NicParams, RdmaNetwork

GBPS = 100.0
KMIN, KMAX, PMAX = 50_000, 1_000_000, 0.10


@dataclass
class _Host:
    name: str
    ip: str
    mac: str
    leaf: str = "leaf"
    capacity_gbps: float = GBPS


@dataclass
class _Fabric:
    hosts: dict = field(default_factory=dict)
    switches: dict = field(default_factory=dict)


@dataclass
class _Switch:
    mac: str = "02:00:00:00:00:fe"


class Bottleneck:
    """Senders -> 1 µs -> one FIFO at GBPS with RED marking -> 1 µs -> the receiver."""

    def __init__(self, sink_ip: bytes, seed: int = 1) -> None:
        self.heap, self.seq, self.now_us = [], itertools.count(), 0.0
        self.deliver = None
        self.sink_ip = sink_ip
        self.by_ip: dict[bytes, str] = {}
        self.queue: deque = deque()  # (departure time, bytes) of frames in the FIFO
        self.queued = 0
        self.busy_until = 0.0
        self.max_queue = 0
        self.rng = random.Random(seed)

    def at(self, t, fn, sync=True):
        heapq.heappush(self.heap, (t, next(self.seq), fn))

    def inject(self, t, host, frame):
        dst = self.by_ip[frame[30:34]]
        if frame[30:34] != self.sink_ip:  # ACK / CNP back to a sender
            self.at(t + 2.0, lambda: self.deliver(self.now_us, dst, frame))
            return
        arrive = t + 1.0
        while self.queue and self.queue[0][0] <= arrive:
            self.queued -= self.queue.popleft()[1]
        q = self.queued
        p = 0.0 if q <= KMIN else 1.0 if q >= KMAX else PMAX * (q - KMIN) / (KMAX - KMIN)
        if frame[15] & 3 and self.rng.random() < p:
            frame = frame[:15] + bytes([frame[15] | 3]) + frame[16:]
        depart = max(arrive, self.busy_until) + len(frame) * 8 / (GBPS * 1e3)
        self.busy_until = depart
        self.queue.append((depart, len(frame)))
        self.queued += len(frame)
        self.max_queue = max(self.max_queue, self.queued)
        self.at(depart + 1.0, lambda: self.deliver(self.now_us, dst, frame))

    def run(self, until_us):
        while self.heap and self.heap[0][0] <= until_us:
            t, _, fn = heapq.heappop(self.heap)
            self.now_us = t
            fn()


def share(n_flows: int, nic: NicParams, stagger_us: float = 1000.0, horizon_us: float = 9000.0,
          during=None):
    """n_flows senders with NICs ``nic``, each joining ``stagger_us`` after the previous, into one
    receiver.  Returns per-flow Gb/s and link utilisation over the last third, the transfers and
    the bottleneck; ``during(net, sim)`` runs before the simulation (to schedule probes)."""
    fab = _Fabric(switches={"leaf": _Switch()})
    sink = _Host("sink", "10.0.0.100", "02:00:00:00:00:64")
    sim = Bottleneck(bytes([10, 0, 0, 100]))
    fab.hosts["sink"] = sink
    sim.by_ip[bytes([10, 0, 0, 100])] = "sink"
    for i in range(n_flows):
        h = _Host(f"s{i}", f"10.0.0.{i + 1}", f"02:00:00:00:00:{i + 1:02x}")
        fab.hosts[h.name] = h
        sim.by_ip[bytes([10, 0, 0, i + 1])] = h.name
    net = RdmaNetwork(sim, fab, nic)
    flows = [net.transfer(f"s{i}", "sink", 400 << 20, start_us=i * stagger_us) for i in range(n_flows)]
    net.start()
    if during is not None:
        during(net, sim)
    sim.run(horizon_us)
    lo = horizon_us * 2 / 3
    window_us = horizon_us - lo
    per_flow = [sum(1 for x in t.delivery_times if x >= lo) * 4096 * 8 / (window_us * 1e3) for t in flows]
    util = sum(per_flow) / GBPS * 4154 / 4096  # frames on the wire, not just payload
    return per_flow, util, flows, sim


def test_flows_joining_a_bottleneck_converge_near_the_fair_share_and_keep_it_full():
    per_flow, util, flows, _ = share(4, NicParams(dcqcn=DcqcnParams()))
    fair = GBPS / 4
    assert util >= 0.85, (per_flow, util)
    assert all(abs(x - fair) <= 0.15 * fair for x in per_flow), per_flow  # each within 15% of fair
    assert all(t.cnps > 100 and t.min_rate_gbps < 0.9 * GBPS for t in flows)  # DCQCN cut every flow


def test_without_a_working_rate_increase_neither_fairness_nor_utilisation_holds():  # negative control
    broken = DcqcnParams(rai_gbps=0.0, rhai_gbps=0.0, rate_timer_us=1e9, byte_counter=1 << 40)
    per_flow, util, *_ = share(4, NicParams(dcqcn=broken))
    assert util < 0.85 and max(per_flow) > 2 * min(per_flow)
