"""v1model externs and packet-replication primitives, driven through tests/runtime/p4/externs.p4."""
import logging
import zlib
from pathlib import Path

import pytest

import p4sim
from p4sim.errors import RuntimeApiError
from p4sim.runtime import hashing
from rtkit import pack, unpack

EXTERNS = Path(__file__).parent / "p4" / "externs.p4"
CTL = [("op", 8), ("idx", 32), ("val", 32), ("res", 32), ("res16", 16), ("color", 8), ("inst", 8), ("rid", 16)]
CTL_BYTES = sum(w for _, w in CTL) // 8
CHECK = b"123456789"


@pytest.fixture(scope="module")
def prog():
    return p4sim.compile(str(EXTERNS))


@pytest.fixture
def sw(prog):
    return p4sim.Switch(prog)


def pkt(op, idx=0, val=0, data=CHECK, payload=b""):
    return pack([(op, 8), (idx, 32), (val, 32)] + [(0, w) for _, w in CTL[3:]]) + data + payload


def ctl(data):
    return dict(zip([n for n, _ in CTL], unpack(data, [w for _, w in CTL])))


def run(sw, *args, **kw):
    sw.send(0, pkt(*args, **kw))
    return [(port, ctl(d), d) for port, d in sw.take_output()]


def one(sw, *args, **kw):
    out = run(sw, *args, **kw)
    assert len(out) == 1, (out, sw.stats)
    return out[0][1]


# ------------------------------------------------------------------ hash algorithms
def test_crc16_is_crc16_arc_check_value():
    assert hashing.crc16_arc(CHECK) == 0xBB3D


def test_crc32_is_ieee_zlib_check_value():
    assert hashing.crc32_ieee(CHECK) == 0xCBF43926 == zlib.crc32(CHECK)


def test_csum16_is_the_internet_checksum():
    # RFC 1071's example words 0001 f203 f4f5 f6f7 sum to ddf2 -> checksum 220d
    assert hashing.csum16(bytes.fromhex("0001f203f4f5f6f7")) == 0x220D
    for n in range(0, 40):  # the big-int shortcut agrees with the byte loop, odd lengths included
        data = bytes((i * 37 + n) & 0xFF for i in range(n))
        assert hashing.csum16_int(int.from_bytes(data, "big"), 8 * n) == hashing.csum16(data)
    assert hashing.csum16_int(0xFFFF, 16) == hashing.csum16(b"\xff\xff") == 0


def test_hash_crc16_in_p4_gives_the_check_value(sw):
    assert one(sw, 5)["res16"] == 0xBB3D


def test_hash_crc32_in_p4_gives_the_check_value(sw):
    assert one(sw, 6)["res"] == 0xCBF43926


def test_hash_result_is_base_plus_hash_mod_max(sw):
    assert one(sw, 7, idx=1000, val=5)["res16"] == 5 + 0xBB3D % 1000


def test_hash_with_max_zero_gives_base(sw):
    assert one(sw, 7, idx=0, val=1234)["res16"] == 1234


def test_hash_identity_is_the_data_as_a_number(sw):
    assert one(sw, 18)["res"] == int.from_bytes(b"6789", "big")


def test_hash_identity_keeps_the_first_eight_bytes_like_bmv2():
    assert hashing.identity(CHECK) == int.from_bytes(b"12345678", "big")
    assert hashing.identity(b"\x01\x02") == 0x0102


def test_hash_csum16_and_xor16(sw):
    assert one(sw, 19)["res16"] == hashing.csum16(CHECK)
    words = CHECK + b"\x00"
    x = 0
    for i in range(0, len(words), 2):
        x ^= int.from_bytes(words[i:i + 2], "big")
    assert one(sw, 20)["res16"] == x


def test_hash_packs_fields_msb_first_without_byte_alignment(sw):
    # {b0[3:0], b1[7:4]} = {0x1, 0x3} of "12" (0x31, 0x32) -> one byte 0x13
    assert one(sw, 22)["res16"] == hashing.crc16_arc(b"\x13")


