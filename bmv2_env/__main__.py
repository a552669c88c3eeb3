"""``python -m bmv2_env up|down|status``: one switch, either target, identical flags.

  python -m bmv2_env up --target p4sim --program ptf_tests/p4/ptf_basic.p4 --ports 4 --transport nn
  python -m bmv2_env down
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bmv2_env.env import EnvError, SwitchState, describe, down, ptf_params, ptf_port_args, up


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bmv2_env")
    sub = p.add_subparsers(dest="cmd", required=True)
    pu = sub.add_parser("up", help="compile, start the switch, push the pipeline")
    pu.add_argument("--target", choices=["p4sim", "bmv2"], default="p4sim")
    pu.add_argument("--program", required=True, type=Path)
    pu.add_argument("--arch", choices=["v1model", "tna"], default="v1model",
                    help="the architecture the program instantiates (tna: p4sim only)")
    pu.add_argument("--ports", type=int, default=4)
    pu.add_argument("--transport", choices=["nn", "veth"], default="nn")
    pu.add_argument("--grpc-addr", default=None, help="default: a free 127.0.0.1 port")
    pu.add_argument("--device-id", type=int, default=1)
    pu.add_argument("--cpu-port", type=int, default=255)
    pu.add_argument("--clock", choices=["wall", "virtual"], default="wall", help="p4sim only")
    pu.add_argument("-I", dest="include", action="append", default=[])
    pu.add_argument("-D", dest="define", action="append", default=[])
    ps = sub.add_parser("status", help="print the state file")
    ps.add_argument("--shell", action="store_true",
                    help="as shell assignments (GRPC_ADDR, P4INFO, CONFIG, LOG, PTF_PARAMS, PTF_PORTS=(...))")
    for sp in (pu, sub.add_parser("down", help="stop it and remove what 'up' made"), ps):
        sp.add_argument("--name", default="s1")
        sp.add_argument("--state-dir", type=Path, default=Path("build/bmv2_env"))
    args = p.parse_args(argv)
    try:
        if args.cmd == "up":
            state = up(args.name, args.target, args.program, args.ports, args.transport,
                       args.state_dir, args.grpc_addr, args.device_id, args.cpu_port, args.clock,
                       args.include, args.define, arch=args.arch)
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


if __name__ == "__main__":
    raise SystemExit(main())
