"""Equal-cost path sets of a leaf-spine fabric and a job-aware placement of reserved demands.

Path sets: between two leaves every shortest path is leaf -> spine -> leaf, one per spine that
both leaves reach.  They come from networkx's shortest paths so a miswired fabric shows up as a
missing path rather than a silent wrong one.

Placement (`assign_jobs`): a greedy multi-commodity heuristic.  Each job's flows (see demands.py)
are placed largest first on the path that minimises the resulting maximum link utilisation.  Jobs
are kept on disjoint spine sets when capacity allows: spines are partitioned among jobs (every
split of the spine count is tried when there are few, the one with the lowest maximum utilisation
wins) and the placement is accepted as isolated only if no link goes over `limit`.  Otherwise the
report says isolation was not possible and why, flows keep to their job's spines where that still
fits and spill elsewhere where it does not, and whichever of that and a fully shared placement
has the lower peak is used.

The baseline is plain ECMP: every flow hashed uniformly onto one of its paths.  Its expected peak
utilisation is estimated by seeded Monte Carlo (flows are few and large, so hash collisions, not
the average, set the peak); the fluid even split is reported as ECMP's unreachable best case.
Everything is deterministic: fixed seeds and sorted iteration only.
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass, field
from typing import Iterable, Optional

import networkx as nx

from .demands import Flow, fabric_flows
from .model import Fabric

LinkId = tuple[str, int]  # one direction of a link: (switch, egress port)
ECMP_SEED = 0x57E11A
MAX_PARTITIONS_TRIED = 64
PARTITION_FLOW_BUDGET = 60_000  # spine splits tried x flows crossing the fabric


@dataclass(frozen=True, order=True)
class Path:
    """leaf -> spine -> leaf, with the egress port used on each switch."""

    src_leaf: str
    spine: str
    dst_leaf: str
    up_port: int  # on src_leaf, towards the spine
    down_port: int  # on the spine, towards dst_leaf

    @property
    def links(self) -> tuple[LinkId, LinkId]:
        return (self.src_leaf, self.up_port), (self.spine, self.down_port)


def fabric_graph(fabric: Fabric) -> nx.Graph:
    """Switches as nodes, leaf-spine links as edges (with ports and capacity on the edge)."""
    graph = nx.Graph()
    for switch in fabric.switches.values():
        graph.add_node(switch.name, role=switch.role)
    for link in fabric.links:
        graph.add_edge(link.leaf, link.spine, ports={link.leaf: link.leaf_port, link.spine: link.spine_port},
                       capacity_gbps=link.capacity_gbps)
    return graph


def equal_cost_paths(fabric: Fabric) -> dict[tuple[str, str], tuple[Path, ...]]:
    """For every ordered pair of distinct leaves, its shortest paths sorted by spine name."""
    graph = fabric_graph(fabric)
    leaves = sorted(s.name for s in fabric.leaves)
    result: dict[tuple[str, str], tuple[Path, ...]] = {}
    for src in leaves:
        # one BFS per source (networkx's predecessor map) serves every destination; calling
        # all_shortest_paths per pair would redo it for each of them
        predecessors = nx.predecessor(graph, src)
        for dst in leaves:
            if src == dst:
                continue
            found: list[Path] = []
            for nodes in _shortest(predecessors, src, dst):
                if len(nodes) != 3 or fabric.switches[nodes[1]].role != "spine":
                    continue  # the model allows only leaf-spine links, so this is defensive
                spine = nodes[1]
                found.append(Path(src_leaf=src, spine=spine, dst_leaf=dst,
                                  up_port=graph.edges[src, spine]["ports"][src],
                                  down_port=graph.edges[spine, dst]["ports"][spine]))
            result[(src, dst)] = tuple(sorted(found))
    return result


def _shortest(predecessors: dict[str, list[str]], src: str, dst: str) -> list[list[str]]:
    """Every shortest node path src..dst from a BFS predecessor map."""
    if dst == src:
        return [[src]]
    return [path + [dst] for before in sorted(predecessors.get(dst, ())) for path in _shortest(predecessors, src, before)]


def link_capacities(fabric: Fabric) -> dict[LinkId, float]:
    """Capacity of both directions of every leaf-spine link."""
    caps: dict[LinkId, float] = {}
    for link in fabric.links:
        caps[(link.leaf, link.leaf_port)] = link.capacity_gbps
        caps[(link.spine, link.spine_port)] = link.capacity_gbps
    return caps


# ---------------------------------------------------------------------------------------------
# ECMP baseline
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class EcmpEstimate:
    expected_max_utilisation: float  # mean over trials of the peak link utilisation
    fluid_max_utilisation: float  # peak if every flow could be split evenly (ECMP's best case)
    trials: int


def ecmp_estimate(flows: list[Flow], paths: dict[tuple[str, str], tuple[Path, ...]],
                  capacity: dict[LinkId, float], trials: Optional[int] = None, seed: int = ECMP_SEED) -> EcmpEstimate:
    """Expected peak utilisation when each flow is hashed uniformly onto one of its paths."""
    # a flow between leaves that no path joins (a partitioned leaf) loads no link: it is dropped
    crossing = [f for f in flows if f.crosses_fabric and paths.get((f.src_leaf, f.dst_leaf))]
    if not crossing:
        return EcmpEstimate(0.0, 0.0, 0)
    fluid: dict[LinkId, float] = {}
    for flow in crossing:
        options = paths[(flow.src_leaf, flow.dst_leaf)]
        for path in options:
            for link in path.links:
                fluid[link] = fluid.get(link, 0.0) + flow.gbps / len(options)
    fluid_peak = max(load / capacity[link] for link, load in fluid.items())
    if trials is None:  # bound the work (about 200k flow draws) so big fabrics stay fast
        trials = max(50, min(1000, 200_000 // len(crossing)))
    rng = random.Random(seed)
    link_ids = sorted(capacity)
    position = {link: i for i, link in enumerate(link_ids)}
    inv_cap = [1.0 / capacity[link] for link in link_ids]
    options_idx = [[tuple(position[l] for l in p.links) for p in paths[(f.src_leaf, f.dst_leaf)]]
                   for f in crossing]
    rates = [f.gbps for f in crossing]
    total = 0.0
    draw = rng.random  # int(random() * k) is uniform enough here and several times faster than randrange
    for _ in range(trials):
        load = [0.0] * len(link_ids)
        for choices, rate in zip(options_idx, rates):
            up, down = choices[int(draw() * len(choices))]
            load[up] += rate
            load[down] += rate
        total += max(l * c for l, c in zip(load, inv_cap))
    return EcmpEstimate(total / trials, fluid_peak, trials)


# ---------------------------------------------------------------------------------------------
# Job-aware placement
# ---------------------------------------------------------------------------------------------
@dataclass
class Placement:
    """One placement of flows onto paths, with the link loads it causes."""

    paths_of: dict[Flow, Path]
    load: dict[LinkId, float]
    capacity: dict[LinkId, float]
    spilled: list[Flow] = field(default_factory=list)  # flows placed outside their job's spines

    @property
    def max_utilisation(self) -> float:
        return max((self.load.get(l, 0.0) / c for l, c in self.capacity.items()), default=0.0)

    @property
    def bottleneck(self) -> Optional[LinkId]:
        if not self.capacity:
            return None
        return max(sorted(self.capacity), key=lambda l: self.load.get(l, 0.0) / self.capacity[l])

    def utilisation(self, link: LinkId) -> float:
        return self.load.get(link, 0.0) / self.capacity[link]

    def job_spines(self, job: str) -> set[str]:
        return {p.spine for f, p in self.paths_of.items() if f.job == job}


@dataclass
class Assignment:
    """The chosen placement plus everything needed to explain it."""

    placement: Placement
    isolated: bool
    partition: dict[str, tuple[str, ...]]  # job -> the spines it was given (empty if none tried)
    notes: list[str]  # why it came out this way, in plain words
    shared: Placement  # the best placement ignoring isolation, for comparison
    ecmp: EcmpEstimate
    flows: list[Flow]
    limit: float
    paths: dict[tuple[str, str], tuple[Path, ...]] = field(default_factory=dict, repr=False)
    # flows between leaves no path joins (a leaf partitioned by failed links): not placed
    unroutable: list[Flow] = field(default_factory=list)

    @property
    def max_utilisation(self) -> float:
        return self.placement.max_utilisation

    def overlapping_jobs(self) -> list[tuple[str, str, tuple[str, ...]]]:
        """(job a, job b, shared spines) for every pair of jobs whose paths share a spine."""
        jobs = sorted({f.job for f in self.placement.paths_of})
        result = []
        for a, b in itertools.combinations(jobs, 2):
            common = self.placement.job_spines(a) & self.placement.job_spines(b)
            if common:
                result.append((a, b, tuple(sorted(common))))
        return result


def _cost(path: Path, rate: float, load: dict[LinkId, float], capacity: dict[LinkId, float]) -> tuple:
    """Peak of the path's two links after adding the flow, then their sum, then spine name."""
    up, down = path.links
    u = (load.get(up, 0.0) + rate) / capacity[up]
    d = (load.get(down, 0.0) + rate) / capacity[down]
    return (u if u > d else d, u + d, path.spine)


