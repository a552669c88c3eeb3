"""Flow-level model of a leaf-spine fabric for 512-4096 GPUs, where packets are too many.

Why: the packet-level study carries tens of thousands of packets per run, so it stops at the
16-GPU lab (and the 64-GPU pod).  How job-aware path allocation compares with ECMP when many jobs
share a 512- or 4096-GPU fabric needs flows, not packets.

Model:
* a flow is (src, dst, bytes, start) on one path: NIC -> leaf uplink to spine s -> spine downlink
  to the destination leaf -> NIC (intra-leaf flows use the NICs only);
* rates are **max-min fair** over every link, recomputed (progressive filling, numpy) at each flow
  event (an arrival or a completion) -- what ideal congestion control converges to, with no
  queueing, loss or reordering;
* path choice at flow start:
  - ``ecmp``: a salted hash (uniform, independent per flow);
  - ``wcmp``: the same hash weighted by each path's end-to-end bottleneck (the slower of the
    uplink and the spine's downlink to the destination leaf), as the baselines' WCMP groups;
  - ``stellar``: the data plane's placement by bottleneck share: each member of the
    (source leaf -> destination leaf) path set scores this leaf's rate on that path plus the new
    flow's expected rate (its NIC's share), over the path's bottleneck (what the path DRE counts), plus 1/8 of the
    path's remote utilisation as measured ``measure_us`` ago; the lowest wins, ties round-robin
    from the flow's hash.  ``measure_us`` is the age of the remote view: 50 µs by default, for
    the path feedback that returning packets carry (about an RTT plus the round robin over a
    set's members); 1000 µs is the controller's poll alone.  This term is not validated against
    the packet level (the lab's collectives place their flows before any feedback returns), and
    it decides Stellar against ECMP at 512 GPUs (docs/flow-model.md).  Stellar's later moves (at drain points, by
    exploration) are not modelled: a conservative bound for it;
  - ``jobaware``: the controller knows each job's flows when the job starts and places them
    greedily, largest first, on the spine that keeps the busiest of its two links lowest
    (counting the bytes of flows already placed and not yet finished);
  - ``given``: the spine per flow from the caller (the packet level's recorded paths).
* iterations: a job's iteration k+1 starts when its iteration k has ended, after a compute gap,
  each rank up to a launch skew late.

What it models is PFC-only RoCE (or congestion control that converges to max-min fair shares):
no queueing, no pauses' head-of-line blocking, no DCQCN.  Validation (``validate_policy``,
tests/eval/test_flowmodel.py, docs/flow-model.md) against today's packet level (lossless PFC
shared buffer, byte-rate queues, persistent-QP NICs) with DCQCN off, AlltoAll 32 KB per QP on
the lab, per policy on ``deg40`` (leaf1-spine1 at 40%) and ``sym``: on the paths the packet level
took, the completion agrees within 10% (measured, seeds 1-3: <= 1.4% on deg40, <= 8.3% on
sym, where the model is the faster) and each policy's completion relative to ECMP's within 10%
(measured <= 1.7% on deg40, <= 8.7% on sym); the effects: WCMP and Stellar take 0.52-0.67x and
0.48-0.63x of ECMP's time on deg40 (far beyond the tolerance), Stellar 0.83-0.89x on sym (only
just beyond it).  With its own placement, Stellar's completion agrees within 10% per seed (0.2%
on deg40, 8% on sym: its placement is the packet level's) and ECMP's and WCMP's median over 5
seeds within 15%.  A model blind to the degraded link misses by 47%.  Under DCQCN
with NVIDIA's defaults it is no predictor: at 128 KB per QP the packet level is 42-51% slower.

Cost (numpy state, approximate max-min within ``rel_tol`` = 1%), measured on the shared 2-core
machine: one ring step of 64-GPU jobs on 4096 GPUs 0.5-1.1 s; 16 jobs x 32 GPUs on 512 GPUs, 5
iterations with 100 µs gaps and 10 µs skew, 5-20 s; 16 concurrent 32-GPU AlltoAlls on 512 GPUs
(15,872 flows finishing at ~1000 distinct times) ~65 s.
"""
from __future__ import annotations

import heapq
import random
import time
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Optional, Sequence

import numpy as np

from fabric_sim.roce import ipv4_offset


