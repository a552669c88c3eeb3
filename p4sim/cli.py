"""``p4sim`` command line: ``compile`` (like p4c-bm2-ss) and ``run`` (like simple_switch_grpc).

Both take the flags of the tools they stand in for, so scripts, Makefiles and Mininet wrappers
written for p4c/BMv2 work unchanged with ``p4sim`` substituted.  ``run`` parses its argv with
simple_switch_grpc's own grammar (``p4sim.run_grammar``): general bm options before ``--``,
target options (``--grpc-server-addr``, ``--cpu-port``, ``--priority-queues`` ...) after, and
the real binary's error and exit status for anything in the wrong place.
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from typing import Sequence

DEFAULT_GRPC_ADDR = "127.0.0.1:9559"


# -- compile -------------------------------------------------------------------------------

def _defines(items: Sequence[str]) -> dict[str, str]:
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        out[name] = value if _ else "1"
    return out


ARCH_FAMILIES = {"v1model": ("v1model",), "tna": ("tna", "t2na"), "t2na": ("t2na",)}
TARGETS = ("bmv2", "bmv2-ss", "p4sim")


def p4runtime_outputs(values: Sequence[str]) -> list[str]:
    """``--p4runtime-files`` values as p4c takes them: each a comma-separated list of files
    (given more than once, the lists add up); empty items are refused."""
    files = []
    for value in values:
        items = value.split(",")
        if any(not item.strip() for item in items):
            raise ValueError(f"--p4runtime-files {value!r}: an empty file name in the list")
        files.extend(item.strip() for item in items)
    return files


def cmd_compile(args: argparse.Namespace) -> int:
    from p4sim.errors import CompileError

    # --arch names the package the program must instantiate (V1Switch for v1model, TNA's Switch
    # for tna, as p4c's --arch does); t2na is tna compiled for Tofino2.
    if args.arch not in ARCH_FAMILIES:
        print(f"p4sim compile: unsupported --arch {args.arch} (one of {', '.join(ARCH_FAMILIES)})",
              file=sys.stderr)
        return 2
    if args.std not in ("p4-16", "p4_16"):
        print(f"p4sim compile: --std {args.std}: p4sim compiles P4_16 only (--std p4-16)", file=sys.stderr)
        return 2
    if args.target not in TARGETS:
        print(f"p4sim compile: --target {args.target}: p4sim writes a config for its own bmv2-like "
              f"target (one of {', '.join(TARGETS)})", file=sys.stderr)
        return 2
    try:
        p4info_files = p4runtime_outputs(args.p4runtime_files)
    except ValueError as err:
        print(f"p4sim compile: {err}", file=sys.stderr)
        return 2
    if args.p4runtime_file:
        p4info_files.append(args.p4runtime_file)
    try:
        from p4sim import compiler

        compiler.compile_files(args.program, list(args.include), _defines(args.define),
                               args.output, p4info_files, arch=ARCH_FAMILIES[args.arch],
                               p4info_format=args.p4runtime_format)
    except CompileError as err:
        print(str(err), file=sys.stderr)
        return 1
    except OSError as err:
        print(f"p4sim compile: {err}", file=sys.stderr)
        return 1
    return 0


# -- run -----------------------------------------------------------------------------------

class RunArgsError(Exception):
    """A ``p4sim run`` command line refused: ``text`` goes to ``stream``, exit ``status``."""

    def __init__(self, text: str, status: int = 1, stream: str = "stderr", detail: str = "") -> None:
        super().__init__(text)
        self.text, self.status, self.stream, self.detail = text, status, stream, detail


def parse_run_args(argv: Sequence[str]) -> argparse.Namespace:
    """``p4sim run``'s argv, checked by simple_switch_grpc's own grammar (p4sim.run_grammar):
    what the real binary rejects is rejected with its message and exit status; options the real
    binary has but p4sim cannot honour are refused by name, never ignored.  Raises RunArgsError
    (or run_grammar.Exit for --help/--version)."""
    from p4sim import run_grammar as g

    try:
        parsed = g.parse(argv, dialect="p4sim")
    except g.GrammarError as err:
        raise RunArgsError(err.text, err.status, err.stream, err.detail) from None
    gen, tgt = parsed.general, parsed.target
    refused = [name for name in (*gen, *tgt) if name in g.REFUSED]
    if refused:
        name = refused[0]
        raise RunArgsError(f"p4sim run: --{name} is a simple_switch_grpc option p4sim cannot honour "
                           f"({g.REFUSED[name]})")
    clock = tgt.get("clock", "wall")
    if clock not in ("wall", "virtual"):
        raise RunArgsError(f"p4sim run: --clock {clock}: wall or virtual")
    backend = tgt.get("backend")
    if backend is not None and backend not in ("python", "native"):
        raise RunArgsError(f"p4sim run: --backend {backend}: python or native")
    interfaces = gen.get("interface", [])
    if len(interfaces) > gen.get("max-port-count", 512):
        raise RunArgsError(f"p4sim run: {len(interfaces)} interfaces exceed --max-port-count "
                           f"{gen['max-port-count']}")
    return argparse.Namespace(
        config=parsed.config, no_p4=parsed.no_p4, warnings=parsed.warnings,
        interface=[f"{port}@{ifname}" for port, ifname in interfaces],
        packet_in=gen.get("packet-in"), thrift_port=gen.get("thrift-port", 9090),
        device_id=gen.get("device-id", 0), log_console=bool(gen.get("log-console")),
        log_file=gen.get("log-file"), log_level=gen.get("log-level", "info"),
        log_max_size=gen.get("log-file-max-size", 5 * 1024 * 1024),
        log_max_files=gen.get("log-file-max-files", 3),
        grpc_server_addr=tgt.get("grpc-server-addr", DEFAULT_GRPC_ADDR),
        cpu_port=tgt.get("cpu-port"), drop_port=tgt.get("drop-port", 511),
        priority_queues=tgt.get("priority-queues", 1), clock=clock,
        control_addr=tgt.get("control-addr"), seed=tgt.get("seed", 0), backend=backend,
        # simple_switch_grpc's TLS options, as given; the P4Runtime server decides what it can do
        tls={"ssl": bool(tgt.get("grpc-server-ssl")), "cacert": tgt.get("grpc-server-cacert"),
             "cert": tgt.get("grpc-server-cert"), "key": tgt.get("grpc-server-key"),
             "with_client_auth": bool(tgt.get("grpc-server-with-client-auth"))},
    )


class ThriftPortReservation:
    """p4sim has no Thrift server, but holds ``--thrift-port`` (default 9090) the way
    simple_switch_grpc does, so two switches given the same port fail here as they would on
    BMv2 ("... when trying to bind to port 9090") instead of only there.  Loopback only; a
    connection is accepted and closed at once (there is no runtime CLI behind it)."""

    def __init__(self, port: int) -> None:
        import socket

        self.sock = socket.socket()
        try:
            self.sock.bind(("127.0.0.1", port))
            self.sock.listen(4)
        except OSError:
            self.sock.close()
            raise
        self.thread = threading.Thread(target=self._serve, daemon=True, name="thrift-port")
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.close()

    def close(self) -> None:
        import socket

        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def cmd_run(args: argparse.Namespace) -> int:
    from p4sim.p4rt import Device, DeviceOptions, P4RuntimeServer
    from p4sim.p4rt.p4info_proto import p4info_message
    from p4sim.ports import NanomsgPorts, PortMap, parse_interface_arg
    from p4sim.target_control import ControlServer

    level = {"trace": logging.DEBUG, "debug": logging.DEBUG, "info": logging.INFO,
             "warn": logging.WARNING, "error": logging.ERROR, "off": logging.CRITICAL + 1}
    fmt = "%(asctime)s %(name)s %(levelname)s: %(message)s"
    if args.log_file:
        from logging.handlers import RotatingFileHandler

        handler: logging.Handler = RotatingFileHandler(args.log_file, maxBytes=args.log_max_size,
                                                       backupCount=args.log_max_files)
        handler.setFormatter(logging.Formatter(fmt))
        logging.basicConfig(level=level[args.log_level], handlers=[handler])
    else:
        logging.basicConfig(level=level[args.log_level] if args.log_console else logging.WARNING,
                            format=fmt, stream=sys.stderr)
    log = logging.getLogger("p4sim.run")
    for warning in args.warnings:
        print(warning, file=sys.stderr)

    # every pipeline the device loads (SetForwardingPipelineConfig builds a new Switch) takes it
    device = Device(DeviceOptions(device_id=args.device_id, clock=args.clock,
                                  priority_queues=args.priority_queues, drop_port=args.drop_port,
                                  cpu_port=args.cpu_port, seed=args.seed, backend=args.backend))
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
        if args.tls["ssl"]:
            tls = ServerTLS.from_files(args.tls["cert"], args.tls["key"], args.tls["cacert"],
                                       bool(args.tls["with_client_auth"]))
    except TLSConfigError as err:
        print(f"p4sim run: {err}", file=sys.stderr)
        ports.close()
        return 1
    try:
        thrift = ThriftPortReservation(args.thrift_port)
    except OSError as err:
        # simple_switch_grpc 1.15.5's own words (Thrift's TServerSocket, then bm_runtime/server.cpp).
        # BMv2 then hangs in exit(); p4sim exits 1.
        import time as _time

        print(f"Thrift: {_time.ctime()} TServerSocket::listen() Could not bind to port {args.thrift_port}\n"
              f"Thrift returned an exception when trying to bind to port {args.thrift_port}\n"
              f"The exception is: Could not bind: {err.strerror}\n"
              "You may have another process already using this port, maybe another instance of bmv2.",
              file=sys.stderr)
        ports.close()
        return 1
    warning = exposure_warning(args.grpc_server_addr, tls)
    if warning:
        print(f"p4sim run: {warning}", file=sys.stderr, flush=True)
    try:
        server = P4RuntimeServer(device, args.grpc_server_addr, tls=tls)
    except OSError as err:  # "cannot listen on ADDR: address already in use", as the message says
        print(f"p4sim run: {err.strerror or err}", file=sys.stderr)
        thrift.close()
        ports.close()
        return 1
    if args.config:
        try:
            with open(args.config, "rb") as f:
                data = f.read()
            program, switch = device.build_switch(data)
            server.service.install_pipeline(p4info_message(program.p4info), data, 0, switch)
        except Exception as err:  # noqa: BLE001 - report any load failure and exit
            print(f"p4sim run: cannot load {args.config}: {err}", file=sys.stderr)
            thrift.close()
            ports.close()
            return 1
    control = None
    if args.control_addr:
        try:
            control = ControlServer(device, args.control_addr)
        except OSError as err:
            print(f"p4sim run: cannot listen on {args.control_addr}: {err}", file=sys.stderr)
            thrift.close()
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
    grpc_addr = f"{args.grpc_server_addr.rpartition(':')[0]}:{server.port}"  # the port bound, also for :0
    print(f"p4sim: device {args.device_id} serving P4Runtime on {grpc_addr}"
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
    thrift.close()
    if args.packet_in and args.packet_in.startswith("ipc://"):
        try:
            os.unlink(args.packet_in[len("ipc://"):])
        except OSError:
            pass
    return 0


def build_parser() -> argparse.ArgumentParser:
    from p4sim.run_grammar import package_version

    parser = argparse.ArgumentParser(
        prog="p4sim",
        description="p4sim: an embedded P4_16 target for v1model and TNA/T2NA programs, with "
                    "p4c-bm2-ss's compile step and simple_switch_grpc's command line and P4Runtime server.")
    parser.add_argument("--version", action="version", version=f"p4sim {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    pc = sub.add_parser("compile", help="compile a P4_16 program, like p4c-bm2-ss / p4c -b bmv2",
                        description="Compile a P4_16 program into a p4sim device config and its P4Info. "
                                    "Takes p4c's common flags, so a p4c command line works with p4sim substituted.")
    pc.add_argument("program", metavar="PROGRAM.p4", help="the P4_16 source file")
    pc.add_argument("-I", dest="include", action="append", default=[], metavar="DIR",
                    help="add DIR to the #include search path (after p4sim's own core.p4/v1model.p4/tna.p4)")
    pc.add_argument("-D", dest="define", action="append", default=[], metavar="NAME[=VALUE]",
                    help="define a preprocessor macro (VALUE 1 when omitted), as cpp -D")
    pc.add_argument("-o", "--output", metavar="OUT.json",
                    help="write the device config here (loaded by 'p4sim run' or pushed over P4Runtime); "
                         "without it the program is only checked")
    pc.add_argument("--p4runtime-files", action="append", default=[], metavar="FILE[,FILE...]",
                    help="write the P4Info to each FILE of the comma-separated list, in the format its "
                         "extension names (.txt/.txtpb/.pbtxt/.p4info text, .json JSON, .bin/.pb binary)")
    pc.add_argument("--p4runtime-file", metavar="FILE",
                    help="write the P4Info to FILE in --p4runtime-format (p4c's older, single-file flag)")
    pc.add_argument("--p4runtime-format", choices=("text", "json", "binary"),
                    help="format of a P4Info file whose extension names none (default text)")
    pc.add_argument("-a", "--arch", default="v1model", metavar="ARCH",
                    help=f"the architecture the program is written for: {', '.join(ARCH_FAMILIES)} "
                         "(default v1model); a program for another architecture is refused")
    pc.add_argument("-b", "--target", default="bmv2", metavar="TARGET",
                    help=f"the target to compile for, as p4c -b: {', '.join(TARGETS)} (all mean p4sim's "
                         "device config; default bmv2)")
    pc.add_argument("--std", "-x", default="p4-16", metavar="LANG",
                    help="the language standard: p4-16 (p4sim compiles P4_16 only)")
    sub.add_parser("run", add_help=False,
                   help="run a switch, like simple_switch_grpc (same flags; 'p4sim run --help' lists them)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"]:
        from p4sim.run_grammar import Exit

        try:
            run_args = parse_run_args(argv[1:])
        except Exit as done:
            print(done.text)
            return 0
        except RunArgsError as err:
            print(err.text, file=sys.stdout if err.stream == "stdout" else sys.stderr)
            if err.detail:  # which flag: BMv2's own text (above, unchanged) does not say
                print(f"p4sim run: {err.detail}", file=sys.stderr)
            return err.status
        return cmd_run(run_args)
    args = build_parser().parse_args(argv)
    return cmd_compile(args)
