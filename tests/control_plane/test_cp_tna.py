"""`stellarctl render --arch tna`: entries for the Tofino program (p4src/tna/stellar.p4).

What is checked against the real program, not against the control plane's own tables:
  - contract.TNA_TABLES / TNA_METERS / TNA_REGISTERS agree with the P4Info p4sim's TNA front end
    generates (bf-p4c's names: tables and externs prefixed with the pipe's name);
  - every table, action, match field and meter the render writes exists there;
  - the lab fabric's entries install into p4sim TNA switches and carry a packet
    leaf1 -> spine1 -> leaf2 -> the destination host's port; negative control: without the
    spine's route the packet is dropped there.
"""
from __future__ import annotations

import io
import json
from pathlib import Path
from dataclasses import replace

import pytest

p4sim = pytest.importorskip("p4sim")
from scapy.all import IP, UDP, Ether, Raw, raw  # noqa: E402

from control_plane import cli, contract  # noqa: E402
from control_plane.inprocess import apply_document  # noqa: E402
from control_plane.model import load_fabric  # noqa: E402
from control_plane.render import RenderError, render_fabric  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "p4src" / "tna" / "stellar.p4"
LAB = ROOT / "fabrics" / "lab.yaml"


@pytest.fixture(scope="module")
def program():
    return p4sim.compile(str(PROGRAM), defines={"__TARGET_TOFINO__": "1"})


@pytest.fixture(scope="module")
def lab():
    fabric = load_fabric(str(LAB))
    return fabric, render_fabric(fabric, arch="tna")


def _p4info_names(p4info):
    from p4.config.v1 import p4info_pb2
    actions = {a.preamble.id: a for a in p4info.actions}
    tables = {}
    for t in p4info.tables:
        keys = [(m.name, p4info_pb2.MatchField.MatchType.Name(m.match_type).lower(), m.bitwidth)
                for m in t.match_fields]
        acts = {actions[r.id].preamble.name: [(p.name, p.bitwidth) for p in actions[r.id].params]
                for r in t.action_refs}
        tables[t.preamble.name] = (keys, acts, t.size)
    return tables


def test_tna_contract_matches_the_programs_p4info(program) -> None:
    tables = _p4info_names(program.p4info)
    for name, table in contract.TNA_TABLES.items():
        assert name.startswith("pipe."), name
        assert name in tables, f"P4Info has no table {name}"
        keys, acts, size = tables[name]
        assert keys == [(k.name, k.kind, k.width) for k in table.keys], name
        for action, params in table.actions.items():
            assert action in acts, f"{name}: P4Info has no action {action}"
            assert acts[action] == list(params), action
        assert size == contract.table_size(table), f"{name}: size {size}"
    meters = {m.preamble.name: m.size for m in program.p4info.meters}
    for name, size in contract.TNA_METERS.items():
        assert meters.get(name) == contract.resolve_size(size), name
    registers = {r.preamble.name: r for r in program.p4info.registers}
    for name, (size, width) in contract.TNA_REGISTERS.items():
        assert registers[name].size == size
        assert registers[name].type_spec.bitstring.bit.bitwidth == width


def test_negative_control_the_v1model_names_are_not_the_tna_programs(program) -> None:
    tables = _p4info_names(program.p4info)
    assert not set(contract.TABLES) & set(tables)  # so the check above can fail


def test_every_rendered_name_is_in_the_tna_p4info(program, lab) -> None:
    tables = _p4info_names(program.p4info)
    meters = {m.preamble.name for m in program.p4info.meters}
    _, result = lab
    assert set(result.documents) == {"spine1", "spine2", "leaf1", "leaf2", "leaf3", "leaf4"}
    used = set()
    for doc in result.documents.values():
        for entry in doc["entries"]:
            keys, acts, _ = tables[entry["table"]]
            assert entry["action"] in acts, entry
            assert set(entry.get("params", {})) == {p for p, _ in acts[entry["action"]]}, entry
            assert set(entry.get("match", {})) <= {k for k, _, _ in keys}, entry
            used.add(entry["table"])
        for meter in doc["meters"]:
            assert meter["name"] in meters
    # every mechanism the render configures is present
    for part in ("routing.lpm", "routing.reservation", "member_port.members", "path_choice.hash_member",
                 "dre.level0", "dre.level1", "failover.port_member", "qos.dscp_class", "qos.tenant",
                 "queueing.queue_map", "elephant.hint", "ecn.prob", "StellarIngress.params"):
        assert any(t.endswith(part) for t in used), part


