"""The lab fabric as a Mininet network of switch processes on real interfaces (root only), on
p4sim and -- where ``simple_switch_grpc``, ``p4c-bm2-ss`` and ``simple_switch_CLI`` are on
PATH -- on real BMv2: up, ``stellarctl push``, pings over 1 and 3 hops, ``stellarctl
stats``/``diff``, a real link-down (negative control: the ping on that link is lost), then
``stellarctl fail-link`` and the ping passes on the other path, then teardown with nothing left.

Skipped, with the reason printed, where Mininet cannot run: not root, Debian's mininet missing,
no ping.  CI runs as root and installs both, so there the p4sim run always happens; every
p4sim switch parses its command line with simple_switch_grpc's strict grammar."""
import json
import os
import re
import shutil
import socket
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEBIAN_MININET = Path("/usr/lib/python3/dist-packages/mininet")
BMV2_TOOLS = ("simple_switch_grpc", "p4c-bm2-ss", "simple_switch_CLI")
# interface-name prefix of this run: concurrent runs on one machine never share an interface
TAG = f"t{os.getpid() % 100:02d}"

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="Mininet needs root"),
    pytest.mark.skipif(not DEBIAN_MININET.is_dir(), reason="Debian's mininet package is not installed"),
    pytest.mark.skipif(shutil.which("ping") is None, reason="no ping (iputils-ping) on this machine"),
]


def _bmv2_missing() -> str:
    missing = [t for t in BMV2_TOOLS if shutil.which(t) is None]
    return f"real BMv2 not on PATH ({', '.join(missing)} missing)" if missing else ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _taken_after_free_ports(n: int) -> socket.socket:
    """A listening socket on a port P whose n ports below are free now (the switches started
    before the one that must fail bind them): a random P alone left them to chance, and another
    process on one of them failed the wrong switch."""
    for _ in range(50):
        taken = socket.socket()
        taken.bind(("127.0.0.1", 0))
        port = taken.getsockname()[1]
        try:
            for p in range(port - n, port):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", p))
        except OSError:
            taken.close()
            continue
        taken.listen()
        return taken
    raise RuntimeError(f"no port with {n} free ports below it")


def _bmv2_standins(bindir: Path) -> Path:
    """The BMv2 code path without BMv2: ``simple_switch_grpc`` checks its argv with the real
    binary's grammar, then runs ``p4sim run``; ``p4c-bm2-ss`` is ``p4sim compile``;
    ``simple_switch_CLI`` records that it was called and fails (nothing on the fabric path may
    use Thrift).  Returns the record file."""
    import sys

    bindir.mkdir()
    record = bindir / "cli-commands"
    py = sys.executable
    (bindir / "p4c-bm2-ss").write_text(f'#!/bin/sh\nexec {py} -m p4sim compile "$@"\n')
    (bindir / "simple_switch_grpc").write_text(
        f'#!/bin/sh\n{py} -m p4sim.run_grammar --dialect simple_switch_grpc -- "$@" || exit $?\n'
        f'exec {py} -m p4sim run "$@"\n')
    # any Thrift call is a fault: the controller-owned state is all tables and meters now
    (bindir / "simple_switch_CLI").write_text(
        f'#!/bin/sh\necho "simple_switch_CLI $*" >> {record}\necho "Error: no Thrift on this path"\nexit 1\n')
    for shim in bindir.iterdir():
        shim.chmod(0o755)
    return record


