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
from control_plane.contract import TNA_DRE_SCORE_SCALE
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
                "StellarIngress.routing.set_group", {"group": 1, "count": 1, "prior": 0})))
            c.write(update("INSERT", table_entry=c.table_entry(
                "pipe.StellarIngress.member_port.members", {"meta.group": 1, "meta.chosen": 0},
                "StellarIngress.member_port.set_port", {"port": 4})))
        finally:
            c.close()
        sw.send(1, roce("10.0.1.1", "10.0.2.9", 3, 0))
        sw.advance(10)
        assert [p for p, _ in sw.output] == [4]


def _levels_over_p4runtime(tmp_path, levels) -> list[int]:
    """Group 1 = {member 0: port 4, member 1: port 5}, every flow hashed to member 0; the
    controller's member levels written as a table entry over P4Runtime (no register write)."""
    compiler.compile_files(STELLAR_TNA, out_json=tmp_path / "s.json")
    with EmbeddedSwitch(device_config=(tmp_path / "s.json").read_bytes(), priority_queues=8) as sw:
        c = P4RuntimeClient(sw.address, device_id=1)
        try:
            c.connect()
            p4info = c.get_p4info()
            assert "pipe.StellarIngressDeparser.elephant_digest" in {
                d.preamble.name for d in p4info.digests}
            ups = [c.table_entry("pipe.StellarIngress.routing.lpm",
                                 {"hdr.ipv4.dst_addr": (0x0A000200, 24)},
                                 "StellarIngress.routing.set_group", {"group": 1, "count": 2, "prior": 0})]
            for m, port in ((0, 4), (1, 5)):
                ups.append(c.table_entry("pipe.StellarIngress.member_port.members",
                                         {"meta.group": 1, "meta.chosen": m},
                                         "StellarIngress.member_port.set_port", {"port": port}))
            for i in range(8):
                ups.append(c.table_entry("pipe.StellarIngress.path_choice.hash_member",
                                         {"meta.group": 1, "meta.flow_hash[2:0]": i},
                                         "StellarIngress.path_choice.set_hashed", {"member": 0}))
            if levels is not None:
                ups.append(c.table_entry("pipe.StellarIngress.dre_base.levels", {"meta.group": 1},
                                         "StellarIngress.dre_base.set_levels",
                                         {**{f"l{i}": TNA_DRE_SCORE_SCALE * v for i, v in enumerate(levels)},
                                          "measured": 0xFF}))
            for e in ups:
                c.write(update("INSERT", table_entry=e))
        finally:
            c.close()
        sw.send(1, roce("10.0.1.1", "10.0.2.9", 3, 0))
        sw.advance(10)
        return [p for p, _ in sw.output]


def test_the_controllers_member_levels_are_table_entries_over_p4runtime(tmp_path):
    assert _levels_over_p4runtime(tmp_path, [50, 0, 0, 0, 0, 0, 0, 0]) == [5]


def test_negative_control_without_the_levels_entry_the_flow_takes_its_hash_member(tmp_path):
    assert _levels_over_p4runtime(tmp_path, None) == [4]
