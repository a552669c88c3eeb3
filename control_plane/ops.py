"""Operations on a running fabric over P4Runtime: diff, push, stats, fail-link (`stellarctl`).

Each operation is a plain function (tests and the demo call them directly) plus a `cmd_*`
handler that `control_plane.cli` registers through `add_commands`.  Switch addresses and
device ids come from the fabric YAML (`p4runtime`, `device_id`); `addresses` overrides them.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, TextIO

from . import archnames, contract
from .linkstate import (FailedLinks, default_state_path, describe_partition, entry_delta, legacy_state_path,
                        state_dir)
from .loading import load_or_report
from .model import Fabric, Link
from .p4rt import FabricPush, P4RuntimePushError, ProgramFiles, SwitchResult, SwitchSession, push_fabric
from .reach import refusing
from .render import RenderError, entry_identity, render_fabric

REPO = Path(__file__).resolve().parent.parent
STELLAR_P4 = REPO / "p4src" / "v1model" / "stellar.p4"
STELLAR_INCLUDE = REPO / "p4src"
STELLAR_TNA_P4 = REPO / "p4src" / "tna" / "stellar.p4"
TNA_DEFINES = {"__TARGET_TOFINO__": "1"}  # the Tofino-1 program (p4src/tna/README.md)

# Tables whose entries follow the fabric's topology: what fail-link recomputes without the link.
ROUTING_TABLES = frozenset({
    "StellarIngress.routing.lpm", "StellarIngress.routing.path_set",
    "StellarIngress.routing.reservation", "StellarIngress.elephant.hint",
})
PATH_CHANGE_REASONS = contract.PATH_CHANGE_REASONS
DROP_REASONS = {1: "malformed", 2: "bad_checksum", 3: "ttl_expired", 4: "no_route", 5: "no_path_set",
                6: "no_live_member", 7: "tenant_red", 8: "not_ipv4"}
MALFORMED_KINDS = {1: "truncated_ethernet", 2: "truncated_ipv4", 3: "ipv4_version", 4: "ipv4_ihl",
                   5: "truncated_udp", 6: "truncated_tcp", 7: "truncated_bth", 8: "ipv4_options", 9: "parser_error"}
CLASS_NAMES = ("background", "elastic", "critical", "control")
QUEUES_PER_PORT = 8  # tx_queue index = port * 8 + queue (CONTRACT.md §5)


# ---------------------------------------------------------------------------------------------
# diff / push
# ---------------------------------------------------------------------------------------------
def render_documents(fabric: Fabric, arch: str = "v1model") -> dict[str, dict[str, Any]]:
    return render_fabric(fabric, arch=arch).documents


def failed_documents(fabric: Fabric, failed: "FailedLinks", arch: str = "v1model") -> dict[str, dict[str, Any]]:
    """The documents of the intact ``fabric`` with ``failed``'s links down.  TNA: with the group
    ids the controller gives (render_tna.groups_of's history): the intact render, then each
    failure in the order recorded -- a member list keeps its id, a new one takes an id not used
    before in that sequence, so no group id names other members than it did before (the data
    plane's per-group state, path_choice.group_best first, would then name another port), and
    every command that renders a state (push, diff, fail-link) gives the same ids."""
    if arch != "tna" or not failed.links:
        return render_documents(failed.apply(fabric), arch)
    history: dict[str, dict[tuple[int, ...], int]] = {}
    render_fabric(fabric, arch=arch, group_ids=history)
    for i in range(1, len(failed.links) + 1):
        documents = render_fabric(fabric.without_links(failed.links[:i]), arch=arch, group_ids=history).documents
    return documents


def state_documents(fabric: Fabric, failed: "FailedLinks", arch: str = "v1model") -> dict[str, dict[str, Any]]:
    """What the switches hold after ``fail-link`` recorded ``failed``: the intact fabric's
    documents, with the tables that follow the topology (and the rest of the document fail-link
    reconciles: path sets, clone sessions) rendered without the failed links and (v1model) both
    ends of each failed link marked down in the liveness tables -- exactly what fail-link
    writes, nothing more (it leaves the dead ports' other rows and the meters alone).
    ``diff --state`` and ``push --state`` render this, so they agree with fail-link."""
    intact = render_documents(fabric, arch)
    if not failed.links:
        return intact
    after = failed_documents(fabric, failed, arch)
    topology = archnames.names(arch).topology_tables
    down: dict[str, list[dict[str, Any]]] = {}
    if archnames.names(arch).liveness == "tables":
        for leaf, spine in failed.links:
            link = find_link(fabric, leaf, spine)
            for name, port in ((link.leaf, link.leaf_port), (link.spine, link.spine_port)):
                down.setdefault(name, []).extend(contract.liveness_entries(port, down=True, comment="link failed"))
    docs = {}
    for name, doc in intact.items():
        marked = {entry_identity(e): e for e in down.get(name, [])}
        entries = [marked.pop(entry_identity(e), e) for e in doc["entries"] if e["table"] not in topology]
        entries += list(marked.values())
        entries += [e for e in after[name]["entries"] if e["table"] in topology]
        # the rest (path sets, TNA clone sessions) as fail-link's reconcile leaves it: rendered
        # without the links; the meters and registers as the intact render has them
        docs[name] = {**after[name], "entries": entries, "meters": doc.get("meters", []),
                      "registers": doc.get("registers", [])}
    return docs


def push_reachable(fabric: Fabric, documents: Mapping[str, Mapping[str, Any]], program: Optional[ProgramFiles] = None,
                   addresses: Optional[Mapping[str, str]] = None, switches: Optional[Sequence[str]] = None,
                   sessions: Optional[Mapping[str, SwitchSession]] = None, **options: Any) -> FabricPush:
    """``push_fabric`` for the switches whose address accepts connections; a switch whose address
    refuses them (stopped, wrong port) gets its error at once, naming it, instead of after the
    gRPC timeout, and the others are pushed as usual."""
    names = list(switches) if switches is not None else list(documents)
    given = set(sessions or {})
    down = refusing({n: (addresses or {}).get(n, fabric.switches[n].p4runtime) for n in names if n not in given})
    started = time.perf_counter()
    rest = [n for n in names if n not in down]
    push = push_fabric(fabric, documents, program, addresses, switches=rest, sessions=sessions, **options)
    results: dict[str, SwitchResult] = {}
    for name in names:
        if name in down:
            address = (addresses or {}).get(name, fabric.switches[name].p4runtime)
            results[name] = SwitchResult(name, address, error=f"switch {name}: cannot connect to {address}: {down[name]}")
        else:
            results[name] = push.results[name]
    return FabricPush(results, time.perf_counter() - started, push.dry_run)


def diff_fabric(fabric: Fabric, switches: Optional[list[str]] = None, program: Optional[ProgramFiles] = None,
                addresses: Optional[Mapping[str, str]] = None, progress: Optional[TextIO] = None,
                documents: Optional[Mapping[str, dict[str, Any]]] = None) -> FabricPush:
    """What a push would change on each switch (a dry-run reconcile; nothing is written)."""
    docs = documents if documents is not None else render_documents(fabric)
    return push_fabric(fabric, docs, program, addresses, dry_run=True, switches=switches, progress=progress,
                       label="diff")


def format_push(push: FabricPush, verbose: bool = False, limit: int = 50) -> str:
    """One line per switch (+ its changes when `verbose` or a dry run), then a total."""
    lines = []
    for name, r in push.results.items():
        if r.diff is None:
            lines.append(f"{name:>10}  {r.address:<21}  ERROR  {r.error}")
            continue
        d = r.diff
        pipe = ("pipeline would be pushed" if push.dry_run else "pipeline pushed") if r.pipeline_pushed else ""
        if push.dry_run:
            state = "in sync" if d.empty and not r.pipeline_pushed else f"differs {d.summary()}"
            lines.append(f"{name:>10}  {r.address:<21}  {state}  {pipe}".rstrip())
        else:
            lines.append(f"{name:>10}  {r.address:<21}  {d.summary():<14} {d.written:5d} writes in "
                         f"{d.batches} batches  {r.seconds * 1000:7.1f} ms  {pipe}".rstrip())
        if verbose or push.dry_run:
            shown = d.lines()
            lines.extend(f"              {line}" for line in shown[:limit])
            if len(shown) > limit:
                lines.append(f"              ... {len(shown) - limit} more")
        if r.error:
            lines.append(f"            ERROR {r.error}")
    failed = sum(1 for r in push.results.values() if not r.ok)
    if push.dry_run:
        differ = sum(1 for r in push.results.values() if r.diff is not None and (not r.diff.empty or r.pipeline_pushed))
        lines.append(f"{len(push.results)} switches: {differ} differ, {failed} unreachable or failed")
    else:
        lines.append(f"{len(push.results)} switches: {push.written} writes in {push.seconds:.2f}s"
                     + (f"; {failed} FAILED" if failed else "; all in sync"))
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# stats
# ---------------------------------------------------------------------------------------------
@dataclass
class SwitchStats:
    """Counters of one switch (CONTRACT.md §5), keyed by port / reason; (packets, bytes) pairs."""

    switch: str
    rx: dict[int, tuple[int, int]] = field(default_factory=dict)
    tx: dict[int, tuple[int, int]] = field(default_factory=dict)
    tx_queue: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)
    ecn_marks: dict[int, int] = field(default_factory=dict)
    reorder: dict[int, int] = field(default_factory=dict)
    path_changes: dict[str, int] = field(default_factory=dict)
    elephants: dict[str, int] = field(default_factory=dict)
    drops: dict[str, int] = field(default_factory=dict)
    malformed: dict[str, int] = field(default_factory=dict)
    class_rx: dict[str, int] = field(default_factory=dict)
    tenant_yellow: dict[int, int] = field(default_factory=dict)
    tenant_red: dict[int, int] = field(default_factory=dict)
    reorder_total: Optional[int] = None
    retransmits: dict[int, int] = field(default_factory=dict)  # (dest leaf id << 3 | path) -> packets
    error: Optional[str] = None


def read_switch_stats(session: SwitchSession, ports: list[int], tenants: int = 0,
                      arch: str = "v1model") -> SwitchStats:
    """Read the telemetry counters for `ports` (and tenants 1..`tenants`) from one switch.

    The counter names are the program's (control_plane.archnames): the TNA program has no rx,
    per-queue, per-class or tenant-policing counters and counts reordering in one cell; those
    fields stay empty (``reorder_total`` then comes from that cell)."""
    n = archnames.names(arch)
    stats = SwitchStats(session.name)
    queue_cells = [p * QUEUES_PER_PORT + q for p in ports for q in range(QUEUES_PER_PORT)]
    tenant_ids = list(range(1, tenants + 1))
    indexes = {n.rx_port: ports, n.tx_port: ports, n.tx_queue: queue_cells, n.ecn_marks: ports,
               n.reorder_per_port: ports, n.tenant_yellow: tenant_ids, n.tenant_red: tenant_ids}
    read = session.read_counters(n.counter_names(), {k: v for k, v in indexes.items() if k})
    if n.retransmits:
        try:
            cells = session.read_counters([n.retransmits]).get(n.retransmits, {})
        except KeyError:
            cells = {}   # a program without the counter (an older build): no loss signal to show
        stats.retransmits = {i: v[0] for i, v in cells.items() if v[0]}

    def cells(name: Optional[str]) -> dict[int, tuple[int, int]]:
        return read.get(name, {}) if name else {}

    def first(name: Optional[str], index: int) -> int:
        return cells(name).get(index, (0, 0))[0]

    stats.rx = cells(n.rx_port)
    stats.tx = cells(n.tx_port)
    stats.tx_queue = {divmod(i, QUEUES_PER_PORT): v for i, v in cells(n.tx_queue).items()}
    stats.ecn_marks = {p: v[0] for p, v in cells(n.ecn_marks).items()}
    stats.reorder = {p: v[0] for p, v in cells(n.reorder_per_port).items()}
    stats.path_changes = {r: first(n.path_changes, i) for i, r in enumerate(PATH_CHANGE_REASONS)}
    if n.elephant_detections:
        stats.elephants = {"sketch": first(n.elephant_detections, 0), "hint": first(n.elephant_detections, 1)}
    elif n.elephant_packets:
        stats.elephants = {"elephant packets": first(n.elephant_packets, 1)}
    stats.drops = {name: first(n.drops, i) for i, name in DROP_REASONS.items()}
    stats.malformed = {name: first(n.malformed, i) for i, name in MALFORMED_KINDS.items()}
    if n.class_rx:
        stats.class_rx = {name: first(n.class_rx, i) for i, name in enumerate(CLASS_NAMES)}
    stats.tenant_yellow = {t: v[0] for t, v in cells(n.tenant_yellow).items()}
    stats.tenant_red = {t: v[0] for t, v in cells(n.tenant_red).items()}
    if n.reorder_total_counter:
        stats.reorder_total = first(n.reorder_total_counter, 0)
    elif n.reorder_total_register:
        try:
            stats.reorder_total = session.read_registers([n.reorder_total_register], [0])[
                n.reorder_total_register][0]
        except (KeyError, P4RuntimePushError):
            stats.reorder_total = None  # a program without the register: the per-port counter still says
    return stats


def collect_stats(fabric: Fabric, switches: Optional[list[str]] = None,
                  addresses: Optional[Mapping[str, str]] = None, election_id: tuple[int, int] = (0, 1),
                  timeout: float = 10.0, arch: str = "v1model") -> dict[str, SwitchStats]:
    """Counters of every (or the named) switch, read concurrently.  Reads need no arbitration,
    so this works beside a primary controller."""
    names = switches or list(fabric.switches)
    down = refusing({n: (addresses or {}).get(n, fabric.switches[n].p4runtime) for n in names})

    def one(name: str) -> SwitchStats:
        sw = fabric.switches[name]
        if name in down:
            return SwitchStats(name, error=f"switch {name}: cannot connect to "
                                           f"{(addresses or {}).get(name, sw.p4runtime)}: {down[name]}")
        session = SwitchSession((addresses or {}).get(name, sw.p4runtime), sw.device_id, election_id=election_id,
                                name=name, timeout=timeout)
        try:
            session.connect(read_only=True)
            return read_switch_stats(session, sorted(sw.ports), len(fabric.tenants), arch)
        except (P4RuntimePushError, KeyError) as exc:
            return SwitchStats(name, error=str(exc))
        finally:
            session.close()

    with ThreadPoolExecutor(max_workers=max(1, min(16, len(names)))) as pool:
        return dict(zip(names, pool.map(one, names)))


def _nonzero(values: Mapping[Any, int]) -> str:
    shown = [f"{k} {v}" for k, v in values.items() if v]
    return ", ".join(shown) if shown else "none"


def stats_json(stats: Mapping[str, SwitchStats]) -> dict[str, Any]:
    """Plain JSON-able form (ports as string keys, (packets, bytes) as lists) for scripts."""
    def keyed(values: Mapping[Any, Any]) -> dict[str, Any]:
        return {("/".join(map(str, k)) if isinstance(k, tuple) else str(k)):
                (list(v) if isinstance(v, tuple) else v) for k, v in values.items()}

    out: dict[str, Any] = {}
    for name, s in stats.items():
        item = dataclasses.asdict(s)
        for key, value in item.items():
            if isinstance(value, dict):
                item[key] = keyed(value)
        out[name] = item
    return out


def stats_gray_links(fabric: Fabric, stats: Mapping[str, SwitchStats], arch: str = "v1model") -> str:
    """The gray-link report (control_plane.graylinks) from the switches' counters since they
    started: frames each fabric link lost on the wire and the retransmissions on paths over it."""
    from .graylinks import format_gray_links, gray_links, wire_losses

    read = {name: s for name, s in stats.items() if s.error is None}
    tx = {(name, port): v[0] for name, s in read.items() for port, v in s.tx.items()}
    rx = {(name, port): v[0] for name, s in read.items() for port, v in s.rx.items()}
    links = gray_links(fabric, tx, rx, {name: s.retransmits for name, s in read.items()}, arch)
    return format_gray_links(links, len(wire_losses(fabric, tx, rx)))


def format_stats(fabric: Fabric, stats: Mapping[str, SwitchStats], arch: str = "v1model") -> str:
    lines = []
    for name, s in stats.items():
        sw = fabric.switches[name]
        lines.append(f"{name} ({sw.role}, device {sw.device_id}, {sw.p4runtime})")
        if s.error:
            lines.append(f"  ERROR {s.error}")
            continue
        lines.append("  port  peer              rx pkts      rx bytes    tx pkts      tx bytes  ecn marks  reorder")
        for number, port in sorted(sw.ports.items()):
            peer = port.host if port.host else f"{port.peer_switch}:{port.peer_port}"
            rx, tx = s.rx.get(number, (0, 0)), s.tx.get(number, (0, 0))
            lines.append(f"  {number:<5} {peer:<14} {rx[0]:10d} {rx[1]:13d} {tx[0]:10d} {tx[1]:13d} "
                         f"{s.ecn_marks.get(number, 0):10d} {s.reorder.get(number, 0):8d}")
        queues = [f"{p}/q{q} {v[0]}" for (p, q), v in sorted(s.tx_queue.items()) if v[0]]
        lines.append(f"  tx per queue (port/queue packets): {', '.join(queues) if queues else 'none'}")
        lines.append(f"  path changes: {_nonzero(s.path_changes)}")
        lines.append(f"  elephant detections: {_nonzero(s.elephants)}")
        if s.reorder:
            lines.append(f"  reorder events: {sum(s.reorder.values())}"
                         + (f" (register total {s.reorder_total})" if s.reorder_total is not None else ""))
        else:  # a program that counts reordering in one cell (TNA)
            lines.append(f"  reorder events: {s.reorder_total if s.reorder_total is not None else 'n/a'}")
        lines.append(f"  drops: {_nonzero(s.drops)}")
        lines.append(f"  malformed: {_nonzero(s.malformed)}")
        lines.append(f"  rx by class: {_nonzero(s.class_rx)}")
        tenants = list(fabric.tenants)
        policed = {f"{tenants[t - 1] if t <= len(tenants) else t} yellow": v for t, v in s.tenant_yellow.items()}
        policed.update({f"{tenants[t - 1] if t <= len(tenants) else t} red": v for t, v in s.tenant_red.items()})
        lines.append(f"  tenant policing: {_nonzero(policed)}")
    return "\n".join(lines) + "\n" + stats_gray_links(fabric, stats, arch)


# ---------------------------------------------------------------------------------------------
# fail-link
# ---------------------------------------------------------------------------------------------
def find_link(fabric: Fabric, a: str, b: str) -> Link:
    """The leaf-spine link between switches `a` and `b` (either order); ValueError if none."""
    for name in (a, b):
        if name not in fabric.switches:
            raise ValueError(f"{fabric.source}: no switch named {name!r} (switches: {', '.join(fabric.switches)})")
    for link in fabric.links:
        if {link.leaf, link.spine} == {a, b}:
            return link
    raise ValueError(f"{fabric.source}: no link between {a} and {b}")


def fabric_without_link(fabric: Fabric, link: Link) -> Fabric:
    """The fabric as it is after `link` failed: the link and both of its ports are gone."""
    switches = dict(fabric.switches)
    for name, port in ((link.leaf, link.leaf_port), (link.spine, link.spine_port)):
        sw = switches[name]
        switches[name] = dataclasses.replace(sw, ports={n: p for n, p in sw.ports.items() if n != port})
    return dataclasses.replace(fabric, switches=switches, links=tuple(x for x in fabric.links if x != link))


def failover_documents(fabric: Fabric, link: Link) -> dict[str, dict[str, Any]]:
    """Partial documents for after `link` failed: each switch's routing entries (routes, path
    sets, reservations, hints) computed without the link.  Reconcile them with
    `managed_tables=ROUTING_TABLES`: the other tables stay as they are (rendering the intact
    fabric again would only reproduce them) -- among them the liveness tables, where
    `fail_link` has already marked the link's two ports down."""
    after = render_documents(fabric_without_link(fabric, link))
    docs = {}
    for name, doc in after.items():
        docs[name] = {**doc, "entries": [e for e in doc["entries"] if e["table"] in ROUTING_TABLES],
                      "meters": [], "registers": []}
    return docs


@dataclass
class FailLinkReport:
    link: Link
    port_down_ms: Optional[float]  # command start -> the port_down writes acknowledged (None: neither was)
    last_ack_ms: float  # command start -> last write of the re-push acknowledged
    push: FabricPush
    port_down_errors: list[str] = field(default_factory=list)  # ends that could not be marked down
    restore: bool = False  # the link came back (--restore)
    failed: list[tuple[str, str]] = field(default_factory=list)  # every link failed after the command
    partition: list[str] = field(default_factory=list)  # leaves the failed links cut off (describe_partition)

    @property
    def ok(self) -> bool:
        return self.push.ok and not self.port_down_errors

    def text(self) -> str:
        lk = self.link
        lines = [f"fail-link {'--restore ' if self.restore else ''}{lk.leaf}:{lk.leaf_port} <-> "
                 f"{lk.spine}:{lk.spine_port}"]
        if self.restore:
            lines.append(f"  ports up on {lk.leaf} port {lk.leaf_port} and {lk.spine} port {lk.spine_port} "
                         f"in the re-push")
        if self.port_down_ms is not None:
            marked = (f"{lk.leaf} port {lk.leaf_port} and {lk.spine} port {lk.spine_port}"
                      if not self.port_down_errors else "the reachable end")
            lines.append(f"  port_down set on {marked}: acknowledged {self.port_down_ms:.1f} ms after the command")
        lines.extend(f"  port_down NOT set: {error}" for error in self.port_down_errors)
        for name, r in self.push.results.items():
            if r.error:
                lines.append(f"  {name}: ERROR {r.error}")
            elif r.diff is not None and not r.diff.empty:
                lines.append(f"  {name}: {r.diff.summary()} ({r.diff.written} writes)")
                lines.extend(f"      {line}" for line in r.diff.lines()[:20])
        lines.append(f"  path sets re-pushed: {self.push.written} writes; last write acknowledged "
                     f"{self.last_ack_ms:.1f} ms after the command")
        lines.append("  failed links now: " + (", ".join(f"{a}-{b}" for a, b in self.failed) or "none"))
        lines.extend(f"  {line}" for line in self.partition)
        return "\n".join(lines) + "\n"


def topology_documents(fabric: Fabric, before: FailedLinks, after: FailedLinks, arch: str = "v1model",
                       returning: Sequence[tuple[str, int]] = ()) -> dict[str, dict[str, Any]]:
    """Partial documents for the fabric with ``after``'s links failed (``fabric`` is the intact
    one, from the YAML): each switch's entries in the tables that follow the topology
    (archnames.topology_tables; reconcile them with those as ``managed_tables``), plus
    * v1model: the liveness entries of the ``returning`` ports (a link that is back: port_up);
    * TNA: the ``failover.alive`` cell of every group whose member rows change between
      ``before`` and ``after`` (a new or returning member list: ids are stable,
      ``failed_documents``), with exactly its members up (a bit a port-down packet cleared
      earlier must not stop a member, and a flow holding a position past the new count must see
      it down and move); the reconcile writes it before the routes are pointed at the group.
    Everything else on the switches stays as it is."""
    names = archnames.names(arch)
    after_docs = failed_documents(fabric, after, arch)
    returning_ports = {(s, p) for s, p in returning}
    resets: dict[str, list[dict[str, Any]]] = {}
    if names.liveness == "register":
        from .controller_tna import group_alive_cells

        before_docs = failed_documents(fabric, before, arch)
        delta = entry_delta(before_docs, after_docs, names.topology_tables)
        for name, cells in group_alive_cells(delta, after_docs, names).items():
            resets[name] = [{"name": names.alive_register, "index": g, "value": v} for g, v in cells]
    docs = {}
    for name, doc in after_docs.items():
        entries = [e for e in doc["entries"] if e["table"] in names.topology_tables]
        if names.liveness == "tables":
            ports = {p for s, p in returning_ports if s == name}
            for port in sorted(ports):
                entries += contract.liveness_entries(port, down=False, comment="link back")
        docs[name] = {**doc, "entries": entries, "meters": [], "registers": resets.get(name, [])}
    return docs


def _alive_cleared(session: SwitchSession, fabric: Fabric, failed: FailedLinks, name: str, port: int,
                   arch: str) -> list[tuple[str, int, int]]:
    """The TNA alive cell of the group ``port`` belongs to, with its bit cleared (read now)."""
    names = archnames.names(arch)
    doc = failed_documents(fabric, failed, arch)[name]
    row = next((e for e in doc["entries"] if e["table"].endswith("failover.port_member")
                and e["match"]["hdr.port_down.port_num"] == port), None)
    if row is None:
        return []
    group, clear = row["params"]["group"], row["params"]["clear_mask"]
    now = session.read_registers([names.alive_register], [group])[names.alive_register].get(group, names.alive_all)
    return [(names.alive_register, group, now & clear)]


def fail_link(fabric: Fabric, a: str, b: str, addresses: Optional[Mapping[str, str]] = None,
              started: Optional[float] = None, progress: Optional[TextIO] = None,
              election_id: tuple[int, int] = (0, 1), timeout: float = 5.0,
              failed: Optional[FailedLinks] = None, arch: str = "v1model",
              restore: bool = False) -> FailLinkReport:
    """Mark the link's ports down on both ends (the data plane skips them at once), then
    reconcile every switch to path sets computed without the link -- and without every link
    ``failed`` already records, so successive failures compose.  ``failed`` is updated (the
    caller saves it).  ``restore``: the link is back; the entries are computed with it (and
    without the links still failed), its ports marked up in the same reconcile.

    `started` is the `time.perf_counter()` the command began at (now if None): the report's
    times run from there to the acknowledgements, which is what an operator waits for.
    """
    t0 = time.perf_counter() if started is None else started
    names = archnames.names(arch)
    link = find_link(fabric, a, b)
    failed = failed if failed is not None else FailedLinks()
    before = FailedLinks(list(failed.links))
    key = (link.leaf, link.spine)
    if restore and key not in failed.links:
        raise ValueError(f"the link {link.leaf}-{link.spine} is not recorded as failed"
                         + (f" in {failed.path}" if failed.path else ""))
    if not restore and key in failed.links:
        raise ValueError(f"the link {link.leaf}-{link.spine} is already recorded as failed"
                         + (f" in {failed.path}" if failed.path else "") + " (--restore brings it back)")
    ends = [(link.leaf, link.leaf_port), (link.spine, link.spine_port)]
    (failed.remove if restore else failed.add)(fabric, a, b)

    sessions: dict[str, SwitchSession] = {}  # the two ends, kept open for the re-push

    def mark_down(end: tuple[str, int]) -> tuple[Optional[float], Optional[str]]:
        name, port = end
        sw = fabric.switches[name]
        why = refusing({name: (addresses or {}).get(name, sw.p4runtime)}).get(name)
        if why:  # e.g. the switch at that end is what died: say so now, not after the timeout
            return None, f"switch {name}: cannot connect to {(addresses or {}).get(name, sw.p4runtime)}: {why}"
        session = SwitchSession((addresses or {}).get(name, sw.p4runtime), sw.device_id, election_id=election_id,
                                name=name, timeout=timeout)
        try:
            session.connect()
        except P4RuntimePushError as exc:  # e.g. the switch at that end is what died
            return None, str(exc)
        sessions[name] = session
        if restore:
            return None, None  # the ports come up in the reconcile, with the entries that use them
        try:
            if names.liveness == "tables":
                # table writes (the liveness entries), which simple_switch_grpc accepts
                session.modify_entries(contract.liveness_entries(port, down=True, comment="link failed"))
            else:  # TNA: what the port-down packet does, for a switch whose pktgen app is off
                cells = _alive_cleared(session, fabric, before, name, port, arch)
                if cells:
                    session.write_registers(cells)
            return time.perf_counter(), None
        except P4RuntimePushError as exc:
            return None, str(exc)

    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            marks = list(pool.map(mark_down, ends))
        errors = [error for _, error in marks if error]
        acked = [at for at, _ in marks if at is not None]
        port_down_at = max(acked) if acked else None
        # The path sets are recomputed even if one end could not be told: the others must stop
        # sending towards the link either way.
        docs = topology_documents(fabric, before, failed, arch, ends if restore else ())
        push = push_reachable(fabric, docs, None, addresses, progress=progress, label="fail-link",
                              election_id=election_id, managed_tables=names.topology_tables, timeout=timeout,
                              sessions=sessions)
    finally:
        # closed only now: closing a gRPC channel takes ~0.15 s, which would delay the re-push
        for session in sessions.values():
            session.close()
    stamps = acked + [r.diff.last_ack for r in push.results.values() if r.diff is not None and r.diff.last_ack]
    last = max(stamps) if stamps else time.perf_counter()
    return FailLinkReport(link, None if port_down_at is None else (port_down_at - t0) * 1000, (last - t0) * 1000,
                          push, errors, restore=restore, failed=list(failed.links),
                          partition=describe_partition(fabric, failed))


# ---------------------------------------------------------------------------------------------
# stellarctl subcommands
# ---------------------------------------------------------------------------------------------
def _check_switches(fabric: Fabric, names: Optional[list[str]], err: TextIO) -> bool:
    unknown = [n for n in names or [] if n not in fabric.switches]
    if unknown:
        print(f"error: {fabric.source}: no switch named {', '.join(unknown)} (switches: {', '.join(fabric.switches)})",
              file=err)
        return False
    return True


def _program(args: argparse.Namespace, err: TextIO, required: bool,
             tna_profile: str = "full") -> tuple[bool, Optional[ProgramFiles]]:
    """(ok, program) from --program-json/--p4info, or compiled from --program (default
    stellar.p4 when `required`) by the target's own compiler through p4build: p4c-bm2-ss for
    `--target bmv2`, `p4sim compile` for p4sim -- the same step every switch start uses."""
    if bool(args.program_json) != bool(args.p4info):
        print("error: --program-json and --p4info go together", file=err)
        return False, None
    try:
        if args.program_json:
            return True, ProgramFiles.load(args.program_json, args.p4info)
        if required or args.program:
            import tempfile

            from p4build import BuildError, compile_program

            tna = args.arch == "tna"
            source = Path(args.program) if args.program else (STELLAR_TNA_P4 if tna else STELLAR_P4)
            includes = [Path(d) for d in args.include] if args.include else [STELLAR_INCLUDE]
            # the TNA program as the fabric's profile (dataplane.tna_profile) is compiled
            tna_defines = {**TNA_DEFINES, **contract.TNA_PROFILES[tna_profile]}
            defines = [f"{k}={v}" for k, v in tna_defines.items()] if tna else []
            with tempfile.TemporaryDirectory() as tmp:
                try:
                    built = compile_program(source, args.target, args.arch, args.build_dir or tmp,
                                            includes, defines=defines)
                except BuildError as exc:
                    print(f"error: {exc}", file=err)
                    return False, None
                return True, ProgramFiles.load(*built.files())
    except OSError as exc:
        print(f"error: {exc}", file=err)
        return False, None
    except Exception as exc:  # noqa: BLE001 - a bad P4Info file
        print(f"error: {type(exc).__name__}: {exc}", file=err)
        return False, None
    return True, None


def _render(fabric: Fabric, failed: FailedLinks, err: TextIO, arch: str = "v1model") -> Optional[dict[str, dict[str, Any]]]:
    try:
        return state_documents(fabric, failed, arch)
    except RenderError as exc:
        print(f"error: {exc}", file=err)
        return None


def _election(args: argparse.Namespace) -> tuple[int, int]:
    return (0, args.election_id)


def cmd_diff(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    fabric = load_or_report(args.fabric, err)
    if fabric is None or not _check_switches(fabric, args.switch, err):
        return 1
    ok, program = _program(args, err, required=False, tna_profile=fabric.dataplane.tna_profile)
    current = _failed_links(args, fabric, err)
    docs = _render(fabric, current, err, args.arch) if ok and current is not None else None
    if docs is None:
        return 1
    push = push_reachable(fabric, docs, program, dry_run=True, switches=args.switch, progress=None, label="diff",
                          election_id=_election(args))
    out.write(format_push(push))
    return 0 if push.in_sync and not any(r.pipeline_pushed for r in push.results.values()) else 1


def cmd_push(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    fabric = load_or_report(args.fabric, err)
    if fabric is None or not _check_switches(fabric, args.switch, err):
        return 1
    ok, program = _program(args, err, required=not args.no_pipeline, tna_profile=fabric.dataplane.tna_profile)
    current = _failed_links(args, fabric, err)
    docs = _render(fabric, current, err, args.arch) if ok and current is not None else None
    if docs is None:
        return 1
    push = push_reachable(fabric, docs, program, switches=args.switch, concurrency=args.concurrency,
                          progress=err if not args.quiet else None, election_id=_election(args),
                          batch_size=args.batch_size)
    if not args.quiet:
        out.write(format_push(push, verbose=args.verbose))
    elif not push.ok:  # -q: silent on success; a failure still names the switch and why
        for r in push.results.values():
            if not r.ok:
                print(f"error: {r.error}", file=err)
    return 0 if push.ok else 1


def cmd_stats(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    fabric = load_or_report(args.fabric, err)
    if fabric is None or not _check_switches(fabric, args.switch, err):
        return 1
    stats = collect_stats(fabric, args.switch, election_id=_election(args), arch=args.arch)
    if args.json:
        out.write(json.dumps(stats_json(stats), indent=1, sort_keys=True) + "\n")
    else:
        out.write(format_stats(fabric, stats, args.arch))
    return 0 if all(s.error is None for s in stats.values()) else 1


def _state_path(args: argparse.Namespace) -> Path:
    """The failed-links record this command reads and writes (--state, else the state dir's)."""
    return Path(args.state) if args.state else default_state_path(args.fabric, args.state_dir)


def _report_legacy_state(args: argparse.Namespace, err: TextIO) -> None:
    """A record older versions left beside the YAML is reported, never used."""
    old = legacy_state_path(args.fabric)
    if old.exists() and old.resolve() != _state_path(args).resolve():
        print(f"warning: {old} is a failed-links file an older stellarctl left beside the fabric; it is "
              f"ignored (state now lives in {state_dir(args.state_dir)}/): remove it", file=err)


def stale_links(fabric: Fabric, failed: FailedLinks, arch: str = "v1model",
                timeout: float = 5.0) -> dict[tuple[str, str], str]:
    """The recorded failures the switches do not hold: links whose leaf still has the link's
    port in a path set (the switches were restarted or re-pushed since the record was made).
    {link: why}; a leaf that cannot be read is not judged."""
    out: dict[tuple[str, str], str] = {}
    for leaf, spine in failed.links:
        link = find_link(fabric, leaf, spine)
        sw = fabric.switches[leaf]
        if refusing({leaf: sw.p4runtime}):
            continue
        try:
            with SwitchSession(sw.p4runtime, sw.device_id, name=leaf, timeout=timeout).connect(read_only=True) as s:
                s.load_switch_p4info()
                ports = _member_ports(s, arch)
        except (P4RuntimePushError, KeyError, ValueError):
            continue
        if link.leaf_port in ports:
            out[(leaf, spine)] = f"{leaf} still routes over port {link.leaf_port} (towards {spine})"
    return out


def _member_ports(session: SwitchSession, arch: str) -> set[int]:
    """The ports a switch's path sets (v1model) or group members (TNA) name."""
    if arch == "tna":
        return {e["params"]["port"] for e in session.read_entries("pipe.StellarIngress.member_port.members")}
    return {e["params"][f"port{i}"] for e in session.read_entries("StellarIngress.routing.path_set")
            for i in range(e["params"]["count"])}


def cmd_fail_link(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    started = time.perf_counter()
    fabric = load_or_report(args.fabric, err)
    if fabric is None:
        return 1
    if args.all and not args.restore:
        print("error: --all goes with --restore (bring every recorded link back)", file=err)
        return 2
    if bool(args.a) != bool(args.b) or (not args.a and not args.all) or (args.a and args.all):
        print("error: name the link's two switches (A B), or give --restore --all", file=err)
        return 2
    _report_legacy_state(args, err)
    state = _state_path(args)
    try:
        failed = FailedLinks.load(state, fabric)
    except ValueError as exc:
        print(f"error: {exc}", file=err)
        return 1
    if failed.links and not args.restore:
        stale = stale_links(fabric, failed, args.arch)
        for (leaf, spine), why in stale.items():
            since = failed.since.get(f"{leaf}-{spine}")
            print(f"warning: {state} records {leaf}-{spine} as failed"
                  + (f" since {since}" if since else "") + f", but the switches do not hold it: {why} "
                  "(restarted or re-pushed since?); the stale record is dropped", file=err)
            failed.links.remove((leaf, spine))
            failed.since.pop(f"{leaf}-{spine}", None)
    links = list(reversed(failed.links)) if args.all else [(args.a, args.b)]
    if args.all and not links:
        print(f"nothing to restore: {state} records no failed link", file=out)
        return 0
    ok = True
    for a, b in links:
        try:
            report = fail_link(fabric, a, b, started=started, progress=None, election_id=_election(args),
                               failed=failed, arch=args.arch, restore=args.restore)
        except ValueError as exc:  # no such switch or link, already failed / not failed
            print(f"error: {exc}", file=err)
            return 1
        except RenderError as exc:
            print(f"error: rendering without the link: {exc}", file=err)
            return 1
        # The link's state changed whatever the switches answered (a failed write is retried by
        # running the command's reconcile again: `push`), so the record follows it.
        failed.save(state, fabric)
        out.write(report.text())
        ok = ok and report.ok
        started = time.perf_counter()
    out.write(f"  state: {state}" + (" (removed: no failed links)" if not failed.links else "") + "\n")
    return 0 if ok else 1


def _failed_links(args: argparse.Namespace, fabric: Fabric, err: TextIO) -> Optional[FailedLinks]:
    """The failed links push/diff render without: ``--state FILE``, else the fabric's record in
    the state directory when there is one (a push must not bring back a link fail-link took
    out); none with ``--ignore-state``.  None after an error."""
    if args.ignore_state:
        return FailedLinks([])
    _report_legacy_state(args, err)
    path = _state_path(args)
    try:
        failed = FailedLinks.load(path, fabric)
    except ValueError as exc:
        print(f"error: {exc}", file=err)
        return None
    if failed.links:
        print(f"note: {len(failed.links)} failed link(s) from {path}: "
              + ", ".join(f"{a}-{b}" for a, b in failed.links)
              + " (rendered without them; --ignore-state for the intact fabric)", file=err)
    return failed


def _program_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--program-json", help="device config (p4c-bm2-ss or p4sim compile output)")
    p.add_argument("--p4info", help="P4Info file that goes with --program-json")
    p.add_argument("--program", "--p4", dest="program", metavar="SOURCE.p4",
                   help=f"P4 source to compile for --target (default {STELLAR_P4.relative_to(REPO)}, "
                        f"or {STELLAR_TNA_P4.relative_to(REPO)} with --arch tna)")
    p.add_argument("--target", choices=("p4sim", "bmv2"), default="p4sim",
                   help="whose compiler builds --program: p4sim compile or p4c-bm2-ss (default p4sim)")
    p.add_argument("--arch", choices=("v1model", "tna"), default="v1model",
                   help="the program's architecture; tna: p4src/tna/stellar.p4 compiled for Tofino-1, "
                        "with the entries rendered for it (p4sim only)")
    p.add_argument("--build-dir", help="keep the compiled files here (default: a temporary directory)")
    p.add_argument("-I", "--include", action="append", help="include dir for --program (default p4src)")


DIFF_NOTATION = ("+N ~N -N: table entries (and meter, register, clone-session cells) the switch lacks and "
                 "a push inserts, holds with other actions or values and a push modifies, holds but "
                 "should not and a push deletes; lines below start with the same sign")


def _state_options(p: argparse.ArgumentParser, writes: bool = False) -> None:
    p.add_argument("--state", metavar="FILE",
                   help="the failed-links record (default: STATE_DIR/<fabric stem>.failed-links.json)"
                        + ("; successive failures compose through it" if writes else ""))
    p.add_argument("--state-dir", metavar="DIR",
                   help="directory of run-time state (default $STELLAR_STATE_DIR, else build/state under the "
                        "working directory; never the fabrics/ directory)")
    if not writes:
        p.add_argument("--ignore-state", action="store_true",
                       help="render the intact fabric from the YAML, ignoring the failed links recorded")


def add_commands(sub: Any) -> None:
    """Register diff, push, stats and fail-link on stellarctl's subparsers."""
    p = sub.add_parser("diff",
                       description="Read every switch and show what a push would change, without writing. "
                                   + DIFF_NOTATION + ".")
    p.add_argument("fabric", help="fabric YAML file")
    p.add_argument("--switch", action="append", help="only this switch (repeatable)")
    _program_options(p)
    p.add_argument("--election-id", type=int, default=1, help="election id (low 64 bits; default 1)")
    _state_options(p)
    p.set_defaults(func=cmd_diff)

    p = sub.add_parser("push",
                       description="Push the pipeline where a switch does not run it, then reconcile each "
                                   "switch (read, diff, write) with the entries rendered from the fabric, "
                                   "without the links fail-link recorded as failed. " + DIFF_NOTATION + ".")
    p.add_argument("fabric", help="fabric YAML file")
    p.add_argument("--switch", action="append", help="only this switch (repeatable)")
    _program_options(p)
    p.add_argument("--no-pipeline", action="store_true", help="do not push a pipeline; use the switch's P4Info")
    p.add_argument("--concurrency", type=int, default=16, help="switches configured at once (default 16)")
    p.add_argument("--batch-size", type=int, default=256, help="updates per Write request (default 256)")
    p.add_argument("--election-id", type=int, default=1, help="election id (low 64 bits; default 1)")
    p.add_argument("-v", "--verbose", action="store_true", help="list every change written")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="print nothing on success (no progress, no table); failures still go to stderr")
    _state_options(p)
    p.set_defaults(func=cmd_push)

    p = sub.add_parser("stats", description="per-port, per-queue and per-reason counters of the switches, and the "
                                             "gray links (fabric links that lose frames silently)")
    p.add_argument("fabric", help="fabric YAML file")
    p.add_argument("--switch", action="append", help="only this switch (repeatable)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--election-id", type=int, default=1, help="election id (low 64 bits; default 1)")
    p.add_argument("--arch", choices=archnames.ARCHES, default="v1model",
                   help="the program's counter names (tna: p4src/tna/stellar.p4's)")
    p.set_defaults(func=cmd_stats)

    p = sub.add_parser("fail-link",
                       description="Mark a link's two ports down and re-push the path sets without it and "
                                   "without every link recorded as failed before; --restore brings one link "
                                   "back, --restore --all every one.  A leaf left without a path to another "
                                   "leaf is reported as partitioned, with what it still reaches.")
    p.add_argument("fabric", help="fabric YAML file")
    p.add_argument("a", nargs="?", help="switch at one end")
    p.add_argument("b", nargs="?", help="switch at the other end")
    p.add_argument("--election-id", type=int, default=1, help="election id (low 64 bits; default 1)")
    p.add_argument("--restore", action="store_true", help="the link is back: ports up, path sets with it")
    p.add_argument("--all", action="store_true", help="with --restore: every recorded link, last failed first")
    _state_options(p, writes=True)
    p.add_argument("--arch", choices=archnames.ARCHES, default="v1model",
                   help="the program's tables (tna: groups, the failover.alive register)")
    p.set_defaults(func=cmd_fail_link)
