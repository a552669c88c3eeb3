"""The p4sim target-control side channel (queue rate/depth, port state, virtual clock)."""
from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from p4sim.p4rt import Device, DeviceOptions
from p4sim.target_control import ControlClient, ControlError, ControlServer
from testkit.fake_switch import FakeProgram, FakeSwitch
from testkit.p4rt_harness import FAKE_CONFIG


def make_device(clock: str) -> Device:
    dev = Device(DeviceOptions(device_id=3, clock=clock, cpu_port=64),
                 program_loader=FakeProgram.from_device_config,
                 switch_factory=lambda p, o: FakeSwitch(p, clock=o.clock, cpu_port=o.cpu_port))
    _, sw = dev.build_switch(FAKE_CONFIG)
    dev.install(sw)
    return dev


@pytest.fixture
def control():
    dev = make_device("virtual")
    server = ControlServer(dev, "127.0.0.1:0")
    server.start()
    client = ControlClient(f"127.0.0.1:{server.port}")
    yield dev, client
    client.close()
    server.stop()


def test_info_and_virtual_clock(control):
    dev, client = control
    assert client.call("info")["clock"] == "virtual"
    assert client.call("now_us") == 0
    assert client.call("advance", us=250) == 250
    assert dev.switch.now_us == 250


def test_queue_and_port_operations_reach_the_switch(control):
    dev, client = control
    client.call("set_queue_rate", pps=1000, port=2)
    client.call("set_queue_depth", pkts=8)
    client.call("set_port", port=2, up=False)
    assert dev.switch.queue_calls == [("rate", 1000, 2, None), ("depth", 8, None, None)]
    assert dev.switch.port_up == {2: False}


def test_settings_survive_a_new_pipeline(control):
    dev, client = control
    client.call("set_queue_rate", pps=10, port=1)
    client.call("set_port", port=1, up=False)
    _, sw = dev.build_switch(FAKE_CONFIG)
    dev.install(sw)
    assert sw.queue_calls == [("rate", 10, 1, None)] and sw.port_up == {1: False}


def test_bad_requests_are_refused_and_channel_keeps_working(control):
    dev, client = control
    with pytest.raises(ControlError) as e:
        client.call("advance", us=-1)
    assert e.value.kind == "invalid"
    with pytest.raises(ControlError) as e:
        client.call("set_port", port=1, up="no")
    assert e.value.kind == "invalid"
    with pytest.raises(ControlError) as e:
        client.call("reboot")
    assert e.value.kind == "not_supported"
    assert client.call("now_us") == 0


def test_garbage_line_gets_an_error_reply(control):
    dev, client = control
    host, port = client._sock.getpeername()
    with socket.create_connection((host, port), timeout=5) as s:
        s.sendall(b"{not json\n")
        reply = json.loads(s.makefile().readline())
    assert reply["ok"] is False and reply["kind"] == "invalid"


def test_advance_on_wall_clock_is_not_supported():
    dev = make_device("wall")
    server = ControlServer(dev, "127.0.0.1:0")
    server.start()
    try:
        client = ControlClient(f"127.0.0.1:{server.port}")
        with pytest.raises(ControlError) as e:
            client.call("advance", us=10)
        assert e.value.kind == "not_supported"
        client.close()
    finally:
        server.stop()


def test_stats_reports_switch_tallies(control):
    dev, client = control
    dev.switch.stats = {"received": 3}
    assert client.call("stats") == {"received": 3, "dropped_no_pipeline": 0}


def test_sync_waits_for_output_to_be_handed_to_the_ports(control):
    dev, client = control
    flushed = []
    dev.flush_output = lambda: flushed.append(True)
    assert client.call("sync") is None
    assert flushed == [True]


def test_pktgen_port_down_is_refused_without_a_tna_pipeline(control):
    _dev, client = control
    with pytest.raises(ControlError) as ei:
        client.call("enable_pktgen_port_down", app_id=1)
    assert ei.value.kind == "not_supported" and "TNA" in str(ei.value)


def test_pktgen_port_down_on_a_tna_pipeline_sends_the_port_down_packet(tmp_path):
    """A port going down after the op reaches the TNA program's ingress as pktgen's packet
    (the program clears the member's bit); before it, the same failure sends nothing."""
    from p4sim import compiler

    out = tmp_path / "s.json"
    compiler.compile_files(Path(__file__).resolve().parents[2] / "p4src/tna/stellar.p4", out_json=out)
    dev = Device(DeviceOptions(device_id=1, clock="virtual"))
    _, sw = dev.build_switch(out.read_bytes())
    dev.install(sw)
    server = ControlServer(dev, "127.0.0.1:0")
    server.start()
    client = ControlClient(f"127.0.0.1:{server.port}")
    try:
        client.call("set_port", port=5, up=False)          # control: no app, no packet
        assert client.call("stats").get("pktgen_port_down", 0) == 0
        client.call("set_port", port=5, up=True)
        client.call("enable_pktgen_port_down", app_id=1)
        client.call("set_port", port=5, up=False)
        assert client.call("stats")["pktgen_port_down"] == 1
        with pytest.raises(ControlError):
            client.call("enable_pktgen_port_down", app_id=99)   # out of pktgen's app range
    finally:
        client.close()
        server.stop()
