"""``stellarctl fail-link`` keeps the failed links in a state file, so successive failures compose
and ``--restore`` brings one back; on both programs, over P4Runtime to in-process p4sim servers.
Also ``stats``/``watch --arch tna`` with the TNA program's counter names.

Lab: leaf1's uplinks are port 9 (spine1) and 10 (spine2); spine1's ports 1..4 go down to
leaf1..leaf4.  Failing leaf1-spine1 then leaf2-spine1 must leave no route over either link.
"""
from __future__ import annotations

import io
import ipaddress
import json
from pathlib import Path

import pytest

p4sim = pytest.importorskip("p4sim")
from scapy.all import IP, UDP, Ether, Raw, raw  # noqa: E402

from control_plane import archnames, contract  # noqa: E402
from control_plane.cli import main as stellarctl  # noqa: E402
from control_plane.linkstate import FailedLinks, default_state_path  # noqa: E402
from control_plane.model import load_fabric  # noqa: E402
from control_plane.p4rt import SwitchSession  # noqa: E402
from p4sim.compiler import compile_files  # noqa: E402
from p4sim.p4rt import Device, DeviceOptions, P4RuntimeServer  # noqa: E402
from p4sim.program import Program  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "fabrics" / "lab.yaml"
SOURCES = {"v1model": (ROOT / "p4src" / "v1model" / "stellar.p4", {}),
           "tna": (ROOT / "p4src" / "tna" / "stellar.p4", {"__TARGET_TOFINO__": "1"})}
V1_PATH_SET = "StellarIngress.routing.path_set"
TNA_MEMBERS = "pipe.StellarIngress.member_port.members"


@pytest.fixture
def state_dir(tmp_path):
    """The test's state directory (tests/conftest.py points $STELLAR_STATE_DIR at it)."""
    return tmp_path / "stellar-state"


@pytest.fixture(scope="module", params=["v1model", "tna"])
def arch(request):
    return request.param


@pytest.fixture(scope="module")
def compiled(arch, tmp_path_factory):
    source, defines = SOURCES[arch]
    out = tmp_path_factory.mktemp(f"stellar_{arch}")
    ir = compile_files(str(source), include_dirs=[str(ROOT / "p4src")], defines=defines,
                       out_json=out / "stellar.json", p4info_out=out / "stellar.p4info.txtpb")
    return Program(ir), out / "stellar.json", out / "stellar.p4info.txtpb"


@pytest.fixture
def lab(arch, compiled, tmp_path):
    """Six P4Runtime servers, the lab YAML pointing at them, the program pushed with --arch."""
    fabric = load_fabric(str(LAB))
    program, json_path, p4info = compiled
    config = json_path.read_bytes()
    devices, servers, sent = {}, [], {}
    text = LAB.read_text()
    try:
        for name, sw in fabric.switches.items():
            device = Device(DeviceOptions(device_id=sw.device_id, clock="virtual",
                                          priority_queues=fabric.dataplane.priority_queues),
                            program_loader=lambda data: program if data == config else Program.from_device_config(data))
            sent[name] = []
            device.transmit = lambda port, data, box=sent[name]: box.append((port, data))
            server = P4RuntimeServer(device, "127.0.0.1:0")
            server.start()
            servers.append(server)
            devices[name] = device
            text = text.replace(f"p4runtime: {sw.p4runtime}", f"p4runtime: 127.0.0.1:{server.port}")
        path = tmp_path / "lab.yaml"
        path.write_text(text)
        code, out, err = run("push", str(path), "--arch", arch, "--program-json", str(json_path),
                             "--p4info", str(p4info), "--quiet")
        assert code == 0, out + err
        yield load_fabric(str(path)), path, devices, sent
    finally:
        for server in servers:
            server.stop(0)


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return stellarctl(list(argv), out, err), out.getvalue(), err.getvalue()


def member_ports(fabric, name: str, arch: str) -> set[int]:
    """Every uplink port a switch's path sets / groups name (over P4Runtime)."""
    sw = fabric.switches[name]
    with SwitchSession(sw.p4runtime, sw.device_id, name=name).connect(read_only=True) as s:
        s.load_switch_p4info()
        if arch == "v1model":
            return {e["params"][f"port{i}"] for e in s.read_entries(V1_PATH_SET) for i in range(e["params"]["count"])}
        return {e["params"]["port"] for e in s.read_entries(TNA_MEMBERS)}


