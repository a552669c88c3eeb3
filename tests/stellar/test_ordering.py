"""Flowlet-safe path switching with drain detection (issue 4, "Ordering").

Scenario, on the virtual clock:
  * uplink 3 sends at 100 kpps (one packet per 10 us), uplink 4 is unlimited;
  * a RoCE elephant (hinted) is placed on port 3 (port 4 starts expensive: controller level 1000);
  * it sends a burst of 20 packets, then keeps sending 2 packets every 40 us: slower than port 3
    drains, so the backlog shrinks and is gone after ~400 us, but the flow never pauses for long;
  * right after the burst the controller makes port 4 the cheap path (levels 3 -> 100, 4 -> 0).

Drain detection moves the flow at the first burst after its last packet left port 3 (plus the
margin): no reordering, and far sooner than a safe flowlet timeout (which never fires here,
because the flow never idles).  A gap move with a timeout shorter than the queue delay waits
for the drain too.  Negative controls: without that guard such a gap move reorders; a safe timeout without drain detection never leaves the congested port.
"""
from __future__ import annotations

from dataclasses import dataclass

from testkit.leaf import (CHANGE_DRAIN, CHANGE_GAP, GUARD_GAP_DRAIN, UPLINK_PATH_SET, Leaf,
                                psns_in_order, roce)

SRC, DST, QP = "10.0.1.1", "10.0.2.9", 0x4242
SLOW_PORT, FAST_PORT = 3, 4
BURST, ROUND_PKTS, ROUND_GAP_US, ROUNDS = 20, 2, 40, 25


@dataclass
class Run:
    departures: list
    drain_moves: int
    gap_moves: int
    reorders: int
    first_fast_send_us: int | None

    @property
    def psns(self) -> list[int]:
        return psns_in_order(self.departures, QP)

    def ports(self) -> list[int]:
        return [d.port for d in self.departures if d.qp == QP]


def _run(leaf: Leaf) -> Run:
    sw = leaf.sw
    sw.set_queue_rate(100_000, port=SLOW_PORT)
    leaf.hint("hint_elephant", SRC, DST, QP)
    leaf.set_path_set(UPLINK_PATH_SET, [SLOW_PORT, FAST_PORT], [0, 1000], modify=True)

    psn = 0
    for _ in range(BURST):
        leaf.send(1, roce(SRC, DST, QP, psn))
        psn += 1
    leaf.advance(1)
    # The cheaper path appears: the controller lifts port 4's level; port 3 keeps no remote level
    # (its cost is its local backlog), so the drain margin stays the plain one.
    leaf.set_path_set(UPLINK_PATH_SET, [SLOW_PORT, FAST_PORT], [0, 0], modify=True)

    departures = []
    first_fast = None
    for _ in range(ROUNDS):
        leaf.advance(ROUND_GAP_US - 1)
        sent_at = int(sw.now_us)
        for _ in range(ROUND_PKTS):
            leaf.send(1, roce(SRC, DST, QP, psn))
            psn += 1
        leaf.advance(1)
        out = leaf.drain_output()
        if first_fast is None and any(d.port == FAST_PORT for d in out):
            first_fast = sent_at
        departures += out
    departures += leaf.drain_output(settle_us=2000)
    return Run(departures, leaf.path_changes(CHANGE_DRAIN), leaf.path_changes(CHANGE_GAP),
               leaf.reorder_total(), first_fast)


def test_drain_detection_moves_the_flow_without_reordering(leaf):
    leaf.set_params(flowlet_timeout_us=1000, drain_moves=1, gap_moves=1, drain_margin_us=8)
    run = _run(leaf)
    total = BURST + ROUND_PKTS * ROUNDS
    assert len(run.psns) == total, "packets were lost"
    assert run.psns == sorted(run.psns), "PSNs left the switch out of order"
    assert run.reorders == 0
    assert run.drain_moves == 1 and run.gap_moves == 0
    ports = run.ports()
    # Moved exactly once, from the slow port to the fast one, and only after the slow port's
    # last packet of this flow had left.
    last_slow = max(i for i, p in enumerate(ports) if p == SLOW_PORT)
    first_fast = min(i for i, p in enumerate(ports) if p == FAST_PORT)
    assert last_slow < first_fast
    # ... while the backlog still existed a move would have reordered, so the move waited for it
    # (the 20-packet burst plus arrivals needs ~400 us at 10 us/packet) ...
    assert run.first_fast_send_us is not None and run.first_fast_send_us >= 300
    # ... and happened long before a safe flowlet timeout (1000 us) could ever apply.
    assert run.first_fast_send_us < 1000


