"""`stellarctl`: the operator's command line for fabrics.

Offline commands (no switch needed):
  stellarctl validate FABRIC                 check a fabric file; every problem as file:line: key: reason
  stellarctl render FABRIC -o DIR            write per-switch entry files (+ index.json) to DIR
  stellarctl render FABRIC --switch NAME     print one switch's entry file
  stellarctl render FABRIC --arch tna ...    the same for the Tofino program (p4src/tna/stellar.p4)
  stellarctl analyze-scheduler FABRIC [JOB]  which paths a job got, and why (no JOB: all jobs), and
                                             each class's scheduler weight and why (the formula's terms)

Commands that talk to the switches over P4Runtime (control_plane/ops.py):
  stellarctl diff FABRIC [--switch S]        what a push would change (exit 1 if not in sync)
  stellarctl push FABRIC                     compile (or --program-json/--p4info) and reconcile every switch
    [--program P4 --target p4sim|bmv2]       the program from that target's compiler (p4build)
  stellarctl push|diff FABRIC --arch tna     the same with p4src/tna/stellar.p4 and its entries
  stellarctl stats FABRIC [--switch S]       per-port/queue counters, ECN marks, path changes, drops
  stellarctl fail-link FABRIC A B            ports down on both ends (liveness tables) + path sets without the link
                                             and without every link failed before (recorded in the state file
                                             FABRIC.failed-links.json, or --state FILE), so failures compose
  stellarctl fail-link FABRIC A B --restore  the link is back: ports up, path sets with it; removed from the state
  stellarctl push|diff FABRIC --state FILE   render without the links the state file records
  stellarctl stats|watch|fail-link --arch tna   the same on p4src/tna/stellar.p4 (its counters, groups and
                                             failover.alive register; control_plane/archnames.py)

Exit status: 0 success, 1 the fabric or its rendering is invalid, 2 bad command line.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable, Optional, TextIO

from .errors import FabricError
from .model import WEIGHTED_CLASSES, Fabric, load_fabric
from .paths import Assignment, assign_jobs
from .plan import plan_fabric
from .render import RenderError, render_fabric, write_fabric
from .scheduler import compute_weights, format_weights


def _load(path: str, err: TextIO) -> Optional[Fabric]:
    try:
        return load_fabric(path)
    except FabricError as exc:
        print(f"error: {exc}", file=err)
        return None


def cmd_validate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    fabric = _load(args.fabric, err)
    if fabric is None:
        return 1
    leaves, spines = len(fabric.leaves), len(fabric.spines)
    print(f"ok: {args.fabric}: fabric '{fabric.name}': {leaves + spines} switches ({spines} spines, {leaves} leaves), "
          f"{len(fabric.links)} links, {len(fabric.hosts)} hosts, {len(fabric.tenants)} tenants, "
          f"{len(fabric.jobs)} jobs", file=out)
    return 0


def cmd_render(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    started = time.perf_counter()
    fabric = _load(args.fabric, err)
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
    fabric = _load(args.fabric, err)
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="stellarctl", description="Stellar fabric control: validate, render, "
                                     "and explain job placement.")
    tls = parser.add_argument_group("P4Runtime transport (switches served with TLS / mutual TLS, roles)")
    tls.add_argument("--grpc-tls-ca", metavar="PEM", help="CA that signed the switches' certificates (enables TLS)")
    tls.add_argument("--grpc-tls-cert", metavar="PEM", help="client certificate, for switches that require client auth")
    tls.add_argument("--grpc-tls-key", metavar="PEM", help="private key of --grpc-tls-cert")
    tls.add_argument("--grpc-tls-server-name", default="", metavar="NAME",
                     help="name to check the switch certificate against (default: the address's host)")
    tls.add_argument("--role", default="", help="P4Runtime role name (default: the default role, full access)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    p = sub.add_parser("validate", help="check a fabric file")
    p.add_argument("fabric", help="fabric YAML file")
    p.set_defaults(func=cmd_validate)
    p = sub.add_parser("render", help="write per-switch table entries")
    p.add_argument("fabric", help="fabric YAML file")
    p.add_argument("-o", "--output", help="output directory")
    p.add_argument("--switch", help="print this switch's document to stdout")
    p.add_argument("--arch", choices=("v1model", "tna"), default="v1model",
                   help="the program the entries are for: p4src/v1model/stellar.p4 (default) or "
                        "p4src/tna/stellar.p4 (bf-p4c's P4Info names)")
    p.set_defaults(func=cmd_render)
    p = sub.add_parser("analyze-scheduler", help="which paths a job got and each class's weight, and why")
    p.add_argument("fabric", help="fabric YAML file")
    p.add_argument("job", nargs="?", help="job name (omit for a summary of every job)")
    p.add_argument("--limit", type=float, default=1.0,
                   help="highest link utilisation an isolated placement may reach (default 1.0)")
    p.add_argument("--usage", action="append", metavar="CLASS=FRACTION",
                   help="historical usage of a class (0..1) for the weights; default 0 (no history offline)")
    p.set_defaults(func=cmd_analyze_scheduler)
    from .ops import add_commands  # diff, push, stats, fail-link (P4Runtime; grpc loaded only here)
    add_commands(sub)
    p = sub.add_parser("watch", help="live congestion map: per-link queue delay read over P4Runtime")
    p.add_argument("fabric", help="fabric YAML file")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between refreshes (default 1)")
    p.add_argument("--count", type=int, default=1_000_000, help="refreshes before exiting")
    p.add_argument("--top", type=int, default=10, help="links shown (default 10)")
    p.add_argument("--arch", choices=("v1model", "tna"), default="v1model",
                   help="the program's queue-delay histogram (tna: pipe.StellarEgress.telemetry.qdelay_hist)")
    p.set_defaults(func=cmd_watch)
    return parser


def cmd_watch(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    from .controller import watch
    from .p4rt import P4RuntimePushError, SwitchSession

    fabric = _load(args.fabric, err)
    if fabric is None:
        return 1
    sessions = {}
    try:
        for name, sw in fabric.switches.items():
            # read-only: no arbitration, so watching never displaces the primary controller
            session = SwitchSession(sw.p4runtime, sw.device_id, name=name, timeout=5.0)
            sessions[name] = session.connect(read_only=True)
            session.load_switch_p4info()
        watch(fabric, sessions, args.interval, args.count, out, args.top, arch=args.arch)
    except P4RuntimePushError as exc:
        print(f"error: {exc}", file=err)
        return 1
    except KeyboardInterrupt:
        pass
    finally:
        for session in sessions.values():
            session.close()
    return 0


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
