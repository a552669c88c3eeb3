"""A Stellar leaf on p4sim's Tofino pipe (p4src/tna/stellar.p4), set up as a controller would.

    port 1  host 10.0.1.1          group 11 = {1}
    port 2  uplink to spine 1  \\
    port 3  uplink to spine 2  /   10.0.2.0/24 -> group 1 = {member 0: port 2, member 1: port 3}
    port 68 recirculation / packet generator (feedback packets, port-down packets)

Uplinks report their queue delay to ingress (feedback.ports); mirror session 1 sends the copies
to port 68, truncated to 64 bytes.  The names are the program's P4Info names.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from scapy.all import IP, TCP, UDP, Ether, Raw, raw
from scapy.contrib.roce import BTH

import p4sim
from control_plane.contract import TNA_DRE_SCORE_SCALE, TNA_PROFILES

REPO = Path(__file__).resolve().parents[2]
STELLAR_TNA = REPO / "p4src" / "tna" / "stellar.p4"
ING, EGR = "StellarIngress", "StellarEgress"
UPLINKS = {0: 2, 1: 3}  # member -> port
GROUP = 1
CHANGE_NEW, CHANGE_GAP, CHANGE_DRAIN, CHANGE_FAILOVER = 0, 1, 2, 3
DROP_MALFORMED, DROP_TTL_EXPIRED, DROP_NO_ROUTE, DROP_TENANT_RED, DROP_NOT_IPV4 = 1, 3, 4, 7, 8
ECN_NOT_ECT, ECN_ECT0, ECN_CE = 0, 2, 3
CLASS_ELASTIC, CLASS_CRITICAL = 1, 2

_PROGRAMS: dict[str, p4sim.Program] = {}


def program(target: int = 1, no_dre: bool = False) -> p4sim.Program:
    """The program for Tofino ``target``; ``no_dre``: the profile without the per-packet DRE
    (STELLAR_NO_DRE, the one that is sized for Tofino-1: p4src/tna/include/define.p4)."""
    defines = {"__TARGET_TOFINO__": str(target), **TNA_PROFILES["no-dre" if no_dre else "full"]}
    key = repr(sorted(defines.items()))
    if key not in _PROGRAMS:
        _PROGRAMS[key] = p4sim.compile(str(STELLAR_TNA), defines=defines)
    return _PROGRAMS[key]


# (target, no_dre) for the tests that run on every profile; ids name them
PROFILES = {"tofino": (1, False), "tofino2": (2, False), "tofino-no-dre": (1, True)}


def roce(src: str, dst: str, qp: int, psn: int, *, ecn: int = ECN_ECT0, dscp: int = 26,
         payload: int = 64, ttl: int = 64, opcode: int = 4) -> bytes:
    """A RoCEv2 packet; ``opcode`` the BTH opcode (4: RC SEND only)."""
    return raw(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:fe") /
               IP(src=src, dst=dst, tos=(dscp << 2) | ecn, ttl=ttl) /
               UDP(sport=49152, dport=4791) / BTH(opcode=opcode, dqpn=qp, psn=psn) /
               Raw(b"\x00" * payload))


def udp(src: str, dst: str, sport: int = 1000, dport: int = 2000) -> bytes:
    return raw(Ether() / IP(src=src, dst=dst) / UDP(sport=sport, dport=dport) / Raw(b"\x00" * 32))


class TnaLeaf:
    def __init__(self, target: int = 1, flowlet_timeout_ns: int = 200_000,
                 elephant_bytes: int = 1 << 31, feedback: bool = True,
                 feedback_interval_ns: int = 0, drain: bool = True, dre: bool = True,
                 dre_delay_penalty: int = 16, drain_margin_ns: int = 0,
                 gap_drain: bool = True, measured: int = 0xFF, no_dre: bool = False,
                 drain_any: bool = False, move_guards: int = 15,
                 prog: Optional[p4sim.Program] = None, backend: Optional[str] = None) -> None:
        """``measured``: dre_base.levels' bitmap of members whose controller level was measured
        (the program's default, no entry, is none: no gap or drain move off any member); the
        leaf is set up as after the controller's first poll unless a test says otherwise.
        ``prog``: another build of the program (a negative control's variant) instead;
        ``backend``: p4sim's backend (default: $P4SIM_BACKEND, else the reference)."""
        self.sw = p4sim.Switch(prog or program(target, no_dre), priority_queues=8, backend=backend)
        self._probe_groups: set[int] = set()
        sw = self.sw
        sw.set_default_action(f"{ING}.params", f"{ING}.set_params",
                              {"flowlet_timeout": flowlet_timeout_ns, "drain": int(drain),
                               "elephant_threshold": elephant_bytes, "dre_choice": int(dre),
                               "dre_delay_penalty": TNA_DRE_SCORE_SCALE * dre_delay_penalty,  # written x16
                               "drain_margin": drain_margin_ns,
                               "gap_needs_drain": int(gap_drain), "drain_any_flows": int(drain_any),
                               "move_guards": move_guards})
        sw.set_default_action(f"{ING}.dre_base.levels", f"{ING}.dre_base.set_levels",
                              {**{f"l{i}": 0 for i in range(8)}, "measured": measured})
        sw.insert_entry(f"{ING}.routing.lpm", {"hdr.ipv4.dst_addr": (0x0A000200, 24)},
                        f"{ING}.routing.set_group", {"group": GROUP, "count": 2, "prior": 0})
        sw.insert_entry(f"{ING}.routing.lpm", {"hdr.ipv4.dst_addr": (0x0A000101, 32)},
                        f"{ING}.routing.set_group", {"group": 11, "count": 1, "prior": 0})
        sw.insert_entry(f"{ING}.member_port.members", {"meta.group": 11, "meta.chosen": 0},
                        f"{ING}.member_port.set_port", {"port": 1})
        for i in range(8):  # hash member: round-robin over the members
            sw.insert_entry(f"{ING}.path_choice.hash_member",
                            {"meta.group": GROUP, "meta.flow_hash[2:0]": i},
                            f"{ING}.path_choice.set_hashed", {"member": i % 2})
            sw.insert_entry(f"{ING}.path_choice.hash_member",
                            {"meta.group": 11, "meta.flow_hash[2:0]": i},
                            f"{ING}.path_choice.set_hashed", {"member": 0})
        for m, port in UPLINKS.items():
            sw.insert_entry(f"{ING}.member_port.members", {"meta.group": GROUP, "meta.chosen": m},
                            f"{ING}.member_port.set_port", {"port": port})
            sw.insert_entry(f"{ING}.path_choice.port_member", {"hdr.feedback.port": port},
                            f"{ING}.path_choice.set_member", {"group": GROUP, "member": m})
            sw.insert_entry(f"{ING}.failover.port_member", {"hdr.port_down.port_num": port},
                            f"{ING}.failover.set_member",
                            {"group": GROUP, "member": m, "clear_mask": 0xFF ^ (1 << m)})
            if feedback:
                sw.insert_entry(f"{EGR}.feedback.ports", {"eg_intr_md.egress_port": port},
                                f"{EGR}.feedback.report", {"interval_ns": feedback_interval_ns})
        sw.set_clone_session(1, [68], truncate_bytes=64)
        for elephant in (0, 1):
            sw.insert_entry(f"{ING}.queueing.queue_map",
                            {"meta.traffic_class": CLASS_ELASTIC, "meta.elephant": elephant},
                            f"{ING}.queueing.set_queue", {"qid": 4 - elephant})
        sw.insert_entry(f"{ING}.qos.dscp_class", {"hdr.ipv4.dscp": 46},
                        f"{ING}.qos.set_class", {"traffic_class": CLASS_CRITICAL})
        sw.insert_entry(f"{ING}.queueing.queue_map",
                        {"meta.traffic_class": CLASS_CRITICAL, "meta.elephant": 0},
                        f"{ING}.queueing.set_queue", {"qid": 6})
        sw.enable_pktgen_port_down(1)

    # ------------------------------------------------------------------ traffic
    def send(self, pkt: bytes, port: int = 1) -> None:
        self.sw.send(port, pkt)

    def out(self) -> list[tuple[int, bytes]]:
        return self.sw.take_output()

    def flow_port(self, qp: int, src: str = "10.0.1.1", dst: str = "10.0.2.9") -> int:
        self.send(roce(src, dst, qp, 0))
        (port, _), = self.out()
        return port

    def congest(self, port: int, delay_us: float) -> None:
        """Make egress of ``port`` see ``delay_us`` of queue delay once (and report it): a
        packet queued behind another on a port limited to 1/delay packets per second."""
        sw = self.sw
        sw.set_queue_rate(1e6 / delay_us, port=port)
        if (200 + port) not in self._probe_groups:
            self._probe_groups.add(200 + port)
            sw.insert_entry(f"{ING}.routing.lpm", {"hdr.ipv4.dst_addr": (0x0AFF0000 | port, 32)},
                            f"{ING}.routing.set_group", {"group": 200 + port, "count": 1, "prior": 0})
            sw.insert_entry(f"{ING}.member_port.members", {"meta.group": 200 + port, "meta.chosen": 0},
                            f"{ING}.member_port.set_port", {"port": port})
            for i in range(8):
                sw.insert_entry(f"{ING}.path_choice.hash_member",
                                {"meta.group": 200 + port, "meta.flow_hash[2:0]": i},
                                f"{ING}.path_choice.set_hashed", {"member": 0})
        probe = udp("10.0.1.1", f"10.255.0.{port}")
        self.send(probe)
        self.send(probe)
        sw.advance(2 * delay_us + 1)
        sw.set_queue_rate(0, port=port)
        self.out()

    def counter(self, name: str, index: int) -> int:
        return self.sw.counter_read(name, index)[0]

    def best(self) -> int:
        return self.sw.register_read(f"{ING}.path_choice.group_best", GROUP) >> 16