@dataclass
class Topo:
    """Hosts on leaves, leaves to spines; capacities in Gb/s."""

    host_leaf: dict[str, str]
    host_gbps: dict[str, float]
    leaves: list[str]
    spines: list[str]
    up_gbps: dict[tuple[str, str], float]  # (leaf, spine): sum of the parallel links
    down_gbps: dict[tuple[str, str], float]  # (spine, leaf)
    host_delay_us: dict[str, float] = field(default_factory=dict)  # NIC-to-leaf propagation
    link_delay_us: float = 0.0  # leaf-spine propagation

    def latency_us(self, src: str, dst: str, frame_bytes: int) -> float:
        """Unloaded one-way latency of a flow's last frame after it left the NIC: propagation
        plus one store-and-forward serialisation per switch (1 within a leaf, 3 across)."""
        cross = self.host_leaf[src] != self.host_leaf[dst]
        hops = 3 if cross else 1
        prop = self.host_delay_us.get(src, 0.0) + self.host_delay_us.get(dst, 0.0) + (2 * self.link_delay_us if cross else 0.0)
        return prop + hops * frame_bytes * 8 / (self.host_gbps[src] * 1e3)

    @classmethod
    def from_fabric(cls, fabric, capacity: Optional[dict] = None) -> "Topo":
        """From a fabric model; ``capacity`` overrides (switch, port) -> Gb/s (degraded links)."""
        capacity = capacity or {}
        leaves = sorted(n for n, s in fabric.switches.items() if s.role == "leaf")
        spines = sorted(n for n, s in fabric.switches.items() if s.role == "spine")
        up, down, delay = {}, {}, 0.0
        for leaf in leaves:
            for number, p in fabric.switches[leaf].ports.items():
                if p.peer_switch in spines:
                    up[(leaf, p.peer_switch)] = up.get((leaf, p.peer_switch), 0) + capacity.get((leaf, number), p.capacity_gbps)
                    delay = max(delay, p.delay_us)
                    down[(p.peer_switch, leaf)] = down.get((p.peer_switch, leaf), 0) + capacity.get(
                        (p.peer_switch, p.peer_port), p.capacity_gbps)
        return cls({h.name: h.leaf for h in fabric.hosts.values()},
                   {h.name: h.capacity_gbps for h in fabric.hosts.values()}, leaves, spines, up, down,
                   {h.name: h.delay_us for h in fabric.hosts.values()}, delay)

    @classmethod
    def leaf_spine(cls, leaves: int, spines: int, hosts_per_leaf: int, host_gbps: float = 400.0,
                   link_gbps: float = 400.0, links_per_pair: int = 1) -> "Topo":
        """A synthetic two-tier fabric (e.g. 4096 GPUs = 128 leaves x 32 GPUs, 32 spines)."""
        ls = [f"leaf{i + 1}" for i in range(leaves)]
        ss = [f"spine{i + 1}" for i in range(spines)]
        hl = {f"{l}g{j + 1}": l for l in ls for j in range(hosts_per_leaf)}
        cap = link_gbps * links_per_pair
        return cls(hl, {h: host_gbps for h in hl}, ls, ss, {(l, s): cap for l in ls for s in ss},
                   {(s, l): cap for l in ls for s in ss})


@dataclass
class FFlow:
    fid: int
    src: str
    dst: str
    nbytes: float
    start_us: float
    job: Optional[str] = None
    spine: Optional[str] = None
    done_us: Optional[float] = None
    remaining: float = field(default=0.0, repr=False)
    # Iterations: a flow of iteration k > 0 starts when every flow of its job's iteration k-1
    # has arrived, plus ``gap_us`` (compute) plus ``start_us`` (this rank's launch skew).
    iteration: int = 0
    gap_us: float = 0.0
    started_us: Optional[float] = None  # when the run started it (iterations: after the barrier)