def test_dre_level_widths_follow_the_port_rate() -> None:
    from control_plane.render_tna import dre_rows
    full, slow = dre_rows(100.0), dre_rows(40.0)
    assert full[1]["low"] == 100 and slow[1]["low"] == 40  # a 40 % port's levels are 40 % as wide
    # the 64 levels span the two-window estimate at line rate: 2 x 16.384 us x 100 Gb/s = 409.6 KB
    span = 2 * (1 << 14) * 100 // 8                        # bytes
    assert full[-1]["low"] * 64 == 63 * span // 64         # the top level starts at 63/64 of it (64 B units)
    assert full[-1]["high"] == slow[-1]["high"] == 0xFFFF  # open-ended: saturation never reads 0
    assert [r["level"] for r in full] == list(range(64))


def test_cli_render_arch_tna_writes_the_documents(tmp_path) -> None:
    out, err = io.StringIO(), io.StringIO()
    assert cli.main(["render", str(LAB), "--arch", "tna", "-o", str(tmp_path)], out, err) == 0, err.getvalue()
    doc = json.loads((tmp_path / "leaf1.json").read_text())
    assert all(e["table"].startswith("pipe.") for e in doc["entries"])
    with pytest.raises(SystemExit):
        cli.main(["render", str(LAB), "--arch", "psa"], io.StringIO(), io.StringIO())


def test_a_broken_tna_entry_is_refused() -> None:
    from control_plane.document import check as _check
    bad = {"table": "pipe.StellarIngress.routing.lpm", "match": {"hdr.ipv4.dst_addr": {"value": "10.0.2.0", "prefix_len": 24}},
           "action": "StellarIngress.routing.set_group", "params": {"group": 300, "count": 2, "prior": 0}}
    with pytest.raises(RenderError, match="does not fit in 8 bits"):
        _check("leaf1", [bad], [], [], contract.sizes(), contract.ARCHES["tna"])
    with pytest.raises(RenderError, match="unknown table"):  # a v1model name in a TNA document
        _check("leaf1", [dict(bad, table="StellarIngress.routing.lpm")], [], [], contract.sizes(), contract.ARCHES["tna"])



def test_dre_score_data_must_be_written_scaled() -> None:
    """dre.p4's score keeps its tie bit and member in its low four bits: a level, controller
    level or penalty that is not a multiple of TNA_DRE_SCORE_SCALE would change which member
    the tournament returns, so the contract refuses it (and takes the same level scaled)."""
    scale = contract.TNA_DRE_SCORE_SCALE
    level = {"table": "pipe.StellarIngress.dre.level1", "match": {"meta.group": 1, "meta.prior": 0, "q1": {"low": 0, "high": 24}},
             "action": "StellarIngress.dre.set_level1", "params": {"level": 3 * scale}, "priority": 1}
    levels = {"table": "pipe.StellarIngress.dre_base.levels", "match": {"meta.group": 1},
              "action": "StellarIngress.dre_base.set_levels",
              "params": {**{f"l{k}": scale * k for k in range(8)}, "measured": 0xFF}}
    tables = contract.TNA_TABLES
    assert contract.check_entry(level, tables) == [] and contract.check_entry(levels, tables) == []
    assert any("not a multiple of 16" in p for p in contract.check_entry(dict(level, params={"level": 3}), tables))
    unscaled = dict(levels, params={**levels["params"], "l5": 2 * 5})
    assert any("l5" in p and "multiple" in p for p in contract.check_entry(unscaled, tables))
    params = {"table": "pipe.StellarIngress.params", "default_action": True, "action": "StellarIngress.set_params",
              "params": {"flowlet_timeout": 1, "elephant_threshold": 1, "drain": 1, "dre_choice": 1,
                         "dre_delay_penalty": 32, "drain_margin": 0, "gap_needs_drain": 1,
                         "drain_any_flows": 1, "move_guards": 15}}
    assert contract.check_entry(params, tables) == []
    assert contract.check_entry(dict(params, params={**params["params"], "dre_delay_penalty": 24}), tables)

