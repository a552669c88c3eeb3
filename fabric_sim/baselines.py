"""Entries for the baseline load balancers (``p4src/baselines/lb.p4``) from a fabric model.

Each baseline is configured as fairly as the literature configures it:

* ``ecmp``: 5-tuple hash with a per-seed salt (so the seeds draw different hash placements, as
  different fabrics or reboots would), one slot per next hop;
* ``wcmp``: the same hash, next hops repeated in proportion to their capacity (WCMP, Zhou et al.
  EuroSys'14);
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

MODE_ECMP, MODE_FLOWLET, MODE_SPRAY = 0, 1, 2
MAX_SLOTS = 16
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
    """The baseline called ``name`` (ecmp, wcmp, ecmp-em, spray, letflow-<µs>)."""
    if name == "ecmp":
        return Baseline(name, MODE_ECMP)
    if name == "wcmp":
        return Baseline(name, MODE_ECMP, weighted=True)
    if name == "ecmp-em":
        return Baseline(name, MODE_ECMP, elephant_mouse=True)
    if name == "spray":
        return Baseline(name, MODE_SPRAY)
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

    def _members(self, switch: str, dest_leaf: str) -> list[tuple[int, float]]:
        s = self.fabric.switches[switch]
        out = []
        for number, port in sorted(s.ports.items()):
            if port.peer_switch is None or (switch, number) in self.dead:
                continue
            if s.role == "spine":
                if port.peer_switch == dest_leaf:
                    out.append((number, self.cap(switch, number)))
            elif self.fabric.switches[port.peer_switch].role == "spine":
                if (port.peer_switch, dest_leaf) not in self.unreachable:
                    out.append((number, self.cap(switch, number)))
        return out

    def install(self) -> None:
        sp = self.spec
        for name, s in self.fabric.switches.items():
            sw = self.sim.switch(name)
            sw.set_default_action("LbIngress.lb_config", "LbIngress.configure", {
                "kmin": ECN_KMIN_PACKETS, "kmax": ECN_KMAX_PACKETS, "pmax256": ECN_PMAX256,
                "em_threshold": EM_THRESHOLD_BYTES if sp.elephant_mouse else 0,
                "em_window_us": EM_IDLE_US})
            gid = 1
            for leaf in sorted(n for n, x in self.fabric.switches.items() if x.role == "leaf"):
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
        slots = _slots(self._members(switch, leaf), self.spec.weighted)
        params = {"mode": self.spec.mode, "count": len(slots), "salt": self.salt,
                  "timeout_us": self.spec.timeout_us}
        (sw.insert_entry if insert else sw.modify_entry)("LbIngress.group", {"meta.group": gid},
                                                          "LbIngress.set_group", params)
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


def salt_for(seed: int) -> int:
    """The hash salt of a seed (a fixed mix, so every mode of one seed draws the same salt)."""
    return (seed * 0x9E3779B1 + 0x7F4A7C15) & 0xFFFFFFFF
