"""Fabric packets per second: switch traversals per CPU second of the packet-level study.

    .venv/bin/python bench/fabric_pps.py [--runs 3] [--nbytes 65536] [--backend python,native] [--baseline /work/main]

One run = the 16-GPU lab fabric (fabric_sim.experiment), an AlltoAll with every QP starting at
t=0, reacting RoCEv2 NICs, the pipeline installed in-process; once on the baseline program
(ECMP, p4src/baselines/lb.p4) and once on stellar.p4.  A traversal is one frame taken in by one
switch (data, ACK, NAK and CNP frames alike).  Printed: every run, and the median (CPU time of
the measuring process, so other load on a shared machine stretches wall time, not the figure).

``--backend python,native`` measures this checkout on each p4sim backend (the reference
interpreter and the generated C; default: native, the study's own) and prints native/python.
``--baseline CHECKOUT`` measures the same runs with another checkout's code (for example the
previous main) in the same sitting, and prints both medians and their ratio.

Every run also prints the resident memory its fabric holds (the process's RSS with the run's
fabric alive, less the RSS before it: Python objects and the native backend's C state alike),
per fabric and per switch.  ``--conweave US`` adds one run per mode of ConWeave's published setup
(fabrics/conweave.yaml: 8 leaves x 8 spines, 128 hosts at 100G; AliStorage2019 at 50 % load,
``US`` µs of Poisson arrivals) and prints its CPU time as measured, with the same memory figures.  Each side runs in
its own process with its checkout first on ``sys.path``; programs are compiled before the timed
part on both sides, and the sides alternate run by run so load on the machine hits both alike.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
MODES = ("ecmp", "stellar")


def rss_mb() -> float:
    """The process's resident memory now (Linux /proc; what cffi's C state takes counts too)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def worker(root: str, mode: str, seed: int, nbytes: int, conweave_us: float = 0.0) -> dict:
    """One timed run with the code of checkout ``root`` (called in a fresh process; the backend
    comes from ``$P4SIM_BACKEND``, or is the checkout's default): the lab AlltoAll, or with
    ``conweave_us`` the ConWeave setup with that many µs of arrivals."""
    sys.path.insert(0, root)
    from fabric_sim.experiment import LB_P4, STELLAR_P4, RunSpec, program, run

    program(LB_P4 if mode == "ecmp" else STELLAR_P4)  # compile outside the timed part
    run(RunSpec("a2a", "sym", mode, seed + 1000, nbytes=4096))  # imports and first-use caches
    spec = (RunSpec("alistorage-50", "sym", mode, seed, fabric="conweave", duration_us=conweave_us)
            if conweave_us else RunSpec("a2a", "sym", mode, seed, nbytes=nbytes))
    keep: dict = {}
    before = rss_mb()
    c0 = time.process_time()
    row = run(spec, keep)
    cpu = time.process_time() - c0
    sim = keep["sim"]  # still alive: its memory is in the RSS
    held = rss_mb() - before
    ran = sorted({getattr(sim.switch(n).pipeline, "backend", "python") for n in sim.devices})
    return {"traversals": row["traversals"], "cpu_s": cpu, "rate": row["traversals"] / cpu, "ran": ",".join(ran),
            "fabric_mb": held, "switches": len(sim.devices), "hosts": len(sim.fabric.hosts)}


def measure(root: Path, mode: str, seed: int, nbytes: int, backend: Optional[str], conweave_us: float = 0.0) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "P4SIM_BACKEND"}
    env["PYTHONPATH"] = str(root)
    if backend is not None:
        env["P4SIM_BACKEND"] = backend
    out = subprocess.run([sys.executable, __file__, "--worker", str(root), "--mode", mode, "--seed", str(seed),
                          "--nbytes", str(nbytes), "--conweave", str(conweave_us)],
                         env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"the run in {root} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--nbytes", type=int, default=65536, help="bytes per QP of the AlltoAll")
    ap.add_argument("--backend", default="native",
                    help="this checkout's p4sim backends, comma-separated: python, native (default native)")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated: ecmp, stellar")
    ap.add_argument("--baseline", metavar="CHECKOUT", help="another checkout to measure side by side "
                    "(on its default backend)")
    ap.add_argument("--conweave", type=float, default=0.0, metavar="US",
                    help="also one run per mode of ConWeave's setup with US µs of arrivals (0: none)")
    ap.add_argument("--worker", metavar="CHECKOUT", help=argparse.SUPPRESS)
    ap.add_argument("--mode", default="ecmp", help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        print(json.dumps(worker(a.worker, a.mode, a.seed, a.nbytes, a.conweave)))
        return
    sides: dict[str, tuple[Path, Optional[str]]] = {b: (ROOT, b) for b in a.backend.split(",")}
    if a.baseline:
        sides["baseline"] = (Path(a.baseline).resolve(), None)
    modes = a.modes.split(",")
    medians: dict[tuple[str, str], float] = {}
    for mode in modes:
        rates: dict[str, list[float]] = {side: [] for side in sides}
        trav: dict[str, int] = {}
        ran: dict[str, str] = {}
        mem: dict[str, dict] = {}
        for seed in range(a.runs):
            for side, (root, backend) in sides.items():  # alternate: load on the machine hits all alike
                r = measure(root, mode, seed, a.nbytes, backend)
                rates[side].append(r["rate"])
                trav[side], ran[side], mem[side] = r["traversals"], r.get("ran", "?"), r
        for side in sides:
            medians[(side, mode)] = statistics.median(rates[side])
            print(f"{side:8s} {mode:8s} (ran: {ran[side]}) lab AlltoAll {a.nbytes} B/QP: {trav[side]} traversals/run; "
                  "runs " + ", ".join(f"{r:,.0f}" for r in rates[side])
                  + f" /s; median {medians[(side, mode)]:,.0f} traversals/s" + _memory(mem[side]))
    if "ecmp" in modes and "stellar" in modes:
        for side in sides:
            print(f"{side}: stellar.p4 costs {medians[(side, 'ecmp')] / medians[(side, 'stellar')]:.2f}x "
                  "the baseline program per traversal")
    if a.conweave:
        for mode in modes:
            for side, (root, backend) in sides.items():
                r = measure(root, mode, 0, a.nbytes, backend, a.conweave)
                print(f"{side:8s} {mode:8s} ConWeave setup ({r['hosts']} hosts, {r['switches']} switches, "
                      f"AliStorage2019 at 50 %, {a.conweave:g} us of arrivals; ran: {r.get('ran', '?')}): "
                      f"{r['cpu_s']:.1f} CPU s per run, {r['traversals']} traversals ({r['rate']:,.0f}/s); "
                      f"ConWeave's 0.1 s of arrivals at this rate: {r['cpu_s'] * 1e5 / a.conweave / 3600:.1f} CPU h"
                      + _memory(r))
    for mode in modes:
        if "python" in sides and "native" in sides:
            print(f"{mode}: native runs {medians[('native', mode)] / medians[('python', mode)]:.2f}x the "
                  "reference backend's traversals per CPU second")
        if a.baseline:
            for side in sides:
                if side != "baseline":
                    print(f"{mode}: this checkout ({side}) runs {medians[(side, mode)] / medians[('baseline', mode)]:.2f}x "
                          f"the baseline's traversals per CPU second")


def _memory(r: dict) -> str:
    if "fabric_mb" not in r:  # a baseline checkout without the memory figures
        return ""
    return (f"; memory held by the fabric {r['fabric_mb']:.1f} MB, "
            f"{r['fabric_mb'] / r['switches']:.2f} MB per switch (with its hosts' NICs)")


if __name__ == "__main__":
    main()
