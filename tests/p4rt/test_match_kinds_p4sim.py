"""Every match kind, meters and a direct meter through P4Runtime on the real p4sim core."""
from __future__ import annotations

import struct

import grpc
import pynng
import pytest
from p4.v1 import p4runtime_pb2

from p4sim.p4rt.client import P4RuntimeClient, WriteFailed, load_p4info, update
from testkit.p4sim_process import REPO, compile_program, start_p4sim


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mk")
    json_path, info_path = compile_program(REPO / "tests/p4rt/p4/match_kinds.p4", tmp)
    proc = start_p4sim(tmp)
    client = P4RuntimeClient(proc.grpc_addr, device_id=1)
    client.connect()
    client.set_pipeline(load_p4info(str(info_path)), json_path.read_bytes())
    peer = pynng.Pair0(dial=proc.ipc_addr)
    peer.recv_timeout = 5000
    yield client, peer
    peer.close()
    client.close()
    proc.stop()


def send(peer, port: int, dst: int, src: int, ethertype: int) -> int:
    """Send an Ethernet frame in on ``port``; return the port it leaves on."""
    frame = dst.to_bytes(6, "big") + src.to_bytes(6, "big") + ethertype.to_bytes(2, "big") + b"\0" * 46
    peer.send(struct.pack("<iii", 3, port, len(frame)) + frame)
    mtype, out_port, _ = struct.unpack_from("<iii", peer.recv())
    assert mtype == 4
    return out_port


def read_one(c, entry):
    got = c.read(p4runtime_pb2.Entity(table_entry=entry))
    assert len(got) == 1, got
    return got[0].table_entry


def test_entries_of_every_kind_insert_read_and_steer_packets(session):
    c, peer = session
    entries = [
        c.table_entry("MkIngress.t_exact", {"hdr.ethernet.etherType": 0x0800}, "MkIngress.to_port_metered",
                      {"port": 1}),
        c.table_entry("MkIngress.t_lpm", {"hdr.ethernet.dstAddr": (0x0A0000000000, 8)}, "MkIngress.to_port",
                      {"port": 2}),
        c.table_entry("MkIngress.t_ternary", {"hdr.ethernet.srcAddr": (0x00BB00000000, 0x00FF00000000),
                                              "hdr.ethernet.etherType": 0x0800},
                      "MkIngress.to_port", {"port": 3}, priority=5),
        c.table_entry("MkIngress.t_range", {"hdr.ethernet.etherType": (0x8000, 0x80FF)}, "MkIngress.to_port",
                      {"port": 4}, priority=1),
        c.table_entry("MkIngress.t_optional", {"hdr.ethernet.srcAddr": 0xCC}, "MkIngress.to_port",
                      {"port": 5}, priority=1),
    ]
    c.write(*(update("INSERT", table_entry=e) for e in entries))
    for e in entries:
        got = read_one(c, e)
        assert got.match == e.match and got.action == e.action and got.priority == e.priority
    # Later tables override earlier ones, so each frame shows the last table it hit.
    assert send(peer, 9, 0x0B0000000001, 0x000000000001, 0x0800) == 1  # exact only
    assert send(peer, 9, 0x0A0000000001, 0x000000000001, 0x0800) == 2  # + lpm
    assert send(peer, 9, 0x0A0000000001, 0x00BB00000001, 0x0800) == 3  # + ternary
    assert send(peer, 9, 0x0A0000000001, 0x000000000001, 0x8042) == 4  # lpm, range
    assert send(peer, 9, 0x0A0000000001, 0x0000000000CC, 0x8042) == 5  # lpm, range, optional
    c.write(*(update("DELETE", table_entry=e) for e in entries))
    assert c.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())) == []


def test_optional_wildcard_and_range_rules(session):
    c, _ = session
    # Both optional fields omitted = match all: allowed (with a priority).
    e = c.table_entry("MkIngress.t_optional", {}, "MkIngress.to_port", {"port": 6}, priority=2)
    c.write(update("INSERT", table_entry=e))
    try:
        assert read_one(c, e).priority == 2
        full = c.table_entry("MkIngress.t_range", {"hdr.ethernet.etherType": (0, 0xFFFF)}, "MkIngress.to_port",
                             {"port": 1}, priority=1)
        with pytest.raises(WriteFailed) as err:
            c.write(update("INSERT", table_entry=full))
        assert [x.code for x in err.value.errors] == ["INVALID_ARGUMENT"]
    finally:
        c.write(update("DELETE", table_entry=e))


