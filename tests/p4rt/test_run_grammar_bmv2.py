"""p4sim's simple_switch_grpc grammar against the real binary, where it is installed.

Only command lines the real binary refuses before it starts anything are run (it exits at
once): wrong-place, unknown, ambiguous, malformed and repeated options, missing configs, the
TLS and logging checks.  For each, the real exit status and first line must equal what
``p4sim.run_grammar`` says.  Lines it accepts would start a switch serving on 0.0.0.0, so they
are not run here (the BMv2 Mininet fabric test starts real switches with the project's lines)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from p4sim import run_grammar

pytestmark = pytest.mark.skipif(shutil.which("simple_switch_grpc") is None,
                                reason="simple_switch_grpc is not on PATH")

REFUSED = [
    ["--no-p4", "--priority-queues", "8", "--", "--grpc-server-addr", "127.0.0.1:1"],
    ["--no-p4", "--cpu-port", "255"],
    ["--no-p4", "--grpc-server-addr", "127.0.0.1:1"],
    ["--no-p4", "--bogus"],
    ["--no-p4", "-x"],
    ["--no-p4", "--device-id"],
    ["--no-p4", "--device-id", "x"],
    ["--no-p4", "--device-id", "1", "--device-id", "2"],
    ["--no-p4", "-i", "veth0"],
    ["--no-p4", "--log", "x"],
    ["--no-p4=1"],
    ["--thrift-port", "1"],
    ["--no-p4", "--log-console", "--log-file", "x"],
    ["--no-p4", "-L", "loud"],
    ["--no-p4", "--", "--grpc-server-ssl"],
    ["--no-p4", "--", "--grpc-server-ssl", "--grpc-server-cert", "c"],
    ["--no-p4", "--", "--cpu-port", "0"],
    ["--no-p4", "--", "--max-mc-groups", "0"],
]


def real(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(["simple_switch_grpc", *argv], capture_output=True, text=True, timeout=30)


@pytest.mark.parametrize("argv", REFUSED, ids=[" ".join(a) for a in REFUSED])
def test_refused_lines_agree_with_the_real_binary(argv):
    res = real(argv)
    with pytest.raises(run_grammar.GrammarError) as e:
        run_grammar.check(argv, "simple_switch_grpc")
    assert res.returncode == e.value.status == 1, (res.stdout, res.stderr)
    first = e.value.text.splitlines()[0]
    if argv[-2:] == ["--cpu-port", "0"]:
        assert res.stdout.strip() == "" or "Calling target" in res.stdout  # BMv2 says nothing
        return
    assert first in (res.stdout + res.stderr).splitlines(), (first, res.stdout, res.stderr)


def test_help_agrees():
    res = real(["--help"])
    assert res.returncode == 0 and "Target specific options" in res.stdout
    with pytest.raises(run_grammar.Exit):
        run_grammar.check(["--help"])
    # every option the real binary lists is one the grammar knows
    real_names = {w.strip("[],").lstrip("-") for w in res.stdout.split() if w.startswith("--")}
    known = {o.name for o in run_grammar.GENERAL + run_grammar.SIMPLE_SWITCH_GRPC_TARGET}
    assert real_names - known - {"debugger", "debugger-addr"} == set(), real_names - known
