"""Workloads of the fabric study, built as transfers (RC QPs) on an ``RdmaNetwork``.

Collectives are step-dependent: a ring AllReduce's step k at rank r starts only when rank r has
received step k-1 (``Transfer.after``), so a slow or reordered transfer lengthens the job.  Flow
size distributions are published CDFs, scaled down by ``SIZE_SCALE`` (the simulator carries tens
of thousands of packets per run, not millions):

* web search (Alizadeh et al., DCTCP, SIGCOMM'10), as distributed with HPCC's traffic generator
  (alibaba-edu/High-Precision-Congestion-Control, traffic_gen/WebSearch_distribution.txt);
* data mining (Greenberg et al., VL2, SIGCOMM'09), the points as circulated with the pFabric /
  CONGA simulation scripts (in 1460-byte packets), transcribed here.

Poisson arrivals: load L means each host's NIC is offered L of its line rate on average (sources
and destinations uniform over hosts, destination != source).  On the 2:1 oversubscribed lab the
cross-leaf share of that load makes the leaf uplinks busier than L.
"""
from __future__ import annotations

import bisect
import random
from dataclasses import dataclass
from typing import Optional, Sequence

# (bytes, cumulative fraction)
WEB_SEARCH_CDF = [(0, 0.0), (10_000, 0.15), (20_000, 0.20), (30_000, 0.30), (50_000, 0.40),
                  (80_000, 0.53), (200_000, 0.60), (1_000_000, 0.70), (2_000_000, 0.80),
                  (5_000_000, 0.90), (10_000_000, 0.97), (30_000_000, 1.0)]
DATA_MINING_CDF = [(1460 * p, c) for p, c in [(1, 0.0), (1, 0.5), (2, 0.6), (3, 0.7), (7, 0.8),
                                              (267, 0.9), (2107, 0.95), (66667, 0.99), (666667, 1.0)]]
CDFS = {"websearch": WEB_SEARCH_CDF, "datamining": DATA_MINING_CDF}
SIZE_SCALE = 1 / 20  # every flow size is multiplied by this (and then at least one packet)
SIZE_CAP = 2_000_000  # scaled sizes above this are capped (keeps a run's packet count bounded)


def sample_size(cdf: Sequence[tuple[int, float]], rng: random.Random) -> int:
    """Inverse-CDF sample with linear interpolation between the published points."""
    u = rng.random()
    ps = [c for _, c in cdf]
    i = bisect.bisect_left(ps, u)
    if i == 0:
        return max(1, int(cdf[0][0]))
    (x0, p0), (x1, p1) = cdf[i - 1], cdf[i]
    x = x0 if p1 == p0 else x0 + (x1 - x0) * (u - p0) / (p1 - p0)
    return max(1, int(x))


def mean_size(cdf: Sequence[tuple[int, float]]) -> float:
    """Mean of the piecewise-linear CDF (uniform within each segment)."""
    return sum((x0 + x1) / 2 * (p1 - p0) for (x0, p0), (x1, p1) in zip(cdf, cdf[1:]))


def hosts_of(fabric) -> list[str]:
    return sorted(fabric.hosts, key=lambda h: (fabric.hosts[h].leaf, h))


def alltoall(net, members: Sequence[str], nbytes: int, jitter_us: float = 0.0, seed: int = 0,
             start_us: float = 0.0, tag: str = "a2a"):
    """Every member writes ``nbytes`` to every other member, each on its own QP; all QPs start at
    ``start_us`` (or spread uniformly over ``jitter_us``)."""
    rng = random.Random(seed)
    return [net.transfer(s, d, nbytes, "job", tag, start_us + (rng.uniform(0, jitter_us) if jitter_us else 0.0))
            for s in members for d in members if s != d]


