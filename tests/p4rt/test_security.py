"""TLS and mutual TLS on p4sim's P4Runtime server and on the controller's client, with
certificates from files made at test time; the exposure warning of a non-loopback listener.
Every accepted connection has its refused counterpart (plaintext, wrong CA, no or rogue client
certificate)."""
from __future__ import annotations

import grpc
import pytest
from google.rpc import code_pb2

from control_plane.p4rt import P4RuntimePushError, SwitchSession, Transport
from p4sim.p4rt import Device, DeviceOptions, P4RuntimeServer
from p4sim.p4rt.client import P4RuntimeClient
from p4sim.p4rt.security import ServerTLS, TLSConfigError, exposure_warning
from testkit.fake_switch import FakeProgram, FakeSwitch
from tests.p4rt.certs import make_pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def serve(tls: ServerTLS | None) -> P4RuntimeServer:
    device = Device(DeviceOptions(device_id=1, clock="virtual"),
                    program_loader=FakeProgram.from_device_config,
                    switch_factory=lambda prog, opts: FakeSwitch(prog, clock=opts.clock))
    server = P4RuntimeServer(device, "127.0.0.1:0", tls=tls)
    server.start()
    return server


def creds(pki, ca="ca.pem", client: str | None = None) -> grpc.ChannelCredentials:
    if client is None:
        return grpc.ssl_channel_credentials(root_certificates=pki.read(ca))
    return grpc.ssl_channel_credentials(root_certificates=pki.read(ca),
                                        private_key=pki.read(f"{client}.key"),
                                        certificate_chain=pki.read(f"{client}.pem"))


def arbitrates(port: int, credentials) -> bool:
    c = P4RuntimeClient(f"127.0.0.1:{port}", credentials=credentials)
    try:
        return c.connect(timeout=3).status.code == code_pb2.OK
    except (grpc.FutureTimeoutError, ConnectionError, grpc.RpcError):
        return False
    finally:
        c.close()


def test_tls_server_takes_tls_clients_and_refuses_plaintext_and_unknown_ca(pki):
    server = serve(ServerTLS.from_files(pki.path("server.pem"), pki.path("server.key")))
    try:
        assert arbitrates(server.port, creds(pki))
        assert not arbitrates(server.port, None)  # plaintext to a TLS port
        assert not arbitrates(server.port, creds(pki, ca="rogue-ca.pem"))  # server cert not trusted
    finally:
        server.stop(0)


def test_mutual_tls_needs_a_client_certificate_from_the_ca(pki):
    tls = ServerTLS.from_files(pki.path("server.pem"), pki.path("server.key"), pki.path("ca.pem"),
                               client_auth=True)
    server = serve(tls)
    try:
        assert arbitrates(server.port, creds(pki, client="client"))
        assert not arbitrates(server.port, creds(pki))  # no client certificate
        assert not arbitrates(server.port, creds(pki, client="rogue-client"))  # signed by another CA
    finally:
        server.stop(0)


def test_plaintext_server_control(pki):
    """Negative control: the same clients against a plaintext server (plaintext works, TLS not)."""
    server = serve(None)
    try:
        assert arbitrates(server.port, None)
        assert not arbitrates(server.port, creds(pki))
    finally:
        server.stop(0)


def test_tls_options_are_checked(pki, tmp_path):
    with pytest.raises(TLSConfigError, match="--grpc-server-key"):
        ServerTLS.from_files(pki.path("server.pem"), None)
    with pytest.raises(TLSConfigError, match="cacert"):
        ServerTLS.from_files(pki.path("server.pem"), pki.path("server.key"), client_auth=True)
    (tmp_path / "junk.pem").write_text("not a certificate")
    with pytest.raises(TLSConfigError, match="not a PEM"):
        ServerTLS.from_files(str(tmp_path / "junk.pem"), pki.path("server.key"))
    with pytest.raises(TLSConfigError, match="cannot read"):
        ServerTLS.from_files(str(tmp_path / "missing.pem"), pki.path("server.key"))


def test_exposure_warning_says_what_is_exposed():
    plain = exposure_warning("0.0.0.0:9559", None)
    assert plain and "without TLS" in plain and "push a new pipeline" in plain and "PacketOut" in plain
    assert exposure_warning(":9559", None)  # all interfaces
    assert exposure_warning("[::]:9559", None)
    one_way = exposure_warning("0.0.0.0:9559", ServerTLS(b"c", b"k"))
    assert one_way and "no client authentication" in one_way
    assert exposure_warning("0.0.0.0:9559", ServerTLS(b"c", b"k", b"ca", client_auth=True)) is None
    for local in ("127.0.0.1:9559", "localhost:9559", "[::1]:9559", "127.0.0.2:1"):
        assert exposure_warning(local, None) is None


def test_p4sim_run_with_mutual_tls_and_the_controller_session(pki, tmp_path):
    """`p4sim run` with simple_switch_grpc's TLS options; the controller's finsy session with
    Transport.from_files reaches it, a plaintext session and one without a client cert do not."""
    from testkit.p4sim_process import start_p4sim

    proc = start_p4sim(tmp_path, "--grpc-server-ssl", "--grpc-server-cert", pki.path("server.pem"),
                       "--grpc-server-key", pki.path("server.key"), "--grpc-server-cacert",
                       pki.path("ca.pem"), "--grpc-server-with-client-auth",
                       channel_credentials=creds(pki, client="client"))
    try:
        good = Transport.from_files(pki.path("ca.pem"), pki.path("client.pem"), pki.path("client.key"))
        with SwitchSession(proc.grpc_addr, 1, transport=good, timeout=5.0) as s:
            assert s.primary
            assert s.current_pipeline() == (None, 0)
        for bad in (Transport(), Transport.from_files(pki.path("ca.pem"))):
            with pytest.raises(P4RuntimePushError):
                SwitchSession(proc.grpc_addr, 1, transport=bad, timeout=2.0).connect()
        assert "(mutual TLS)" in proc.log() and "WARNING" not in proc.log()
    finally:
        proc.stop()


def test_p4sim_run_warns_on_a_non_loopback_plaintext_address(tmp_path):
    from p4sim.cli import parse_run_args

    args = parse_run_args(["--no-p4", "--", "--grpc-server-addr", "0.0.0.0:9559"])
    assert not args.tls["ssl"]
    assert "without TLS" in exposure_warning(args.grpc_server_addr, None)
    args = parse_run_args(["--no-p4", "--", "--grpc-server-ssl", "--grpc-server-cert", "c.pem",
                           "--grpc-server-key", "k.pem", "--grpc-server-with-client-auth",
                           "--grpc-server-cacert", "ca.pem"])
    assert (args.tls["ssl"], args.tls["cert"], args.tls["key"], args.tls["cacert"],
            args.tls["with_client_auth"]) == (True, "c.pem", "k.pem", "ca.pem", True)


def test_stellarctl_transport_options_fail_clearly(tmp_path):
    from control_plane.cli import main
    import io

    err = io.StringIO()
    assert main(["--grpc-tls-ca", str(tmp_path / "nope.pem"), "validate", "x.yaml"], err=err) == 2
    assert "--grpc-tls-ca" in err.getvalue() and "no such file" in err.getvalue()
    err = io.StringIO()
    assert main(["--grpc-tls-cert", "a.pem", "validate", "x.yaml"], err=err) == 2
    assert "needs its key" in err.getvalue()
