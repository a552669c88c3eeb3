"""Stellar on Tofino: a remote link failure reported by the leaf that sees it (issue 32, item 4;
path_feedback.p4's from_port and FB_METRIC_DEAD, failover.p4's `dead`; v1model's
tests/stellar/test_dead_uplink.py).  Leaf2's own uplink to spine1 went down (its packet generator's
port-down packet cleared the member's liveness bit), so on what it sends back it reports the path
whose shims came in on that uplink dead, and leaf1 counts the member down at once, before any
silence could be proven.  This is the case silence cannot cover: every flow of a job waits out its
retransmission timeout, nobody sends, and the first resend is the first packet in a long time.

    leaf1 -- spine1 -- leaf2 (cut: leaf2's port to spine1 goes down)
          -- spine2 --

Controls: the same failure while leaf2 does not see its port go down (only spine1's end does):
nothing is reported and the resends go back to the dead spine; and the program whose reported
members do not count as down (failover.p4 without its `live` bitmap): leaf2 reports, leaf1 stores
the report, and the resends still go to the dead spine.
"""
from __future__ import annotations

import pytest

p4sim = pytest.importorskip("p4sim")
from scapy.contrib.roce import BTH  # noqa: E402

from pathlib import Path  # noqa: E402

from control_plane import feedback  # noqa: E402
from test_stellar_tna_reorder import _variant  # noqa: E402
from test_stellar_tna_path_feedback import (H1, H2, carry, fabric, lab, out_of, roce,  # noqa: E402,F401
                                             unshim, uplink_of)

QPS = range(1, 9)
FLOWS_UNTIL = 10      # rounds of 10 us with the eight flows sending, then the cut
RESEND_AFTER = 6      # rounds after the cut: far below the 300 us silence
DEAD_REPORTS = "pipe.StellarEgress.path_feedback.dead_reports"
TO_LEAF = "pipe.StellarEgress.path_feedback.to_leaf"
DEAD = "pipe.StellarIngress.failover.dead"
PATH_CHANGES = "pipe.StellarIngress.telemetry.path_changes"
CHANGE_FAILOVER = 3
FB_METRIC_DEAD = 8191
FAILOVER_P4 = Path("p4src/tna/include/control/failover.p4")
NOT_DOWN = ("            meta.alive = meta.live;", "")


def _run(fabric, *, leaf2_knows: bool, prog=None) -> tuple[dict, list[int], int, int]:
    """Eight flows send from leaf1 every 10 us until the cut, then stop (a job waiting out its
    timeout); leaf2's host sends a packet to leaf1 every 10 us throughout (its own traffic); 60 us
    after the cut every flow resends its last PSN.  Returns the switches, leaf1's uplinks of those
    resends, the uplink via spine1 and how many flows were on it before the cut."""
    switches = lab(fabric, prog=prog)
    leaf1, leaf2 = switches["leaf1"], switches["leaf2"]
    via1 = uplink_of(fabric, "leaf1", "spine1")
    last: dict[int, int] = {}
    on_via1 = set()
    resent: list[int] = []
    for r in range(FLOWS_UNTIL + RESEND_AFTER + 2):
        if r == FLOWS_UNTIL:
            down = uplink_of(fabric, "leaf2", "spine1")
            switches["spine1"].set_port_up(fabric.switches["leaf2"].ports[down].peer_port, False)
            if leaf2_knows:
                leaf2.set_port_up(down, False)
            for name in ("leaf2", "spine1"):
                switches[name].advance(1)
        sends = []
        if r < FLOWS_UNTIL:
            sends = [roce(H1, H2, qp, r) for qp in QPS]
            last = {qp: r for qp in QPS}
        elif r == FLOWS_UNTIL + RESEND_AFTER:
            sends = [roce(H1, H2, qp, last[qp]) for qp in QPS]
        for port, frame in out_of(leaf1, 1, sends, settle_us=5):
            qp = unshim(frame)[BTH].dqpn
            if r < FLOWS_UNTIL and port == via1:
                on_via1.add(qp)
            if r == FLOWS_UNTIL + RESEND_AFTER:
                resent.append(port)
            link = fabric.switches["leaf1"].ports[port]
            carry(fabric, switches, link.peer_switch, link.peer_port, [frame], settle_us=5)
        carry(fabric, switches, "leaf2", 1, [roce(H2, H1, 90, r)], settle_us=5)   # leaf2's own traffic
    return switches, resent, via1, len(on_via1)


def _dead_path_index(fabric) -> int:
    """to_leaf's index at leaf1 of (leaf2, the path via spine1)."""
    path = [p.number for p in fabric.switches["leaf1"].uplinks].index(uplink_of(fabric, "leaf1", "spine1"))
    return feedback.leaf_ids(fabric)["leaf2"] << 3 | path


def test_a_leaf_reports_its_dead_uplink_and_the_first_resend_takes_the_live_spine(fabric):
    switches, resent, via1, on_via1 = _run(fabric, leaf2_knows=True)
    assert on_via1 >= 1                                                        # flows were on spine1
    assert switches["leaf2"].counter_read(DEAD_REPORTS, 0)[0] >= 1            # leaf2 reported the path
    assert switches["leaf1"].register_read(TO_LEAF, _dead_path_index(fabric)) & 0xFFFFFFFF == FB_METRIC_DEAD
    assert len(resent) == len(QPS) and via1 not in resent                      # every resend on spine2
    assert switches["leaf1"].counter_read(PATH_CHANGES, CHANGE_FAILOVER)[0] >= 1


def test_control_a_leaf_that_does_not_see_its_uplink_die_reports_nothing(fabric):
    switches, resent, via1, on_via1 = _run(fabric, leaf2_knows=False)
    assert switches["leaf2"].counter_read(DEAD_REPORTS, 0)[0] == 0
    assert switches["leaf1"].register_read(TO_LEAF, _dead_path_index(fabric)) & 0xFFFFFFFF != FB_METRIC_DEAD
    assert resent.count(via1) >= on_via1 >= 1                                 # resends go to the dead spine


def test_negative_control_a_member_reported_dead_that_does_not_count_down_keeps_its_flows(
        fabric, tmp_path_factory):
    switches, resent, via1, on_via1 = _run(fabric, leaf2_knows=True,
                                           prog=_variant(tmp_path_factory, NOT_DOWN, FAILOVER_P4))
    assert switches["leaf2"].counter_read(DEAD_REPORTS, 0)[0] >= 1
    assert switches["leaf1"].register_read(TO_LEAF, _dead_path_index(fabric)) & 0xFFFFFFFF == FB_METRIC_DEAD
    assert resent.count(via1) >= on_via1 >= 1
