"""Push/reconcile over P4Runtime against in-process p4sim servers running the real stellar.p4.

Each test gets the lab fabric's six switches as P4Runtime servers on free loopback ports (the
same server `p4sim run` starts, with a Device per switch), so everything goes through gRPC:
arbitration, SetForwardingPipelineConfig, wildcard Reads, batched Writes with per-update errors.
The program is compiled once per module; the devices load that compiled program when the
pushed device config is the same bytes (parsing it again per switch would cost seconds).
"""
from __future__ import annotations

import copy
import io
import json
import time
from pathlib import Path

import pytest
from scapy.all import IP, UDP, Ether, Raw, raw
from scapy.contrib.roce import BTH

from control_plane import contract
from control_plane.cli import main as stellarctl
from control_plane.inprocess import apply_document
from control_plane.model import Fabric, load_fabric
from control_plane.ops import ROUTING_TABLES, fabric_without_link, fail_link, failover_documents, find_link
from control_plane.p4rt import (Change, P4RuntimePushError, ProgramFiles, SwitchSession, SwitchState, compute_diff,
                                push_fabric)
from control_plane.render import entry_identity, render_fabric
import p4sim
from p4sim.compiler import compile_files
from p4sim.p4rt import Device, DeviceOptions, P4RuntimeServer
from p4sim.p4rt.client import P4RuntimeClient
from p4sim.program import Program

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "fabrics" / "lab.yaml"
STELLAR = ROOT / "p4src" / "v1model" / "stellar.p4"
PATH_SET = "StellarIngress.routing.path_set"
LIVENESS0 = "StellarIngress.failover.liveness0"
LPM = "StellarIngress.routing.lpm"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    out = tmp_path_factory.mktemp("stellar")
    ir_program = compile_files(str(STELLAR), include_dirs=[str(ROOT / "p4src")], out_json=out / "stellar.json",
                               p4info_out=out / "stellar.p4info.txtpb")
    program = Program(ir_program)
    program.code()
    return {"files": ProgramFiles.load(out / "stellar.json", out / "stellar.p4info.txtpb"), "program": program,
            "json": out / "stellar.json", "p4info": out / "stellar.p4info.txtpb"}


@pytest.fixture(scope="module")
def fabric() -> Fabric:
    return load_fabric(LAB)


@pytest.fixture(scope="module")
def documents(fabric):
    return render_fabric(fabric).documents


class LabServers:
    """One P4Runtime server per switch of the fabric (device ids from the YAML)."""

    def __init__(self, fabric: Fabric, compiled: dict) -> None:
        self.devices: dict[str, Device] = {}
        self.servers: dict[str, P4RuntimeServer] = {}
        self.addresses: dict[str, str] = {}
        self.sent: dict[str, list[tuple[int, bytes]]] = {}
        program, config = compiled["program"], compiled["files"].device_config

        def loader(data: bytes):
            return program if data == config else Program.from_device_config(data)

        try:
            for name, sw in fabric.switches.items():
                device = Device(DeviceOptions(device_id=sw.device_id, clock="virtual",
                                              priority_queues=fabric.dataplane.priority_queues),
                                program_loader=loader)
                self.sent[name] = []
                device.transmit = lambda port, data, box=self.sent[name]: box.append((port, data))
                server = P4RuntimeServer(device, "127.0.0.1:0")
                server.start()
                self.devices[name], self.servers[name] = device, server
                self.addresses[name] = f"127.0.0.1:{server.port}"
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        for server in self.servers.values():
            server.stop(0)


@pytest.fixture
def lab(fabric, compiled):
    servers = LabServers(fabric, compiled)
    yield servers
    servers.stop()


def session_for(lab: LabServers, fabric: Fabric, name: str, **kw) -> SwitchSession:
    sw = fabric.switches[name]
    return SwitchSession(lab.addresses[name], sw.device_id, name=name, **kw).connect()


def push(fabric, documents, lab, program=None, **kw):
    return push_fabric(fabric, documents, program, lab.addresses, progress=None, **kw)


def identities(doc) -> dict:
    return {entry_identity(e): e for e in doc["entries"] if not e.get("default_action")}