def maxmin(links: np.ndarray, cap: np.ndarray, rel_tol: float = 0.0) -> np.ndarray:
    """Max-min fair rates by progressive filling.  ``links``: (F, K) link indices per flow (-1 =
    none); ``cap``: (L,) capacities.  Returns (F,) rates in cap's unit.

    Each round freezes the flows of every link whose fair share is within ``rel_tol`` of the
    smallest, each at the smallest share among its own links: rates stay feasible and within
    ``rel_tol`` of the exact allocation, and the number of rounds drops from the number of
    distinct bottleneck levels (hundreds on a loaded 512-GPU fabric) to a few tens."""
    F, K = links.shape
    rate = np.zeros(F)
    n = len(cap)
    idx = np.arange(F)
    links = np.where(links >= 0, links, n)  # a sentinel link of infinite capacity
    left = np.append(cap.astype(float), np.inf)
    while idx.size:
        count = np.bincount(links.ravel(), minlength=n + 1)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(count > 0, left / np.maximum(count, 1), np.inf)
        share[n] = np.inf
        r = float(share.min())
        tight = share <= r * (1 + rel_tol) + 1e-12
        hit = tight[links].any(axis=1)
        got = share[links[hit]].min(axis=1)
        rate[idx[hit]] = got
        left[:n] = np.maximum(left[:n] - np.bincount(links[hit].ravel(), weights=np.repeat(got, K),
                                                      minlength=n + 1)[:n], 0.0)
        keep = ~hit
        idx, links = idx[keep], links[keep]
    return rate


POLICIES = ("ecmp", "wcmp", "stellar", "jobaware", "given")


