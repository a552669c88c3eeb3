"""``python -m bmv2_env up|down|status|traffic``: one switch, or every switch of a fabric YAML.

  python -m bmv2_env up fabrics/lab.yaml            # every switch of the fabric, links wired (bmv2_env.fabric)
  python -m bmv2_env traffic fabrics/lab.yaml       # RoCEv2 frames between GPUs on different leaves
  python -m bmv2_env down fabrics/lab.yaml
  python -m bmv2_env up --target p4sim --program ptf_tests/p4/ptf_basic.p4 --ports 4 --transport nn
  python -m bmv2_env down                           # the one switch (--name s1)
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bmv2_env.env import EnvError, SwitchState, describe, down, ptf_params, ptf_port_args, up


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bmv2_env",
                                description="Start and stop targets: every switch of a fabric YAML (FABRIC), "
                                            "or one switch with a program (--program).")
    sub = p.add_subparsers(dest="cmd", required=True)
    pu = sub.add_parser("up", help="start every switch of FABRIC, or compile, start and push one --program")
    pu.add_argument("fabric", nargs="?", help="fabric YAML: start each of its switches on the YAML's address "
                                              "and device id, links wired (push the program with stellarctl push)")
    pu.add_argument("--target", choices=["p4sim", "bmv2"], default="p4sim")
    pu.add_argument("--program", type=Path, help="one switch: the P4 program to compile and push")
    pu.add_argument("--tag", default="", help="FABRIC over veth: prefix of every interface name")
    pu.add_argument("--arch", choices=["v1model", "tna"], default="v1model",
                    help="the architecture the program instantiates (tna: p4sim only)")
    pu.add_argument("--ports", type=int, default=4)
    pu.add_argument("--transport", choices=["nn", "veth"], default="nn",
                    help="nn: ports over nanomsg sockets (no root); veth: Linux veth pairs (root; bmv2)")
    pu.add_argument("--grpc-addr", default=None, help="default: a free 127.0.0.1 port")
    pu.add_argument("--device-id", type=int, default=1)
    pu.add_argument("--cpu-port", type=int, default=255)
    pu.add_argument("--clock", choices=["wall", "virtual"], default="wall", help="p4sim only")
    pu.add_argument("--log-level", choices=["trace", "debug", "info", "warn", "error", "off"],
                    default=None, help="one switch: its log level (BMv2's -L; default the target's "
                    "own, trace on BMv2, whose per-packet lines slow stellar.p4 to ~1 ms a pass)")
    pu.add_argument("-I", dest="include", action="append", default=[])
    pu.add_argument("-D", dest="define", action="append", default=[])
    ps = sub.add_parser("status", help="print the state file")
    ps.add_argument("--shell", action="store_true",
                    help="as shell assignments (GRPC_ADDR, P4INFO, CONFIG, LOG, PTF_PARAMS, PTF_PORTS=(...))")
    pd = sub.add_parser("down", help="stop what 'up' started and remove what it made")
    for sp in (pd, ps):
        sp.add_argument("fabric", nargs="?", help="the fabric YAML given to 'up' (omit for the one switch)")
    for sp in (pu, pd, ps):
        sp.add_argument("--name", default="s1", help="one switch: its name (default s1)")
        sp.add_argument("--state-dir", type=Path, default=None,
                        help="where 'up' keeps its state (default build/fabric for FABRIC, build/bmv2_env otherwise)")
    pd.add_argument("--failed-links-dir", type=Path, default=None,
                    help="FABRIC: the stellarctl state dir whose failed-links record of it is removed "
                         "(default $STELLAR_STATE_DIR, else build/state)")
    pt = sub.add_parser("traffic", help="send RoCEv2 frames between GPUs of a fabric that is up")
    pt.add_argument("fabric", help="the fabric YAML given to 'up'")
    pt.add_argument("--packets", type=int, default=200, help="frames per host pair (default 200)")
    pt.add_argument("--rate", type=float, default=2000.0, help="frames per second in total (default 2000)")
    pt.add_argument("--pair", nargs=2, action="append", metavar=("SRC", "DST"),
                    help="a host pair (repeatable; default: each GPU to its peer on the next leaf)")
    pt.add_argument("--state-dir", type=Path, default=None, help="as given to 'up' (default build/fabric)")
    args = p.parse_args(argv)
    try:
        if getattr(args, "fabric", None):
            return fabric_command(args)
        if args.cmd == "traffic":
            p.error("traffic needs the FABRIC")
        if args.cmd == "up" and args.program is None:
            p.error("up needs a FABRIC or --program")
        args.state_dir = args.state_dir or Path("build/bmv2_env")
        if args.cmd == "up":
            state = up(args.name, args.target, args.program, args.ports, args.transport,
                       args.state_dir, args.grpc_addr, args.device_id, args.cpu_port, args.clock,
                       args.include, args.define, arch=args.arch, log_level=args.log_level)
            print(describe(state))
            print(f"  state file  {args.state_dir / (args.name + '.json')}")
        elif args.cmd == "down":
            state = down(args.name, args.state_dir)
            print(f"switch {state.name} stopped; removed its state"
                  + (", veths" if state.interfaces else "") + (", socket" if state.ipc else ""))
        elif args.shell:
            import shlex

            st = SwitchState.load(args.state_dir / f"{args.name}.json")
            for key, value in (("GRPC_ADDR", st.grpc_addr), ("P4INFO", st.p4info), ("CONFIG", st.config),
                               ("LOG", st.log), ("PTF_PARAMS", ptf_params(st))):
                print(f"{key}={shlex.quote(value)}")
            print(f"PTF_PORTS=({' '.join(shlex.quote(a) for a in ptf_port_args(st))})")
        else:
            print(describe(SwitchState.load(args.state_dir / f"{args.name}.json")))
    except EnvError as err:
        print(f"bmv2_env: {err}", file=sys.stderr)
        return 1
    return 0


def fabric_command(args: argparse.Namespace) -> int:
    """up / down / status / traffic of every switch of a fabric YAML (bmv2_env.fabric)."""
    from bmv2_env import fabric, traffic

    state_dir = args.state_dir or Path("build/fabric")
    path = fabric.state_path(args.fabric, state_dir)
    if args.cmd == "up":
        state = fabric.up(args.fabric, state_dir, args.target, args.transport, args.clock, args.tag)
        print(fabric.describe(state))
        print(f"  state file {path}\nnext: python -m control_plane push {args.fabric}   "
              f"(compiles and pushes the program to every switch)")
    elif args.cmd == "down":
        state, removed = fabric.down(args.fabric, state_dir, args.failed_links_dir)
        print(f"fabric {state.fabric}: {len(state.switches)} switches stopped"
              + ("" if not state.wires_pid else ", wires stopped")
              + "".join(f"; removed {item}" for item in removed))
    elif args.cmd == "traffic":
        pairs = [tuple(p) for p in args.pair] if args.pair else None
        print(traffic.run(fabric.FabricState.load(path), pairs, args.packets, args.rate).text(), end="")
    else:
        print(fabric.describe(fabric.FabricState.load(path)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
