"""Interop proof: p4runtime-shell, typed into as an engineer would, against ``p4sim run``.

p4runtime-shell 0.0.6 pins p4runtime 1.4.1 and protobuf < 3.21, so it lives in its own venv
(``.venv-shell``, made by ``make shell-venv``; CI's ``.ci/run`` makes it) and cannot be imported
here.  Each test starts ``p4sim run`` and the shell (``python -m p4runtime_sh --grpc-addr ...
--config p4info,json``) as two separate processes and types commands into the shell's prompt:
``table_entry[...]``, ``insert()``, ``read()``, ``PacketOut``, ``PacketIn``, counters.  The
commands print JSON after a marker; the test parses those lines, and drives packets into
p4sim's nanomsg port socket itself.
"""
from __future__ import annotations

import json
import os
import queue
import struct
import subprocess
import threading
from pathlib import Path
from typing import Any, Optional

import pynng
import pytest
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from testkit.p4sim_process import REPO, compile_program, start_p4sim

SHELL_PY = REPO / ".venv-shell" / "bin" / "python"

pytestmark = pytest.mark.skipif(
    not SHELL_PY.exists(),
    reason="no p4runtime-shell venv at .venv-shell (its pins cannot share the project venv): "
           "`make shell-venv` creates it, CI's .ci/run does too")

RESULT = "@@R "