def greedy_place(flows: Iterable[Flow], paths: dict[tuple[str, str], tuple[Path, ...]],
                 capacity: dict[LinkId, float], allowed: Optional[dict[str, frozenset[str]]] = None,
                 strict: bool = True, limit: float = 1.0) -> Placement:
    """Place flows largest first, each on the path with the lowest resulting peak utilisation.

    `allowed` restricts a job to some spines.  strict: never leave them (an isolation attempt);
    not strict: leave them only when staying would push a link over `limit` (the flow "spills").
    """
    order = sorted((f for f in flows if f.crosses_fabric), key=lambda f: (-f.gbps, f.job, f.src, f.dst))
    load: dict[LinkId, float] = {}
    chosen: dict[Flow, Path] = {}
    spilled: list[Flow] = []
    for flow in order:
        options = paths[(flow.src_leaf, flow.dst_leaf)]
        if not options:
            raise ValueError(f"no path from {flow.src_leaf} to {flow.dst_leaf} for job {flow.job}")
        own = options if allowed is None else [p for p in options if p.spine in allowed.get(flow.job, ())]
        best = min(own, key=lambda p: _cost(p, flow.gbps, load, capacity)) if own else None
        if best is None or (not strict and _cost(best, flow.gbps, load, capacity)[0] > limit):
            if strict:
                raise ValueError(f"job {flow.job} has no path from {flow.src_leaf} to {flow.dst_leaf} "
                                 f"through its spines")
            best = min(options, key=lambda p: _cost(p, flow.gbps, load, capacity))
            spilled.append(flow)
        chosen[flow] = best
        for link in best.links:
            load[link] = load.get(link, 0.0) + flow.gbps
    return Placement(paths_of=chosen, load=load, capacity=dict(capacity), spilled=spilled)


