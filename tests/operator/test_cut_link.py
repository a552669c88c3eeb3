"""Port down on BMv2 over veth, the way BMv2 survives it (issue 33, item 3): a zero-length root
queue on both ends of the veth pair drops what either end sends, both interfaces stay up, and
removing it restores the link.  Needs root (veth pairs); the negative control is the link before
the cut."""
from __future__ import annotations

import os
import socket
import subprocess
import time
import uuid

import pytest

from bmv2_env.target import Bmv2Target, cut_link, veth_peer

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="veth pairs need root")


@pytest.fixture
def veth():
    tag = uuid.uuid4().hex[:6]
    a, b = f"ct{tag}a", f"ct{tag}b"
    if subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], capture_output=True).returncode:
        pytest.skip("cannot create veth pairs here")
    for name in (a, b):
        subprocess.run(["ip", "link", "set", name, "up"], check=True)
    yield a, b
    subprocess.run(["ip", "link", "del", a], capture_output=True)


def crosses(src: str, dst: str) -> bool:
    """Does a frame sent on ``src`` arrive on ``dst`` (within a bounded wait)?"""
    marker = os.urandom(8)
    with socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88B5)) as rx, \
            socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as tx:
        rx.bind((dst, 0))
        rx.settimeout(0.2)
        tx.bind((src, 0))
        try:
            tx.send(b"\xff" * 6 + b"\x02" + b"\x00" * 5 + b"\x88\xb5" + marker + b"\x00" * 40)
        except OSError:        # ENOBUFS: the zero-length queue refused it at once
            return False
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            try:
                if marker in rx.recv(2048):
                    return True
            except socket.timeout:
                pass
    return False


def oper_up(name: str) -> bool:
    return open(f"/sys/class/net/{name}/operstate").read().strip() in ("up", "unknown")


def test_a_cut_link_drops_both_ways_and_stays_up_then_comes_back(veth) -> None:
    a, b = veth
    assert veth_peer(a) == b and veth_peer(b) == a
    assert crosses(a, b) and crosses(b, a)                  # control: the link carries frames
    assert cut_link(a, True) == [a, b]
    assert not crosses(a, b) and not crosses(b, a)
    assert oper_up(a) and oper_up(b)                        # no interface went down
    cut_link(a, False)
    assert crosses(a, b) and crosses(b, a)


def test_bmv2_port_down_and_up_use_the_cut(veth) -> None:
    a, b = veth
    target = Bmv2Target(thrift_port=1, interfaces={2: a})
    target.set_port_up(2, False)
    assert not crosses(a, b) and oper_up(a)
    target.set_port_up(2, True)
    assert crosses(a, b)
