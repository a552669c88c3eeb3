"""The existing P4Runtime push path (p4rt.push_fabric) drives the Tofino program: the lab's
`render --arch tna` documents pushed over gRPC to in-process p4sim P4Runtime servers running
p4src/tna/stellar.p4 (pipeline included), read back equal, a second push writes nothing, and
the pushed spine forwards a packet (negative control: the same push without that route
deletes it, and the packet is dropped)."""
from __future__ import annotations

from pathlib import Path

import pytest

p4sim = pytest.importorskip("p4sim")
from scapy.all import IP, UDP, Ether, Raw, raw  # noqa: E402

from control_plane.model import load_fabric  # noqa: E402
from control_plane.p4rt import ProgramFiles, push_fabric  # noqa: E402
from control_plane.render import entry_identity, render_fabric  # noqa: E402
from p4sim.compiler import compile_files  # noqa: E402
from p4sim.p4rt import Device, DeviceOptions, P4RuntimeServer  # noqa: E402
from p4sim.program import Program  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "p4src" / "tna" / "stellar.p4"
LAB = ROOT / "fabrics" / "lab.yaml"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    out = tmp_path_factory.mktemp("stellar_tna")
    ir_program = compile_files(str(PROGRAM), include_dirs=[str(ROOT / "p4src")],
                               defines={"__TARGET_TOFINO__": "1"},
                               out_json=out / "stellar.json", p4info_out=out / "stellar.p4info.txtpb")
    program = Program(ir_program)
    return program, ProgramFiles.load(out / "stellar.json", out / "stellar.p4info.txtpb")


@pytest.fixture
def servers(compiled):
    fabric = load_fabric(str(LAB))
    program, files = compiled
    devices, running, addresses, sent = {}, [], {}, {}

    def loader(data: bytes):
        return program if data == files.device_config else Program.from_device_config(data)

    try:
        for name in ("leaf1", "spine1"):
            sw = fabric.switches[name]
            device = Device(DeviceOptions(device_id=sw.device_id, clock="virtual",
                                          priority_queues=fabric.dataplane.priority_queues), program_loader=loader)
            sent[name] = []
            device.transmit = lambda port, data, box=sent[name]: box.append((port, data))
            server = P4RuntimeServer(device, "127.0.0.1:0")
            server.start()
            running.append(server)
            devices[name], addresses[name] = device, f"127.0.0.1:{server.port}"
        yield fabric, devices, addresses, sent
    finally:
        for server in running:
            server.stop(0)


def test_push_arch_tna_installs_reads_back_and_forwards(compiled, servers) -> None:
    _, files = compiled
    fabric, devices, addresses, sent = servers
    docs = {n: d for n, d in render_fabric(fabric, arch="tna").documents.items() if n in addresses}
    first = push_fabric(fabric, docs, files, addresses, progress=None, switches=list(addresses))
    assert first.ok, {n: r.error for n, r in first.results.items()}
    for name, result in first.results.items():
        entries = {entry_identity(e) for e in docs[name]["entries"] if not e.get("default_action")}
        assert result.pipeline_pushed
        sessions = len(docs[name]["clone_sessions"])   # leaf1: the feedback session; spine1: none
        assert sessions == (1 if name == "leaf1" else 0)
        assert len(result.diff.inserts) == len(entries) + sessions > 0 and not result.diff.deletes
    second = push_fabric(fabric, docs, files, addresses, progress=None, switches=list(addresses))
    assert second.ok and second.in_sync, {n: r.diff.lines()[:5] for n, r in second.results.items()}
    # the pushed spine forwards leaf1 -> leaf2 traffic down to leaf2 (its port 2)
    pkt = raw(Ether() / IP(src="10.0.1.1", dst="10.0.2.1") / UDP(sport=1, dport=4791) / Raw(b"\x00" * 64))
    devices["spine1"].inject(1, pkt)
    devices["spine1"].advance(10)
    assert [p for p, _ in sent["spine1"]] == [2]
    # negative control: the spine keeps its pipeline, the route is deleted -> dropped
    no_route = dict(docs["spine1"])
    no_route["entries"] = [e for e in no_route["entries"] if not (
        e["table"].endswith("routing.lpm") and e["match"]["hdr.ipv4.dst_addr"]["value"] == "10.0.2.0")]
    third = push_fabric(fabric, {"spine1": no_route}, files, addresses, progress=None, switches=["spine1"])
    assert third.ok and len(third.results["spine1"].diff.deletes) == 1
    sent["spine1"].clear()
    devices["spine1"].inject(1, pkt)
    devices["spine1"].advance(10)
    assert sent["spine1"] == []


def _lab_at(fabric, addresses: dict[str, str]) -> str:
    """lab.yaml's text with the given switches' P4Runtime addresses (the in-process servers)."""
    text = LAB.read_text()
    for name, address in addresses.items():
        text = text.replace(f"p4runtime: {fabric.switches[name].p4runtime}", f"p4runtime: {address}")
    return text