def ring_allreduce(net, members: Sequence[str], nbytes: int, tag: str = "ring"):
    """Ring AllReduce of ``nbytes`` per rank: 2(n-1) steps (reduce-scatter then all-gather), each
    sending nbytes/n to the next rank; a rank's step k waits until it received step k-1."""
    n = len(members)
    chunk = max(1, nbytes // n)
    prev: list[Optional[object]] = [None] * n  # what rank r received in the previous step
    out = []
    for step in range(2 * (n - 1)):
        cur: list[Optional[object]] = [None] * n
        for r in range(n):
            t = net.transfer(members[r], members[(r + 1) % n], chunk, "job", tag,
                             0.0 if step == 0 else None)
            if step > 0:
                t.after(prev[r])  # rank r forwards what it received last step
            cur[(r + 1) % n] = t
            out.append(t)
        prev = cur
    return out


def permutation(net, members: Sequence[str], nbytes: int, seed: int, tag: str = "perm"):
    """A random derangement: each host sends ``nbytes`` to one other host, all at t=0."""
    rng = random.Random(seed)
    while True:
        dst = list(members)
        rng.shuffle(dst)
        if all(a != b for a, b in zip(members, dst)):
            break
    return [net.transfer(a, b, nbytes, "job", tag, 0.0) for a, b in zip(members, dst)]


def incast(net, members: Sequence[str], nbytes: int, seed: int, tag: str = "incast"):
    """Every other host writes ``nbytes`` to one receiver at t=0."""
    rng = random.Random(seed)
    sink = rng.choice(list(members))
    return [net.transfer(s, sink, nbytes, "job", tag, 0.0) for s in members if s != sink]


def poisson(net, members: Sequence[str], cdf_name: str, load: float, duration_us: float, seed: int,
            line_gbps: float = 100.0, tag: Optional[str] = None):
    """Poisson flow arrivals over ``duration_us`` so each host's NIC is offered ``load`` of its
    line rate; sizes from the named CDF, scaled by SIZE_SCALE."""
    rng = random.Random(seed)
    cdf = CDFS[cdf_name]
    mean = min(SIZE_CAP, mean_size(cdf) * SIZE_SCALE)
    bytes_per_us = line_gbps * 1e3 / 8 * load * len(members)
    rate = bytes_per_us / mean  # flows per µs over the whole fabric
    t, out = 0.0, []
    while True:
        t += rng.expovariate(rate)
        if t > duration_us:
            return out
        src = rng.choice(members)
        dst = rng.choice([m for m in members if m != src])
        size = min(SIZE_CAP, max(1, int(sample_size(cdf, rng) * SIZE_SCALE)))
        out.append(net.transfer(src, dst, size, "flow", tag or cdf_name, t))


def tenants(net, fabric, nbytes: int, seed: int):
    """Two tenants: tenant A runs an AlltoAll among its hosts; tenant B's hosts blast long
    line-rate writes to A's receivers (a misbehaving tenant: no collective structure, every QP
    started at once and never paced by the application)."""
    by_tenant: dict[str, list[str]] = {}
    for h in hosts_of(fabric):
        by_tenant.setdefault(fabric.hosts[h].tenant or "none", []).append(h)
    names = sorted(by_tenant)
    a, b = by_tenant[names[0]], by_tenant[names[-1]]
    job = alltoall(net, a, nbytes, seed=seed, tag="tenantA")
    rng = random.Random(seed)
    bad = [net.transfer(s, rng.choice(a), nbytes * len(a), "bulk", "tenantB", 0.0) for s in b]
    return job + bad


# ---------------------------------------------------------------------------------------------
# Training-like collectives: NCCL's structure on persistent QPs, repeated over iterations.
#
# What is modelled (NCCL's documented behaviour, no NCCL code):
# * a collective is split over ``channels``; each channel has its own QP per (rank pair), kept
#   for the whole job (``RdmaNetwork`` channel QPs: PSNs and DCQCN state carry across messages);
# * data moves in slices of ``slice_bytes`` (NCCL's chunks: 0.5-4 MB on large collectives), and a
#   rank forwards slice j of a step once it received slice j of the previous step (pipelining);
# * iterations: compute (``gap_us``) between them, each rank launching with a random skew in
#   [0, ``skew_us``]; the first ``warmup`` iterations are excluded from the measured times.
# Sizes: ``Collective.nbytes`` is the buffer each rank contributes (AllReduce) or sends in total
# (AlltoAll/AlltoAllv); realistic collectives are 1-256 MB (the study picks what fits its time).

@dataclass(frozen=True)
class Collective:
    kind: str  # ring | tree (AllReduce) | a2a (AlltoAll) | moe (AlltoAllv, skewed sizes) | perm
    nbytes: int
    channels: int = 2
    slice_bytes: int = 1 << 20
    zipf: float = 1.0  # moe: destination popularity ~ 1 / rank^zipf (reshuffled every iteration)

    def __post_init__(self) -> None:
        if self.kind not in BUILDERS:
            raise ValueError(f"unknown collective {self.kind!r} (one of {', '.join(BUILDERS)})")
        if self.nbytes <= 0 or self.channels < 1 or self.slice_bytes <= 0:
            raise ValueError("a collective needs nbytes > 0, channels >= 1 and slice_bytes > 0")


def place_ranks(hosts: Sequence[str], seed: int) -> list[str]:
    """Rank r runs on the returned list's r-th host: a seeded random placement."""
    out = list(hosts)
    random.Random(seed ^ 0xA5A5).shuffle(out)
    return out


def _slices(nbytes: float, slice_bytes: int) -> list[int]:
    n = max(1, int(nbytes))
    return [min(slice_bytes, n - k) for k in range(0, n, slice_bytes)]


def _ring(net, ranks, c: "Collective", starts, tag, rng) -> list:
    """Ring AllReduce per channel: 2(n-1) steps of nbytes/(n channels) to the next rank."""
    n, out = len(ranks), []
    sizes = _slices(c.nbytes / (n * c.channels), c.slice_bytes)
    for ch in range(c.channels):
        prev: list[list] = [[] for _ in range(n)]  # slices rank r received in the previous step
        for step in range(2 * (n - 1)):
            cur: list[list] = [[] for _ in range(n)]
            for r in range(n):
                src, dst = ranks[r], ranks[(r + 1) % n]
                for j, size in enumerate(sizes):
                    t = net.transfer(src, dst, size, "job", tag, starts[src] if step == 0 else None, channel=ch)
                    if step:
                        t.after(prev[r][j])
                        t.not_before = starts[src]
                    cur[(r + 1) % n].append(t)
                    out.append(t)
            prev = cur
    return out


def _tree(net, ranks, c: "Collective", starts, tag, rng) -> list:
    """Tree AllReduce per channel: reduce to the root of a binary tree, then broadcast back down;
    odd channels use the mirrored tree (NCCL's double binary tree spreads the root's load the
    same way).  Each node forwards slice j once it holds slice j from all its children."""
    n, out = len(ranks), []
    sizes = _slices(c.nbytes / c.channels, c.slice_bytes)
    for ch in range(c.channels):
        order = list(ranks) if ch % 2 == 0 else list(reversed(ranks))
        kids = [[k for k in (2 * i + 1, 2 * i + 2) if k < n] for i in range(n)]
        up: dict[int, list] = {}
        for i in range(n - 1, 0, -1):  # children before parents
            src, dst = order[i], order[(i - 1) // 2]
            up[i] = []
            for j, size in enumerate(sizes):
                t = net.transfer(src, dst, size, "job", tag, starts[src] if not kids[i] else None, channel=ch)
                if kids[i]:
                    t.after(*(up[k][j] for k in kids[i]))
                    t.not_before = starts[src]
                up[i].append(t)
                out.append(t)
        down: dict[int, list] = {}
        for i in range(1, n):  # parents before children
            p = (i - 1) // 2
            src, dst = order[p], order[i]
            down[i] = []
            for j, size in enumerate(sizes):
                t = net.transfer(src, dst, size, "job", tag, None, channel=ch)
                t.after(*([up[k][j] for k in kids[0]] if p == 0 else [down[p][j]]))
                down[i].append(t)
                out.append(t)
    return out


def _pairs(net, ranks, c: "Collective", starts, tag, share) -> list:
    out = []
    for ch in range(c.channels):
        for s in ranks:
            for d in ranks:
                if s != d:
                    for size in _slices(share(s, d) / c.channels, c.slice_bytes):
                        out.append(net.transfer(s, d, size, "job", tag, starts[s], channel=ch))
    return out


def _a2a(net, ranks, c: "Collective", starts, tag, rng) -> list:
    """AlltoAll: every rank sends nbytes/(n-1) to every other rank, all at its launch."""
    return _pairs(net, ranks, c, starts, tag, lambda s, d: c.nbytes / (len(ranks) - 1))


def _moe(net, ranks, c: "Collective", starts, tag, rng) -> list:
    """MoE AlltoAllv: a rank's nbytes split over the others in proportion to their experts'
    popularity, Zipf(``zipf``) over a fresh random order each iteration (hot experts)."""
    order = list(ranks)
    rng.shuffle(order)
    weight = {r: 1.0 / (k + 1) ** c.zipf for k, r in enumerate(order)}
    return _pairs(net, ranks, c, starts, tag,
                  lambda s, d: c.nbytes * weight[d] / sum(w for r, w in weight.items() if r != s))


def _perm(net, ranks, c: "Collective", starts, tag, rng) -> list:
    """Permutation: rank r sends nbytes to rank r + n/2 (mod n), the same partner every iteration
    (pairwise exchanges such as pipeline stages or a shifted AlltoAll step).  Ranks are placed at
    random, so which pairs cross the spines, and collide there, changes with the seed."""
    n, out = len(ranks), []
    for ch in range(c.channels):
        for r, src in enumerate(ranks):
            dst = ranks[(r + n // 2) % n]
            for size in _slices(c.nbytes / c.channels, c.slice_bytes):
                out.append(net.transfer(src, dst, size, "job", tag, starts[src], channel=ch))
    return out


BUILDERS = {"ring": _ring, "tree": _tree, "a2a": _a2a, "moe": _moe, "perm": _perm}


class Training:
    """A training job: ``iterations`` + ``warmup`` rounds of one collective with compute gaps.

    Iteration i+1 starts ``gap_us`` after the last transfer of iteration i completed (a
    synchronous training step), each rank after its own launch skew.  ``records`` holds (start,
    end) per completed iteration; ``measured()`` the durations after the warm-up."""

    def __init__(self, net, ranks: Sequence[str], collective: Collective, iterations: int, warmup: int,
                 gap_us: float, skew_us: float, seed: int) -> None:
        if len(ranks) < 2:
            raise ValueError("a collective needs at least 2 ranks")
        self.net, self.ranks, self.collective = net, list(ranks), collective
        self.total, self.warmup = iterations + warmup, warmup
        self.gap_us, self.skew_us = gap_us, skew_us
        self.rng = random.Random(seed ^ 0x7A1)
        self.records: list[tuple[float, float]] = []
        self._iteration(0, 0.0)

    def _iteration(self, i: int, t0: float) -> None:
        starts = {r: t0 + (self.rng.uniform(0, self.skew_us) if self.skew_us else 0.0) for r in self.ranks}
        c = self.collective
        transfers = BUILDERS[c.kind](self.net, self.ranks, c, starts, f"{c.kind}{i}", self.rng)
        left = [len(transfers)]

        def done(_t, now: float) -> None:
            left[0] -= 1
            if left[0] == 0:
                self.records.append((t0, now))
                if i + 1 < self.total:
                    self._iteration(i + 1, now + self.gap_us)

        for t in transfers:
            t.callbacks.append(done)

    def measured(self) -> list[float]:
        return [end - start for start, end in self.records[self.warmup:]]


def training(net, ranks: Sequence[str], collective: Collective, iterations: int = 5, warmup: int = 1,
             gap_us: float = 20.0, skew_us: float = 5.0, seed: int = 0) -> Training:
    """Start a training job on ``net`` (call before or while the network runs)."""
    return Training(net, ranks, collective, iterations, warmup, gap_us, skew_us, seed)
