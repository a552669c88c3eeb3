"""Fast RoCEv2 packet building and parsing for workloads, demos and benchmarks.

Scapy's ``scapy.contrib.roce`` layers are the reference (tests compare against them), but building
a packet through Scapy costs milliseconds, and a demo sends tens of thousands.  So a flow builds
one template with Scapy and this module patches the per-packet fields (PSN, IP id, ECN) into the
raw bytes and recomputes the IPv4 checksum and the RoCEv2 invariant CRC (ICRC) itself.

ICRC (InfiniBand Architecture spec, RoCEv2 annex): CRC-32 (IEEE, as ``zlib.crc32``) over
``0xFF * 8`` followed by the IP header with TOS, TTL and header checksum set to all ones, the UDP
header with its checksum set to all ones, and the BTH with byte 4 (FECN/BECN/reserved) set to all
ones, then the payload; appended little-endian.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Optional

ROCEV2_UDP_PORT = 4791
ETH_LEN, IP_LEN, UDP_LEN, BTH_LEN, ICRC_LEN = 14, 20, 8, 12, 4
L2_L3_LEN = ETH_LEN + IP_LEN + UDP_LEN  # offset of the BTH in an untagged frame
OPCODE_RC_RDMA_WRITE_ONLY = 0x0A
ECN_NOT_ECT, ECN_ECT1, ECN_ECT0, ECN_CE = 0, 1, 2, 3


def _ip_checksum(header: bytes) -> int:
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def icrc(ip_udp_bth_payload: bytes) -> int:
    """ICRC of a RoCEv2 packet given everything from the IPv4 header to the end of the payload
    (without the ICRC itself)."""
    b = bytearray(ip_udp_bth_payload)
    b[1] = 0xFF  # TOS (DSCP + ECN): may change hop by hop
    b[8] = 0xFF  # TTL
    b[10:12] = b"\xff\xff"  # header checksum
    b[IP_LEN + 6 : IP_LEN + 8] = b"\xff\xff"  # UDP checksum
    b[IP_LEN + UDP_LEN + 4] = 0xFF  # BTH FECN/BECN/resv6
    return zlib.crc32(b"\xff" * 8 + bytes(b)) & 0xFFFFFFFF


ETHERTYPE_IPV4, ETHERTYPE_STELLAR_FB = b"\x08\x00", b"\x88\xb5"


def ipv4_offset(frame: bytes) -> Optional[int]:
    """Where the IPv4 header starts in a frame on a fabric link: after Ethernet, or after
    Stellar's 8-byte path-feedback shim (p4src/include/header.p4 ``stellar_fb_h``, whose first
    field is the EtherType it displaced), which every Stellar packet between leaves carries."""
    kind = frame[12:14]
    if kind == ETHERTYPE_IPV4:
        return 14
    if kind == ETHERTYPE_STELLAR_FB and frame[14:16] == ETHERTYPE_IPV4:
        return 22
    return None


@dataclass(frozen=True)
class RoceFields:
    """What a receiver needs from a RoCEv2 packet."""

    src_ip: int
    dst_ip: int
    dscp: int
    ecn: int
    dqpn: int
    psn: int
    opcode: int
    length: int


def parse_roce(frame: bytes) -> Optional[RoceFields]:
    """Fields of an untagged Ethernet/IPv4/UDP/BTH frame, or None if it is not RoCEv2."""
    if len(frame) < L2_L3_LEN + BTH_LEN or frame[12:14] != b"\x08\x00":
        return None
    ihl = (frame[14] & 0x0F) * 4
    if frame[14] >> 4 != 4 or frame[23] != 17:
        return None
    udp = ETH_LEN + ihl
    if len(frame) < udp + UDP_LEN + BTH_LEN:
        return None
    if struct.unpack_from("!H", frame, udp + 2)[0] != ROCEV2_UDP_PORT:
        return None
    bth = udp + UDP_LEN
    tos = frame[15]
    return RoceFields(
        src_ip=struct.unpack_from("!I", frame, 26)[0],
        dst_ip=struct.unpack_from("!I", frame, 30)[0],
        dscp=tos >> 2,
        ecn=tos & 3,
        dqpn=struct.unpack_from("!I", frame, bth + 4)[0] & 0xFFFFFF,
        psn=struct.unpack_from("!I", frame, bth + 8)[0] & 0xFFFFFF,
        opcode=frame[bth],
        length=len(frame),
    )


class RoceFlowTemplate:
    """Packets of one RoCEv2 queue pair: built once with Scapy, then patched per PSN."""

    def __init__(
        self,
        src_mac: str,
        dst_mac: str,
        src_ip: str,
        dst_ip: str,
        dqpn: int,
        payload_len: int = 256,
        dscp: int = 26,
        ecn: int = ECN_ECT0,
        udp_sport: int = 49152,
    ) -> None:
        # Only the layers needed: ``scapy.all`` costs seconds to import.
        from scapy.compat import raw
        from scapy.contrib.roce import BTH
        from scapy.layers.inet import IP, UDP
        from scapy.layers.l2 import Ether

        pkt = (
            Ether(src=src_mac, dst=dst_mac)
            / IP(src=src_ip, dst=dst_ip, tos=(dscp << 2) | ecn, ttl=64, id=0, flags="DF")
            / UDP(sport=udp_sport, dport=ROCEV2_UDP_PORT, chksum=0)
            / BTH(opcode=OPCODE_RC_RDMA_WRITE_ONLY, dqpn=dqpn, psn=0)
            / (bytes(range(256)) * (payload_len // 256 + 1))[:payload_len]
        )
        self._base = bytearray(raw(pkt))
        self.length = len(self._base)

    def packet(self, psn: int, ip_id: int = 0) -> bytes:
        """The frame carrying ``psn`` (24-bit), with valid IPv4 checksum and ICRC."""
        b = self._base
        struct.pack_into("!H", b, ETH_LEN + 4, ip_id & 0xFFFF)
        b[ETH_LEN + 10 : ETH_LEN + 12] = b"\x00\x00"
        struct.pack_into("!H", b, ETH_LEN + 10, _ip_checksum(bytes(b[ETH_LEN : ETH_LEN + IP_LEN])))
        bth = L2_L3_LEN
        struct.pack_into("!I", b, bth + 8, psn & 0xFFFFFF)
        crc = icrc(bytes(b[ETH_LEN:-ICRC_LEN]))
        struct.pack_into("<I", b, len(b) - ICRC_LEN, crc)
        return bytes(b)