def routes(fabric, name: str, arch: str) -> set[str]:
    table = "StellarIngress.routing.lpm" if arch == "v1model" else "pipe.StellarIngress.routing.lpm"
    sw = fabric.switches[name]
    with SwitchSession(sw.p4runtime, sw.device_id, name=name).connect(read_only=True) as s:
        s.load_switch_p4info()
        return {str(ipaddress.IPv4Address(contract.value_to_int(e["match"]["hdr.ipv4.dst_addr"]["value"])))
                for e in s.read_entries(table)}


def topology_lines(diff_output: str, arch: str) -> list[str]:
    """The diff's lines about the tables that follow the topology."""
    tables = archnames.names(arch).topology_tables
    return [line for line in diff_output.splitlines()
            if line.strip()[:1] in "+~-" and line.strip()[2:].split(" ", 1)[0] in tables]


def test_successive_failures_compose_and_restore_brings_a_link_back(lab, arch) -> None:
    fabric, path, devices, _ = lab
    state = default_state_path(path)
    code, out, err = run("fail-link", str(path), "leaf1", "spine1", "--arch", arch)
    assert code == 0, out + err
    assert "failed links now: leaf1-spine1" in out and state.exists()
    code, out, err = run("fail-link", str(path), "leaf2", "spine1", "--arch", arch)
    assert code == 0, out + err
    assert FailedLinks.load(state).links == [("leaf1", "spine1"), ("leaf2", "spine1")]
    # routes avoid both links: leaf1 and leaf2 have no member on port 9, spine1 no route to them
    assert 9 not in member_ports(fabric, "leaf1", arch) and 9 not in member_ports(fabric, "leaf2", arch)
    assert {"10.0.1.0", "10.0.2.0"}.isdisjoint(routes(fabric, "spine1", arch))
    assert {"10.0.3.0", "10.0.4.0"} <= routes(fabric, "spine1", arch)
    # diff --state renders what fail-link wrote: the fabric without both links, the dead ports
    # marked down, their other rows and the meters as they were
    code, out, err = run("diff", str(path), "--arch", arch, "--state", str(state))
    assert "2 failed link(s)" in err and not topology_lines(out, arch), out
    assert code == 0, out                     # and nothing else differs: diff agrees with fail-link
    code, out, err = run("diff", str(path), "--arch", arch, "--ignore-state")  # negative control: the YAML's
    assert topology_lines(out, arch), out
    # a link already failed is refused, nothing changes
    code, out, err = run("fail-link", str(path), "spine1", "leaf1", "--arch", arch)
    assert code == 1 and "already recorded as failed" in err
    # the first link returns: leaf1 uses port 9 again (towards leaf3/leaf4), spine1 routes to leaf1
    code, out, err = run("fail-link", str(path), "leaf1", "spine1", "--restore", "--arch", arch)
    assert code == 0, out + err
    assert FailedLinks.load(state).links == [("leaf2", "spine1")]
    assert 9 in member_ports(fabric, "leaf1", arch) and 9 not in member_ports(fabric, "leaf2", arch)
    assert "10.0.1.0" in routes(fabric, "spine1", arch) and "10.0.2.0" not in routes(fabric, "spine1", arch)
    code, out, err = run("diff", str(path), "--arch", arch, "--state", str(state))
    assert not topology_lines(out, arch), out
    if arch == "v1model":   # its liveness entries for the returning ports are up again
        sw = fabric.switches["leaf1"]
        with SwitchSession(sw.p4runtime, sw.device_id, name="leaf1").connect(read_only=True) as s:
            s.load_switch_p4info()
            for i, table in enumerate(contract.LIVENESS_TABLES):
                (entry,) = [e for e in s.read_entries(table) if e["match"] == {f"meta.route.port{i}": 9}]
                assert entry["action"].endswith("port_up")
    code, out, err = run("fail-link", str(path), "leaf2", "spine1", "--restore", "--arch", arch)
    assert code == 0 and not state.exists(), out + err        # nothing failed: no state kept
    code, out, err = run("fail-link", str(path), "leaf2", "spine1", "--restore", "--arch", arch)
    assert code == 1 and "not recorded as failed" in err


