"""bmv2_env: up/down of a p4sim switch, and the BMv2 target-control implementation."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess

import pytest

from bmv2_env.env import EnvError, SwitchState, down, up
from bmv2_env.target import Bmv2Target, NotSupportedByTarget, P4simTarget, connect
from p4sim.p4rt.client import P4RuntimeClient
from testkit.p4sim_process import REPO

PROGRAM = REPO / "ptf_tests/p4/ptf_basic.p4"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def test_up_pushes_pipeline_and_down_removes_everything(tmp_path):
    state = up("t1", "p4sim", PROGRAM, ports=4, transport="nn", state_dir=tmp_path, clock="virtual")
    try:
        assert (tmp_path / "t1.json").exists()
        assert SwitchState.load(tmp_path / "t1.json").grpc_addr == state.grpc_addr
        ipc_file = state.ipc[len("ipc://"):]
        assert os.path.exists(ipc_file)
        client = P4RuntimeClient(state.grpc_addr, device_id=state.device_id)
        try:
            tables = {t.preamble.name for t in client.get_p4info().tables}
        finally:
            client.close()
        assert "BasicIngress.ipv4_lpm" in tables  # the pipeline was pushed
        target = connect("p4sim", control_addr=state.control_addr)
        assert isinstance(target, P4simTarget) and target.has_virtual_clock
        assert target.advance_us(10) == 10
        target.close()
        with pytest.raises(EnvError):
            up("t1", "p4sim", PROGRAM, ports=4, transport="nn", state_dir=tmp_path)
    finally:
        down("t1", tmp_path)
    assert not _alive(state.pid)
    assert not (tmp_path / "t1.json").exists() and not os.path.exists(ipc_file)
    with pytest.raises(EnvError):
        down("t1", tmp_path)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None, reason="veth needs root and iproute2")
def test_up_down_with_veth_pairs(tmp_path):
    state = up("tv", "p4sim", PROGRAM, ports=2, transport="veth", state_dir=tmp_path)
    try:
        links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
        assert "tv-p0" in links and "tv-h1" in links
    finally:
        down("tv", tmp_path)
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert "tv-p0" not in links and "tv-h1" not in links


def test_bad_program_reports_the_compile_error(tmp_path):
    bad = tmp_path / "bad.p4"
    bad.write_text("#include <core.p4>\n#include <v1model.p4>\nnonsense\n")
    with pytest.raises(EnvError) as e:
        up("tb", "p4sim", bad, ports=1, transport="nn", state_dir=tmp_path)
    assert "bad.p4:3:" in str(e.value)
    assert not (tmp_path / "tb.json").exists()


def test_bmv2_target_refused_without_its_tools(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(EnvError):
        up("tb", "bmv2", PROGRAM, ports=1, transport="nn", state_dir=tmp_path)
    with pytest.raises(NotSupportedByTarget):
        Bmv2Target(9090).set_queue_rate(100)


def test_bmv2_target_drives_simple_switch_cli(tmp_path):
    """A stand-in simple_switch_CLI records what it is fed: the commands BMv2 would run."""
    record = tmp_path / "cli-input"
    cli = tmp_path / "simple_switch_CLI"
    cli.write_text(f"#!/bin/sh\necho \"$@\" >> {record}\ncat >> {record}\n")
    cli.chmod(cli.stat().st_mode | stat.S_IEXEC)
    t = Bmv2Target(9091, cli=str(cli))
    t.set_queue_rate(5000, port=2)
    t.set_queue_depth(16, port=2, priority=1)
    t.set_queue_rate(100)
    assert record.read_text().splitlines() == [
        "--thrift-port 9091", "set_queue_rate 5000 2",
        "--thrift-port 9091", "set_queue_depth 16 2 1",
        "--thrift-port 9091", "set_queue_rate 100"]
    with pytest.raises(ValueError):
        t.set_queue_rate(1, priority=1)  # CLI syntax needs a port before a priority
    with pytest.raises(NotSupportedByTarget):
        t.set_port_up(1, False)  # nanomsg ports: no link to take down
    with pytest.raises(NotSupportedByTarget):
        t.advance_us(5)
    assert not t.has_virtual_clock


def test_status_shell_gives_the_ptf_runner_what_it_needs(tmp_path):
    """``ptf_tests/run.sh`` evals this output: addresses, files, PTF's port arguments and
    test parameters, all from the state file ``up`` wrote."""
    import shlex
    import sys

    state = up("ts", "p4sim", PROGRAM, ports=3, transport="nn", state_dir=tmp_path, clock="virtual")
    try:
        res = subprocess.run([sys.executable, "-m", "bmv2_env", "status", "--shell", "--name", "ts",
                              "--state-dir", str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
        out = dict(line.split("=", 1) for line in res.stdout.splitlines())
        assert shlex.split(out["GRPC_ADDR"]) == [state.grpc_addr]
        assert shlex.split(out["PTF_PORTS"].strip("()")) == ["--platform", "nn", "--device-socket",
                                                              f"0-{{0-2}}@{state.ipc}"]
        params = shlex.split(out["PTF_PARAMS"])[0]
        assert f"control_addr='{state.control_addr}'" in params and f"thrift_port={state.thrift_port}" in params
        assert "interfaces=None" in params and "target='p4sim'" in params
    finally:
        down("ts", tmp_path)
