"""Entries for the baseline load balancers (``p4src/baselines/lb.p4``) from a fabric model.

Each baseline is configured as fairly as the literature configures it:

* ``ecmp``: 5-tuple hash with a per-seed salt (so the seeds draw different hash placements, as
  different fabrics or reboots would), one slot per next hop;
* ``wcmp``: the same hash, next hops repeated in proportion to the capacity of the whole path
  through them (WCMP, Zhou et al. EuroSys'14): a leaf weighs an uplink by min(uplink, the spine's
  link to the destination leaf), so a degraded spine downlink lowers the weight at every leaf,
  not only at the leaf it is attached to;
* ``drill``: DRILL (Ghorbani et al., SIGCOMM'17), per packet, the shortest local queue among two
  random members and the last best (d=2, m=1);
* ``least``: least loaded at start: a flow's first packet takes the member whose port carries the
  least recent load (a DRE scaled by the path capacity), then the flow stays;
* ``conga`` / ``conga-T``: CONGA (Alizadeh et al., SIGCOMM'14): leaf-to-leaf congestion feedback in
  a shim header, flowlets with timeout T µs (default ``CONGA_TIMEOUT_US``);
* ``ecmp-em``: ECMP plus elephant/mouse queues (a flow past ``EM_THRESHOLD_BYTES`` since it was
  last idle moves to the lower-priority queue): separates the queueing effect from routing;
* ``letflow-T``: flowlet switching with timeout T µs and a uniformly random member at each gap
  (Vanini et al., NSDI'17);
* ``spray``: a random member for every packet (the throughput upper bound, ordering lower bound).

Failure handling is the same for every baseline, as deployed hardware does it: the switch that
owns a dead port removes it from its groups at once (local link-down handling); the other
switches learn about it only when the routing layer converges, ``reaction_us`` later, and then
stop using the spine that lost its link to the destination leaf.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

MODE_ECMP, MODE_FLOWLET, MODE_SPRAY, MODE_DRILL, MODE_LEAST, MODE_CONGA = 0, 1, 2, 3, 4, 5
ADAPTIVE = (MODE_DRILL, MODE_LEAST, MODE_CONGA)  # members come with the group entry (<= 8)
ADAPTIVE_MEMBERS = 8  # set_group8's p0..p7
NARROW_MEMBERS = 4  # set_group's p0..p3: every group of at most this many members uses it
MAX_SLOTS = 16
CONGA_TIMEOUT_US = 100  # the flowlet timeout ConWeave's evaluation runs LetFlow at
DRE_SHIFT = 7  # DRE half-life 2^7 = 128 µs (CONGA: a time constant of about 160 µs)
SCALE_REF_GBPS = 100.0  # a DRE scale of 65536 means a 100G port
EM_THRESHOLD_BYTES = 100_000  # ~24 packets of 4 KB: a message bigger than this is an elephant
EM_IDLE_US = 500  # idle this long and a flow is a mouse again (its old packets have drained)
# ECN on every baseline: DCQCN's common RED ramp on the queue length at enqueue -- no marks up to
# Kmin, probability rising linearly to Pmax at Kmax, every packet from Kmax on.  In 4 KB frames:
# Kmin 25 (100 KB), Kmax 100 (400 KB), Pmax 51/256 (0.2).  ``stellar-static-ecn`` uses the same.
ECN_KMIN_PACKETS = 25
ECN_KMAX_PACKETS = 100
ECN_PMAX256 = 51


@dataclass(frozen=True)
class Baseline:
    name: str
    mode: int
    weighted: bool = False
    timeout_us: int = 0
    elephant_mouse: bool = False


def baseline(name: str) -> Baseline:
    """The baseline called ``name`` (ecmp, wcmp, ecmp-em, spray, letflow-<µs>, drill, least,
    conga[-<µs>])."""
    if name == "ecmp":
        return Baseline(name, MODE_ECMP)
    if name == "wcmp":
        return Baseline(name, MODE_ECMP, weighted=True)
    if name == "ecmp-em":
        return Baseline(name, MODE_ECMP, elephant_mouse=True)
    if name == "spray":
        return Baseline(name, MODE_SPRAY)
    if name == "drill":
        return Baseline(name, MODE_DRILL)
    if name == "least":
        return Baseline(name, MODE_LEAST)
    if name == "conga" or name.startswith("conga-"):
        return Baseline(name, MODE_CONGA, timeout_us=int(name.split("-", 1)[1]) if "-" in name else CONGA_TIMEOUT_US)
    if name.startswith("letflow-"):
        return Baseline(name, MODE_FLOWLET, timeout_us=int(name.split("-", 1)[1]))
    raise ValueError(f"unknown baseline {name!r}")


def _slots(members: list[tuple[int, float]], weighted: bool) -> list[int]:
    """Member slots of one group: each port once (ECMP), or repeated in proportion to its
    capacity (WCMP, at most MAX_SLOTS slots; the smallest live member keeps at least one)."""
    members = [(p, c) for p, c in members if c > 0]
    if not members:
        return []
    if not weighted:
        return [p for p, _ in members]
    top = max(c for _, c in members)
    per = max(1, MAX_SLOTS // len(members))
    slots = []
    for p, c in members:
        slots += [p] * max(1, round(per * c / top))
    return slots[:MAX_SLOTS]


class BaselineFabric:
    """Writes and maintains a baseline's entries on every switch of a ``SimFabric``."""

    def __init__(self, sim, fabric, spec: Baseline, salt: int, capacity: Optional[dict] = None) -> None:
        self.sim, self.fabric, self.spec, self.salt = sim, fabric, spec, salt & 0xFFFFFFFF
        # (switch, port) -> capacity seen by WCMP (a degraded link is known to the operator).
        self.capacity = dict(capacity or {})
        self.dead: set[tuple[str, int]] = set()
        self.unreachable: set[tuple[str, str]] = set()  # (spine, leaf) pairs routing withdrew
        self.groups: dict[tuple[str, str], int] = {}  # (switch, destination leaf) -> group id

    def cap(self, switch: str, port: int) -> float:
        return self.capacity.get((switch, port), self.fabric.switches[switch].ports[port].capacity_gbps)

    def _members(self, switch: str, dest_leaf: str) -> list[tuple[int, float, float]]:
        """(port, its capacity, the capacity of the whole path to ``dest_leaf`` through it)."""
        s = self.fabric.switches[switch]
        out = []
        for number, port in sorted(s.ports.items()):
            if port.peer_switch is None or (switch, number) in self.dead:
                continue
            here = self.cap(switch, number)
            if s.role == "spine":
                if port.peer_switch == dest_leaf:
                    out.append((number, here, here))
            elif self.fabric.switches[port.peer_switch].role == "spine":
                if (port.peer_switch, dest_leaf) not in self.unreachable:
                    out.append((number, here, min(here, self._downlink(port.peer_switch, dest_leaf))))
        return out

    def _downlink(self, spine: str, leaf: str) -> float:
        """The capacity of ``spine``'s (live) links to ``leaf``, taken together."""
        return sum(self.cap(spine, n) for n, p in self.fabric.switches[spine].ports.items()
                   if p.peer_switch == leaf and (spine, n) not in self.dead)

    def install(self) -> None:
        sp = self.spec
        leaves = sorted(n for n, x in self.fabric.switches.items() if x.role == "leaf")
        self.leaf_ids = {leaf: i + 1 for i, leaf in enumerate(leaves)}  # 0: not a leaf
        for name, s in self.fabric.switches.items():
            sw = self.sim.switch(name)
            sw.set_default_action("LbIngress.lb_config", "LbIngress.configure", {
                "kmin": ECN_KMIN_PACKETS, "kmax": ECN_KMAX_PACKETS, "pmax256": ECN_PMAX256,
                "em_threshold": EM_THRESHOLD_BYTES if sp.elephant_mouse else 0,
                "em_window_us": EM_IDLE_US, "dre_shift": DRE_SHIFT, "leaf_id": self.leaf_ids.get(name, 0)})
            gid = 1
            for leaf in leaves:
                dest = self.fabric.switches[leaf]
                if leaf == name:
                    for h in self.fabric.hosts.values():
                        if h.leaf == name:
                            sw.insert_entry("LbIngress.route", {"hdr.ipv4.dst_addr": (str(h.ip), 32)},
                                            "LbIngress.to_port", {"port": h.port})
                    continue
                self.groups[(name, leaf)] = gid
                sw.insert_entry("LbIngress.route",
                                {"hdr.ipv4.dst_addr": (str(dest.subnet.network_address), dest.subnet.prefixlen)},
                                "LbIngress.to_group", {"group": gid})
                self._write_group(name, leaf, insert=True)
                gid += 1

    def _write_group(self, switch: str, leaf: str, insert: bool = False) -> None:
        sw = self.sim.switch(switch)
        gid = self.groups[(switch, leaf)]
        members = self._members(switch, leaf)
        slots = _slots([(p, path) for p, _, path in members], self.spec.weighted)
        params = {"mode": self.spec.mode, "count": len(slots), "salt": self.salt,
                  "timeout_us": self.spec.timeout_us, "dst_leaf": self.leaf_ids[leaf]}
        params.update(_adaptive_params(members, self.spec.mode))
        if self.spec.mode in ADAPTIVE:
            params["count"] = len(members)
        (sw.insert_entry if insert else sw.modify_entry)("LbIngress.group", {"meta.group": gid},
                                                          group_action(params), params)
        for slot in range(MAX_SLOTS):
            match = {"meta.group": gid, "meta.slot": slot}
            if slot < len(slots):
                op = sw.insert_entry if insert or slot >= self._slot_count.get((switch, leaf), 0) else sw.modify_entry
                op("LbIngress.member", match, "LbIngress.set_member", {"port": slots[slot]})
            elif slot < self._slot_count.get((switch, leaf), 0):
                sw.delete_entry("LbIngress.member", match)
        self._slot_count[(switch, leaf)] = len(slots)

    @property
    def _slot_count(self) -> dict:
        if not hasattr(self, "_counts"):
            self._counts: dict[tuple[str, str], int] = {}
        return self._counts

    # ---- failures
    def local_link_down(self, ports: Iterable) -> None:
        """The switches owning ``ports`` remove them from their groups (at once)."""
        touched = set()
        for ref in ports:
            self.dead.add((ref.switch, ref.port))
            touched.add(ref.switch)
        for (switch, leaf) in list(self.groups):
            if switch in touched:
                self._write_group(switch, leaf)

    def routing_converged(self, spine: str, leaf: str) -> None:
        """Routing withdraws ``leaf`` behind ``spine`` (the spine lost its link to it): every
        other leaf stops sending traffic for ``leaf`` through ``spine``."""
        self.unreachable.add((spine, leaf))
        for (switch, dest) in list(self.groups):
            if dest == leaf and self.fabric.switches[switch].role == "leaf":
                self._write_group(switch, dest)

    def counter(self, name: str, index: int = 0) -> int:
        return sum(self.sim.switch(s).counter_read(name, index)[0] for s in self.fabric.switches)


