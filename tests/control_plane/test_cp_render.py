"""Rendering: golden files, determinism, contract checks, forwarding correctness, speed."""
from __future__ import annotations

import dataclasses
import difflib
import ipaddress
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from control_plane import arches, contract, document, render
from control_plane.model import Fabric, load_fabric, load_fabric_text
from control_plane.render import RenderError, render_fabric, write_fabric

ROOT = Path(__file__).resolve().parents[2]
FABRICS = ROOT / "fabrics"
GOLDEN = Path(__file__).resolve().parent / "golden" / "lab"
UPDATE = os.environ.get("STELLAR_UPDATE_GOLDEN") == "1"


@pytest.fixture(scope="module")
def lab() -> Fabric:
    return load_fabric(FABRICS / "lab.yaml")


@pytest.fixture(scope="module")
def lab_render(lab: Fabric) -> render.RenderResult:
    return render_fabric(lab)


# ---------------------------------------------------------------------------------------------
# golden files and determinism
# ---------------------------------------------------------------------------------------------
def test_lab_render_matches_golden_files(lab: Fabric, lab_render, tmp_path: Path) -> None:
    """Set STELLAR_UPDATE_GOLDEN=1 to rewrite the golden files after an intended change."""
    written = write_fabric(lab_render, lab, tmp_path)
    if UPDATE:
        GOLDEN.mkdir(parents=True, exist_ok=True)
        for path in written:
            shutil.copy(path, GOLDEN / path.name)
    expected = sorted(p.name for p in GOLDEN.glob("*.json"))
    assert sorted(p.name for p in written) == expected
    for path in written:
        want = (GOLDEN / path.name).read_text()
        got = path.read_text()
        if got != want:
            diff = "".join(list(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                                     f"golden/{path.name}", "rendered"))[:40])
            pytest.fail(f"{path.name} differs from its golden file:\n{diff}")


def test_render_is_deterministic_across_processes(lab_render) -> None:
    """Same text in a fresh interpreter with a different hash seed (set/dict order traps)."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]);"
            "from control_plane.model import load_fabric; from control_plane.render import render_fabric;"
            "r = render_fabric(load_fabric(sys.argv[2])); sys.stdout.write(r.text('leaf2') + r.text('spine1'))")
    for seed in ("1", "4242"):
        out = subprocess.run([sys.executable, "-c", code, str(ROOT), str(FABRICS / "lab.yaml")],
                             env={**os.environ, "PYTHONHASHSEED": seed}, capture_output=True, text=True, check=True)
        assert out.stdout == lab_render.text("leaf2") + lab_render.text("spine1")


def test_documents_are_valid_json_with_one_entry_per_line(lab_render) -> None:
    text = lab_render.text("leaf1")
    doc = json.loads(text)
    assert doc == lab_render.documents["leaf1"]
    assert text.count("\n") >= len(doc["entries"]) + len(doc["registers"])


# ---------------------------------------------------------------------------------------------
# contract
# ---------------------------------------------------------------------------------------------
def test_every_entry_matches_the_contract(lab_render) -> None:
    for name, doc in lab_render.documents.items():
        for entry in doc["entries"]:
            assert contract.check_entry(entry) == [], (name, entry)


def test_contract_check_rejects_bad_entries() -> None:
    good = {"table": "StellarIngress.routing.lpm",
            "match": {"hdr.ipv4.dst_addr": {"value": "10.0.2.0", "prefix_len": 24}},
            "action": "StellarIngress.routing.set_path_set", "params": {"path_set_id": 3}}
    assert contract.check_entry(good) == []
    bad_width = {**good, "params": {"path_set_id": 70000}}
    assert "does not fit in 16 bits" in contract.check_entry(bad_width)[0]
    host_bits = {**good, "match": {"hdr.ipv4.dst_addr": {"value": "10.0.2.1", "prefix_len": 24}}}
    assert "past the prefix" in contract.check_entry(host_bits)[0]
    typo = {**good, "table": "StellarIngress.routing.lpn"}
    assert "unknown table" in contract.check_entry(typo)[0]
    no_priority = {"table": "StellarIngress.elephant.hint",
                   "match": {"hdr.ipv4.src_addr": {"value": "10.0.1.1", "mask": "255.255.255.255"}},
                   "action": "StellarIngress.elephant.hint_elephant", "params": {}}
    assert "priority" in contract.check_entry(no_priority)[0]
    missing_param = {**good, "params": {}}
    assert "missing ['path_set_id']" in contract.check_entry(missing_param)[0]


def test_contract_sizes_come_from_size_p4() -> None:
    known = contract.sizes()
    for table in contract.TABLES.values():
        if table.size_constant:
            assert table.size_constant in known, f"{table.size_constant} missing from size.p4"
            assert contract.table_size(table, known) == known[table.size_constant]


def test_a_template_typo_is_caught_before_any_switch_sees_it(lab: Fabric, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control for the contract check: break one name in a copy of the templates."""
    broken = tmp_path / "templates"
    v1model = arches.get("v1model")
    shutil.copytree(v1model.templates, broken)
    common = broken / "common.j2"
    common.write_text(common.read_text().replace('"StellarEgress.ecn.set_ecn_params"', '"StellarEgress.ecn.set_ecn"'))
    monkeypatch.setitem(arches.REGISTRY, "v1model", dataclasses.replace(v1model, templates=broken))
    with pytest.raises(RenderError) as caught:
        render_fabric(lab)
    message = str(caught.value)
    assert "unknown action 'StellarEgress.ecn.set_ecn'" in message
    assert message.startswith("spine1:") or message.startswith("leaf1:")