class FlowSim:
    """Flows on a ``Topo`` with max-min fair rates recomputed at every flow event."""

    def __init__(self, topo: Topo, policy: str = "ecmp", seed: int = 0, measure_us: float = 50.0,
                 level_weight: float = 0.125, paths: Optional[dict[int, str]] = None, frame_bytes: int = 0,
                 rel_tol: float = 0.01) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown policy {policy} (one of {', '.join(POLICIES)})")
        self.topo, self.policy, self.rng = topo, policy, random.Random(seed)
        self.salt = seed
        self.measure_us, self.level_weight = measure_us, level_weight
        self.paths = paths or {}
        self.frame_bytes = frame_bytes  # > 0: a flow completes one unloaded path latency after its fluid end
        # Rates within rel_tol of exact max-min, and flows due within rel_tol of the next
        # completion finish together with it: fewer rounds and events, errors of that order.
        self.rel_tol = rel_tol
        hosts = sorted(topo.host_leaf)
        self.hidx = {h: i for i, h in enumerate(hosts)}
        H = len(hosts)
        self.up_idx = {k: 2 * H + i for i, k in enumerate(sorted(topo.up_gbps))}
        self.down_idx = {k: 2 * H + len(self.up_idx) + i for i, k in enumerate(sorted(topo.down_gbps))}
        cap = [topo.host_gbps[h] for h in hosts] * 2
        cap += [topo.up_gbps[k] for k in sorted(topo.up_gbps)] + [topo.down_gbps[k] for k in sorted(topo.down_gbps)]
        self.cap = np.array(cap, dtype=float)  # Gb/s = kbit/µs
        self.events = 0

    # ---- placement
    def _links(self, f: FFlow) -> list[int]:
        H = len(self.hidx)
        ls = [self.hidx[f.src], H + self.hidx[f.dst]]
        sl, dl = self.topo.host_leaf[f.src], self.topo.host_leaf[f.dst]
        if sl != dl:
            ls += [self.up_idx[(sl, f.spine)], self.down_idx[(f.spine, dl)]]
        else:
            ls += [-1, -1]
        return ls

    def _hash_spine(self, f: FFlow) -> str:
        return self.topo.spines[salted_bin(self._key(f), self.salt, len(self.topo.spines))]

    @staticmethod
    def _key(f: FFlow) -> bytes:
        return f"{f.src}>{f.dst}#{f.fid}".encode()

    def _bottleneck(self, sl: str, s: str, dl: str) -> float:
        """A path's end-to-end capacity: the slower of the uplink and the spine's downlink."""
        return min(self.topo.up_gbps[(sl, s)], self.topo.down_gbps[(s, dl)])

    def _wcmp_spine(self, f: FFlow, sl: str, dl: str) -> str:
        """The salted hash over spines weighted by path capacity (``fabric_sim.baselines``'s
        WCMP groups repeat each next hop in proportion to its path's bottleneck)."""
        weights = np.array([self._bottleneck(sl, s, dl) for s in self.topo.spines])
        u = salted_bin(self._key(f), self.salt, 1 << 20) / (1 << 20)
        return self.topo.spines[int(np.searchsorted(np.cumsum(weights) / weights.sum(), u, side="right"))]

    def _place(self, fs: list[FFlow], now: float) -> None:
        t = self.topo
        for f in fs:
            f.spine = self._hash_spine(f)
        if self.policy == "given":
            for f in fs:
                f.spine = self.paths.get(f.fid, f.spine)
        elif self.policy == "wcmp":
            for f in fs:
                sl, dl = t.host_leaf[f.src], t.host_leaf[f.dst]
                if sl != dl:
                    f.spine = self._wcmp_spine(f, sl, dl)
        elif self.policy == "stellar":
            self._stellar_place(fs)
        elif self.policy == "jobaware":
            for f in sorted(fs, key=lambda f: -f.nbytes):
                sl, dl = t.host_leaf[f.src], t.host_leaf[f.dst]
                if sl == dl:
                    continue
                f.spine = min(t.spines, key=lambda s: max(
                    (self._placed.get(self.up_idx[(sl, s)], 0.0) + f.nbytes) / t.up_gbps[(sl, s)],
                    (self._placed.get(self.down_idx[(s, dl)], 0.0) + f.nbytes) / t.down_gbps[(s, dl)]))
                for li in (self.up_idx[(sl, f.spine)], self.down_idx[(f.spine, dl)]):
                    self._placed[li] = self._placed.get(li, 0.0) + f.nbytes

    def _stellar_place(self, fs: list[FFlow]) -> None:
        """Stellar's placement of new flows (``p4src/README.md``, "Utilisation estimator"):
        each member of the (source leaf -> destination leaf) path set scores the rate this leaf
        has on that path -- its active flows' current rates, plus the expected rate of each flow
        placed before in this batch, as the path DRE counts a packet at assignment -- plus the
        new flow's expected rate (its share of its NIC: the line rate over the NIC's active
        flows), over the path's end-to-end bottleneck; plus ``level_weight`` x the
        path's remote utilisation as last measured (``measure_us`` old).  The lowest score wins;
        ties go round-robin from the flow's hash position (the data plane's rotation)."""
        t = self.topo
        load = self._path_rate
        util = self._measured
        n = len(t.spines)
        senders = dict(self._nic_flows)
        for f in fs:
            senders[f.src] = senders.get(f.src, 0) + 1
        for f in fs:
            sl, dl = t.host_leaf[f.src], t.host_leaf[f.dst]
            if sl == dl:
                continue
            rate = t.host_gbps[f.src] / senders[f.src]  # its share of its NIC
            first = salted_bin(self._key(f), self.salt, n)

            def score(s: str) -> float:
                local = (load.get((sl, dl, s), 0.0) + rate) / self._bottleneck(sl, s, dl)
                return local + self.level_weight * max(util[self.up_idx[(sl, s)]], util[self.down_idx[(s, dl)]])

            f.spine = min((t.spines[(first + i) % n] for i in range(n)), key=score)
            load[(sl, dl, f.spine)] = load.get((sl, dl, f.spine), 0.0) + rate

    def _path_rates(self, active: np.ndarray, order: Sequence[FFlow]) -> tuple[dict, dict]:
        """Each (source leaf, destination leaf, spine) path's offered rate -- the sum over its
        active flows of each one's share of its NIC -- and each NIC's number of active flows.
        Offered, not max-min rate: a congested path's flows get no more rate when another joins
        (their sum stays at the bottleneck), so a rate sum would not see it fill up, while the
        data plane sees it in its queue delay and the path feedback."""
        out: dict = {}
        nics: dict = {}
        t = self.topo
        flows = [order[k] for k in active.tolist()]
        for f in flows:
            nics[f.src] = nics.get(f.src, 0) + 1
        for f in flows:
            if f.spine is not None and t.host_leaf[f.src] != t.host_leaf[f.dst]:
                key = (t.host_leaf[f.src], t.host_leaf[f.dst], f.spine)
                out[key] = out.get(key, 0.0) + t.host_gbps[f.src] / nics[f.src]
        return out, nics

    # ---- running
    def run(self, flows: Sequence[FFlow]) -> list[FFlow]:
        """Run to completion; fills ``done_us`` (µs) of every flow.  State is held in numpy
        arrays (remaining bits, link rows, rates of the active flows), so an event costs a few
        vector operations and one max-min computation over the active flows."""
        order = list(flows)
        n = len(order)
        pending = [(f.start_us, k) for k, f in enumerate(order) if f.iteration == 0]
        heapq.heapify(pending)
        waiting: dict[tuple, list[int]] = {}
        left: dict[tuple, int] = {}
        last: dict[tuple, float] = {}
        for k, f in enumerate(order):
            left[(f.job, f.iteration)] = left.get((f.job, f.iteration), 0) + 1
            if f.iteration > 0:
                waiting.setdefault((f.job, f.iteration), []).append(k)
        rem = np.array([f.nbytes * 8 / 1000.0 for f in order], dtype=float)  # kbit
        rows = np.full((n, 4), -1, dtype=np.int64)
        done = np.full(n, np.nan)
        active = np.zeros(0, dtype=np.int64)
        rates = np.zeros(0)
        now = 0.0
        self._measured = np.zeros(len(self.cap))
        self._path_rate: dict = {}
        self._nic_flows: dict = {}
        self._placed: dict = {}
        adaptive = self.policy == "stellar"
        next_measure = self.measure_us
        while pending or active.size:
            t_arr = pending[0][0] if pending else np.inf
            ttf = rem[active] / np.maximum(rates, 1e-12) if active.size else None
            t_done = now + float(ttf.min()) if active.size else np.inf
            t_next = min(t_arr, t_done, next_measure if adaptive and active.size else np.inf)
            if active.size and t_next > now:
                rem[active] = np.maximum(0.0, rem[active] - rates * (t_next - now))
            now = t_next
            self.events += 1
            if adaptive and now >= next_measure:
                self._measure(rows[active], rates)
                next_measure = now + self.measure_us
            finished = rem[active] <= 1e-6
            if ttf is not None and t_next == t_done:  # due within rel_tol of this completion
                finished |= ttf <= float(ttf.min()) * (1 + self.rel_tol) + 1e-9
            if finished.any():
                for k in active[finished]:
                    f = order[k]
                    done[k] = now + (self.topo.latency_us(f.src, f.dst, self.frame_bytes) if self.frame_bytes else 0.0)
                    if self.policy == "jobaware":
                        for li in rows[k, 2:]:
                            if li >= 0:
                                self._placed[int(li)] -= f.nbytes
                    key = (f.job, f.iteration)
                    left[key] -= 1
                    last[key] = max(last.get(key, 0.0), done[k])
                    if left[key] == 0:  # the iteration is over: release the next one
                        for m in waiting.pop((f.job, f.iteration + 1), []):
                            heapq.heappush(pending, (last[key] + order[m].gap_us + order[m].start_us, m))
                active, rates = active[~finished], rates[~finished]
            idx = []
            while pending and pending[0][0] <= now + 1e-12:
                idx.append(heapq.heappop(pending)[1])
            if idx:
                arriving = [order[k] for k in idx]
                for f in arriving:
                    f.started_us = now
                if self.policy == "stellar":
                    self._path_rate, self._nic_flows = self._path_rates(active, order)
                self._place(arriving, now)
                rows[idx] = [self._links(f) for f in arriving]
                active = np.concatenate([active, np.array(idx, dtype=np.int64)])
            if active.size:
                rates = maxmin(rows[active], self.cap, self.rel_tol)
        for f, d, r in zip(order, done, rem):
            f.done_us, f.remaining = float(d), float(r)
        return list(flows)

    def _measure(self, rows: np.ndarray, rates: np.ndarray) -> None:
        """Every link's utilisation as the controller's poll sees it (what Stellar's remote
        scores use until the next poll); the leaf's own placements since then are reset."""
        valid = rows >= 0
        load = np.bincount(rows[valid], weights=np.broadcast_to(rates[:, None], rows.shape)[valid],
                           minlength=len(self.cap))
        self._measured = load / self.cap