def _compositions(total: int, parts: int) -> Iterable[tuple[int, ...]]:
    """Every way to write `total` as an ordered sum of `parts` positive integers."""
    for cuts in itertools.combinations(range(1, total), parts - 1):
        bounds = (0,) + cuts + (total,)
        yield tuple(bounds[i + 1] - bounds[i] for i in range(parts))


def _proportional(total: int, weights: list[float]) -> tuple[int, ...]:
    """Largest-remainder split of `total` into positive parts proportional to `weights`."""
    parts = len(weights)
    spare = total - parts
    quotas = [spare * w / sum(weights) for w in weights]
    counts = [int(q) for q in quotas]
    for i in sorted(range(parts), key=lambda i: (-(quotas[i] - counts[i]), i))[: spare - sum(counts)]:
        counts[i] += 1
    return tuple(c + 1 for c in counts)


def assign_jobs(fabric: Fabric, limit: float = 1.0, ecmp_trials: Optional[int] = None) -> Assignment:
    """Place every job's reserved flows; isolate jobs on disjoint spines when capacity allows."""
    paths = equal_cost_paths(fabric)
    capacity = link_capacities(fabric)
    every_flow = fabric_flows(fabric)
    unroutable = [f for f in every_flow if f.crosses_fabric and not paths.get((f.src_leaf, f.dst_leaf))]
    flows = [f for f in every_flow if f not in set(unroutable)] if unroutable else every_flow
    ecmp = ecmp_estimate(flows, paths, capacity, trials=ecmp_trials)
    assignment = _assign(fabric, flows, paths, capacity, ecmp, limit)
    if unroutable:
        pairs = sorted({(f.src_leaf, f.dst_leaf) for f in unroutable})
        assignment.unroutable = unroutable
        assignment.notes.insert(0, f"{len(unroutable)} reserved flow(s) have no path and are not placed "
                                   f"(the fabric is partitioned): "
                                   + ", ".join(f"{a} -> {b}" for a, b in pairs))
    return assignment


