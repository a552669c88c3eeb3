"""Data-plane failover (issue 4, "Failover")."""
from __future__ import annotations

from testkit.leaf import CHANGE_FAILOVER, DROP_NO_LIVE_MEMBER, UPLINK_PATH_SET, roce

DST = "10.0.2.60"
QPS = range(2000, 2024)


def _send_round(leaf, psn: int) -> dict[int, int]:
    for qp in QPS:
        leaf.send(1, roce("10.0.1.1", DST, qp=qp, psn=psn))
    return {d.qp: d.port for d in leaf.drain_output(settle_us=10)}


def test_dead_port_is_never_used_and_its_flows_move(leaf):
    before = _send_round(leaf, 0)
    on_3 = [qp for qp, port in before.items() if port == 3]
    assert on_3 and len(on_3) < len(QPS), "setup: flows should start on both uplinks"
    leaf.port_down(3)
    after = _send_round(leaf, 1)
    assert len(after) == len(QPS), "flows must continue"
    assert 3 not in after.values()
    assert leaf.path_changes(CHANGE_FAILOVER) == len(on_3)
    # Flows that were not on the dead port did not move.
    assert all(after[qp] == before[qp] for qp in QPS if qp not in on_3)
    # And they stay put afterwards.
    again = _send_round(leaf, 2)
    assert again == after and leaf.path_changes(CHANGE_FAILOVER) == len(on_3)


def test_control_without_the_liveness_write_flows_stay_on_port_3(leaf):
    before = _send_round(leaf, 0)
    after = _send_round(leaf, 1)
    assert after == before and 3 in after.values()
    assert leaf.path_changes(CHANGE_FAILOVER) == 0


def test_all_members_down_drops_and_counts(leaf):
    leaf.port_down(3)
    leaf.port_down(4)
    assert _send_round(leaf, 0) == {}
    assert leaf.drops(DROP_NO_LIVE_MEMBER) == len(QPS)


def test_port_back_up_is_used_by_new_flows(leaf):
    leaf.port_down(3)
    _send_round(leaf, 0)
    leaf.port_down(3, down=False)
    leaf.set_path_set(UPLINK_PATH_SET, [3, 4], [0, 500], modify=True)
    leaf.send(1, roce("10.0.1.1", DST, qp=9999, psn=0))
    out = leaf.drain_output(settle_us=10)
    assert [d.port for d in out] == [3]


def test_path_change_digest_reports_failover_moves(leaf):
    leaf.set_params(report_path_changes=1)
    before = _send_round(leaf, 0)
    leaf.sw.digests()
    leaf.port_down(3)
    _send_round(leaf, 1)
    reports = [dict((n, v) for n, _, v in d.fields) for d in leaf.sw.digests()
               if d.name == "path_change_digest_t"]
    moved = sorted(qp for qp, port in before.items() if port == 3)
    assert sorted(r["l4_id"] for r in reports) == moved
    assert all(r["old_port"] == 3 and r["new_port"] == 4 and r["reason"] == CHANGE_FAILOVER
               for r in reports)


def test_controller_membership_change_moves_flows_off_removed_ports(leaf):
    before = _send_round(leaf, 0)
    on_3 = [qp for qp, port in before.items() if port == 3]
    leaf.set_path_set(UPLINK_PATH_SET, [4, 5], modify=True)   # the controller's recomputed set
    after = _send_round(leaf, 1)
    assert 3 not in after.values() and len(after) == len(QPS)
    from testkit.leaf import CHANGE_MEMBERSHIP
    assert leaf.path_changes(CHANGE_MEMBERSHIP) == len(on_3)
