"""The nanomsg port transport against PTF's own nn client class (protocol compatibility)."""
from __future__ import annotations

import queue
import threading

import pynng
import pytest

from p4sim.ports import NanomsgPorts, PortMap, parse_interface_arg

ptf_dataplane = pytest.importorskip("ptf.dataplane")


@pytest.fixture
def nn(tmp_path):
    addr = f"ipc://{tmp_path}/ports.ipc"
    received: "queue.Queue[tuple[int, bytes]]" = queue.Queue()
    status: "queue.Queue[tuple[int, bool]]" = queue.Queue()
    pm = PortMap()
    pm.set_default(NanomsgPorts(addr))
    pm.start(lambda p, d: received.put((p, d)), lambda p, up: status.put((p, up)))
    peer = ptf_dataplane.DataPlanePacketSourceNN(0, addr, 2000, 1000)
    for port in (1, 2):
        peer.port_add(port)
    yield pm, peer, received, status
    peer.close()
    pm.close()


def recv_from_switch(peer):
    """PTF's recv() returns None for non-packet messages; loop (bounded by its recv timeout)."""
    for _ in range(10):
        got = peer.recv()
        if got is not None:
            return got
    raise AssertionError("no packet from the switch")


def test_ptf_packet_reaches_switch_with_port(nn):
    pm, peer, received, _ = nn
    peer.send(2, b"\x01\x02\x03")
    assert received.get(timeout=5) == (2, b"\x01\x02\x03")


def test_switch_output_reaches_ptf_as_packet_out(nn):
    pm, peer, received, _ = nn
    # PTF registers ports asynchronously; a round trip makes sure our socket is connected.
    peer.send(1, b"sync")
    received.get(timeout=5)
    pm.transmit(1, b"\xaa" * 20)
    device, port, data, _ = recv_from_switch(peer)
    assert (device, port, data) == (0, 1, b"\xaa" * 20)


def test_port_status_and_counters(nn):
    pm, peer, received, status = nn
    peer.port_bring_down(2)
    assert status.get(timeout=5) == (2, False)
    peer.port_bring_up(2)
    assert status.get(timeout=5) == (2, True)
    peer.send(1, b"x")
    received.get(timeout=5)
    got: list = []
    t = threading.Thread(target=lambda: got.append(peer.get_nn_counters(1, timeout=5)))
    t.start()
    # PTF's get_info waits for the reply, which its own recv() loop must read: pump it.
    for _ in range(20):
        try:
            peer.recv()
        except pynng.Timeout:
            pass
        if not t.is_alive():
            break
    t.join(timeout=5)
    assert got == [(1, 0)]


def test_interface_argument_parsing():
    assert parse_interface_arg("3@veth5") == (3, "veth5")
    for bad in ("veth5", "x@veth", "3@"):
        with pytest.raises(ValueError):
            parse_interface_arg(bad)


def test_a_burst_of_output_is_not_lost(nn):
    """Multicast and draining queues emit back to back; every packet must reach the peer."""
    pm, peer, received, _ = nn
    peer.send(1, b"sync")
    received.get(timeout=5)
    for i in range(200):
        pm.transmit(2, i.to_bytes(2, "big") * 10)
    got = [recv_from_switch(peer)[2] for _ in range(200)]
    assert got == [i.to_bytes(2, "big") * 10 for i in range(200)]