def test_table_overflow_is_an_error(lab: Fabric, monkeypatch: pytest.MonkeyPatch) -> None:
    real = contract.sizes()
    monkeypatch.setattr(contract, "sizes", lambda: {**real, "ROUTING_LPM_SIZE": 3})
    with pytest.raises(RenderError, match="StellarIngress.routing.lpm: [0-9]+ entries exceed the table size 3"):
        render_fabric(lab)


# ---------------------------------------------------------------------------------------------
# the entries forward correctly (walk packets through the rendered tables)
# ---------------------------------------------------------------------------------------------
def _ip(text: str) -> int:
    return int(ipaddress.IPv4Address(text))


class Tables:
    """Just enough of the pipeline's lookups to follow a packet through rendered entries."""

    def __init__(self, doc: dict[str, Any]):
        self.doc = doc
        self.by_table: dict[str, list[dict[str, Any]]] = {}
        for entry in doc["entries"]:
            self.by_table.setdefault(entry["table"], []).append(entry)

    def lpm(self, dst: str) -> int:
        best = None
        for e in self.by_table.get("StellarIngress.routing.lpm", []):
            m = e["match"]["hdr.ipv4.dst_addr"]
            net = ipaddress.IPv4Network(f"{m['value']}/{m['prefix_len']}")
            if ipaddress.IPv4Address(dst) in net and (best is None or net.prefixlen > best[0]):
                best = (net.prefixlen, e["params"]["path_set_id"])
        assert best is not None, f"{self.doc['switch']['name']}: no route to {dst}"
        return best[1]

    def reservation(self, src: str, dst: str):
        hits = []
        for e in self.by_table.get("StellarIngress.routing.reservation", []):
            ok = all((_ip(v) & _ip(m["mask"])) == _ip(m["value"])
                     for v, m in ((src, e["match"].get("hdr.ipv4.src_addr")), (dst, e["match"].get("hdr.ipv4.dst_addr")))
                     if m is not None)
            if ok:
                hits.append((e["priority"], e["params"]["path_set_id"]))
        return max(hits)[1] if hits else None

    def hinted_elephant(self, src: str, dst: str) -> bool:
        for e in self.by_table.get("StellarIngress.elephant.hint", []):
            m = e["match"]
            if all((_ip(v) & _ip(m[f]["mask"])) == _ip(m[f]["value"])
                   for v, f in ((src, "hdr.ipv4.src_addr"), (dst, "hdr.ipv4.dst_addr")) if f in m):
                return e["action"].endswith("hint_elephant")
        return False

    def members(self, path_set: int) -> list[int]:
        for e in self.by_table["StellarIngress.routing.path_set"]:
            if e["match"]["meta.route.path_set_id"] == path_set:
                p = e["params"]
                assert 1 <= p["count"] <= 8
                return [p[f"port{i}"] for i in range(p["count"])]
        raise AssertionError(f"{self.doc['switch']['name']}: path set {path_set} not installed")


def walk(fabric: Fabric, tables: dict[str, Tables], src: str, dst: str) -> tuple[set[str], set[str]]:
    """Every (end host, spine) a packet src->dst can reach taking any member at each hop."""
    s, d = fabric.hosts[src], fabric.hosts[dst]
    ends: set[str] = set()
    spines: set[str] = set()
    frontier = [(s.leaf, 0)]
    while frontier:
        switch, hops = frontier.pop()
        assert hops < 3, f"{src}->{dst}: more than 3 switches (loop?)"
        t = tables[switch]
        path_set = t.lpm(str(d.ip))
        reserved = t.reservation(str(s.ip), str(d.ip))
        for port_number in t.members(reserved if reserved is not None else path_set):
            port = fabric.switches[switch].ports[port_number]
            if port.host is not None:
                ends.add(port.host)
            else:
                if fabric.switches[port.peer_switch].role == "spine":
                    spines.add(port.peer_switch)
                frontier.append((port.peer_switch, hops + 1))
    return ends, spines


