"""Test PKI made at test time (``cryptography``): a CA, a server certificate for localhost /
127.0.0.1, a client certificate, and a second, untrusted CA with its own client certificate
(the negative control for mutual TLS).  Nothing is committed; the keys are P-256 EC, quick to
make."""
from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


def _key():
    return ec.generate_private_key(ec.SECP256R1())


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _pem_key(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _cert(subject: str, key, issuer: str, issuer_key, ca: bool, usage=None, san=None) -> bytes:
    now = datetime.datetime.now(datetime.timezone.utc)
    b = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer))
         .public_key(key.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(minutes=5))
         .not_valid_after(now + datetime.timedelta(days=1))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if usage is not None:
        b = b.add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    if san is not None:
        b = b.add_extension(x509.SubjectAlternativeName(san), critical=False)
    return b.sign(issuer_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


@dataclass
class PKI:
    """Paths of the PEM files (and their bytes through ``read``)."""

    dir: Path

    def path(self, name: str) -> str:
        return str(self.dir / name)

    def read(self, name: str) -> bytes:
        return (self.dir / name).read_bytes()


def make_pki(where: Path) -> PKI:
    where.mkdir(parents=True, exist_ok=True)
    files: dict[str, bytes] = {}
    for ca_name in ("ca", "rogue-ca"):
        ca_key = _key()
        files[f"{ca_name}.pem"] = _cert(f"stellar test {ca_name}", ca_key, f"stellar test {ca_name}",
                                        ca_key, ca=True)
        client_key = _key()
        prefix = "" if ca_name == "ca" else "rogue-"
        files[f"{prefix}client.key"] = _pem_key(client_key)
        files[f"{prefix}client.pem"] = _cert(f"{prefix}controller", client_key,
                                             f"stellar test {ca_name}", ca_key, ca=False,
                                             usage=ExtendedKeyUsageOID.CLIENT_AUTH)
        if ca_name == "ca":
            server_key = _key()
            files["server.key"] = _pem_key(server_key)
            files["server.pem"] = _cert(
                "p4sim", server_key, "stellar test ca", ca_key, ca=False,
                usage=ExtendedKeyUsageOID.SERVER_AUTH,
                san=[x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    for name, data in files.items():
        (where / name).write_bytes(data)
    return PKI(where)