# ------------------------------------------------------------------------------ workloads
def alltoall_flows(members: Sequence[str], nbytes: float, job: str = "a2a", start: float = 0.0,
                   first_id: int = 0) -> list[FFlow]:
    out = []
    for s in members:
        for d in members:
            if s != d:
                out.append(FFlow(first_id + len(out), s, d, nbytes, start, job))
    return out


def many_jobs(topo: Topo, job_size: int, nbytes: float, seed: int, kind: str = "ring",
              fill: float = 1.0, iterations: int = 1, gap_us: float = 0.0, skew_us: float = 0.0) -> list[FFlow]:
    """Jobs of ``job_size`` GPUs placed on random GPUs (a fragmented cluster) until ``fill`` of the
    GPUs are busy; every job runs ``iterations`` collective steps (ring: each rank -> next rank;
    a2a: every pair), ``nbytes`` per flow, the first at t=0, each next one ``gap_us`` (compute)
    after the previous one ended; each rank's flows start up to ``skew_us`` late (launch skew)."""
    rng = random.Random(seed)
    hosts = sorted(topo.host_leaf)
    rng.shuffle(hosts)
    n_jobs = int(len(hosts) * fill) // job_size
    flows: list[FFlow] = []
    for j in range(n_jobs):
        members = hosts[j * job_size:(j + 1) * job_size]
        pairs = ([(members[r], members[(r + 1) % job_size]) for r in range(job_size)] if kind == "ring"
                 else [(s, d) for s in members for d in members if s != d])
        for it in range(iterations):
            skew = {m: rng.uniform(0.0, skew_us) for m in members}
            flows += [FFlow(len(flows) + k, s, d, nbytes, skew[s], f"job{j}", iteration=it,
                            gap_us=gap_us if it else 0.0) for k, (s, d) in enumerate(pairs)]
    return flows