def test_without_the_state_the_second_failure_re_adds_the_first_link(lab, arch, tmp_path) -> None:
    """Negative control: the second failure computed from the intact YAML alone (an empty state
    file, what fail-link did before it kept one) puts port 9 back on leaf1 while leaf1-spine1 is
    still down."""
    fabric, path, _, _ = lab
    code, out, err = run("fail-link", str(path), "leaf1", "spine1", "--arch", arch)
    assert code == 0 and 9 not in member_ports(fabric, "leaf1", arch), out + err
    code, out, err = run("fail-link", str(path), "leaf2", "spine1", "--arch", arch,
                         "--state", str(tmp_path / "empty.json"))
    assert code == 0, out + err
    assert 9 in member_ports(fabric, "leaf1", arch)
    assert "10.0.1.0" in routes(fabric, "spine1", arch)


def test_a_state_file_of_another_fabric_is_refused(lab, arch, tmp_path) -> None:
    _, path, _, _ = lab
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "stellar-failed-links/1", "links": [["leaf9", "spine1"]]}))
    code, out, err = run("fail-link", str(path), "leaf1", "spine1", "--arch", arch, "--state", str(bad))
    assert code == 1 and "no link between leaf9 and spine1" in err
    bad.write_text("[1, 2]")
    code, out, err = run("push", str(path), "--arch", arch, "--no-pipeline", "--state", str(bad))
    assert code == 1 and "not a failed-links state file" in err


def test_stats_and_watch_read_the_programs_own_counters(lab, arch) -> None:
    fabric, path, devices, sent = lab
    src, dst = fabric.hosts["l1g1"], fabric.hosts["l3g1"]
    frame = raw(Ether(src=src.mac, dst=fabric.switches["leaf1"].mac) / IP(src=str(src.ip), dst=str(dst.ip))
                / UDP(sport=1000, dport=2000) / Raw(b"x" * 40))
    devices["leaf1"].inject(1, frame)
    devices["leaf1"].advance(20)
    (port, _), = sent["leaf1"]
    code, out, err = run("stats", str(path), "--switch", "leaf1", "--arch", arch, "--json")
    assert code == 0, err
    data = json.loads(out)["leaf1"]
    assert data["tx"][str(port)][0] == 1 and data["path_changes"]["new"] == 1
    assert data["drops"]["no_route"] == 0
    # negative control: the other program's names are not in this P4Info
    other = "v1model" if arch == "tna" else "tna"
    code, out, err = run("stats", str(path), "--switch", "leaf1", "--arch", other)
    assert code == 1 and "ERROR" in out
    code, out, err = run("watch", str(path), "--arch", arch, "--count", "1", "--top", "3")
    assert code == 0 and "congestion map (16 directed links)" in out, out + err
    assert archnames.names(arch).qdelay_hist   # what watch read


def test_tna_fail_link_gives_a_new_member_list_a_new_group_id(lab, arch) -> None:
    """TNA: after leaf1-spine1 fails, leaf1's route to leaf2 names a new group {10} and group 1
    ({9, 10}) is gone, not renumbered in place (its best-member cell would name port 10 by
    port 9's position).  Negative control: a fresh render of the failed fabric (what every
    command did before) puts {10} in group 1."""
    if arch != "tna":
        pytest.skip("group ids are the TNA program's")
    from control_plane.ops import failed_documents, render_documents

    fabric, path, _, _ = lab
    code, out, err = run("fail-link", str(path), "leaf1", "spine1", "--arch", arch)
    assert code == 0, out + err
    sw = fabric.switches["leaf1"]
    with SwitchSession(sw.p4runtime, sw.device_id, name="leaf1").connect(read_only=True) as s:
        s.load_switch_p4info()
        (route,) = [e for e in s.read_entries("pipe.StellarIngress.routing.lpm")
                    if contract.value_to_int(e["match"]["hdr.ipv4.dst_addr"]["value"]) == 0x0A000200]
        rows = [(e["match"]["meta.group"], e["params"]["port"]) for e in s.read_entries(TNA_MEMBERS)]
    group = route["params"]["group"]
    assert group != 1 and [p for g, p in rows if g == group] == [10] and not [g for g, _ in rows if g == 1]
    failed = FailedLinks([("leaf1", "spine1")])
    assert failed_documents(load_fabric(str(path)), failed, arch) != render_documents(failed.apply(load_fabric(str(path))), arch)
    fresh = render_documents(failed.apply(load_fabric(str(path))), arch)["leaf1"]
    assert [m["port"] for g in fresh["path_sets"] if g["id"] == 1 for m in g["members"]] == [10]
