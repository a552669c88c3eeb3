"""A TNA program through p4sim's target plumbing: device config, P4Runtime, the v1model switch."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import p4sim
from p4sim import compiler
from p4sim.errors import RuntimeApiError
from p4sim.p4rt import EmbeddedSwitch
from p4sim.p4rt.client import P4RuntimeClient, update
from p4sim.runtime.tna_switch import TnaSwitch
from p4sim.switch import Switch
from tna_leaf import STELLAR_TNA, roce


def test_device_config_keeps_the_architecture(tmp_path):
    compiler.compile_files(STELLAR_TNA, out_json=tmp_path / "s.json", p4info_out=tmp_path / "s.txt")
    data = (tmp_path / "s.json").read_bytes()
    assert json.loads(data)["arch"] == "tna"
    prog = p4sim.Program.from_device_config(data)
    assert isinstance(p4sim.Switch(prog), TnaSwitch)
    assert 'arch: "tna"' in (tmp_path / "s.txt").read_text()


def test_a_v1model_switch_refuses_a_tna_program():
    sw = Switch(p4sim.compile(str(Path(__file__).resolve().parents[2] / "p4src/examples/l3.p4")))
    with pytest.raises(RuntimeApiError) as ei:
        sw.load(p4sim.compile(str(STELLAR_TNA)))
    assert ei.value.code == "INVALID_ARGUMENT" and "TnaSwitch" in ei.value.message


def test_tna_program_programmed_over_p4runtime_forwards(tmp_path):
    compiler.compile_files(STELLAR_TNA, out_json=tmp_path / "s.json")
    with EmbeddedSwitch(device_config=(tmp_path / "s.json").read_bytes(), priority_queues=8) as sw:
        assert isinstance(sw.device.switch, TnaSwitch)
        c = P4RuntimeClient(sw.address, device_id=1)
        try:
            c.connect()
            c.get_p4info()
            c.write(update("INSERT", table_entry=c.table_entry(
                "pipe.StellarIngress.routing.lpm", {"hdr.ipv4.dst_addr": (0x0A000200, 24)},
                "StellarIngress.routing.set_group", {"group": 1, "count": 1})))
            c.write(update("INSERT", table_entry=c.table_entry(
                "pipe.StellarIngress.member_port.members", {"meta.group": 1, "meta.chosen": 0},
                "StellarIngress.member_port.set_port", {"port": 4})))
        finally:
            c.close()
        sw.send(1, roce("10.0.1.1", "10.0.2.9", 3, 0))
        sw.advance(10)
        assert [p for p, _ in sw.output] == [4]
