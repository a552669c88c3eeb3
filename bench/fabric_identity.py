"""Every row of ``make eval``'s quick matrix, run on p4sim's reference and native backends:
prints each row whose keys differ (wall time aside) and the count of mismatches (0 expected).

    nice .venv/bin/python bench/fabric_identity.py [--workers 1] [--limit N] [--full]

The runs are ``fabric_sim.eval.specs_for`` of the matrix: its first phase, then Stellar without
drain detection at every LetFlow timeout of the matrix (``make eval`` runs only the best one,
which depends on the rows).  Each spec runs on both backends in one worker process, one after
the other; tests/native/test_fabric_identity.py is the small version that CI runs.
"""
from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def both(spec) -> tuple[object, list[str], dict, dict]:
    """(spec, differing keys, CPU seconds per backend, traversals) of one spec."""
    from fabric_sim.experiment import WALL_KEYS, run

    rows, cpu = {}, {}
    for backend in ("python", "native"):
        c0 = time.process_time()
        try:
            rows[backend] = run(spec, backend=backend)
        except Exception as e:  # noqa: BLE001 - an error row is compared like any other
            rows[backend] = {"error": f"{type(e).__name__}: {e}"}
        cpu[backend] = time.process_time() - c0
    a, b = rows["python"], rows["native"]
    diff = sorted(k for k in a.keys() | b.keys() if k not in WALL_KEYS and a.get(k, KeyError) != b.get(k, KeyError))
    return spec, diff, cpu, {k: (a.get(k), b.get(k)) for k in diff}


def main() -> int:
    from fabric_sim import eval as ev

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--limit", type=int, help="only the first N runs (a smoke test)")
    ap.add_argument("--full", action="store_true", help="the --full matrix (days on the reference)")
    a = ap.parse_args()
    m = ev.FULL if a.full else ev.QUICK
    specs = ev.specs_for(m) + [s for t in m.letflow for s in ev.specs_for(m, ev.NODRAIN, t)]
    specs = list(dict.fromkeys(specs))[: a.limit]
    print(f"{len(specs)} runs of the {'full' if a.full else 'quick'} matrix, each on both backends", flush=True)
    started = time.perf_counter()
    mismatches = 0
    cpu = {"python": 0.0, "native": 0.0}
    with ProcessPoolExecutor(max_workers=a.workers) as pool:
        for i, (spec, diff, c, values) in enumerate(pool.map(both, specs), 1):
            for k in cpu:
                cpu[k] += c[k]
            mark = "MISMATCH " + ", ".join(diff) if diff else "identical"
            print(f"[{i}/{len(specs)}] {spec.workload}/{spec.topo} {spec.mode} seed {spec.seed}: {mark} "
                  f"(cpu python {c['python']:.1f} s, native {c['native']:.1f} s)", flush=True)
            if diff:
                mismatches += 1
                for k, (x, y) in values.items():
                    print(f"    {k}: python {str(x)[:120]} | native {str(y)[:120]}")
    print(f"{mismatches} mismatching rows of {len(specs)}; CPU python {cpu['python']:.0f} s, native "
          f"{cpu['native']:.0f} s ({cpu['python'] / max(cpu['native'], 1e-9):.2f}x); "
          f"wall {time.perf_counter() - started:.0f} s")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