def job_times(flows: Sequence[FFlow]) -> dict[str, float]:
    """Per job: its last flow's completion minus its first flow's start."""
    first: dict[str, float] = {}
    end: dict[str, float] = {}
    for f in flows:
        if f.iteration == 0:
            first[f.job] = min(first.get(f.job, np.inf), f.start_us)
        end[f.job] = max(end.get(f.job, 0.0), f.done_us)
    return {j: end[j] - first[j] for j in end}


def iteration_spans(flows: Sequence[FFlow]) -> dict[tuple[str, int], tuple[float, float]]:
    """Per (job, iteration): (first start, last completion) as the flow model ran them."""
    out: dict[tuple[str, int], tuple[float, float]] = {}
    for f in flows:
        lo, hi = out.get((f.job, f.iteration), (np.inf, 0.0))
        out[(f.job, f.iteration)] = (min(lo, f.started_us), max(hi, f.done_us))
    return out


def salted_bin(key: bytes, salt: int, n: int) -> int:
    """A salted hash into n bins: CRC-32 of the key, times an odd salt (mod 2^32), high bits.
    The multiplication matters: CRC is affine over GF(2), so a salt appended to the key only
    XORs a constant into every hash, and modulo a power of two the same keys collide for
    every salt (``collisions(..., linear=True)`` shows it)."""
    y = (zlib.crc32(key) * (2 * salt + 1)) & 0xFFFFFFFF
    return (y * n) >> 32


