"""End to end: p4src/examples/l3.p4 forwarding real Scapy packets through p4sim."""
from pathlib import Path

import pytest
from scapy.all import IP, TCP, UDP, Ether, raw

import p4sim

L3 = Path(__file__).resolve().parents[2] / "p4src" / "examples" / "l3.p4"
LPM = "MyIngress.ipv4_lpm"
FWD = "MyIngress.ipv4_forward"


@pytest.fixture(scope="module")
def prog():
    return p4sim.compile(str(L3))


@pytest.fixture
def sw(prog):
    s = p4sim.Switch(prog)
    s.insert_entry(LPM, {"hdr.ipv4.dstAddr": ("10.0.0.0", 8)}, FWD, {"dstAddr": "00:00:00:00:00:08", "port": 8})
    s.insert_entry(LPM, {"hdr.ipv4.dstAddr": ("10.1.0.0", 16)}, FWD, {"dstAddr": "00:00:00:00:00:16", "port": 16})
    s.insert_entry(LPM, {"hdr.ipv4.dstAddr": ("10.1.2.0", 24)}, FWD, {"dstAddr": "00:00:00:00:00:24", "port": 24})
    return s


def send(sw, pkt, port=0):
    sw.send(port, raw(pkt))
    return sw.take_output()


def ip_checksum_ok(ip_bytes: bytes) -> bool:
    p = IP(ip_bytes)
    got = p.chksum
    del p.chksum
    return IP(raw(p)).chksum == got


def test_forwarded_packet_has_ttl_decremented_and_macs_rewritten(sw):
    pkt = Ether(src="00:aa:00:00:00:01", dst="00:bb:00:00:00:02") / IP(src="192.168.1.1", dst="10.1.2.3", ttl=64) / UDP(dport=4791) / b"data"
    [(port, data)] = send(sw, pkt)
    out = Ether(data)
    assert port == 24
    assert out[IP].ttl == 63
    assert out.dst == "00:00:00:00:00:24" and out.src == "00:bb:00:00:00:02"
    assert out[UDP].dport == 4791 and bytes(out[UDP].payload) == b"data"


def test_checksum_is_valid_after_forwarding(sw):
    pkt = Ether() / IP(src="1.2.3.4", dst="10.1.2.3", ttl=17, id=777) / TCP() / (b"x" * 30)
    [(_, data)] = send(sw, pkt)
    assert ip_checksum_ok(data[14:34])
    assert Ether(data)[IP].chksum != IP(raw(pkt[IP])).chksum  # it was recomputed for the new TTL


def test_lpm_longest_prefix_wins(sw):
    ports = [send(sw, Ether() / IP(dst=d) / UDP())[0][0] for d in ("10.1.2.3", "10.1.3.3", "10.2.3.3")]
    assert ports == [24, 16, 8]


def test_lookup_miss_drops(sw):
    assert send(sw, Ether() / IP(dst="11.0.0.1") / UDP()) == []
    assert sw.stats["dropped"] == 1


def test_ttl_of_one_is_dropped(sw):
    assert send(sw, Ether() / IP(dst="10.1.2.3", ttl=1) / UDP()) == []


def test_bad_ipv4_checksum_is_dropped(sw):
    pkt = Ether() / IP(dst="10.1.2.3", chksum=0x1234) / UDP()
    assert send(sw, pkt) == []


def test_non_ip_is_dropped(sw):
    assert send(sw, Ether(type=0x88B5) / (b"\x00" * 40)) == []


def test_truncated_ipv4_is_counted_as_malformed_and_not_forwarded(sw):
    data = raw(Ether() / IP(dst="10.1.2.3") / UDP())[:20]  # Ethernet + 6 bytes of IPv4
    sw.send(0, data)
    assert sw.take_output() == []
    assert sw.stats["malformed"] == 1 and sw.stats["parser_error.PacketTooShort"] == 1


def test_direct_counter_counts_forwarded_bytes(sw):
    pkt = Ether() / IP(dst="10.1.2.3") / UDP() / (b"p" * 10)
    for _ in range(2):
        send(sw, pkt)
    assert sw.direct_counter_read(LPM, {"hdr.ipv4.dstAddr": ("10.1.2.0", 24)}) == (2, 2 * len(raw(pkt)))


def test_entries_read_back_normalized(sw):
    e = {x.match["hdr.ipv4.dstAddr"]: x for x in sw.table_entries(LPM)}
    assert e[(0x0A010200, 24)].action == FWD and e[(0x0A010200, 24)].params == {"dstAddr": 0x24, "port": 24}
    assert sw.get_default_action(LPM) == ("MyIngress.drop", {})


def test_p4info_names_match_the_api(prog):
    info = prog.p4info
    assert {t.preamble.name for t in info.tables} == {LPM}
    assert {a.preamble.name for a in info.actions} >= {FWD, "MyIngress.drop", "NoAction"}


def test_random_and_truncated_packets_never_crash_the_switch(sw):
    import random

    rnd = random.Random(5)
    base = raw(Ether() / IP(dst="10.1.2.3") / UDP() / b"abcdefgh")
    for _ in range(500):
        b = bytearray(base)
        for _ in range(rnd.randrange(6)):
            b[rnd.randrange(len(b))] = rnd.randrange(256)
        sw.send(rnd.randrange(8), bytes(b[:rnd.randrange(len(b) + 1)]))
    sw.take_output()
    assert sw.stats["received"] == 500 and sw.stats["runtime_error"] == 0
    assert sw.stats["malformed"] > 0  # the truncated ones were seen as such
    sw.send(0, base)  # and the switch still forwards
    assert [p for p, _ in sw.take_output()] == [24]
