"""A Stellar leaf switch on p4sim, configured the way the control plane would (p4src/CONTRACT.md).

Topology of the test leaf (ports are v1model port numbers):

    port 1  host 10.0.1.1        (path set 11, one member)
    port 2  host 10.0.1.2        (path set 12, one member)
    port 3  uplink to spine 1  \
    port 4  uplink to spine 2  /  10.0.2.0/24 (remote leaf) -> path set 1 = {3, 4}

Tenants by source subnet: 10.0.1.0/25 -> tenant 1, 10.0.1.128/25 -> tenant 2.
Queues: the CONTRACT's recommended map for 8 strict-priority queues.

The helper methods speak P4Info names only, so a failing test reads like a control-plane action.
"""
from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from scapy.all import IP, TCP, UDP, Ether, Raw, raw
from scapy.contrib.roce import BTH

REPO = Path(__file__).resolve().parents[1]
STELLAR_P4 = REPO / "p4src" / "v1model" / "stellar.p4"

HOST_PORTS = {1: "10.0.1.1", 2: "10.0.1.2"}
UPLINKS = (3, 4)
REMOTE_SUBNET = ("10.0.2.0", 24)
UPLINK_PATH_SET = 1
PRIORITY_QUEUES = 8

# Numbering from p4src/CONTRACT.md section 1 (kept in one place for the tests).
CLASS_BACKGROUND, CLASS_ELASTIC, CLASS_CRITICAL, CLASS_CONTROL = 0, 1, 2, 3
QUEUE_MAP = {  # (class, elephant) -> queue
    (CLASS_CONTROL, 0): 7, (CLASS_CONTROL, 1): 7,
    (CLASS_CRITICAL, 0): 6, (CLASS_CRITICAL, 1): 5,
    (CLASS_ELASTIC, 0): 4, (CLASS_ELASTIC, 1): 3,
    (CLASS_BACKGROUND, 0): 2, (CLASS_BACKGROUND, 1): 1,
}
DSCP_CLASSES = {46: CLASS_CRITICAL, 48: CLASS_CONTROL, 8: CLASS_BACKGROUND, 26: CLASS_ELASTIC}

(CHANGE_NEW, CHANGE_GAP, CHANGE_DRAIN, CHANGE_FAILOVER, CHANGE_MEMBERSHIP, CHANGE_EXPLORE, CHANGE_SUSPECT,
 CHANGE_RESTART) = range(8)
DROP_MALFORMED, DROP_BAD_CHECKSUM, DROP_TTL_EXPIRED, DROP_NO_ROUTE = 1, 2, 3, 4
DROP_NO_PATH_SET, DROP_NO_LIVE_MEMBER, DROP_TENANT_RED, DROP_NOT_IPV4 = 5, 6, 7, 8
(MALFORMED_TRUNC_ETHERNET, MALFORMED_TRUNC_IPV4, MALFORMED_BAD_VERSION, MALFORMED_BAD_IHL,
 MALFORMED_TRUNC_UDP, MALFORMED_TRUNC_TCP, MALFORMED_TRUNC_BTH, MALFORMED_IPV4_OPTIONS,
 MALFORMED_OTHER) = range(1, 10)
ECN_NOT_ECT, ECN_ECT1, ECN_ECT0, ECN_CE = 0, 1, 2, 3

