"""Compile p4src/tna/stellar.p4 with an installed bf-p4c and print what the Tofino back end says.

    python bench/tofino_resources.py [--targets tofino,tofino2] [--profiles full,no-dre]
    (default: each target with its own profiles: tofino no-dre; tofino2 full and no-dre)
                                     [--out build/tofino] [--from-logs]

For each (target, profile): runs `bf-p4c --target T --arch tna|t2na -g -I p4src [-D...]` into
OUT/T-PROFILE (bf-p4c empties that directory, so its log is written beside it), then reads the
back end's own reports: the dependency minimum (pipe/logs/table_dependency_graph.log), the
stages of the final table allocation (pipe/logs/table_summary.log, its last round), the MAU and
PHV totals (pipe/logs/metrics.json) and whether the assembler wrote the binary
(pipe/<target>.bin).  `--from-logs` only reads an earlier run's output.

bf-p4c is not installable from the package registries (README.md): without it on PATH this
prints how to point it at one and exits 2.  A compile is deterministic, so one run per
configuration is the figure (no medians); it takes about a minute on this machine.
"""
from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from control_plane.contract import TNA_PROFILES  # the profiles and their defines

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = ROOT / "p4src" / "tna" / "stellar.p4"

# Per target: its architecture file and its MAU stages per pipe.  Per stage on both targets:
# 80 SRAM blocks, 48 map RAMs, 24 TCAM blocks, 16 logical table ids (the percentages
# in bf-p4c's mau.resources.log are of these).
ARCH = {"tofino": "tna", "tofino2": "t2na"}
STAGES = {"tofino": 12, "tofino2": 20}
PER_STAGE = {"srams": 80, "map_rams": 48, "tcams": 24, "logical_tables": 16}

# The profiles each target is built with (p4src/tna/README.md, "Tofino-1 and Tofino2"): Tofino-1
# takes the profile without the per-packet DRE (the full one's dependency chain alone is 15
# stages of its 12), Tofino2 both.  `--profiles` compiles the named ones on every target instead.
TARGET_PROFILES = {"tofino": ("no-dre",), "tofino2": ("full", "no-dre")}


def configurations(targets: list[str], profiles: list[str] | None) -> list[tuple[str, str]]:
    """(target, profile) pairs to compile: each target's own profiles, or the named ones."""
    return [(t, p) for t in targets for p in (profiles if profiles else TARGET_PROFILES[t])]


# The profiles of p4src/tna as bf-p4c -D flags.
PROFILE_DEFINES = {name: [f"-D{k}={v}" for k, v in defines.items()]
                   for name, defines in TNA_PROFILES.items()}


@dataclass
class Result:
    """One compile's figures, as bf-p4c reported them (None: the report was not written)."""

    target: str
    profile: str
    exit_code: int | None = None
    seconds: float | None = None
    dep_ingress: int | None = None
    dep_egress: int | None = None
    stages_ingress: int | None = None
    stages_egress: int | None = None
    binary: bool = False
    metrics: dict = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        """Compiled and assembled, in the target's stages."""
        return (self.exit_code == 0 and self.binary and self.stages_ingress is not None
                and max(self.stages_ingress, self.stages_egress or 0) <= STAGES[self.target])


def parse_dependency_minimum(text: str) -> tuple[int | None, int | None]:
    """The first 'Maximum stage number according to dependences' block: (ingress, egress)."""
    m = re.search(r"Maximum stage number according to dependences:\s*\n\s*INGRESS:\s*(\d+)"
                  r"(?:\s*\n\s*EGRESS:\s*(\d+))?", text)
    if not m:
        return None, None
    return int(m.group(1)), int(m.group(2)) if m.group(2) else None


def parse_final_stages(text: str) -> tuple[int | None, int | None]:
    """The last table allocation's stages (bf-p4c may re-place several times): (ingress, egress)."""
    ing = re.findall(r"Number of stages for ingress table allocation:\s*(\d+)", text)
    eg = re.findall(r"Number of stages for egress table allocation:\s*(\d+)", text)
    return (int(ing[-1]) if ing else None, int(eg[-1]) if eg else None)


def parse_errors(text: str, limit: int = 5) -> list[str]:
    """The compiler's and assembler's error lines (the first few), for the report."""
    lines = [ln.strip() for ln in text.splitlines()
             if re.search(r"\berror\b", ln, re.I) and not re.match(r"\s*0 errors", ln)]
    return lines[:limit]


def read_result(target: str, profile: str, out: Path, log: Path) -> Result:
    """Read one compile's reports from its output directory and log."""
    res = Result(target, profile)
    logs = out / "pipe" / "logs"
    if log.exists():
        text = log.read_text(errors="replace")
        m = re.search(r"^exit=(\d+) seconds=([\d.]+)$", text, re.M)
        if m:
            res.exit_code, res.seconds = int(m.group(1)), float(m.group(2))
        res.errors = parse_errors(text)
    dep = logs / "table_dependency_graph.log"
    if dep.exists():
        res.dep_ingress, res.dep_egress = parse_dependency_minimum(dep.read_text(errors="replace"))
    summary = logs / "table_summary.log"
    if summary.exists():
        res.stages_ingress, res.stages_egress = parse_final_stages(summary.read_text(errors="replace"))
    metrics = logs / "metrics.json"
    if metrics.exists():
        res.metrics = json.loads(metrics.read_text())
        if not res.metrics.get("mau", {}).get("logical_tables"):
            res.metrics = {}     # a run that stopped before table placement writes zeros
    res.binary = (out / "pipe" / f"{target}.bin").exists()
    return res


