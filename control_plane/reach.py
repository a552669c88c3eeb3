"""Is a switch's P4Runtime address there at all?  A quick TCP check before a gRPC session.

gRPC treats a refused connection as transient and retries it until the call's deadline, so a
push to a stopped switch on loopback would wait the full timeout (10 s) before saying anything.
A plain TCP connect answers at once: "connection refused" means no process listens there, and
the command can name the switch and move on to the others.  Only refusals (and unresolvable
names) count as down: a slow answer is left to gRPC and its own timeout.
"""
from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor
from typing import Mapping, Optional


def probe(address: str, timeout: float = 1.0) -> Optional[str]:
    """Why ``address`` (host:port) refuses connections, or None if it accepts one (or the check
    cannot tell, e.g. a ``unix:`` address or a timeout: gRPC decides then)."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or host.startswith(("unix", "dns", "ipv4", "ipv6")):
        return None
    host = host.strip("[]") or "127.0.0.1"
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            return None
    except ConnectionRefusedError:
        return "connection refused (is the switch running?)"
    except socket.gaierror as exc:
        return f"cannot resolve {host}: {exc.strerror}"
    except OSError:
        return None  # timeouts, unreachable networks: not conclusive, gRPC reports them


def refusing(addresses: Mapping[str, str], timeout: float = 1.0) -> dict[str, str]:
    """{switch: why} for each switch whose address refuses connections (checked concurrently)."""
    names = list(addresses)
    if not names:
        return {}
    with ThreadPoolExecutor(max_workers=min(16, len(names))) as pool:
        answers = list(pool.map(lambda n: probe(addresses[n], timeout), names))
    return {name: why for name, why in zip(names, answers) if why}