def test_every_host_pair_is_delivered_to_the_right_host(lab: Fabric, lab_render) -> None:
    tables = {name: Tables(doc) for name, doc in lab_render.documents.items()}
    for src in lab.hosts:
        for dst in lab.hosts:
            if src != dst:
                ends, _ = walk(lab, tables, src, dst)
                assert ends == {dst}, f"{src}->{dst} reached {ends}"


def test_job_traffic_follows_its_reservation_and_other_traffic_does_not(lab: Fabric, lab_render) -> None:
    tables = {name: Tables(doc) for name, doc in lab_render.documents.items()}
    assignment = lab_render.assignment
    for job in ("moe", "dense"):
        allowed = set(assignment.partition[job])
        for flow in (f for f in assignment.flows if f.job == job and f.crosses_fabric):
            _, spines = walk(lab, tables, flow.src, flow.dst)
            assert spines == allowed, f"{job} flow {flow.src}->{flow.dst} may use {spines}"
            src_leaf = tables[lab.hosts[flow.src].leaf]
            assert src_leaf.hinted_elephant(str(lab.hosts[flow.src].ip), str(lab.hosts[flow.dst].ip))
    # l1g3 is in job dense but only sends job traffic to l1g4 (same leaf): to leaf3 it has no
    # reservation, so it may use every spine and is not hinted
    _, spines = walk(lab, tables, "l1g3", "l3g1")
    assert spines == {"spine1", "spine2"}
    assert not tables["leaf1"].hinted_elephant(str(lab.hosts["l1g3"].ip), str(lab.hosts["l3g1"].ip))


def test_reservations_off_renders_plain_routing(lab: Fabric) -> None:
    text = (FABRICS / "lab.yaml").read_text().replace("  path_mode: adaptive", "  reservations: false\n  path_mode: ecmp")
    fabric = load_fabric_text(text, "ecmp.yaml")
    result = render_fabric(fabric)
    leaf = result.documents["leaf1"]
    tables = {e["table"] for e in leaf["entries"]}
    assert "StellarIngress.routing.reservation" not in tables
    assert "StellarIngress.elephant.hint" not in tables
    path_sets = [e for e in leaf["entries"] if e["table"] == "StellarIngress.routing.path_set"]
    assert path_sets and all(e["params"]["ecmp"] == 1 for e in path_sets)


def test_port_macs_point_at_the_neighbour(lab: Fabric, lab_render) -> None:
    for name, doc in lab_render.documents.items():
        switch = lab.switches[name]
        macs = {e["match"]["standard_metadata.egress_port"]: e["params"] for e in doc["entries"]
                if e["table"] == "StellarEgress.rewrite.port_mac"}
        assert set(macs) == set(switch.ports)
        for number, port in switch.ports.items():
            want = lab.hosts[port.host].mac if port.host else lab.switches[port.peer_switch].mac
            assert macs[number] == {"src_mac": switch.mac, "dst_mac": want}


def test_parameters_reach_the_entries(lab: Fabric, lab_render) -> None:
    doc = lab_render.documents["spine2"]
    params = next(e for e in doc["entries"] if e["table"] == "StellarIngress.config.params")["params"]
    assert params["flowlet_timeout_us"] == lab.dataplane.flowlet.timeout_us
    assert params["drain_moves"] == 1 and params["elephant_bytes"] == 500000
    ecn = next(e for e in doc["entries"] if e["table"] == "StellarEgress.ecn.config")["params"]
    assert ecn["pmax"] == 13107  # 0.2 in 1/65536
    assert ecn["window_us"] == 8 and ecn["idle_bytes"] == 50000  # the default window; half of 100 Gbps for 8 us
    queue = {(e["match"]["meta.qos.traffic_class"], e["match"]["meta.flow.elephant"]): e["params"]["queue"]
             for e in doc["entries"] if e["table"] == "StellarIngress.queueing.queue_map"}
    assert queue[(2, 0)] == 6 and queue[(2, 1)] == 5 and queue[(3, 1)] == 7


def test_ecn_disabled_turns_marking_off_on_every_port(lab: Fabric) -> None:
    text = (FABRICS / "lab.yaml").read_text().replace("    enabled: true", "    enabled: false")
    doc = render_fabric(load_fabric_text(text, "no-ecn.yaml")).documents["leaf3"]
    actions = {e["action"] for e in doc["entries"] if e["table"] == "StellarEgress.ecn.config"}
    assert actions == {"StellarEgress.ecn.ecn_off"}


def test_tenant_meters(lab: Fabric, lab_render) -> None:
    meters = lab_render.documents["leaf1"]["meters"]
    llm = next(m for m in meters if m["index"] == 1)
    # llm: 60% of leaf1's 200 Gbps of uplinks guaranteed; may borrow the 10% nobody reserved
    assert llm["cir"] == 0.6 * 200 * 125_000_000
    assert llm["pir"] == 0.7 * 200 * 125_000_000
    assert llm["cburst"] == 128 * 1024


