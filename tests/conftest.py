"""Test setup for the whole suite: the tests run as they would beside a running fabric, and
keep their run-time state out of the checkout.

An operator's switches hold the targets' default ports -- Thrift 9090 and P4Runtime 9559
(simple_switch_grpc's and ``p4sim run``'s defaults).  The suite holds them itself for the whole
session, so a test that binds a fixed default port instead of a free one fails here, not on the
operator's machine.  ``STELLAR_TESTS_HOLD_PORTS=0`` turns it off; a port something else already
holds is left to it.
"""
from __future__ import annotations

import os
import socket

import pytest

HELD_PORTS = (9090, 9559)


@pytest.fixture(scope="session", autouse=True)
def default_ports_held():
    """{port: True if this session holds it, False if something else already did}."""
    held: dict[int, bool] = {}
    sockets = []
    if os.environ.get("STELLAR_TESTS_HOLD_PORTS", "1") != "0":
        for port in HELD_PORTS:
            sock = socket.socket()
            try:
                sock.bind(("0.0.0.0", port))
                sock.listen(1)
                sockets.append(sock)
                held[port] = True
            except OSError:
                sock.close()
                held[port] = False
    yield held
    for sock in sockets:
        sock.close()


@pytest.fixture(autouse=True)
def own_state_dir(tmp_path, monkeypatch):
    """Each test its own run-time state directory (``stellarctl fail-link``'s failed-links
    records), never the checkout's build/state."""
    monkeypatch.setenv("STELLAR_STATE_DIR", str(tmp_path / "stellar-state"))
