"""The design's traffic classes and scheduler weights, end to end on the real stellar.p4 in p4sim.

A two-tenant fabric is rendered by the control plane and installed on leaf1; tenant `batch`
floods the shared uplink at line rate with elastic traffic (DSCP 32) while tenant `llm`'s
critical job (DSCP 63) sends at line rate too.  The uplink is rate-limited in virtual time.  The
controller's class scheduler (control_plane.scheduler.ClassScheduler) runs every interval: it
reads the per-queue byte counters, updates the usage history, recomputes the weights and pushes
them to the switch.  The critical job must get its weighted share within 5% in every interval.
Negative controls: the same run with weights off (strict priority, BMv2's default) and with the
formula off (equal weights) misses the share by far more than 5%.
"""
from __future__ import annotations

from dataclasses import replace

import pytest

from control_plane.inprocess import apply_document
from control_plane.model import Fabric, load_fabric_text
from control_plane.render import render_fabric
from fabric_sim.roce import RoceFlowTemplate
from control_plane.scheduler import ClassScheduler, InProcessQueues
from tests.stellar.fabric2 import unshim

FABRIC = """\
name: two-tenants
dataplane:
  scheduler: {weights: true}
switches:
  - {name: spine1, role: spine, device_id: 100, p4runtime: "127.0.0.1:9600",
     ports: {1: {peer: "leaf1:9"}, 2: {peer: "leaf2:9"}}}
  - {name: leaf1, role: leaf, device_id: 1, p4runtime: "127.0.0.1:9501", subnet: 10.0.1.0/24,
     ports: {9: {peer: "spine1:1"}}}
  - {name: leaf2, role: leaf, device_id: 2, p4runtime: "127.0.0.1:9502", subnet: 10.0.2.0/24,
     ports: {9: {peer: "spine1:2"}}}
tenants:
  - {name: batch, class: elastic, guaranteed_share: 0.4, subnets: [10.0.1.0/26, 10.0.2.0/26]}
  - {name: llm, class: critical, guaranteed_share: 0.4, alpha: 2.0, beta: 1.0,
     subnets: [10.0.1.64/26, 10.0.2.64/26]}
hosts:
  - {name: a1, ip: 10.0.1.1, mac: "02:00:00:00:01:01", leaf: leaf1, port: 1}
  - {name: a2, ip: 10.0.2.1, mac: "02:00:00:00:02:01", leaf: leaf2, port: 1}
  - {name: b1, ip: 10.0.1.65, mac: "02:00:00:00:01:41", leaf: leaf1, port: 2}
  - {name: b2, ip: 10.0.2.65, mac: "02:00:00:00:02:41", leaf: leaf2, port: 2}
jobs:
  - {name: loader, tenant: batch, collective: AllReduce, bandwidth_gbps: 50, hosts: [a1, a2]}
  - {name: sync, tenant: llm, collective: AllReduce, bandwidth_gbps: 50, hosts: [b1, b2], remaining_s: 1800}
"""
UPLINK = 9
RATE_PPS = 10_000  # the uplink in virtual time: 100 us per packet
INTERVAL_PKTS = 400  # controller interval, in packet times
INTERVALS = 5
TX_QUEUE = "StellarEgress.telemetry.tx_queue"

p4sim = pytest.importorskip("p4sim")


def fabric(weights: bool = True, equal: bool = False) -> Fabric:
    f = load_fabric_text(FABRIC, "two-tenants.yaml")
    dp = f.dataplane
    if not weights:
        dp = replace(dp, scheduler=replace(dp.scheduler, weights=False))
    if equal:  # the formula off: every class the same weight, whatever its jobs and usage
        dp = replace(dp, classes=tuple(replace(c, base_priority=1.0) if c.weighted else c for c in dp.classes))
        f = replace(f, tenants={n: replace(t, alpha=0.0, beta=0.0) for n, t in f.tenants.items()})
    return replace(f, dataplane=dp)