def compile_one(bf_p4c: str, target: str, profile: str, root: Path) -> Result:
    """Run bf-p4c for one (target, profile) into root/target-profile."""
    out = root / f"{target}-{profile}"
    log = root / f"{target}-{profile}.log"
    root.mkdir(parents=True, exist_ok=True)
    cmd = [bf_p4c, "--target", target, "--arch", ARCH[target], "-g", "-I", str(ROOT / "p4src"),
           *PROFILE_DEFINES[profile], "-o", str(out), str(PROGRAM)]
    start = time.monotonic()
    with log.open("w") as fh:
        fh.write(" ".join(cmd) + "\n")
        fh.flush()
        proc = subprocess.run(cmd, stdout=fh, stderr=subprocess.STDOUT, cwd=ROOT)
        fh.write(f"exit={proc.returncode} seconds={time.monotonic() - start:.1f}\n")
    return read_result(target, profile, out, log)


def phv_bits(metrics: dict) -> int | None:
    """PHV bits occupied over the normal, mocha and dark containers."""
    phv = metrics.get("phv")
    if not phv:
        return None
    return sum(c["bits_occupied"] for kind in phv.values() for c in kind)


def _n(value: int | None) -> str:
    return "-" if value is None else str(value)


def report(results: list[Result]) -> str:
    """A plain-text table, one row per compile, then the errors of those that failed."""
    head = ("target", "profile", "result", "dep. min (in/eg)", "stages (in/eg)",
            "SRAM", "TCAM", "map RAM", "tables", "PHV bits", "ingress cycles")
    rows = []
    for r in results:
        mau = r.metrics.get("mau", {})
        stages = STAGES[r.target]

        def share(key: str) -> str:
            if key not in mau:
                return "-"
            return f"{mau[key]} ({100 * mau[key] / (PER_STAGE[key] * stages):.1f}%)"

        cycles = {x["gress"]: x["cycles"] for x in mau.get("latency", [])}.get("ingress", "-")
        verdict = ("fits" if r.fits else
                   "running or no log" if r.exit_code is None else
                   f"exit {r.exit_code}" + ("" if r.binary else ", no binary"))
        rows.append((r.target, r.profile, verdict,
                     f"{_n(r.dep_ingress)}/{_n(r.dep_egress)}",
                     f"{_n(r.stages_ingress)}/{_n(r.stages_egress)} of {stages}",
                     share("srams"), share("tcams"), share("map_rams"), str(mau.get("logical_tables", "-")),
                     str(phv_bits(r.metrics) or "-"), str(cycles)))
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(row, widths)) for row in (head, *rows)]
    for r in results:
        if not r.fits and r.errors:
            lines.append(f"{r.target} {r.profile}:")
            lines.extend(f"    {e}" for e in r.errors)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--targets", default="tofino,tofino2")
    ap.add_argument("--profiles", default="",
                    help="compile these on every target (default: each target's own, TARGET_PROFILES)")
    ap.add_argument("--out", type=Path, default=ROOT / "build" / "tofino")
    ap.add_argument("--bf-p4c", default="bf-p4c", help="the driver (default: bf-p4c on PATH)")
    ap.add_argument("--from-logs", action="store_true", help="read an earlier run's output only")
    args = ap.parse_args(argv)
    targets = [t for t in args.targets.split(",") if t]
    profiles = [p for p in args.profiles.split(",") if p] or None
    for t in targets:
        if t not in ARCH:
            ap.error(f"unknown target {t!r} (one of {', '.join(ARCH)})")
    for p in profiles or ():
        if p not in PROFILE_DEFINES:
            ap.error(f"unknown profile {p!r} (one of {', '.join(PROFILE_DEFINES)})")
    bf_p4c = None if args.from_logs else shutil.which(args.bf_p4c)
    if not args.from_logs and bf_p4c is None:
        print(f"{args.bf_p4c}: not found.  bf-p4c (p4c built with ENABLE_TOFINO=ON) is not in the "
              "package registries; put an installed one on PATH or pass --bf-p4c.", file=sys.stderr)
        return 2
    results = []
    for t, p in configurations(targets, profiles):
        if args.from_logs:
            results.append(read_result(t, p, args.out / f"{t}-{p}", args.out / f"{t}-{p}.log"))
        else:
            print(f"bf-p4c --target {t} ({p}) ...", file=sys.stderr, flush=True)
            results.append(compile_one(bf_p4c, t, p, args.out))
    print(report(results))
    return 0 if all(r.fits for r in results) else 1