def test_gap_move_shorter_than_the_queue_waits_for_the_drain(leaf):
    # Hole "gap moves ignore drain" (issue 8): a flowlet timeout (20 us) shorter than the old
    # queue's delay (up to ~200 us).  A gap move must also prove the local drain plus the margin
    # and the old member's level, exactly like a drain move: it then happens, but only once the
    # backlog on the slow port is gone.
    leaf.set_params(flowlet_timeout_us=20, drain_moves=0, gap_moves=1)
    run = _run(leaf)
    assert run.gap_moves == 1
    assert run.reorders == 0
    assert run.psns == sorted(run.psns)
    ports = run.ports()
    assert max(i for i, p in enumerate(ports) if p == SLOW_PORT) < \
        min(i for i, p in enumerate(ports) if p == FAST_PORT)
    assert run.first_fast_send_us is not None and run.first_fast_send_us >= 300


def test_control_gap_move_without_the_drain_guard_reorders(leaf):
    # Negative control (the program before issue 8): the same short timeout, gap moves trusting
    # the timeout alone, move while packets are still queued on the slow port.
    leaf.set_params(flowlet_timeout_us=20, drain_moves=0, gap_moves=1,
                    order_guards=0xF & ~GUARD_GAP_DRAIN)
    run = _run(leaf)
    assert run.gap_moves >= 1
    assert run.reorders > 0
    assert run.psns != sorted(run.psns)


def test_control_safe_flowlet_timeout_never_leaves_the_congested_port(leaf):
    leaf.set_params(flowlet_timeout_us=1000, drain_moves=0, gap_moves=1)
    run = _run(leaf)
    assert run.reorders == 0
    assert run.gap_moves == 0 and run.drain_moves == 0
    assert set(run.ports()) == {SLOW_PORT}


def test_drain_move_waits_for_the_margin(leaf):
    # With a margin longer than any gap in this flow, drain moves can never happen.
    leaf.set_params(flowlet_timeout_us=1000, drain_moves=1, drain_margin_us=500)
    run = _run(leaf)
    assert run.drain_moves == 0
    assert set(run.ports()) == {SLOW_PORT}


def test_hysteresis_blocks_a_move_that_gains_too_little(leaf):
    leaf.set_params(flowlet_timeout_us=1000, drain_moves=1, hysteresis_us=10_000)
    run = _run(leaf)
    assert run.drain_moves == 0
    assert set(run.ports()) == {SLOW_PORT}


def test_a_mouse_moves_at_its_drain_point_without_reordering(leaf):
    # A DCQCN-paced RoCE flow of any size: the drain point is its move point (config.adapt
    # drain_any), with the same proof as an elephant's.
    leaf.set_params(flowlet_timeout_us=1000, drain_moves=1)
    leaf.hint("hint_mouse", SRC, DST, QP, priority=20)  # outranks the elephant hint in _run
    run = _run(leaf)
    assert run.drain_moves == 1 and run.reorders == 0
    assert run.psns == sorted(run.psns)
    assert run.first_fast_send_us is not None and run.first_fast_send_us >= 300


def test_control_mice_are_not_moved_at_drain_points_without_drain_any(leaf):
    leaf.set_params(flowlet_timeout_us=1000, drain_moves=1)
    leaf.set_adapt(drain_any=0)
    leaf.hint("hint_mouse", SRC, DST, QP, priority=20)
    run = _run(leaf)
    assert run.drain_moves == 0
    assert set(run.ports()) == {SLOW_PORT}


