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
  - ``stellar``: utilisation-driven, as the data plane does it: the leaf knows the flows it placed
    on its own uplinks at once (the DRE is updated when a packet is assigned), remote link
    utilisation arrives ``measure_us`` late (the controller's poll); a flow leaves its hash choice
    only if another spine scores better by more than ``hysteresis`` (a fraction of capacity).
    Stellar's later moves at drain points are not modelled (a conservative bound for it);
  - ``jobaware``: the controller knows each job's flows when the job starts and places them
    greedily, largest first, on the spine that keeps the busiest of its two links lowest
    (counting the bytes of flows already placed and not yet finished).
"""
from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np


@dataclass
class Topo:
    """Hosts on leaves, leaves to spines; capacities in Gb/s."""

    host_leaf: dict[str, str]
    host_gbps: dict[str, float]
    leaves: list[str]
    spines: list[str]
    up_gbps: dict[tuple[str, str], float]  # (leaf, spine): sum of the parallel links
    down_gbps: dict[tuple[str, str], float]  # (spine, leaf)

    @classmethod
    def from_fabric(cls, fabric, capacity: Optional[dict] = None) -> "Topo":
        """From a fabric model; ``capacity`` overrides (switch, port) -> Gb/s (degraded links)."""
        capacity = capacity or {}
        leaves = sorted(n for n, s in fabric.switches.items() if s.role == "leaf")
        spines = sorted(n for n, s in fabric.switches.items() if s.role == "spine")
        up, down = {}, {}
        for leaf in leaves:
            for number, p in fabric.switches[leaf].ports.items():
                if p.peer_switch in spines:
                    up[(leaf, p.peer_switch)] = up.get((leaf, p.peer_switch), 0) + capacity.get((leaf, number), p.capacity_gbps)
                    down[(p.peer_switch, leaf)] = down.get((p.peer_switch, leaf), 0) + capacity.get(
                        (p.peer_switch, p.peer_port), p.capacity_gbps)
        return cls({h.name: h.leaf for h in fabric.hosts.values()},
                   {h.name: h.capacity_gbps for h in fabric.hosts.values()}, leaves, spines, up, down)

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


def maxmin(links: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Max-min fair rates by progressive filling.  ``links``: (F, K) link indices per flow (-1 =
    none); ``cap``: (L,) capacities.  Returns (F,) rates in cap's unit."""
    F = links.shape[0]
    rate = np.zeros(F)
    if F == 0:
        return rate
    active = np.ones(F, dtype=bool)
    left = cap.astype(float).copy()
    valid = links >= 0
    while active.any():
        idx = links[active][valid[active]]
        count = np.bincount(idx, minlength=len(cap))
        used = count > 0
        share = np.full(len(cap), np.inf)
        share[used] = left[used] / count[used]
        b = int(np.argmin(share))
        r = share[b]
        # every active flow crossing a link whose fair share is this minimum is frozen at r
        tight = np.isclose(share, r, rtol=1e-12, atol=1e-12) & used
        hit = active & (np.where(valid, tight[np.where(valid, links, 0)], False).any(axis=1))
        rate[hit] = r
        for k in range(links.shape[1]):
            col = links[hit, k]
            col = col[col >= 0]
            np.subtract.at(left, col, r)
        left = np.maximum(left, 0.0)
        active &= ~hit
    return rate


class FlowSim:
    """Flows on a ``Topo`` with max-min fair rates recomputed at every flow event."""

    def __init__(self, topo: Topo, policy: str = "ecmp", seed: int = 0, measure_us: float = 1000.0,
                 hysteresis: float = 0.1, paths: Optional[dict[int, str]] = None) -> None:
        if policy not in ("ecmp", "stellar", "jobaware", "given"):
            raise ValueError(f"unknown policy {policy}")
        self.topo, self.policy, self.rng = topo, policy, random.Random(seed)
        self.salt = seed
        self.measure_us, self.hysteresis = measure_us, hysteresis
        self.paths = paths or {}
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
        return self.topo.spines[salted_bin(f"{f.src}>{f.dst}#{f.fid}".encode(), self.salt, len(self.topo.spines))]

    def _place(self, fs: list[FFlow], now: float) -> None:
        t = self.topo
        for f in fs:
            f.spine = self._hash_spine(f)
        if self.policy == "given":
            for f in fs:
                f.spine = self.paths.get(f.fid, f.spine)
        elif self.policy == "stellar":
            util = self._measured  # remote (and old local) utilisation, measure_us late
            for f in fs:
                sl, dl = t.host_leaf[f.src], t.host_leaf[f.dst]
                if sl == dl:
                    continue

                def score(s: str) -> float:
                    up = util[self.up_idx[(sl, s)]] + self._local.get((sl, s), 0.0) / t.up_gbps[(sl, s)]
                    return max(up, util[self.down_idx[(s, dl)]])

                best = min(t.spines, key=score)
                if score(f.spine) - score(best) > self.hysteresis:
                    f.spine = best
                self._local[(sl, f.spine)] = self._local.get((sl, f.spine), 0.0) + t.host_gbps[f.src]
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

    # ---- running
    def run(self, flows: Sequence[FFlow]) -> list[FFlow]:
        """Run to completion; fills ``done_us`` (µs) of every flow."""
        pending = sorted(flows, key=lambda f: f.start_us)
        for f in pending:
            f.remaining = f.nbytes * 8 / 1000.0  # kbit
        active: list[FFlow] = []
        now, i = 0.0, 0
        self._measured = np.zeros(len(self.cap))
        self._local: dict = {}
        self._placed: dict = {}
        next_measure = self.measure_us
        rates = np.zeros(0)
        while i < len(pending) or active:
            t_arr = pending[i].start_us if i < len(pending) else np.inf
            if active:
                with np.errstate(divide="ignore"):
                    ttf = np.array([f.remaining for f in active]) / np.maximum(rates, 1e-12)
                k = int(np.argmin(ttf))
                t_done = now + ttf[k]
            else:
                t_done = np.inf
            t_next = min(t_arr, t_done, next_measure if self.policy == "stellar" and active else np.inf)
            dt = t_next - now
            if active and dt > 0:
                rem = np.array([f.remaining for f in active]) - rates * dt
                for f, r in zip(active, rem):
                    f.remaining = max(0.0, r)
            now = t_next
            self.events += 1
            if self.policy == "stellar" and now >= next_measure:
                self._measure(active, rates)
                next_measure = now + self.measure_us
            still = []
            for f in active:
                if f.remaining <= 1e-9:
                    f.done_us = now
                    if self.policy == "jobaware":
                        sl, dl = self.topo.host_leaf[f.src], self.topo.host_leaf[f.dst]
                        if sl != dl:
                            for li in (self.up_idx[(sl, f.spine)], self.down_idx[(f.spine, dl)]):
                                self._placed[li] -= f.nbytes
                else:
                    still.append(f)
            active = still
            arriving = []
            while i < len(pending) and pending[i].start_us <= now + 1e-12:
                arriving.append(pending[i])
                i += 1
            if arriving:
                self._place(arriving, now)
                active += arriving
            if active:
                rates = maxmin(np.array([self._links(f) for f in active]), self.cap)
        return list(flows)

    def _measure(self, active: list[FFlow], rates: np.ndarray) -> None:
        load = np.zeros(len(self.cap))
        for f, r in zip(active, rates):
            for li in self._links(f):
                if li >= 0:
                    load[li] += r
        self._measured = load / self.cap
        self._local = {}


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
              fill: float = 1.0) -> list[FFlow]:
    """Jobs of ``job_size`` GPUs placed on random GPUs (a fragmented cluster) until ``fill`` of the
    GPUs are busy; every job runs one collective step at t=0 (ring: each rank -> next rank;
    a2a: every pair), ``nbytes`` per flow."""
    rng = random.Random(seed)
    hosts = sorted(topo.host_leaf)
    rng.shuffle(hosts)
    n_jobs = int(len(hosts) * fill) // job_size
    flows: list[FFlow] = []
    for j in range(n_jobs):
        members = hosts[j * job_size:(j + 1) * job_size]
        if kind == "ring":
            for r in range(job_size):
                flows.append(FFlow(len(flows), members[r], members[(r + 1) % job_size], nbytes, 0.0, f"job{j}"))
        else:
            flows += alltoall_flows(members, nbytes, f"job{j}", 0.0, len(flows))
    return flows