def collisions(n_flows: int, n_links: int, trials: int, seed: int = 0,
               linear: bool = False) -> tuple[float, float]:
    """ECMP as the flow model hashes: the mean number of flow pairs sharing a link and of empty
    links over ``trials`` salts (compare with balls-into-bins: C(n,2)/m and m(1-1/m)^n).
    ``linear``: append the salt to the CRC input instead (the broken way)."""
    pairs, empty = [], []
    for t in range(trials):
        counts = np.zeros(n_links, dtype=int)
        salt = seed * 100003 + t
        for fid in range(n_flows):
            key = f"f{fid}".encode()
            if linear:
                counts[zlib.crc32(key + salt.to_bytes(8, "big")) % n_links] += 1
            else:
                counts[salted_bin(key, salt, n_links)] += 1
        pairs.append(int((counts * (counts - 1) // 2).sum()))
        empty.append(int((counts == 0).sum()))
    return float(np.mean(pairs)), float(np.mean(empty))


# ------------------------------------------------------------------------------ validation
def lb_ecmp_spine(fabric, leaf: str, src_ip: str, dst_ip: str, sport: int, dport: int, salt: int) -> str:
    """The spine ``p4src/baselines/lb.p4`` in ECMP mode sends this flow to from ``leaf``: CRC-32
    over (src, dst, protocol 17, sport, dport) packed MSB-first, times the odd salt, CRC-16 of
    that modulo the group's slots (the leaf's uplinks in port order, as
    ``fabric_sim.baselines`` writes them)."""
    from ipaddress import IPv4Address

    import crcmod.predefined

    data = (int(IPv4Address(src_ip)).to_bytes(4, "big") + int(IPv4Address(dst_ip)).to_bytes(4, "big")
            + bytes([17]) + sport.to_bytes(2, "big") + dport.to_bytes(2, "big"))
    mixed = (zlib.crc32(data) * (salt | 1)) & 0xFFFFFFFF
    crc16 = crcmod.predefined.mkCrcFun("crc-16")  # CRC-16/ARC, BMv2's crc16
    ups = [p for _, p in sorted(fabric.switches[leaf].ports.items())
           if p.peer_switch is not None and fabric.switches[p.peer_switch].role == "spine"]
    return ups[crc16(mixed.to_bytes(4, "big")) % len(ups)].peer_switch


@contextmanager
def recorded_paths() -> Iterator[dict]:
    """While active, every packet-level ``SimFabric`` counts the data frames each spine receives
    per flow: ``{(src_ip, dst_ip, dest_qp): {spine: frames}}`` (ACKs and CNPs carry the
    requester's QP and their own opcodes, so they do not count).  This is where each policy --
    hash, weighted hash or Stellar's adaptive choice and its later moves -- actually put a flow."""
    from fabric_sim.rdma import OP_WRITE_ONLY
    from fabric_sim.simfabric import PortRef, SimFabric

    seen: dict = {}
    original = SimFabric._make_output_handler

    def record(spine: str, frame: bytes) -> None:
        ip = ipv4_offset(frame)
        if ip is not None:
            bth = ip + (frame[ip] & 0x0F) * 4 + 8
            if frame[bth] == OP_WRITE_ONLY:
                key = (frame[ip + 12:ip + 16], frame[ip + 16:ip + 20], int.from_bytes(frame[bth + 5:bth + 8], "big"))
                per = seen.setdefault(key, {})
                per[spine] = per.get(spine, 0) + 1

    def make(self, name: str):
        # Wraps each switch's output handler (the fabric's one place a frame takes a link): a
        # frame counts for the spine at the far end when the link carried it (tx_packets moved;
        # a down or lossy link's drops do not count).
        inner = original(self, name)

        def on_output(port: int, frame: bytes) -> None:
            ref = PortRef(name, port)
            before = self.tx_packets.get(ref, 0)
            inner(port, frame)
            peer = self.peer.get(ref)
            if peer is not None and peer[0].switch.startswith("spine") and self.tx_packets.get(ref, 0) > before:
                record(peer[0].switch, frame)

        return on_output

    SimFabric._make_output_handler = make
    try:
        yield seen
    finally:
        SimFabric._make_output_handler = original


def seen_key(net, fabric, t) -> tuple[bytes, bytes, int]:
    """Transfer ``t``'s key in ``recorded_paths``: (source IP, destination IP, destination QP)."""
    from ipaddress import IPv4Address

    src, dst = fabric.hosts[t.src], fabric.hosts[t.dst]
    return IPv4Address(str(src.ip)).packed, IPv4Address(str(dst.ip)).packed, net.send_qp_of[t.tid].peer_qpn


def packet_flows(net, fabric, fb: int, seen: dict, tag: str) -> tuple[list[FFlow], dict[int, str], dict]:
    """The packet level's transfers as flows on the paths they took: a flow whose frames crossed
    several spines (Stellar's moves, spraying) becomes one sub-flow per spine, bytes in the
    proportion of its frames.  Returns (flows, paths by flow id, transfer id -> its flow ids)."""
    flows: list[FFlow] = []
    paths: dict[int, str] = {}
    parts: dict[int, list[int]] = {}
    for t in net.transfers:
        src, dst = fabric.hosts[t.src], fabric.hosts[t.dst]
        split = seen.get(seen_key(net, fabric, t)) if src.leaf != dst.leaf else None
        total = sum(split.values()) if split else 0
        shares = [(sp, n / total) for sp, n in sorted(split.items())] if total else [(None, 1.0)]
        for spine, share in shares:
            f = FFlow(len(flows), t.src, t.dst, t.packets * fb * share, t.started_us, tag)
            flows.append(f)
            parts.setdefault(t.tid, []).append(f.fid)
            if spine is not None:
                paths[f.fid] = spine
    return flows, paths, parts


def validate_policy(mode: str, topo: str = "deg40", seed: int = 1, nbytes: int = 32768,
                    workload: str = "a2a", dcqcn: str = "off") -> dict:
    """Run the packet level (``fabric_sim.experiment.run``: today's lossless switch, byte-rate
    queues, persistent-QP NICs; ``dcqcn`` off = PFC only) under ``mode`` and the flow model on
    the same transfers; compare the collective's completion over the fluid ideal.

    Three flow-model figures:
    * ``flow_*``: each flow on the spine(s) the packet level put it on (checks the rate model);
    * ``own_*``: the flow model's own placement for the policy (``FlowSim(policy=mode)``, what
      it uses at 512-4096 GPUs: its salted hash for ECMP and WCMP, so one seed's draw differs
      from lb.p4's; Stellar's placement is deterministic up to ties);
    * ``hash_*``: the flow model's ECMP placement (a control for ``own``);
    * ``blind_*``, the negative control: the packet level's paths on the fabric at its nominal
      rates (a model that does not see the degraded link)."""
    from control_plane.model import load_fabric
    from fabric_sim.experiment import FABRICS, RunSpec, run

    keep: dict = {}
    with recorded_paths() as seen:
        row = run(RunSpec(workload, topo, mode, seed, nbytes=nbytes, dcqcn=dcqcn), keep=keep)
    net, fabric, fb = keep["net"], keep["fabric"], keep["frame_bytes"]
    start = min(t.started_us for t in net.transfers)
    pkt = np.array([t.done_us - t.started_us for t in net.transfers])
    out = {"mode": mode, "topo": topo, "seed": seed, "dcqcn": dcqcn, "ideal_us": row["ideal_us"],
           "packet_completion_us": row["completion_us"], "packet_over_ideal": row["completion_us"] / row["ideal_us"],
           "packet_wall_s": row["wall_s"], "pause_us_total": row["pause_us_total"]}
    runs = (("flow", fabric, "given"), ("own", fabric, mode), ("hash", fabric, "ecmp"),
            ("blind", load_fabric(FABRICS["lab"]), "given"))
    for name, model_fabric, policy in runs:
        flows, paths, parts = packet_flows(net, fabric, fb, seen, workload)
        started = time.perf_counter()
        FlowSim(Topo.from_fabric(model_fabric), policy, seed=seed, paths=paths, frame_bytes=fb).run(flows)
        done = {tid: max(flows[i].done_us for i in ids) for tid, ids in parts.items()}
        completion = max(done.values()) - start
        flo = np.array([done[t.tid] - t.started_us for t in net.transfers])
        out.update({f"{name}_completion_us": completion, f"{name}_over_ideal": completion / row["ideal_us"],
                    f"{name}_completion_error": abs(completion - row["completion_us"]) / row["completion_us"],
                    f"{name}_median_fct_error": float(np.median(np.abs(flo - pkt) / pkt)),
                    f"{name}_wall_s": time.perf_counter() - started})
    out["split_transfers"] = sum(1 for ids in parts.values() if len(ids) > 1)
    out["unrecorded_transfers"] = sum(1 for t in net.transfers if fabric.hosts[t.src].leaf != fabric.hosts[t.dst].leaf
                                      and not seen.get(seen_key(net, fabric, t)))
    return out


def validate_on_lab(seed: int = 1, nbytes: int = 65536, workload: str = "a2a", dcqcn: str = "off") -> dict:
    """Run the packet-level study (ECMP, symmetric lab, today's lossless switch) and the flow
    model on the same transfers and the paths lb.p4's hash gives them (``lb_ecmp_spine``);
    return both collective times and per-flow FCT errors."""
    from fabric_sim.experiment import RunSpec, run

    keep: dict = {}
    row = run(RunSpec(workload, "sym", "ecmp", seed, nbytes=nbytes, dcqcn=dcqcn), keep=keep)
    net, fabric, fb = keep["net"], keep["fabric"], keep["frame_bytes"]
    paths, flows = {}, []
    for t in net.transfers:
        src, dst = fabric.hosts[t.src], fabric.hosts[t.dst]
        if src.leaf != dst.leaf:
            paths[t.tid] = hashed_spine(net, fabric, t, keep["salt"])
        flows.append(FFlow(t.tid, t.src, t.dst, t.packets * fb, t.started_us, workload))
    FlowSim(Topo.from_fabric(fabric), "given", paths=paths, frame_bytes=fb).run(flows)
    start = min(t.started_us for t in net.transfers)
    pkt = np.array([t.done_us - t.started_us for t in net.transfers])
    flo = np.array([f.done_us - f.start_us for f in flows])
    return {"packet_completion_us": row["completion_us"], "flow_completion_us": max(f.done_us for f in flows) - start,
            "median_fct_error": float(np.median(np.abs(flo - pkt) / pkt)),
            "packet_fct_p50": float(np.median(pkt)), "flow_fct_p50": float(np.median(flo))}


def hashed_spine(net, fabric, t, salt: int) -> str:
    """The spine lb.p4's ECMP hash gives transfer ``t`` (its QP's UDP source port)."""
    src, dst = fabric.hosts[t.src], fabric.hosts[t.dst]
    return lb_ecmp_spine(fabric, src.leaf, str(src.ip), str(dst.ip), net.send_qp_of[t.tid].sport, 4791, salt)
