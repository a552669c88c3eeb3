"""Interop proof: p4runtime-shell, used exactly as its README shows, against ``p4sim run``.

The shell is driven through its own API (``setup``, ``TableEntry(...)(action=...)``, ``insert``,
``read``), including its zero-padded byte strings, and the entry it installs must forward a
real packet arriving over the nanomsg port socket.
"""
from __future__ import annotations

import struct

import pynng
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from tests.p4rt.p4sim_process import REPO, compile_program, start_p4sim

sh = pytest.importorskip("p4runtime_sh.shell")
from p4runtime_sh.p4runtime import P4RuntimeWriteException  # noqa: E402


@pytest.fixture(scope="module")
def l3_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("l3")
    return compile_program(REPO / "p4src/examples/l3.p4", out)


@pytest.fixture
def switch(tmp_path):
    proc = start_p4sim(tmp_path)
    yield proc
    proc.stop()


def nn_peer(addr: str) -> pynng.Pair0:
    peer = pynng.Pair0(dial=addr)
    peer.recv_timeout = 5000
    return peer


def test_p4runtime_shell_programs_p4sim_and_the_entry_forwards(switch, l3_build):
    json_path, p4info_path = l3_build
    sh.setup(device_id=1, grpc_addr=switch.grpc_addr, election_id=(0, 1),
             config=sh.FwdPipeConfig(str(p4info_path), str(json_path)), verbose=False)
    try:
        te = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.ipv4_forward")
        te.match["hdr.ipv4.dstAddr"] = "10.0.1.0/24"
        te.action["dstAddr"] = "00:00:00:00:01:01"
        te.action["port"] = "3"
        te.insert()

        got = list(sh.TableEntry("MyIngress.ipv4_lpm").read())
        assert len(got) == 1
        assert got[0].match["hdr.ipv4.dstAddr"].lpm.prefix_len == 24
        assert int.from_bytes(got[0].action["port"].value, "big") == 3

        # Duplicate insert: the shell's own exception, naming the canonical code.
        with pytest.raises(P4RuntimeWriteException) as err:
            te.insert()
        assert "ALREADY_EXISTS" in str(err.value)

        # The entry forwards a packet sent into port 1 over the nanomsg socket.
        peer = nn_peer(switch.ipc_addr)
        try:
            pkt = bytes(Ether(dst="00:00:00:00:00:aa") / IP(src="10.0.0.1", dst="10.0.1.7", ttl=9)
                        / UDP() / (b"p" * 30))
            peer.send(struct.pack("<iii", 3, 1, len(pkt)) + pkt)
            msg = peer.recv()
            mtype, port, length = struct.unpack_from("<iii", msg)
            out = Ether(msg[12:])
            assert (mtype, port, length) == (4, 3, len(pkt))
            assert out[IP].ttl == 8 and out[Ether].dst == "00:00:00:00:01:01"
        finally:
            peer.close()

        # Direct counter of that entry, read through the shell.
        dc = sh.DirectCounterEntry("MyIngress.ipv4_lpm_counter")
        dc.table_entry.match["hdr.ipv4.dstAddr"] = "10.0.1.0/24"
        [counted] = list(dc.read())
        assert counted.packet_count == 1 and counted.byte_count == len(pkt)

        te.action["port"] = "4"
        te.modify()
        assert int.from_bytes(next(iter(sh.TableEntry("MyIngress.ipv4_lpm").read())).action["port"].value,
                              "big") == 4
        te.delete()
        assert list(sh.TableEntry("MyIngress.ipv4_lpm").read()) == []
    finally:
        sh.teardown()
    assert switch.proc.poll() is None, switch.log()


@pytest.fixture(scope="module")
def basic_build(tmp_path_factory):
    out = tmp_path_factory.mktemp("basic")
    return compile_program(REPO / "ptf_tests/p4/ptf_basic.p4", out)


def test_p4runtime_shell_packet_out_packet_in_and_counters(switch, basic_build):
    json_path, p4info_path = basic_build
    sh.setup(device_id=1, grpc_addr=switch.grpc_addr, election_id=(0, 1),
             config=sh.FwdPipeConfig(str(p4info_path), str(json_path)), verbose=False)
    peer = nn_peer(switch.ipc_addr)
    try:
        frame = bytes(Ether(dst="00:00:00:00:00:02") / IP(dst="1.2.3.4") / UDP() / (b"s" * 20))
        sh.PacketOut(frame, egress_port="3", _pad="0").send()
        msg = peer.recv()
        assert struct.unpack_from("<iii", msg) == (4, 3, len(frame)) and msg[12:] == frame

        te = sh.TableEntry("BasicIngress.acl")(action="BasicIngress.punt")
        te.match["hdr.ipv4.protocol"] = "17&&&0xff"
        te.priority = 10
        te.insert()
        sniffer = sh.PacketIn()
        peer.send(struct.pack("<iii", 3, 2, len(frame)) + frame)
        [pin] = list(sniffer.sniff(timeout=2))
        assert pin.packet.payload == frame
        assert [int.from_bytes(m.value, "big") for m in pin.packet.metadata] == [2, 0]

        ce = sh.CounterEntry("port_pkts")
        ce.index = 2
        [count] = list(ce.read())
        assert (count.packet_count, count.byte_count) == (1, len(frame))
    finally:
        peer.close()
        sh.teardown()