def _assign(fabric: Fabric, flows: list[Flow], paths: dict[tuple[str, str], tuple[Path, ...]],
            capacity: dict[LinkId, float], ecmp: EcmpEstimate, limit: float) -> Assignment:
    """assign_jobs for flows that all have a path."""
    shared = greedy_place(flows, paths, capacity)
    demand: dict[str, float] = {}
    for flow in flows:
        if flow.crosses_fabric:
            demand[flow.job] = demand.get(flow.job, 0.0) + flow.gbps
    jobs = sorted(demand, key=lambda j: (-demand[j], j))
    spines = sorted(s.name for s in fabric.spines)
    notes: list[str] = []

    if len(jobs) <= 1:
        notes.append("one job crosses the fabric, so there is nothing to isolate; placed on all spines")
        return Assignment(shared, True, {j: tuple(spines) for j in jobs}, notes, shared, ecmp, flows, limit, paths)
    if len(jobs) > len(spines):
        notes.append(f"{len(jobs)} jobs cross the fabric but there are only {len(spines)} spines: "
                     "disjoint paths are impossible; jobs share spines")
        return Assignment(shared, False, {}, notes, shared, ecmp, flows, limit, paths)

    best: Optional[tuple[float, Placement, dict[str, tuple[str, ...]]]] = None
    # Try spine splits nearest the demand-proportional one first; a tie in peak keeps the nearer
    # split.  Big fabrics try fewer splits so planning stays within seconds.
    proportional = _proportional(len(spines), [demand[j] for j in jobs])
    crossing = sum(1 for f in flows if f.crosses_fabric)
    budget = max(4, min(MAX_PARTITIONS_TRIED, PARTITION_FLOW_BUDGET // max(1, crossing)))
    candidates = sorted(_compositions(len(spines), len(jobs)),
                        key=lambda sizes: (sum(abs(a - b) for a, b in zip(sizes, proportional)), sizes))[:budget]
    failures: list[str] = []
    for sizes in candidates:
        partition: dict[str, tuple[str, ...]] = {}
        start = 0
        for job, size in zip(jobs, sizes):
            partition[job] = tuple(spines[start:start + size])
            start += size
        allowed = {j: frozenset(s) for j, s in partition.items()}
        try:
            placement = greedy_place(flows, paths, capacity, allowed=allowed, strict=True)
        except ValueError as exc:
            failures.append(str(exc))
            continue
        peak = placement.max_utilisation
        if best is None or peak < best[0] - 1e-12:
            best = (peak, placement, partition)

    if best is not None and best[0] <= limit + 1e-12:
        peak, placement, partition = best
        split = "; ".join(f"{j} on {', '.join(s)}" for j, s in partition.items())
        notes.append(f"jobs isolated on disjoint spines ({split}); peak utilisation {peak:.1%} "
                     f"<= limit {limit:.0%}")
        if shared.max_utilisation < peak - 1e-9:
            notes.append(f"isolation costs {peak - shared.max_utilisation:.1%} of peak utilisation "
                         f"(shared placement would peak at {shared.max_utilisation:.1%})")
        return Assignment(placement, True, partition, notes, shared, ecmp, flows, limit, paths)

    if best is None:
        notes.append("no spine partition gives every job a path between its leaves: "
                     + (failures[0] if failures else "unknown reason"))
        return Assignment(shared, False, {}, notes, shared, ecmp, flows, limit, paths)

    peak, isolated_try, partition = best
    link = isolated_try.bottleneck
    notes.append(f"capacity does not allow disjoint paths: the best spine partition "
                 f"({'; '.join(f'{j} on {len(s)} spine(s)' for j, s in partition.items())}) would load "
                 f"{link[0]} port {link[1]} to {peak:.1%} (limit {limit:.0%})")
    allowed = {j: frozenset(s) for j, s in partition.items()}
    spilling = greedy_place(flows, paths, capacity, allowed=allowed, strict=False, limit=limit)
    if spilling.max_utilisation <= shared.max_utilisation + 1e-12:
        notes.append(f"{len(spilling.spilled)} flow(s) spill outside their job's spines where staying "
                     f"would exceed the limit; peak {spilling.max_utilisation:.1%}")
        chosen = spilling
    else:
        notes.append(f"jobs share all spines: shared placement peaks at {shared.max_utilisation:.1%}, "
                     f"partial isolation would peak at {spilling.max_utilisation:.1%}")
        chosen = shared
    return Assignment(chosen, False, partition, notes, shared, ecmp, flows, limit, paths)