@pytest.fixture(scope="module", params=["p4sim", "bmv2-standin", "bmv2"])
def network(request, tmp_path_factory):
    """The lab fabric up on one target, entries pushed by ``stellarctl push``'s reconcile."""
    target = request.param
    if target == "bmv2" and _bmv2_missing():
        pytest.skip(_bmv2_missing())
    from bmv2_env import mininet_fabric as mf
    from control_plane.model import load_fabric

    where = tmp_path_factory.mktemp(f"mininet-{target}")
    with pytest.MonkeyPatch.context() as mp:
        record = None
        if target == "bmv2-standin":
            record = _bmv2_standins(where / "bin")
            mp.setenv("PATH", f"{where / 'bin'}{os.pathsep}{os.environ['PATH']}")
            target = "bmv2"
        # the lab fabric on free P4Runtime ports, so nothing else on this machine is in the way
        text = (ROOT / "fabrics" / "lab.yaml").read_text()
        text = re.sub(r"127\.0\.0\.1:9[56]\d\d", lambda _m: f"127.0.0.1:{_free_port()}", text)
        fabric_path = where / "lab.yaml"
        fabric_path.write_text(text)
        fabric = load_fabric(fabric_path)
        program = mf.compile_for(target, where / "build")
        fnet = mf.build_network(fabric, target, where / "logs", tag=TAG)
        try:
            rc, out = mf.push(str(fabric_path), program)
            assert rc == 0, out
            fnet.path = str(fabric_path)
            fnet.standin_record = record
            yield fnet
        finally:
            left = fnet.stop()
            assert left == [], f"interfaces left after teardown: {left}"
            for name in fabric.switches:
                assert not os.path.exists(f"/sys/class/net/{mf.intf_name(name, 9, TAG)}")


def _assert_no_thrift(network) -> None:
    if network.standin_record is not None:
        assert not network.standin_record.exists(), network.standin_record.read_text()


def test_bmv2_push_needs_no_thrift(network):
    """The push put every switch in sync through P4Runtime alone (liveness is a table now);
    the stand-in's simple_switch_CLI was never called."""
    from bmv2_env.mininet_fabric import diff

    if network.standin_record is None and network.target == "p4sim":
        pytest.skip("p4sim has no simple_switch_CLI to watch")
    rc, out = diff(network.path)
    assert rc == 0 and "6 switches: 0 differ" in out, out
    _assert_no_thrift(network)


def test_each_switch_has_its_own_grpc_thrift_port_and_log(network):
    plans = network.plans.values()
    assert len({p.grpc_addr for p in plans}) == len({p.thrift_port for p in plans}) == len(plans) == 6
    for p in plans:
        assert p.log.is_file() and "--thrift-port" in p.log.read_text().splitlines()[0]


def test_hosts_on_one_leaf_take_one_hop(network):
    from bmv2_env.mininet_fabric import ping

    r = ping(network, "l3g1", "l3g2")
    assert r.sent == r.received == 3, r.output
    assert set(r.ttls) == {64 - 1}


def test_hosts_on_different_leaves_reach_each_other_through_three_stellar_hops(network):
    from bmv2_env.mininet_fabric import ping

    r = ping(network, "l1g1", "l2g1")
    assert r.sent == r.received == 3, r.output
    assert set(r.ttls) == {64 - 3}  # leaf, spine and leaf each decrement the TTL


def test_an_address_with_no_route_gets_no_answer(network):
    # negative control: 10.9.9.9 is in no leaf subnet, so routing.lpm misses and drops
    out = network.net.get("l1g1").cmd("ping -c 2 -i 0.2 -W 1 10.9.9.9")
    assert "2 packets transmitted, 0 received" in out


def test_stellarctl_diff_and_stats_work_against_the_fabric(network):
    from bmv2_env.mininet_fabric import diff, stellarctl

    rc, out = diff(network.path)
    assert rc == 0 and "6 switches: 0 differ" in out, out
    rc, out = stellarctl("stats", network.path, "--switch", "leaf1", "--json")
    assert rc == 0, out
    leaf1 = json.loads(out[:out.rindex("}") + 1])["leaf1"]
    assert leaf1["error"] is None and leaf1["rx"]["1"][0] > 0  # l1g1's pings entered port 1


def test_stellarctl_watch_reads_the_fabric(network):
    from bmv2_env.mininet_fabric import stellarctl

    rc, out = stellarctl("watch", network.path, "--count", "1", "--interval", "0.1")
    # the congestion map reads counter StellarEgress.telemetry.qdelay_hist, which BMv2 serves
    assert rc == 0, out
    assert "leaf1" in out and "spine1" in out


