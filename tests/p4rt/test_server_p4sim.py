"""The P4Runtime server in a real ``p4sim run`` process with real programs (not the fake)."""
from __future__ import annotations

import struct

import grpc
import pynng
import pytest
from p4.v1 import p4runtime_pb2
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4sim.p4rt.client import P4RuntimeClient, WriteFailed, load_p4info, update
from p4sim.target_control import ControlClient
from testkit.p4sim_process import REPO, compile_program, start_p4sim


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    out = tmp_path_factory.mktemp("progs")
    return {
        "basic": compile_program(REPO / "ptf_tests/p4/ptf_basic.p4", out),
        "l3": compile_program(REPO / "p4src/examples/l3.p4", out),
    }


@pytest.fixture
def switch(tmp_path):
    proc = start_p4sim(tmp_path)
    yield proc
    proc.stop()


def client_for(switch, election=(0, 1)) -> P4RuntimeClient:
    c = P4RuntimeClient(switch.grpc_addr, device_id=1, election_id=election)
    c.connect()
    return c


def test_pipeline_push_checks_p4info_against_program(switch, builds):
    c = client_for(switch)
    try:
        basic_json, _ = builds["basic"]
        _, l3_info = builds["l3"]
        with pytest.raises(grpc.RpcError) as e:
            c.set_pipeline(load_p4info(str(l3_info)), basic_json.read_bytes())
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        with pytest.raises(grpc.RpcError) as e:
            c.write()
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION  # nothing was installed
    finally:
        c.close()


def test_packet_out_and_packet_in_through_controller_headers(switch, builds):
    json_path, info_path = builds["basic"]
    c = client_for(switch)
    peer = pynng.Pair0(dial=switch.ipc_addr)
    peer.recv_timeout = 5000
    try:
        c.set_pipeline(load_p4info(str(info_path)), json_path.read_bytes())
        frame = bytes(Ether(dst="00:00:00:00:00:02") / IP(dst="1.2.3.4") / UDP() / (b"o" * 20))
        c.packet_out(frame, {"egress_port": 6, "_pad": 0})
        msg = peer.recv()
        assert struct.unpack_from("<iii", msg) == (4, 6, len(frame)) and msg[12:] == frame
        # ACL punt -> packet-in with the ingress port.
        acl = c.table_entry("BasicIngress.acl", {"hdr.ipv4.protocol": (17, 0xFF)}, "BasicIngress.punt",
                            priority=1)
        c.write(update("INSERT", table_entry=acl))
        peer.send(struct.pack("<iii", 3, 2, len(frame)) + frame)
        payload, md = c.packet_in()
        assert payload == frame and md == {"ingress_port": 2, "_pad": 0}
    finally:
        peer.close()
        c.close()


def test_malformed_requests_leave_the_server_serving(switch, builds):
    json_path, info_path = builds["basic"]
    c = client_for(switch)
    try:
        c.set_pipeline(load_p4info(str(info_path)), json_path.read_bytes())
        lpm = c.table_entry("BasicIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000000, 8)},
                            "BasicIngress.ipv4_forward", {"dstAddr": 1, "port": 1})
        bad = p4runtime_pb2.TableEntry()
        bad.CopyFrom(lpm)
        bad.match[0].lpm.value = b""  # empty bytestring
        wide = p4runtime_pb2.TableEntry()
        wide.CopyFrom(lpm)
        wide.action.action.params[1].value = b"\xff\xff"  # 16 bits into bit<9>
        with pytest.raises(WriteFailed) as e:
            c.write(update("INSERT", table_entry=bad), update("INSERT", table_entry=wide),
                    update("INSERT", table_entry=lpm))
        assert [x.code for x in e.value.errors] == ["INVALID_ARGUMENT", "OUT_OF_RANGE", "OK"]
        entries = c.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))
        assert len(entries) == 1
        # Register and counter reads on the real core.
        rid = c.object_id("registers", "last_len")
        want = p4runtime_pb2.RegisterEntry(register_id=rid)
        want.index.index = 511
        assert c.read(p4runtime_pb2.Entity(register_entry=want))[0].register_entry.data.bitstring == b"\x00"
        want.index.index = 512
        with pytest.raises(grpc.RpcError) as e2:
            c.read(p4runtime_pb2.Entity(register_entry=want))
        assert e2.value.code() == grpc.StatusCode.OUT_OF_RANGE
    finally:
        c.close()
    assert switch.proc.poll() is None


def test_started_with_a_config_serves_its_p4info_and_virtual_clock(tmp_path, builds):
    json_path, info_path = builds["l3"]
    proc = start_p4sim(tmp_path, config=json_path)
    try:
        c = P4RuntimeClient(proc.grpc_addr, device_id=1)
        try:
            names = {t.preamble.name for t in c.get_p4info().tables}
            assert "MyIngress.ipv4_lpm" in names
        finally:
            c.close()
        ctl = ControlClient(proc.control_addr)
        try:
            assert ctl.call("info")["clock"] == "virtual"
            assert ctl.call("advance", us=1500) == 1500
            assert ctl.call("now_us") == 1500
        finally:
            ctl.close()
    finally:
        proc.stop()
