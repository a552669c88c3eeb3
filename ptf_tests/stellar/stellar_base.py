"""A Stellar leaf over P4Runtime: the test topology, packet builders and configuration helpers.

Every test starts from the same leaf, configured only through P4Runtime writes named as in
p4src/CONTRACT.md (so the suite runs unchanged against BMv2), and every write is undone after
the test by the base class's autocleanup:

    port 1  host 10.0.1.1                 10.0.1.1/32 -> path set 11 = {1}
    port 2  uplink to spine A  \\
    port 3  uplink to spine B  /          10.0.2.0/24 -> path set 1 = {2, 3}
    port 4  single-uplink tests           10.0.4.0/24 -> path set 4 = {4}

ECN marking is switched off on every port (default action ``ecn_off``) except where a test
configures it, so a rate-limited queue changes no packet it does not study.  The sketch's
elephant threshold is out of reach; elephants come only from hints.

State the data plane keeps across tests (flow slots, per-port queue-delay readings, reorder
PSNs) is keyed by flow or port, so each test uses its own QPs/ports; on a virtual clock the
setUp also lets enough time pass for every earlier reading to be stale.
"""
from __future__ import annotations

import ipaddress
import zlib
from typing import Iterable, Sequence

import ptf.testutils as tu
from p4.v1 import p4runtime_pb2
from ptf.mask import Mask
from scapy.contrib.roce import BTH
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from bmv2_env.target import NotSupportedByTarget
from p4sim.p4rt.client import update
from ptf_tests.base import P4RuntimeTest

ING, EGR = "StellarIngress", "StellarEgress"

# Numbering from p4src/CONTRACT.md section 1.
CHANGE_NEW, CHANGE_GAP, CHANGE_DRAIN, CHANGE_FAILOVER, CHANGE_MEMBERSHIP = 0, 1, 2, 3, 4
DROP_MALFORMED, DROP_BAD_CHECKSUM, DROP_TTL_EXPIRED, DROP_NO_ROUTE = 1, 2, 3, 4
DROP_NO_PATH_SET, DROP_NO_LIVE_MEMBER = 5, 6
(MALFORMED_TRUNC_ETHERNET, MALFORMED_TRUNC_IPV4, MALFORMED_BAD_VERSION, MALFORMED_BAD_IHL,
 MALFORMED_TRUNC_UDP, MALFORMED_TRUNC_TCP, MALFORMED_TRUNC_BTH, MALFORMED_IPV4_OPTIONS,
 MALFORMED_OTHER) = range(1, 10)
ECN_NOT_ECT, ECN_ECT1, ECN_ECT0, ECN_CE = 0, 1, 2, 3
ROCE_UDP_PORT = 4791

HOST_PORT, UPLINK_A, UPLINK_B, SINGLE_PORT = 1, 2, 3, 4
HOST_IP = "10.0.1.1"
UPLINK_SET, HOST_SET, SINGLE_SET = 1, 11, 4
REMOTE_NET, SINGLE_NET = "10.0.2.0", "10.0.4.0"
HOST_MAC = "02:00:00:00:09:09"       # the sending NIC
ROUTER_MAC = "02:00:00:00:00:01"     # what hosts address the leaf as

# Switch-wide parameters (config.params) every test starts from; tests say what they change.
BASE_PARAMS: dict[str, int] = {
    "flowlet_timeout_us": 200,
    "drain_margin_us": 8,
    "hysteresis_us": 4,
    "gap_moves": 1,
    "drain_moves": 1,
    "qdelay_max_age_us": 200,
    "elephant_bytes": (1 << 31),   # the sketch never fires; hints make elephants
    "elephant_window_us": 1000,
    "elephant_idle_us": 2000,
    "malformed_l4_forward": 0,
    "report_path_changes": 0,
    "order_guards": 15,
    "dre_shift": 5,
    "util_weight": 1024,
    "qdelay_weight": 1024,
    "level_weight": 1024,
}
# Virtual time let pass in setUp: longer than every age/timeout above, so that queue-delay
# readings, flowlet gaps and ECN windows left by an earlier test no longer count.
SETTLE_US = 10_000


