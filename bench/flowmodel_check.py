#!/usr/bin/env python3
"""The flow-level model against the packet level, per policy: the table of docs/flow-model.md.

For each (topology, DCQCN flavour, size, policy, seed): the packet level's AlltoAll completion
over the fluid ideal, the flow model's on the paths the packet level took (``flow``), with its
own placement for the policy (``own``), and blind to the degraded link (``blind``), the
completion errors, the median per-flow FCT error, and each policy's completion relative to
ECMP's in both (``fabric_sim.flowmodel.validate_policy``).

    python bench/flowmodel_check.py [--topos deg40,sym] [--dcqcn off] [--nbytes 32768] [--seeds 1,2,3] [--workload a2a]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

POLICIES = ("ecmp", "wcmp", "stellar")


def main(argv: Optional[list[str]] = None) -> int:
    from fabric_sim.flowmodel import validate_policy

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--topos", default="deg40,sym")
    ap.add_argument("--dcqcn", default="off", help="comma-separated: off | nvidia | paper")
    ap.add_argument("--nbytes", type=int, default=32768, help="bytes per QP")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--workload", default="a2a", help="a2a | a2a-jit (starts jittered up to 20 us) | ...")
    args = ap.parse_args(argv)
    print(f"{args.workload}, completion over the fluid ideal (c/i):\n")
    print("| topo | DCQCN | KB/QP | policy | seed | packet c/i | flow c/i (same paths) | error | own placement c/i "
          "| error | blind c/i | median FCT error | vs ECMP: packet | flow | error |")
    print("| --- " * 15 + "|")
    for topo in args.topos.split(","):
        for dcqcn in args.dcqcn.split(","):
            for seed in (int(s) for s in args.seeds.split(",")):
                runs = {m: validate_policy(m, topo, seed=seed, nbytes=args.nbytes, dcqcn=dcqcn,
                                           workload=args.workload) for m in POLICIES}
                ecmp = runs["ecmp"]
                for m, v in runs.items():
                    pkt = v["packet_completion_us"] / ecmp["packet_completion_us"]
                    flo = v["flow_completion_us"] / ecmp["flow_completion_us"]
                    own_err = abs(v["own_completion_us"] - v["packet_completion_us"]) / v["packet_completion_us"]
                    print(f"| {topo} | {dcqcn} | {args.nbytes // 1024} | {m} | {seed} | {v['packet_over_ideal']:.3f} | "
                          f"{v['flow_over_ideal']:.3f} | {v['flow_completion_error']:.1%} | {v['own_over_ideal']:.3f} | "
                          f"{own_err:.1%} | {v['blind_over_ideal']:.3f} | {v['flow_median_fct_error']:.1%} | "
                          f"{pkt:.3f} | {flo:.3f} | {abs(flo - pkt) / pkt:.1%} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
