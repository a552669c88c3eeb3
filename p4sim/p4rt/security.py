"""Transport security of the P4Runtime server: TLS / mutual TLS from PEM files, and the warning
for a server that anyone on the network can drive.

The options are simple_switch_grpc's (``--grpc-server-ssl``, ``--grpc-server-cert``,
``--grpc-server-key``, ``--grpc-server-cacert``, ``--grpc-server-with-client-auth``), so a
deployment script starts either target the same way.  With client auth, a client must present a
certificate signed by the CA file; without it the channel is encrypted but anyone may connect.
"""
from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import grpc


class TLSConfigError(ValueError):
    """The TLS options do not make a usable server (missing or unreadable files, bad mix)."""


@dataclass(frozen=True)
class ServerTLS:
    """PEM bytes of the server's certificate chain and key; ``ca`` verifies client certificates."""

    cert: bytes
    key: bytes
    ca: Optional[bytes] = None
    client_auth: bool = False

    @classmethod
    def from_files(cls, cert: Optional[str], key: Optional[str], ca: Optional[str] = None,
                   client_auth: bool = False) -> "ServerTLS":
        if not cert or not key:
            raise TLSConfigError("TLS needs both --grpc-server-cert and --grpc-server-key")
        if client_auth and not ca:
            raise TLSConfigError("--grpc-server-with-client-auth needs --grpc-server-cacert "
                                 "(the CA that signs client certificates)")

        def read(path: str, what: str) -> bytes:
            try:
                data = Path(path).read_bytes()
            except OSError as err:
                raise TLSConfigError(f"cannot read {what} {path}: {err.strerror}") from None
            if b"-----BEGIN" not in data:
                raise TLSConfigError(f"{what} {path} is not a PEM file")
            return data

        return cls(read(cert, "certificate"), read(key, "private key"),
                   read(ca, "CA certificate") if ca else None, client_auth)

    def credentials(self) -> grpc.ServerCredentials:
        return grpc.ssl_server_credentials(
            [(self.key, self.cert)], root_certificates=self.ca,
            require_client_auth=self.client_auth)


def _is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        try:
            return all(ipaddress.ip_address(info[4][0]).is_loopback
                       for info in socket.getaddrinfo(host, None))
        except (OSError, ValueError):
            return False


def split_address(address: str) -> tuple[str, str]:
    """'host:port' / '[v6]:port' -> (host, port); a bare ':port' listens everywhere."""
    host, _, port = address.rpartition(":")
    return host, port


def exposure_warning(address: str, tls: Optional[ServerTLS]) -> Optional[str]:
    """What a listener on ``address`` exposes, or None when only this host can reach it or every
    client must prove who it is (mutual TLS)."""
    host, _ = split_address(address)
    if _is_loopback(host):
        return None
    what = ("read and rewrite every table, counter, meter and register, push a new pipeline "
            "(replacing the program and wiping its state) and inject packets on any port (PacketOut)")
    if tls is None:
        return (f"WARNING: P4Runtime on {address} without TLS: anyone who can reach this address "
                f"can {what}; the traffic, including the pipeline, is in clear text. Use "
                "--grpc-server-ssl with --grpc-server-cert/--grpc-server-key and "
                "--grpc-server-with-client-auth --grpc-server-cacert, or bind to 127.0.0.1.")
    if not tls.client_auth:
        return (f"WARNING: P4Runtime on {address} with TLS but no client authentication: the "
                f"channel is encrypted, yet anyone who can reach it can {what}. Add "
                "--grpc-server-with-client-auth --grpc-server-cacert CA.pem.")
    return None