def test_pack_bits_pads_zeros_at_the_end():
    assert hashing.pack_bits(0b101, 3) == b"\xa0"
    assert hashing.pack_bits(0xABC, 12) == b"\xab\xc0"


# ------------------------------------------------------------------ registers, counters, meters
def test_register_write_then_read(sw):
    one(sw, 1, idx=3, val=0xCAFE)
    assert one(sw, 2, idx=3)["res"] == 0xCAFE
    assert sw.register_read("I.reg", 3) == 0xCAFE
    sw.register_write("I.reg", 4, 99)
    assert one(sw, 2, idx=4)["res"] == 99
    assert sw.register_size("I.reg") == 8


def test_register_out_of_range_read_gives_zero_and_write_is_ignored(sw):
    one(sw, 1, idx=8, val=5)  # index 8 of an 8-cell register: ignored, no crash
    assert all(sw.register_read("I.reg", i) == 0 for i in range(8))
    assert one(sw, 2, idx=100)["res"] == 0
    assert sw.stats["runtime_error"] == 0


def test_register_api_rejects_bad_index_and_value(sw):
    with pytest.raises(RuntimeApiError) as e:
        sw.register_read("I.reg", 8)
    assert e.value.code == "OUT_OF_RANGE"
    with pytest.raises(RuntimeApiError) as e:
        sw.register_write("I.reg", 0, 1 << 32)
    assert e.value.code == "OUT_OF_RANGE"
    with pytest.raises(RuntimeApiError) as e:
        sw.register_read("I.nope", 0)
    assert e.value.code == "NOT_FOUND"


def test_counter_counts_packets_and_bytes(sw):
    for _ in range(3):
        one(sw, 3, idx=2, payload=b"xx")
    assert sw.counter_read("I.cnt", 2) == (3, 3 * (CTL_BYTES + 9 + 2))
    assert sw.counter_read("I.cnt", 1) == (0, 0)
    sw.counter_write("I.cnt", 2, 0, 0)
    assert sw.counter_read("I.cnt", 2) == (0, 0)
    assert sw.counter_size("I.cnt") == 4


def test_meter_unconfigured_is_green(sw):
    assert [one(sw, 4, idx=0)["color"] for _ in range(5)] == [0] * 5


def test_meter_two_rate_three_colour(sw):
    # packets meter: committed 1000 pkt/s burst 2, peak 2000 pkt/s burst 4
    sw.meter_set_config("I.mtr", 1, 1000, 2, 2000, 4)
    colours = [one(sw, 4, idx=1)["color"] for _ in range(5)]
    assert colours == [0, 0, 1, 1, 2]  # GREEN while both buckets last, YELLOW on peak only, RED
    sw.advance(1000)  # 1 ms refills 1 committed token and 2 peak tokens
    assert [one(sw, 4, idx=1)["color"] for _ in range(3)] == [0, 1, 2]
    assert sw.meter_get_config("I.mtr", 1).cir == 1000


def test_meter_config_rejects_peak_below_committed(sw):
    with pytest.raises(RuntimeApiError) as e:
        sw.meter_set_config("I.mtr", 0, 2000, 1, 1000, 1)
    assert e.value.code == "INVALID_ARGUMENT"


# ------------------------------------------------------------------ random, digest, log, assert, exit
def test_random_stays_within_bounds_and_is_seeded(prog):
    a, b = p4sim.Switch(prog, seed=7), p4sim.Switch(prog, seed=7)
    ra = [one(a, 8)["res"] for _ in range(30)]
    rb = [one(b, 8)["res"] for _ in range(30)]
    assert ra == rb and all(10 <= r <= 20 for r in ra) and len(set(ra)) > 3
    c = p4sim.Switch(prog, seed=8)
    assert [one(c, 8)["res"] for _ in range(30)] != ra


def test_digest_queues_struct_fields(sw):
    sw.advance(42)
    one(sw, 9, idx=0xABCD)
    (d,) = sw.digests()
    assert d.name == "learn_t" and d.fields == [("idx", 32, 0xABCD), ("op", 8, 9)] and d.timestamp_us == 42
    assert sw.digests() == []  # returned once