def port_mac(port: int) -> str:
    """The leaf's own MAC on ``port``."""
    return f"02:00:00:00:00:{port:02x}"


def neighbour_mac(port: int) -> str:
    """The next hop's MAC behind ``port`` (a spine or a NIC)."""
    return f"02:00:00:00:01:{port:02x}"


def ip_int(text: str) -> int:
    return int(ipaddress.IPv4Address(text))


def mac_int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


# ------------------------------------------------------------------------------ packets
def roce(dst: str, qp: int, psn: int, *, src: str = HOST_IP, ecn: int = ECN_ECT0, dscp: int = 26,
         ttl: int = 64, payload: int = 32) -> Packet:
    """A RoCEv2 RC SEND-only packet as a NIC sends it (Scapy computes the ICRC)."""
    return (Ether(src=HOST_MAC, dst=ROUTER_MAC)
            / IP(src=src, dst=dst, tos=(dscp << 2) | ecn, ttl=ttl)
            / UDP(sport=49152, dport=ROCE_UDP_PORT)
            / BTH(opcode=4, dqpn=qp, psn=psn & 0xFFFFFF)
            / Raw(b"\x00" * payload))


def udp(dst: str, sport: int, *, src: str = HOST_IP, ttl: int = 64, payload: int = 32) -> Packet:
    return (Ether(src=HOST_MAC, dst=ROUTER_MAC) / IP(src=src, dst=dst, ttl=ttl)
            / UDP(sport=sport, dport=5000) / Raw(b"u" * payload))


def routed(pkt: Packet | bytes, port: int, *, ecn: int | None = None) -> Packet:
    """What the leaf should send for ``pkt`` on ``port``: MACs of that port's link, TTL - 1,
    ECN bits set to ``ecn`` if given, IPv4 checksum recomputed from scratch by Scapy (so an
    incremental update in the P4 is checked against an independent computation).  Everything
    else -- UDP checksum, BTH, ICRC, payload -- byte for byte as sent."""
    exp = Ether(bytes(pkt))
    exp[Ether].src, exp[Ether].dst = port_mac(port), neighbour_mac(port)
    exp[IP].ttl -= 1
    if ecn is not None:
        exp[IP].tos = (exp[IP].tos & 0xFC) | ecn
    del exp[IP].chksum
    return Ether(bytes(exp))


def ecn_dont_care(exp: Packet) -> Mask:
    """``exp`` with the ECN bits (and so the IPv4 checksum) ignored, for packets whose marking
    is random by design (delay inside the Kmin..Kmax ramp)."""
    m = Mask(exp)
    m.set_do_not_care(14 * 8 + 14, 2)        # IPv4 ToS byte, low two bits
    m.set_do_not_care(14 * 8 + 80, 16)       # IPv4 header checksum
    return m


def hash_member(src: str, dst: str, qp: int, count: int) -> int:
    """Index of the path-set member a RoCE flow takes by hash alone (ECMP mode, or adaptive
    mode with every score equal): crc32 over (src, dst, protocol 17, dest QP as 32 bits)
    packed MSB-first, modulo 65521, then modulo the member count (stellar.p4 flowlet.p4 +
    member_rank).  Written from the P4 source, so a test that relies on it also checks the
    target hashes like BMv2."""
    key = (ip_int(src).to_bytes(4, "big") + ip_int(dst).to_bytes(4, "big") + bytes([17])
           + qp.to_bytes(4, "big"))
    return (zlib.crc32(key) % 65521) % count  # BMv2's crc32 is IEEE CRC-32 (REFERENCE.md)


def qps_hashing_to(member: int, dst: str, count: int, n: int, start: int,
                   src: str = HOST_IP) -> list[int]:
    """The first ``n`` dest QPs >= ``start`` whose flows hash onto ``member``."""
    out, qp = [], start
    while len(out) < n:
        if hash_member(src, dst, qp, count) == member:
            out.append(qp)
        qp += 1
    return out


