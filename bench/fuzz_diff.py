"""Differential check of the packet corpus: the same frames through two targets running
stellar.p4 with the campaign leaf's entries, forwarding decisions compared frame by frame.

    python bench/fuzz_diff.py [--count 2000] [--seed 1] [--a p4sim] [--b bmv2]
    python bench/fuzz_diff.py --backends [--count 100000] [--programs stellar,l3]

How the targets are started and a decision is compared: testkit/differential.py.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from testkit.differential import bmv2_missing, differential  # noqa: E402  (after the path insert)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--a", default="p4sim", choices=["p4sim", "bmv2"])
    ap.add_argument("--b", default="bmv2", choices=["p4sim", "bmv2"])
    ap.add_argument("--backends", action="store_true",
                    help="p4sim's native backend against its reference backend, in process "
                         "(testkit/native_workloads.py: mutated frames, state compared too)")
    ap.add_argument("--programs", default="stellar,l3", help="with --backends: stellar, l3 or both")
    args = ap.parse_args(argv)
    if args.backends:
        from testkit.native_workloads import backend_differential

        return backend_differential(args.count, args.seed, args.programs.split(","))
    if "bmv2" in (args.a, args.b):
        missing = bmv2_missing()
        if missing:
            print(f"differential vs BMv2: skipped: {missing}")
            return 0
    res = differential(args.seed, args.count, args.a, args.b)
    print(res.text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
