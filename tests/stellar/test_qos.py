"""Classes and tenants (issue 4, "Tenants/classes")."""
from __future__ import annotations

from testkit.leaf import (CLASS_BACKGROUND, CLASS_CONTROL, CLASS_CRITICAL, CLASS_ELASTIC,
                                DROP_TENANT_RED, ING, UPLINK_PATH_SET, roce)

PORT = 3
DST = "10.0.2.80"
TENANT1_SRC, TENANT2_SRC = "10.0.1.10", "10.0.1.200"     # tenants 1 and 2 (leaf.py)
FRAME_LEN = len(roce(TENANT1_SRC, DST, 1, 0))
METER = f"{ING}.qos.tenant_meter"


def _single_uplink(leaf):
    leaf.set_path_set(UPLINK_PATH_SET, [PORT], modify=True)


def _burst(leaf, n=100):
    for psn in range(n):
        leaf.send(1, roce(TENANT1_SRC, DST, qp=1, psn=psn))
        leaf.send(2, roce(TENANT2_SRC, DST, qp=2, psn=psn))
        leaf.advance(1)
    return leaf.drain_output(settle_us=10)


def test_tenant_over_its_meter_is_demoted_then_dropped_and_others_are_not(leaf):
    _single_uplink(leaf)
    # Tenant 1: 100 kB/s committed, 200 kB/s peak, bursts of ~16 and ~32 packets.  A 100-packet
    # burst in 100 us is far above both rates.
    leaf.sw.meter_set_config(METER, 1, cir=100_000, cburst=16 * FRAME_LEN,
                             pir=200_000, pburst=32 * FRAME_LEN)
    out = _burst(leaf)
    t1 = [d for d in out if d.qp == 1]
    t2 = [d for d in out if d.qp == 2]
    yellow = leaf.counter(f"{ING}.qos.tenant_yellow", 1)
    red = leaf.counter(f"{ING}.qos.tenant_red", 1)
    assert 14 <= yellow <= 18 and len(t1) == 100 - red
    assert 28 <= len(t1) <= 36
    assert leaf.drops(DROP_TENANT_RED) == red
    # Yellow packets left from the background class's mouse queue (2), green ones from elastic (4).
    assert leaf.tx_queue(PORT, 2) == yellow
    # The other tenant lost nothing and was not demoted.
    assert len(t2) == 100
    assert leaf.counter(f"{ING}.qos.tenant_yellow", 2) == 0
    assert leaf.counter(f"{ING}.qos.tenant_red", 2) == 0


def test_control_without_a_meter_configuration_nothing_is_policed(leaf):
    _single_uplink(leaf)
    out = _burst(leaf)
    assert len(out) == 200
    assert leaf.counter(f"{ING}.qos.tenant_red", 1) == 0
    assert leaf.tx_queue(PORT, 2) == 0


def test_dscp_selects_class_and_queue(leaf):
    _single_uplink(leaf)
    cases = {46: (CLASS_CRITICAL, 6), 48: (CLASS_CONTROL, 7), 8: (CLASS_BACKGROUND, 2),
             10: (CLASS_ELASTIC, 4)}
    for qp, dscp in enumerate(cases):
        leaf.send(1, roce(TENANT1_SRC, DST, qp=qp, psn=0, dscp=dscp))
    leaf.drain_output(settle_us=10)
    for dscp, (cls, queue) in cases.items():
        assert leaf.counter(f"{ING}.telemetry.class_rx", cls) == 1, f"DSCP {dscp}"
        assert leaf.tx_queue(PORT, queue) == 1, f"DSCP {dscp}"


def test_critical_class_overtakes_a_background_backlog(leaf):
    _single_uplink(leaf)
    leaf.sw.set_queue_rate(100_000, port=PORT)
    for psn in range(20):
        leaf.send(1, roce(TENANT1_SRC, DST, qp=1, psn=psn, dscp=8))
    leaf.advance(30)
    leaf.send(2, roce(TENANT2_SRC, DST, qp=2, psn=0, dscp=46))
    order = [d.qp for d in leaf.drain_output(settle_us=1000)]
    assert order.index(2) <= 5