# Test-friendly switch parameters (config.params); every test states what it changes.
BASE_PARAMS: dict[str, int] = {
    "flowlet_timeout_us": 200,
    "drain_margin_us": 8,
    "hysteresis_us": 4,
    "gap_moves": 1,
    "drain_moves": 1,
    "qdelay_max_age_us": 200,
    "elephant_bytes": 1 << 31,      # sketch effectively off unless a test lowers it
    "elephant_window_us": 1000,
    "elephant_idle_us": 2000,
    "malformed_l4_forward": 0,
    "report_path_changes": 0,
    "order_guards": 15,             # every ordering guard on (ORDER_GUARD_* in define.p4)
    "dre_shift": 5,                 # utilisation estimator: halved every 32 us
    "util_weight": 1024,            # path-choice weights, 1024 = 1.0
    "qdelay_weight": 1024,
    "level_weight": 1024,
}
# How flows adapt after they started (config.adapt); every test states what it changes.
BASE_ADAPT: dict[str, int] = {
    "drain_any": 1,                 # drain moves for every tracked flow, not only elephants
    "move_guards": 15,              # MOVE_GUARD_* bits (define.p4)
    "explore_signals": 0,           # exploration off unless a test turns it on
    "explore_window_us": 200,
}
MOVE_GUARD_DRAIN_PROOF = 1
MOVE_POINT_RESTART = 2
# Bits of config.params order_guards (define.p4); a test clears one for its negative control.
GUARD_GAP_DRAIN, GUARD_TAKEOVER, GUARD_DEMOTION, GUARD_UNTRACKED = 1, 2, 4, 8
# ECN parameters (ecn.config); marking off by default in the tests that do not study it.
BASE_ECN: dict[str, int] = {
    "window_us": 100,
    "target_us": 4,
    "kmin_us": 4,
    "kmax_us": 32,
    "k_init_us": 16,
    "step_us": 2,
    "pmax": 13107,
    "idle_bytes": 625000,
    "adapt": 1,
}

ING = "StellarIngress"
EGR = "StellarEgress"


def mac_of(port: int) -> str:
    return f"02:00:00:00:00:{port:02x}"


def neighbour_mac(port: int) -> str:
    return f"02:00:00:00:01:{port:02x}"


@dataclass
class Departure:
    """One packet that left the switch, parsed."""

    port: int
    frame: bytes
    pkt: Any = field(repr=False)

    @property
    def psn(self) -> Optional[int]:
        return self.pkt[BTH].psn if BTH in self.pkt else None

    @property
    def qp(self) -> Optional[int]:
        return self.pkt[BTH].dqpn if BTH in self.pkt else None

    @property
    def ecn(self) -> int:
        return self.pkt[IP].tos & 3


# BTH opcodes (InfiniBand spec. vol. 1, table 38).
OP_SEND_ONLY, OP_WRITE_FIRST, OP_WRITE_MIDDLE, OP_WRITE_LAST, OP_WRITE_ONLY = 0x04, 0x06, 0x07, 0x08, 0x0A
OP_READ_REQUEST, OP_ACK, OP_CNP = 0x0C, 0x11, 0x81


def roce(src: str, dst: str, qp: int, psn: int, *, ecn: int = ECN_ECT0, dscp: int = 26,
         payload: int = 64, ttl: int = 64, sport: int = 49152, opcode: int = OP_SEND_ONLY) -> bytes:
    """A RoCEv2 RC packet, SEND-only unless ``opcode`` says otherwise (what a NIC would put on the
    wire, ICRC by Scapy)."""
    pkt = (Ether(src="02:00:00:00:09:09", dst="02:00:00:00:00:01")
           / IP(src=src, dst=dst, tos=(dscp << 2) | ecn, ttl=ttl)
           / UDP(sport=sport, dport=4791)
           / BTH(opcode=opcode, dqpn=qp, psn=psn & 0xFFFFFF)
           / Raw(b"\x00" * payload))
    return raw(pkt)


def udp(src: str, dst: str, sport: int = 1000, dport: int = 2000, *, ecn: int = 0,
        dscp: int = 0, payload: int = 64) -> bytes:
    return raw(Ether() / IP(src=src, dst=dst, tos=(dscp << 2) | ecn) / UDP(sport=sport, dport=dport)
               / Raw(b"\x00" * payload))


def tcp(src: str, dst: str, sport: int = 1000, dport: int = 2000, payload: int = 64) -> bytes:
    return raw(Ether() / IP(src=src, dst=dst) / TCP(sport=sport, dport=dport) / Raw(b"\x00" * payload))


def ip_checksum_ok(pkt) -> bool:
    """Recompute the IPv4 header checksum with Scapy and compare with the one on the wire."""
    ip = pkt[IP]
    wire = ip.chksum
    fresh = IP(raw(ip))
    fresh.chksum = None
    return IP(raw(fresh)).chksum == wire


