"""The egress PSN-regression (reordering) detector."""
from __future__ import annotations

from testkit.leaf import EGR, UPLINK_PATH_SET, roce

PORT = 3


def _send_psns(leaf, qp, psns, src="10.0.1.1", dst="10.0.2.90"):
    leaf.set_path_set(UPLINK_PATH_SET, [PORT], modify=True)
    for psn in psns:
        leaf.send(1, roce(src, dst, qp=qp, psn=psn))
        leaf.advance(1)
    leaf.drain_output(settle_us=10)


def test_lower_psn_counts_once_per_regression(leaf):
    _send_psns(leaf, 5, [5, 6, 3, 7, 4, 8])
    assert leaf.reorder_total() == 2
    assert leaf.counter(f"{EGR}.reorder.events", PORT) == 2


def test_in_order_and_repeated_psns_are_not_reorders(leaf):
    _send_psns(leaf, 5, [1, 2, 2, 3, 4, 4, 5])
    assert leaf.reorder_total() == 0


def test_psn_wraparound_is_in_order(leaf):
    _send_psns(leaf, 6, [0xFFFFFD, 0xFFFFFE, 0xFFFFFF, 0, 1, 2])
    assert leaf.reorder_total() == 0


def test_flows_are_tracked_separately(leaf):
    _send_psns(leaf, 7, [100, 101])
    _send_psns(leaf, 8, [1, 2])
    _send_psns(leaf, 7, [102], src="10.0.1.1")
    assert leaf.reorder_total() == 0


def _reorder_slot(src, dst, qp):
    """crc32 over (src, dst, dest QP as 24 bits) packed MSB-first, mod REORDER_SLOTS (8192)."""
    import ipaddress
    import zlib
    data = (ipaddress.IPv4Address(src).packed + ipaddress.IPv4Address(dst).packed
            + qp.to_bytes(3, "big"))
    return zlib.crc32(data) % 8192


def test_two_flows_sharing_a_slot_are_not_compared_with_each_other(leaf):
    src, dst = "10.0.1.1", "10.0.2.90"
    seen = {}
    for qp in range(1, 200_000):
        slot = _reorder_slot(src, dst, qp)
        if slot in seen:
            qp_a, qp_b = seen[slot], qp
            break
        seen[slot] = qp
    # Flow A is far ahead in PSN space; flow B starts low.  Both in order on their own.
    _send_psns(leaf, qp_a, [1000, 1001])
    _send_psns(leaf, qp_b, [1, 2])
    _send_psns(leaf, qp_a, [1002])
    assert leaf.reorder_total() == 0