# --------------------------------------------------------------------------- the test class
class StellarTest(P4RuntimeTest):
    """A freshly configured leaf (see the module docstring) for every test."""

    def setUp(self) -> None:
        super().setUp()
        self.params = dict(BASE_PARAMS)
        self.set_default(f"{ING}.config.params", f"{ING}.config.set_params", self.params)
        self.set_default(f"{EGR}.ecn.config", f"{EGR}.ecn.ecn_off")
        self.route(HOST_IP, 32, HOST_SET)
        self.path_set(HOST_SET, [HOST_PORT])
        self.route(REMOTE_NET, 24, UPLINK_SET)
        self.path_set(UPLINK_SET, [UPLINK_A, UPLINK_B])
        self.route(SINGLE_NET, 24, SINGLE_SET)
        self.path_set(SINGLE_SET, [SINGLE_PORT])
        for port in (HOST_PORT, UPLINK_A, UPLINK_B, SINGLE_PORT):
            self.insert(f"{EGR}.rewrite.port_mac", {"standard_metadata.egress_port": port},
                        f"{EGR}.rewrite.set_macs",
                        {"src_mac": mac_int(port_mac(port)), "dst_mac": mac_int(neighbour_mac(port))})
        if self.target.has_virtual_clock:
            self.target.advance_us(SETTLE_US)

    # -- configuration (CONTRACT.md section 2) ------------------------------------------------
    def set_params(self, **changes: int) -> None:
        """config.params is keyless: a default-action MODIFY with every parameter."""
        unknown = set(changes) - set(BASE_PARAMS)
        if unknown:
            raise KeyError(f"not a config.params parameter: {sorted(unknown)}")
        self.params.update(changes)
        self.p4rt.write(update("MODIFY", table_entry=self.p4rt.table_entry(
            f"{ING}.config.params", action=f"{ING}.config.set_params", params=self.params,
            default=True)))

    def route(self, prefix: str, plen: int, path_set: int) -> None:
        self.insert(f"{ING}.routing.lpm", {"hdr.ipv4.dst_addr": (ip_int(prefix), plen)},
                    f"{ING}.routing.set_path_set", {"path_set_id": path_set})

    @staticmethod
    def _members(ports: Sequence[int], levels: Sequence[int], ecmp: bool) -> dict[str, int]:
        params = {"count": len(ports), "ecmp": int(ecmp)}
        for i in range(8):
            params[f"port{i}"] = ports[i] if i < len(ports) else 0
            params[f"level{i}"] = levels[i] if i < len(levels) else 0
        params["measured"] = (1 << len(ports)) - 1  # every level measured (as after a poll)
        return params

    def path_set(self, ps: int, ports: Sequence[int], levels: Sequence[int] = (),
                 ecmp: bool = False) -> None:
        self.insert(f"{ING}.routing.path_set", {"meta.route.path_set_id": ps},
                    f"{ING}.routing.set_members", self._members(ports, levels, ecmp))

    def modify_path_set(self, ps: int, ports: Sequence[int], levels: Sequence[int] = (),
                        ecmp: bool = False) -> None:
        """MODIFY a path set, as the controller does when levels or mode change (the entry's
        own DELETE still undoes it)."""
        self.p4rt.write(update("MODIFY", table_entry=self.p4rt.table_entry(
            f"{ING}.routing.path_set", {"meta.route.path_set_id": ps},
            f"{ING}.routing.set_members", self._members(ports, levels, ecmp))))

    def ecn_port(self, port: int, *, kmin_us: int, kmax_us: int, pmax: int, adapt: int = 0,
                 k_init_us: int | None = None, window_us: int = 100, target_us: int = 4,
                 step_us: int = 2, idle_bytes: int = 625000) -> None:
        self.insert(f"{EGR}.ecn.config", {"standard_metadata.egress_port": port},
                    f"{EGR}.ecn.set_ecn_params",
                    {"window_us": window_us, "target_us": target_us, "kmin_us": kmin_us,
                     "kmax_us": kmax_us, "k_init_us": kmin_us if k_init_us is None else k_init_us,
                     "step_us": step_us, "pmax": pmax, "idle_bytes": idle_bytes, "adapt": adapt})

    def hint_elephant(self, dst: str, qp: int, src: str = HOST_IP) -> None:
        full = 0xFFFFFFFF
        self.insert(f"{ING}.elephant.hint",
                    {"hdr.ipv4.src_addr": (ip_int(src), full), "hdr.ipv4.dst_addr": (ip_int(dst), full),
                     "meta.flow.l4_id": (qp, full)},
                    f"{ING}.elephant.hint_elephant", priority=10)

    def port_down(self, port: int) -> None:
        """The controller's liveness write: the port's entry in each of the eight member-position
        liveness tables (table writes, which every target's P4Runtime accepts -- BMv2's PI refuses
        register writes), deleted after the test."""
        for i in range(8):
            self.insert(f"{ING}.failover.liveness{i}", {f"meta.route.port{i}": port},
                        f"{ING}.failover.port_down")

    def port_up(self, port: int) -> None:
        """The port is alive again: MODIFY its entries (the after-test DELETE still applies)."""
        for i in range(8):
            self.p4rt.write(update("MODIFY", table_entry=self.p4rt.table_entry(
                f"{ING}.failover.liveness{i}", {f"meta.route.port{i}": port}, f"{ING}.failover.port_up")))

    # -- telemetry over P4Runtime -------------------------------------------------------------
    def packets(self, counter: str, index: int) -> int:
        return self.read_counter(counter, index)[0]

    def drops(self, reason: int) -> int:
        return self.packets(f"{ING}.telemetry.drops", reason)

    def malformed(self, kind: int) -> int:
        return self.packets(f"{ING}.telemetry.malformed", kind)

    def path_changes(self, reason: int) -> int:
        return self.packets(f"{ING}.flowlet.path_changes", reason)

    # -- traffic --------------------------------------------------------------------------------
    def send_at_once(self, port: int, pkts: Iterable[Packet | bytes]) -> None:
        """Send packets and wait until the switch took them all in, so on a virtual clock they
        all arrive at the same instant (the clock moves only when the test advances it)."""
        pkts = list(pkts)
        before = self.received_count()
        for p in pkts:
            tu.send_packet(self, port, p)
        self.wait_ingested(before, len(pkts))

    def transmitted(self) -> int:
        return int(self.target_op(self.target.stats).get("transmitted", 0))

    def collect(self, count: int, timeout: float = 5.0) -> list[tuple[int, Packet]]:
        """The next ``count`` packets the switch sent, oldest first over all ports (the PTF
        dataplane orders ports by arrival), as (port, parsed packet)."""
        out = []
        for _ in range(count):
            res = tu.dp_poll(self, device_number=0, timeout=timeout)
            if not isinstance(res, self.dataplane.PollSuccess):
                self.fail(f"expected {count} packets from the switch, got {len(out)}")
            out.append((res.port, Ether(bytes(res.packet))))
        return out

    def collect_sent_since(self, before: int) -> list[tuple[int, Packet]]:
        """Everything the switch transmitted since ``transmitted()`` was ``before``."""
        self.target_op(self.target.sync)
        return self.collect(self.transmitted() - before)

    def tally(self) -> int | None:
        """Packets the switch has transmitted so far, or None where the target cannot tell."""
        try:
            return int(self.target.stats().get("transmitted", 0))
        except NotSupportedByTarget:
            return None

    def collect_all(self, since: int | None, quiet_s: float = 1.0) -> list[tuple[int, Packet]]:
        """Every packet sent since ``tally()`` was ``since``: counted exactly where the target
        keeps tallies, else whatever arrives until the ports stay quiet for ``quiet_s``."""
        if since is not None:
            self.target.sync()
            return self.collect(self.tally() - since)
        out = []
        while True:
            res = tu.dp_poll(self, device_number=0, timeout=quiet_s)
            if not isinstance(res, self.dataplane.PollSuccess):
                return out
            out.append((res.port, Ether(bytes(res.packet))))

    def start_tap(self) -> None:
        """From now on ``take()`` returns every packet the switch sends, none twice."""
        self._tapped = self.transmitted()

    def take(self) -> list[tuple[int, Packet]]:
        """Everything sent since the last ``take()`` (or ``start_tap()``), in departure order."""
        got = self.collect_sent_since(self._tapped)
        self._tapped += len(got)
        return got


def psn_of(pkt: Packet) -> int | None:
    return pkt[BTH].psn if BTH in pkt else None


def qp_of(pkt: Packet) -> int | None:
    return pkt[BTH].dqpn if BTH in pkt else None
