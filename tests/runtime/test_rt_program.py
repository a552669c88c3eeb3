"""p4sim.compile / Program / Switch loading."""
from pathlib import Path

import pytest

import p4sim
from irb import NO_ACTION, header, mem, program, struct
from p4sim import compiler
from p4sim.errors import CompileError

ROOT = Path(__file__).resolve().parents[2]
L3 = ROOT / "p4src" / "examples" / "l3.p4"


def test_compile_returns_a_program_with_p4info():
    prog = p4sim.compile(str(L3))
    assert isinstance(prog, p4sim.Program)
    assert prog.p4info.tables[0].preamble.name == "MyIngress.ipv4_lpm"
    assert "def " in prog.generated_source


def test_compile_error_names_the_file(tmp_path):
    bad = tmp_path / "bad.p4"
    bad.write_text("#include <core.p4>\n#include <v1model.p4>\ncontrol X( { }\n")
    with pytest.raises(CompileError) as e:
        p4sim.compile(str(bad))
    assert "bad.p4" in str(e.value)


def test_program_from_device_config_runs(tmp_path):
    out = tmp_path / "l3.json"
    compiler.compile_files(L3, out_json=out)
    prog = p4sim.Program.from_device_config(out.read_bytes())
    sw = p4sim.Switch(prog)
    assert "MyIngress.ipv4_lpm" in sw.tables


def test_device_config_garbage_is_a_compile_error():
    with pytest.raises(CompileError):
        p4sim.Program.from_device_config(b"not json")


def test_unsupported_match_kind_is_a_compile_error_with_position():
    K = header("k_t", ("a", 8))
    H = struct("headers", ("k", K))

    def ingress(b):
        b.table("t", [(mem(mem(b.hdr, "k"), "a"), "selector", "hdr.k.a")], [NO_ACTION])
        return []

    with pytest.raises(CompileError) as e:
        p4sim.Switch(p4sim.Program(program(H, ingress=ingress)))
    assert "selector" in str(e.value)


def test_one_program_serves_independent_switches():
    prog = p4sim.compile(str(L3))
    a, b = p4sim.Switch(prog), p4sim.Switch(prog)
    a.insert_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": ("10.0.0.0", 8)}, "MyIngress.drop")
    assert len(a.table_entries("MyIngress.ipv4_lpm")) == 1 and b.table_entries("MyIngress.ipv4_lpm") == []


def test_switch_load_replaces_tables_and_state():
    prog = p4sim.compile(str(L3))
    sw = p4sim.Switch(prog)
    sw.insert_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": ("10.0.0.0", 8)}, "MyIngress.drop")
    sw.load(prog)
    assert sw.table_entries("MyIngress.ipv4_lpm") == []


def test_names_may_be_given_by_a_unique_dotted_suffix():
    prog = p4sim.compile(str(ROOT / "tests" / "runtime" / "p4" / "externs.p4"))
    sw = p4sim.Switch(prog)
    assert sw.counter_size("cnt") == sw.counter_size("I.cnt") == 4
    sw.register_write("reg", 1, 5)
    assert sw.register_read("I.reg", 1) == 5
    l3 = p4sim.Switch(p4sim.compile(str(L3)))
    assert l3.table_entries("ipv4_lpm") == []


def test_reloading_a_program_drops_packets_still_queued_for_the_old_one():
    prog = p4sim.compile(str(ROOT / "tests" / "runtime" / "p4" / "queue_probe.p4"))
    sw = p4sim.Switch(prog)
    sw.set_queue_rate(1000, port=1)
    for _ in range(3):
        sw.send(0, bytes([0, 1, 0]) + bytes(35))  # probe: out_port 1, priority 0
    sw.take_output()
    sw.load(prog)
    sw.advance(10_000)
    assert sw.take_output() == [] and sw.stats["pipeline_reload"] == 2 and sw.stats["runtime_error"] == 0
