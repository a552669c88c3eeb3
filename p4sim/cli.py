"""``p4sim`` command line: ``compile`` (like p4c-bm2-ss) and ``run`` (like simple_switch_grpc).

Both take the flags of the tools they stand in for, so scripts, Makefiles and Mininet wrappers
written for p4c/BMv2 work unchanged with ``p4sim`` substituted.  ``run`` splits its argv at
``--`` exactly as simple_switch_grpc does: generic switch options before, target options
(``--grpc-server-addr``, ``--cpu-port`` ...) after.
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from typing import Any, Sequence

DEFAULT_GRPC_ADDR = "127.0.0.1:9559"


# -- compile -------------------------------------------------------------------------------

def _defines(items: Sequence[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        out[name] = value if _ else "1"
    return out


def cmd_compile(args: argparse.Namespace) -> int:
    from p4sim.errors import CompileError

    if args.arch != "v1model":
        print(f"p4sim compile: unsupported --arch {args.arch} (only v1model)", file=sys.stderr)
        return 2
    try:
        from p4sim import compiler

        compiler.compile_files(args.program, list(args.include), _defines(args.define),
                               args.output, args.p4runtime_files)
    except CompileError as err:
        print(str(err), file=sys.stderr)
        return 1
    except OSError as err:
        print(f"p4sim compile: {err}", file=sys.stderr)
        return 1
    return 0


# -- run -----------------------------------------------------------------------------------

def _main_run_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="p4sim run",
        description="Run a P4 program like simple_switch_grpc: ports, P4Runtime, target control.",
        epilog="Target options go after '--': --grpc-server-addr HOST:PORT (default "
               f"{DEFAULT_GRPC_ADDR}), --cpu-port N, --priority-queues N, --clock, --control-addr.",
    )
    p.add_argument("config", nargs="?", help="device config JSON from 'p4sim compile'")
    p.add_argument("--no-p4", action="store_true", help="start without a program (push one over P4Runtime)")
    p.add_argument("-i", "--interface", action="append", default=[], metavar="PORT@IFACE",
                   help="attach a switch port to a Linux interface (AF_PACKET, needs root)")
    p.add_argument("--packet-in", metavar="ipc://PATH",
                   help="carry all other ports over a nanomsg Pair0 socket (PTF --platform nn)")
    p.add_argument("--device-id", type=int, default=0, help="P4Runtime device id (BMv2's default 0)")
    p.add_argument("--drop-port", type=int, default=511, help="egress_spec value that drops")
    p.add_argument("--log-console", action="store_true", help="log to stderr")
    p.add_argument("-L", "--log-level", default="info",
                   choices=["trace", "debug", "info", "warn", "error", "off"])
    p.add_argument("--thrift-port", type=int, help="accepted for compatibility; p4sim has no Thrift")
    _add_target_options(p)
    return p


def _add_target_options(p: argparse.ArgumentParser) -> None:
    # Also accepted before '--' for convenience; after '--' they win, as in simple_switch_grpc.
    p.add_argument("--grpc-server-addr", default=None, metavar="HOST:PORT",
                   help=f"P4Runtime address (default {DEFAULT_GRPC_ADDR}: loopback only; elsewhere "
                        "use --grpc-server-ssl and client auth; BMv2 listens on 0.0.0.0)")
    p.add_argument("--cpu-port", type=int, default=None,
                   help="port whose traffic is P4Runtime packet-in/packet-out")
    p.add_argument("--priority-queues", type=int, default=None,
                   help="strict-priority queues per port (standard_metadata.priority)")
    p.add_argument("--clock", choices=["wall", "virtual"], default=None,
                   help="virtual: time moves only when advanced over --control-addr (default wall)")
    p.add_argument("--control-addr", default=None,
                   help="HOST:PORT of the target-control side channel (p4sim.target_control)")
    p.add_argument("--seed", type=int, default=None, help="seed of the P4 random() extern, for repeatable runs")
    p.add_argument("--dp-grpc-server-addr", default=None, help="accepted for compatibility; unused")
    # TLS, with simple_switch_grpc's option names (p4sim.p4rt.security).
    p.add_argument("--grpc-server-ssl", action="store_true", default=None, help="serve P4Runtime over TLS")
    p.add_argument("--grpc-server-cert", default=None, metavar="PEM", help="server certificate (chain)")
    p.add_argument("--grpc-server-key", default=None, metavar="PEM", help="server private key")
    p.add_argument("--grpc-server-cacert", default=None, metavar="PEM", help="CA that signs client certificates")
    p.add_argument("--grpc-server-with-client-auth", action="store_true", default=None,
                   help="mutual TLS: refuse clients without a certificate signed by --grpc-server-cacert")


def parse_run_args(argv: Sequence[str]) -> argparse.Namespace:
    argv = list(argv)
    target_argv: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, target_argv = argv[:cut], argv[cut + 1:]
    args = _main_run_parser().parse_args(argv)
    tp = argparse.ArgumentParser(prog="p4sim run ... --")
    _add_target_options(tp)
    targs = tp.parse_args(target_argv)
    for key, value in vars(targs).items():
        if value is not None:
            setattr(args, key, value)
    args.grpc_server_addr = args.grpc_server_addr or DEFAULT_GRPC_ADDR
    args.priority_queues = args.priority_queues or 1
    args.clock = args.clock or "wall"
    args.seed = args.seed or 0
    if not args.no_p4 and not args.config:
        _main_run_parser().error("give a device config JSON or --no-p4")
    if args.no_p4 and args.config:
        _main_run_parser().error("--no-p4 and a device config are mutually exclusive")
    return args


def _p4info_proto(p4info: Any):
    """The Program's P4Info as a protobuf message (it may be one already, or text format)."""
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2

    if isinstance(p4info, p4info_pb2.P4Info):
        return p4info
    msg = p4info_pb2.P4Info()
    if isinstance(p4info, bytes):
        msg.ParseFromString(p4info)
    elif isinstance(p4info, str):
        text_format.Merge(p4info, msg)
    else:
        msg.ParseFromString(p4info.SerializeToString())
    return msg


