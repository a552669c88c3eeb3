"""Per-switch forwarding plan: path sets, routes, job reservations and hints.

This is the bridge between the placement (paths.py, abstract: flows on leaf-spine-leaf paths)
and the table entries (render.py, concrete: P4Info names).  It decides per switch:

* path sets (`routing.path_set`): a leaf has one per other leaf (id = that leaf's position in
  name order, 1..), one per attached host (id 0x1000 + port) and one per distinct job member set
  (ids from 0x2000); a spine has one per leaf (same numbering).  Stable ids keep the delta
  small when a link fails or a job changes.
* weights: the data plane has no weight field, so a weight is carried by repeating a member in
  the 8 slots (it biases ECMP hashing; the adaptive choice is by score and ignores repeats).
  Members with equal weight take one slot each.
* routes (`routing.lpm`): a leaf routes its own hosts by /32 and every other leaf's subnet to
  the uplinks; a spine routes each leaf subnet down its link.
* reservations (`routing.reservation`) and elephant hints (`elephant.hint`) on leaves: for each
  job member on the leaf and each leaf it sends job traffic to, (src /32, dst leaf subnet) ->
  the job's path set towards that leaf.  Both are keyed on job addresses, so they need no
  per-flow state; spines need none (one path per destination).
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Optional

from .model import MAX_PATH_MEMBERS, Fabric, Switch
from .paths import Assignment, equal_cost_paths

RESERVATION_PRIORITY = 10  # all reservation keys have the same mask shape, so they never overlap


@dataclass(frozen=True)
class Member:
    port: int
    via: str  # the neighbour behind the port (spine, leaf or host name)


@dataclass(frozen=True)
class PathSet:
    id: int
    slots: tuple[Member, ...]  # slot order; a repeated member carries a larger weight
    ecmp: bool
    purpose: str

    @property
    def weights(self) -> dict[int, int]:
        """port -> number of slots it holds."""
        result: dict[int, int] = {}
        for member in self.slots:
            result[member.port] = result.get(member.port, 0) + 1
        return result


@dataclass(frozen=True)
class Route:
    prefix: ipaddress.IPv4Network
    path_set: int
    purpose: str


@dataclass(frozen=True)
class Reservation:
    """Job traffic from `src` towards `dst` uses `path_set` (and is hinted elephant)."""

    job: str
    src: ipaddress.IPv4Address
    dst: ipaddress.IPv4Network
    path_set: int
    priority: int
    reserved_gbps: float


@dataclass
class SwitchPlan:
    switch: Switch
    path_sets: list[PathSet] = field(default_factory=list)
    routes: list[Route] = field(default_factory=list)
    reservations: list[Reservation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def path_set(self, path_set_id: int) -> PathSet:
        return next(p for p in self.path_sets if p.id == path_set_id)


def weighted_slots(weights: list[tuple[Member, float]], total_slots: int = MAX_PATH_MEMBERS) -> tuple[Member, ...]:
    """Members in slot order, repeated in proportion to their weight (one slot each if equal).

    Largest-remainder rounding over `total_slots`, every member keeps at least one slot; the
    repeats are interleaved (A B A ...) rather than grouped so a hash spreads evenly.
    """
    if not weights:
        return ()
    values = [w for _, w in weights]
    if len(weights) >= total_slots or max(values) - min(values) <= 1e-9 * max(values):
        return tuple(m for m, _ in weights)
    spare = total_slots - len(weights)
    quotas = [spare * w / sum(values) for w in values]
    counts = [int(q) for q in quotas]
    leftovers = spare - sum(counts)
    for i in sorted(range(len(weights)), key=lambda i: (-(quotas[i] - counts[i]), i))[:leftovers]:
        counts[i] += 1
    counts = [c + 1 for c in counts]
    slots: list[Member] = []
    while any(counts):
        for i, (member, _) in enumerate(weights):
            if counts[i]:
                slots.append(member)
                counts[i] -= 1
    return tuple(slots)


def known_downstream_mask(fabric: Fabric, slots: tuple[Member, ...]) -> int:
    """The ``measured`` bitmap a path set is rendered with (p4src/CONTRACT.md, routing.path_set):
    bit i set when member i's downstream delay is known without a measurement, i.e. its next hop
    is a host or a leaf (the set's destination: the members' packets meet in that switch's FIFO
    queue, so no queue lies between here and the point where their order is fixed).  A member
    via a spine has the spine's downlink in between, whose delay only the controller's
    histogram reading can tell: unmeasured until then, and the data plane moves no flow off it
    (a rendered level 0 there would be a guess, and a move trusting it can reorder)."""
    mask = 0
    for i, member in enumerate(slots):
        peer = fabric.switches.get(member.via)
        if peer is None or peer.role != "spine":
            mask |= 1 << i
    return mask


HOST_SET_BASE = 0x1000  # + host port: a host's one-member set
JOB_SET_BASE = 0x2000  # + k: the job sets of a switch, in (job, destination leaf) order


class _PathSetTable:
    """A switch's path sets under stable ids.

    Routing sets are numbered by destination leaf (its 1-based position in name order) and host
    sets by port, so a failure or a job change alters members of existing ids instead of
    renumbering everything: the controller's delta stays small.  Job sets with the same member
    list share one id.
    """

    def __init__(self, ecmp: bool):
        self.ecmp = ecmp
        self.sets: dict[int, PathSet] = {}
        self.job_ids: dict[tuple[Member, ...], int] = {}
        self.purposes: dict[int, list[str]] = {}

    def fixed(self, ident: int, slots: tuple[Member, ...], purpose: str) -> int:
        assert ident not in self.sets, f"path set id {ident} used twice"
        self.sets[ident] = PathSet(ident, slots, self.ecmp, purpose)
        self.purposes[ident] = [purpose]
        return ident

    def job(self, slots: tuple[Member, ...], purpose: str) -> int:
        if slots in self.job_ids:
            ident = self.job_ids[slots]
            self.purposes[ident].append(purpose)
            return ident
        ident = JOB_SET_BASE + len(self.job_ids)
        self.job_ids[slots] = ident
        return self.fixed(ident, slots, purpose)

    def finished(self) -> list[PathSet]:
        return [PathSet(p.id, p.slots, p.ecmp, "; ".join(self.purposes[p.id]))
                for _, p in sorted(self.sets.items())]


def plan_fabric(fabric: Fabric, assignment: Optional[Assignment]) -> dict[str, SwitchPlan]:
    """The plan of every switch, in the fabric's switch order."""
    paths = assignment.paths if assignment is not None and assignment.paths else equal_cost_paths(fabric)
    ecmp = fabric.dataplane.path_mode == "ecmp"
    plans: dict[str, SwitchPlan] = {}
    leaves = sorted(fabric.leaves, key=lambda s: s.name)
    leaf_set_id = {leaf.name: i for i, leaf in enumerate(leaves, start=1)}
    link_capacity = {(link.leaf, link.spine): link.capacity_gbps for link in fabric.links}
    for switch in fabric.switches.values():
        table = _PathSetTable(ecmp)
        plan = SwitchPlan(switch)
        if switch.role == "spine":
            for leaf in leaves:
                port = next((p for p in switch.uplinks if p.peer_switch == leaf.name), None)
                if port is None:
                    continue  # not wired (or failed): no route, so the leaves avoid this spine
                ident = table.fixed(leaf_set_id[leaf.name], (Member(port.number, leaf.name),), f"down to {leaf.name}")
                plan.routes.append(Route(leaf.subnet, ident, f"{leaf.name} subnet"))
        else:
            caps = {p.number: p.capacity_gbps for p in switch.uplinks}
            for other in leaves:
                if other.name == switch.name:
                    continue
                options = paths.get((switch.name, other.name), ())
                if not options:
                    plan.notes.append(f"no path to {other.name}: its subnet is not routed")
                    continue
                # weight = the path's bottleneck capacity (equal links -> one slot each)
                members = [(Member(p.up_port, p.spine), min(caps[p.up_port], link_capacity[(p.dst_leaf, p.spine)]))
                           for p in options]
                ident = table.fixed(leaf_set_id[other.name], weighted_slots(members), f"to {other.name}")
                plan.routes.append(Route(other.subnet, ident, f"{other.name} subnet"))
            for host in fabric.hosts_on(switch.name):
                ident = table.fixed(HOST_SET_BASE + host.port, (Member(host.port, host.name),), f"host {host.name}")
                plan.routes.append(Route(ipaddress.IPv4Network(f"{host.ip}/32"), ident, f"host {host.name}"))
            if assignment is not None and fabric.dataplane.reservations:
                _reservations(fabric, assignment, switch, table, plan)
        plan.path_sets = table.finished()
        plan.routes.sort(key=lambda r: (int(r.prefix.network_address), r.prefix.prefixlen))
        plans[switch.name] = plan
    return plans


