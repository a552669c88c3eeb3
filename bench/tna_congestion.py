"""The demo's congestion scenario over many seeds, both programs, ECMP and Stellar.

``make demo`` runs one seed of one hash draw (AlltoAll jitter seed 7, mice seed 1).  This bench
reruns exactly that scenario (fabric_sim.demo.run_congestion: the 8-GPU AlltoAll with starts
spread over JITTER_US, 2-packet mice, leaf1-spine1 at 40 %) for N seeds (1..N by default), where seed s draws
the start jitter (and with it the QP numbers, so the flows' hash members too) and the mice
(pairs and start times), for ``--arch`` v1model and tna and modes ecmp and stellar.

Prints per seed job completion and mice FCT p50/p99 per (arch, mode), then per arch the medians
over seeds and the median of the per-seed ratios ECMP/Stellar (>1: Stellar is faster / has the
shorter FCT) with a 95 % percentile-bootstrap interval and the min..max over seeds, and the
fraction of seeds Stellar wins.  Writes the rows to build/bench/tna_congestion.json.

    PYTHONPATH=. .venv/bin/python bench/tna_congestion.py --seeds 10            # quick messages
    PYTHONPATH=. .venv/bin/python bench/tna_congestion.py --arch tna --together # the t=0 variant

This is a bench (minutes of simulation), not a test.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

METRICS = (("job", "job completion (us)"), ("p50", "mice p50 FCT (us)"), ("p99", "mice p99 FCT (us)"))


def run(arches, modes, seeds, messages: int, together: bool, out: Path) -> list[dict]:
    from control_plane.model import load_fabric
    from fabric_sim import demo

    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - the venv has it
        def tqdm(xs, **_):
            return xs
    fabric = load_fabric(str(demo.LAB))
    files = {a: demo.build_program(out / a, a) for a in arches}
    jobs = [(a, m, s) for a in arches for s in seeds for m in modes]
    rows = []
    for arch, mode, seed in tqdm(jobs, desc="runs", unit="run"):
        started = time.perf_counter()
        r = demo.run_congestion(fabric, files[arch], mode, messages, together=together, arch=arch,
                                seed=seed, mice_seed=seed)
        row = {"arch": arch, "mode": mode, "seed": seed, "wall_s": round(time.perf_counter() - started, 1)}
        for key, name in METRICS:
            row[key] = r.metrics.get(name)
        row["ce"] = r.metrics.get("CE marks / CNPs")
        row["changes"] = r.metrics.get("path changes gap/drain/failover")
        row["completed"] = r.metrics.get("transfers completed")
        rows.append(row)
    return rows


def _f(v) -> str:
    return "-" if v is None else f"{v:.1f}"


def report(rows: list[dict], arches, modes, seeds, together: bool) -> str:
    from fabric_sim.stats import bootstrap_ci, median, ratio_per_seed, win_fraction

    keys = [k for k, _ in METRICS if not (together and k != "job")]
    lines = []
    for arch in arches:
        by = {(r["mode"], r["seed"]): r for r in rows if r["arch"] == arch}
        lines.append(f"\n== {arch}: {'together' if together else 'congestion'}, per seed ==")
        head = "seed " + "".join(f"{m + ' ' + k:>14}" for k in keys for m in modes)
        lines.append(head)
        for s in seeds:
            lines.append(f"{s:>4} " + "".join(f"{_f(by.get((m, s), {}).get(k)):>14}" for k in keys for m in modes))
        lines.append(f"\n== {arch}: medians over {len(seeds)} seeds ==")
        lines.append(f"{'metric':<8}" + "".join(f"{m:>10}" for m in modes)
                     + f"{'ratio ecmp/stellar: median [95% CI] (min..max)':>52}{'stellar wins':>14}")
        for k in keys:
            col = {m: {s: by[(m, s)][k] for s in seeds if (m, s) in by} for m in modes}
            meds = "".join(f"{_f(median(list(col[m].values()))):>10}" for m in modes)
            ratio = ""
            if "ecmp" in col and "stellar" in col:
                rs = ratio_per_seed(col["ecmp"], col["stellar"])
                lo, hi = bootstrap_ci(rs)
                wins = win_fraction(col["stellar"], col["ecmp"])
                ratio = (f"{median(rs):.3f} [{lo:.3f}, {hi:.3f}] ({min(rs):.3f}..{max(rs):.3f})".rjust(52)
                         + f"{wins * 100:>12.0f} %" if rs else "")
            lines.append(f"{k:<8}{meds}{ratio}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=10, help="N seeds (default 10)")
    ap.add_argument("--first-seed", type=int, default=1, help="the first seed (default 1)")
    ap.add_argument("--arch", action="append", choices=("v1model", "tna"),
                    help="repeatable; default both")
    ap.add_argument("--mode", action="append", choices=("ecmp", "stellar", "no-drain"),
                    help="repeatable; default ecmp and stellar")
    ap.add_argument("--messages", type=int, default=2, help="32 KB messages per QP (the demo's --quick: 2)")
    ap.add_argument("--together", action="store_true", help="every QP starts at t=0, no mice")
    ap.add_argument("--dre-units-per-level", type=int, default=None,
                    help="TNA: render dre.level<k> rows this many 64 B units wide at 100 Gbps instead of "
                         "control_plane.contract's (16 reproduces the render before the range fix)")
    ap.add_argument("--out", default=str(ROOT / "build" / "bench"))
    args = ap.parse_args(argv)
    if args.dre_units_per_level is not None:
        from control_plane import contract
        contract.TNA_DRE_UNITS_PER_LEVEL = args.dre_units_per_level   # render_tna.dre_rows reads it per call
    arches = tuple(args.arch or ("v1model", "tna"))
    modes = tuple(args.mode or ("ecmp", "stellar"))
    seeds = tuple(range(args.first_seed, args.first_seed + args.seeds))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = run(arches, modes, seeds, args.messages, args.together, out)
    text = report(rows, arches, modes, seeds, args.together)
    print(text)
    name = ("tna_congestion" + ("_together" if args.together else "") + f"_{'_'.join(arches)}_s{seeds[0]}-{seeds[-1]}"
            + (f"_u{args.dre_units_per_level}" if args.dre_units_per_level is not None else ""))
    (out / f"{name}.json").write_text(json.dumps(rows, indent=1))
    (out / f"{name}.txt").write_text(text + "\n")
    print(f"\nwrote {out / name}.json and .txt")
    return 0


if __name__ == "__main__":
    sys.exit(main())
