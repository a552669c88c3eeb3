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

    # --arch names the package the program must instantiate (V1Switch for v1model, TNA's Switch
    # for tna, as p4c's --arch does); t2na is tna compiled for Tofino2.
    families = {"v1model": ("v1model",), "tna": ("tna", "t2na"), "t2na": ("t2na",)}
    if args.arch not in families:
        print(f"p4sim compile: unsupported --arch {args.arch} (one of {', '.join(families)})",
              file=sys.stderr)
        return 2
    try:
        from p4sim import compiler

        compiler.compile_files(args.program, list(args.include), _defines(args.define),
                               args.output, args.p4runtime_files, arch=families[args.arch])
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

    def __init__(self, text: str, status: int = 1, stream: str = "stderr") -> None:
        super().__init__(text)
        self.text, self.status, self.stream = text, status, stream


def parse_run_args(argv: Sequence[str]) -> argparse.Namespace:
    """``p4sim run``'s argv, checked by simple_switch_grpc's own grammar (p4sim.run_grammar):
    what the real binary rejects is rejected with its message and exit status; options the real
    binary has but p4sim cannot honour are refused by name, never ignored.  Raises RunArgsError
    (or run_grammar.Exit for --help/--version)."""
    from p4sim import run_grammar as g

    try:
        parsed = g.parse(argv, dialect="p4sim")
    except g.GrammarError as err:
        raise RunArgsError(err.text, err.status, err.stream) from None
    gen, tgt = parsed.general, parsed.target
    refused = [name for name in (*gen, *tgt) if name in g.REFUSED]
    if refused:
        name = refused[0]
        raise RunArgsError(f"p4sim run: --{name} is a simple_switch_grpc option p4sim cannot honour "
                           f"({g.REFUSED[name]})")
    clock = tgt.get("clock", "wall")
    if clock not in ("wall", "virtual"):
        raise RunArgsError(f"p4sim run: --clock {clock}: wall or virtual")
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
        control_addr=tgt.get("control-addr"), seed=tgt.get("seed", 0),
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
    except (OSError, RuntimeError) as err:
        print(f"p4sim run: cannot listen on {args.grpc_server_addr}: {err}", file=sys.stderr)
        thrift.close()
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
    thrift.close()
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
        from p4sim.run_grammar import Exit

        try:
            run_args = parse_run_args(argv[1:])
        except Exit as done:
            print(done.text)
            return 0
        except RunArgsError as err:
            print(err.text, file=sys.stdout if err.stream == "stdout" else sys.stderr)
            return err.status
        return cmd_run(run_args)
    args = parser.parse_args(argv)
    return cmd_compile(args)
