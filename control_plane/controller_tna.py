"""The controller loop on the Tofino program (p4src/tna/stellar.p4).

What is the same as on v1model (``controller.Controller``, reused as is): the congestion map
is the per-port queue-delay histogram (``pipe.StellarEgress.telemetry.qdelay_hist``, the same
index and buckets), polled as deltas, the 90th percentile per directed link; the remote hop
behind each member of a leaf's path set is found the same way.

What differs (p4src/tna/README.md, CONTRACT.md §9):

* **Levels** go to ``pipe.StellarIngress.dre_base.levels``: one entry per *group* (the TNA program
  shares one group among every path set with the same member ports, since the DRE state is
  per group and member), ``l0..l7``, 16 bits (written x contract.TNA_DRE_SCORE_SCALE), added to the member's DRE score.  A group that
  serves several destination leaves gets, per member, the *highest* level among those
  destinations' remote hops (the program cannot tell destinations apart within a group; the
  worst hop is the safe reading).  The unit is the v1model one -- ``headroom`` x µs of remote
  queue delay -- capped at 255.  The render installs each group's entry at 0; the controller
  only MODIFYs entries whose levels moved by a quantum.
* **Liveness** is the ``failover.alive`` register (per group, bit k = member k up).  The data
  plane clears a member's bit itself (the packet generator's port-down packet); where that app
  is not enabled, ``mark_ports_down`` does the same from the controller (read, clear, write).
  After a re-plan every group whose membership changed gets its cell written with exactly its
  members up (``(1 << count) - 1``): its members are renumbered, so a bit cleared for the old
  member k would now stop the new member k; and an established flow still holding a position
  past the new count (the program does not compare a stored member with the count) must see
  it down and move, or it keeps picking a member row that was deleted (found by the TNA demo:
  every flow entering the failed leaf stalled for good with an all-ones reset).
* **Failover deltas**: member positions move when a path set loses a port (groups are
  deduplicated by member ports), so the controller does not patch entries in place as on
  v1model; it renders the fabric without every failed link and writes the difference to its
  record of what the switches hold (``linkstate.entry_delta``).  **Group ids are stable**: a
  member list keeps its id across re-plans and a new list takes an id never used on the switch
  (``render_tna.groups_of`` with the controller's history), because the data plane keeps
  per-group state only feedback and traffic replace -- ``path_choice.group_best``'s best member
  position, the DRE cells -- and an id renumbered in place would have the
  old best position name another port until feedback corrected it (a register reset is not
  an option: PI refuses P4Runtime register writes).  A new group's cells are the program's
  initial ones ("none known": hash and DRE).  Phases: inserts (the new groups' rows); their
  alive cells; modifies (routes and port maps repointed); deletes last (a member row an
  in-flight packet's stale bitmap may still pick stays until the end).
* **Link return** (``handle_link_restore``): the same, with the link back.
"""
from __future__ import annotations

import time
from typing import Callable, Optional

from control_plane import archnames, arches, contract, prior, render_tna
from control_plane.controller import CongestionMap, Controller, FailoverReport, highest_level
from control_plane.linkstate import EntryDelta, entry_delta
from control_plane.model import Fabric
from control_plane.p4rt import Change

MEMBER_TABLE = f"{contract.TNA_PIPE}StellarIngress.member_port.members"
PORT_MEMBER_TABLE = f"{contract.TNA_PIPE}StellarIngress.failover.port_member"
HASH_TABLE = f"{contract.TNA_PIPE}StellarIngress.path_choice.hash_member"
# what a capacity prior is written into: the level rows and the routes that name a prior
PRIOR_TABLES = frozenset({f"{contract.TNA_PIPE}StellarIngress.routing.lpm",
                          f"{contract.TNA_PIPE}StellarIngress.routing.reservation",
                          *(f"{contract.TNA_PIPE}StellarIngress.dre.level{k}" for k in range(contract.TNA_MEMBERS))})


def _copy(documents: dict[str, dict]) -> dict[str, dict]:
    return {name: {"entries": [dict(e, params=dict(e.get("params") or {})) for e in doc["entries"]]}
            for name, doc in documents.items()}


def group_alive_cells(delta: dict[str, EntryDelta], after: dict[str, dict],
                      names: archnames.ArchNames = archnames.TNA) -> dict[str, list[tuple[int, int]]]:
    """Per switch, (group, alive value) for each group whose member rows ``delta`` changes and
    that ``after`` still has: its members up, positions past its count down."""
    out = {}
    for switch, d in delta.items():
        touched = {e["match"]["meta.group"] for e in d.inserts + d.modifies + d.deletes
                   if e["table"] in (MEMBER_TABLE, HASH_TABLE)}
        count: dict[int, int] = {}
        for e in (after.get(switch) or {}).get("entries", []):
            if e["table"] == MEMBER_TABLE:
                g = e["match"]["meta.group"]
                count[g] = count.get(g, 0) + 1
        cells = [(g, names.alive_mask(count[g])) for g in sorted(touched) if g in count]
        if cells:
            out[switch] = cells
    return out


