"""``p4sim compile`` / ``p4sim run`` command lines (flags of p4c-bm2-ss / simple_switch_grpc)."""
from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from p4sim.cli import DEFAULT_GRPC_ADDR, RunArgsError, parse_run_args
from testkit.p4sim_process import REPO, free_port


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "p4sim", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=timeout)


def test_run_flags_split_at_double_dash_like_simple_switch_grpc():
    args = parse_run_args(["--no-p4", "-i", "0@veth0", "-i", "1@veth2", "--device-id", "3",
                           "--", "--grpc-server-addr", "127.0.0.1:50001", "--cpu-port", "255",
                           "--priority-queues", "8"])
    assert args.interface == ["0@veth0", "1@veth2"] and args.device_id == 3
    assert (args.grpc_server_addr, args.cpu_port, args.priority_queues) == ("127.0.0.1:50001", 255, 8)
    assert args.clock == "wall" and args.thrift_port == 9090 and args.drop_port == 511


def test_a_target_option_before_the_double_dash_is_refused_as_by_simple_switch_grpc():
    # the fault that stopped every switch of the Mininet fabric on real BMv2
    with pytest.raises(RunArgsError) as e:
        parse_run_args(["--no-p4", "--priority-queues", "8", "--", "--grpc-server-addr", "127.0.0.1:1"])
    assert e.value.text.startswith("Error while parsing command line arguments\n") and e.value.status == 1
    # control: the same option after '--' is accepted
    assert parse_run_args(["--no-p4", "--", "--priority-queues", "8"]).priority_queues == 8


def test_tls_options_are_simple_switch_grpcs_and_reach_the_server_as_given():
    args = parse_run_args(["--no-p4", "--", "--grpc-server-ssl", "--grpc-server-cert", "c.pem",
                           "--grpc-server-key", "k.pem", "--grpc-server-cacert", "ca.pem",
                           "--grpc-server-with-client-auth"])
    assert args.tls == {"ssl": True, "cacert": "ca.pem", "cert": "c.pem", "key": "k.pem", "with_client_auth": True}
    assert parse_run_args(["--no-p4"]).tls["ssl"] is False
    with pytest.raises(RunArgsError) as e:
        parse_run_args(["--no-p4", "--", "--grpc-server-ssl", "--grpc-server-key", "k.pem"])
    assert "--grpc-server-cert is required" in e.value.text


def test_options_bmv2_has_but_p4sim_cannot_honour_are_refused_by_name():
    for argv in (["--no-p4", "--pcap"], ["--no-p4", "--", "--dp-grpc-server-addr", "x:1"],
                 ["--no-p4", "--restore-state", "f"]):
        with pytest.raises(RunArgsError) as e:
            parse_run_args(argv)
        assert "p4sim cannot honour" in e.value.text


def test_default_grpc_address_is_loopback_only():
    assert DEFAULT_GRPC_ADDR == "127.0.0.1:9559"
    assert parse_run_args(["--no-p4"]).grpc_server_addr == DEFAULT_GRPC_ADDR


def test_run_needs_a_program_or_no_p4():
    with pytest.raises(RunArgsError) as e:
        parse_run_args([])
    assert e.value.text.startswith("Error: please specify an input JSON configuration file")
    # BMv2 ignores (with a warning) a .json config given with --no-p4
    args = parse_run_args(["x.json", "--no-p4"])
    assert args.config is None and args.warnings == ["Warning: ignoring input config as '--no-p4' was used"]


def test_wrong_place_error_text_and_status_from_the_command(tmp_path):
    res = run_cli("run", "--no-p4", "--priority-queues", "8", "--", "--grpc-server-addr", "127.0.0.1:1", timeout=60)
    assert res.returncode == 1
    assert res.stdout.startswith("Error while parsing command line arguments\nUsage: SWITCH_NAME [options]")
    res = run_cli("run", "--no-p4", "--", "--device-id", "3", timeout=60)
    assert res.returncode == 1
    assert res.stdout.splitlines()[1:] == ["unrecognised option '--device-id'", "Target parser returned an error"]


def test_compile_error_is_file_line_col_and_exit_1(tmp_path):
    bad = tmp_path / "bad.p4"
    bad.write_text("#include <core.p4>\n#include <v1model.p4>\n\nheader h_t { bit<8> f; }\nthis is not p4;\n")
    res = run_cli("compile", str(bad), "-o", str(tmp_path / "o.json"),
                  "--p4runtime-files", str(tmp_path / "o.txtpb"))
    assert res.returncode == 1
    assert f"{bad}:5:" in res.stderr or "bad.p4:5:" in res.stderr, res.stderr
    assert not (tmp_path / "o.json").exists()


def test_compile_writes_config_and_p4info(tmp_path):
    res = run_cli("compile", "p4src/examples/l3.p4", "-o", str(tmp_path / "l3.json"),
                  "--p4runtime-files", str(tmp_path / "l3.txtpb"))
    assert res.returncode == 0, res.stderr
    assert "MyIngress.ipv4_lpm" in (tmp_path / "l3.txtpb").read_text()
    assert (tmp_path / "l3.json").stat().st_size > 0


def test_run_reports_an_address_in_use(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        res = run_cli("run", "--no-p4", "--thrift-port", str(free_port()), "--",
                      "--grpc-server-addr", f"127.0.0.1:{port}", timeout=60)
    assert res.returncode == 1 and "cannot listen" in res.stderr


def test_two_switches_on_one_thrift_port_fail_as_on_bmv2(tmp_path):
    """simple_switch_grpc holds its Thrift port (default 9090): a second switch on the same one
    exits ("... when trying to bind to port N").  p4sim holds it too, so the stand-in catches it."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        taken = s.getsockname()[1]
        res = run_cli("run", "--no-p4", "--thrift-port", str(taken), "--",
                      "--grpc-server-addr", f"127.0.0.1:{free_port()}", timeout=60)
    assert res.returncode == 1 and f"when trying to bind to port {taken}" in res.stderr
    assert f"TServerSocket::listen() Could not bind to port {taken}" in res.stderr  # issue 13's words


def test_run_reports_a_bad_device_config(tmp_path):
    cfg = tmp_path / "x.json"
    cfg.write_text("{not a config")
    res = run_cli("run", str(cfg), "--thrift-port", str(free_port()), "--",
                  "--grpc-server-addr", f"127.0.0.1:{free_port()}", timeout=60)
    assert res.returncode == 1 and "cannot load" in res.stderr


def test_the_backend_is_a_target_option_and_a_wrong_one_is_named():
    assert parse_run_args(["--no-p4", "--", "--backend", "native"]).backend == "native"
    assert parse_run_args(["--no-p4"]).backend is None  # $P4SIM_BACKEND, else the reference
    with pytest.raises(RunArgsError, match="--backend fast: python or native"):
        parse_run_args(["--no-p4", "--", "--backend", "fast"])