def run(program, f: Fabric) -> list[tuple[float, float]]:
    """(critical's measured share, the share its weight promises) per controller interval."""
    doc = render_fabric(f).documents["leaf1"]
    sw = p4sim.Switch(program, clock="virtual", priority_queues=f.dataplane.priority_queues)
    apply_document(sw, doc)
    sw.set_queue_rate(RATE_PPS, port=UPLINK)
    leaf = f.switches["leaf1"]
    flows = {}
    for src, dst, dscp, qp in (("a1", "a2", 32, 11), ("b1", "b2", 63, 12)):
        s, d = f.hosts[src], f.hosts[dst]
        flows[src] = RoceFlowTemplate(s.mac, leaf.mac, str(s.ip), str(d.ip), qp, payload_len=1000, dscp=dscp)
    scheduler = ClassScheduler(f, {"leaf1": InProcessQueues(sw)}, port_pps={("leaf1", UPLINK): RATE_PPS},
                               jobs=["loader", "sync"])
    queues = range(f.dataplane.priority_queues)

    def counters():  # what the controller reads: StellarEgress.telemetry.tx_queue of the uplink
        return {"leaf1": {(UPLINK, q): sw.counter_read(TX_QUEUE, UPLINK * 8 + q) for q in queues}}

    weights = scheduler.step_counters(counters())  # the baseline: no history yet
    gap = 1e6 / RATE_PPS
    results = []
    psn = 0
    for _ in range(INTERVALS):
        out = []
        for _ in range(INTERVAL_PKTS):  # both tenants offer line rate: twice what the uplink takes
            psn += 1
            sw.send(f.hosts["a1"].port, flows["a1"].packet(psn))
            sw.send(f.hosts["b1"].port, flows["b1"].packet(psn))
            sw.advance(gap)
            # without the path-feedback shim the rendered leaf adds on fabric links
            out.extend(unshim(bytes(frame)) for port, frame in sw.take_output() if port == UPLINK)
        critical = sum(1 for frame in out if frame[15] >> 2 == 63)
        elastic = sum(1 for frame in out if frame[15] >> 2 == 32)
        assert critical + elastic == len(out) and len(out) >= INTERVAL_PKTS - 1
        promised = weights["critical"].weight / (weights["critical"].weight + weights["elastic"].weight)
        results.append((critical / len(out), promised))
        # the controller's interval: per-queue byte counters since the last one -> usage -> weights
        weights = scheduler.step_counters(counters())
    return results


@pytest.fixture(scope="module")
def runs(stellar_program):
    return {"weights": run(stellar_program, fabric()),
            "weights off": run(stellar_program, fabric(weights=False)),
            "equal weights": run(stellar_program, fabric(equal=True))}


def within(measured: float, promised: float) -> bool:
    return abs(measured - promised) <= 0.05 * promised


def test_critical_job_keeps_its_weighted_share_against_a_line_rate_elastic_flood(runs):
    for measured, promised in runs["weights"]:
        assert within(measured, promised), runs["weights"]
    # the usage history moved the weights between intervals, and the shares followed
    promised = [p for _, p in runs["weights"]]
    assert max(promised) - min(promised) > 0.01, promised
    # and the elastic tenant was not starved: it got what its weight promised too
    assert all(1 - m > 0.2 for m, _ in runs["weights"])


def test_negative_control_weights_off_is_strict_priority_and_misses_the_share(runs):
    """Weights off: critical takes the whole link (elastic starves), not its share."""
    for measured, promised in runs["weights off"]:
        assert measured > 0.99 and not within(measured, promised), runs["weights off"]


def test_negative_control_equal_weights_miss_the_formulas_share(runs):
    """Same DWRR, weights without the formula (all equal): critical gets half, not its share."""
    target = [p for _, p in runs["weights"]]
    for (measured, _), promised in zip(runs["equal weights"], target):
        assert abs(measured - 0.5) < 0.03 and not within(measured, promised), runs["equal weights"]


def test_design_dscps_select_the_classes_queues(stellar_program):
    """DSCP 63 / 32 / 0 / 48 land in critical / elastic / background / control queues as rendered
    from the fabric defaults (no classes section in the YAML)."""
    f = fabric()
    sw = p4sim.Switch(stellar_program, clock="virtual", priority_queues=8)
    apply_document(sw, render_fabric(f).documents["leaf1"])
    s, d, leaf = f.hosts["a1"], f.hosts["b1"], f.switches["leaf1"]  # same leaf: no reservation hint
    expect = {63: "critical", 32: "elastic", 0: "background", 48: "control"}
    for qp, (dscp, name) in enumerate(expect.items(), start=1):
        sw.send(s.port, RoceFlowTemplate(s.mac, leaf.mac, str(s.ip), str(d.ip), qp, dscp=dscp).packet(1))
    sw.advance(100)
    assert len(sw.take_output()) == 4
    for dscp, name in expect.items():
        cls = f.dataplane.traffic_class(name)
        assert sw.counter_read(TX_QUEUE, d.port * 8 + cls.queue)[0] == 1, (dscp, name)
