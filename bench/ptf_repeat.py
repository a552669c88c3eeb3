"""Repeat a PTF suite, each run against a fresh switch, and count how often each test passes.

    python bench/ptf_repeat.py --runs 20 [--busy] [--filter REGEX] [-- ENV=VALUE ...]
    e.g. python bench/ptf_repeat.py --runs 20 --busy -- TARGET=bmv2 TRANSPORT=veth

Each run is one ``ptf_tests/run.sh`` (which compiles, starts a switch, runs the suite and stops
the switch), so no flow slot, queue reading or ECN window outlives a run.  ``--busy`` keeps one
core busy for the whole measurement (a child spinning in Python), the load under which the
real-time tests (ptf_tests/stellar/realtime.py) must still pass every time.  Printed: one line
per test with its passes out of runs (and fails/errors/skips), the machine's load average at
the start and end, and where each run's output is kept (``--out``).  Exits non-zero if any
selected test did not pass every run.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# unittest's verbose lines as PTF prints them: "module.Class ... ok"; a test's own output (a
# printed SKIP reason) may come between the name and its verdict
TEST_LINE = re.compile(r"^(\w+\.\w+) \.\.\. ")
VERDICTS = ((re.compile(r"(^|\s)ok$"), "pass"), (re.compile(r"(^|\s)FAIL$"), "fail"),
            (re.compile(r"(^|\s)ERROR$"), "error"), (re.compile(r"^skipped\b|\sskipped '"), "skip"))


def verdicts(output: str) -> dict[str, str]:
    """test -> pass/fail/error/skip from one run's output (a test PTF never reached is absent)."""
    out: dict[str, str] = {}
    test = None
    for line in output.splitlines():
        m = TEST_LINE.match(line)
        if m:
            test, line = m.group(1), line[m.end():]
        elif line.startswith(("-----", "=====")):
            test = None
        if test is None:
            continue
        for pattern, verdict in VERDICTS:
            if pattern.search(line.rstrip()):
                out[test], test = verdict, None
                break
    return out


def run_once(env: dict[str, str], log: Path) -> dict[str, str]:
    proc = subprocess.run(["ptf_tests/run.sh"], cwd=REPO, env=env, capture_output=True, text=True)
    text = proc.stdout + proc.stderr
    log.write_text(text)
    return verdicts(text)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--busy", action="store_true", help="keep one core busy while measuring")
    p.add_argument("--filter", default="", help="report only tests whose name matches this regex")
    p.add_argument("--out", type=Path, default=REPO / "build" / "ptf_repeat", help="per-run outputs")
    p.add_argument("env", nargs="*", help="NAME=VALUE for run.sh (TARGET, TRANSPORT, SUITES, CLOCK...)")
    args = p.parse_args(argv)
    env = dict(os.environ, SUITES=os.environ.get("SUITES", "stellar"))
    for item in args.env:
        name, _, value = item.partition("=")
        env[name] = value
    args.out.mkdir(parents=True, exist_ok=True)
    busy = (subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None)
    tally: dict[str, Counter] = defaultdict(Counter)
    load_start = os.getloadavg()
    started = time.monotonic()
    try:
        for run in range(1, args.runs + 1):
            got = run_once(env, args.out / f"run{run:02d}.log")
            for test, verdict in got.items():
                tally[test][verdict] += 1
            bad = sorted(t for t, v in got.items() if v in ("fail", "error"))
            print(f"run {run}/{args.runs}: {len(got)} tests, "
                  f"{'failed: ' + ', '.join(bad) if bad else 'no failure'}", flush=True)
    finally:
        if busy:
            busy.kill()
            busy.wait()
    chosen = {t: c for t, c in tally.items() if re.search(args.filter, t)}
    print(f"\n{args.runs} runs in {time.monotonic() - started:.0f} s, {' '.join(args.env)} "
          f"{'' if 'SUITES=' in ' '.join(args.env) else 'SUITES=' + env['SUITES']}{', one core busy' if args.busy else ''}; load average "
          f"{load_start[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; logs {args.out}")
    width = max((len(t) for t in chosen), default=4)
    for test, c in sorted(chosen.items()):
        extra = ", ".join(f"{c[k]} {k}" for k in ("fail", "error", "skip") if c[k])
        print(f"  {test:<{width}}  {c['pass']:>3}/{args.runs}{'  (' + extra + ')' if extra else ''}")
    perfect = all(c["pass"] == args.runs for c in chosen.values()) and bool(chosen)
    return 0 if perfect else 1


if __name__ == "__main__":
    sys.exit(main())