# ---------------------------------------------------------------------------------------------
# scale
# ---------------------------------------------------------------------------------------------
def test_cluster512_renders_in_seconds(tmp_path: Path) -> None:
    started = time.perf_counter()
    fabric = load_fabric(FABRICS / "cluster512.yaml")
    result = render_fabric(fabric)
    write_fabric(result, fabric, tmp_path)
    elapsed = time.perf_counter() - started
    entries = sum(len(d["entries"]) for d in result.documents.values())
    print(f"\ncluster512: {len(fabric.hosts)} GPUs, {len(result.documents)} switches, {entries} entries, "
          f"load+plan+render+write {elapsed:.2f}s")
    assert len(fabric.hosts) == 512
    assert elapsed < 60.0
    assert result.assignment is not None and result.assignment.isolated


def test_written_documents_read_back_identically(lab: Fabric, lab_render, tmp_path: Path) -> None:
    write_fabric(lab_render, lab, tmp_path)
    assert render.read_documents(tmp_path) == lab_render.documents


def test_entry_identity_ignores_text_form_and_detects_duplicates(lab: Fabric) -> None:
    a = {"table": "StellarIngress.routing.lpm", "match": {"hdr.ipv4.dst_addr": {"value": "10.0.2.0", "prefix_len": 24}},
         "action": "StellarIngress.routing.set_path_set", "params": {"path_set_id": 1}}
    b = {**a, "match": {"hdr.ipv4.dst_addr": {"value": 0x0A000200, "prefix_len": 24}}, "params": {"path_set_id": 2}}
    assert render.entry_identity(a) == render.entry_identity(b)
    c = {**a, "match": {"hdr.ipv4.dst_addr": {"value": "10.0.2.0", "prefix_len": 23}}}
    assert render.entry_identity(a) != render.entry_identity(c)
    with pytest.raises(RenderError, match="duplicates entry"):
        document.check("leafX", [a, b], [], [], contract.sizes())


# ---------------------------------------------------------------------------------------------
# a failed link: what the controller has to change
# ---------------------------------------------------------------------------------------------
def _state(doc: dict[str, Any]) -> dict[tuple, tuple]:
    return {render.entry_identity(e): (e["action"], json.dumps(e.get("params", {}), sort_keys=True))
            for e in doc["entries"]}


def test_failed_link_delta_is_small_and_avoids_the_link(lab: Fabric, lab_render) -> None:
    failed = lab.without_links([("spine1", "leaf1")])
    after = render_fabric(failed)
    changed: dict[str, set[str]] = {}
    for name, doc in after.documents.items():
        old, new = _state(lab_render.documents[name]), _state(doc)
        diff = {k for k in old.keys() | new.keys() if old.get(k) != new.get(k)}
        changed[name] = {k[0] for k in diff}
    # leaves only re-point path sets and job reservations; their routes keep their path-set ids
    for leaf in ("leaf1", "leaf2", "leaf3", "leaf4"):
        assert changed[leaf] <= {"StellarIngress.routing.path_set", "StellarIngress.routing.reservation",
                                 "StellarIngress.elephant.hint", "StellarEgress.ecn.config",
                                 "StellarEgress.rewrite.port_mac",
                                 "StellarIngress.placement.port_rate",
                                 # the capacity prior follows the re-pointed sets' members
                                 "StellarIngress.path_choice.prior",
                                 # the dead link's port no longer faces a switch (like its port_mac)
                                 "StellarIngress.feedback.port_kind",
                                 *(f"StellarIngress.failover.liveness{i}" for i in range(8))}, (leaf, changed[leaf])
    assert "StellarIngress.routing.lpm" not in changed["leaf2"]
    assert changed["spine2"] == set()  # nothing about spine2 changed
    assert "StellarIngress.routing.lpm" in changed["spine1"]  # it lost its route to leaf1
    # no surviving entry sends anything over the dead link, in either direction
    tables = {name: Tables(doc) for name, doc in after.documents.items()}
    for src in lab.hosts:
        for dst in lab.hosts:
            if src != dst:
                ends, spines = walk(failed, tables, src, dst)
                assert ends == {dst}
                if "leaf1" in (lab.hosts[src].leaf, lab.hosts[dst].leaf) and lab.hosts[src].leaf != lab.hosts[dst].leaf:
                    assert spines == {"spine2"}, (src, dst, spines)
    assert after.assignment is not None and not after.assignment.isolated  # moe lost its spine


def test_without_links_rejects_a_link_that_does_not_exist(lab: Fabric) -> None:
    with pytest.raises(ValueError, match="no link between leaf1 and leaf2"):
        lab.without_links([("leaf1", "leaf2")])