def _stellarctl(*argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of one stellarctl command, run in-process."""
    import io

    from control_plane.cli import main
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out, err), out.getvalue(), err.getvalue()


def test_stellarctl_push_arch_tna_compiles_the_tna_program_and_pushes(tmp_path, servers) -> None:
    fabric, devices, addresses, sent = servers
    path = tmp_path / "lab.yaml"
    path.write_text(_lab_at(fabric, addresses))
    run = _stellarctl
    code, out, err = run("push", str(path), "--arch", "tna", "--switch", "spine1", "--quiet")
    assert code == 0, out + err                         # compiled p4src/tna/stellar.p4 itself
    code, out, err = run("diff", str(path), "--arch", "tna", "--switch", "spine1")
    assert code == 0 and "in sync" in out, out + err
    # negative control: the v1model rendering does not match the TNA program's P4Info
    code, out, err = run("diff", str(path), "--switch", "spine1")
    assert code == 1 and "no P4Table named 'StellarIngress.config.params'" in out, out + err
    devices["spine1"].inject(1, raw(Ether() / IP(src="10.0.1.1", dst="10.0.2.1") / UDP(sport=1, dport=4791)
                                    / Raw(b"\x00" * 64)))
    devices["spine1"].advance(10)
    assert [p for p, _ in sent["spine1"]] == [2]


def test_the_feedback_mirror_session_is_pushed_reconciled_and_deleted(compiled, servers) -> None:
    """The TNA document's clone session (mirror session 1 -> recirculation port 68, truncated to
    64 bytes) is INSERTed with the entries, read back by a wildcard PRE read (a second push
    writes nothing), MODIFYed when the document changes it, DELETEd when the document holds
    none; a document without ``clone_sessions`` leaves the switch's sessions alone."""
    _, files = compiled
    fabric, devices, addresses, _ = servers
    doc = render_fabric(fabric, arch="tna").documents["leaf1"]
    assert doc["clone_sessions"] == [{"session_id": 1, "replicas": [{"egress_port": 68, "instance": 0}],
                                      "class_of_service": 0, "packet_length_bytes": 64,
                                      "comment": doc["clone_sessions"][0]["comment"]}]

    def push(document):
        result = push_fabric(fabric, {"leaf1": document}, files, addresses, progress=None, switches=["leaf1"])
        assert result.ok, result.results["leaf1"].error
        return result.results["leaf1"].diff

    def held():
        return devices["leaf1"].switch.clone_sessions()

    first = push(doc)
    assert [c.kind for c in first.inserts].count("clone_session") == 1
    assert held() == {1: ([(68, 0)], 64)}
    assert push(doc).empty                                       # read back equal: nothing written
    longer = dict(doc, clone_sessions=[dict(doc["clone_sessions"][0], packet_length_bytes=128)])
    diff = push(longer)
    assert [(c.op, c.kind) for c in diff.changes()] == [("modify", "clone_session")]
    assert "truncated to 64 B => ports 68 (instance 0), truncated to 128 B" in diff.lines()[0]
    assert held() == {1: ([(68, 0)], 128)}
    unmanaged = {k: v for k, v in doc.items() if k != "clone_sessions"}
    assert push(unmanaged).empty and held() == {1: ([(68, 0)], 128)}   # not the document's business
    diff = push(dict(doc, clone_sessions=[]))
    assert [(c.op, c.kind) for c in diff.changes()] == [("delete", "clone_session")]
    assert held() == {}


def test_a_no_dre_fabric_pushes_the_tofino1_profile_and_its_entries(tmp_path, servers) -> None:
    """dataplane.tna_profile: no-dre (the Tofino-1 profile): `stellarctl push --arch tna`
    compiles p4src/tna/stellar.p4 with STELLAR_NO_DRE, pushes that pipeline and entries without
    dre.level<k> rows, and the switch forwards; negative control: the full profile's entries do
    not fit that program's P4Info (its DRE tables are not there)."""
    fabric, devices, addresses, sent = servers
    text = _lab_at(fabric, addresses)
    full = tmp_path / "full.yaml"
    full.write_text(text)
    assert "\ndataplane:\n" in text
    lite = tmp_path / "lite.yaml"
    lite.write_text(text.replace("\ndataplane:\n", "\ndataplane:\n  tna_profile: no-dre\n", 1))
    run = _stellarctl
    docs = render_fabric(load_fabric(str(lite)), arch="tna").documents["leaf1"]
    tables = {e["table"] for e in docs["entries"]}
    assert not any(t.startswith("pipe.StellarIngress.dre.") for t in tables)
    assert "pipe.StellarIngress.dre_base.levels" in tables
    params = next(e for e in docs["entries"] if e["table"] == "pipe.StellarIngress.params")["params"]
    assert params["dre_choice"] == 0
    code, out, err = run("push", str(lite), "--arch", "tna", "--switch", "leaf1", "--quiet")
    assert code == 0, out + err
    code, out, err = run("diff", str(lite), "--arch", "tna", "--switch", "leaf1")
    assert code == 0 and "in sync" in out, out + err
    code, out, err = run("push", str(full), "--arch", "tna", "--switch", "leaf1", "--no-pipeline", "--quiet")
    assert code == 1 and "no table named 'pipe.StellarIngress.dre.level0' in the switch's P4Info" in out + err, out + err
    # leaf1 forwards a packet up a spine (routing, path choice and the flowlet state run)
    devices["leaf1"].inject(1, raw(Ether() / IP(src="10.0.1.1", dst="10.0.2.1") / UDP(sport=1, dport=4791)
                                   / Raw(b"\x00" * 64)))
    devices["leaf1"].advance(10)
    assert len([p for p, _ in sent["leaf1"] if p != 68]) == 1
