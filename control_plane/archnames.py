"""The one place that knows which P4Info names each Stellar program uses for what.

The controller, ``stellarctl stats/watch/fail-link`` and the demo ask *what* they want (the
queue-delay histogram, the path-change counter, where congestion levels go, how liveness is
kept) and this module answers per architecture, so the rest of the control plane carries no
``if arch == "tna"`` name tables of its own.  The names are the contracts' (p4src/CONTRACT.md
§5 for v1model, §9 for TNA; ``contract.py`` holds the tables the render writes):

* v1model (p4src/v1model/stellar.p4): congestion levels are the ``levelN`` parameters of the
  rendered ``routing.path_set`` entries (16 bits, µs-equivalents); liveness is the eight
  ``failover.liveness0..7`` tables, MODIFYed port_down/port_up.
* TNA (p4src/tna/stellar.p4, bf-p4c's names with the pipe's ``pipe.`` prefix): levels are the
  ``dre_base.levels`` entries, one per group with ``l0..l7`` (8 bits; added to the DRE score);
  liveness is the ``failover.alive`` register (per group, bit k = member k up), which the data
  plane clears on a port-down packet and the controller sets back.

Counters that one program has and the other does not are ``None``; readers skip them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from . import contract

@dataclass(frozen=True)
class ArchNames:
    """P4Info names (and the few encodings that go with them) of one Stellar program."""

    arch: str
    # congestion map: per-port queue-delay histogram, index port * 16 + bucket (packets)
    qdelay_hist: str
    # stats counters (packets, or packets and bytes); None: the program has no such counter
    tx_port: str
    ecn_marks: str
    path_changes: str
    drops: str
    malformed: str
    rx_port: Optional[str] = None
    tx_queue: Optional[str] = None
    reorder_per_port: Optional[str] = None
    reorder_total_counter: Optional[str] = None   # one cell: every PSN regression seen
    reorder_total_register: Optional[str] = None
    elephant_detections: Optional[str] = None     # v1model: index 0 sketch, 1 hint
    elephant_packets: Optional[str] = None        # TNA: packets by elephant bit (index 1 = elephant)
    class_rx: Optional[str] = None
    tenant_yellow: Optional[str] = None
    tenant_red: Optional[str] = None
    # the data plane's loss signal: retransmissions per (destination leaf id << 3 | path), where a
    # path is a member position of the routing path set (v1model) or an uplink index (TNA)
    retransmits: Optional[str] = None
    retransmit_path: str = "position"             # "position" (v1model) | "uplink" (TNA)
    # controller state
    level_table: str = ""
    level_action: str = ""
    level_max: int = 0
    liveness: str = "tables"                      # "tables" (v1model) | "register" (TNA)
    alive_register: Optional[str] = None
    # TNA: per group {best member, its delay} that feedback packets keep (read only, for reports)
    group_best: Optional[str] = None
    # tables whose entries follow the topology: what a link failure or return changes
    topology_tables: frozenset = frozenset()
    alive_all: int = 0xFF                         # an alive cell with every member up

    @staticmethod
    def alive_mask(count: int) -> int:
        """A group's alive cell with its ``count`` members up and no bit for positions past
        them: a flow that still holds a member past the count (its group shrank in a re-plan)
        must see that member as down and move, not pick a member row that no longer exists."""
        return (1 << max(0, min(8, count))) - 1

    def counter_names(self) -> list[str]:
        """Every counter this program's stats read (for one Read request)."""
        return [n for n in (self.rx_port, self.tx_port, self.tx_queue, self.ecn_marks, self.reorder_per_port,
                            self.reorder_total_counter, self.path_changes, self.elephant_detections,
                            self.elephant_packets, self.drops, self.malformed, self.class_rx,
                            self.tenant_yellow, self.tenant_red) if n]


_I, _E = "StellarIngress", "StellarEgress"
_P = contract.TNA_PIPE

V1MODEL = ArchNames(
    arch="v1model",
    qdelay_hist=contract.QDELAY_HIST,
    rx_port=f"{_I}.telemetry.rx_port", tx_port=f"{_E}.telemetry.tx_port", tx_queue=f"{_E}.telemetry.tx_queue",
    ecn_marks=f"{_E}.ecn.marks", reorder_per_port=f"{_E}.reorder.events",
    reorder_total_register=f"{_E}.reorder.total",
    path_changes=f"{_I}.flowlet.path_changes", elephant_detections=f"{_I}.elephant.detections",
    drops=f"{_I}.telemetry.drops", malformed=f"{_I}.telemetry.malformed", class_rx=f"{_I}.telemetry.class_rx",
    tenant_yellow=f"{_I}.qos.tenant_yellow", tenant_red=f"{_I}.qos.tenant_red",
    retransmits=f"{_I}.feedback.retransmits",
    level_table=f"{_I}.routing.path_set", level_action=f"{_I}.routing.set_members", level_max=0xFFFF,
    liveness="tables",
    topology_tables=frozenset({f"{_I}.routing.lpm", f"{_I}.routing.path_set", f"{_I}.routing.reservation",
                               f"{_I}.elephant.hint"}),
)

TNA = ArchNames(
    arch="tna",
    qdelay_hist=f"{_P}{_E}.telemetry.qdelay_hist",
    rx_port=f"{_P}{_I}.telemetry.rx", tx_port=f"{_P}{_E}.telemetry.tx", ecn_marks=f"{_P}{_E}.ecn.marks",
    retransmits=f"{_P}{_E}.path_loss.retransmits", retransmit_path="uplink",
    reorder_total_counter=f"{_P}{_E}.reorder.regressions",
    path_changes=f"{_P}{_I}.telemetry.path_changes", elephant_packets=f"{_P}{_I}.telemetry.elephants",
    drops=f"{_P}{_I}.telemetry.drops", malformed=f"{_P}{_I}.telemetry.malformed",
    level_table=f"{_P}{_I}.dre_base.levels", level_action=f"{_I}.dre_base.set_levels",
    level_max=0x7F,  # written as 2 x level into 8 bits (p4src/CONTRACT.md section 9)
    liveness="register", alive_register=contract.TNA_ALIVE_REGISTER,
    group_best=f"{_P}{_I}.path_choice.group_best",
    topology_tables=frozenset({f"{_P}{_I}.routing.lpm", f"{_P}{_I}.routing.reservation",
                               f"{_P}{_I}.member_port.members", f"{_P}{_I}.path_choice.hash_member",
                               f"{_P}{_I}.failover.port_member", f"{_P}{_E}.path_feedback.arrival",
                               f"{_P}{_I}.elephant.hint",
                               f"{_P}{_I}.path_choice.port_member", f"{_P}{_E}.feedback.ports",
                               f"{_P}{_I}.dre_base.levels",
                               *(f"{_P}{_I}.dre.level{k}" for k in range(contract.TNA_MEMBERS))}),
)

_BY_ARCH = {"v1model": V1MODEL, "tna": TNA}
ARCHES = tuple(_BY_ARCH)


def names(arch: str) -> ArchNames:
    """The names of ``arch``'s program; ValueError for an unknown architecture."""
    try:
        return _BY_ARCH[arch]
    except KeyError:
        raise ValueError(f"unknown architecture {arch!r} (known: {', '.join(ARCHES)})") from None
