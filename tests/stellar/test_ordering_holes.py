"""The ordering rule (p4src/README.md): a flow's packets never change (port, queue) while an
earlier packet of the flow is queued in this switch.  One test per hole issue 8 found, each run
with the guard (``config.params order_guards``) on, and, as its negative control, with that one
guard off -- the program without that guard: the packets are then reordered.

Every scenario uses a rate-limited port (100 kpps, 10 us per packet), so queues really hold
packets; on an unlimited port nothing is ever queued and nothing could reorder.
(The fourth hole, gap moves that ignore the drain, is in test_ordering.py.)
"""
from __future__ import annotations

import ipaddress
import zlib

from testkit.leaf import (GUARD_DEMOTION, GUARD_TAKEOVER, GUARD_UNTRACKED, ING,
                                UPLINK_PATH_SET, UPLINKS, psns_in_order, roce)

SRC, DST = "10.0.1.1", "10.0.2.9"
ALL = 0xF
RATE_PPS = 100_000


def _slot(src: str, dst: str, qp: int) -> int:
    """stellar.p4's flow slot: crc32 over (src, dst, protocol 17, qp as 32 bits) mod FLOW_SLOTS."""
    data = (int(ipaddress.IPv4Address(src)).to_bytes(4, "big")
            + int(ipaddress.IPv4Address(dst)).to_bytes(4, "big") + bytes([17]) + qp.to_bytes(4, "big"))
    return zlib.crc32(data) % 8192


def _colliding_pair() -> tuple[int, int]:
    seen: dict[int, int] = {}
    for qp in range(1, 100_000):
        slot = _slot(SRC, DST, qp)
        if slot in seen:
            return seen[slot], qp
        seen[slot] = qp
    raise AssertionError("no colliding pair")


def _hash_port_of(leaf, owner: int, other: int) -> int:
    """Place `owner` in the slot, send one packet of `other` (untracked, by hash) and see where
    it went."""
    leaf.send(1, roce(SRC, DST, owner, 0))
    leaf.send(1, roce(SRC, DST, other, 0))
    out = leaf.drain_output(settle_us=1)
    return next(d.port for d in out if d.qp == other)


# ----------------------------------------------------------------------------- slot takeover
def _takeover(leaf, guards: int) -> list[int]:
    """Flow B collides with the active owner A, so its first 40 packets go by hash to port H
    (rate-limited: ~400 us of backlog).  A falls idle; B's next packets take the slot over while
    its earlier ones are still queued on H, and H is the expensive member."""
    leaf.set_params(order_guards=guards)
    qp_a, qp_b = _colliding_pair()
    hash_port = _hash_port_of(leaf, qp_a, qp_b)
    other = next(p for p in UPLINKS if p != hash_port)
    leaf.sw.set_queue_rate(RATE_PPS, port=hash_port)
    levels = [1000 if p == hash_port else 0 for p in UPLINKS]
    leaf.set_path_set(UPLINK_PATH_SET, list(UPLINKS), levels, modify=True)
    for psn in range(1, 41):
        leaf.send(1, roce(SRC, DST, qp_b, psn))
    leaf.advance(250)                   # A idle > flowlet timeout (200 us); H still backlogged
    for psn in range(41, 51):
        leaf.send(1, roce(SRC, DST, qp_b, psn))
    out = leaf.drain_output(settle_us=2000)
    assert leaf.counter(f"{ING}.flowlet.collisions", 0) == 41
    assert {d.port for d in out if d.qp == qp_b and d.psn > 40} == \
        ({hash_port} if guards & GUARD_TAKEOVER else {other})
    return psns_in_order(out, qp_b)


def test_slot_takeover_stays_on_the_hash_port_while_the_flows_packets_are_queued(leaf):
    assert _takeover(leaf, ALL) == list(range(1, 51))
    assert leaf.reorder_total() == 0


def test_control_slot_takeover_without_the_guard_reorders(leaf):
    psns = _takeover(leaf, ALL & ~GUARD_TAKEOVER)
    assert len(psns) == 50 and psns != sorted(psns)
    assert leaf.reorder_total() > 0


