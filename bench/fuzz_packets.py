"""Packet robustness campaign: mutated frames through the Stellar leaf (stellar.p4 on p4sim).

    python bench/fuzz_packets.py [--count 100000] [--seed 1] [--bmv2 auto|off|required]
                                 [--diff-count 2000]

Prints cases, crashes, hangs, frames forwarded and dropped per reason (the program's
``telemetry.drops``), unaccounted losses, and whether the switch still forwards normally.
Exit status 1 if anything but zero crashes / hangs / unaccounted losses.  The corpus and the
checks are those of testkit/packet_fuzz.py (structure-aware mutation of
Ethernet/802.1Q/IPv4/options/UDP/BTH/TCP, truncations, bad checksums, noise).

Differential check (``--bmv2``): when simple_switch_grpc and p4c-bm2-ss are on PATH or in
/opt/p4tools/bin, the first ``--diff-count`` frames of the same corpus go through BMv2 as well,
and the forwarding decisions (egress port and bytes, or drop) are compared; see
bench/fuzz_diff.py.  Without BMv2 the reason is printed and the check is skipped.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=100_000, help="frames (default 100000)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hang-s", type=float, default=2.0, help="a frame taking longer is a hang")
    ap.add_argument("--bmv2", choices=["auto", "off", "required"], default="auto")
    ap.add_argument("--diff-count", type=int, default=2000, help="frames compared with BMv2")
    ap.add_argument("--malformed-l4", choices=["drop", "forward"], default="drop",
                    help="the leaf's policy for truncated UDP/TCP/BTH (config.params malformed_l4_forward)")
    args = ap.parse_args(argv)

    import p4sim
    from testkit.leaf import STELLAR_P4
    from testkit.packet_fuzz import campaign_leaf, mutated_frames, run_campaign

    program = p4sim.compile(str(STELLAR_P4))
    leaf = campaign_leaf(p4sim, program)
    leaf.set_params(malformed_l4_forward=int(args.malformed_l4 == "forward"))
    t0 = time.perf_counter()

    def progress(n: int) -> None:
        rate = n / (time.perf_counter() - t0)
        print(f"  ... {n} frames ({rate:,.0f}/s)", file=sys.stderr, flush=True)

    res = run_campaign(leaf, mutated_frames(args.seed, args.count), hang_s=args.hang_s,
                       progress=progress if args.count >= 20000 else None)
    print(f"packet campaign, seed {args.seed}, stellar.p4 on p4sim (testkit/leaf.py + a dangling route), "
          f"malformed L4: {args.malformed_l4}")
    print(f"  cases                {res.cases}")
    print(f"  crashes              {len(res.crashes)}")
    print(f"  hangs                {len(res.hangs)} (a frame over {args.hang_s:g} s)")
    print(f"  forwarded            {res.delivered}")
    print(f"  dropped by reason    {dict(sorted(res.drops_by_reason.items()))}  (define.p4 DROP_*)")
    print(f"  malformed by kind    {dict(sorted(res.malformed_by_kind.items()))}  (define.p4 MALFORMED_*)")
    print(f"  unaccounted losses   {len(res.accounting)}{': ' + '; '.join(res.accounting) if res.accounting else ''}")
    print(f"  forwards afterwards  {'yes' if res.forwards_after else 'NO'}")
    print(f"  time                 {res.seconds:.1f} s ({res.cases / max(res.seconds, 1e-9):,.0f} frames/s)")
    for line in (res.crashes + res.hangs)[:10]:
        print(f"    {line}")
    status = 0 if res.ok else 1

    if args.bmv2 != "off":
        from testkit.differential import bmv2_missing, differential

        missing = bmv2_missing()
        if missing:
            print(f"differential vs BMv2: skipped: {missing}")
            if args.bmv2 == "required":
                status = 1
        else:
            diff = differential(args.seed, min(args.diff_count, args.count))
            print(diff.text())
            if args.bmv2 == "required" and diff.agreement < 1.0:
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
