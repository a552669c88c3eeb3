"""p4build: the one compile step per target (p4c-bm2-ss for bmv2, p4sim compile for p4sim)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from p4build import BuildError, CompiledProgram, compile_program

REPO = Path(__file__).resolve().parents[2]
L3 = REPO / "p4src/examples/l3.p4"


def test_p4sim_target_writes_p4info_and_device_config(tmp_path):
    prog = compile_program(L3, "p4sim", "v1model", tmp_path)
    assert isinstance(prog, CompiledProgram) and (prog.target, prog.arch) == ("p4sim", "v1model")
    assert "MyIngress.ipv4_lpm" in prog.p4info_path.read_text()
    assert prog.device_config_path.stat().st_size > 0
    assert prog.files() == (prog.device_config_path, prog.p4info_path)
    assert prog.command[1:5] == ("-m", "p4sim", "compile", "--arch")


def test_bmv2_target_runs_p4c_bm2_ss_with_its_flags(tmp_path, monkeypatch):
    """A stand-in p4c-bm2-ss records its argv and hands over to p4sim compile (same flags)."""
    bindir, record = tmp_path / "bin", tmp_path / "argv"
    bindir.mkdir()
    shim = bindir / "p4c-bm2-ss"
    shim.write_text(f'#!/bin/sh\necho "$@" > {record}\nexec {sys.executable} -m p4sim compile "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    prog = compile_program(L3, "bmv2", "v1model", tmp_path / "out", [REPO / "p4src"], ["CPU_PORT=255"])
    args = record.read_text().split()
    assert args[:2] == ["--arch", "v1model"] and f"-I{REPO / 'p4src'}" in args and "-DCPU_PORT=255" in args
    assert args[-1] == str(L3) and prog.target == "bmv2" and prog.device_config_path.is_file()


def test_bmv2_without_its_compiler_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(BuildError, match="needs p4c-bm2-ss on PATH"):
        compile_program(L3, "bmv2", "v1model", tmp_path)


def test_architectures_not_built_yet_are_refused_with_the_reason(tmp_path):
    with pytest.raises(BuildError, match="does not run on BMv2"):
        compile_program(L3, "bmv2", "tna", tmp_path)
    # p4sim compile's own refusal: --arch must be the package the program instantiates
    with pytest.raises(BuildError, match="is a v1model program, not tna"):
        compile_program(L3, "p4sim", "tna", tmp_path)
    with pytest.raises(BuildError, match="unknown architecture"):
        compile_program(L3, "p4sim", "psa2", tmp_path)
    with pytest.raises(BuildError, match="unknown target"):
        compile_program(L3, "tofino", "tna", tmp_path)


def test_a_compile_error_keeps_file_line_col_and_leaves_no_stale_output(tmp_path):
    good = compile_program(L3, "p4sim", "v1model", tmp_path)
    bad = tmp_path / "l3.p4"  # same stem: its outputs would overwrite the good ones
    bad.write_text("#include <core.p4>\n#include <v1model.p4>\nnonsense\n")
    with pytest.raises(BuildError) as e:
        compile_program(bad, "p4sim", "v1model", tmp_path)
    assert "l3.p4:3:" in str(e.value)
    assert not good.device_config_path.exists() and not good.p4info_path.exists()


def test_module_prints_shell_assignments(tmp_path):
    res = subprocess.run([sys.executable, "-m", "p4build", str(L3), "--target", "p4sim", "-o", str(tmp_path)],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [f"DEVICE_CONFIG={tmp_path / 'l3.json'}", f"P4INFO={tmp_path / 'l3.p4info.txtpb'}"]
    res = subprocess.run([sys.executable, "-m", "p4build", str(L3), "--arch", "tna", "--target", "bmv2", "-o",
                          str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert res.returncode == 1 and "does not run on BMv2" in res.stderr


def test_stellarctl_push_compiles_through_p4build_for_the_target(tmp_path, monkeypatch):
    """``stellarctl push --program`` takes the target's compiler; what it cannot build is refused
    before any switch is touched."""
    import io

    from control_plane.cli import main as stellarctl

    def run(*argv):
        out, err = io.StringIO(), io.StringIO()
        return stellarctl(list(argv), out=out, err=err), out.getvalue() + err.getvalue()

    monkeypatch.setenv("PATH", str(tmp_path))  # no p4c-bm2-ss
    fabric = str(REPO / "fabrics/lab.yaml")
    rc, text = run("push", fabric, "--program", str(L3), "--target", "bmv2")
    assert rc == 1 and "needs p4c-bm2-ss on PATH" in text
    rc, text = run("push", fabric, "--program", str(L3), "--arch", "tna", "--target", "bmv2")
    assert rc == 1 and "does not run on BMv2" in text
    bad = tmp_path / "bad.p4"
    bad.write_text("#include <core.p4>\nnonsense\n")
    rc, text = run("push", fabric, "--program", str(bad), "--build-dir", str(tmp_path / "b"))
    assert rc == 1 and "bad.p4:2:" in text


def test_the_tofino_program_compiles_for_p4sim_with_arch_tna(tmp_path):
    tna = REPO / "p4src" / "tna" / "stellar.p4"
    built = compile_program(tna, "p4sim", "tna", tmp_path, [REPO / "p4src"], defines=["__TARGET_TOFINO__=1"])
    assert json.loads(built.device_config_path.read_text())["arch"] == "tna"
    with pytest.raises(BuildError, match="is a tna program, not v1model"):
        compile_program(tna, "p4sim", "v1model", tmp_path / "v", [REPO / "p4src"],
                        defines=["__TARGET_TOFINO__=1"])
