"""Stellar on Tofino: ECN from the quantised table, elephants, tenants, reordering."""
from __future__ import annotations

from scapy.all import IP, Ether

from tna_leaf import (DROP_TENANT_RED, ECN_CE, ECN_ECT0, ECN_NOT_ECT, EGR, ING, TnaLeaf, roce)

DST = "10.0.2.9"


def _ecn(frame: bytes) -> int:
    return Ether(frame)[IP].tos & 3


def _ramp(leaf, port: int) -> None:
    """The controller's quantised ramp: no marks below 4 us, certain above 32 us."""
    sw = leaf.sw
    sw.insert_entry(f"{EGR}.ecn.prob", {"port": port, "meta.qdelay_8ns": (4_000 // 8, 31_999 // 8)},
                    f"{EGR}.ecn.set_prob", {"prob": 0x8000}, priority=10)
    sw.insert_entry(f"{EGR}.ecn.prob", {"port": port, "meta.qdelay_8ns": (32_000 // 8, 0xFFFF)},
                    f"{EGR}.ecn.set_prob", {"prob": 0xFFFF}, priority=20)


def _queued_pair(leaf, port_hint_qp: int, ecn: int, delay_us: float) -> list[int]:
    """Two packets of one flow back to back through a slow uplink: the second waits."""
    first = leaf.flow_port(port_hint_qp)
    leaf.sw.set_queue_rate(1e6 / delay_us, port=first)
    leaf.send(roce("10.0.1.1", DST, port_hint_qp, 1, ecn=ecn))
    leaf.send(roce("10.0.1.1", DST, port_hint_qp, 2, ecn=ecn))
    leaf.sw.advance(3 * delay_us)
    return [_ecn(f) for _, f in leaf.out()]


def test_ect_packets_behind_a_standing_queue_are_marked():
    leaf = TnaLeaf()
    _ramp(leaf, 2)
    _ramp(leaf, 3)
    assert _queued_pair(leaf, 9, ECN_ECT0, 40) == [ECN_ECT0, ECN_CE]


def test_negative_controls_no_queue_no_mark_and_not_ect_never_marked():
    leaf = TnaLeaf()
    _ramp(leaf, 2)
    _ramp(leaf, 3)
    assert _queued_pair(leaf, 9, ECN_ECT0, 1) == [ECN_ECT0, ECN_ECT0]   # 1 us: below Kmin
    leaf2 = TnaLeaf()
    _ramp(leaf2, 2)
    _ramp(leaf2, 3)
    assert _queued_pair(leaf2, 9, ECN_NOT_ECT, 40) == [ECN_NOT_ECT, ECN_NOT_ECT]


def test_elephant_goes_to_its_class_lower_queue_and_mice_stay():
    leaf = TnaLeaf(elephant_bytes=20_000)
    sw = leaf.sw
    for psn in range(40):                       # 40 x ~1.1 KB = ~44 KB in one window
        leaf.send(roce("10.0.1.1", DST, 3, psn, payload=1000))
    leaf.out()
    assert leaf.counter(f"{ING}.telemetry.elephants", 1) > 0
    mice = TnaLeaf(elephant_bytes=20_000)
    for psn in range(5):                        # negative control: a short flow stays a mouse
        mice.send(roce("10.0.1.1", DST, 3, psn, payload=1000))
    assert mice.counter(f"{ING}.telemetry.elephants", 1) == 0


def test_a_tenant_over_its_rate_is_dropped_red_and_another_tenant_is_not():
    leaf = TnaLeaf()
    sw = leaf.sw
    sw.insert_entry(f"{ING}.qos.tenant", {"hdr.ipv4.src_addr": (0x0A000100, 25)},
                    f"{ING}.qos.set_tenant", {"tenant_id": 1})
    sw.insert_entry(f"{ING}.qos.tenant", {"hdr.ipv4.src_addr": (0x0A000180, 25)},
                    f"{ING}.qos.set_tenant", {"tenant_id": 2})
    sw.meter_set_config(f"{ING}.qos.tenant_meter", 1, 1000, 200, 1000, 200)  # ~1 packet burst
    for psn in range(10):
        leaf.send(roce("10.0.1.1", DST, 1, psn))      # tenant 1: policed
        leaf.send(roce("10.0.1.200", DST, 2, psn))    # tenant 2: no meter configured
    out = leaf.out()
    srcs = [Ether(f)[IP].src for _, f in out]
    assert srcs.count("10.0.1.200") == 10
    assert srcs.count("10.0.1.1") < 10
    assert leaf.counter(f"{ING}.telemetry.drops", DROP_TENANT_RED) == 10 - srcs.count("10.0.1.1")


def _policed_flow_elephants(meter: bool) -> tuple[int, int]:
    """40 packets (~44 KB) of a tenant-1 flow, which with ``meter`` the tenant's meter passes
    about one of; then the meter opens and 3 more follow in the same sketch window.  Returns
    (packets of the 40 forwarded, elephant classifications among the 3)."""
    leaf = TnaLeaf(elephant_bytes=20_000)
    sw = leaf.sw
    sw.insert_entry(f"{ING}.qos.tenant", {"hdr.ipv4.src_addr": (0x0A000100, 25)},
                    f"{ING}.qos.set_tenant", {"tenant_id": 1})
    if meter:
        sw.meter_set_config(f"{ING}.qos.tenant_meter", 1, 1000, 200, 1000, 200)
    for psn in range(40):
        leaf.send(roce("10.0.1.1", DST, 3, psn, payload=1000))
    sent = len(leaf.out())
    before = leaf.counter(f"{ING}.telemetry.elephants", 1)
    sw.meter_set_config(f"{ING}.qos.tenant_meter", 1, 10**9, 10**6, 10**9, 10**6)
    for psn in range(40, 43):
        leaf.send(roce("10.0.1.1", DST, 3, psn, payload=1000))
    assert len(leaf.out()) == 3
    return sent, leaf.counter(f"{ING}.telemetry.elephants", 1) - before


def test_policed_bytes_do_not_make_a_flow_an_elephant():
    # The meter's verdict is applied at the end of ingress (stellar.p4), but the sketch
    # adds nothing for a red packet: the bytes the switch drops are not the flow's load.
    sent, elephants = _policed_flow_elephants(meter=True)
    assert sent < 5
    assert elephants == 0
    # negative control: the same 43 packets unpoliced: the flow is an elephant by then
    sent, elephants = _policed_flow_elephants(meter=False)
    assert sent == 40 and elephants == 3


def test_psn_regression_is_counted_at_egress():
    leaf = TnaLeaf()
    for psn in (1, 2, 3):
        leaf.send(roce("10.0.2.9", "10.0.1.1", 77, psn), port=2)
    assert leaf.counter(f"{EGR}.reorder.regressions", 0) == 0   # in order: nothing
    leaf.send(roce("10.0.2.9", "10.0.1.1", 77, 2), port=2)
    assert leaf.counter(f"{EGR}.reorder.regressions", 0) == 1


def _elephant_digests(leaf) -> list[dict]:
    return [{name: v for name, _, v in d.fields} for d in leaf.sw.digests()
            if d.name == "pipe.StellarIngressDeparser.elephant_digest"]


def test_the_sketch_reports_a_new_elephant_once_by_digest():
    leaf = TnaLeaf(elephant_bytes=20_000)
    for psn in range(40):                       # ~44 KB in one window: crosses 20 KB once
        leaf.send(roce("10.0.1.1", DST, 3, psn, payload=1000))
    leaf.out()
    (d,) = _elephant_digests(leaf)
    assert (d["src_addr"], d["dst_addr"], d["protocol"], d["l4_id"]) == (0x0A000101, 0x0A000209, 17, 3)
    assert 20_000 < d["bytes"] <= 20_000 + 1200  # the packet that crossed the threshold


def test_negative_control_a_mouse_is_not_reported():
    leaf = TnaLeaf(elephant_bytes=20_000)
    for psn in range(5):
        leaf.send(roce("10.0.1.1", DST, 3, psn, payload=1000))
    leaf.out()
    assert _elephant_digests(leaf) == []


def _hint(leaf, action: str, src: int = 0x0A000101, qp: int = 3) -> None:
    leaf.sw.insert_entry(f"{ING}.elephant.hint",
                         {"hdr.ipv4.src_addr": (src, 0xFFFFFFFF),
                          "hdr.ipv4.dst_addr": (0, 0), "meta.l4": (qp, 0xFFFFFFFF)},
                         f"{ING}.elephant.{action}", {}, priority=10)


def test_a_controller_hint_makes_a_flow_an_elephant_from_its_first_packet():
    leaf = TnaLeaf(elephant_bytes=1 << 30)
    _hint(leaf, "hint_elephant")
    leaf.send(roce("10.0.1.1", DST, 3, 0))
    leaf.send(roce("10.0.1.1", DST, 4, 0))      # negative control: not hinted, a mouse
    leaf.out()
    assert leaf.counter(f"{ING}.telemetry.elephants", 1) == 1
    assert leaf.counter(f"{ING}.telemetry.elephants", 0) == 1
    assert _elephant_digests(leaf) == []        # the controller knows it already


def test_a_mouse_hint_overrides_the_sketch():
    leaf = TnaLeaf(elephant_bytes=20_000)
    _hint(leaf, "hint_mouse")
    for psn in range(40):
        leaf.send(roce("10.0.1.1", DST, 3, psn, payload=1000))
    leaf.out()
    assert leaf.counter(f"{ING}.telemetry.elephants", 1) == 0 and _elephant_digests(leaf) == []


def test_the_sketch_counts_each_flow_in_its_own_cells():
    # ten mice of 5 KB each (50 KB together) stay mice: the rows are indexed by the flow's CRC,
    # computed before the sketch (a sketch indexed by an unset hash adds all flows together)
    leaf = TnaLeaf(elephant_bytes=20_000)
    for psn in range(5):
        for qp in range(10, 20):
            leaf.send(roce("10.0.1.1", DST, qp, psn, payload=1000))
    leaf.out()
    assert leaf.counter(f"{ING}.telemetry.elephants", 1) == 0 and _elephant_digests(leaf) == []
