"""`stellarctl`: the operator's command line for fabrics.

Every command and what it is for is in ``stellarctl --help`` (COMMANDS below); docs/operating.md
walks an operator through a running fabric.  Exit status: 0 success, 1 the fabric, its rendering
or a switch failed, 2 bad command line.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable, Optional, TextIO

from .loading import load_or_report
from .model import WEIGHTED_CLASSES, Fabric
from .paths import Assignment, assign_jobs
from .plan import plan_fabric
from .render import RenderError, render_fabric, write_fabric
from .scheduler import compute_weights, format_weights


def cmd_validate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    fabric = load_or_report(args.fabric, err)
    if fabric is None:
        return 1
    leaves, spines = len(fabric.leaves), len(fabric.spines)
    print(f"ok: {args.fabric}: fabric '{fabric.name}': {leaves + spines} switches ({spines} spines, {leaves} leaves), "
          f"{len(fabric.links)} links, {len(fabric.hosts)} hosts, {len(fabric.tenants)} tenants, "
          f"{len(fabric.jobs)} jobs", file=out)
    return 0


def cmd_render(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    started = time.perf_counter()
    fabric = load_or_report(args.fabric, err)
    if fabric is None:
        return 1
    try:
        result = render_fabric(fabric, arch=args.arch)
    except RenderError as exc:
        print(f"error: {exc}", file=err)
        return 1
    if args.switch is not None:
        if args.switch not in result.documents:
            print(f"error: {args.fabric}: no switch '{args.switch}'", file=err)
            return 1
        out.write(result.text(args.switch))
        if args.output is None:
            return 0
    if args.output is None:
        print("error: render needs -o DIR (or --switch NAME to print one switch)", file=err)
        return 2
    written = write_fabric(result, fabric, Path(args.output))
    for name, doc in result.documents.items():
        print(f"{name:>12}  {doc['switch']['role']:<5}  {len(doc['entries']):5d} entries  "
              f"{len(doc['path_sets']):3d} path sets  {len(doc['meters'])} meters  -> {args.output}/{name}.json",
              file=out)
    if result.assignment is not None:
        a = result.assignment
        print(f"placement: peak link utilisation {a.max_utilisation:.1%} vs ECMP expected "
              f"{a.ecmp.expected_max_utilisation:.1%}; jobs {'isolated' if a.isolated else 'NOT isolated'}",
              file=out)
    print(f"wrote {len(written)} files in {time.perf_counter() - started:.2f}s", file=out)
    return 0


def cmd_analyze_scheduler(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    fabric = load_or_report(args.fabric, err)
    if fabric is None:
        return 1
    if args.job is not None and args.job not in fabric.jobs:
        print(f"error: {args.fabric}: no job '{args.job}' (jobs: {', '.join(fabric.jobs) or 'none'})", file=err)
        return 1
    usage = _parse_usage(args.usage or [], err)
    if usage is None:
        return 2
    assignment = assign_jobs(fabric, limit=args.limit)
    out.write(explain_job(fabric, assignment, args.job) if args.job else summarize(fabric, assignment))
    out.write(format_weights(fabric, compute_weights(fabric, usage), args.job))
    return 0


def _parse_usage(items: list[str], err: TextIO) -> Optional[dict[str, float]]:
    """``--usage CLASS=FRACTION`` values (the history the controller would have measured)."""
    usage: dict[str, float] = {}
    for item in items:
        name, _, value = item.partition("=")
        try:
            fraction = float(value)
        except ValueError:
            fraction = -1.0
        if name not in WEIGHTED_CLASSES or not 0.0 <= fraction <= 1.0:
            print(f"error: --usage {item!r}: expected CLASS=FRACTION with CLASS one of "
                  f"{', '.join(WEIGHTED_CLASSES)} and 0 <= FRACTION <= 1", file=err)
            return None
        usage[name] = fraction
    return usage


def summarize(fabric: Fabric, assignment: Assignment) -> str:
    """One line per job plus the fabric-wide comparison with ECMP."""
    a = assignment
    lines = [f"fabric {fabric.name}: {len(fabric.jobs)} jobs, {sum(f.crosses_fabric for f in a.flows)} reserved flows "
             f"cross the fabric",
             f"  peak link utilisation: placement {a.max_utilisation:.1%} | shared placement "
             f"{a.shared.max_utilisation:.1%} | ECMP hashing expected {a.ecmp.expected_max_utilisation:.1%} "
             f"(even split {a.ecmp.fluid_max_utilisation:.1%})",
             f"  jobs {'isolated on disjoint spines' if a.isolated else 'NOT isolated'}:"]
    lines.extend(f"    - {note}" for note in a.notes)
    lines.append("  job              collective        GPUs  Gbps/GPU  reserved Gbps  spines used")
    for job in fabric.jobs.values():
        crossing = [f for f in a.flows if f.job == job.name and f.crosses_fabric]
        spines = ", ".join(sorted(a.placement.job_spines(job.name))) or "-"
        lines.append(f"  {job.name:<16} {job.collective:<17} {len(job.hosts):4d}  {job.bandwidth_gbps:8g}  "
                     f"{sum(f.gbps for f in crossing):13.1f}  {spines}")
    return "\n".join(lines) + "\n"


def explain_job(fabric: Fabric, assignment: Assignment, job_name: str) -> str:
    """A readable account of one job's placement: demand, spines, per leaf pair, links, why."""
    job = fabric.jobs[job_name]
    flows = [f for f in assignment.flows if f.job == job_name]
    crossing = [f for f in flows if f.crosses_fabric]
    placement = assignment.placement
    lines = [
        f"job {job.name}: {job.collective}, {len(job.hosts)} GPUs, {job.bandwidth_gbps:g} Gbps per GPU"
        + (f", tenant {job.tenant}" if job.tenant else "") + (f", root {job.root}" if job.root else "")
        + f", starts at {job.start_s:g} s",
        f"  demand: {len(flows)} flows, {len(crossing)} cross the fabric "
        f"({sum(f.gbps for f in crossing):.1f} Gbps reserved)",
        f"  placement: {'isolated' if assignment.isolated else 'shared'}; spines given: "
        + (", ".join(assignment.partition.get(job_name, ())) or "none (no partition)")
        + f"; spines used: {', '.join(sorted(placement.job_spines(job_name))) or 'none'}",
    ]
    bottleneck = placement.bottleneck
    lines.append(f"  fabric peak utilisation: {assignment.max_utilisation:.1%}"
                 + (f" on {bottleneck[0]} port {bottleneck[1]}" if bottleneck else "")
                 + f" | shared placement {assignment.shared.max_utilisation:.1%}"
                 + f" | ECMP hashing expected {assignment.ecmp.expected_max_utilisation:.1%}"
                 + f" (even split {assignment.ecmp.fluid_max_utilisation:.1%}, {assignment.ecmp.trials} trials)")
    lines.append("  why:")
    lines.extend(f"    - {note}" for note in assignment.notes)
    spilled = [f for f in placement.spilled if f.job == job_name]
    if spilled:
        lines.append(f"    - {len(spilled)} of this job's flows left its spines because staying would exceed "
                     f"{assignment.limit:.0%}")
    overlaps = [(a, b, s) for a, b, s in assignment.overlapping_jobs() if job_name in (a, b)]
    for a, b, shared in overlaps:
        other = b if a == job_name else a
        lines.append(f"    - shares {', '.join(shared)} with job {other}")

    plans = plan_fabric(fabric, assignment) if fabric.dataplane.reservations else {}
    pairs: dict[tuple[str, str], dict[str, float]] = {}
    for flow in crossing:
        spine = placement.paths_of[flow].spine
        per = pairs.setdefault((flow.src_leaf, flow.dst_leaf), {})
        per[spine] = per.get(spine, 0.0) + flow.gbps
    lines.append("  leaf pair            spines (Gbps)                         path set on the source leaf")
    for (src, dst), per in sorted(pairs.items()):
        spines = ", ".join(f"{s} {g:.1f}" for s, g in sorted(per.items()))
        where = ""
        plan = plans.get(src)
        if plan is not None:
            ids = {r.path_set for r in plan.reservations if r.job == job_name and r.dst == fabric.switches[dst].subnet}
            for ident in sorted(ids):
                ports = " ".join(str(m.port) for m in plan.path_set(ident).slots)
                where += f"#{ident} [ports {ports}] "
        lines.append(f"  {src + ' -> ' + dst:<20} {spines:<37} {where.strip() or '(no reservation)'}")
    used = sorted({link for f in crossing for link in placement.paths_of[f].links})
    lines.append("  links this job uses (utilisation with every job's reservations):")
    for link in used:
        mine = sum(f.gbps for f in crossing if link in placement.paths_of[f].links)
        lines.append(f"    {link[0]} port {link[1]:<4} {placement.utilisation(link):6.1%}  "
                     f"(this job {mine:.1f} of {placement.capacity[link]:g} Gbps)")
    return "\n".join(lines) + "\n"


