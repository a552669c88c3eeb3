"""Gray links: fabric links that silently lose frames, named from counters.

A gray link stays up and reports nothing: its ports are fine, no drop reason is counted, and only
the traffic over it suffers.  Two counter readings show it, and this module turns them into a
named link for ``stellarctl stats`` and ``stellarctl watch``:

* **frames lost on the wire**: what the sending end counted out of the port (``tx``, egress) minus
  what the far end counted in (``rx``, ingress).  Frames a switch drops itself (a full queue, a
  policer, a bad header) were counted in but never out, so they do not show here: the
  difference is the wire's, per directed link.  The two ends are not read at the same instant,
  so frames in flight between the reads count as lost; a link is named only when its loss is
  at least ``min_frames`` frames and ``min_fraction`` of what it sent.
* **the data plane's loss signal**: the retransmitted data packets a source leaf sent on each
  (destination leaf, path), the counter beside the register its suspect-path rule keeps
  (v1model ``feedback.retransmits``, TNA ``path_loss.retransmits``; p4src/CONTRACT.md).  They
  are charged to both fabric links of the path they went on (the leaf's uplink and the spine's
  downlink to the destination), and shown beside the link they name.  A retransmission says a
  path lost something, not which link or whether a queue dropped it, so it corroborates; the
  counters of the two ends name the link.

Counters only (P4Runtime on BMv2 reads counters, not registers).  Pure functions of the model
and the readings, plus a reader that keeps the previous readings for deltas (``watch``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional

from . import archnames, feedback
from .model import Fabric
from .plan import SwitchPlan, plan_fabric

Link = tuple[str, int]                 # (switch, egress port): one direction of a fabric link
MIN_FRAMES = 3
MIN_FRACTION = 0.001                    # 0.1 %: a 1 % gray link is ten times above it


@dataclass
class PathLoss:
    """Retransmissions a source leaf sent towards ``dest`` on the path via ``spine``."""

    src: str
    dest: str
    spine: str
    retransmits: int


@dataclass
class GrayLink:
    """One direction of a link that lost frames on the wire."""

    switch: str
    port: int
    peer: str
    peer_port: int
    sent: int
    lost: int
    paths: list[PathLoss] = field(default_factory=list)

    @property
    def fraction(self) -> float:
        return self.lost / self.sent if self.sent else 0.0

    @property
    def retransmits(self) -> int:
        return sum(p.retransmits for p in self.paths)


def fabric_links(fabric: Fabric) -> dict[Link, Link]:
    """Every directed switch-to-switch link: (switch, port) -> (peer, peer port)."""
    return {(name, number): (port.peer_switch, port.peer_port)
            for name, sw in fabric.switches.items() for number, port in sw.ports.items()
            if port.peer_switch is not None and port.peer_port is not None}


def wire_losses(fabric: Fabric, tx: Mapping[Link, int], rx: Mapping[Link, int]) -> dict[Link, tuple[int, int]]:
    """{directed link: (frames sent, frames lost on the wire)} for the links both of whose ends
    were read (a reading that went backwards, or a receiver ahead of its sender, is 0 lost)."""
    out = {}
    for link, far in fabric_links(fabric).items():
        if link in tx and far in rx:
            out[link] = (tx[link], max(0, tx[link] - rx[far]))
    return out


def path_uplink(fabric: Fabric, plans: Mapping[str, SwitchPlan], src: str, dest: str, path: int,
                arch: str) -> Optional[int]:
    """The uplink port of a source leaf's ``path`` towards leaf ``dest``: on v1model the path is a
    position in the leaf's routing path set to ``dest`` (its member), on TNA the index of the
    uplink in the leaf's uplink order (path_feedback.port_kind).  None where there is none.

    The v1model position is read against the routing set of the intact fabric: a job's reserved
    set, or a set a failover re-planned, numbers its members otherwise, and the data plane's
    registers share that index just the same; the count is then charged to the routing set's
    member at that position (the wire counters, which name the link, are not affected)."""
    sw = fabric.switches[src]
    if archnames.names(arch).retransmit_path == "uplink":
        uplinks = sw.uplinks
        return uplinks[path].number if path < len(uplinks) else None
    plan = plans.get(src)
    subnet = fabric.switches[dest].subnet
    route = next((r for r in plan.routes if r.prefix == subnet), None) if plan is not None else None
    ps = next((p for p in plan.path_sets if p.id == route.path_set), None) if route is not None else None
    if ps is None or path >= len(ps.slots):
        return None
    return ps.slots[path].port


def path_losses(fabric: Fabric, retransmits: Mapping[str, Mapping[int, int]], arch: str,
                plans: Optional[Mapping[str, SwitchPlan]] = None) -> dict[Link, list[PathLoss]]:
    """The data plane's retransmission counts ({leaf: {dest id << 3 | path: packets}}) charged to
    the fabric links of each path: {directed link: [PathLoss]}."""
    plans = plans if plans is not None else plan_fabric(fabric, None)
    names = {i: n for n, i in feedback.leaf_ids(fabric).items()}
    out: dict[Link, list[PathLoss]] = {}
    for src, cells in retransmits.items():
        for index, count in sorted(cells.items()):
            dest = names.get(index >> 3)
            if not count or dest is None or dest == src or fabric.switches[src].role != "leaf":
                continue
            up = path_uplink(fabric, plans, src, dest, index & 7, arch)
            port = fabric.switches[src].ports.get(up) if up is not None else None
            if port is None or port.peer_switch is None:
                continue
            spine = port.peer_switch
            loss = PathLoss(src, dest, spine, count)
            out.setdefault((src, up), []).append(loss)
            down = next((p.number for p in fabric.switches[spine].ports.values() if p.peer_switch == dest), None)
            if down is not None:
                out.setdefault((spine, down), []).append(loss)
    return out


def gray_links(fabric: Fabric, tx: Mapping[Link, int], rx: Mapping[Link, int],
               retransmits: Mapping[str, Mapping[int, int]], arch: str = "v1model",
               plans: Optional[Mapping[str, SwitchPlan]] = None, min_frames: int = MIN_FRAMES,
               min_fraction: float = MIN_FRACTION) -> list[GrayLink]:
    """The directed links that lost at least ``min_frames`` frames and ``min_fraction`` of what
    they sent, worst first, each with the retransmissions on the paths over it."""
    paths = path_losses(fabric, retransmits, arch, plans)
    links = fabric_links(fabric)
    out = []
    for link, (sent, lost) in wire_losses(fabric, tx, rx).items():
        if lost >= min_frames and lost >= min_fraction * sent:
            peer, peer_port = links[link]
            out.append(GrayLink(link[0], link[1], peer, peer_port, sent, lost, paths.get(link, [])))
    return sorted(out, key=lambda g: (-g.fraction, g.switch, g.port))


def format_gray_links(links: list[GrayLink], checked: int) -> str:
    """The report: one line per gray link (switch:port -> peer:port, frames lost of sent, the
    retransmissions on the paths over it), or that none of the ``checked`` links lost frames."""
    if not links:
        return f"gray links: none ({checked} directed links checked: tx of one end = rx of the other)\n"
    lines = [f"gray links ({len(links)} of {checked} directed links lose frames on the wire; "
             "retransmissions: the data plane's loss signal on paths over the link)"]
    for g in links:
        paths = ", ".join(f"{p.src}->{p.dest} via {p.spine} {p.retransmits}"
                          for p in sorted(g.paths, key=lambda p: -p.retransmits)[:4])
        lines.append(f"  GRAY {g.switch}:{g.port} -> {g.peer}:{g.peer_port}  lost {g.lost} of {g.sent} frames "
                     f"({g.fraction:.2%})  retransmissions {g.retransmits}" + (f" ({paths})" if paths else ""))
    return "\n".join(lines) + "\n"


class GrayLinkReader:
    """Reads the counters gray links are named from, as deltas since the previous read (the
    first read: since the switches started), for ``stellarctl watch``."""

    def __init__(self, fabric: Fabric, arch: str = "v1model") -> None:
        self.fabric = fabric
        self.arch = arch
        self.names = archnames.names(arch)
        self.plans = plan_fabric(fabric, None)
        self._last: dict[tuple[str, str, int], int] = {}
        self.tx: dict[Link, int] = {}
        self.rx: dict[Link, int] = {}
        self.retransmits: dict[str, dict[int, int]] = {}

    def start(self) -> None:
        """A new refresh: forget the previous refresh's deltas (switches not read stay out)."""
        self.tx, self.rx, self.retransmits = {}, {}, {}

    def _delta(self, key: tuple[str, str, int], now: int) -> int:
        before = self._last.get(key, 0)
        self._last[key] = now
        return now - before if now >= before else now   # a reset counter starts over

    def read(self, name: str, ops) -> None:
        """One switch's tx/rx on its fabric ports and its retransmission cells."""
        n = self.names
        ports = [p.number for p in self.fabric.switches[name].ports.values() if p.peer_switch is not None]
        wanted: dict[str, Optional[list[int]]] = {c: ports for c in (n.tx_port, n.rx_port) if c}
        if n.retransmits and self.fabric.switches[name].role == "leaf":
            wanted[n.retransmits] = None      # every cell: a few thousand, mostly 0
        cells: dict[str, dict[int, tuple[int, int]]] = {}
        for counter, indexes in wanted.items():   # one counter a call: SwitchOps takes one index list
            try:
                cells.update(ops.read_counters([counter], indexes))
            except KeyError:
                pass   # a program without that counter (an older build): its links stay unchecked
        for counter, into in ((n.tx_port, self.tx), (n.rx_port, self.rx)):
            if counter in cells:
                for port in ports:
                    into[(name, port)] = self._delta((counter, name, port), cells[counter].get(port, (0, 0))[0])
        if n.retransmits in cells:
            self.retransmits[name] = {i: d for i, v in cells[n.retransmits].items()
                                      if (d := self._delta((n.retransmits, name, i), v[0]))}

    def report(self) -> str:
        links = gray_links(self.fabric, self.tx, self.rx, self.retransmits, self.arch, self.plans)
        return format_gray_links(links, len(wire_losses(self.fabric, self.tx, self.rx)))