def _adaptive_params(members: list[tuple[int, float, float]], mode: int) -> dict:
    """The group entry's own member list (p0..p3 for ``set_group``, p0..p7 for ``set_group8``
    when an adaptive group has more than ``NARROW_MEMBERS``) and rate scales (s0..s3 / s0..s7)
    for the adaptive modes: CONGA scales its local DRE by the port's rate (the path's far links
    report through feedback), least-loaded by the whole path's capacity (what WCMP weighs by)."""
    if mode in ADAPTIVE and len(members) > ADAPTIVE_MEMBERS:
        raise ValueError(f"adaptive baselines take at most {ADAPTIVE_MEMBERS} members, got {len(members)}")
    wide = mode in ADAPTIVE and len(members) > NARROW_MEMBERS
    out = {}
    for i in range(ADAPTIVE_MEMBERS if wide else NARROW_MEMBERS):
        port, here, path = members[i] if i < len(members) and mode in ADAPTIVE else (0, 0.0, 0.0)
        gbps = here if mode == MODE_CONGA else path
        out[f"p{i}"] = port
        out[f"s{i}"] = round(65536 * SCALE_REF_GBPS / gbps) if gbps > 0 else 0
    return out


def group_action(params: dict) -> str:
    """The group table's action for ``params``: ``set_group8`` when they name members past the
    fourth, else ``set_group`` (so every group of at most 4 members is written as it always was)."""
    return "LbIngress.set_group8" if "p4" in params else "LbIngress.set_group"


def salt_for(seed: int) -> int:
    """The hash salt of a seed (a fixed mix, so every mode of one seed draws the same salt)."""
    return (seed * 0x9E3779B1 + 0x7F4A7C15) & 0xFFFFFFFF