# ------------------------------------------------------------------ forwarding on p4sim TNA switches
def _switches(program, result, names):
    switches = {}
    for name in names:
        sw = p4sim.Switch(program, priority_queues=8)
        counts = apply_document(sw, result.documents[name])
        doc = result.documents[name]
        assert counts["entries"] == sum(not e.get("default_action") for e in doc["entries"]) > 0
        assert counts["meters"] == len(doc["meters"]) == 2
        switches[name] = sw
    return switches


def _hop(sw, port: int, pkt: bytes) -> list[tuple[int, bytes]]:
    sw.send(port, pkt)
    sw.advance(10)
    return sw.take_output()


def _leaf_spine_leaf(fabric, switches, pkt: bytes):
    """Send from l1g1 into leaf1; follow the packet along the fabric's links; return where it left."""
    out = _hop(switches["leaf1"], 1, pkt)
    assert len(out) == 1, out
    (up_port, pkt), = out
    link = fabric.switches["leaf1"].ports[up_port]
    assert link.peer_switch == "spine1", f"leaf1 sent it out port {up_port} ({link})"
    out = _hop(switches["spine1"], link.peer_port, pkt)
    if not out:
        return None
    (down_port, pkt), = out
    link = fabric.switches["spine1"].ports[down_port]
    assert link.peer_switch == "leaf2", f"spine1 sent it out port {down_port}"
    out = _hop(switches["leaf2"], link.peer_port, pkt)
    return out


def test_rendered_entries_forward_leaf_spine_leaf(program, lab) -> None:
    fabric, result = lab
    switches = _switches(program, result, ("leaf1", "spine1", "spine2", "leaf2"))
    dst_host = next(h for h in fabric.hosts.values() if h.leaf == "leaf2")
    delivered = None
    for sport in range(1234, 1250):   # find a flow hashed to spine1 (members: spine1, spine2)
        pkt = raw(Ether(src="02:00:00:00:01:01") / IP(src="10.0.1.1", dst=str(dst_host.ip), tos=26 << 2) /
                  UDP(sport=sport, dport=2000) / Raw(b"\x00" * 64))
        sw = switches["leaf1"]
        sw.send(1, pkt)
        sw.advance(10)
        (port, _), = sw.take_output()
        if fabric.switches["leaf1"].ports[port].peer_switch == "spine1":
            delivered = _leaf_spine_leaf(fabric, switches, pkt)
            break
    assert delivered is not None, "no flow went via spine1"
    assert len(delivered) == 1
    (port, data), = delivered
    assert port == dst_host.port
    assert Ether(data)[IP].dst == str(dst_host.ip) and Ether(data)[IP].ttl < 64
    # the last hop's MACs: leaf2's own and the host's (rewrite.port_mac, from the render)
    assert (Ether(data).src, Ether(data).dst) == (fabric.switches["leaf2"].mac, dst_host.mac)


def test_negative_control_without_the_mac_rows_the_frame_keeps_its_macs(program, lab) -> None:
    fabric, result = lab
    doc = dict(result.documents["leaf1"])
    doc["entries"] = [e for e in doc["entries"] if not e["table"].endswith("rewrite.port_mac")]
    assert len(doc["entries"]) < len(result.documents["leaf1"]["entries"])
    sw = p4sim.Switch(program, priority_queues=8)
    apply_document(sw, doc)
    dst_host = next(h for h in fabric.hosts.values() if h.leaf == "leaf2")
    pkt = raw(Ether(src="02:00:00:00:01:01", dst="02:00:00:00:00:aa") /
              IP(src="10.0.1.1", dst=str(dst_host.ip), tos=26 << 2) / UDP(sport=1234, dport=2000) / Raw(b"\x00" * 64))
    sw.send(1, pkt)
    sw.advance(10)
    (_, data), = sw.take_output()
    assert (Ether(data).src, Ether(data).dst) == ("02:00:00:00:01:01", "02:00:00:00:00:aa")