def _reservations(fabric: Fabric, assignment: Assignment, leaf: Switch, table: _PathSetTable,
                  plan: SwitchPlan) -> None:
    """Reservation/hint keys of the job flows that start on `leaf`."""
    spine_port = {p.peer_switch: p.number for p in leaf.uplinks}
    # (job, dst leaf) -> spine -> Gbps, and (job, src host, dst leaf) -> Gbps
    per_pair: dict[tuple[str, str], dict[str, float]] = {}
    keys: dict[tuple[str, str, str], float] = {}
    for flow, path in assignment.placement.paths_of.items():
        if flow.src_leaf != leaf.name:
            continue
        spines = per_pair.setdefault((flow.job, flow.dst_leaf), {})
        spines[path.spine] = spines.get(path.spine, 0.0) + flow.gbps
        keys[(flow.job, flow.src, flow.dst_leaf)] = keys.get((flow.job, flow.src, flow.dst_leaf), 0.0) + flow.gbps
    job_order = {name: i for i, name in enumerate(fabric.jobs)}
    pair_set: dict[tuple[str, str], int] = {}
    for (job, dst_leaf) in sorted(per_pair, key=lambda k: (job_order[k[0]], k[1])):
        spines = per_pair[(job, dst_leaf)]
        members = [(Member(spine_port[s], s), spines[s]) for s in sorted(spines)]
        pair_set[(job, dst_leaf)] = table.job(weighted_slots(members), f"job {job} to {dst_leaf}")
    taken: dict[tuple[str, str], str] = {}
    for (job, src, dst_leaf) in sorted(keys, key=lambda k: (job_order[k[0]], fabric.hosts[k[1]].port, k[2])):
        host = fabric.hosts[src]
        if (src, dst_leaf) in taken:
            plan.notes.append(f"{src} -> {dst_leaf} is reserved for job {taken[(src, dst_leaf)]}; "
                              f"job {job}'s flows on that pair use it too")
            continue
        taken[(src, dst_leaf)] = job
        plan.reservations.append(Reservation(job=job, src=host.ip, dst=fabric.switches[dst_leaf].subnet,
                                             path_set=pair_set[(job, dst_leaf)], priority=RESERVATION_PRIORITY,
                                             reserved_gbps=keys[(job, src, dst_leaf)]))
