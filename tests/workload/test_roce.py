"""The fast RoCEv2 builder must produce exactly what Scapy's RoCE layers produce."""
import pytest
from scapy.all import IP, UDP, Ether, raw
from scapy.contrib.roce import BTH

from fabric_sim.roce import ECN_CE, RoceFlowTemplate, parse_roce


def scapy_reference(psn: int, ip_id: int, payload_len: int) -> bytes:
    return raw(
        Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
        / IP(src="10.0.0.1", dst="10.0.1.1", tos=(26 << 2) | 2, ttl=64, id=ip_id, flags="DF")
        / UDP(sport=49152, dport=4791, chksum=0)
        / BTH(opcode=0x0A, dqpn=0x12, psn=psn)
        / (bytes(range(256)) * 8)[:payload_len]
    )


@pytest.mark.parametrize("psn", [0, 1, 4242, 0xFFFFFF])
@pytest.mark.parametrize("payload_len", [0, 64, 1024])
def test_patched_packet_is_byte_identical_to_scapy_including_icrc(psn, payload_len):
    t = RoceFlowTemplate("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.0.1.1",
                         0x12, payload_len=payload_len)
    assert t.packet(psn, ip_id=psn & 0xFFFF) == scapy_reference(psn, psn & 0xFFFF, payload_len)


def test_icrc_ignores_ecn_rewrite_by_a_switch():
    """A switch marking CE changes TOS; the ICRC masks TOS, so the packet stays valid."""
    t = RoceFlowTemplate("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.0.1.1", 7)
    pkt = bytearray(t.packet(3))
    pkt[15] = (pkt[15] & ~3) | ECN_CE
    assert BTH(bytes(pkt[42:])).icrc == BTH(t.packet(3)[42:]).icrc
    assert parse_roce(bytes(pkt)).ecn == ECN_CE


def test_parse_rejects_non_roce_and_truncated_frames():
    t = RoceFlowTemplate("02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.0.1.1", 7)
    good = t.packet(9)
    assert parse_roce(good).psn == 9 and parse_roce(good).dqpn == 7
    assert parse_roce(good[:50]) is None
    not_roce = bytearray(good)
    not_roce[36:38] = (4792).to_bytes(2, "big")
    assert parse_roce(bytes(not_roce)) is None