def test_log_msg_formats_values_to_the_logger(sw, caplog):
    with caplog.at_level(logging.INFO, logger="p4sim.log_msg"):
        one(sw, 16, idx=3, val=4)
    assert "op16 idx=3 val=4" in caplog.text


def test_assert_failure_drops_the_packet_and_is_counted(sw):
    assert one(sw, 15, val=1)["op"] == 15  # holds: forwarded
    assert run(sw, 15, val=0) == []
    assert sw.stats["assert_failed"] == 1
    assert one(sw, 15, val=1)["op"] == 15  # the switch keeps working


def test_exit_ends_the_control_block(sw):
    assert one(sw, 21)["res"] == 1


def test_mark_to_drop_sets_drop_port(sw):
    assert run(sw, 23) == [] and sw.stats["dropped"] == 1


def test_truncate_cuts_the_output_packet(sw):
    out = run(sw, 17, idx=5, payload=b"y" * 20)
    assert len(out[0][2]) == 5


# ------------------------------------------------------------------ replication
def test_clone_i2e_uses_session_port_and_instance_type_1(sw):
    sw.set_clone_session(5, [(3, 0)])
    out = run(sw, 10, idx=5)
    by_port = {p: c for p, c, _ in out}
    assert set(by_port) == {1, 3}
    assert by_port[1]["inst"] == 0 and by_port[3]["inst"] == 1


def test_clone_preserves_the_field_list_metadata(sw):
    sw.set_clone_session(5, [(3, 0)])
    out = {p: c for p, c, _ in run(sw, 10, idx=5)}
    assert out[3]["res"] == 7  # meta.keep is in @field_list(1)
    assert out[3]["res16"] == 0  # meta.lose is not: reset to 0


def test_clone_i2e_carries_the_packet_as_received(sw):
    sw.set_clone_session(5, [(3, 0)])
    out = {p: c for p, c, _ in run(sw, 10, idx=5)}
    assert out[1]["res"] == 0 and out[3]["res"] == 7  # the clone's egress saw its own metadata


def test_clone_to_unknown_session_only_counts(sw):
    out = run(sw, 10, idx=99)
    assert [p for p, _, _ in out] == [1] and sw.stats["unknown_clone_session"] == 1


def test_clone_e2e_has_instance_type_2(sw):
    sw.set_clone_session(6, [(4, 0)])
    out = {p: c for p, c, _ in run(sw, 11, idx=6)}
    assert out[1]["inst"] == 0 and out[4]["inst"] == 2


def test_clone_session_truncates(sw):
    sw.set_clone_session(6, [(4, 0)], truncate_bytes=10)
    out = {p: d for p, _, d in run(sw, 11, idx=6, payload=b"z" * 30)}
    assert len(out[4]) == 10 and len(out[1]) > 30


def test_resubmit_reruns_ingress_with_instance_type_6_and_preserved_metadata(sw):
    c = one(sw, 12)
    assert c["inst"] == 6 and c["res"] == 5


def test_recirculate_reinjects_the_deparsed_packet_with_instance_type_4(sw):
    c = one(sw, 13)
    assert c["inst"] == 4 and c["val"] == 77  # egress's write survived the deparse/re-parse


def test_multicast_replicates_with_rid_and_instance_type_5(sw):
    sw.set_mcast_group(9, [(2, 100), (3, 200), (2, 300)])
    out = run(sw, 14, idx=9)
    assert sorted((p, c["rid"], c["inst"]) for p, c, _ in out) == [(2, 100, 5), (2, 300, 5), (3, 200, 5)]
    assert sw.get_mcast_group(9) == [(2, 100), (3, 200), (2, 300)]
    sw.delete_mcast_group(9)
    assert run(sw, 14, idx=9) == [] and sw.stats["unknown_mcast_group"] == 1


def test_replication_api_errors(sw):
    with pytest.raises(RuntimeApiError) as e:
        sw.delete_mcast_group(1)
    assert e.value.code == "NOT_FOUND"
    with pytest.raises(RuntimeApiError) as e:
        sw.set_mcast_group(1, [(512, 0)])
    assert e.value.code == "OUT_OF_RANGE"
    with pytest.raises(RuntimeApiError) as e:
        sw.delete_clone_session(1)
    assert e.value.code == "NOT_FOUND"