def assert_switch_holds(session: SwitchSession, doc) -> None:
    """The switch holds exactly the document's entries (same actions), defaults, meters, registers."""
    state = session.read_state(doc)
    want = identities(doc)
    assert set(state.entries) == set(want)
    diff = compute_diff(session.name, doc, state)
    assert diff.empty, diff.lines()


# ---------------------------------------------------------------------------------------------
def test_push_installs_exactly_the_rendered_entries_and_second_push_writes_nothing(fabric, documents, lab, compiled):
    first = push(fabric, documents, lab, compiled["files"])
    assert first.ok, {n: r.error for n, r in first.results.items()}
    for name, result in first.results.items():
        doc = documents[name]
        assert result.pipeline_pushed
        assert len(result.diff.inserts) == len(identities(doc))
        assert not result.diff.deletes
        assert result.diff.written == result.diff.total > 0
    for name in fabric.switches:
        with session_for(lab, fabric, name) as s:
            assert_switch_holds(s, documents[name])
            # read-back is in document form: a known leaf route with its action
            if name == "leaf1":
                routes = [e for e in s.read_entries(LPM) if e["match"]["hdr.ipv4.dst_addr"]["prefix_len"] == 24]
                assert {e["params"]["path_set_id"] for e in routes} == {2, 3, 4}
                # what was read back is itself a document the switch is in sync with
                held = s.read_state(documents[name]).as_document()
                assert len(held["entries"]) == len(documents[name]["entries"])
                assert held["meters"] == [{k: m[k] for k in ("name", "index", "cir", "cburst", "pir", "pburst")}
                                          for m in documents[name]["meters"]]
                assert s.reconcile(held, dry_run=True).empty

    stream = io.StringIO()  # the progress line: one line per finished switch when not a tty
    second = push_fabric(fabric, documents, compiled["files"], lab.addresses, progress=stream)
    assert second.ok and second.in_sync
    lines = stream.getvalue().splitlines()
    assert len(lines) == len(fabric.switches)
    assert lines[-1].startswith("push lab: [######] 6/6 switches, 0 writes")
    for result in second.results.values():
        assert not result.pipeline_pushed
        assert result.diff.written == 0 and result.diff.batches == 0