COMMANDS = """\
commands (stellarctl COMMAND --help for each one's options):
  offline (no switch needed)
    validate           check a fabric file; every problem as file:line: key: reason
    render             write per-switch entry files (-o DIR) or print one switch's (--switch NAME)
    analyze-scheduler  which paths a job got and each class's scheduler weight, and why
  on running switches (P4Runtime; addresses and device ids from the fabric YAML)
    push               compile the program, push it where missing, reconcile every switch's entries
    diff               what a push would change (exit 1 if a switch is not in sync)
    stats              per-port/queue counters, ECN marks, path changes, drops; gray links named
    watch              live congestion map (per-link queue delay) and gray links; a switch down is marked
    fail-link          take a link out (ports down, path sets without it); --restore [--all] undoes

push and diff print each switch's change as +N ~N -N: entries (and meter, register, clone-session
cells) a push inserts, modifies (held with another action or value) and deletes (held but not
wanted).  Failed links live in build/state/<fabric>.failed-links.json (--state-dir,
$STELLAR_STATE_DIR); push and diff render without them.  Guide: docs/operating.md.
"""


def package_version() -> str:
    """The installed stellar package's version (what --version prints)."""
    try:
        from importlib.metadata import version

        return version("stellar")
    except Exception:  # noqa: BLE001 - run from a checkout that is not installed
        return "0.1.0"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stellarctl", formatter_class=argparse.RawDescriptionHelpFormatter,
                                     description="Stellar fabric control: check and render fabrics, and push, "
                                                 "inspect and fail links on running switches.",
                                     epilog=COMMANDS)
    parser.add_argument("--version", action="version", version=f"stellarctl {package_version()}")
    tls = parser.add_argument_group("P4Runtime transport (switches served with TLS / mutual TLS, roles)")
    tls.add_argument("--grpc-tls-ca", metavar="PEM", help="CA that signed the switches' certificates (enables TLS)")
    tls.add_argument("--grpc-tls-cert", metavar="PEM", help="client certificate, for switches that require client auth")
    tls.add_argument("--grpc-tls-key", metavar="PEM", help="private key of --grpc-tls-cert")
    tls.add_argument("--grpc-tls-server-name", default="", metavar="NAME",
                     help="name to check the switch certificate against (default: the address's host)")
    tls.add_argument("--role", default="", help="P4Runtime role name (default: the default role, full access)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                help="one of the commands below")
    p = sub.add_parser("validate", description="check a fabric file")
    p.add_argument("fabric", help="fabric YAML file")
    p.set_defaults(func=cmd_validate)
    p = sub.add_parser("render", description="write per-switch table entries")
    p.add_argument("fabric", help="fabric YAML file")
    p.add_argument("-o", "--output", help="output directory")
    p.add_argument("--switch", help="print this switch's document to stdout")
    p.add_argument("--arch", choices=("v1model", "tna"), default="v1model",
                   help="the program the entries are for: p4src/v1model/stellar.p4 (default) or "
                        "p4src/tna/stellar.p4 (bf-p4c's P4Info names)")
    p.set_defaults(func=cmd_render)
    p = sub.add_parser("analyze-scheduler", description="which paths a job got and each class's weight, and why")
    p.add_argument("fabric", help="fabric YAML file")
    p.add_argument("job", nargs="?", help="job name (omit for a summary of every job)")
    p.add_argument("--limit", type=float, default=1.0,
                   help="highest link utilisation an isolated placement may reach (default 1.0)")
    p.add_argument("--usage", action="append", metavar="CLASS=FRACTION",
                   help="historical usage of a class (0..1) for the weights; default 0 (no history offline)")
    p.set_defaults(func=cmd_analyze_scheduler)
    from .ops import add_commands  # diff, push, stats, fail-link (P4Runtime; grpc loaded only here)
    add_commands(sub)
    p = sub.add_parser("watch", description="live congestion map: per-link queue delay, and the gray links (frames "
                                            "lost on the wire since the previous map); a switch that is down is marked")
    p.add_argument("fabric", help="fabric YAML file")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between refreshes (default 1)")
    p.add_argument("--count", type=int, default=1_000_000, help="refreshes before exiting")
    p.add_argument("--top", type=int, default=10, help="links shown (default 10)")
    p.add_argument("--arch", choices=("v1model", "tna"), default="v1model",
                   help="the program's queue-delay histogram (tna: pipe.StellarEgress.telemetry.qdelay_hist)")
    p.set_defaults(func=cmd_watch)
    return parser


def cmd_watch(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .watching import watch_fabric

    fabric = load_or_report(args.fabric, err)
    if fabric is None:
        return 1
    try:
        missing = watch_fabric(fabric, args.interval, args.count, out, args.top, arch=args.arch)
    except KeyboardInterrupt:
        return 0
    return 1 if missing and len(missing) == len(fabric.switches) else 0


def main(argv: Optional[list[str]] = None, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    args = build_parser().parse_args(argv)
    if args.grpc_tls_ca or args.grpc_tls_cert or args.role:
        from .p4rt import Transport, set_default_transport

        try:
            set_default_transport(Transport.from_files(args.grpc_tls_ca, args.grpc_tls_cert, args.grpc_tls_key,
                                                       args.grpc_tls_server_name, args.role))
        except ValueError as exc:
            print(f"error: {exc}", file=err)
            return 2
    handler: Callable[[argparse.Namespace, TextIO, TextIO], int] = args.func
    return handler(args, out, err)


if __name__ == "__main__":
    sys.exit(main())
