"""P4Runtime robustness campaign against p4sim's server (in-process, real gRPC on loopback).

    python bench/fuzz_p4runtime.py [--count 2000] [--seed 1]

``--count`` random malformed batches under random atomicity, half on the fake switch and half on
the real p4sim core running tests/p4rt/p4/match_kinds.p4 (every all-or-none refusal checked by
reading the whole switch back), count/4 mostly-valid CONTINUE_ON_ERROR batches compared with
the same updates written one per Write to a twin switch (codes and final state), then the scenarios once each at larger sizes: edge requests
(oversized, duplicate, out-of-range, out-of-order), two roles writing concurrently, streams cut
mid-arbitration, a pipeline swap under writes.  Prints per-code counts and every violation;
exit 1 if there is one.  The checks are those of testkit/p4runtime_fuzz.py.
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
    ap.add_argument("--count", type=int, default=2000, help="random batches (default 2000)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)

    from p4sim.p4rt.client import load_p4info
    from testkit.fake_switch import fake_p4info
    from testkit.p4rt_harness import Harness
    from testkit.p4runtime_fuzz import (concurrent_roles, edge_requests, pipeline_swap_while_writing, random_batches,
                                        streams_cut_mid_arbitration, twin_batches)
    from testkit.p4sim_process import REPO, compile_program

    violations = 0
    t0 = time.perf_counter()
    h = Harness()
    try:
        fake = random_batches(h.primary_with_pipeline(), fake_p4info(), args.count - args.count // 2, args.seed)
    finally:
        h.close()
    print(f"random batches, fake switch:  {fake.summary()}")
    with tempfile.TemporaryDirectory() as tmp:
        json_path, info_path = compile_program(REPO / "tests/p4rt/p4/match_kinds.p4", Path(tmp))
        info = load_p4info(str(info_path))
        h = Harness(real=True)
        try:
            c = h.client()
            c.set_pipeline(info, json_path.read_bytes())
            real = random_batches(c, info, args.count // 2, args.seed + 1)
        finally:
            h.close()
    print(f"random batches, p4sim core:   {real.summary()}")
    a, b = Harness(), Harness()
    try:
        twin = twin_batches(a.primary_with_pipeline(), b.primary_with_pipeline(), fake_p4info(),
                            max(1, args.count // 4), args.seed + 2)
    finally:
        a.close()
        b.close()
    print(f"CONTINUE_ON_ERROR batch vs one Write per update: {twin.summary()}")
    for v in (fake.violations + real.violations + twin.violations)[:20]:
        print(f"    {v}")
    violations += len(fake.violations) + len(real.violations) + len(twin.violations)

    for name, run in (("edge requests", lambda h: edge_requests(h)),
                      ("two roles writing concurrently (500 each)", lambda h: concurrent_roles(h, 500)),
                      ("streams cut mid-arbitration (100)", lambda h: streams_cut_mid_arbitration(h, 100)),
                      ("pipeline swap under writes (2000 writes, 40 swaps)",
                       lambda h: pipeline_swap_while_writing(h, 2000, 40))):
        h = Harness()
        try:
            problems = run(h)
        finally:
            h.close()
        print(f"{name:52s} {'ok' if not problems else f'{len(problems)} problems'}")
        for p in problems[:10]:
            print(f"    {p}")
        violations += len(problems)
    print(f"total: {fake.batches + real.batches + twin.batches} batches "
          f"({fake.updates + real.updates + twin.updates} updates) "
          f"+ 4 scenarios, {violations} violations, {time.perf_counter() - t0:.1f} s")
    return 0 if violations == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
