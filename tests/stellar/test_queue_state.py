"""Per-queue, honest congestion state (issue 8, item 4).

* Queue delay is recorded per (port, queue): a mouse leaving the fast queue must not erase an
  elephant backlog in a slower queue of the same port.
* A queue with packets waiting and no departure (paused, failed silently) is the worst member,
  never idle; a queue with nothing waiting and no departure is idle.
"""
from __future__ import annotations

from testkit.leaf import EGR, UPLINK_PATH_SET, UPLINKS, Leaf, roce

SRC, DST = "10.0.1.1", "10.0.2.9"
SLOW = 3
ELEPHANT_QUEUE, MOUSE_QUEUE = 3, 4    # elastic elephant / mouse (leaf.py's queue map)


def _hash_port(stellar_program, qp: int) -> int:
    """Where the flow goes when every member is equal (ties follow the flow hash)."""
    import p4sim
    ref = Leaf(p4sim, stellar_program)
    ref.send(1, roce(SRC, DST, qp, 0))
    return ref.drain_output()[0].port


def _qp_hashing_to(stellar_program, port: int, start: int) -> int:
    return next(qp for qp in range(start, start + 64) if _hash_port(stellar_program, qp) == port)


def _stall_scenario(leaf: Leaf, stellar_program, backlog: int) -> int:
    """`backlog` packets of flow X are put on SLOW, which then departs nothing (1 packet/s);
    300 us later (> qdelay_max_age_us) a new flow B whose hash port is SLOW starts.  Where does
    B go?"""
    leaf.sw.set_queue_rate(1, port=SLOW)
    leaf.set_path_set(UPLINK_PATH_SET, list(UPLINKS), [0 if p == SLOW else 1000 for p in UPLINKS],
                      modify=True)
    for psn in range(backlog):
        leaf.send(1, roce(SRC, DST, 0x77, psn))
    leaf.set_path_set(UPLINK_PATH_SET, list(UPLINKS), modify=True)
    leaf.advance(300)
    qp_b = _qp_hashing_to(stellar_program, SLOW, 0x1000)
    leaf.send(1, roce(SRC, DST, qp_b, 0))
    out = [d for d in leaf.drain_output() if d.qp == qp_b]
    return out[0].port if out else SLOW    # nothing out: B queued behind the stall, on SLOW


def test_stalled_queue_is_the_worst_member(leaf, stellar_program):
    assert _stall_scenario(leaf, stellar_program, backlog=5) != SLOW


def test_control_idle_queue_without_backlog_is_idle(leaf, stellar_program):
    # Same, with nothing waiting on SLOW: no departure for 300 us now means idle, and B follows
    # its hash onto SLOW.  (Before issue 8 the stalled queue above looked exactly like this.)
    assert _stall_scenario(leaf, stellar_program, backlog=0) == SLOW


def test_mouse_departures_do_not_hide_an_elephant_backlog(leaf):
    # SLOW at 100 kpps holds a 30-packet elephant backlog (queue 3, ~300 us); a mouse on the
    # same port (queue 4, strict priority) leaves right before a new elephant E2 arrives, after
    # only one packet time.  The utilisation estimator is off, so only queue delay can tell.
    leaf.set_params(util_weight=0)
    leaf.sw.set_queue_rate(100_000, port=SLOW)
    other = next(p for p in UPLINKS if p != SLOW)
    leaf.set_path_set(UPLINK_PATH_SET, list(UPLINKS), [0 if p == SLOW else 1000 for p in UPLINKS],
                      modify=True)
    leaf.hint("hint_elephant", SRC, DST, 0x51)
    leaf.hint("hint_elephant", SRC, DST, 0x52)
    for psn in range(30):
        leaf.send(1, roce(SRC, DST, 0x51, psn))
    leaf.advance(100)
    leaf.send(1, roce(SRC, DST, 0x61, 0))             # the mouse, on SLOW too (level 1000 on other)
    leaf.advance(10)
    mouse_qi = SLOW << 3 | MOUSE_QUEUE
    assert leaf.register("queue_qdelay_us", mouse_qi) <= 10      # what a per-port record would say
    assert leaf.register("queue_depart_stamp", mouse_qi) >= \
        leaf.register("queue_depart_stamp", SLOW << 3 | ELEPHANT_QUEUE)
    leaf.set_path_set(UPLINK_PATH_SET, list(UPLINKS), modify=True)
    leaf.send(1, roce(SRC, DST, 0x52, 0))
    out = leaf.drain_output(settle_us=1000)
    assert [d.port for d in out if d.qp == 0x52] == [other]
    assert leaf.register("queue_qdelay_us", SLOW << 3 | ELEPHANT_QUEUE) >= 100
