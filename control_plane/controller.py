"""The Stellar controller loop: telemetry in, congestion levels and failover deltas out.

What the data plane cannot see by itself is *remote* congestion: a leaf knows the queue delay of
its own uplinks, not of the spine's downlink towards the destination leaf.  The controller reads
every switch's per-port queue-delay histogram (counter ``StellarEgress.telemetry.qdelay_hist``,
CONTRACT.md §5) -- counters, because BMv2's P4Runtime (PI) reads counters but not registers --
and takes, per directed link, the 90th-percentile delay of the packets that left since the
previous poll (a bucket's upper edge: it must not undershoot), builds a congestion map, and
writes into each leaf's path-set entries the level of the remote hop behind each member
(``levelN`` of ``StellarIngress.routing.path_set``, µs-equivalent).  It only MODIFYs entries
whose levels changed by at least a quantum, so a quiet fabric costs no writes.

Link failures: the port is marked dead in the liveness tables (``StellarIngress.failover.liveness0..7``,
one MODIFY each, table writes that every P4Runtime server accepts) at once (the data plane does not
wait for the path sets); the controller then recomputes only the path sets the link
was in (``failover_delta``: the failed leaf's sets towards every other leaf and every other
leaf's set towards it, with the weights ``plan_fabric`` would give them) and pushes those entries,
every switch's Write in flight at once, timing event -> first and last write acknowledged.

The controller talks to switches through ``SwitchOps`` (register read/write, entry modify), with
one implementation over P4Runtime (what a deployment uses) and one in-process (unit tests).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable, Optional, Protocol

from control_plane import arches, archnames, contract, prior
from control_plane.graylinks import GrayLinkReader
from control_plane.model import Fabric, Link, Port, Switch
from control_plane.plan import (JOB_SET_BASE, Member, PathSet, SwitchPlan, known_downstream_mask,
                                weighted_slots)

PATH_SET_TABLE = "StellarIngress.routing.path_set"
PATH_SET_ACTION = "StellarIngress.routing.set_members"
LEVEL_MAX = 0xFFFF  # levelN is 16 bits


class SwitchOps(Protocol):
    """The few operations the controller needs from a switch, whatever the transport.

    Entries are in the rendered document's form (``table``, ``match``, ``action``, ``params``).
    ``control_plane.p4rt.SwitchSession`` implements this over P4Runtime; ``InProcessOps`` on an
    in-process ``p4sim.Switch``.
    """

    def read_registers(self, names: list[str], indexes: Optional[list[int]] = None) -> dict[str, dict[int, int]]: ...

    def read_counters(self, names: list[str], indexes: Optional[list[int]] = None) -> dict[str, dict[int, tuple[int, int]]]: ...

    def write_registers(self, cells: list[tuple[str, int, int]]) -> int: ...

    def modify_entries(self, entries: list[dict]) -> int: ...


class InProcessOps:
    """SwitchOps on an in-process ``p4sim.Switch`` (unit tests, no gRPC in between)."""

    def __init__(self, switch) -> None:
        self.switch = switch

    def read_registers(self, names: list[str], indexes: Optional[list[int]] = None) -> dict[str, dict[int, int]]:
        return {n: {i: self.switch.register_read(n, i)
                    for i in (indexes if indexes is not None else range(self.switch.register_size(n)))}
                for n in names}

    def read_counters(self, names: list[str], indexes: Optional[list[int]] = None) -> dict[str, dict[int, tuple[int, int]]]:
        return {n: {i: self.switch.counter_read(n, i)
                    for i in (indexes if indexes is not None else range(self.switch.counter_size(n)))}
                for n in names}

    def write_registers(self, cells: list[tuple[str, int, int]]) -> int:
        for name, index, value in cells:
            self.switch.register_write(name, index, value)
        return len(cells)

    def modify_entries(self, entries: list[dict]) -> int:
        from control_plane.inprocess import p4sim_match

        for e in entries:
            self.switch.modify_entry(e["table"], p4sim_match(e["match"]), e["action"], dict(e["params"]),
                                     e.get("priority"))
        return len(entries)

    def apply_changes(self, changes: list) -> int:
        """Insert/modify/delete entries and write registers, in order (``p4rt.Change``-shaped:
        ``op``, ``kind``, ``item``): what ``SwitchSession.submit`` does over P4Runtime."""
        from control_plane.inprocess import p4sim_match

        for c in changes:
            item = c.item
            if c.kind == "register":
                self.switch.register_write(item["name"], item["index"], item["value"])
            elif c.op == "insert":
                self.switch.insert_entry(item["table"], p4sim_match(item["match"]), item["action"],
                                         dict(item.get("params", {})), item.get("priority"))
            elif c.op == "delete":
                self.switch.delete_entry(item["table"], p4sim_match(item["match"]), item.get("priority"))
            else:
                self.modify_entries([item])
        return len(changes)


@dataclass
class CongestionMap:
    """Queue delay (µs) per directed fabric link, keyed by (switch, egress port)."""

    time_us: float
    qdelay_us: dict[tuple[str, int], int] = field(default_factory=dict)

    def hottest(self, n: int = 5) -> list[tuple[tuple[str, int], int]]:
        return sorted(self.qdelay_us.items(), key=lambda kv: -kv[1])[:n]


def qdelay_quantile_us(counts: list[int], quantile: float = 0.9) -> int:
    """The queue delay (µs) under which `quantile` of the packets in a histogram delta left: the
    upper edge of the bucket that holds that packet (0 for the sub-µs bucket; no packets: 0,
    an idle link)."""
    total = sum(counts)
    if total <= 0:
        return 0
    seen = 0
    for bucket, n in enumerate(counts):
        seen += n
        if seen >= quantile * total:
            return 0 if bucket == 0 else contract.qdelay_bucket_upper_us(bucket)
    return contract.qdelay_bucket_upper_us(len(counts) - 1)


class HistogramReader:
    """Per-port queue-delay histograms of switches, as deltas since the previous read (the first
    read: since the switch started)."""

    def __init__(self, counter: str = contract.QDELAY_HIST) -> None:
        self.counter = counter  # the program's histogram (archnames: qdelay_hist)
        self._last: dict[tuple[str, int], list[int]] = {}

    def read(self, name: str, ops: "SwitchOps", ports: list[int]) -> dict[int, int]:
        """{port: 90th-percentile queue delay (µs) of the packets that left since the last read}."""
        buckets = len(contract.QDELAY_BUCKET_LOWER_US)
        cells = ops.read_counters([self.counter], [p * buckets + b for p in ports for b in range(buckets)])
        cells = cells.get(self.counter, {})
        out = {}
        for port in ports:
            now = [cells.get(port * buckets + b, (0, 0))[0] for b in range(buckets)]
            before = self._last.get((name, port), [0] * buckets)
            delta = [n - b if n >= b else n for n, b in zip(now, before)]  # a reset counter starts over
            self._last[(name, port)] = now
            out[port] = qdelay_quantile_us(delta)
        return out


@dataclass
class FailoverReport:
    link: tuple[str, str]
    ports_marked_down: list[tuple[str, int]]
    entries_written: int
    wall_ms: float  # from the event to the last write acknowledged
    first_ack_ms: Optional[float] = None  # event -> first write acknowledged: the first data-plane effect
    compute_ms: float = 0.0  # event -> every delta computed, before the first write is sent
    switches_written: int = 0
    cpu_ms: float = 0.0  # controller process CPU (every thread) from the event to the last ack


@dataclass
class LevelMember:
    slot: int
    remote: Optional[tuple[str, int]]  # (spine, port towards the destination leaf)


def highest_level(cmap: CongestionMap, hops: list[Optional[tuple[str, int]]], headroom: float,
                  cap: int = LEVEL_MAX) -> tuple[int, bool]:
    """The level of a member whose traffic may take any of ``hops`` (one remote hop per
    destination leaf its path set serves), and whether it is measured.

    The level is the *highest* among the hops (``headroom`` x µs of queue delay, capped): the
    data plane cannot tell the destinations apart within one entry, and the worst hop is the
    safe drain margin -- the rule the TNA controller applies to a group shared by several
    destinations.  Measured only when every hop exists and has a reading in ``cmap``: a level
    that left a destination out could undershoot its queue, so the member stays unmeasured."""
    level = max((min(cap, int(headroom * cmap.qdelay_us.get(h, 0))) for h in hops if h is not None), default=0)
    measured = bool(hops) and all(h is not None and h in cmap.qdelay_us for h in hops)
    return level, measured


class Controller:
    """Polls telemetry and pushes congestion levels; reacts to link failures and returns.

    This class drives the v1model program; ``control_plane.controller_tna.TnaController``
    overrides what differs on the Tofino program (``make_controller`` picks by arch).  The
    program's P4Info names come from ``names`` (control_plane.archnames).
    """

    names: archnames.ArchNames = archnames.V1MODEL

    def __init__(self, fabric: Fabric, ops: dict[str, SwitchOps], plans: dict[str, SwitchPlan],
                 documents: dict[str, dict], quantum_us: int = 2, max_age_us: int = 200,
                 headroom: float = 2.0) -> None:
        self.fabric = fabric
        # A level is also the drain margin a leaf adds before moving a flow off that member
        # (flowlet.p4), so it must not undershoot the queue the flow's last packets still face.
        # The reading is the delay of the *last departed* packet, polled every few tens of µs:
        # a growing queue makes it lag, hence the headroom factor.
        self.headroom = headroom
        self.ops = ops
        self.plans = plans
        self.quantum_us = quantum_us
        self.max_age_us = max_age_us
        self.writes = 0
        self.polls = 0
        self._hist = HistogramReader(self.names.qdelay_hist)
        # Failed links, as (leaf, spine), in the order they failed: the controller's model is the
        # intact fabric without them, so successive failures compose and a return undoes one.
        self.intact_fabric = fabric
        self.failed: list[tuple[str, str]] = []
        # The rendered path-set entries of every leaf, by path set id; levels start at 0.
        self._entries: dict[str, dict[int, dict]] = {
            name: {e["match"]["meta.route.path_set_id"]: dict(e, params=dict(e["params"]))
                   for e in doc["entries"] if e["table"] == PATH_SET_TABLE and not e.get("default_action")}
            for name, doc in documents.items()}
        self._refresh_hops()

    # ------------------------------------------------------------------ topology knowledge
    def _refresh_hops(self) -> None:
        """The remote hops behind every leaf's routing sets (``_remote``) and job sets
        (``_job_remote``), from the current model (after every re-plan)."""
        self._remote = self._remote_hops()
        self._job_remote = self._job_remote_hops()

    def _remote_hops(self) -> dict[str, dict[int, list[LevelMember]]]:
        """For every leaf routing path set: per slot via a spine, the spine port the traffic
        takes after the uplink (None: that spine has no link to the destination, never
        measured); a member not via a spine has nothing downstream to read and is left out (its
        rendered measured bit stands)."""
        out: dict[str, dict[int, list[LevelMember]]] = {}
        by_subnet = {s.subnet: s for s in self.fabric.leaves}
        # spine -> {leaf: the spine's port down to it}, built once (not per member: 512 GPUs have ~8k)
        down_port = {s.name: {p.peer_switch: p.number for p in reversed(s.uplinks)} for s in self.fabric.spines}
        plan_sets = {}
        for name, plan in self.plans.items():
            if plan.switch.role != "leaf":
                continue
            per_set: dict[int, list[LevelMember]] = {}
            for route in plan.routes:
                dest = by_subnet.get(route.prefix)
                if dest is None or dest.name == name:
                    continue
                if name not in plan_sets:
                    plan_sets[name] = {p.id: p for p in plan.path_sets}
                ps = plan_sets[name][route.path_set]
                members = []
                for slot, m in enumerate(ps.slots):
                    if m.via not in down_port:
                        continue  # not via a spine: its downstream is known (rendered measured)
                    down = down_port[m.via].get(dest.name)
                    members.append(LevelMember(slot, (m.via, down) if down is not None else None))
                per_set[route.path_set] = members
            out[name] = per_set
        return out

    def _job_remote_hops(self) -> dict[str, dict[int, list[LevelMember]]]:
        """For every leaf job (reservation) path set: per slot, one ``LevelMember`` per
        destination leaf the set serves (its reservations' destinations, in name order).

        One job set can serve several destinations ("job moe to leaf2; job moe to leaf3"), so a
        member's traffic may leave its spine by any of those leaves' downlinks; ``push_levels``
        gives the member the highest of their levels, and its measured bit only once every one
        of them was read (``highest_level``).  A member whose spine has no link to one of the
        destinations (failed) has a hop ``None`` there: never measured."""
        out: dict[str, dict[int, list[LevelMember]]] = {}
        by_subnet = {s.subnet: s for s in self.fabric.leaves}
        down_port = {s.name: {p.peer_switch: p.number for p in reversed(s.uplinks)} for s in self.fabric.spines}
        for name, plan in self.plans.items():
            if plan.switch.role != "leaf" or not plan.reservations:
                continue
            dests: dict[int, set[str]] = {}
            for r in plan.reservations:
                dest = by_subnet.get(r.dst)
                if dest is not None and dest.name != name:
                    dests.setdefault(r.path_set, set()).add(dest.name)
            sets = {p.id: p for p in plan.path_sets}
            per_set: dict[int, list[LevelMember]] = {}
            for ps_id, leaves in sorted(dests.items()):
                ps = sets.get(ps_id)
                if ps is None:
                    continue
                members = []
                for slot, m in enumerate(ps.slots):
                    if m.via not in down_port:
                        continue  # not via a spine: its downstream is known (rendered measured)
                    for dest in sorted(leaves):
                        down = down_port[m.via].get(dest)
                        members.append(LevelMember(slot, (m.via, down) if down is not None else None))
                per_set[ps_id] = members
            if per_set:
                out[name] = per_set
        return out

    def member_hops(self) -> dict[str, dict[int, dict[int, list[Optional[tuple[str, int]]]]]]:
        """leaf -> path set id -> member slot -> the remote hops behind that member, routing
        sets (one destination each) and job sets (every destination of their reservations)
        together: what a member's level is the highest of and what must all be read before it
        is measured (``highest_level``).  Both programs' ``push_levels`` start here; the TNA
        controller pools the sets that share a group."""
        out: dict[str, dict[int, dict[int, list[Optional[tuple[str, int]]]]]] = {}
        for hops in (self._remote, self._job_remote):
            for leaf, sets in hops.items():
                for ps_id, members in sets.items():
                    slots = out.setdefault(leaf, {}).setdefault(ps_id, {})
                    for m in members:
                        slots.setdefault(m.slot, []).append(m.remote)
        return out

    def _fabric_ports(self, switch: Switch) -> list[Port]:
        return [p for p in switch.ports.values() if p.peer_switch is not None]

    # ------------------------------------------------------------------ the loop body
    def poll(self, now_us: float, only: Optional[set[str]] = None) -> CongestionMap:
        """Read the per-port queue delay of every switch (or of ``only`` these): the
        90th-percentile delay of the packets that left each port since the previous poll (a
        port with no departure since then counts as an idle link)."""
        cmap = CongestionMap(now_us)
        for name, switch in self.fabric.switches.items():
            if only is not None and name not in only:
                continue
            ports = [p.number for p in self._fabric_ports(switch)]
            if not ports:
                continue
            for port, delay in self._hist.read(name, self.ops[name], ports).items():
                cmap.qdelay_us[(name, port)] = delay
        self.polls += 1
        return cmap

    def push_levels(self, cmap: CongestionMap) -> int:
        """MODIFY the path-set entries (routing and job sets) whose remote-hop levels moved by a
        quantum or more, or whose members gained a measured bit."""
        written = 0
        for leaf, sets in self.member_hops().items():
            changed = []
            for ps_id, hops in sets.items():
                entry = self._entries[leaf].get(ps_id)
                if entry is None:
                    continue
                params = entry["params"]
                new = dict(params)
                for slot, slot_hops in hops.items():
                    level, measured = highest_level(cmap, slot_hops, self.headroom)
                    new[f"level{slot}"] = level
                    if measured:
                        # a level from a histogram reading of every hop behind the member: the
                        # data plane may now trust it for drain and gap moves (flowlet.p4;
                        # unmeasured = no move off it)
                        new["measured"] = new.get("measured", 0) | (1 << slot)
                # compared with this controller's own record of the entry, so the first reading
                # is written even when it equals the rendered level (its measured bit is new)
                if new.get("measured", 0) != params.get("measured", 0) or any(
                        abs(new[f"level{slot}"] - params.get(f"level{slot}", 0)) >= self.quantum_us
                        for slot in hops):
                    entry["params"] = new
                    changed.append(entry)
            if changed:
                self.ops[leaf].modify_entries(changed)
                written += len(changed)
        self.writes += written
        return written

    def step(self, now_us: float) -> CongestionMap:
        """One loop iteration: read the remote hops the levels depend on, push what changed."""
        remote = {m.remote[0] for hops in (self._remote, self._job_remote) for sets in hops.values()
                  for ms in sets.values() for m in ms if m.remote}
        cmap = self.poll(now_us, only=remote)
        self.push_levels(cmap)
        return cmap

    # ------------------------------------------------------------------ operating rates
    def port_rates(self, rates: "prior.Rates") -> int:
        """Port status reported these operating rates ((switch, port) -> Gb/s): rewrite the
        ports' utilisation rate (placement.port_rate) and every leaf's capacity prior
        (path_choice.prior), so scores count load against what the links really carry.
        Returns the entries written."""
        written = 0
        for name, plan in self.plans.items():
            entries = prior.port_rate_entries(self.fabric, name, rates)
            if plan.switch.role == "leaf":
                entries += prior.prior_entries(self.fabric, plan, rates)
            if entries:
                self.ops[name].modify_entries(entries)
                written += len(entries)
        self.writes += written
        return written

    # ------------------------------------------------------------------ failures
    def mark_ports_down(self, ports: list[tuple[str, int]]) -> None:
        """What a switch's port-status handler does locally on loss of light: MODIFY the port's
        liveness entries (table action data; BMv2's P4Runtime refuses register writes)."""
        by_switch: dict[str, list[dict]] = {}
        for switch, port in ports:
            by_switch.setdefault(switch, []).extend(contract.liveness_entries(port, down=True))
        for switch, entries in by_switch.items():
            self.ops[switch].modify_entries(entries)

    def handle_link_failure(self, a: str, b: str, ports: list[tuple[str, int]],
                            mark_down: bool = True) -> FailoverReport:
        """Push the path-set deltas of a failed link (and mark its ports down); time it.

        The delta is computed for the affected path sets only (``failover_delta``), every
        switch's writes are started at once (``submit`` where the ops have it), and the
        controller's own model (fabric, plans, remote hops) is brought up to date after the last
        acknowledgement, off the reaction path.
        """
        started, cpu = time.perf_counter(), time.process_time()
        link = self._link(a, b)
        delta = failover_delta(self.fabric, self.plans, link)
        writes: list[tuple[str, str, list]] = []
        if mark_down:
            by_switch: dict[str, list[dict]] = {}
            for switch, port in ports:
                by_switch.setdefault(switch, []).extend(contract.liveness_entries(port, down=True))
            writes += [(switch, "entries", entries) for switch, entries in by_switch.items()]
        changed_entries = 0
        for name, sets in delta.items():
            changed = []
            for ps_id, ps in sets.items():
                entry = self._entries.get(name, {}).get(ps_id)
                if entry is None or ps is None:
                    continue  # no entry (or no path left): nothing the switch can be told
                params = dict(entry["params"])
                ports_ = [m.port for m in ps.slots] + [0] * (8 - len(ps.slots))
                params["count"] = len(ps.slots)
                params.update({f"port{i}": p for i, p in enumerate(ports_)})
                params.update({f"level{i}": 0 for i in range(8)})
                params["measured"] = known_downstream_mask(self.fabric, ps.slots)  # as rendered
                entry["params"] = params
                changed.append(entry)
            if changed:
                writes.append((name, "entries", changed))
                changed_entries += len(changed)
        computed = time.perf_counter()
        acks: list[float] = []
        self._write_all(writes, acks.append)
        finished, cpu = time.perf_counter(), time.process_time() - cpu
        # the model, after the data plane has converged
        self.failed.append((link.leaf, link.spine))
        self.fabric = self.fabric.without_links([(a, b)])
        self.plans = apply_delta(self.plans, delta, self.fabric)
        self._refresh_hops()
        self.writes += changed_entries
        return FailoverReport((a, b), list(ports), changed_entries, (finished - started) * 1e3,
                              (min(acks) - started) * 1e3 if acks else None, (computed - started) * 1e3,
                              len({name for name, _, _ in writes}), cpu * 1e3)

    def handle_link_restore(self, a: str, b: str, ports: list[tuple[str, int]] = ()) -> FailoverReport:
        """A failed link is back: MODIFY its ports' liveness entries up, then every path set
        whose members differ between the current plan and a plan of the intact fabric without
        the links still failed (the sets a failure re-planned, and those it left without a
        path: their entries are still on the switch, failover never deletes one), levels 0.
        Timed like a failure."""
        from control_plane.plan import plan_fabric

        started, cpu = time.perf_counter(), time.process_time()
        key = next((k for k in self.failed if set(k) == {a, b}), None)
        if key is None:
            raise ValueError(f"the link between {a} and {b} is not failed (failed: {self.failed or 'none'})")
        remaining = [k for k in self.failed if k != key]
        fabric = self.intact_fabric.without_links(remaining) if remaining else self.intact_fabric
        plans = plan_fabric(fabric, None)
        # Job sets and reservations are not re-planned by a failure either (the data plane's
        # liveness steers job flows off a dead member): keep them in the model, so their levels
        # are still pushed after the return.
        plans = {n: replace(p, path_sets=p.path_sets + [s_ for s_ in self.plans[n].path_sets if s_.id >= JOB_SET_BASE],
                            reservations=list(self.plans[n].reservations)) if n in self.plans else p
                 for n, p in plans.items()}
        by_switch: dict[str, list[dict]] = {}
        for switch, port in ports:
            by_switch.setdefault(switch, []).extend(contract.liveness_entries(port, down=False))
        writes: list[tuple[str, str, list]] = [(s_, "entries", e) for s_, e in by_switch.items()]
        changed_entries = 0
        for name, plan in plans.items():
            held = {p.id: [m.port for m in p.slots] for p in self.plans[name].path_sets} if name in self.plans else {}
            changed = []
            for ps in plan.path_sets:
                entry = self._entries.get(name, {}).get(ps.id)
                if entry is None or held.get(ps.id) == [m.port for m in ps.slots]:
                    continue
                ports_ = [m.port for m in ps.slots] + [0] * (8 - len(ps.slots))
                entry["params"] = dict(entry["params"], count=len(ps.slots),
                                       **{f"port{i}": p for i, p in enumerate(ports_)},
                                       **{f"level{i}": 0 for i in range(8)})
                changed.append(entry)
            if changed:
                writes.append((name, "entries", changed))
                changed_entries += len(changed)
        computed = time.perf_counter()
        acks: list[float] = []
        self._write_all(writes, acks.append)
        finished, cpu = time.perf_counter(), time.process_time() - cpu
        self.failed, self.fabric, self.plans = remaining, fabric, plans
        self._refresh_hops()
        self.writes += changed_entries
        return FailoverReport((a, b), list(ports), changed_entries, (finished - started) * 1e3,
                              (min(acks) - started) * 1e3 if acks else None, (computed - started) * 1e3,
                              len({name for name, _, _ in writes}), cpu * 1e3)

    def resync(self, documents: dict[str, dict], program=None, addresses: Optional[dict[str, str]] = None,
               fabric: Optional[Fabric] = None, plans: Optional[dict[str, SwitchPlan]] = None):
        """Converge every switch to ``documents`` by reconcile (read-diff-write), for what the
        incremental path cannot repair: a switch that restarted (no pipeline, no entries; its
        pipeline is pushed again when ``program`` is given), a lost stream, a link that came
        back, or this controller's own restart.  Sessions that lost primacy are re-arbitrated
        first.  ``fabric``/``plans``: the topology the documents were rendered for, which then
        becomes the controller's model.  Returns the FabricPush (``ok`` when every switch is
        in sync; a failing switch is named in its result and the others are still synced)."""
        from control_plane.p4rt import P4RuntimePushError, push_fabric

        for session in self.ops.values():
            if hasattr(session, "reconnect") and not getattr(session, "primary", True):
                try:
                    session.reconnect()
                except P4RuntimePushError:
                    pass  # reported by the push below, with the others still synced
        fabric = fabric or self.fabric
        sessions = {n: s for n, s in self.ops.items() if getattr(s, "primary", False)}
        push = push_fabric(fabric, documents, program, addresses, progress=None, label="resync",
                           sessions=sessions, election_id=getattr(next(iter(self.ops.values()), None),
                                                                  "election_id", (0, 1)))
        if plans is not None:
            self.fabric, self.plans = fabric, plans
            self._entries = {name: {e["match"]["meta.route.path_set_id"]: dict(e, params=dict(e["params"]))
                                    for e in doc["entries"]
                                    if e["table"] == PATH_SET_TABLE and not e.get("default_action")}
                             for name, doc in documents.items()}
            self._refresh_hops()
        return push

    def _link(self, a: str, b: str) -> Link:
        link = self.fabric.link(a, b) or self.fabric.link(b, a)
        if link is None:
            raise ValueError(f"no link between {a} and {b} in fabric {self.fabric.name}")
        return link

    def _write_all(self, writes: list[tuple[str, str, list]], on_ack: Callable[[float], None]) -> None:
        """Every switch's writes at once where the ops can (P4Runtime sessions: ``submit_many``,
        one hand-over for all switches), else one after the other (in-process ops)."""
        if writes and all(hasattr(self.ops[name], "submit_many") for name, _, _ in writes):
            per_switch: dict[str, list] = {}  # one Write per switch: port marks and entries together
            for name, kind, items in writes:
                ops = self.ops[name]
                per_switch.setdefault(name, []).extend(
                    ops.register_changes(items) if kind == "registers" else ops.entry_changes(items))
            jobs = [(self.ops[name], changes) for name, changes in per_switch.items()]
            outcome = type(jobs[0][0]).submit_many(jobs, on_ack).result()
            failed = [r for r in outcome if isinstance(r, BaseException)]
            if failed:
                raise failed[0]
            return
        for name, kind, items in writes:
            ops = self.ops[name]
            ops.write_registers(items) if kind == "registers" else ops.modify_entries(items)
            on_ack(time.perf_counter())


def _leaf_set_ids(fabric: Fabric) -> dict[str, int]:
    """A leaf's routing path set id on every switch: its 1-based position in name order (plan.py)."""
    return {leaf.name: i for i, leaf in enumerate(sorted(fabric.leaves, key=lambda s: s.name), start=1)}


def failover_delta(fabric: Fabric, plans: dict[str, SwitchPlan], link: Link) -> dict[str, dict[int, Optional[PathSet]]]:
    """The routing path sets that change when ``link`` fails: ``{switch: {id: new set or None}}``.

    Only the pairs the link carried are recomputed: the failed leaf's sets towards every other
    leaf, and every other leaf's set towards it (a spine's set towards that leaf just loses its
    route; ``None`` = no path left).  Members and weights are what ``plan_fabric`` gives on the
    fabric without the link -- one member per spine both leaves still reach, in spine order,
    weighted by the bottleneck capacity -- so the result equals a full re-plan's changes
    (tests/control_plane/test_failover_delta.py checks that on every link of the lab).
    """
    alive = {(l.leaf, l.spine): l for l in fabric.links if l != link}
    ids = _leaf_set_ids(fabric)
    failed_leaf, failed_spine = link.leaf, link.spine
    spines = sorted({spine for _, spine in alive})
    delta: dict[str, dict[int, Optional[PathSet]]] = {}
    others = [leaf for leaf in sorted(ids) if leaf != failed_leaf]
    for src, dst in [(failed_leaf, o) for o in others] + [(o, failed_leaf) for o in others]:
        plan = plans.get(src)
        old = next((p for p in plan.path_sets if p.id == ids[dst]), None) if plan else None
        if old is None or all(m.via != failed_spine for m in old.slots):
            continue  # no set, or the failed spine was not a member: unchanged
        ports = fabric.switches[src].ports
        members = []
        for spine in spines:
            up, down = alive.get((src, spine)), alive.get((dst, spine))
            if up is None or down is None:
                continue
            members.append((Member(up.leaf_port, spine), min(ports[up.leaf_port].capacity_gbps, down.capacity_gbps)))
        slots = weighted_slots(members)
        delta.setdefault(src, {})[old.id] = replace(old, slots=slots) if slots else None
    spine_plan = plans.get(failed_spine)
    if spine_plan is not None and any(p.id == ids[failed_leaf] for p in spine_plan.path_sets):
        delta.setdefault(failed_spine, {})[ids[failed_leaf]] = None
    return delta


def apply_delta(plans: dict[str, SwitchPlan], delta: dict[str, dict[int, Optional[PathSet]]],
                fabric: Fabric) -> dict[str, SwitchPlan]:
    """``plans`` with the delta's sets replaced (``None``: the set and its routes removed) and
    each switch's ``switch`` refreshed from ``fabric`` (its ports after the failure)."""
    out = dict(plans)
    for name, sets in delta.items():
        plan = plans[name]
        gone = {i for i, ps in sets.items() if ps is None}
        out[name] = replace(plan, switch=fabric.switches[name],
                            path_sets=[sets.get(p.id, p) for p in plan.path_sets if p.id not in gone],
                            routes=[r for r in plan.routes if r.path_set not in gone])
    return out


def format_congestion(fabric: Fabric, cmap: CongestionMap, top: int = 10) -> str:
    """The congestion map as a table of the busiest directed links."""
    lines = [f"congestion map ({len(cmap.qdelay_us)} directed links)", "  link                         queue delay"]
    for (switch, port), delay in cmap.hottest(top):
        peer = fabric.switches[switch].ports[port].peer_switch
        lines.append(f"  {switch}:{port} -> {peer}".ljust(31) + f"{delay:>8} us")
    return "\n".join(lines) + "\n"


def watch(fabric: Fabric, ops: dict[str, SwitchOps], interval_s: float, count: int, out,
          top: int = 10, arch: str = "v1model") -> None:
    """``stellarctl watch``: print the live congestion map and the gray links every ``interval_s``
    seconds.

    Each map is the 90th-percentile queue delay per directed link of the packets that left
    since the previous map (the first: since the switches started); a link nothing left on
    in between is idle.  Counters only, which every target's P4Runtime reads."""
    hist = HistogramReader(archnames.names(arch).qdelay_hist)
    gray = GrayLinkReader(fabric, arch)
    for i in range(count):
        cmap = CongestionMap(0.0)
        gray.start()
        for name, switch in fabric.switches.items():
            ports = [p.number for p in switch.ports.values() if p.peer_switch is not None]
            if not ports:
                continue
            for port, delay in hist.read(name, ops[name], ports).items():
                cmap.qdelay_us[(name, port)] = delay
            gray.read(name, ops[name])
        out.write(format_congestion(fabric, cmap, top))
        out.write(gray.report())
        out.flush()
        if i + 1 < count:
            time.sleep(interval_s)  # a human-facing refresh cadence, not a timing mechanism


def make_controller(arch: str, fabric: Fabric, ops: dict[str, SwitchOps], plans: dict[str, SwitchPlan],
                    documents: dict[str, dict], **options) -> Controller:
    """The controller for ``arch``'s program (its class is the architecture's, arches.REGISTRY);
    ValueError for an unknown architecture."""
    return arches.get(arch).controller_class()(fabric, ops, plans, documents, **options)
