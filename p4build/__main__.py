"""``python -m p4build SOURCE --target p4sim|bmv2 [--arch v1model] -o DIR [-I DIR] [-D N=V]``.

Prints the two paths as shell assignments (``DEVICE_CONFIG=...``, ``P4INFO=...``) so scripts
such as ``ptf_tests/run.sh`` can ``eval`` them; errors go to stderr with exit status 1.
"""
from __future__ import annotations

import argparse
import shlex
import sys

from p4build import ARCHES, TARGETS, BuildError, compile_program


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m p4build", description="compile a P4 program for one target")
    ap.add_argument("source")
    ap.add_argument("--target", choices=TARGETS, default="p4sim")
    ap.add_argument("--arch", default="v1model", help=f"one of {', '.join(ARCHES)} (the target may refuse)")
    ap.add_argument("-o", "--out-dir", required=True)
    ap.add_argument("-I", dest="include", action="append", default=[], metavar="DIR")
    ap.add_argument("-D", dest="define", action="append", default=[], metavar="NAME[=VALUE]")
    args = ap.parse_args(argv)
    try:
        prog = compile_program(args.source, args.target, args.arch, args.out_dir, args.include, args.define)
    except BuildError as err:
        print(f"p4build: {err}", file=sys.stderr)
        return 1
    print(f"DEVICE_CONFIG={shlex.quote(str(prog.device_config_path))}")
    print(f"P4INFO={shlex.quote(str(prog.p4info_path))}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