def test_control_a_mouse_drain_move_without_the_drain_proof_reorders(leaf):
    from testkit.leaf import MOVE_GUARD_DRAIN_PROOF
    leaf.set_params(flowlet_timeout_us=1000, drain_moves=1)
    leaf.set_adapt(move_guards=0xF & ~MOVE_GUARD_DRAIN_PROOF)
    leaf.hint("hint_mouse", SRC, DST, QP, priority=20)
    run = _run(leaf)
    assert run.drain_moves >= 1
    assert run.reorders > 0 and run.psns != sorted(run.psns)


def test_idle_gap_longer_than_the_timeout_moves_the_flow_safely(leaf):
    # The classic flowlet case: the flow pauses longer than the timeout (and than the queue
    # delay), so it may move with no drain check at all, and nothing is reordered.
    leaf.set_params(flowlet_timeout_us=300, drain_moves=0, gap_moves=1)
    leaf.sw.set_queue_rate(100_000, port=SLOW_PORT)
    leaf.set_path_set(UPLINK_PATH_SET, [SLOW_PORT, FAST_PORT], [0, 1000], modify=True)
    for psn in range(20):
        leaf.send(1, roce(SRC, DST, QP, psn))
    leaf.set_path_set(UPLINK_PATH_SET, [SLOW_PORT, FAST_PORT], [100, 0], modify=True)
    leaf.advance(400)                               # > timeout, > 200 us of backlog
    for psn in range(20, 30):
        leaf.send(1, roce(SRC, DST, QP, psn))
    out = leaf.drain_output(settle_us=1000)
    assert psns_in_order(out, QP) == list(range(30))
    assert leaf.path_changes(CHANGE_GAP) == 1
    assert {d.port for d in out if d.psn >= 20} == {FAST_PORT}
    assert leaf.reorder_total() == 0


def test_drain_move_is_reported_by_digest_when_enabled(leaf):
    leaf.set_params(flowlet_timeout_us=1000, drain_moves=1, report_path_changes=1)
    _run(leaf)
    reports = [dict((n, v) for n, _, v in d.fields) for d in leaf.sw.digests()
               if d.name == "path_change_digest_t"]
    assert [(r["l4_id"], r["old_port"], r["new_port"], r["reason"]) for r in reports] == \
        [(QP, SLOW_PORT, FAST_PORT, CHANGE_DRAIN)]


def _flow_slot(src: str, dst: str, qp: int) -> int:
    """stellar.p4's slot index: crc32 over (src, dst, protocol 17, qp as 32 bits), packed MSB-first
    (REFERENCE.md: BMv2's hash input packing), modulo FLOW_SLOTS (8192)."""
    import ipaddress
    import zlib
    data = (int(ipaddress.IPv4Address(src)).to_bytes(4, "big") + int(ipaddress.IPv4Address(dst)).to_bytes(4, "big")
            + bytes([17]) + qp.to_bytes(4, "big"))
    return zlib.crc32(data) % 8192


def test_a_flow_colliding_with_an_active_flow_does_not_steal_its_state(leaf):
    from testkit.leaf import CHANGE_NEW, ING
    by_slot: dict[int, int] = {}
    for qp in range(1, 100_000):
        slot = _flow_slot(SRC, DST, qp)
        if slot in by_slot:
            qp_a, qp_b = by_slot[slot], qp
            break
        by_slot[slot] = qp
    collisions = f"{ING}.flowlet.collisions"
    ports_b = set()
    for i in range(10):
        leaf.send(1, roce(SRC, DST, qp_a, i))
        leaf.advance(5)
        leaf.send(1, roce(SRC, DST, qp_b, i))
        leaf.advance(5)
        ports_b |= {d.port for d in leaf.drain_output() if d.qp == qp_b}
    assert leaf.register("flow_sig", slot) != 0
    assert leaf.path_changes(CHANGE_NEW) == 1, "only the owner was placed; it never lost its state"
    assert leaf.counter(collisions, 0) == 10
    assert len(ports_b) == 1, "the untracked flow is pinned by its hash"
    # Once the owner has been idle for a flowlet timeout, the slot can change hands.
    leaf.advance(500)
    leaf.send(1, roce(SRC, DST, qp_b, 10))
    leaf.advance(1)
    assert leaf.path_changes(CHANGE_NEW) == 2 and leaf.counter(collisions, 0) == 10