class ShellProcess:
    """``python -m p4runtime_sh`` on a pipe: ``run(code)`` types lines and returns what they print
    after ``RESULT`` (JSON), plus the raw text (tracebacks the shell shows to its user)."""

    def __init__(self, grpc_addr: str, device_id: int, config: Optional[tuple[Path, Path]], cwd: Path,
                 extra: tuple[str, ...] = ()) -> None:
        cmd = [str(SHELL_PY), "-P", "-m", "p4runtime_sh", "--grpc-addr", grpc_addr,
               "--device-id", str(device_id), "--election-id", "0,1", *extra]
        if config is not None:
            cmd += ["--config", f"{config[1]},{config[0]}"]
        # -P and no PYTHONPATH: the repo's own `p4` package (the project venv's proto names)
        # must not shadow the shell venv's p4runtime 1.4.1 modules.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, cwd=cwd, env=env)
        self.lines: "queue.Queue[Optional[str]]" = queue.Queue()
        self.transcript: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()
        self._n = 0

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def type(self, code: str) -> None:
        """Type lines without waiting (the shell may block, e.g. in PacketIn.sniff)."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(code.rstrip("\n") + "\n")
        self.proc.stdin.flush()

    def wait(self, timeout: float = 60.0) -> tuple[list[Any], str]:
        """Up to the marker of the last ``type``: (JSON results, raw text)."""
        self._n += 1
        marker = f"@@DONE{self._n}@@"
        self.type(f'print("@@DONE" + "{self._n}@@")')  # split: a traceback echoing it is no marker
        results, text = [], []
        while True:
            try:
                line = self.lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError("p4runtime-shell did not answer:\n" + "".join(self.transcript)) from None
            if line is None:
                raise AssertionError("p4runtime-shell exited:\n" + "".join(self.transcript))
            self.transcript.append(line)
            if marker in line:
                return results, "".join(text)
            text.append(line)
            if RESULT in line:
                results.append(json.loads(line.split(RESULT, 1)[1]))

    def run(self, code: str, timeout: float = 60.0) -> tuple[list[Any], str]:
        self.type(code)
        return self.wait(timeout)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.type("exit")
                self.proc.stdin.close()  # type: ignore[union-attr]
                self.proc.wait(timeout=15)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait(timeout=10)


def out(expr: str) -> str:
    """A shell line printing `expr` as a JSON result."""
    return f'import json; print("{RESULT[:2]}" + "{RESULT[2:]}" + json.dumps({expr}))'


@pytest.fixture
def switch(tmp_path):
    proc = start_p4sim(tmp_path)
    yield proc
    proc.stop()


@pytest.fixture
def shell_for(switch, tmp_path):
    shells = []

    def start(config: Optional[tuple[Path, Path]]) -> ShellProcess:
        shells.append(ShellProcess(switch.grpc_addr, 1, config, tmp_path))
        return shells[-1]

    yield start
    for s in shells:
        s.close()


@pytest.fixture(scope="module")
def l3_build(tmp_path_factory):
    return compile_program(REPO / "p4src/examples/l3.p4", tmp_path_factory.mktemp("l3"))


@pytest.fixture(scope="module")
def basic_build(tmp_path_factory):
    return compile_program(REPO / "ptf_tests/p4/ptf_basic.p4", tmp_path_factory.mktemp("basic"))


def nn_peer(addr: str) -> pynng.Pair0:
    peer = pynng.Pair0(dial=addr)
    peer.recv_timeout = 5000
    return peer


def test_p4runtime_shell_programs_p4sim_and_the_entry_forwards(switch, shell_for, l3_build):
    sh = shell_for(l3_build)
    res, _ = sh.run("\n".join([
        'te = table_entry["MyIngress.ipv4_lpm"](action="MyIngress.ipv4_forward")',
        'te.match["hdr.ipv4.dstAddr"] = "10.0.1.0/24"',
        'te.action["dstAddr"] = "00:00:00:00:01:01"',
        'te.action["port"] = "3"',
        "te.insert()",
        'got = list(table_entry["MyIngress.ipv4_lpm"].read())',
        out('[len(got), got[0].match["hdr.ipv4.dstAddr"].lpm.prefix_len, '
            'int.from_bytes(got[0].action["port"].value, "big")]'),
    ]))
    assert res == [[1, 24, 3]]

    # Duplicate insert: the shell shows its user P4RuntimeWriteException naming the code.
    _, text = sh.run("te.insert()")
    assert "P4RuntimeWriteException" in text and "ALREADY_EXISTS" in text

    # The entry forwards a packet sent into port 1 over the nanomsg socket.
    peer = nn_peer(switch.ipc_addr)
    try:
        pkt = bytes(Ether(dst="00:00:00:00:00:aa") / IP(src="10.0.0.1", dst="10.0.1.7", ttl=9)
                    / UDP() / (b"p" * 30))
        peer.send(struct.pack("<iii", 3, 1, len(pkt)) + pkt)
        msg = peer.recv()
    finally:
        peer.close()
    mtype, port, length = struct.unpack_from("<iii", msg)
    frame = Ether(msg[12:])
    assert (mtype, port, length) == (4, 3, len(pkt))
    assert frame[IP].ttl == 8 and frame[Ether].dst == "00:00:00:00:01:01"

    res, _ = sh.run("\n".join([
        'dc = DirectCounterEntry("MyIngress.ipv4_lpm_counter")',
        'dc.table_entry.match["hdr.ipv4.dstAddr"] = "10.0.1.0/24"',
        "[c] = list(dc.read())",
        out("[c.packet_count, c.byte_count]"),
        'te.action["port"] = "4"',
        "te.modify()",
        out('int.from_bytes(next(iter(table_entry["MyIngress.ipv4_lpm"].read())).action["port"].value, "big")'),
        "te.delete()",
        out('len(list(table_entry["MyIngress.ipv4_lpm"].read()))'),
    ]))
    assert res == [[1, len(pkt)], 4, 0]
    assert switch.proc.poll() is None, switch.log()


def test_p4runtime_shell_packet_out_packet_in_and_counters(switch, shell_for, basic_build):
    sh = shell_for(basic_build)
    peer = nn_peer(switch.ipc_addr)
    try:
        frame = bytes(Ether(dst="00:00:00:00:00:02") / IP(dst="1.2.3.4") / UDP() / (b"s" * 20))
        _, text = sh.run(f'packet_out(bytes.fromhex("{frame.hex()}"), egress_port="3", _pad="0").send()')
        assert "Error" not in text, text
        msg = peer.recv()
        assert struct.unpack_from("<iii", msg) == (4, 3, len(frame)) and msg[12:] == frame

        sh.run("\n".join([
            'te = table_entry["BasicIngress.acl"](action="BasicIngress.punt")',
            'te.match["hdr.ipv4.protocol"] = "17&&&0xff"',
            "te.priority = 10",
            "te.insert()",
        ]))
        peer.send(struct.pack("<iii", 3, 2, len(frame)) + frame)
        res, _ = sh.run("\n".join([
            "pins = list(packet_in.sniff(timeout=2))",  # the shell's packet_in captures from its start
            out('[[p.packet.payload.hex(), [int.from_bytes(m.value, "big") for m in p.packet.metadata]] '
                "for p in pins]"),
            'ce = counter_entry["port_pkts"]',
            "ce.index = 2",
            "[count] = list(ce.read())",
            out("[count.packet_count, count.byte_count]"),
        ]))
        assert res == [[[frame.hex(), [2, 0]]], [1, len(frame)]]
    finally:
        peer.close()


def test_shell_errors_reach_the_test(switch, shell_for, l3_build):
    """Negative control for the driver: a command that fails in the shell shows its traceback
    and prints no result, so a broken step cannot pass as an empty answer."""
    sh = shell_for(l3_build)
    res, text = sh.run("\n".join(['te = table_entry["MyIngress.no_such_table"]', out("1")]))
    assert "no_such_table" in text
    assert res == [1]  # the next line still runs: each line is its own statement
    res, text = sh.run(out("undefined_name"))
    assert res == [] and "NameError" in text


def test_p4runtime_shell_over_mutual_tls(tmp_path, l3_build):
    """The engineer's shell reaches a `p4sim run` serving mutual TLS with its --ssl options
    (certificates made at test time); without them it does not get in."""
    import grpc

    from tests.p4rt.certs import make_pki

    pki = make_pki(tmp_path / "pki")
    creds = grpc.ssl_channel_credentials(pki.read("ca.pem"), pki.read("client.key"), pki.read("client.pem"))
    proc = start_p4sim(tmp_path, "--grpc-server-ssl", "--grpc-server-cert", pki.path("server.pem"),
                       "--grpc-server-key", pki.path("server.key"), "--grpc-server-cacert", pki.path("ca.pem"),
                       "--grpc-server-with-client-auth", channel_credentials=creds)
    shells = []
    try:
        shells.append(ShellProcess(proc.grpc_addr, 1, l3_build, tmp_path, extra=(
            "--ssl", "--cacert", pki.path("ca.pem"), "--cert", pki.path("client.pem"),
            "--private-key", pki.path("client.key"))))
        res, _ = shells[0].run("\n".join([
            'te = table_entry["MyIngress.ipv4_lpm"](action="MyIngress.ipv4_forward")',
            'te.match["hdr.ipv4.dstAddr"] = "10.0.1.0/24"',
            'te.action["dstAddr"] = "00:00:00:00:01:01"',
            'te.action["port"] = "3"',
            "te.insert()",
            out('len(list(table_entry["MyIngress.ipv4_lpm"].read()))'),
        ]))
        assert res == [1]
        plain = ShellProcess(proc.grpc_addr, 1, None, tmp_path)  # no --ssl: refused
        shells.append(plain)
        assert plain.proc.wait(timeout=90) != 0
    finally:
        for sh in shells:
            sh.close()
        proc.stop()
