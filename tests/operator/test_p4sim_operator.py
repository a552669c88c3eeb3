"""p4sim as an operator meets it (issue 33): a compiled program loads from any directory, a
second switch on an address in use is refused, a mistyped flag is named, and ``compile`` takes
p4c's common flags."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from p4sim.compiler import compile_files
from p4sim.errors import CompileError
from p4sim.frontend.preprocess import BUILTIN_PREFIX, is_builtin_source
from p4sim.p4rt import Device, DeviceOptions, P4RuntimeServer
from p4sim.program import Program
from testkit.p4sim_process import REPO, free_port

PROGRAM = REPO / "p4src" / "examples" / "l3.p4"


def p4sim(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "p4sim", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture
def two_dirs(tmp_path):
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    return here, there


def compile_in(directory: Path, out: Path, monkeypatch) -> bytes:
    """Compile l3.p4 with ``directory`` as the working directory, as the issue's user did from
    the checkout's root (the builtin files then lie below the working directory)."""
    monkeypatch.chdir(directory)
    compile_files(os.path.relpath(PROGRAM), out_json=out / "l3.json", p4info_out=out / "l3.p4info.txtpb")
    return (out / "l3.json").read_bytes()


def test_builtin_sources_are_named_as_builtins_not_by_a_path(two_dirs, monkeypatch) -> None:
    here, there = two_dirs
    config = compile_in(REPO, here, monkeypatch)
    text = json.loads(config)["program"]
    assert f'"{BUILTIN_PREFIX}core.p4"' in text and f'"{BUILTIN_PREFIX}v1model.p4"' in text
    assert "frontend/builtin" not in text
    # the device config loads whatever the working directory (the switch's)
    monkeypatch.chdir(there)
    assert Program.from_device_config(config).ir.arch == "v1model"
    monkeypatch.chdir("/")
    assert Program.from_device_config(config).ir.arch == "v1model"


def test_configs_compiled_before_keep_loading_and_a_lookalike_is_no_builtin() -> None:
    assert is_builtin_source("p4sim/frontend/builtin/core.p4")            # an older compile's relative path
    assert is_builtin_source("../../repo/p4sim/frontend/builtin/v1model.p4")
    assert not is_builtin_source("core.p4") and not is_builtin_source("mine/builtin/core.p4")
    assert not is_builtin_source(f"{BUILTIN_PREFIX}mine.p4")


def test_an_extern_in_a_user_file_is_still_refused_naming_that_file(tmp_path) -> None:
    """Negative control: position independence does not make a user's file a builtin."""
    src = tmp_path / "core.p4"          # named like the builtin, but the user's
    src.write_text("extern void my_extern();\n")
    with pytest.raises(CompileError) as e:
        compile_files(str(src))
    assert f"{src}:1:1" in str(e.value) and "extern declarations in user programs" in str(e.value)


def test_p4sim_run_from_another_directory_loads_the_program(two_dirs) -> None:
    here, there = two_dirs
    res = p4sim("compile", "-I", "p4src", "-o", str(here / "build" / "l3.json"), "--p4runtime-files",
                str(here / "build" / "l3.p4info.txtpb"), os.path.relpath(PROGRAM, REPO), cwd=REPO)
    assert res.returncode == 0, res.stderr
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "p4sim", "run", "--thrift-port", str(free_port()),
                             str(here / "build" / "l3.json"), "--", "--grpc-server-addr", f"127.0.0.1:{port}"],
                            cwd=there, env=dict(os.environ, PYTHONPATH=str(REPO)), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()           # the start line, or EOF if it exited
        assert f"serving P4Runtime on 127.0.0.1:{port}" in line, line + proc.stderr.read()
        # and pushed over P4Runtime (what stellarctl push does) by a controller in a third directory
        from control_plane.p4rt import ProgramFiles, SwitchSession

        program = ProgramFiles.load(here / "build" / "l3.json", here / "build" / "l3.p4info.txtpb")
        with SwitchSession(f"127.0.0.1:{port}", 0, name="sw").connect() as session:
            assert session.ensure_pipeline(program.p4info, program.device_config)
            assert session.current_pipeline()[1] == program.cookie
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_a_second_switch_on_an_address_in_use_is_refused() -> None:
    first = P4RuntimeServer(Device(DeviceOptions(device_id=1, clock="virtual")), "127.0.0.1:0")
    first.start()
    try:
        with pytest.raises(OSError) as e:
            P4RuntimeServer(Device(DeviceOptions(device_id=2, clock="virtual")), f"127.0.0.1:{first.port}")
        assert "address already in use" in str(e.value)
        # through the command line, as simple_switch_grpc: exit 1, the address named
        res = p4sim("run", "--no-p4", "--thrift-port", str(free_port()), "--",
                    "--grpc-server-addr", f"127.0.0.1:{first.port}", cwd=REPO, timeout=60)
        assert res.returncode == 1
        assert f"p4sim run: cannot listen on 127.0.0.1:{first.port}: address already in use" in res.stderr
    finally:
        first.stop(0)


