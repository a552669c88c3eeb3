"""Is the target PTF is about to test there?  ``python -m ptf_tests.preflight`` before ``ptf``.

PTF opens its packet ports before any test runs: with no switch behind a nanomsg socket, pynng
raises in PTF's own start-up and the run then hangs on its dataplane thread; with a wrong gRPC
address every test waits for a connection that never comes.  This checks both, within a few
seconds, and says which address is missing -- no traceback, exit status 2.

    python -m ptf_tests.preflight --grpc-addr 127.0.0.1:9559 [--device-socket ipc:///tmp/s.ipc]
        [--interface veth0 ...]
"""
from __future__ import annotations

import argparse
import os
import socket
import sys
from typing import Optional, Sequence


def grpc_problem(addr: str, timeout: float = 2.0) -> Optional[str]:
    """Why nothing answers TCP connections at the gRPC address, or None."""
    host, _, port = addr.rpartition(":")
    try:
        with socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=timeout):
            return None
    except ValueError:
        return f"{addr} is not host:port"
    except OSError as err:
        return f"no P4Runtime server at {addr} ({err.strerror or err})"


def socket_problem(address: str, timeout_ms: int = 2000) -> Optional[str]:
    """Why PTF's nanomsg dataplane could not attach to ``address``, or None.  Only the socket
    file is checked (dialling it would take the switch's one Pair0 peer from PTF)."""
    if not address.startswith("ipc://"):
        return None
    path = address[len("ipc://"):]
    if not os.path.exists(path):
        return f"no switch socket at {address} (the file does not exist: is the switch running?)"
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(timeout_ms / 1000)
    try:
        probe.connect(path)
    except OSError as err:
        return f"no switch listening on {address} ({err.strerror or err})"
    finally:
        probe.close()
    return None


def interface_problem(name: str) -> Optional[str]:
    return None if os.path.exists(f"/sys/class/net/{name}") else f"no interface {name}"


def problems(grpc_addr: str, device_sockets: Sequence[str] = (), interfaces: Sequence[str] = ()) -> list[str]:
    found = [grpc_problem(grpc_addr)]
    found += [socket_problem(s) for s in device_sockets]
    found += [interface_problem(i) for i in interfaces]
    return [p for p in found if p]


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ptf_tests.preflight", description=__doc__.split("\n\n")[0])
    p.add_argument("--grpc-addr", required=True, help="the switch's P4Runtime address")
    p.add_argument("--device-socket", action="append", default=[], metavar="ipc://PATH",
                   help="a nanomsg socket PTF will attach to (repeatable)")
    p.add_argument("--interface", action="append", default=[], help="an interface PTF will use (repeatable)")
    args = p.parse_args(argv)
    found = problems(args.grpc_addr, args.device_socket, args.interface)
    for problem in found:
        print(f"ptf: target missing: {problem}", file=sys.stderr)
    return 2 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