def test_meter_and_direct_meter_configs_round_trip(session):
    c, peer = session
    me = p4runtime_pb2.MeterEntry(meter_id=c.object_id("meters", "MkIngress.port_meter"))
    me.index.index = 7
    me.config.cir, me.config.cburst, me.config.pir, me.config.pburst = 100, 10, 200, 20
    c.write(update("MODIFY", meter_entry=me))
    want = p4runtime_pb2.MeterEntry(meter_id=me.meter_id)
    want.index.index = 7
    [got] = c.read(p4runtime_pb2.Entity(meter_entry=want))
    assert got.meter_entry.config == me.config
    reset = p4runtime_pb2.MeterEntry(meter_id=me.meter_id)
    reset.index.index = 7
    c.write(update("MODIFY", meter_entry=reset))  # no config = back to unmetered
    [got] = c.read(p4runtime_pb2.Entity(meter_entry=want))
    assert not got.meter_entry.HasField("config")

    e = c.table_entry("MkIngress.t_exact", {"hdr.ethernet.etherType": 0x0801}, "MkIngress.to_port_metered",
                      {"port": 1})
    c.write(update("INSERT", table_entry=e))
    try:
        dme = p4runtime_pb2.DirectMeterEntry(table_entry=c.table_entry(
            "MkIngress.t_exact", {"hdr.ethernet.etherType": 0x0801}))
        dme.config.cir, dme.config.cburst, dme.config.pir, dme.config.pburst = 1, 1, 2, 2
        c.write(update("MODIFY", direct_meter_entry=dme))
        [got] = c.read(p4runtime_pb2.Entity(direct_meter_entry=p4runtime_pb2.DirectMeterEntry(
            table_entry=c.table_entry("MkIngress.t_exact", {"hdr.ethernet.etherType": 0x0801}))))
        assert got.direct_meter_entry.config == dme.config
    finally:
        c.write(update("DELETE", table_entry=e))


def test_rollback_batch_restores_real_core_state(session):
    c, peer = session
    base = c.table_entry("MkIngress.t_exact", {"hdr.ethernet.etherType": 0x0802}, "MkIngress.to_port_metered",
                         {"port": 1})
    lpm = c.table_entry("MkIngress.t_lpm", {"hdr.ethernet.dstAddr": (0x0C0000000000, 8)}, "MkIngress.to_port",
                        {"port": 2})
    c.write(update("INSERT", table_entry=base), update("INSERT", table_entry=lpm))
    try:
        dme = p4runtime_pb2.DirectMeterEntry(table_entry=c.table_entry(
            "MkIngress.t_exact", {"hdr.ethernet.etherType": 0x0802}))
        dme.config.cir, dme.config.cburst, dme.config.pir, dme.config.pburst = 5, 5, 9, 9
        c.write(update("MODIFY", direct_meter_entry=dme))
        everything = p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())
        before = c.read(everything)
        changed = c.table_entry("MkIngress.t_exact", {"hdr.ethernet.etherType": 0x0802},
                                "MkIngress.to_port_metered", {"port": 7})
        bad = c.table_entry("MkIngress.t_lpm", {"hdr.ethernet.dstAddr": (0x0C0000000001, 8)},
                            "MkIngress.to_port", {"port": 2})
        req = p4runtime_pb2.WriteRequest(device_id=1, atomicity=p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR)
        req.election_id.high, req.election_id.low = c.election_id
        req.updates.extend([update("MODIFY", table_entry=changed), update("DELETE", table_entry=lpm),
                            update("INSERT", table_entry=bad)])
        with pytest.raises(grpc.RpcError):
            c.stub.Write(req)
        assert c.read(everything) == before
        [dm] = c.read(p4runtime_pb2.Entity(direct_meter_entry=p4runtime_pb2.DirectMeterEntry(
            table_entry=c.table_entry("MkIngress.t_exact", {"hdr.ethernet.etherType": 0x0802}))))
        assert dm.direct_meter_entry.config == dme.config
        assert send(peer, 9, 0x0C0000000001, 1, 0x0802) == 2  # the lpm entry forwards again
    finally:
        c.write(update("DELETE", table_entry=base), update("DELETE", table_entry=lpm))
