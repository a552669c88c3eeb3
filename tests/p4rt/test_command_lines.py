"""Every switch command line the project builds, checked against simple_switch_grpc's grammar.

The lines are taken from the code that builds them -- ``bmv2_env up`` (which ``ptf_tests/run.sh``
calls), the Mininet fabric's switch plans for every fabric in ``fabrics/``, the tests' own
``p4sim run`` helper -- and from the command lines the READMEs tell a user to type.  A BMv2 line
must pass the real binary's grammar alone; a p4sim line passes the same grammar plus p4sim's
own target options.  So an option put in the wrong place anywhere fails here, not on a user's
machine with real BMv2."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from bmv2_env import env
from bmv2_env.commands import SwitchOptions, grammar_argv, switch_command
from p4sim import run_grammar

REPO = Path(__file__).resolve().parents[2]


class Started(Exception):
    """Raised by the recording Popen: the command line is all this test wants."""


def check(argv: list[str]) -> str:
    dialect, args = grammar_argv(argv)
    run_grammar.check(args, dialect)
    return dialect


def bmv2_env_lines(tmp_path, monkeypatch) -> list[list[str]]:
    """What ``bmv2_env up`` would start, for both targets and both transports."""
    seen: list[list[str]] = []

    def popen(cmd, **_kw):
        seen.append(list(cmd))
        raise Started

    monkeypatch.setattr(env.subprocess, "Popen", popen)
    monkeypatch.setattr(env, "compile_program", lambda *a, **k: (tmp_path / "c.json", tmp_path / "p.txtpb"))
    monkeypatch.setattr(env, "create_veths", lambda name, n: {str(p): [f"{name}-p{p}", f"{name}-h{p}"] for p in range(n)})
    monkeypatch.setattr(env.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    for i, (target, transport) in enumerate([(t, tr) for t in ("bmv2", "p4sim") for tr in ("nn", "veth")]):
        with pytest.raises(Started):
            env.up(f"s{i}", target, REPO / "ptf_tests/p4/ptf_basic.p4", 4, transport, tmp_path / f"st{i}",
                   log_level="info" if transport == "veth" else None)  # run.sh gives one
    return seen


def test_bmv2_env_lines_pass_the_grammar(tmp_path, monkeypatch):
    lines = bmv2_env_lines(tmp_path, monkeypatch)
    assert [check(line) for line in lines] == ["simple_switch_grpc"] * 2 + ["p4sim"] * 2
    assert all("--thrift-port" in line for line in lines)  # each switch its own Thrift port
    assert ["--log-level" in line for line in lines] == [False, True] * 2


def test_mininet_fabric_lines_pass_the_grammar(tmp_path):
    from bmv2_env.mininet_fabric import plan_switches
    from control_plane.model import load_fabric

    fabrics = sorted((REPO / "fabrics").glob("*.yaml"))
    assert fabrics
    checked = 0
    for path in fabrics:
        fabric = load_fabric(path)
        if len(fabric.switches) > 64:  # the 512-GPU cluster is not a Mininet fabric
            continue
        for target in ("bmv2", "p4sim"):
            plans = plan_switches(fabric, target, tmp_path, thrift_base=9090)
            for plan in plans.values():
                assert check(plan.argv) == ("simple_switch_grpc" if target == "bmv2" else "p4sim")
                checked += 1
            assert len({p.thrift_port for p in plans.values()}) == len(plans)
    assert checked >= 12


def test_the_tests_p4sim_helper_lines_pass_the_grammar(tmp_path):
    from testkit.p4sim_process import run_command

    for kw in ({}, {"config": tmp_path / "x.json", "priority_queues": 8}):
        assert check(run_command("127.0.0.1:1", "127.0.0.1:2", "ipc:///tmp/x.ipc", 9999, **kw)) == "p4sim"


def test_ptf_runner_and_bench_start_switches_only_through_bmv2_env():
    """run.sh has no switch command line of its own (it calls ``bmv2_env up``, checked above);
    no bench script starts a switch process.  A new builder anywhere there fails this test
    until it goes through bmv2_env.commands."""
    runner = (REPO / "ptf_tests/run.sh").read_text()
    code = "\n".join(line for line in runner.splitlines() if not line.lstrip().startswith("#"))
    assert "bmv2_env up" in code
    assert not re.search(r"simple_switch_grpc|p4sim run|-m p4sim run", code)
    for script in sorted((REPO / "bench").glob("*.py")):
        text = script.read_text()
        # an argv of its own: the binary's name followed by an option ("simple_switch_grpc", "--..."
        # or _which("simple_switch_grpc") or "simple_switch_grpc", "--...") or p4sim's run
        own = r"simple_switch_grpc[\"']\)?(\s+or\s+[\"']simple_switch_grpc[\"'])?,\s*[\"']-|simple_switch_grpc --"
        assert not re.search(own + r"|[\"']p4sim[\"'],\s*[\"']run[\"']|p4sim run ", text), script


def test_command_lines_in_the_docs_pass_the_grammar():
    found = 0
    for doc in [REPO / "README.md", *REPO.glob("*/README.md"), *REPO.glob("docs/*.md")]:
        for line in doc.read_text().splitlines():
            m = re.match(r"^\s*(?:sudo\s+)?(?:\S*/)?(simple_switch_grpc|p4sim run)\s+(.*?)\s*&?$", line)
            if not m:
                continue
            args = [a for a in shlex.split(m.group(2)) if a != "…"]
            run_grammar.check(args, "simple_switch_grpc" if m.group(1) == "simple_switch_grpc" else "p4sim")
            found += 1
    assert found >= 1


def test_the_builder_refuses_p4sim_options_for_bmv2_and_the_grammar_catches_a_misplaced_one():
    with pytest.raises(ValueError):
        switch_command("bmv2", SwitchOptions("127.0.0.1:1", clock="wall"))
    # negative control of this whole file: the line of issue 13 (priority queues before '--')
    bad = ["simple_switch_grpc", "--no-p4", "-i", "1@s1-eth1", "--priority-queues", "8", "--",
           "--grpc-server-addr", "127.0.0.1:9559"]
    with pytest.raises(run_grammar.GrammarError):
        check(bad)


def test_bench_fuzz_diff_lines_pass_the_grammar(tmp_path, monkeypatch):
    """bench/fuzz_diff.py (testkit.differential) starts its switches from bmv2_env.commands (no
    log option: logging would slow BMv2 on 20000 frames); each line it would start passes the
    grammar."""
    import subprocess

    from bmv2_env import env as bmenv
    from testkit import differential as fuzz

    seen: list[list[str]] = []

    def popen(cmd, **_kw):
        seen.append(list(cmd))
        raise Started

    monkeypatch.setattr(subprocess, "Popen", popen)
    monkeypatch.setattr(bmenv, "compile_program", lambda *a, **k: (tmp_path / "c.json", tmp_path / "p.txtpb"))
    for target in ("bmv2", "p4sim"):
        with pytest.raises(Started):
            fuzz.run_target(target, [], tmp_path / target)
    assert [check(line) for line in seen] == ["simple_switch_grpc", "p4sim"]
    assert not any(a.startswith("--log") for line in seen for a in line)
    assert "--thrift-port" in seen[0]
