"""stellarctl's command line as a newcomer reads it, and the module layering behind it."""
from __future__ import annotations

import io
import subprocess
import sys

import pytest

from control_plane.cli import COMMANDS, build_parser, main
from testkit.p4sim_process import REPO


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        code = main(list(argv), out, err)
    except SystemExit as done:       # --help / --version exit through argparse
        code = done.code
    return code, out.getvalue(), err.getvalue()


def test_help_lists_every_command_on_one_line_and_explains_the_diff_notation(capsys) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    text = capsys.readouterr().out
    sub = next(a for a in build_parser()._actions if a.dest == "command")
    listed = [line.split()[0] for line in COMMANDS.splitlines() if line.startswith("    ") and line.split()]
    assert sorted(listed) == sorted(sub.choices)              # every command, once
    for name in sub.choices:
        (line,) = [l for l in text.splitlines() if l.startswith(f"    {name} ")]
        assert len(line.split(None, 1)[1]) > 20              # with its one-line description
    assert "+N ~N -N" in text and "inserts" in text and "deletes" in text
    for name in ("diff", "push"):
        with pytest.raises(SystemExit):
            build_parser().parse_args([name, "--help"])
        assert "+N ~N -N" in " ".join(capsys.readouterr().out.split())


def test_version() -> None:
    res = subprocess.run([sys.executable, "-m", "control_plane", "--version"], cwd=REPO, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 0 and res.stdout.startswith("stellarctl ")


def test_fail_link_argument_errors_are_clear() -> None:
    fabric = str(REPO / "fabrics" / "lab.yaml")
    assert run("fail-link", fabric, "--all")[0] == 2
    code, _, err = run("fail-link", fabric, "leaf1")
    assert code == 2 and "name the link's two switches" in err


EMBEDDED = """
from p4sim.compiler import compile_files, device_config_bytes
from p4sim.frontend import preprocess
from p4sim.p4rt.embedded import EmbeddedSwitch
config = device_config_bytes(preprocess("p4src/examples/l3.p4"), "l3.p4")
EmbeddedSwitch(device_config=config).stop()
"""


@pytest.mark.parametrize("code, forbidden", [
    ("import control_plane.ops", "control_plane.cli"),    # ops no longer reaches back into the CLI
    (EMBEDDED, "p4sim.cli"),                             # nor does the P4Runtime package into p4sim's CLI
])
def test_no_import_circle(code: str, forbidden: str) -> None:
    code += f"\nimport sys; print({forbidden!r} in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip().endswith("False"), res.stderr


def test_the_suite_runs_with_the_default_ports_held(default_ports_held) -> None:
    """tests/conftest.py holds 9090 and 9559 for the session (a running fabric's ports): every
    other test binds free ports.  Here: they are held, and a switch started on the default
    Thrift port is refused (the negative control: what a test on a fixed port would meet)."""
    import os

    if os.environ.get("STELLAR_TESTS_HOLD_PORTS") == "0":
        pytest.skip("STELLAR_TESTS_HOLD_PORTS=0")
    for port in (9090, 9559):
        with pytest.raises(OSError):
            with socket_on(port):
                pass
    res = subprocess.run([sys.executable, "-m", "p4sim", "run", "--no-p4", "--", "--grpc-server-addr",
                          "127.0.0.1:0"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert res.returncode == 1 and "bind to port 9090" in res.stderr


def socket_on(port: int):
    import socket

    sock = socket.socket()
    try:
        sock.bind(("127.0.0.1", port))
    except OSError:
        sock.close()
        raise
    return sock
