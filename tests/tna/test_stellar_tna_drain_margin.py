"""Stellar on Tofino: the drain margin with fresh path feedback (flowlet.p4, drain_extra).

A drain move waits drain_margin + 2 x the old path's fresh congestion after the flow's previous
packet: feedback reports the worst hop beyond the port, and the packets behind the drain point
cross two downstream hops (the spine's downlink, the destination leaf's host port).  The leaf of
test_stellar_tna_path_loss tags its traffic to leaf 2; leaf 2 returns 50 us for the flow's path P
(a returned entry in a shim, stripped here), then the other uplink Q reports idle and takes
"best"; the flow's next packet, a tag of P, reads the entry and its report carries the level
into P's departure record.  The flow's probes 80 us apart stay on P (80 < 8 + 2 x 50, though
beyond 8 + 50, the level counted once); a probe 120 us later moves.
Downstream, P's packets are held for two hops at the measured 50 us: with the margin they arrive
in order.  Negative control: the same entry no longer fresh (max age 0.5 us): the plain 8 us
margin moves the first probe, which overtakes the packets P's spine still holds.
"""
from __future__ import annotations

from test_stellar_tna_path_feedback import unshim
from test_stellar_tna_path_loss import _tagging
from test_stellar_tna_paths import _feedback
from tna_leaf import CHANGE_DRAIN, EGR, ING, TnaLeaf, roce

SRC, DST, QP = "10.0.1.1", "10.0.2.9", 0x71
LEVEL_US = 50
HOLD_US = 2 * LEVEL_US          # P's two downstream hops, each at the measured level


def _returned(leaf_from: int, fb_path: int, metric_us: int) -> bytes:
    """A packet from leaf ``leaf_from`` to this leaf's host, shimmed (header.p4 stellar_fb_h),
    returning ``metric_us`` for this leaf's path ``fb_path``."""
    frame = roce(DST, SRC, 0x72, 1)
    word = (leaf_from << 8) | (1 << 1)          # path 0, path_count 0, fb_valid
    body = (frame[12:14] + word.to_bytes(2, "big") + bytes(2)
            + ((fb_path << 13) | metric_us).to_bytes(2, "big"))
    return frame[:12] + (0x88B5).to_bytes(2, "big") + body + frame[14:]


def _run(max_age_ns: int) -> dict:
    leaf = TnaLeaf(flowlet_timeout_ns=1_000_000, drain_any=True, drain_margin_ns=8000)
    _tagging(leaf, 0)
    leaf.sw.set_default_action(f"{EGR}.path_feedback.params", f"{EGR}.path_feedback.set_params",
                               {"on": 1, "leaf": 1, "interval_ns": 2000, "max_age_ns": max_age_ns,
                                "suspect_silence_ns": 0, "suspect_hold_ns": 2_000_000})
    sw = leaf.sw
    for index, port in enumerate((2, 3)):                  # a returned path's uplink
        sw.insert_entry(f"{EGR}.path_feedback.uplink_port", {"hdr.fb.fb_path": index},
                        f"{EGR}.path_feedback.path_uplink", {"port": port})
    arrivals: list[tuple[int, int, int]] = []
    P = 0

    def run(us: int) -> None:
        for _ in range(us):
            sw.advance(1)
            for port, frame in leaf.out():
                if port in (2, 3):
                    arrivals.append((sw.now_us + (HOLD_US if port == P else 0),
                                     unshim(frame)["BTH"].psn, port))

    sw.advance(5)                                          # (copies are limited per interval from t=0)
    sw.send(1, roce(SRC, DST, QP, 0))                      # new: P, the best (its idle report)
    (P, _), = [(p, f) for p, f in leaf.out()]
    Q = 5 - P
    arrivals.append((sw.now_us + HOLD_US, 0, P))
    sw.send(P, _returned(2, {2: 0, 3: 1}[P], LEVEL_US))    # leaf 2 measured 50 us on P's path
    run(1)
    sw.send(68, _feedback(Q, 0))                           # Q idle: the best member
    run(1)
    sw.send(1, roce(SRC, DST, QP, 1))                      # 2 us on: stays; its report carries the level
    for psn, gap in ((2, 80), (3, 80), (4, 120)):
        run(gap)
        sw.send(1, roce(SRC, DST, QP, psn))
    run(300)
    return {"P": P, "Q": Q, "ports": [port for _, _, port in sorted(arrivals, key=lambda a: a[1])],
            "order": [psn for _, psn, _ in sorted(arrivals)],
            "best": leaf.best(), "drain": leaf.counter(f"{ING}.telemetry.path_changes", CHANGE_DRAIN)}


def test_a_drain_move_waits_twice_the_fresh_path_level_beyond_the_margin():
    run = _run(max_age_ns=500_000)
    P, Q = run["P"], run["Q"]
    assert run["ports"] == [P, P, P, P, Q] and run["drain"] == 1
    assert run["order"] == [0, 1, 2, 3, 4]                 # in order behind P's held packets


def test_negative_control_without_fresh_feedback_the_plain_margin_reorders_downstream():
    run = _run(max_age_ns=500)
    P, Q = run["P"], run["Q"]
    assert run["ports"] == [P, P, Q, Q, Q] and run["drain"] == 1
    assert run["order"].index(2) < run["order"].index(1)   # psn 2 overtook psn 1 held on P's path
