#!/usr/bin/env python3
"""Cross-check the packet-level fabric model against htsim (Broadcom/csg-htsim) on the lab.

Both simulators run the same lab topology (fabrics/lab.yaml: 4 leaves x 4 hosts at 100G, 2
spines, one 100G link per leaf-spine pair, 0.5 µs host links, 1 µs leaf-spine links), the same
AlltoAll (every host writes ``--nbytes`` to every other host, all at t=0) under ECMP, with a
4 KB MTU and no loss:

* congestion control off: ours with DCQCN disabled; htsim's ``htsim_roce`` (RoCE with no
  congestion control) on PFC input queues (``-queue_type lossless_input``);
* congestion control on: ours with DCQCN; htsim's nearest RDMA control, ``htsim_hpcc`` (HPCC),
  on the same queues.  The stock ``htsim_hpcc`` builds a fat tree of its own; running it on the
  lab needs the ``-topo FILE`` option ``htsim_roce`` has (the same ``FatTreeTopology::load``
  call), so give a build that accepts it, or the HPCC row is skipped with the reason.

Each row is the collective's completion over the fluid ideal (the busier of a NIC's 15 x nbytes
and a leaf's 12 x 4 x nbytes over its 200G of uplinks).  The two simulators agree when the ratio
of their figures is within ``--tolerance``.  htsim is never part of this repository: point
``--htsim`` at a local build (``make`` in its ``sim/`` and ``sim/datacenter/``).

    python bench/htsim_crosscheck.py --htsim /path/to/csg-htsim/sim/datacenter [--nbytes 1000000]
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

HOSTS, LEAVES, SPINES, GBPS = 16, 4, 2, 100.0
TOLERANCE = 0.15  # the two simulators' completion/ideal agree within 15%
FINISHED = re.compile(r"finished at ([0-9.]+)")

# The lab as htsim's FatTreeTopology::load reads it: tier 0 = leaves (4 down, 2 up: 2:1),
# tier 1 = spines (one link to each of the 4 leaves); latencies of fabrics/lab.yaml.
LAB_TOPO = f"""Nodes {HOSTS}
Tiers 2
Podsize {HOSTS}

Tier 0
Downlink_speed_Gbps {GBPS:g}
Radix_Down {HOSTS // LEAVES}
Radix_Up {SPINES}
Downlink_Latency_ns 500
Switch_Latency_ns 0
Oversubscribed 2

Tier 1
Downlink_speed_Gbps {GBPS:g}
Radix_Down {LEAVES}
Downlink_Latency_ns 1000
Switch_Latency_ns 0
"""


def ideal_us(nbytes: int) -> float:
    """Fluid lower bound of the lab AlltoAll: the busier of one NIC and one leaf's uplinks."""
    per_leaf = HOSTS // LEAVES
    nic = (HOSTS - 1) * nbytes * 8 / (GBPS * 1e3)
    uplinks = per_leaf * (HOSTS - per_leaf) * nbytes * 8 / (SPINES * GBPS * 1e3)
    return max(nic, uplinks)


def connection_matrix(nbytes: int) -> str:
    pairs = [(s, d) for s in range(HOSTS) for d in range(HOSTS) if s != d]
    return "\n".join([f"Nodes {HOSTS}", f"Connections {len(pairs)}"]
                     + [f"{s}->{d} start 0 size {nbytes}" for s, d in pairs]) + "\n"


def run_htsim(binary: Path, nbytes: int, seed: int) -> tuple[Optional[float], str]:
    """The last flow's completion (µs) in one htsim run, or None with the reason."""
    if not binary.exists():
        return None, f"{binary} not found"
    with tempfile.TemporaryDirectory() as tmp:
        topo, cm = Path(tmp) / "lab.topo", Path(tmp) / "a2a.cm"
        topo.write_text(LAB_TOPO)
        cm.write_text(connection_matrix(nbytes))
        cmd = [str(binary), "-nodes", str(HOSTS), "-topo", str(topo), "-tm", str(cm), "-strat", "ecmp_host",
               "-paths", "256", "-queue_type", "lossless_input", "-q", "200", "-mtu", "4096",
               "-end", "1000000", "-seed", str(seed)]
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp, timeout=3600)
    done = [float(m.group(1)) for m in FINISHED.finditer(out.stdout)]
    if out.returncode != 0 or len(done) != HOSTS * (HOSTS - 1):
        tail = (out.stdout + out.stderr).strip().splitlines()[-1:] or ["no output"]
        return None, f"exit {out.returncode}, {len(done)} flows finished: {tail[0][:120]}"
    return max(done), ""


def run_ours(nbytes: int, seed: int, dcqcn: bool) -> tuple[float, dict]:
    """Our packet level (fabric_sim.experiment.run, ECMP, symmetric lab) with DCQCN on or off."""
    import fabric_sim.rdma as rdma
    from fabric_sim.experiment import RunSpec, run

    original = rdma.NicParams

    def params(*args, **kwargs):
        p = original(*args, **kwargs)
        return p if dcqcn else replace(p, dcqcn=replace(p.dcqcn, enabled=False))

    rdma.NicParams = params  # run() builds its NicParams from this module at call time
    try:
        row = run(RunSpec("a2a", "sym", "ecmp", seed, nbytes=nbytes))
    finally:
        rdma.NicParams = original
    return row["completion_us"], row


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--htsim", default=os.environ.get("HTSIM_DIR", ""),
                    help="directory with htsim_roce and htsim_hpcc (or $HTSIM_DIR)")
    ap.add_argument("--nbytes", type=int, default=1_000_000, help="bytes per (source, destination) pair")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--tolerance", type=float, default=TOLERANCE)
    args = ap.parse_args(argv)
    if not args.htsim:
        print("no htsim build given (--htsim DIR or $HTSIM_DIR): nothing to compare", file=sys.stderr)
        return 2
    htsim = Path(args.htsim)
    ideal = ideal_us(args.nbytes)
    print(f"lab AlltoAll, {args.nbytes} B per pair, ECMP, 4 KB MTU, lossless; fluid ideal {ideal:.0f} µs; "
          f"tolerance {args.tolerance:.0%} on completion/ideal\n")
    print("| congestion control | htsim | htsim completion/ideal | ours | ours completion/ideal | "
          "ours drops, timeouts | difference | agree |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    worst = 0.0
    for label, binary, dcqcn in (("off", "htsim_roce", False), ("on", "htsim_hpcc", True)):
        t0 = time.perf_counter()
        theirs, why = run_htsim(htsim / binary, args.nbytes, args.seed)
        t1 = time.perf_counter()
        ours, row = run_ours(args.nbytes, args.seed, dcqcn)
        t2 = time.perf_counter()
        name = f"{binary} ({t1 - t0:.0f} s)"
        ours_cell = f"{ours / ideal:.2f}" if ours else "unfinished"
        extra = f"{row['drops_tail']}, {row['timeouts']}"
        mine = f"ours {'DCQCN' if dcqcn else 'no CC'} ({t2 - t1:.0f} s)"
        if theirs is None or ours is None:
            print(f"| {label} | {name} | skipped: {why} | {mine} | {ours_cell} | {extra} | - | - |")
            continue
        diff = ours / theirs - 1
        worst = max(worst, abs(diff))
        print(f"| {label} | {name} | {theirs / ideal:.2f} | {mine} | {ours_cell} | {extra} | {diff:+.0%} | "
              f"{'yes' if abs(diff) <= args.tolerance else 'NO'} |", flush=True)
    return 0 if worst <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