def test_resubmit_loop_is_bounded_and_counted(sw):
    assert run(sw, 24) == []
    assert sw.stats["resubmit_limit"] == 1


def test_recirculate_loop_is_bounded_and_counted(sw):
    assert run(sw, 25) == []
    assert sw.stats["recirculate_limit"] == 1


# ------------------------------------------------------------------ checksums
def test_update_checksum_writes_csum16_of_the_fields(sw):
    assert one(sw, 29)["res16"] == hashing.csum16(CHECK[:2])


def test_verify_checksum_sets_checksum_error_only_on_mismatch(sw):
    good = hashing.csum16(CHECK[:2])
    sw.send(0, pack([(28, 8), (0, 32), (0, 32), (0, 32), (good, 16), (0, 8), (0, 8), (0, 16)]) + CHECK)
    assert ctl(sw.take_output()[0][1])["color"] == 0
    sw.send(0, pack([(28, 8), (0, 32), (0, 32), (0, 32), (good ^ 1, 16), (0, 8), (0, 8), (0, 16)]) + CHECK)
    assert ctl(sw.take_output()[0][1])["color"] == 1


def test_update_checksum_with_payload_covers_the_unparsed_bytes(sw):
    c = one(sw, 26, idx=0x01020304, payload=b"PAYLOAD")
    assert c["res16"] == hashing.csum16(bytes([1, 2, 3, 4]) + b"PAYLOAD")


def test_verify_checksum_with_payload_covers_the_unparsed_bytes(sw):
    good = hashing.csum16(bytes([0, 0, 0, 9]) + b"PAY")
    for value, err in ((good, 0), (good ^ 0x100, 1)):
        sw.send(0, pack([(27, 8), (9, 32), (0, 32), (0, 32), (value, 16), (0, 8), (0, 8), (0, 16)]) + CHECK + b"PAY")
        assert ctl(sw.take_output()[0][1])["color"] == err


# ------------------------------------------------------------------ direct meter
DMETER = Path(__file__).parent / "p4" / "direct_meter.p4"


def test_direct_meter_colours_by_the_matched_entry():
    sw = p4sim.Switch(p4sim.compile(str(DMETER)))
    sw.insert_entry("I.t", {"hdr.m.key": 1}, "I.colour")
    sw.insert_entry("I.t", {"hdr.m.key": 2}, "I.colour")
    sw.direct_meter_set_config("I.t", {"hdr.m.key": 1}, 1000, 1, 1000, 2)

    def colours(key, n):
        res = []
        for _ in range(n):
            sw.send(0, bytes([key, 0xFF, 0]))
            [(_, d)] = sw.take_output()
            assert d[2] == 1
            res.append(d[1])
        return res

    assert colours(1, 3) == [0, 1, 2]  # GREEN, then YELLOW (peak bucket only), then RED
    assert colours(2, 3) == [0, 0, 0]  # another entry's meter is unconfigured: GREEN
    assert sw.direct_meter_get_config("I.t", {"hdr.m.key": 1}).pburst == 2
    assert [e.meter_config is not None for e in sw.table_entries("I.t")] == [True, False]


def test_mark_to_drop_in_egress_drops_the_packet(sw):
    assert run(sw, 30) == [] and sw.stats["dropped"] == 1


def test_bytes_meter_charges_packet_length(sw):
    size = CTL_BYTES + 9 + 11  # this packet's length in bytes
    # committed burst fits one packet, peak burst two: GREEN, YELLOW, RED
    sw.meter_set_config("I.bmtr", 0, 1000, size, 1000, 2 * size)
    assert [one(sw, 31, idx=0, payload=b"p" * 11)["color"] for _ in range(3)] == [0, 1, 2]
    sw.advance(size * 1000)  # 1000 bytes/s refills `size` bytes per `size` ms
    assert one(sw, 31, idx=0, payload=b"p" * 11)["color"] == 0
