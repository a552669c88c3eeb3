"""PTF against a target that is not there fails fast, naming the address, without a traceback or
a hang (issue 33, item 3)."""
from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from testkit.p4sim_process import REPO

PTF = Path(sys.executable).with_name("ptf")


def dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def preflight(*args: str) -> tuple[subprocess.CompletedProcess, float]:
    started = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "ptf_tests.preflight", *args], cwd=REPO, capture_output=True,
                         text=True, timeout=60)
    return res, time.monotonic() - started


def test_preflight_names_the_missing_address_and_socket(tmp_path) -> None:
    port = dead_port()
    res, took = preflight("--grpc-addr", f"127.0.0.1:{port}", "--device-socket", f"ipc://{tmp_path}/sw.ipc",
                          "--interface", "no-such-if0")
    assert res.returncode == 2 and took < 15
    assert f"no P4Runtime server at 127.0.0.1:{port}" in res.stderr
    assert f"no switch socket at ipc://{tmp_path}/sw.ipc" in res.stderr and "no interface no-such-if0" in res.stderr
    assert "Traceback" not in res.stderr


def test_preflight_passes_a_target_that_is_there(tmp_path) -> None:
    """Control: a listening gRPC port and nanomsg socket pass."""
    import pynng

    with socket.socket() as server, pynng.Pair0(listen=f"ipc://{tmp_path}/sw.ipc"):
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        res, _ = preflight("--grpc-addr", f"127.0.0.1:{server.getsockname()[1]}",
                           "--device-socket", f"ipc://{tmp_path}/sw.ipc")
    assert res.returncode == 0, res.stderr


@pytest.mark.skipif(not PTF.exists(), reason="ptf not installed in this venv")
def test_ptf_with_a_wrong_grpc_address_stops_at_once_naming_it(tmp_path) -> None:
    import pynng

    port = dead_port()
    with pynng.Pair0(listen=f"ipc://{tmp_path}/sw.ipc"):       # the packet socket is there, the switch not
        started = time.monotonic()
        res = subprocess.run([str(PTF), "--test-dir", "ptf_tests/basic", "--pypath", str(REPO), "--platform", "nn",
                              "--device-socket", f"0-{{0-3}}@ipc://{tmp_path}/sw.ipc", "--test-params",
                              f"grpc_addr='127.0.0.1:{port}';p4info='x';config='y'"],
                             cwd=REPO, capture_output=True, text=True, timeout=120)
        took = time.monotonic() - started
    assert res.returncode == 2 and took < 60, (took, res.stderr[-2000:])
    assert f"ptf: target missing: no P4Runtime server at 127.0.0.1:{port}" in res.stderr
    assert "Traceback" not in res.stderr and "FutureTimeoutError" not in res.stderr + res.stdout