def test_ptf_suite_runs_against_one_leaf_and_the_leaf_is_given_back(network, tmp_path):
    from bmv2_env import mininet_fabric as mf

    logs: list[str] = []
    assert mf.run_ptf(network, network.path, "stellar", "leaf1", tmp_path, log=logs.append) == 0, logs
    assert "leaf1 given back" in logs[-1] and "all in sync" in logs[-1]
    ptf_log = (tmp_path / "ptf-stellar.log").read_text()
    assert "ForwardingTest" in ptf_log
    r = mf.ping(network, "l1g1", "l2g1")  # the leaf's hosts are back in their namespaces
    assert r.sent == r.received == 3, r.output


def _uplink_used(network, src: str, dst: str) -> int:
    """The leaf uplink (9 or 10) the src->dst ping leaves by, from the leaf's tx counters."""
    from bmv2_env.mininet_fabric import ping
    from control_plane.ops import collect_stats

    leaf = network.fabric.hosts[src].leaf
    before = collect_stats(network.fabric, [leaf])[leaf].tx
    assert ping(network, src, dst).received == 3
    after = collect_stats(network.fabric, [leaf])[leaf].tx
    used = [p for p in (9, 10) if after.get(p, (0, 0))[0] - before.get(p, (0, 0))[0] >= 3]
    assert len(used) == 1, (before, after)
    return used[0]


def test_fail_link_moves_traffic_to_the_other_path(network):
    """Last in the module: it changes the fabric."""
    from bmv2_env import mininet_fabric as mf

    fabric = network.fabric
    uplink = _uplink_used(network, "l1g1", "l2g1")
    spine = fabric.switches["leaf1"].ports[uplink].peer_switch
    # negative control: the link goes down for real and nobody tells the switches -> lost
    mf.link_down(network, "leaf1", spine)
    assert mf.ping(network, "l1g1", "l2g1", count=2).received == 0
    logs: list[str] = []
    rc = mf.fail_link(network, network.path, "leaf1", spine, log=logs.append)
    text = "\n".join(logs)
    assert rc == 0, text
    # the very command an operator types, on both targets: liveness tables over P4Runtime
    assert "stellarctl fail-link" in text and "port_down set on leaf1 port" in text, text
    _assert_no_thrift(network)
    r = mf.ping(network, "l1g1", "l2g1")
    assert r.sent == r.received == 3, (r.output, text)
    assert set(r.ttls) == {64 - 3}


def test_a_switch_failing_half_way_leaves_nothing_behind(tmp_path):
    """spine2 cannot start (its Thrift port is taken): build_network raises with the switch's
    log, and every process and interface started before it is gone."""
    from bmv2_env import mininet_fabric as mf
    from control_plane.model import load_fabric

    text = (ROOT / "fabrics" / "lab.yaml").read_text()
    text = re.sub(r"127\.0\.0\.1:9[56]\d\d", lambda _m: f"127.0.0.1:{_free_port()}", text)
    (tmp_path / "lab.yaml").write_text(text)
    fabric = load_fabric(tmp_path / "lab.yaml")
    with _taken_after_free_ports(5) as taken:
        base = taken.getsockname()[1] - 5  # switches by name: leaf1..leaf4, spine1, spine2
        with pytest.raises(RuntimeError, match="spine2: target exited") as e:
            mf.build_network(fabric, "p4sim", tmp_path / "logs", thrift_base=base, tag=TAG)
    assert f"when trying to bind to port {base + 5}" in str(e.value)
    assert [n for n in mf.fabric_interfaces(fabric, TAG) if os.path.exists(f"/sys/class/net/{n}")] == []
    for s in fabric.switches.values():  # no switch process is left serving
        host, port = s.p4runtime.rsplit(":", 1)
        with socket.socket() as c:
            assert c.connect_ex((host, int(port))) != 0, s.name
