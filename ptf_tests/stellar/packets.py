"""The Stellar test leaf's numbers (ports, addresses, path sets, CONTRACT.md codes), its base
parameters and the packets the tests send and expect: plain data and Scapy builders, used by the
test class (``stellar_base``) and the per-architecture writers (``arch``) alike.
"""
from __future__ import annotations

import ipaddress

from ptf.mask import Mask
from scapy.contrib.roce import BTH
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether
from scapy.packet import Packet, Raw

from testkit import leaf

__all__ = ['CHANGE_NEW', 'CHANGE_GAP', 'CHANGE_DRAIN', 'CHANGE_FAILOVER', 'CHANGE_MEMBERSHIP',
           'DROP_MALFORMED', 'DROP_BAD_CHECKSUM', 'DROP_TTL_EXPIRED', 'DROP_NO_ROUTE',
           'DROP_NO_PATH_SET', 'DROP_NO_LIVE_MEMBER', 'MALFORMED_TRUNC_ETHERNET',
           'MALFORMED_TRUNC_IPV4', 'MALFORMED_BAD_VERSION', 'MALFORMED_BAD_IHL',
           'MALFORMED_TRUNC_UDP', 'MALFORMED_TRUNC_TCP', 'MALFORMED_TRUNC_BTH',
           'MALFORMED_IPV4_OPTIONS', 'MALFORMED_OTHER', 'ECN_NOT_ECT', 'ECN_ECT1', 'ECN_ECT0',
           'ECN_CE', 'ROCE_UDP_PORT', 'HOST_PORT', 'UPLINK_A', 'UPLINK_B', 'SINGLE_PORT', 'HOST_IP',
           'UPLINK_SET', 'HOST_SET', 'SINGLE_SET', 'REMOTE_NET', 'SINGLE_NET', 'HOST_MAC',
           'ROUTER_MAC', 'BASE_PARAMS', 'SETTLE_US', 'port_mac', 'neighbour_mac', 'ip_int',
           'mac_int', 'roce', 'udp', 'routed', 'ecn_dont_care', 'psn_of', 'qp_of']

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

# Switch-wide parameters (config.params) every test starts from (the in-process tests' own,
# testkit.leaf); tests say what they change.
BASE_PARAMS: dict[str, int] = dict(leaf.BASE_PARAMS)
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


def psn_of(pkt: Packet) -> int | None:
    return pkt[BTH].psn if BTH in pkt else None


def qp_of(pkt: Packet) -> int | None:
    return pkt[BTH].dqpn if BTH in pkt else None
