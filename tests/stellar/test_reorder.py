"""The egress PSN-regression (reordering) detector."""
from __future__ import annotations

from testkit.leaf import (EGR, OP_ACK, OP_CNP, OP_READ_REQUEST, OP_WRITE_FIRST, OP_WRITE_LAST,
                                OP_WRITE_MIDDLE, UPLINK_PATH_SET, roce)

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


# ------------------------------------------------------------------------------------------------
# Data packets only (issue 32, item 6).  On one QP's direction the data stream interleaves with
# ACKs (their PSN is the one they acknowledge, of the other direction's stream) and CNPs (PSN 0).
# Neither is part of the sequence a responder checks, so neither may count as a reorder.  The
# program that tracked every BTH packet counts each CNP and each ACK behind the data's PSNs
# (run this file against a reorder.p4 without bth_is_data: the first test fails with 20 events).


def _send_ops(leaf, qp, packets, src="10.0.1.1", dst="10.0.2.90"):
    """(opcode, psn) pairs of one QP direction, one per microsecond, through port PORT."""
    leaf.set_path_set(UPLINK_PATH_SET, [PORT], modify=True)
    for opcode, psn in packets:
        leaf.send(1, roce(src, dst, qp=qp, psn=psn, opcode=opcode))
        leaf.advance(1)
    return leaf.drain_output(settle_us=10)


def test_acks_and_cnps_beside_in_order_data_are_not_reorders(leaf):
    packets = []
    for i in range(10):
        packets.append((OP_WRITE_MIDDLE if i % 3 else OP_WRITE_FIRST, 1000 + i))
        packets.append((OP_CNP, 0))                     # CNPs carry PSN 0
        packets.append((OP_ACK, 500 + i))               # ACKs of the other direction's stream
    out = _send_ops(leaf, 9, packets)
    assert len(out) == 30, "CNPs and ACKs are forwarded like data"
    assert leaf.reorder_total() == 0
    assert leaf.counter(f"{EGR}.reorder.events", PORT) == 0


def test_control_a_real_psn_regression_in_data_beside_cnps_is_counted(leaf):
    packets = [(OP_WRITE_FIRST, 1000), (OP_CNP, 0), (OP_WRITE_MIDDLE, 1002), (OP_ACK, 3),
               (OP_WRITE_MIDDLE, 1001), (OP_CNP, 0), (OP_WRITE_LAST, 1003)]
    _send_ops(leaf, 9, packets)
    assert leaf.reorder_total() == 1                    # 1001 behind 1002, nothing else


def test_a_read_request_does_not_count_but_read_responses_do(leaf):
    # READ requests carry the requester's PSNs but are not data; READ responses are data.
    _send_ops(leaf, 10, [(0x0D, 50), (OP_READ_REQUEST, 2), (0x0F, 52), (0x0E, 51)])
    assert leaf.reorder_total() == 1                    # 51 behind 52


def test_the_two_directions_of_a_qp_are_tracked_apart(leaf):
    _send_ops(leaf, 11, [(OP_WRITE_FIRST, 900), (OP_WRITE_LAST, 901)])
    _send_ops(leaf, 11, [(OP_WRITE_FIRST, 5), (OP_WRITE_LAST, 6)], src="10.0.2.90", dst="10.0.1.1")
    assert leaf.reorder_total() == 0


def test_a_go_back_n_resend_of_a_range_is_one_event(leaf):
    # PSNs 1..10 left, then the sender resends from 5 (go-back-N) and goes on: one backward jump.
    _send_psns(leaf, 12, list(range(1, 11)) + list(range(5, 14)))
    assert leaf.reorder_total() == 1