def job_times(flows: Sequence[FFlow]) -> dict[str, float]:
    out: dict[str, float] = {}
    for f in flows:
        out[f.job] = max(out.get(f.job, 0.0), f.done_us - f.start_us)
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


def validate_on_lab(seed: int = 1, nbytes: int = 65536, workload: str = "a2a") -> dict:
    """Run the packet-level study (ECMP, symmetric lab) and the flow model on the same transfers
    and the same hash-chosen paths; return both collective times and per-flow FCT errors."""
    from fabric_sim.experiment import RunSpec, run

    keep: dict = {}
    row = run(RunSpec(workload, "sym", "ecmp", seed, nbytes=nbytes), keep=keep)
    net, fabric, fb = keep["net"], keep["fabric"], keep["frame_bytes"]
    paths, flows = {}, []
    for t in net.transfers:
        sq = net._by_tid[t.tid]
        src, dst = fabric.hosts[t.src], fabric.hosts[t.dst]
        if src.leaf != dst.leaf:
            paths[t.tid] = lb_ecmp_spine(fabric, src.leaf, str(src.ip), str(dst.ip), sq.sport, 4791, keep["salt"])
        flows.append(FFlow(t.tid, t.src, t.dst, t.packets * fb, t.started_us, workload))
    FlowSim(Topo.from_fabric(fabric), "given", paths=paths).run(flows)
    pkt = np.array([t.done_us - t.started_us for t in net.transfers])
    flo = np.array([f.done_us - f.start_us for f in flows])
    return {"packet_completion_us": row["completion_us"], "flow_completion_us": float(flo.max()),
            "median_fct_error": float(np.median(np.abs(flo - pkt) / pkt)),
            "packet_fct_p50": float(np.median(pkt)), "flow_fct_p50": float(np.median(flo))}
