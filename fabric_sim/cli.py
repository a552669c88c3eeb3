"""``python -m fabric_sim run``: one run of the fabric study from the command line.

    python -m fabric_sim run --workload a2a --topo deg40 --mode stellar --seed 7 --json
    python -m fabric_sim run --workload ring --topo sym --mode conga --fabric pod --message-bytes 4M
    python -m fabric_sim run ... --set duration_us=400     # any other RunSpec field
    python -m fabric_sim run ... --backend python          # p4sim's reference interpreter

It builds a ``RunSpec`` and calls ``fabric_sim.experiment.run``, the same entry the sweeps use, so
a row printed here is the row the study would record (keys: ``fabric_sim.experiment.ROW_KEYS``).
``python -m fabric_sim`` without ``run`` is the demo (``make demo``).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Optional

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def size(text: str) -> int:
    """``4M`` -> 4 MiB, ``512K``, ``65536``: sizes as nccl-tests writes them (binary units)."""
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    unit = t[-1:] if t[-1:] in _UNITS and not t[-1:].isdigit() else ""
    number = t[: len(t) - len(unit)]
    try:
        value = float(number) * _UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a size: {text!r} (e.g. 65536, 512K, 4M)") from None
    if value <= 0 or value != int(value):
        raise argparse.ArgumentTypeError(f"not a whole positive size: {text!r}")
    return int(value)


def _field_value(spec_cls, item: str):
    """``key=value`` of a RunSpec field, converted to the field's type."""
    key, sep, raw = item.partition("=")
    fields = {f.name: f for f in dataclasses.fields(spec_cls)}
    if not sep or key not in fields:
        raise argparse.ArgumentTypeError(f"--set wants FIELD=VALUE with FIELD one of {', '.join(fields)}; "
                                         f"got {item!r}")
    kind = str(fields[key].type)
    try:
        value = int(raw) if kind == "int" else float(raw) if kind == "float" else raw
    except ValueError:
        raise argparse.ArgumentTypeError(f"--set {key}: {raw!r} is not a {kind}") from None
    return key, value


def parser() -> argparse.ArgumentParser:
    from fabric_sim.experiment import FABRICS

    ap = argparse.ArgumentParser(prog="python -m fabric_sim run",
                                 description="One run of the fabric study: prints its metrics row.")
    ap.add_argument("--workload", required=True,
                    help="a2a, a2a-jit, ring, perm, incast, websearch-<load%%>, datamining-<load%%>, tenants, "
                         "train-a2a, train-ring, train-tree, train-moe, train-perm (a training job: --set channels=, "
                         "iterations=, warmup=, gap_us=, ...)")
    ap.add_argument("--topo", default="sym", help="sym, deg70, deg40, deg10, fail, gray (default sym)")
    ap.add_argument("--mode", required=True,
                    help="stellar, stellar-static-ecn, stellar-nodrain-<us>, ecmp, wcmp, ecmp-em, spray, "
                         "letflow-<us>, drill, least, conga[-<us>]")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--fabric", choices=sorted(FABRICS), default="lab")
    ap.add_argument("--message-bytes", type=size, metavar="SIZE",
                    help="bytes per QP of a collective (RunSpec.nbytes): 65536, 512K, 4M")
    ap.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                    help="any other RunSpec field (repeatable)")
    ap.add_argument("--backend", choices=("python", "native"),
                    help="p4sim backend of every switch (default $P4SIM_BACKEND, else native); "
                         "the row is the same under both")
    ap.add_argument("--json", action="store_true", help="print the row as one JSON object")
    return ap


def main(argv: Optional[list[str]] = None) -> int:
    from fabric_sim.experiment import RunSpec, run

    args = parser().parse_args(argv)
    kw = dict(workload=args.workload, topo=args.topo, mode=args.mode, seed=args.seed, fabric=args.fabric)
    if args.message_bytes is not None:
        kw["nbytes"] = args.message_bytes
    for item in args.set:
        try:
            key, value = _field_value(RunSpec, item)
        except argparse.ArgumentTypeError as e:
            parser().error(str(e))
        kw[key] = value
    try:
        row = run(RunSpec(**kw), backend=args.backend)
    except ValueError as e:  # unknown workload / mode / topology: say so, no traceback
        print(f"python -m fabric_sim run: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(row, default=str))
    else:
        width = max(len(k) for k in row)
        for k, v in row.items():
            if not isinstance(v, list):
                print(f"{k.ljust(width)}  {v}")
    return 0 if not row.get("incomplete") else 1
