"""Fabric packets per second: switch traversals per CPU second of the packet-level study.

    .venv/bin/python bench/fabric_pps.py [--runs 3] [--nbytes 65536]

One run = the 16-GPU lab fabric (fabric_sim.experiment), an AlltoAll with every QP starting at
t=0, reacting RoCEv2 NICs, the pipeline installed in-process; once on the baseline program
(ECMP, p4src/baselines/lb.p4) and once on stellar.p4.  A traversal is one frame taken in by one
switch (data, ACK, NAK and CNP frames alike).  Printed: every run, and the median (CPU time of
this process, so other load on a shared machine stretches wall time, not the figure).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fabric_sim.experiment import RunSpec, program, run, LB_P4, STELLAR_P4  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--nbytes", type=int, default=65536, help="bytes per QP of the AlltoAll")
    a = ap.parse_args()
    program(LB_P4), program(STELLAR_P4)  # compile outside the timed part
    medians = {}
    for mode in ("ecmp", "stellar"):
        rates = []
        for seed in range(a.runs):
            c0 = time.process_time()
            row = run(RunSpec("a2a", "sym", mode, seed, nbytes=a.nbytes))
            rates.append(row["traversals"] / (time.process_time() - c0))
        medians[mode] = statistics.median(rates)
        print(f"{mode:8s} lab AlltoAll {a.nbytes} B/QP: {row['traversals']} traversals/run; runs "
              + ", ".join(f"{r:,.0f}" for r in rates) + f" /s; median {medians[mode]:,.0f} traversals/s")
    print(f"stellar.p4 costs {medians['ecmp'] / medians['stellar']:.2f}x the baseline program per traversal")


if __name__ == "__main__":
    main()
