"""The BMv2 code paths, run with p4sim standing in for p4c-bm2-ss and simple_switch_grpc.

Real BMv2 cannot be installed here, but everything Stellar's scripts do with it -- the exact
command lines of ``p4c-bm2-ss`` and ``simple_switch_grpc``, the PTF run, the skips where BMv2
lacks a feature -- can still be executed: two one-line shims on PATH turn those commands into
``p4sim compile`` / ``p4sim run``.  That also proves the drop-in claim: p4sim accepts the flags
the scripts give BMv2.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bmv2_env.env import down, up
from testkit.p4sim_process import REPO


@pytest.fixture
def bmv2_standins(tmp_path, monkeypatch) -> Path:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    record = tmp_path / "simple_switch_grpc.argv"
    (bindir / "p4c-bm2-ss").write_text(f'#!/bin/sh\nexec {sys.executable} -m p4sim compile "$@"\n')
    # simple_switch_grpc: first its own grammar (exactly the real target options; p4sim's
    # --clock & co. are refused), then p4sim runs the same argv.  Every argv is recorded.
    (bindir / "simple_switch_grpc").write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$*" >> {record}\n'
        f'{sys.executable} -m p4sim.run_grammar --dialect simple_switch_grpc -- "$@" || exit $?\n'
        f'exec {sys.executable} -m p4sim run "$@"\n')
    for shim in bindir.iterdir():
        shim.chmod(0o755)
    # Only the stand-ins: a real simple_switch_CLI on PATH would talk Thrift to p4sim, which
    # serves BMv2's P4Runtime grammar but not its Thrift API (so it is "not found" here, as in CI).
    rest = [d for d in os.environ["PATH"].split(os.pathsep) if not (Path(d) / "simple_switch_CLI").exists()]
    monkeypatch.setenv("PATH", os.pathsep.join([str(bindir), *rest]))
    return bindir


def test_ptf_run_with_target_bmv2(bmv2_standins):
    env = dict(os.environ, TARGET="bmv2", SUITES="basic", VPY=sys.executable)
    res = subprocess.run(["ptf_tests/run.sh"], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=600)
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert "compile ptf_tests/p4/ptf_basic.p4 for bmv2" in out
    # What BMv2 cannot do is skipped with the reason printed, not silently passed.
    assert "bmv2 has no virtual clock" in out
    assert "simple_switch_CLI cannot change link state" in out
    assert "simple_switch_CLI not found on PATH" in out   # the wall-clock queue-rate test
    assert "OK (skipped=3)" in out
    started = (bmv2_standins.parent / "simple_switch_grpc.argv").read_text().splitlines()
    assert len(started) == 1 and " -- --grpc-server-addr " in started[0] and "--thrift-port" in started[0]


def test_bmv2_env_up_down_with_target_bmv2(bmv2_standins, tmp_path):
    state = up("b1", "bmv2", REPO / "ptf_tests/p4/ptf_basic.p4", ports=2, transport="nn",
               state_dir=tmp_path / "env")
    try:
        assert state.thrift_port and state.control_addr is None
        log = Path(state.log).read_text()
        assert "serving P4Runtime" in log  # the stand-in took simple_switch_grpc's flags
        assert (bmv2_standins.parent / "simple_switch_grpc.argv").read_text().count("\n") == 1
    finally:
        down("b1", tmp_path / "env")


def test_ptf_refuses_tna_on_bmv2():
    """No Tofino model behind BMv2: the runner says so before starting anything."""
    env = dict(os.environ, TARGET="bmv2", ARCH="tna", SUITES="stellar", VPY=sys.executable)
    res = subprocess.run(["ptf_tests/run.sh"], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 2
    assert "TARGET=bmv2 ARCH=tna is not possible" in res.stderr and "TARGET=p4sim" in res.stderr
    assert "compile" not in res.stdout
