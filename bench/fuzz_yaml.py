"""Fabric YAML mutation campaign: mutated copies of fabrics/lab, pod and cluster512.

    python bench/fuzz_yaml.py [--count 1000] [--seed 1] [--fabrics lab,pod,cluster512]

Every mutant must load (and then plan and render, lab/pod) or fail with FabricError problems
that each name the file, a line in it and a key; a traceback or an unlocated problem is a
failure (printed, exit 1).  The mutations are those of testkit/yaml_fuzz.py.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fabrics", default="lab,pod,cluster512")
    args = ap.parse_args(argv)
    from testkit.yaml_fuzz import run

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        res = run(args.count, args.seed, Path(tmp), fabrics=tuple(args.fabrics.split(",")))
    print(f"fabric YAML campaign, seed {args.seed}: {res.summary()} in {time.perf_counter() - t0:.0f} s")
    for f in res.failures[:20]:
        print("----", f)
    return 0 if not res.failures else 1


if __name__ == "__main__":
    sys.exit(main())