def cmd_run(args: argparse.Namespace) -> int:
    from p4sim.p4rt import Device, DeviceOptions, P4RuntimeServer
    from p4sim.ports import NanomsgPorts, PortMap, parse_interface_arg
    from p4sim.target_control import ControlServer

    level = {"trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO,
             "warn": logging.WARNING, "error": logging.ERROR, "off": logging.CRITICAL + 1}
    logging.basicConfig(
        level=level[args.log_level] if args.log_console else logging.WARNING,
        format="%(asctime)s %(name)s %(levelname)s: %(message)s", stream=sys.stderr)
    log = logging.getLogger("p4sim.run")

    device = Device(DeviceOptions(device_id=args.device_id, clock=args.clock,
                                  priority_queues=args.priority_queues, drop_port=args.drop_port,
                                  cpu_port=args.cpu_port, seed=args.seed))
    ports = PortMap()
    try:
        for spec in args.interface:
            port, ifname = parse_interface_arg(spec)
            ports.add_interface(port, ifname)
        if args.packet_in:
            ports.set_default(NanomsgPorts(args.packet_in))
    except (ValueError, OSError) as err:
        print(f"p4sim run: cannot open ports: {err}", file=sys.stderr)
        ports.close()
        return 1
    from p4sim.p4rt.security import ServerTLS, TLSConfigError, exposure_warning

    tls = None
    try:
        if args.grpc_server_ssl:
            tls = ServerTLS.from_files(args.grpc_server_cert, args.grpc_server_key,
                                       args.grpc_server_cacert, bool(args.grpc_server_with_client_auth))
        else:  # as simple_switch_grpc: warned about and ignored
            if args.grpc_server_cacert or args.grpc_server_cert or args.grpc_server_key:
                print("p4sim run: SSL/TLS is disabled for gRPC server, so provided .pem files will be "
                      "ignored", file=sys.stderr)
            if args.grpc_server_with_client_auth:
                print("p4sim run: SSL/TLS is disabled for gRPC server, so cannot request client auth",
                      file=sys.stderr)
    except TLSConfigError as err:
        print(f"p4sim run: {err}", file=sys.stderr)
        ports.close()
        return 1
    warning = exposure_warning(args.grpc_server_addr, tls)
    if warning:
        print(f"p4sim run: {warning}", file=sys.stderr, flush=True)
    try:
        server = P4RuntimeServer(device, args.grpc_server_addr, tls=tls)
    except (OSError, RuntimeError) as err:
        print(f"p4sim run: cannot listen on {args.grpc_server_addr}: {err}", file=sys.stderr)
        ports.close()
        return 1
    if args.config:
        try:
            with open(args.config, "rb") as f:
                data = f.read()
            program, switch = device.build_switch(data)
            server.service.install_pipeline(_p4info_proto(program.p4info), data, 0, switch)
        except Exception as err:  # noqa: BLE001 - report any load failure and exit
            print(f"p4sim run: cannot load {args.config}: {err}", file=sys.stderr)
            ports.close()
            return 1
    control = None
    if args.control_addr:
        try:
            control = ControlServer(device, args.control_addr)
        except OSError as err:
            print(f"p4sim run: cannot listen on {args.control_addr}: {err}", file=sys.stderr)
            ports.close()
            return 1
        control.start()

    device.transmit = ports.transmit
    device.flush_output = ports.flush
    ports.start(device.inject, device.set_port_up)
    device.start()
    server.start()

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    port_desc = ", ".join(f"{p}@{t.ifname}" for p, t in ports.interfaces.items())
    print(f"p4sim: device {args.device_id} serving P4Runtime on {args.grpc_server_addr}"
          + (" (mutual TLS)" if tls and tls.client_auth else " (TLS)" if tls else "")
          + (f", control on {control.server_address[0]}:{control.port}" if control else "")
          + (f", ports {port_desc}" if port_desc else "")
          + (f", nanomsg {args.packet_in}" if args.packet_in else "")
          + f", clock {args.clock}", flush=True)
    stop.wait()
    log.info("shutting down")
    server.stop(0.2)
    if control is not None:
        control.stop()
    device.stop()
    ports.close()
    if args.packet_in and args.packet_in.startswith("ipc://"):
        try:
            os.unlink(args.packet_in[len("ipc://"):])
        except OSError:
            pass
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="p4sim", description="Embedded P4_16/v1model target.")
    sub = parser.add_subparsers(dest="command", required=True)
    pc = sub.add_parser("compile", help="compile like p4c-bm2-ss")
    pc.add_argument("program")
    pc.add_argument("-I", dest="include", action="append", default=[], metavar="DIR")
    pc.add_argument("-D", dest="define", action="append", default=[], metavar="NAME[=VALUE]")
    pc.add_argument("-o", "--output", required=True, metavar="OUT.json")
    pc.add_argument("--p4runtime-files", required=True, metavar="OUT.p4info.txtpb")
    pc.add_argument("--arch", default="v1model")
    pc.add_argument("--target", default="bmv2", help="accepted for compatibility")
    sub.add_parser("run", help="run like simple_switch_grpc (see 'p4sim run -h')", add_help=False)
    if argv[:1] == ["run"]:
        return cmd_run(parse_run_args(argv[1:]))
    args = parser.parse_args(argv)
    return cmd_compile(args)