def test_negative_control_no_spine_route_no_forwarding(program, lab) -> None:
    fabric, result = lab
    spine_doc = dict(result.documents["spine1"])
    spine_doc["entries"] = [e for e in spine_doc["entries"]
                            if not (e["table"].endswith("routing.lpm") and e["match"]["hdr.ipv4.dst_addr"]["value"] == "10.0.2.0")]
    assert len(spine_doc["entries"]) < len(result.documents["spine1"]["entries"])
    switches = _switches(program, result, ("leaf1", "leaf2"))
    spine = p4sim.Switch(program, priority_queues=8)
    apply_document(spine, spine_doc)
    switches["spine1"] = spine
    dst_host = next(h for h in fabric.hosts.values() if h.leaf == "leaf2")
    for sport in range(1234, 1250):
        pkt = raw(Ether(src="02:00:00:00:01:01") / IP(src="10.0.1.1", dst=str(dst_host.ip), tos=26 << 2) /
                  UDP(sport=sport, dport=2000) / Raw(b"\x00" * 64))
        sw = switches["leaf1"]
        sw.send(1, pkt)
        sw.advance(10)
        (port, _), = sw.take_output()
        if fabric.switches["leaf1"].ports[port].peer_switch == "spine1":
            assert _leaf_spine_leaf(fabric, switches, pkt) is None
            return
    pytest.fail("no flow went via spine1")


# ------------------------------------------------------------------ p4src/CONTRACT.md, section 9
def _tna_section() -> str:
    text = (ROOT / "p4src" / "CONTRACT.md").read_text()
    return text[text.index("## 9. The TNA program"):]


def test_contract_md_tna_section_is_the_p4info_and_contract_py(program) -> None:
    import re
    section = _tna_section()
    tables = _p4info_names(program.p4info)
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in section.splitlines() if line.startswith("| `pipe.")]
    documented = {}
    for cells in rows:
        name = cells[0].strip("`")
        if name in contract.TNA_TABLES:
            keys = [(k, kind, int(w)) for k, kind, w in re.findall(r"`([^`]+)` (\w+) (\d+)", cells[1])]
            actions = {a: [(p, int(w)) for p, w in re.findall(r"(\w+): (\d+)", ps)]
                       for a, ps in re.findall(r"`([\w.]+)` \(([^)]*)\)", cells[2])}
            documented[name] = (keys, actions)
    assert set(documented) == set(contract.TNA_TABLES)
    for name, (keys, actions) in documented.items():
        p4_keys, p4_actions, _ = tables[name]
        assert keys == p4_keys, name
        assert actions == {a: p4_actions[a] for a in actions} and set(actions) == set(contract.TNA_TABLES[name].actions), name
    externs = {cells[0].strip("`") for cells in rows} - set(documented)
    assert externs == set(contract.TNA_METERS) | set(contract.TNA_REGISTERS)
    # every P4Info table is either written (above) or named as not written
    unused = set(tables) - set(documented)
    for name in unused:
        short = name.rsplit(".", 1)[1]
        assert f"`{name}`" in section or f"`{short}`" in section, f"{name} is in neither list"


# ------------------------------------------------------------------ liveness from the rendered map
def _udp(src: str, dst: str, sport: int) -> bytes:
    return raw(Ether(src="02:00:00:00:01:01") / IP(src=src, dst=dst, tos=26 << 2) /
               UDP(sport=sport, dport=2000) / Raw(b"\x00" * 64))


def _leaf1_flows(program, doc, src: str) -> tuple[object, dict[int, int]]:
    sw = p4sim.Switch(program, priority_queues=8)
    apply_document(sw, doc)
    sw.enable_pktgen_port_down(1)   # the packet generator's port-down app (target config, not an entry)
    flows = {}
    for sport in range(2000, 2016):
        sw.send(1, _udp(src, "10.0.2.1", sport))
        sw.advance(10)
        (port, _), = sw.take_output()
        flows[sport] = port
    return sw, flows


SRC = "10.0.1.65"   # l1g3: no job reservation, so its flows use the uplink group