class Leaf:
    """A p4sim switch running stellar.p4 with the test leaf's entries."""

    def __init__(self, p4sim_module, program, *, priority_queues: int = PRIORITY_QUEUES,
                 queue_map: bool = True) -> None:
        self.sw = p4sim_module.Switch(program, clock="virtual", priority_queues=priority_queues)
        self.params = dict(BASE_PARAMS)
        self.adapt = dict(BASE_ADAPT)
        self.ecn_default = dict(BASE_ECN)
        self._liveness: set[int] = set()
        self._install_base(queue_map)

    # ------------------------------------------------------------- configuration
    def _install_base(self, queue_map: bool) -> None:
        sw = self.sw
        self.set_params()
        self.set_adapt()
        self.set_ecn_default(enabled=False)
        self.set_ecn_floor(0)   # K's rate floor off unless a test studies it
        sw.insert_entry(f"{ING}.routing.lpm", {"hdr.ipv4.dst_addr": REMOTE_SUBNET},
                        f"{ING}.routing.set_path_set", {"path_set_id": UPLINK_PATH_SET})
        self.set_path_set(UPLINK_PATH_SET, UPLINKS)
        for port, ip in HOST_PORTS.items():
            sw.insert_entry(f"{ING}.routing.lpm", {"hdr.ipv4.dst_addr": (ip, 32)},
                            f"{ING}.routing.set_path_set", {"path_set_id": 10 + port})
            self.set_path_set(10 + port, [port])
        for port in (*HOST_PORTS, *UPLINKS):
            sw.insert_entry(f"{EGR}.rewrite.port_mac", {"standard_metadata.egress_port": port},
                            f"{EGR}.rewrite.set_macs",
                            {"src_mac": mac_of(port), "dst_mac": neighbour_mac(port)})
        for (cls, eleph), queue in (QUEUE_MAP.items() if queue_map else ()):
            sw.insert_entry(f"{ING}.queueing.queue_map",
                            {"meta.qos.traffic_class": cls, "meta.flow.elephant": eleph},
                            f"{ING}.queueing.set_queue", {"queue": queue})
        for dscp, cls in DSCP_CLASSES.items():
            sw.insert_entry(f"{ING}.qos.dscp_class", {"hdr.ipv4.dscp": dscp},
                            f"{ING}.qos.set_class", {"traffic_class": cls})
        sw.insert_entry(f"{ING}.qos.tenant", {"hdr.ipv4.src_addr": ("10.0.1.0", 25)},
                        f"{ING}.qos.set_tenant", {"tenant_id": 1})
        sw.insert_entry(f"{ING}.qos.tenant", {"hdr.ipv4.src_addr": ("10.0.1.128", 25)},
                        f"{ING}.qos.set_tenant", {"tenant_id": 2})

    def set_params(self, **changes: int) -> None:
        """Switch-wide parameters: one default-action MODIFY of the keyless config table."""
        unknown = set(changes) - set(BASE_PARAMS)
        assert not unknown, f"not a config.params parameter: {unknown}"
        self.params.update(changes)
        self.sw.set_default_action(f"{ING}.config.params", f"{ING}.config.set_params", dict(self.params))

    def set_adapt(self, **changes: int) -> None:
        """Adaptation parameters: one default-action MODIFY of the keyless config.adapt table."""
        unknown = set(changes) - set(BASE_ADAPT)
        assert not unknown, f"not a config.adapt parameter: {unknown}"
        self.adapt.update(changes)
        self.sw.set_default_action(f"{ING}.config.adapt", f"{ING}.config.set_adapt", dict(self.adapt))

    def set_ecn_default(self, enabled: bool = True, **changes: int) -> None:
        """ECN parameters of every port without its own entry."""
        self.ecn_default.update(changes)
        if enabled:
            self.sw.set_default_action(f"{EGR}.ecn.config", f"{EGR}.ecn.set_ecn_params",
                                       dict(self.ecn_default))
        else:
            self.sw.set_default_action(f"{EGR}.ecn.config", f"{EGR}.ecn.ecn_off")

    def set_ecn_floor(self, kfloor_bytes: int) -> None:
        """ecn.floor: K's floor as bytes at the queue's measured drain rate (0 = none)."""
        self.sw.set_default_action(f"{EGR}.ecn.floor", f"{EGR}.ecn.set_floor", {"kfloor_bytes": kfloor_bytes})

    def set_ecn_port(self, port: int, **changes: int) -> None:
        params = dict(BASE_ECN)
        params.update(changes)
        self.sw.insert_entry(f"{EGR}.ecn.config", {"standard_metadata.egress_port": port},
                             f"{EGR}.ecn.set_ecn_params", params)

    def set_path_set(self, path_set_id: int, ports: Sequence[int], levels: Sequence[int] = (),
                     *, ecmp: bool = False, modify: bool = False, measured: Optional[int] = None) -> None:
        """routing.path_set: members, controller congestion levels (us-equivalent), mode.
        ``measured``: bit i = level i comes from the controller's measurement; default every
        member, as after the controller's first poll (0 = as rendered for uplinks: unknown)."""
        assert 1 <= len(ports) <= 8
        params: dict[str, int] = {"count": len(ports), "ecmp": int(ecmp)}
        for i in range(8):
            params[f"port{i}"] = ports[i] if i < len(ports) else 0
            params[f"level{i}"] = levels[i] if i < len(levels) else 0
        params["measured"] = (1 << len(ports)) - 1 if measured is None else measured
        write = self.sw.modify_entry if modify else self.sw.insert_entry
        write(f"{ING}.routing.path_set", {"meta.route.path_set_id": path_set_id},
              f"{ING}.routing.set_members", params)

    def hint(self, action: str, src: str, dst: str, l4_id: int, priority: int = 10) -> None:
        """elephant.hint: force a flow to be an elephant ("hint_elephant") or a mouse."""
        full = 0xFFFFFFFF
        self.sw.insert_entry(
            f"{ING}.elephant.hint",
            {"hdr.ipv4.src_addr": (src, full), "hdr.ipv4.dst_addr": (dst, full),
             "meta.flow.l4_id": (l4_id, full)},
            f"{ING}.elephant.{action}", None, priority=priority)

    def port_down(self, port: int, down: bool = True) -> None:
        """The controller's liveness write: the port's entry in each member-position liveness
        table (failover.p4), inserted the first time, modified after that."""
        action = f"{ING}.failover.{'port_down' if down else 'port_up'}"
        for i in range(8):
            table, match = f"{ING}.failover.liveness{i}", {f"meta.route.port{i}": port}
            if port in self._liveness:
                self.sw.modify_entry(table, match, action, {})
            else:
                self.sw.insert_entry(table, match, action, {})
        self._liveness.add(port)

    # ------------------------------------------------------------------ traffic
    def send(self, port: int, frame: bytes) -> None:
        self.sw.send(port, frame)

    def advance(self, us: int) -> None:
        self.sw.advance(us)

    def drain_output(self, settle_us: int = 0) -> list[Departure]:
        """Advance the clock (to let queues empty) and parse everything that left, in order."""
        if settle_us:
            self.sw.advance(settle_us)
        out = []
        for port, frame in self.sw.take_output():
            out.append(Departure(port, bytes(frame), Ether(bytes(frame))))
        return out

    # ---------------------------------------------------------------- telemetry
    def counter(self, name: str, index: int) -> int:
        """Packets counted at `index` of counter `name` (a P4Info name)."""
        return self.sw.counter_read(name, index)[0]

    def register(self, name: str, index: int = 0) -> int:
        return self.sw.register_read(name, index)

    def drops(self, reason: int) -> int:
        return self.counter(f"{ING}.telemetry.drops", reason)

    def malformed(self, kind: int) -> int:
        return self.counter(f"{ING}.telemetry.malformed", kind)

    def path_changes(self, reason: int) -> int:
        return self.counter(f"{ING}.flowlet.path_changes", reason)

    def reorder_total(self) -> int:
        return self.register(f"{EGR}.reorder.total", 0)

    def tx_queue(self, port: int, queue: int) -> int:
        return self.counter(f"{EGR}.telemetry.tx_queue", port * 8 + queue)

    def ecn_marks(self, port: int) -> int:
        return self.counter(f"{EGR}.ecn.marks", port)


def psns_in_order(departures: Iterable[Departure], qp: int) -> list[int]:
    """PSNs of one QP in departure order (all ports merged)."""
    return [d.psn for d in departures if d.qp == qp]


def ip_int(text: str) -> int:
    return int(ipaddress.IPv4Address(text))
