"""The rendered lab entries, installed on six p4sim switches running the real stellar.p4.

Packets are carried hop by hop (output port -> the wired peer) until they reach a host port, so
these tests check what the entry files actually do on the program: delivery, MAC rewrite, TTL,
and that job reservations steer a job's flows onto its spines while other traffic spreads.
"""
from __future__ import annotations

from pathlib import Path

import pytest
from scapy.all import IP, UDP, Ether, Raw, raw
from scapy.contrib.roce import BTH

from control_plane.inprocess import apply_document
from control_plane.model import Fabric, load_fabric, load_fabric_text
from control_plane.render import render_fabric

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "fabrics" / "lab.yaml"
STELLAR = ROOT / "p4src" / "v1model" / "stellar.p4"

p4sim = pytest.importorskip("p4sim")
if not all(hasattr(p4sim, n) for n in ("compile", "Switch")):
    pytest.skip("p4sim in-process API (compile/Switch) not available", allow_module_level=True)


@pytest.fixture(scope="module")
def program():
    return p4sim.compile(str(STELLAR))


class Fabric6:
    """Every switch of a fabric on p4sim, wired as the model says."""

    def __init__(self, program, fabric: Fabric):
        self.fabric = fabric
        result = render_fabric(fabric)
        self.assignment = result.assignment
        self.switches = {}
        for name, doc in result.documents.items():
            sw = p4sim.Switch(program, clock="virtual", priority_queues=fabric.dataplane.priority_queues)
            counts = apply_document(sw, doc)
            assert counts["entries"] == sum(1 for e in doc["entries"] if not e.get("default_action"))
            self.switches[name] = sw

    def deliver(self, src: str, frame: bytes) -> tuple[str, bytes, list[str]]:
        """Carry `frame` from host `src`; return (host reached, frame as received, switches passed)."""
        host = self.fabric.hosts[src]
        at, port = host.leaf, host.port
        passed: list[str] = []
        for _ in range(4):
            sw = self.switches[at]
            passed.append(at)
            sw.send(port, frame)
            sw.advance(100)
            out = sw.take_output()
            assert len(out) == 1, f"{at}: expected one packet out, got {len(out)} (drops?)"
            out_port, frame = out[0]
            wired = self.fabric.switches[at].ports[out_port]
            if wired.host is not None:
                return wired.host, frame, passed
            at, port = wired.peer_switch, wired.peer_port
        raise AssertionError(f"{src}: packet still travelling after 4 switches: {passed}")


def roce(fabric: Fabric, src: str, dst: str, qp: int, psn: int = 1) -> bytes:
    s, d = fabric.hosts[src], fabric.hosts[dst]
    leaf = fabric.switches[s.leaf]
    return raw(Ether(src=s.mac, dst=leaf.mac) / IP(src=str(s.ip), dst=str(d.ip), tos=(26 << 2) | 2, ttl=64)
               / UDP(sport=49152 + qp, dport=4791) / BTH(opcode=4, dqpn=qp, psn=psn) / Raw(b"\x00" * 64))


@pytest.fixture(scope="module")
def lab_fabric(program) -> Fabric6:
    return Fabric6(program, load_fabric(LAB))


def test_every_host_reaches_every_host_with_rewritten_macs(lab_fabric: Fabric6) -> None:
    fabric = lab_fabric.fabric
    for src in fabric.hosts:
        for dst in fabric.hosts:
            if src == dst:
                continue
            reached, frame, passed = lab_fabric.deliver(src, roce(fabric, src, dst, qp=7))
            assert reached == dst, f"{src}->{dst} arrived at {reached} via {passed}"
            pkt = Ether(frame)
            same_leaf = fabric.hosts[src].leaf == fabric.hosts[dst].leaf
            assert len(passed) == (1 if same_leaf else 3)
            assert pkt[IP].ttl == 64 - len(passed)
            assert pkt.dst == fabric.hosts[dst].mac
            assert pkt.src == fabric.switches[fabric.hosts[dst].leaf].mac


def spines_used(fab: Fabric6, src: str, dst: str, qps: range) -> set[str]:
    used = set()
    for qp in qps:
        reached, _, passed = fab.deliver(src, roce(fab.fabric, src, dst, qp=qp))
        assert reached == dst
        used.add(passed[1])
    return used


def test_job_flows_stay_on_their_reserved_spines(lab_fabric: Fabric6) -> None:
    partition = lab_fabric.assignment.partition
    # moe: l1g1 -> l3g1 is one of its flows; many QPs, still only moe's spine
    assert spines_used(lab_fabric, "l1g1", "l3g1", range(1, 25)) == set(partition["moe"])
    # dense: l2g4 -> l3g3 is a ring hop across leaves
    assert spines_used(lab_fabric, "l2g4", "l3g3", range(1, 25)) == set(partition["dense"])


def test_unreserved_traffic_spreads_over_both_spines(lab_fabric: Fabric6) -> None:
    """Control for the test above: l1g3 has no job peer on leaf3, so its flows may use any spine."""
    assert spines_used(lab_fabric, "l1g3", "l3g1", range(1, 25)) == {"spine1", "spine2"}


def test_without_reservations_job_flows_spread_too(program) -> None:
    """Negative control: the same job flow with reservations switched off is not confined."""
    text = LAB.read_text().replace("  path_mode: adaptive", "  reservations: false\n  path_mode: adaptive")
    plain = Fabric6(program, load_fabric_text(text, "plain.yaml"))
    assert spines_used(plain, "l1g1", "l3g1", range(1, 25)) == {"spine1", "spine2"}


@pytest.mark.parametrize("name,switches", [("pod", None), ("cluster512", ("leaf1", "leaf32", "spine8"))])
def test_bigger_fabrics_are_accepted_by_the_program(program, name: str, switches) -> None:
    """Every entry of pod (and a leaf/spine sample of the 512-GPU cluster) installs without error."""
    fabric = load_fabric(ROOT / "fabrics" / f"{name}.yaml")
    result = render_fabric(fabric)
    for switch in switches or result.documents:
        doc = result.documents[switch]
        sw = p4sim.Switch(program, clock="virtual", priority_queues=8)
        counts = apply_document(sw, doc)
        assert counts["entries"] + counts["defaults"] == len(doc["entries"])
        lpm = sw.table_entries("StellarIngress.routing.lpm")
        assert len(lpm) == sum(1 for e in doc["entries"] if e["table"] == "StellarIngress.routing.lpm")