def test_a_mistyped_run_flag_is_named() -> None:
    res = p4sim("run", "--no-p4", "--thrift-prot", "9", cwd=REPO, timeout=60)
    assert res.returncode == 1
    assert res.stdout.startswith("Error while parsing command line arguments")   # BMv2's own text, unchanged
    assert "p4sim run: unrecognised option '--thrift-prot'" in res.stderr
    res = p4sim("run", "--no-p4", "--priority-queues", "8", cwd=REPO, timeout=60)
    assert "--priority-queues is a target option; give it after '--'" in res.stderr


def test_compile_takes_p4cs_common_flags(tmp_path) -> None:
    res = p4sim("compile", "--std", "p4-16", "-b", "bmv2", "--arch", "v1model", "-o", str(tmp_path / "l3.json"),
                "--p4runtime-files", f"{tmp_path}/a.txt,{tmp_path}/b.bin,{tmp_path}/c.json", str(PROGRAM), cwd=REPO)
    assert res.returncode == 0, res.stderr
    from google.protobuf import json_format, text_format
    from p4.config.v1 import p4info_pb2

    text = text_format.Parse((tmp_path / "a.txt").read_text(), p4info_pb2.P4Info())
    binary = p4info_pb2.P4Info.FromString((tmp_path / "b.bin").read_bytes())
    as_json = json_format.Parse((tmp_path / "c.json").read_text(), p4info_pb2.P4Info())
    assert text == binary == as_json and any(t.preamble.name == "MyIngress.ipv4_lpm" for t in text.tables)
    assert not any("," in p.name for p in tmp_path.iterdir())           # no "a.txt,..." directory
    # --p4runtime-files is optional (only the config), and so is -o (a check)
    res = p4sim("compile", "-o", str(tmp_path / "only.json"), str(PROGRAM), cwd=REPO)
    assert res.returncode == 0 and (tmp_path / "only.json").exists(), res.stderr
    res = p4sim("compile", "--p4runtime-file", str(tmp_path / "info"), "--p4runtime-format", "json",
                str(PROGRAM), cwd=REPO)
    assert res.returncode == 0 and json.loads((tmp_path / "info").read_text())["tables"]
    # refusals name the flag
    res = p4sim("compile", "--std", "p4-14", str(PROGRAM), cwd=REPO)
    assert res.returncode == 2 and "P4_16 only" in res.stderr
    res = p4sim("compile", "-b", "tofino", str(PROGRAM), cwd=REPO)
    assert res.returncode == 2 and "--target tofino" in res.stderr


def test_help_and_version() -> None:
    res = p4sim("--help", cwd=REPO)
    assert res.returncode == 0 and "v1model and TNA" in res.stdout and "v1model target" not in res.stdout
    res = p4sim("compile", "--help", cwd=REPO)
    helped = res.stdout.replace("\n", " ")
    for flag in ("PROGRAM.p4", "-I DIR", "-D NAME", "--output", "--p4runtime-files", "--p4runtime-format",
                 "--arch", "--target", "--std"):
        assert flag in helped
    assert helped.count("  -") >= 10 and "show this help" in helped
    res = p4sim("--version", cwd=REPO)
    assert res.returncode == 0 and res.stdout.startswith("p4sim ")
