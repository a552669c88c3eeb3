"""Elephant/mouse separation (issue 4, "Elephants").

With the CONTRACT's queue map, elastic traffic (default DSCP) uses queue 4 as a mouse and queue 3
as an elephant; the tx_queue counter shows which queue a packet left from.
"""
from __future__ import annotations

from testkit.leaf import EGR, ING, UPLINK_PATH_SET, ip_int, roce

PORT = 3
SRC, DST = "10.0.1.1", "10.0.2.5"
MOUSE_Q, ELEPHANT_Q = 4, 3
FRAME_LEN = len(roce(SRC, DST, 1, 0))


def _single_uplink(leaf, pps=0):
    leaf.set_path_set(UPLINK_PATH_SET, [PORT], modify=True)
    if pps:
        leaf.sw.set_queue_rate(pps, port=PORT)


def _elephant_digests(leaf):
    return [d for d in leaf.sw.digests() if d.name == "elephant_digest_t"]


def test_flow_past_the_byte_threshold_becomes_an_elephant_within_one_window(leaf):
    _single_uplink(leaf)
    threshold_pkts = 40
    leaf.set_params(elephant_bytes=threshold_pkts * FRAME_LEN, elephant_window_us=1000)
    for psn in range(100):                       # 100 packets in 100 us: one window
        leaf.send(1, roce(SRC, DST, qp=7, psn=psn))
        leaf.advance(1)
    leaf.drain_output(settle_us=10)
    assert leaf.tx_queue(PORT, MOUSE_Q) == threshold_pkts - 1
    assert leaf.tx_queue(PORT, ELEPHANT_Q) == 100 - (threshold_pkts - 1)
    digests = _elephant_digests(leaf)
    assert len(digests) == 1
    fields = {name: value for name, _, value in digests[0].fields}
    assert fields["src_addr"] == ip_int(SRC) and fields["dst_addr"] == ip_int(DST)
    assert fields["l4_id"] == 7 and fields["protocol"] == 17
    assert fields["bytes"] >= threshold_pkts * FRAME_LEN
    assert leaf.counter(f"{ING}.elephant.detections", 0) == 1


def test_elephant_is_reported_once_and_stays_an_elephant_across_windows(leaf):
    _single_uplink(leaf)
    leaf.set_params(elephant_bytes=20 * FRAME_LEN, elephant_window_us=100, elephant_idle_us=500)
    for psn in range(300):                       # 300 us: three sketch windows
        leaf.send(1, roce(SRC, DST, qp=8, psn=psn))
        leaf.advance(1)
    leaf.drain_output(settle_us=10)
    assert len(_elephant_digests(leaf)) == 1
    # Sticky: after the first 19 packets every packet is an elephant, also right after window
    # starts when the sketch has not yet refilled.
    assert leaf.tx_queue(PORT, MOUSE_Q) == 19


def test_idle_elephant_becomes_a_mouse_again_and_is_reported_anew(leaf):
    _single_uplink(leaf)
    leaf.set_params(elephant_bytes=20 * FRAME_LEN, elephant_window_us=100, elephant_idle_us=500)
    for psn in range(30):
        leaf.send(1, roce(SRC, DST, qp=9, psn=psn))
        leaf.advance(1)
    leaf.advance(1000)                           # idle longer than elephant_idle_us
    before = leaf.tx_queue(PORT, MOUSE_Q)
    leaf.send(1, roce(SRC, DST, qp=9, psn=30))
    leaf.advance(1)
    assert leaf.tx_queue(PORT, MOUSE_Q) == before + 1
    for psn in range(31, 60):
        leaf.send(1, roce(SRC, DST, qp=9, psn=psn))
        leaf.advance(1)
    leaf.drain_output(settle_us=10)
    assert len(_elephant_digests(leaf)) == 2


def test_control_below_threshold_stays_a_mouse(leaf):
    _single_uplink(leaf)
    leaf.set_params(elephant_bytes=1000 * FRAME_LEN, elephant_window_us=1000)
    for psn in range(100):
        leaf.send(1, roce(SRC, DST, qp=10, psn=psn))
        leaf.advance(1)
    leaf.drain_output(settle_us=10)
    assert leaf.tx_queue(PORT, MOUSE_Q) == 100
    assert _elephant_digests(leaf) == []


def _mice_behind_elephant(leaf):
    """An elephant backlog of 30 packets on a 100 kpps port; 5 mouse packets arrive at t=50us.
    Returns the departure order as a list of 'E'/'M'."""
    _single_uplink(leaf, pps=100_000)
    for psn in range(30):
        leaf.send(1, roce(SRC, DST, qp=100, psn=psn))
    leaf.advance(50)
    for psn in range(5):
        leaf.send(2, roce("10.0.1.2", DST, qp=200, psn=psn))
    out = leaf.drain_output(settle_us=1000)
    return ["E" if d.qp == 100 else "M" for d in out]


def test_mice_leave_before_an_elephant_backlog(leaf):
    leaf.hint("hint_elephant", SRC, DST, 100)
    order = _mice_behind_elephant(leaf)
    assert order.count("E") == 30 and order.count("M") == 5
    last_mouse = max(i for i, c in enumerate(order) if c == "M")
    # The mice arrived after 5-6 elephant packets had left; strict priority sends them next.
    assert last_mouse <= 12, order
    assert order[-1] == "E"


def test_control_without_separation_mice_wait_behind_the_backlog(leaf):
    leaf.hint("hint_mouse", SRC, DST, 100)
    order = _mice_behind_elephant(leaf)
    assert order == ["E"] * 30 + ["M"] * 5


def test_hint_forces_elephant_without_a_digest(leaf):
    _single_uplink(leaf)
    leaf.hint("hint_elephant", SRC, DST, 11)
    for psn in range(3):
        leaf.send(1, roce(SRC, DST, qp=11, psn=psn))
    leaf.drain_output(settle_us=10)
    assert leaf.tx_queue(PORT, ELEPHANT_Q) == 3
    assert _elephant_digests(leaf) == []
    assert leaf.counter(f"{ING}.elephant.detections", 1) == 1


def test_hint_forces_mouse_over_the_sketch(leaf):
    _single_uplink(leaf)
    leaf.set_params(elephant_bytes=5 * FRAME_LEN)
    leaf.hint("hint_mouse", SRC, DST, 12)
    for psn in range(50):
        leaf.send(1, roce(SRC, DST, qp=12, psn=psn))
        leaf.advance(1)
    leaf.drain_output(settle_us=10)
    assert leaf.tx_queue(PORT, MOUSE_Q) == 50
    assert _elephant_digests(leaf) == []


def test_hint_by_job_addresses_covers_every_qp(leaf):
    _single_uplink(leaf)
    leaf.sw.insert_entry(f"{ING}.elephant.hint",
                         {"hdr.ipv4.src_addr": (SRC, 0xFFFFFFFF), "hdr.ipv4.dst_addr": (DST, 0xFFFFFFFF)},
                         f"{ING}.elephant.hint_elephant", None, priority=1)
    for qp in range(5):
        leaf.send(1, roce(SRC, DST, qp=qp, psn=0))
    leaf.drain_output(settle_us=10)
    assert leaf.tx_queue(PORT, ELEPHANT_Q) == 5