def test_slot_takeover_after_the_hashed_packets_left_uses_the_best_member(leaf):
    # The guard costs nothing once the hashed packets have gone: the taking-over flow is placed
    # on the best member like any new flow.
    qp_a, qp_b = _colliding_pair()
    hash_port = _hash_port_of(leaf, qp_a, qp_b)
    other = next(p for p in UPLINKS if p != hash_port)
    levels = [1000 if p == hash_port else 0 for p in UPLINKS]
    leaf.set_path_set(UPLINK_PATH_SET, list(UPLINKS), levels, modify=True)
    leaf.advance(250)
    leaf.send(1, roce(SRC, DST, qp_b, 1))
    out = leaf.drain_output(settle_us=10)
    assert [d.port for d in out if d.qp == qp_b] == [other]


# ------------------------------------------------------------------ tenant-meter demotion
FRAME_LEN = len(roce(SRC, DST, 1, 0))
METER = f"{ING}.qos.tenant_meter"


def _demotion(leaf, guards: int) -> tuple[list[int], list]:
    """Tenant 1 (10.0.1.0/25) sends one packet per us on a 100 kpps port; its committed rate
    refills one frame every 10 us, so after the committed burst most packets are YELLOW and
    every ~10th is GREEN again, while the port has a growing backlog."""
    leaf.set_params(order_guards=guards)
    port = UPLINKS[0]
    leaf.set_path_set(UPLINK_PATH_SET, [port], modify=True)
    leaf.sw.set_queue_rate(RATE_PPS, port=port)
    leaf.sw.meter_set_config(METER, 1, cir=FRAME_LEN * 100_000, cburst=8 * FRAME_LEN,
                             pir=FRAME_LEN * 10_000_000, pburst=1000 * FRAME_LEN)
    for psn in range(60):
        leaf.send(1, roce(SRC, DST, 7, psn))
        leaf.advance(1)
    out = leaf.drain_output(settle_us=2000)
    assert leaf.counter(f"{ING}.qos.tenant_yellow", 1) >= 30
    assert leaf.counter(f"{ING}.qos.tenant_red", 1) == 0
    return psns_in_order(out, 7), out


def test_demotion_is_per_flow_and_sticky_until_drained(leaf):
    psns, _ = _demotion(leaf, ALL)
    assert psns == list(range(60))
    assert leaf.reorder_total() == 0
    port = UPLINKS[0]
    # Green before the first yellow packet: elastic mouse queue (4); from then on background (2).
    green_first = leaf.tx_queue(port, 4)
    assert 8 <= green_first <= 10 and leaf.tx_queue(port, 2) == 60 - green_first
    # Drained and green again: the flow is promoted back.
    leaf.advance(2000)
    leaf.send(1, roce(SRC, DST, 7, 60))
    leaf.drain_output(settle_us=10)
    assert leaf.tx_queue(port, 4) == green_first + 1


def test_control_per_packet_demotion_reorders_at_a_limited_port_rate(leaf):
    psns, _ = _demotion(leaf, ALL & ~GUARD_DEMOTION)
    assert len(psns) == 60 and psns != sorted(psns)
    assert leaf.reorder_total() > 0


# --------------------------------------------------- untracked flows and the sketch window
def _untracked_sketch(leaf, guards: int) -> list[int]:
    """B collides with the active owner A and is routed untracked by hash to a rate-limited port
    at twice its rate, across several 50 us sketch windows, with a low elephant threshold."""
    qp_a, qp_b = _colliding_pair()
    hash_port = _hash_port_of(leaf, qp_a, qp_b)
    leaf.sw.set_queue_rate(RATE_PPS, port=hash_port)
    leaf.set_params(order_guards=guards, elephant_bytes=5 * FRAME_LEN, elephant_window_us=50)
    for i in range(60):
        if i % 10 == 0:
            leaf.send(1, roce(SRC, DST, qp_a, 1 + i // 10))   # keeps A active: B stays untracked
        leaf.send(1, roce(SRC, DST, qp_b, 1 + i))
        leaf.advance(5)
    out = leaf.drain_output(settle_us=2000)
    assert leaf.counter(f"{ING}.flowlet.collisions", 0) == 61
    return psns_in_order(out, qp_b)


def test_untracked_flow_keeps_its_queue_across_sketch_windows(leaf):
    assert _untracked_sketch(leaf, ALL) == list(range(1, 61))


def test_control_untracked_flow_following_the_sketch_reorders(leaf):
    psns = _untracked_sketch(leaf, ALL & ~GUARD_UNTRACKED)
    assert len(psns) == 60 and psns != sorted(psns)
