"""One compile step per target: the P4Info and device config a switch is started with.

Every place that starts a target (``bmv2_env up``, the Mininet fabric, ``ptf_tests/run.sh``,
``stellarctl push --program``, the demo and eval runners) compiles through
``compile_program``, so the program a switch gets always comes from that target's own
compiler: ``p4c-bm2-ss`` (BMv2 JSON) for ``bmv2``, ``p4sim compile`` for ``p4sim``.  Both are
run as external tools with the same flags, so this package imports nothing from the simulator.

    from p4build import compile_program
    prog = compile_program("p4src/v1model/stellar.p4", target="bmv2", out_dir="build/bmv2",
                           include_dirs=["p4src"])
    prog.p4info_path, prog.device_config_path

``arch`` must match what the target's compiler builds: v1model on BMv2; v1model or tna on
p4sim (``p4sim compile --arch`` checks the program instantiates that architecture's package).
TNA for real Tofino needs bf-p4c, which is not wired here: BMv2 refuses tna with the reason.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

TARGETS = ("p4sim", "bmv2")
ARCHES = ("v1model", "tna")
BMV2_COMPILER = "p4c-bm2-ss"


class BuildError(Exception):
    """The program could not be compiled for that target; the message says why (a compiler's
    own ``file:line:col`` errors are kept as it printed them)."""


@dataclass(frozen=True)
class CompiledProgram:
    """What SetForwardingPipelineConfig needs, and how it was made."""

    p4info_path: Path
    device_config_path: Path
    target: str
    arch: str
    command: tuple[str, ...] = field(default=(), compare=False)

    def files(self) -> tuple[Path, Path]:
        """(device config, P4Info): the order ``control_plane.p4rt.ProgramFiles.load`` takes."""
        return self.device_config_path, self.p4info_path


def compiler_command(source: Path, target: str, arch: str, out_json: Path, out_p4info: Path,
                     include_dirs: Sequence[str | Path] = (), defines: Sequence[str] = (),
                     python: str = sys.executable) -> list[str]:
    """The compiler's argv (p4c-bm2-ss's flags, which ``p4sim compile`` shares)."""
    check_target(target, arch)
    flags = [f"-I{d}" for d in include_dirs] + [f"-D{d}" for d in defines]
    tail = [*flags, "-o", str(out_json), "--p4runtime-files", str(out_p4info), str(source)]
    if target == "bmv2":
        return [BMV2_COMPILER, "--arch", arch, *tail]
    return [python, "-m", "p4sim", "compile", "--arch", arch, *tail]


def check_target(target: str, arch: str) -> None:
    """Refuse, with the reason, a target/architecture pair no wired compiler builds."""
    if target not in TARGETS:
        raise BuildError(f"unknown target {target!r} (one of {', '.join(TARGETS)})")
    if arch not in ARCHES:
        raise BuildError(f"unknown architecture {arch!r} (one of {', '.join(ARCHES)})")
    if target == "bmv2" and arch != "v1model":
        raise BuildError(f"--arch {arch} does not run on BMv2: {BMV2_COMPILER} builds v1model "
                         "programs for simple_switch; TNA needs the Tofino back end (or p4sim)")


def compile_program(source: str | Path, target: str = "p4sim", arch: str = "v1model",
                    out_dir: str | Path = "build/p4build", include_dirs: Sequence[str | Path] = (),
                    defines: Sequence[str] = (), python: str = sys.executable) -> CompiledProgram:
    """Compile ``source`` for ``target`` into ``out_dir`` (``<stem>.json`` and
    ``<stem>.p4info.txtpb``).  ``defines`` are ``NAME[=VALUE]`` (-D).  Raises BuildError."""
    check_target(target, arch)
    source = Path(source)
    if not source.is_file():
        raise BuildError(f"{source}: no such P4 file")
    if target == "bmv2" and shutil.which(BMV2_COMPILER) is None:
        raise BuildError(f"target bmv2 needs {BMV2_COMPILER} on PATH")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    out_json, out_info = out / f"{source.stem}.json", out / f"{source.stem}.p4info.txtpb"
    for stale in (out_json, out_info):  # never hand on a previous build's output
        stale.unlink(missing_ok=True)
    cmd = compiler_command(source, target, arch, out_json, out_info, include_dirs, defines, python)
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        text = (res.stderr.strip() or res.stdout.strip() or f"exit status {res.returncode}")
        raise BuildError(f"compiling {source} for {target} ({arch}) failed:\n{text}")
    missing = [str(p) for p in (out_json, out_info) if not p.is_file()]
    if missing:
        raise BuildError(f"{cmd[0]} exited 0 but did not write {', '.join(missing)}")
    return CompiledProgram(out_info, out_json, target, arch, tuple(cmd))