def test_changed_document_produces_exactly_that_delta(fabric, documents, lab, compiled):
    assert push(fabric, documents, lab, compiled["files"], switches=["spine1", "leaf1"]).ok
    doc = copy.deepcopy(documents["leaf1"])
    to_leaf2 = next(e for e in doc["entries"] if e["table"] == PATH_SET and e["match"]["meta.route.path_set_id"] == 2)
    to_leaf2["params"]["level0"] = 12  # the controller's congestion level of member 0
    removed = next(e for e in doc["entries"] if e["table"] == LPM
                   and e["match"]["hdr.ipv4.dst_addr"] == {"value": "10.0.4.0", "prefix_len": 24})
    doc["entries"].remove(removed)
    added = {"table": LPM, "match": {"hdr.ipv4.dst_addr": {"value": "10.0.9.0", "prefix_len": 24}},
             "action": "StellarIngress.routing.set_path_set", "params": {"path_set_id": 3}}
    doc["entries"].append(added)
    doc["meters"][0] = dict(doc["meters"][0], cir=doc["meters"][0]["cir"] // 2)
    liveness = next(e for e in doc["entries"] if e["table"] == LIVENESS0)
    liveness["action"] = "StellarIngress.failover.port_down"   # controller-owned state: a table

    with session_for(lab, fabric, "leaf1") as s:
        preview = s.reconcile(doc, dry_run=True)
        assert preview.written == 0
        assert_switch_holds(s, documents["leaf1"])  # a dry run changes nothing
        diff = s.reconcile(doc)
        assert [entry_identity(c.item) for c in diff.deletes] == [entry_identity(removed)]
        assert [c.item for c in diff.inserts] == [added]
        assert sorted((c.kind, c.describe()) for c in diff.modifies) == sorted([
            ("entry", f"{PATH_SET} meta.route.path_set_id=2"),
            ("meter", f"meter {doc['meters'][0]['name']}[{doc['meters'][0]['index']}]"),
            ("entry", f"{LIVENESS0} {next(iter(liveness['match']))}={next(iter(liveness['match'].values()))}")])
        assert diff.written == 5 and preview.summary() == diff.summary() == "+1 ~3 -1"
        assert f"~ {PATH_SET} meta.route.path_set_id=2: level0 0 => 12" in diff.lines()
        assert f"- {LPM} hdr.ipv4.dst_addr=10.0.4.0/24 -> StellarIngress.routing.set_path_set(path_set_id=4)" \
            in diff.lines()
        assert_switch_holds(s, doc)
        assert s.reconcile(doc).written == 0
        # and back to the rendered document: exactly the reverse
        back = s.reconcile(documents["leaf1"])
        assert back.summary() == "+1 ~3 -1"
        assert_switch_holds(s, documents["leaf1"])
    # the other switches were not touched
    others = push(fabric, documents, lab, compiled["files"], dry_run=True, switches=["spine1", "leaf1"])
    assert others.in_sync


def test_bad_entry_names_switch_entry_and_code_and_the_rest_is_applied(fabric, documents, lab, compiled):
    docs = copy.deepcopy(documents)
    bad = {"table": LPM, "match": {"hdr.ipv4.dst_addr": {"value": "10.0.9.0", "prefix_len": 24}},
           "action": "StellarIngress.routing.set_path_set", "params": {"path_set_id": 70000}}  # 16-bit param
    docs["leaf2"]["entries"].insert(5, bad)
    three = ["spine1", "leaf1", "leaf2"]
    result = push(fabric, docs, lab, compiled["files"], batch_size=16, switches=three)
    assert not result.ok
    failed = result.results["leaf2"]
    assert failed.error is not None
    assert "leaf2" in failed.error and "OUT_OF_RANGE" in failed.error
    assert f"INSERT {LPM} hdr.ipv4.dst_addr=10.0.9.0/24" in failed.error
    assert [e.code for e in failed.write_errors] == ["OUT_OF_RANGE"]
    assert failed.diff.written == failed.diff.total - 1
    assert all(r.ok for n, r in result.results.items() if n != "leaf2")
    with session_for(lab, fabric, "leaf2") as s:
        assert_switch_holds(s, documents["leaf2"])  # everything else of leaf2 went in
    # a fixed document converges with exactly the one insert
    docs["leaf2"]["entries"][5]["params"]["path_set_id"] = 3
    again = push(fabric, docs, lab, compiled["files"], switches=three)
    assert again.ok and again.results["leaf2"].diff.summary() == "+1 ~0 -0"
    assert all(r.diff.empty for n, r in again.results.items() if n != "leaf2")


def test_pipeline_pushed_only_when_the_switch_runs_another(fabric, documents, lab, compiled):
    files = compiled["files"]
    sw = fabric.switches["spine1"]
    other = P4RuntimeClient(lab.addresses["spine1"], device_id=sw.device_id, election_id=(0, 5))
    other.connect()
    other.set_pipeline(files.p4info, files.device_config, cookie=1234)  # same program, foreign cookie
    other.close()
    with session_for(lab, fabric, "spine1", election_id=(0, 6)) as s:
        assert s.ensure_pipeline(files.p4info, files.device_config) is True
        assert s.current_pipeline()[1] == files.cookie
        s.reconcile(documents["spine1"])
        assert s.ensure_pipeline(files.p4info, files.device_config) is False
        assert_switch_holds(s, documents["spine1"])  # not wiped by the second ensure


def test_packets_through_a_switch_configured_over_p4runtime_match_in_process(fabric, documents, lab, compiled):
    assert push(fabric, documents, lab, compiled["files"], switches=["leaf1"]).ok
    reference = p4sim.Switch(compiled["program"], clock="virtual", priority_queues=fabric.dataplane.priority_queues)
    apply_document(reference, documents["leaf1"])
    frames = []
    for dst, qp in (("l1g2", 7), ("l2g1", 8), ("l3g3", 9)):
        s, d = fabric.hosts["l1g1"], fabric.hosts[dst]
        frames.append(raw(Ether(src=s.mac, dst=fabric.switches["leaf1"].mac)
                          / IP(src=str(s.ip), dst=str(d.ip), tos=(26 << 2) | 2, ttl=64)
                          / UDP(sport=49152 + qp, dport=4791) / BTH(opcode=4, dqpn=qp, psn=1) / Raw(b"\x00" * 64)))
    device = lab.devices["leaf1"]
    for frame in frames:
        device.inject(1, frame)
        device.advance(50)
        reference.send(1, frame)
        reference.advance(50)
    expected = reference.take_output()
    assert len(expected) == 3 and expected[0][0] == 2  # l1g2 is on port 2
    assert lab.sent["leaf1"] == expected
    # negative control: a switch without the entries forwards none of them the same way
    empty = p4sim.Switch(compiled["program"], clock="virtual", priority_queues=fabric.dataplane.priority_queues)
    for frame in frames:
        empty.send(1, frame)
        empty.advance(50)
    assert empty.take_output() != expected


def test_controller_helpers_modify_levels_and_read_registers_and_counters(fabric, documents, lab, compiled):
    assert push(fabric, documents, lab, compiled["files"], switches=["leaf1"]).ok
    with session_for(lab, fabric, "leaf1") as s:
        entry = copy.deepcopy(next(e for e in documents["leaf1"]["entries"]
                                   if e["table"] == PATH_SET and e["match"]["meta.route.path_set_id"] == 3))
        entry["params"]["level1"] = 40
        assert s.modify_entries([entry]) == 1
        held = [e for e in s.read_entries(PATH_SET) if e["match"]["meta.route.path_set_id"] == 3]
        assert held[0]["params"]["level1"] == 40 and held[0]["params"]["level0"] == 0
        missing = dict(entry, match={"meta.route.path_set_id": 999})
        with pytest.raises(P4RuntimePushError) as exc:
            s.modify_entries([missing])
        assert "leaf1" in str(exc.value) and "meta.route.path_set_id=999" in str(exc.value)
        assert "NOT_FOUND" in str(exc.value)
        # (the session's generic register helpers, on a p4sim server; Stellar's controller itself
        # writes no registers: BMv2's PI refuses them)
        assert s.write_registers([("queue_qdelay_us", 10, 7)]) == 1
        assert s.read_registers(["queue_qdelay_us"], [9, 10]) == {"queue_qdelay_us": {9: 0, 10: 7}}
        assert len(s.read_registers(["queue_qdelay_us"])["queue_qdelay_us"]) == 4096  # no indexes = every cell
        before = s.read_counters(["StellarIngress.telemetry.rx_port"], [1])
        assert before == {"StellarIngress.telemetry.rx_port": {1: (0, 0)}}
        s_host, d_host = fabric.hosts["l1g1"], fabric.hosts["l1g2"]
        frame = raw(Ether(src=s_host.mac, dst=fabric.switches["leaf1"].mac)
                    / IP(src=str(s_host.ip), dst=str(d_host.ip)) / UDP(sport=1, dport=2) / Raw(b"y" * 50))
        lab.devices["leaf1"].inject(1, frame)
        lab.devices["leaf1"].advance(10)
        after = s.read_counters(["StellarIngress.telemetry.rx_port", "StellarEgress.telemetry.tx_port"],
                                {"StellarIngress.telemetry.rx_port": [1], "StellarEgress.telemetry.tx_port": [2]})
        assert after["StellarIngress.telemetry.rx_port"][1][0] == 1
        assert after["StellarEgress.telemetry.tx_port"][2][0] == 1
        # a full reconcile puts the rendered levels back (the documents name no registers)
        assert s.reconcile(documents["leaf1"]).summary() == "+0 ~1 -0"


def test_unreachable_switch_is_reported_and_the_others_are_pushed(fabric, documents, lab, compiled):
    addresses = dict(lab.addresses)
    lab.servers["spine2"].stop(0)
    result = push_fabric(fabric, documents, compiled["files"], addresses, progress=None, timeout=1.0,
                         switches=["spine2", "leaf4"])
    assert not result.results["spine2"].ok
    error = result.results["spine2"].error
    assert "spine2" in error and addresses["spine2"] in error and "not reachable" in error
    assert result.results["leaf4"].ok and result.results["leaf4"].diff.written > 0


def test_a_backup_client_cannot_reconcile(fabric, documents, lab, compiled):
    sw = fabric.switches["leaf3"]
    primary = P4RuntimeClient(lab.addresses["leaf3"], device_id=sw.device_id, election_id=(0, 50))
    primary.connect()
    try:
        with pytest.raises(P4RuntimePushError, match="leaf3: not primary"):
            session_for(lab, fabric, "leaf3", election_id=(0, 2))
    finally:
        primary.close()


# ---------------------------------------------------------------------------------------------
# diff computation without a switch
def test_compute_diff_orders_path_sets_before_routes_and_after_them_on_delete(documents):
    doc = documents["leaf1"]
    diff = compute_diff("leaf1", doc, SwitchState())
    tables = [c.item["table"] for c in diff.inserts]
    assert tables.index(PATH_SET) == 0 and PATH_SET not in tables[tables.count(PATH_SET):]
    full = SwitchState(entries=identities(doc))
    gone = compute_diff("leaf1", {"entries": []}, full)
    deleted = [c.item["table"] for c in gone.deletes]
    assert len(deleted) == len(full.entries) and deleted[-1] == PATH_SET
    assert deleted.index(PATH_SET) == len(deleted) - deleted.count(PATH_SET)
    kept = compute_diff("leaf1", {"entries": []}, full, managed_tables=[LPM])
    assert {c.item["table"] for c in kept.deletes} == {LPM}
    assert isinstance(kept.deletes[0], Change) and kept.deletes[0].line().startswith(f"- {LPM} hdr.ipv4.dst_addr=")


def test_phases_never_leave_a_route_pointing_at_a_missing_path_set():
    def path_set(ident: int, port: int) -> dict:
        params = {"count": 1, "ecmp": 0, **{f"port{i}": 0 for i in range(8)}, **{f"level{i}": 0 for i in range(8)}, "measured": 0}
        params["port0"] = port
        return {"table": PATH_SET, "match": {"meta.route.path_set_id": ident},
                "action": "StellarIngress.routing.set_members", "params": params}

    def route(ident: int) -> dict:
        return {"table": LPM, "match": {"hdr.ipv4.dst_addr": {"value": "10.0.9.0", "prefix_len": 24}},
                "action": "StellarIngress.routing.set_path_set", "params": {"path_set_id": ident}}

    held = [path_set(5, 9), path_set(7, 10), route(5)]
    state = SwitchState(entries={entry_identity(e): e for e in held})
    diff = compute_diff("leaf9", {"entries": [path_set(6, 10), route(6)]}, state)
    assert diff.summary() == "+1 ~1 -2"
    order = [[(c.op, c.describe()) for c in phase] for phase in diff.phases(state)]
    assert order == [
        [("delete", f"{PATH_SET} meta.route.path_set_id=7")],  # unused: freed first
        [("insert", f"{PATH_SET} meta.route.path_set_id=6")],  # the new target exists ...
        [("modify", f"{LPM} hdr.ipv4.dst_addr=10.0.9.0/24")],  # ... before the route moves to it
        [("delete", f"{PATH_SET} meta.route.path_set_id=5")],  # and the old one goes when unused
    ]
    # negative control: without the state (nothing known to be in use) the plain order applies
    assert [c.op for phase in diff.phases() for c in phase] == ["delete", "delete", "insert", "modify"]


# ---------------------------------------------------------------------------------------------
# failover documents and stellarctl
def test_failover_documents_route_around_the_link(fabric, documents):
    link = find_link(fabric, "spine1", "leaf1")
    assert (link.leaf, link.leaf_port, link.spine_port) == ("leaf1", 9, 1)
    docs = failover_documents(fabric, link)
    assert {e["table"] for d in docs.values() for e in d["entries"]} <= ROUTING_TABLES
    leaf1_sets = [e for e in docs["leaf1"]["entries"] if e["table"] == PATH_SET]
    for entry in leaf1_sets:
        ports = [entry["params"][f"port{i}"] for i in range(entry["params"]["count"])]
        assert 9 not in ports, entry
    spine1_routes = [e for e in docs["spine1"]["entries"] if e["table"] == LPM]
    assert "10.0.1.0" not in {e["match"]["hdr.ipv4.dst_addr"]["value"] for e in spine1_routes}
    # no register writes at all (BMv2's P4Runtime refuses them); fail_link marks the ports down
    # in the liveness tables, which these routing-only documents leave alone
    assert all(d["registers"] == [] for d in docs.values())
    # other leaves stop using spine1 towards leaf1 only
    leaf2_to_leaf1 = next(e for e in docs["leaf2"]["entries"]
                          if e["table"] == PATH_SET and e["match"]["meta.route.path_set_id"] == 1)
    assert leaf2_to_leaf1["params"]["count"] == 1 and leaf2_to_leaf1["params"]["port0"] == 10
    assert len(fabric_without_link(fabric, link).links) == len(fabric.links) - 1
    with pytest.raises(ValueError, match="no link between leaf1 and leaf2"):
        find_link(fabric, "leaf1", "leaf2")


def test_fail_link_with_a_dead_end_still_reroutes_the_rest(fabric, documents, lab, compiled):
    assert push(fabric, documents, lab, compiled["files"]).ok
    lab.servers["spine1"].stop(0)  # the spine at one end of the link is what died
    report = fail_link(fabric, "leaf1", "spine1", addresses=lab.addresses, timeout=1.0)
    assert not report.ok
    assert len(report.port_down_errors) == 1 and "spine1" in report.port_down_errors[0]
    assert report.port_down_ms is not None and report.port_down_ms <= report.last_ack_ms
    assert "port_down NOT set: switch spine1" in report.text()
    assert not report.push.results["spine1"].ok
    assert all(r.ok for n, r in report.push.results.items() if n != "spine1")
    with session_for(lab, fabric, "leaf1") as s:
        assert liveness_of(s, 9) == {"port_down"}
    with session_for(lab, fabric, "leaf3") as s:  # leaf3 reaches leaf1 through spine2 only now
        to_leaf1 = next(e for e in s.read_entries(PATH_SET) if e["match"]["meta.route.path_set_id"] == 1)
        assert (to_leaf1["params"]["count"], to_leaf1["params"]["port0"]) == (1, 10)


def liveness_of(session, port: int) -> set[str]:
    """The actions the port's entries in the eight liveness tables hold ({"port_down"}: dead)."""
    found = []
    for i, table in enumerate(contract.LIVENESS_TABLES):
        found += [e["action"].rsplit(".", 1)[1] for e in session.read_entries(table)
                  if e["match"] == {f"meta.route.port{i}": port}]
    assert len(found) == 8, found
    return set(found)


def lab_yaml_at(tmp_path: Path, lab: LabServers, fabric: Fabric) -> Path:
    text = LAB.read_text()
    for name, sw in fabric.switches.items():
        text = text.replace(f"p4runtime: {sw.p4runtime}", f"p4runtime: {lab.addresses[name]}")
    path = tmp_path / "lab.yaml"
    path.write_text(text)
    return path


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = stellarctl(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def test_stellarctl_push_diff_stats_fail_link(tmp_path, fabric, lab, compiled):
    path = lab_yaml_at(tmp_path, lab, fabric)
    code, out, err = run("diff", str(path), "--switch", "leaf1")
    assert code == 1 and "no forwarding pipeline" in out
    program = ["--program-json", str(compiled["json"]), "--p4info", str(compiled["p4info"])]
    code, out, err = run("push", str(path))  # compiles p4src/v1model/stellar.p4 itself
    assert code == 0, out + err
    assert "all in sync" in out and "6/6 switches" in err
    code, out, err = run("diff", str(path), *program)
    assert code == 0 and out.count("in sync") == 6, out
    code, out, err = run("push", str(path), *program, "--quiet")
    assert code == 0 and out == "" and err == ""  # quiet: nothing on success

    # traffic through leaf1, then its counters
    s, d = fabric.hosts["l1g1"], fabric.hosts["l1g2"]
    frame = raw(Ether(src=s.mac, dst=fabric.switches["leaf1"].mac) / IP(src=str(s.ip), dst=str(d.ip), ttl=64)
                / UDP(sport=1000, dport=2000) / Raw(b"x" * 40))
    lab.devices["leaf1"].inject(1, frame)
    lab.devices["leaf1"].advance(20)
    code, out, err = run("stats", str(path), "--switch", "leaf1")
    assert code == 0, err
    port1 = next(line for line in out.splitlines() if line.strip().startswith("1 "))
    port2 = next(line for line in out.splitlines() if line.strip().startswith("2 "))
    assert port1.split()[2] == "1" and port1.split()[4] == "0"  # rx 1 packet on port 1
    assert port2.split()[2] == "0" and port2.split()[4] == "1"  # tx 1 packet on port 2
    assert "path changes:" in out and "drops: none" in out
    code, out, err = run("stats", str(path), "--switch", "leaf1", "--json")
    data = json.loads(out)["leaf1"]
    assert code == 0 and data["rx"]["1"] == [1, len(frame)] and data["tx"]["2"][0] == 1
    assert sum(v[0] for k, v in data["tx_queue"].items() if k.startswith("2/")) == 1
    # one flow, placed once (CONTRACT.md §1: reason `new`)
    assert data["path_changes"] == {"new": 1, "gap": 0, "drain": 0, "failover": 0, "membership": 0, "explore": 0, "suspect": 0, "restart": 0}

    code, out, err = run("fail-link", str(path), "leaf1", "spine1")
    assert code == 0, out + err
    assert "port_down set on leaf1 port 9 and spine1 port 1" in out and "ms after the command" in out
    with session_for(lab, fabric, "leaf1") as sess:
        assert liveness_of(sess, 9) == {"port_down"} and liveness_of(sess, 10) == {"port_up"}
        sets = [e for e in sess.read_entries(PATH_SET) if e["params"]["port0"] in (9, 10)
                and e["match"]["meta.route.path_set_id"] < 0x1000]
        assert sets and all(e["params"]["count"] == 1 and e["params"]["port0"] == 10 for e in sets)
        # only the routing tables were reconciled: per-port MAC and ECN entries are all still there
        assert len(sess.read_entries("StellarEgress.rewrite.port_mac")) == len(fabric.switches["leaf1"].ports)
        assert len(sess.read_entries("StellarEgress.ecn.config")) == len(fabric.switches["leaf1"].ports)
    with session_for(lab, fabric, "spine1") as sess:
        assert liveness_of(sess, 1) == {"port_down"}
    # the YAML still has the link, so the fabric is now out of sync with it; with the failure
    # fail-link recorded (what diff renders by default) it is in sync
    code, out, err = run("diff", str(path), "--ignore-state")
    assert code == 1 and "differs" in out
    code, out, err = run("diff", str(path))
    assert code == 0 and "1 failed link(s)" in err, out + err
    code, out, err = run("fail-link", str(path), "leaf1", "leaf2")
    assert code == 1 and "no link between leaf1 and leaf2" in err


def test_controller_failover_over_p4runtime_writes_every_switch_and_the_switches_hold_the_replan(
        fabric, documents, lab, compiled):
    """The controller's delta over real sessions (submit_many: every switch at once): each switch
    then holds the path sets of a full re-plan without the link, and the ports are marked down."""
    from control_plane.controller import Controller
    from control_plane.plan import plan_fabric

    assert push(fabric, documents, lab, compiled["files"]).ok
    rendered = render_fabric(fabric)
    sessions = {n: session_for(lab, fabric, n, election_id=(0, 2)) for n in fabric.switches}
    try:
        controller = Controller(fabric, sessions, rendered.plans, rendered.documents)
        link = fabric.link("leaf1", "spine2")
        report = controller.handle_link_failure("leaf1", "spine2", [("leaf1", link.leaf_port),
                                                                    ("spine2", link.spine_port)])
        assert report.entries_written == 6 and report.switches_written == 5
        assert 0 < report.first_ack_ms <= report.wall_ms
        replanned = plan_fabric(fabric.without_links([("leaf1", "spine2")]), None)
        for name, plan in replanned.items():
            held = {e["match"]["meta.route.path_set_id"]: e["params"] for e in sessions[name].read_entries(PATH_SET)}
            for ps in plan.path_sets:
                params = held[ps.id]
                assert [params[f"port{i}"] for i in range(params["count"])] == [m.port for m in ps.slots], (name, ps.id)
        assert liveness_of(sessions["leaf1"], link.leaf_port) == {"port_down"}
        assert liveness_of(sessions["spine2"], link.spine_port) == {"port_down"}

        # a refused write in one switch's job is raised, naming that switch; the others went in
        good = next(e for e in documents["leaf2"]["entries"] if e["table"] == PATH_SET)
        bad = dict(good, match={"meta.route.path_set_id": 999})
        outcome = SwitchSession.submit_many([
            (sessions["leaf2"], SwitchSession.entry_changes([good])),
            (sessions["leaf3"], SwitchSession.entry_changes([bad]))]).result(timeout=30)
        assert outcome[0] == 1
        assert isinstance(outcome[1], P4RuntimePushError) and "leaf3" in str(outcome[1])
        assert "NOT_FOUND" in str(outcome[1])
    finally:
        for s in sessions.values():
            s.close()


@pytest.fixture()
def pi_refuses_registers(monkeypatch):
    """The P4Runtime servers answer every register read or write as simple_switch_grpc's PI does
    (UNIMPLEMENTED), so what passes here passes on BMv2 as far as registers go."""
    from p4sim.p4rt import reads, writes
    from p4sim.p4rt.errors import P4RTError

    def refuse(*_args, **_kw):
        raise P4RTError("UNIMPLEMENTED", "Register reads are not supported yet")

    monkeypatch.setitem(writes._HANDLERS, "register_entry", refuse)
    monkeypatch.setitem(reads._READERS, "register_entry", refuse)


def test_push_congestion_map_and_fail_link_need_no_register_access(fabric, documents, lab, compiled,
                                                                    pi_refuses_registers):
    from control_plane.controller import Controller

    assert push(fabric, documents, lab, compiled["files"]).ok      # the documents hold no registers
    with session_for(lab, fabric, "leaf1") as s:                   # negative control: refused
        with pytest.raises(P4RuntimePushError, match="UNIMPLEMENTED"):
            s.read_registers(["queue_qdelay_us"], [0])
    sessions = {n: session_for(lab, fabric, n, election_id=(0, 2)) for n in fabric.switches}
    try:
        rendered = render_fabric(fabric)
        controller = Controller(fabric, sessions, rendered.plans, rendered.documents)
        cmap = controller.step(now_us=0)                            # counters only
        assert cmap.qdelay_us and set(cmap.qdelay_us.values()) == {0}
        controller.mark_ports_down([("leaf1", 10)])                  # table writes only
        assert liveness_of(sessions["leaf1"], 10) == {"port_down"}
    finally:
        for s in sessions.values():
            s.close()
    report = fail_link(fabric, "leaf1", "spine1", addresses=lab.addresses)
    assert report.ok and report.port_down_ms is not None, report.text()
    with session_for(lab, fabric, "spine1") as s:
        assert liveness_of(s, 1) == {"port_down"}


def test_an_election_id_held_by_a_live_client_is_refused_and_a_closed_ones_is_reusable(fabric, lab):
    """The spec's INVALID_ARGUMENT for a duplicate election id reaches the caller once the
    release window (SwitchSession.ELECTION_ID_RELEASE_S) has passed; an id whose session was
    just closed is taken again without an error (the window covers the server's release)."""
    held = session_for(lab, fabric, "spine1", election_id=(0, 77))
    try:
        started = time.monotonic()
        with pytest.raises(P4RuntimePushError, match="INVALID_ARGUMENT: election id .* already used"):
            session_for(lab, fabric, "spine1", election_id=(0, 77))
        assert time.monotonic() - started >= SwitchSession.ELECTION_ID_RELEASE_S
    finally:
        held.close()
    for _ in range(3):  # close and reconnect at once, as push() then session_for() do
        session_for(lab, fabric, "spine1", election_id=(0, 77)).close()