def test_port_down_moves_flows_with_the_rendered_liveness_map(program, lab) -> None:
    fabric, result = lab
    sw, flows = _leaf1_flows(program, result.documents["leaf1"], SRC)
    uplinks = sorted(p for p, port in fabric.switches["leaf1"].ports.items() if port.peer_switch)
    assert set(flows.values()) == set(uplinks), flows   # the group spreads flows over both spines
    dead, other = uplinks
    sw.set_port_up(dead, False)
    on_dead = [s for s, p in flows.items() if p == dead]
    for sport in on_dead:
        sw.send(1, _udp(SRC, "10.0.2.1", sport))
        sw.advance(10)
        assert [p for p, _ in sw.take_output()] == [other]


def test_negative_control_without_the_liveness_map_flows_black_hole(program, lab) -> None:
    fabric, result = lab
    doc = dict(result.documents["leaf1"])
    doc["entries"] = [e for e in doc["entries"] if not e["table"].endswith("failover.port_member")]
    sw, flows = _leaf1_flows(program, doc, SRC)
    dead = min(p for p, port in fabric.switches["leaf1"].ports.items() if port.peer_switch)
    sw.set_port_up(dead, False)
    on_dead = [s for s, p in flows.items() if p == dead]
    assert on_dead
    for sport in on_dead:
        sw.send(1, _udp(SRC, "10.0.2.1", sport))
    sw.advance(10)
    assert sw.take_output() == []


def test_a_job_reservation_pins_its_flows_to_the_reserved_spine(program, lab) -> None:
    """l1g1 (job moe) -> leaf2 is reserved on spine1 (group of port 9 alone); the unreserved
    source above spreads over both uplinks (the negative control: same leaf, no reservation)."""
    fabric, result = lab
    _, flows = _leaf1_flows(program, result.documents["leaf1"], "10.0.1.1")
    spine1_port = next(p for p, port in fabric.switches["leaf1"].ports.items() if port.peer_switch == "spine1")
    assert set(flows.values()) == {spine1_port}
    _, spread = _leaf1_flows(program, result.documents["leaf1"], SRC)
    assert len(set(spread.values())) == 2


# ------------------------------------------------------------------ the feedback mirror session
def test_leaves_carry_the_feedback_mirror_session_and_ecmp_or_v1model_none(lab) -> None:
    """Every leaf with a choice gets mirror session 1 -> port 68, truncated to 64 bytes (the
    numbers are the program's: MIRROR_SESSION_FEEDBACK, PKTGEN_PORT in p4src/tna/include/define.p4);
    spines (one member per destination, no feedback rows) none; path_mode ecmp none; the
    v1model documents (the program clones nothing) have no clone_sessions at all."""
    fabric, result = lab
    for name, doc in result.documents.items():
        feeds = any(e["table"].endswith("feedback.ports") for e in doc["entries"])
        want = [{"session_id": 1, "replicas": [{"egress_port": 68, "instance": 0}], "class_of_service": 0,
                 "packet_length_bytes": 64}] if feeds else []
        assert [{k: v for k, v in s.items() if k != "comment"} for s in doc["clone_sessions"]] == want, name
        assert feeds == (fabric.switches[name].role == "leaf")
    ecmp = replace(fabric, dataplane=replace(fabric.dataplane, path_mode="ecmp"))
    assert all(d["clone_sessions"] == [] for d in render_fabric(ecmp, arch="tna").documents.values())
    assert all("clone_sessions" not in d for d in render_fabric(fabric).documents.values())


def test_a_clone_session_the_target_refuses_is_a_render_error(lab, monkeypatch) -> None:
    from control_plane import render_tna

    fabric, _ = lab
    good = render_tna.feedback_sessions(fabric, True)
    for bad, why in ((dict(good[0], packet_length_bytes=70000), "packet_length_bytes"),
                     (dict(good[0], session_id=2), "uses only"),
                     (dict(good[0], replicas=[{"egress_port": 68, "instance": 0}, {"egress_port": 69, "instance": 0}]),
                      "replicas")):
        monkeypatch.setattr(render_tna, "feedback_sessions", lambda f, r, bad=bad: [bad])
        with pytest.raises(RenderError, match=why):
            render_fabric(fabric, arch="tna")
    monkeypatch.setattr(render_tna, "feedback_sessions", lambda f, r: good)   # control
    render_fabric(fabric, arch="tna")