class TnaController(Controller):
    """``Controller`` for the TNA program: levels in ``dre_base.levels``, liveness in ``failover.alive``."""

    names = archnames.TNA
    # A re-plan keeps each member list's group id and gives a new list an id never used on the
    # switch (render_tna.groups_of).  False: renumber in path-set order as a fresh render does
    # (the negative control: a renumbered group's best-member cell names the wrong port).
    stable_group_ids = True

    def __init__(self, fabric: Fabric, ops, plans, documents: dict[str, dict], **options) -> None:
        super().__init__(fabric, ops, plans, documents, **options)
        self._docs = _copy(documents)  # what the switches hold in the topology tables
        # per switch: member ports -> group id, every list the switch has held (ids are not reused)
        self._group_ids = {name: render_tna.group_history(doc) for name, doc in documents.items()}
        self._levels: dict[str, dict[int, dict]] = {}
        self._index()

    # ------------------------------------------------------------------ operating rates
    def port_rates(self, rates: "prior.Rates") -> int:
        """Port status reported these operating rates ((switch, port) -> Gb/s): re-render the
        capacity priors (the dre.level<k> rows, each member's bottleneck at those rates, and the
        routes naming a prior: render_tna.group_priors) and write the difference.  A row's
        range moves with the rate, so a changed prior's old rows go before its new ones come
        (for that instant the member reads level 0, as an idle one), and a route moves to a new
        prior once its rows are in.  Returns the entries written."""
        from control_plane.render import environment

        env, sizes = environment(arches.get(self.names.arch)), contract.sizes()
        after = {name: render_tna.render_switch(env, self.fabric, plan, sizes, dict(self._group_ids.get(name, {})),
                                                rates)
                 for name, plan in self.plans.items()}
        delta = entry_delta(self._docs, after, PRIOR_TABLES)
        phases = [{s: [Change("delete", "entry", e) for e in d.deletes] for s, d in delta.items() if d.deletes},
                  {s: [Change("insert", "entry", e) for e in d.inserts] for s, d in delta.items() if d.inserts},
                  {s: [Change("modify", "entry", e) for e in d.modifies] for s, d in delta.items() if d.modifies}]
        self._write_phases([p for p in phases if p], lambda _t: None)
        for name, doc in after.items():   # the record: the new rows and routes
            kept = [e for e in self._docs[name]["entries"] if e["table"] not in PRIOR_TABLES]
            self._docs[name]["entries"] = kept + [dict(e, params=dict(e.get("params") or {}))
                                                  for e in doc["entries"] if e["table"] in PRIOR_TABLES]
        written = sum(d.total for d in delta.values())
        self.writes += written
        return written

    # ------------------------------------------------------------------ the record
    def _index(self, keep_levels: Optional[dict[str, dict[int, dict]]] = None) -> None:
        """Group maps from the record: path set -> group per leaf, the dre_base.levels entries (the
        controller's own copies, so its levels survive a re-plan that leaves the group alone),
        and port -> (group, member, clear mask) of failover.port_member."""
        self._group_of = {name: render_tna.groups_of(plan, ids=dict(self._group_ids.get(name, {}))
                                                     if self.stable_group_ids else None)[1]
                          for name, plan in self.plans.items()}
        levels = {}
        for name, doc in self._docs.items():
            kept = (keep_levels or {}).get(name, {})
            levels[name] = {e["match"]["meta.group"]: kept.get(e["match"]["meta.group"]) or dict(e, params=dict(e["params"]))
                            for e in doc["entries"] if e["table"] == self.names.level_table}
        self._levels = levels
        # the measured bits each group was rendered with: a re-plan's groups start from these
        self._rendered_measured = {
            name: {e["match"]["meta.group"]: e["params"].get("measured", 0)
                   for e in doc["entries"] if e["table"] == self.names.level_table}
            for name, doc in self._docs.items()}
        self._port_member = {
            name: {e["match"]["hdr.port_down.port_num"]: (e["params"]["group"], e["params"]["member"],
                                                          e["params"]["clear_mask"])
                   for e in doc["entries"] if e["table"] == PORT_MEMBER_TABLE}
            for name, doc in self._docs.items()}

    # ------------------------------------------------------------------ levels
    def group_levels(self, cmap: CongestionMap) -> dict[str, dict[int, dict[str, int]]]:
        """Per leaf and group, the ``set_levels`` parameters the congestion map asks for: ``l<k>``
        = 2 x member k's level (the program's encoding: the score's low bit is its tie bit), the
        level the highest among the destinations that share the group (``highest_level``), and
        ``measured`` = the rendered bits (members with nothing queued downstream) plus those of
        members whose every remote hop has a reading in this map.  Job (reservation) sets count
        like routing sets (``member_hops``): a job group's member takes the highest level over
        the job's destinations and its bit once every one of them was read."""
        cap = self.names.level_max
        out: dict[str, dict[int, dict[str, int]]] = {}
        for leaf, sets in self.member_hops().items():   # routing and job (reservation) sets
            of_set = self._group_of.get(leaf, {})
            hops: dict[int, dict[int, list]] = {}
            for ps_id, slots in sets.items():
                group = of_set.get(ps_id)
                if group is None or group not in self._levels.get(leaf, {}):
                    continue  # no choice in it (one member): no dre_base.levels entry
                for slot, slot_hops in slots.items():
                    hops.setdefault(group, {}).setdefault(slot, []).extend(slot_hops)
            per_group = out.setdefault(leaf, {})
            for group, slots in hops.items():
                params = {f"l{k}": 0 for k in range(8)}
                measured = self._rendered_measured.get(leaf, {}).get(group, 0)
                for slot, slot_hops in slots.items():
                    level, known = highest_level(cmap, slot_hops, self.headroom, cap)
                    params[f"l{slot}"] = contract.TNA_DRE_SCORE_SCALE * level
                    if known:
                        measured |= 1 << slot
                params["measured"] = measured
                per_group[group] = params
        return out

    def push_levels(self, cmap: CongestionMap) -> int:
        """MODIFY the ``dre_base.levels`` entries whose levels moved by a quantum or more, or whose
        measured bits changed (so the first reading is written even when it equals the rendered 0:
        until then no gap or drain move leaves those members)."""
        written = 0
        for leaf, groups in self.group_levels(cmap).items():
            changed = []
            for group, new in groups.items():
                entry = self._levels[leaf][group]
                old = entry["params"]
                moved = any(abs(new[k] - old.get(k, 0)) >= 2 * self.quantum_us for k in new if k != "measured")
                if moved or new["measured"] != old.get("measured", 0):
                    entry["params"] = dict(new)
                    changed.append(entry)
            if changed:
                self.ops[leaf].modify_entries(changed)
                written += len(changed)
        self.writes += written
        return written

    # ------------------------------------------------------------------ liveness
    def alive_down_cells(self, ports: list[tuple[str, int]]) -> dict[str, list[tuple[str, int, int]]]:
        """The alive cells with the ports' bits cleared (read from the switches now): what the
        port-down packet does in the data plane, for a switch whose pktgen app is off."""
        masks: dict[str, dict[int, int]] = {}
        for switch, port in ports:
            found = self._port_member.get(switch, {}).get(port)
            if found is not None:
                group, _, clear = found
                masks.setdefault(switch, {})[group] = masks.get(switch, {}).get(group, 0xFF) & clear
        reg = self.names.alive_register
        out = {}
        for switch, groups in masks.items():
            now = self.ops[switch].read_registers([reg], sorted(groups))[reg]
            out[switch] = [(reg, g, now.get(g, 0xFF) & m) for g, m in sorted(groups.items())]
        return out

    def mark_ports_down(self, ports: list[tuple[str, int]]) -> None:
        for switch, cells in self.alive_down_cells(ports).items():
            self.ops[switch].write_registers(cells)

    def _alive_resets(self, delta: dict[str, EntryDelta], after: dict[str, dict]) -> dict[str, list[Change]]:
        """For every group whose member rows the delta changes, its alive cell with exactly its
        members up (``ArchNames.alive_mask``; a group the re-plan removed is left alone)."""
        reg = self.names.alive_register
        out = {}
        for switch, cells in group_alive_cells(delta, after, self.names).items():
            out[switch] = [Change("modify", "register", {"name": reg, "index": g, "value": v}) for g, v in cells]
        return out

    # ------------------------------------------------------------------ failures and returns
    def handle_link_failure(self, a: str, b: str, ports: list[tuple[str, int]],
                            mark_down: bool = True) -> FailoverReport:
        """Clear the link's ports in the alive bitmaps (``mark_down``; the pktgen app does the
        same in the data plane), then write the re-plan without every failed link."""
        started, cpu = time.perf_counter(), time.process_time()
        link = self._link(a, b)  # the current model: a link already failed is an error
        key = (link.leaf, link.spine)
        down = self.alive_down_cells(ports) if mark_down else {}
        return self._replan(self.failed + [key], (a, b), list(ports), started, cpu,
                            first={s: [Change("modify", "register", {"name": n, "index": i, "value": v})
                                       for n, i, v in cells] for s, cells in down.items()})

    def handle_link_restore(self, a: str, b: str, ports: list[tuple[str, int]] = ()) -> FailoverReport:
        """The a-b link is back: write the re-plan with it (and without the links still down),
        the alive cells of the groups it rejoins with their members up."""
        started, cpu = time.perf_counter(), time.process_time()
        key = next((k for k in self.failed if set(k) == {a, b}), None)
        if key is None:
            raise ValueError(f"the link between {a} and {b} is not failed (failed: {self.failed or 'none'})")
        return self._replan([k for k in self.failed if k != key], (a, b), list(ports), started, cpu)

    def _replan(self, failed: list[tuple[str, str]], link: tuple[str, str], ports: list[tuple[str, int]],
                started: float, cpu: float, first: Optional[dict[str, list[Change]]] = None) -> FailoverReport:
        from control_plane.render import render_fabric

        fabric = self.intact_fabric.without_links(failed) if failed else self.intact_fabric
        rendered = render_fabric(fabric, arch=self.names.arch,
                                 group_ids=self._group_ids if self.stable_group_ids else None)
        delta = entry_delta(self._docs, rendered.documents, self.names.topology_tables)
        phases: list[dict[str, list[Change]]] = []
        if first:
            phases.append(first)
        if self.stable_group_ids:
            # a group id keeps its members, so the changed groups are new (or returning) ones:
            # their rows and alive cells are in place before the modifies point routes at them
            phases.append({s: [Change("insert", "entry", e) for e in d.inserts] for s, d in delta.items() if d.inserts})
            phases.append(self._alive_resets(delta, rendered.documents))
            phases.append({s: [Change("modify", "entry", e) for e in d.modifies] for s, d in delta.items() if d.modifies})
        else:
            phases.append({s: [Change("modify", "entry", e) for e in d.modifies] +
                              [Change("insert", "entry", e) for e in d.inserts]
                           for s, d in delta.items() if d.modifies or d.inserts})
            phases.append(self._alive_resets(delta, rendered.documents))
        phases.append({s: [Change("delete", "entry", e) for e in d.deletes] for s, d in delta.items() if d.deletes})
        computed = time.perf_counter()
        acks: list[float] = []
        self._write_phases([p for p in phases if p], acks.append)
        finished, cpu = time.perf_counter(), time.process_time() - cpu
        # the model, after the data plane has converged
        old_levels = self._levels
        self.failed = list(failed)
        self.fabric, self.plans = fabric, rendered.plans
        self._docs = _copy(rendered.documents)
        untouched = {s: {g: e for g, e in lv.items()
                         if not any(x["table"] == self.names.level_table and x["match"]["meta.group"] == g
                                    for x in (delta.get(s) or EntryDelta()).inserts + (delta.get(s) or EntryDelta()).modifies)}
                     for s, lv in old_levels.items()}
        self._index(keep_levels=untouched)
        self._refresh_hops()  # routing and job sets of the re-plan
        entries = sum(d.total for d in delta.values())
        self.writes += entries
        return FailoverReport(link, ports, entries, (finished - started) * 1e3,
                              (min(acks) - started) * 1e3 if acks else None, (computed - started) * 1e3,
                              len({s for p in phases for s in p}), cpu * 1e3)

    def _write_phases(self, phases: list[dict[str, list[Change]]], on_ack: Callable[[float], None]) -> None:
        """Each phase on every switch at once (P4Runtime sessions: ``submit_many``), the next
        phase only after the last acknowledgement of this one."""
        for phase in phases:
            jobs = [(self.ops[name], changes) for name, changes in phase.items() if changes]
            if not jobs:
                continue
            if all(hasattr(ops, "submit_many") for ops, _ in jobs):
                outcome = type(jobs[0][0]).submit_many(jobs, on_ack).result()
                failed = [r for r in outcome if isinstance(r, BaseException)]
                if failed:
                    raise failed[0]
                continue
            for ops, changes in jobs:
                ops.apply_changes(changes)
                on_ack(time.perf_counter())

    def resync(self, documents: dict[str, dict], program=None, addresses=None, fabric=None, plans=None):
        push = super().resync(documents, program, addresses, fabric, plans)
        if plans is not None:
            self._docs = _copy(documents)
            for name, doc in documents.items():  # the documents' ids join the history
                history = self._group_ids.setdefault(name, {})
                for ports, gid in render_tna.group_history(doc).items():
                    for old in [k for k, v in history.items() if v == gid]:
                        del history[old]
                    history[ports] = gid
            self._index()
        return push
