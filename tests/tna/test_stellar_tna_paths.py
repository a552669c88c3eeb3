"""Stellar on Tofino: adaptive choice by congestion feedback, flowlet ordering, failover.

Feedback delay (where the two architectures differ): on v1model the egress pipeline writes a
port's queue delay into a register that the very next ingress packet reads.  On Tofino a
register belongs to one gress, so the delay reaches ingress in a feedback packet (an egress
mirror copy recirculated through port 68): the rule tested here is that a choice made *after*
the feedback packet has been through ingress sees the congestion, and one made before it does
not (test_feedback_arrives_after_the_egress_pass)."""
from __future__ import annotations

import pytest

from control_plane.contract import TNA_DRE_SCORE_SCALE

from tna_leaf import (CHANGE_DRAIN, CHANGE_FAILOVER, CHANGE_GAP, CHANGE_NEW, GROUP, ING, PROFILES,
                      TnaLeaf, roce)

DST = "10.0.2.9"
# every profile of the program, and the two targets of the full one (tna_leaf.PROFILES)
on_profiles = pytest.mark.parametrize("profile", list(PROFILES.values()), ids=list(PROFILES))
on_dre_profiles = pytest.mark.parametrize("profile", [(1, False), (1, True)], ids=["dre", "no-dre"])


def _new_flow_ports(leaf, qps) -> list[int]:
    return [leaf.flow_port(q) for q in qps]


@on_dre_profiles
def test_new_flows_avoid_the_congested_uplink(profile):
    # without the DRE (the Tofino-1 profile) new flows take feedback's best member directly
    leaf = TnaLeaf(profile[0], no_dre=profile[1])
    leaf.congest(2, 50)   # port 2 (member 0) shows 50 us of queue
    leaf.congest(3, 1)    # port 3 reports ~1 us: better by more than the hysteresis
    assert leaf.best() == 1
    assert set(_new_flow_ports(leaf, range(100, 116))) == {3}
    assert leaf.counter(f"{ING}.telemetry.path_changes", CHANGE_NEW) >= 16


@on_dre_profiles
def test_negative_control_without_feedback_flows_are_hashed_onto_the_congested_uplink(profile):
    leaf = TnaLeaf(profile[0], feedback=False, no_dre=profile[1])
    leaf.congest(2, 50)
    leaf.congest(3, 1)
    ports = _new_flow_ports(leaf, range(100, 116))
    assert 2 in ports and 3 in ports   # ECMP by hash: half onto the congested port


def _reports(interval_ns: int, idle_us: list[float]) -> list[int]:
    """Feedback copies (egress mirrors) made by each burst of 5 packets of one flow onto an
    uplink, the bursts ``idle_us`` apart (the first at once)."""
    leaf = TnaLeaf(feedback_interval_ns=interval_ns)
    counts = []
    psn = 0
    for gap in idle_us:
        leaf.sw.advance(gap)
        before = leaf.sw.stats["mirrored"]
        for _ in range(5):
            leaf.send(roce("10.0.1.1", DST, 7, psn))
            psn += 1
        leaf.sw.advance(5)
        leaf.out()
        counts.append(leaf.sw.stats["mirrored"] - before)
    return counts


def test_feedback_is_rate_limited_per_port_also_after_a_long_idle():
    # one copy per interval (the cells start at 0, as if each port had reported at time 0):
    # a burst at 2 ms reports once, one 100 us later not, one 1 ms later once more, one 3 s
    # later once (3 s > 2^31 ns: the compare's second sign test; a single signed compare
    # would stay silent there until the clock wrapped past the cell)
    assert _reports(1_000_000, [2000, 100, 1000, 3_000_000]) == [1, 0, 1, 1]
    # negative control: interval 0, every packet reports
    assert _reports(0, [2000, 100]) == [5, 5]


def test_feedback_arrives_after_the_egress_pass():
    leaf = TnaLeaf()
    sw = leaf.sw
    before = sw.stats["recirculated"]
    leaf.send(roce("10.0.1.1", DST, 1, 0))
    leaf.out()
    # the data packet's egress pass produced one feedback packet, which went through ingress
    assert sw.stats["recirculated"] == before + 1
    assert sw.register_read(f"{ING}.path_choice.group_best", GROUP) & 0xFFFF == 0


def test_an_established_flow_keeps_its_path_within_the_flowlet_timeout():
    leaf = TnaLeaf(flowlet_timeout_ns=200_000)
    first = leaf.flow_port(7)
    other = 5 - first                 # the other uplink (2 <-> 3)
    leaf.congest(first, 50)
    leaf.congest(other, 1)
    assert leaf.best() == {2: 0, 3: 1}[other]
    ports = []
    for psn in range(1, 6):           # back-to-back: no gap, the flow stays
        leaf.send(roce("10.0.1.1", DST, 7, psn))
        ports += [p for p, _ in leaf.out()]
    assert ports == [first] * 5
    # after an idle gap longer than the timeout it moves to the better uplink
    leaf.sw.advance(300)
    leaf.send(roce("10.0.1.1", DST, 7, 6))
    assert [p for p, _ in leaf.out()] == [other]
    assert leaf.counter(f"{ING}.telemetry.path_changes", CHANGE_GAP) == 1


def test_negative_control_a_zero_timeout_moves_the_flow_mid_burst():
    leaf = TnaLeaf(flowlet_timeout_ns=0)
    first = leaf.flow_port(7)
    other = 5 - first
    leaf.congest(first, 50)
    leaf.congest(other, 1)
    leaf.send(roce("10.0.1.1", DST, 7, 1))
    assert [p for p, _ in leaf.out()] == [other]   # moved with no gap: could reorder


@on_profiles
def test_port_down_moves_flows_at_once_without_the_controller(profile):
    leaf = TnaLeaf(profile[0], no_dre=profile[1])
    flows = {q: leaf.flow_port(q) for q in range(16)}
    dead = flows[0]
    other = 5 - dead
    on_dead = [q for q, p in flows.items() if p == dead]
    leaf.sw.set_port_up(dead, False)  # pktgen's port-down packet reaches ingress
    assert leaf.sw.stats["pktgen_port_down"] == 1
    member = {2: 0, 3: 1}[dead]
    assert leaf.sw.register_read(f"{ING}.failover.alive", GROUP) == 0xFF ^ (1 << member)
    for q in on_dead:
        leaf.send(roce("10.0.1.1", DST, q, 1))
        assert [p for p, _ in leaf.out()] == [other]
    assert leaf.counter(f"{ING}.telemetry.path_changes", CHANGE_FAILOVER) == len(on_dead)


def test_negative_control_without_the_port_down_packet_flows_black_hole():
    leaf = TnaLeaf()
    leaf.sw.pktgen_port_down_app = None   # packet generator not configured
    flows = {q: leaf.flow_port(q) for q in range(16)}
    dead = flows[0]
    on_dead = [q for q, p in flows.items() if p == dead]
    leaf.sw.set_port_up(dead, False)
    for q in on_dead:
        leaf.send(roce("10.0.1.1", DST, q, 1))
    assert leaf.out() == [] and leaf.sw.stats["port_down"] >= len(on_dead)


def _feedback(port: int, qdelay_ns: int, departed_ts: int = 0, qid: int = 4) -> bytes:
    # Ethernet 0x88B6, then feedback_h: 6 pad bits, remote 0, 9-bit port, 32-bit delay, 16-bit stamp,
    # 8-bit queue (4: the test leaf's elastic-class queue)
    body = ((port & 0x1FF) << 56 | qdelay_ns << 24 | departed_ts << 8 | qid).to_bytes(9, "big")
    return bytes(12) + b"\x88\xb6" + body + bytes(40)


def test_best_member_delays_are_16ns_units_saturating_at_524us():
    # group_best keeps 16-bit scores (bf-p4c's crossbar): 16 ns units below 524 us, one
    # saturated value at and above; a member must still be 4 us better to take over
    leaf = TnaLeaf()
    cell = lambda: leaf.sw.register_read(f"{ING}.path_choice.group_best", GROUP)
    leaf.send(_feedback(2, 1_000_000), port=68)          # 1 ms: saturated, still beats "none"
    assert cell() == (0 << 16) | 0x8000
    leaf.send(_feedback(3, 600_000), port=68)            # 600 us: saturated too, not better
    assert leaf.best() == 0
    leaf.send(_feedback(3, 520_000), port=68)            # below 524 us: better by far
    assert cell() == (1 << 16) | 520_000 // 16
    leaf.send(_feedback(2, 516_001), port=68)            # 3.999 us better: not enough
    assert leaf.best() == 1
    leaf.send(_feedback(2, 515_984), port=68)            # 4.016 us better: takes over
    assert cell() == (0 << 16) | 515_984 // 16


def test_feedback_is_accepted_only_from_the_recirculation_port():
    leaf = TnaLeaf()
    leaf.send(_feedback(3, 1000), port=68)      # from egress, via port 68: counts
    assert leaf.best() == 1
    spoof = TnaLeaf()
    spoof.send(_feedback(3, 1000), port=1)      # negative control: a host cannot steer paths
    assert spoof.sw.register_read(f"{ING}.path_choice.group_best", GROUP) & 0xFFFF == 0xFFFF
    assert spoof.out() == []


def _departed(leaf, port: int, qid: int) -> int:
    """flowlet.departed's cell for (port, queue): the index is {port, qid}."""
    return leaf.sw.register_read(f"{ING}.flowlet.departed", port << 5 | qid)


def test_feedback_records_the_departure_of_its_own_port_and_queue_only():
    # departures are kept per (port, queue), indexed from the feedback header alone: uplink 3's
    # report sets its cell and no other port's or queue's
    leaf = TnaLeaf()
    leaf.send(_feedback(3, 1000, departed_ts=0x1234, qid=4), port=68)
    assert _departed(leaf, 3, 4) == 0x10000 | 0x1234
    assert _departed(leaf, 2, 4) == 0 and _departed(leaf, 3, 5) == 0
    # negative control: the same report from a host port is not feedback, records nothing
    spoof = TnaLeaf()
    spoof.send(_feedback(3, 1000, departed_ts=0x1234, qid=4), port=1)
    assert _departed(spoof, 3, 4) == 0


def _stamp(t_us: float) -> int:
    """The 16-bit arrival stamp the program bridges (ns >> 6)."""
    return (int(t_us * 1000) >> 6) & 0xFFFF


def _queue_two_then_prefer_other(leaf) -> tuple[int, int]:
    """Flow qp 7 on uplink P; P slowed to 100 us per packet; psn 1 leaves at once (t=5 us),
    psn 2 waits behind it until t=105 us; then Q becomes the best member (feedback: P at
    50 us with psn 1 as its last departure, Q idle)."""
    sw = leaf.sw
    P = leaf.flow_port(7)                       # psn 0, t=0, new (its output is taken)
    Q = 5 - P
    sw.set_queue_rate(10_000, port=P)
    sw.advance(5)
    leaf.send(roce("10.0.1.1", DST, 7, 1))
    sw.advance(1)
    leaf.send(roce("10.0.1.1", DST, 7, 2))
    leaf.send(_feedback(P, 50_000, _stamp(5)), port=68)
    leaf.send(_feedback(Q, 0, 0), port=68)
    assert leaf.best() == {2: 0, 3: 1}[Q]
    return P, Q


def _drain_run(drain: bool, target: int = 1, margin_ns: int = 0,
               measured: int = 0xFF, no_dre: bool = False, mouse: bool = False, drain_any: bool = False,
               move_guards: int = 15) -> tuple[list[tuple[int, int]], int, int, int]:
    """psn 3 arrives while psn 2 is still queued on P (not drained); psn 4 after both left
    (250 us after psn 3), well within the 1 ms flowlet timeout.  Returns (port, psn) in
    departure order.  ``mouse``: the flow stays below the elephant threshold."""
    from scapy.all import Ether
    leaf = TnaLeaf(target, flowlet_timeout_ns=1_000_000, elephant_bytes=1 << 31 if mouse else 100, drain=drain,
                   drain_margin_ns=margin_ns, measured=measured, no_dre=no_dre, drain_any=drain_any,
                   move_guards=move_guards)
    sw = leaf.sw
    P, Q = _queue_two_then_prefer_other(leaf)
    sw.advance(4)                               # t=10 us
    leaf.send(roce("10.0.1.1", DST, 7, 3))      # psn 2 still queued: must stay on P
    sw.advance(250)                             # psn 2 leaves at 105 us, psn 3 at 205 us
    leaf.send(roce("10.0.1.1", DST, 7, 4))      # t=260 us: everything of the flow has left
    sw.advance(500)
    order = [(p, Ether(f)["BTH"].psn) for p, f in leaf.out()]
    assert sw.now_us < 1000                     # all within one flowlet timeout
    return order, P, Q, leaf.counter(f"{ING}.telemetry.path_changes", CHANGE_DRAIN)


@on_profiles
def test_an_elephant_moves_as_soon_as_its_packets_left_the_old_port(profile):
    # on Tofino2 the resubmit data sits in the first 64 of 192 port-metadata bits
    order, P, Q, drain_moves = _drain_run(drain=True, target=profile[0], no_dre=profile[1])
    assert order == [(P, 1), (P, 2), (P, 3), (Q, 4)]   # moved, and in order
    assert drain_moves == 1                             # counted as a drain move


def test_a_drain_move_waits_for_the_downstream_skew_margin():
    # drained here, but psn 3 (250 us earlier) may still be queued in the next switch: with
    # a 300 us margin psn 4 stays; with 200 us it moves
    order, P, Q, drain_moves = _drain_run(drain=True, margin_ns=300_000)
    assert order == [(P, 1), (P, 2), (P, 3), (P, 4)] and drain_moves == 0
    order, P, Q, drain_moves = _drain_run(drain=True, margin_ns=200_000)
    assert order == [(P, 1), (P, 2), (P, 3), (Q, 4)] and drain_moves == 1


@on_dre_profiles
def test_negative_control_without_drain_detection_it_waits_for_the_timeout(profile):
    order, P, Q, drain_moves = _drain_run(drain=False, target=profile[0], no_dre=profile[1])
    assert order == [(P, 1), (P, 2), (P, 3), (P, 4)] and drain_moves == 0


# drain_any (params.drain_any_flows): a DCQCN-paced RoCE flow rarely pauses for a flowlet
# timeout; its drain point is the move point it has, with the same proof as an elephant's.
@on_dre_profiles
def test_a_mouse_moves_at_its_drain_point_without_reordering(profile):
    order, P, Q, drain_moves = _drain_run(drain=True, mouse=True, drain_any=True, no_dre=profile[1])
    assert order == [(P, 1), (P, 2), (P, 3), (Q, 4)] and drain_moves == 1


def test_negative_control_without_drain_any_a_mouse_stays_until_its_gap():
    order, P, Q, drain_moves = _drain_run(drain=True, mouse=True, drain_any=False)
    assert order == [(P, 1), (P, 2), (P, 3), (P, 4)] and drain_moves == 0


def test_negative_control_a_mouse_drain_move_without_the_drain_proof_reorders():
    # MOVE_GUARD_DRAIN_PROOF cleared: psn 3 moves while psn 2 is still queued on P
    order, P, Q, drain_moves = _drain_run(drain=True, mouse=True, drain_any=True, move_guards=0xE)
    assert order[:3] == [(P, 1), (Q, 3), (P, 2)] and drain_moves >= 1


def test_a_mouse_keeps_its_queue_through_the_drain_pass():
    # the second pass takes the first pass's class: a mouse's drain test must not file it
    # as an elephant (the elephant queue is another FIFO: that would reorder it)
    from scapy.all import Ether
    leaf = TnaLeaf(flowlet_timeout_ns=1_000_000, drain_any=True)
    P, Q = _queue_two_then_prefer_other(leaf)
    leaf.sw.advance(4)
    leaf.send(roce("10.0.1.1", DST, 7, 3))          # a drain test (not drained): stays on P
    assert leaf.sw.stats["resubmitted"] >= 1
    assert leaf.counter(f"{ING}.telemetry.elephants", 1) == 0   # no packet counted as an elephant


def _gap_run(gap_drain: bool, measured: int = 0xFF,
             no_dre: bool = False) -> tuple[list[tuple[int, int]], int, int, int]:
    """A zero flowlet timeout: every packet is at a gap.  psn 3 arrives while psn 2 is
    queued on P; psn 4 after both left."""
    from scapy.all import Ether
    leaf = TnaLeaf(flowlet_timeout_ns=0, drain=False, gap_drain=gap_drain, measured=measured,
                   no_dre=no_dre)
    sw = leaf.sw
    P, Q = _queue_two_then_prefer_other(leaf)
    sw.advance(4)
    leaf.send(roce("10.0.1.1", DST, 7, 3))
    sw.advance(250)
    leaf.send(roce("10.0.1.1", DST, 7, 4))
    sw.advance(500)
    order = [(p, Ether(f)["BTH"].psn) for p, f in leaf.out()]
    return order, P, Q, leaf.counter(f"{ING}.telemetry.path_changes", CHANGE_GAP)


@on_dre_profiles
def test_a_gap_move_waits_until_the_flow_drained(profile):
    # a flow's packets never change (port, queue) while an earlier packet of the flow is
    # queued here, even when its gap exceeds the flowlet timeout
    order, P, Q, gap_moves = _gap_run(gap_drain=True, no_dre=profile[1])
    assert order == [(P, 1), (P, 2), (P, 3), (Q, 4)] and gap_moves == 1


@on_dre_profiles
def test_negative_control_a_gap_move_without_the_drain_test_reorders(profile):
    order, P, Q, gap_moves = _gap_run(gap_drain=False, no_dre=profile[1])
    assert order[:3] == [(P, 1), (Q, 3), (P, 2)]


# The controller's level of a member is its estimate of the queue behind it downstream; a
# level it never measured (no dre_base.levels entry, or the `measured` bit clear) is unknown, not 0.
# No flow moves off such a member at a drain point or a gap (the v1model rule); new flows are
# still placed by the DRE.  `measured` below is the bitmap over members (P = member 0 or 1).

def _member_bit(port: int) -> int:
    return 1 << {2: 0, 3: 1}[port]


def test_a_drain_move_off_an_unmeasured_member_is_refused():
    order, P, Q, drain_moves = _drain_run(drain=True, measured=0)
    assert order == [(P, 1), (P, 2), (P, 3), (P, 4)] and drain_moves == 0


def test_only_the_member_the_flow_leaves_must_be_measured():
    # Q (the member it would move to) measured, P not: refused; P measured, Q not: moves
    _, P, Q, _ = _drain_run(drain=True)
    order, _, _, drain_moves = _drain_run(drain=True, measured=_member_bit(Q))
    assert order == [(P, 1), (P, 2), (P, 3), (P, 4)] and drain_moves == 0
    order, _, _, drain_moves = _drain_run(drain=True, measured=_member_bit(P))
    assert order == [(P, 1), (P, 2), (P, 3), (Q, 4)] and drain_moves == 1


@on_dre_profiles
def test_a_gap_move_off_an_unmeasured_member_is_refused(profile):
    order, P, Q, gap_moves = _gap_run(gap_drain=True, measured=0, no_dre=profile[1])
    assert order == [(P, 1), (P, 2), (P, 3), (P, 4)] and gap_moves == 0


def test_new_flows_are_placed_on_unmeasured_members():
    leaf = TnaLeaf(measured=0)
    leaf.congest(2, 50)
    leaf.congest(3, 1)
    assert set(_new_flow_ports(leaf, range(100, 116))) == {3}
    assert leaf.counter(f"{ING}.telemetry.path_changes", CHANGE_NEW) >= 16


def test_a_refused_drain_test_takes_no_second_pass_and_counts_its_bytes_once():
    leaf = TnaLeaf(flowlet_timeout_ns=1_000_000, elephant_bytes=100, measured=0)
    sw = leaf.sw
    _queue_two_then_prefer_other(leaf)
    before = sw.stats["resubmitted"]
    sw.advance(4)
    leaf.send(roce("10.0.1.1", DST, 7, 3))      # would take a drain-test pass if P were measured
    assert sw.stats["resubmitted"] == before
    assert leaf.counter(f"{ING}.telemetry.moves_refused", 0) >= 1
    size = len(roce("10.0.1.1", DST, 7, 3)) - 14
    assert size >= 64 and _dre_units(leaf) == 4 * (size >> 6)


def _arrivals_behind_a_congested_downlink(measured: int) -> list[int]:
    """The drain scenario, with the next hop modelled as a fixed extra delay: P's spine holds
    its packets 300 us in a congested downlink (what a measured level would report), Q's
    none.  Returns the psns in the order they reach the destination."""
    from scapy.all import Ether
    leaf = TnaLeaf(flowlet_timeout_ns=1_000_000, elephant_bytes=100, measured=measured)
    sw = leaf.sw
    P, Q = _queue_two_then_prefer_other(leaf)
    arrivals: list[tuple[float, int]] = []

    def run(us: int) -> None:
        for _ in range(us):
            sw.advance(1)
            for port, frame in leaf.out():
                arrivals.append((sw.now_us + (300 if port == P else 0), Ether(frame)["BTH"].psn))

    run(4)
    leaf.send(roce("10.0.1.1", DST, 7, 3))
    run(250)
    leaf.send(roce("10.0.1.1", DST, 7, 4))
    run(500)
    return [psn for _, psn in sorted(arrivals)]


def test_refusing_moves_off_unmeasured_members_keeps_the_flow_in_order_downstream():
    assert _arrivals_behind_a_congested_downlink(measured=0) == [1, 2, 3, 4]


def test_negative_control_a_move_off_a_member_believed_idle_reorders_downstream():
    # the hole: the rendered level 0 taken as a measurement lets psn 4 overtake psn 3
    # (psn 4, moved to the idle Q at 260 us, even overtakes psn 1 and 2 held at P's spine)
    order = _arrivals_behind_a_congested_downlink(measured=0xFF)
    assert sorted(order) == [1, 2, 3, 4] and order.index(4) < order.index(3)


def test_a_flow_moved_while_packets_are_queued_is_reordered():
    # the bad thing drain detection prevents: a zero flowlet timeout moves psn 3 past psn 2
    from scapy.all import Ether
    leaf = TnaLeaf(flowlet_timeout_ns=0, drain=False, gap_drain=False)
    sw = leaf.sw
    P, Q = _queue_two_then_prefer_other(leaf)
    sw.advance(4)
    leaf.send(roce("10.0.1.1", DST, 7, 3))
    sw.advance(500)
    assert [(p, Ether(f)["BTH"].psn) for p, f in leaf.out()] == [(P, 1), (Q, 3), (P, 2)]


def test_a_later_departure_from_another_queue_of_the_port_is_not_a_drain():
    # psn 2 of the elephant waits in its queue (3) on P; a critical packet (queue 5, strict
    # priority above it) that arrives later leaves P first: only queue 3's departures may say
    # the elephant drained
    from scapy.all import Ether
    leaf = TnaLeaf(flowlet_timeout_ns=1_000_000, elephant_bytes=100)
    sw = leaf.sw
    P, Q = _queue_two_then_prefer_other(leaf)
    # a route whose only member is P
    sw.insert_entry(f"{ING}.routing.lpm", {"hdr.ipv4.dst_addr": (0x0A000300, 24)},
                    f"{ING}.routing.set_group", {"group": 50, "count": 1, "prior": 0})
    sw.insert_entry(f"{ING}.member_port.members", {"meta.group": 50, "meta.chosen": 0},
                    f"{ING}.member_port.set_port", {"port": P})
    for i in range(8):
        sw.insert_entry(f"{ING}.path_choice.hash_member",
                        {"meta.group": 50, "meta.flow_hash[2:0]": i},
                        f"{ING}.path_choice.set_hashed", {"member": 0})
    sw.insert_entry(f"{ING}.queueing.queue_map", {"meta.traffic_class": 2, "meta.elephant": 1},
                    f"{ING}.queueing.set_queue", {"qid": 5})  # critical elephants: queue 5
    sw.advance(1)
    leaf.send(roce("10.0.1.2", "10.0.3.3", 200, 0, dscp=46))   # t=7 us, queue 5 on P
    sw.advance(99)                              # t=106 us: psn 1's slot ends, the critical
    # packet (higher priority) leaves before psn 2; psn 2 leaves next, at ~206 us
    leaf.send(roce("10.0.1.1", DST, 7, 3))      # psn 2 still queued on P
    sw.advance(500)
    out = [(p, Ether(f)["BTH"].dqpn, Ether(f)["BTH"].psn) for p, f in leaf.out()]
    assert (P, 200, 0) in out
    crit = out.index((P, 200, 0))
    assert out.index((P, 7, 2)) > crit          # the critical packet left first
    assert (P, 7, 3) in out                     # psn 3 was not moved past psn 2


def _reserve_job_on_port_3(leaf) -> None:
    sw = leaf.sw
    sw.insert_entry(f"{ING}.member_port.members", {"meta.group": 30, "meta.chosen": 0},
                    f"{ING}.member_port.set_port", {"port": 3})
    for i in range(8):
        sw.insert_entry(f"{ING}.path_choice.hash_member",
                        {"meta.group": 30, "meta.flow_hash[2:0]": i},
                        f"{ING}.path_choice.set_hashed", {"member": 0})
    sw.insert_entry(f"{ING}.routing.reservation",
                    {"hdr.ipv4.src_addr": (0x0A000101, 0xFFFFFFFF),
                     "hdr.ipv4.dst_addr": (0x0A000200, 0xFFFFFF00)},
                    f"{ING}.routing.reserve_group", {"group": 30, "count": 1, "prior": 0}, priority=10)


def test_a_job_reservation_keeps_the_jobs_flows_on_its_reserved_uplink():
    leaf = TnaLeaf(feedback=False)   # (with feedback, port 3's reports would draw the rest)
    _reserve_job_on_port_3(leaf)
    job = {leaf.flow_port(q) for q in range(16)}                          # 10.0.1.1 -> 10.0.2.9
    others = {leaf.flow_port(q, src="10.0.1.7") for q in range(16)}      # not in the job
    assert job == {3} and others == {2, 3}


def test_negative_control_without_the_reservation_the_jobs_flows_spread():
    leaf = TnaLeaf(feedback=False)
    assert {leaf.flow_port(q) for q in range(16)} == {2, 3}


def _gap_without_feedback(gap_drain: bool) -> tuple[int, int]:
    leaf = TnaLeaf(feedback=False, gap_drain=gap_drain)
    first = leaf.flow_port(7)
    member = {2: 0, 3: 1}[first]
    levels = {f"l{i}": 0 for i in range(8)}
    levels["measured"] = 0xFF                   # (this test is about departures)
    levels[f"l{member}"] = 100 * TNA_DRE_SCORE_SCALE                  # the controller now steers away from it
    leaf.sw.insert_entry(f"{ING}.dre_base.levels", {"meta.group": GROUP}, f"{ING}.dre_base.set_levels",
                         levels)
    leaf.sw.advance(300)                        # a gap longer than the 200 us timeout
    leaf.send(roce("10.0.1.1", DST, 7, 1))
    (port, _), = leaf.out()
    return first, port


def test_without_departure_reports_a_gap_never_counts_as_drained():
    first, port = _gap_without_feedback(gap_drain=True)
    assert port == first                        # no feedback for the port: not proven


def test_negative_control_without_the_gap_drain_test_the_gap_moves_it():
    first, port = _gap_without_feedback(gap_drain=False)
    assert port == 5 - first


def _dre_units(leaf) -> int:
    """The estimate (64 B units, this and the previous window) summed over group 1's members:
    register dre<j> holds members 2j and 2j+1 as the 16-bit lanes of each half."""
    sums = [leaf.sw.register_read(f"{ING}.dre.dre{j}", GROUP) & 0xFFFFFFFF for j in range(4)]
    return sum((c >> 16) + (c & 0xFFFF) for c in sums)


def test_a_packet_taking_a_drain_test_pass_counts_its_bytes_once():
    leaf = TnaLeaf(flowlet_timeout_ns=1_000_000, elephant_bytes=100)
    sw = leaf.sw
    _queue_two_then_prefer_other(leaf)          # psn 0..2 on P, Q now the best member
    before = sw.stats["resubmitted"]
    sw.advance(4)
    leaf.send(roce("10.0.1.1", DST, 7, 3))      # kept on P: a drain-test pass (not drained)
    assert sw.stats["resubmitted"] == before + 1
    size = len(roce("10.0.1.1", DST, 7, 3)) - 14  # IPv4 total length
    assert size >= 64 and _dre_units(leaf) == 4 * (size >> 6)


def test_the_same_packets_without_drain_tests_count_the_same():
    leaf = TnaLeaf(flowlet_timeout_ns=1_000_000, elephant_bytes=100, drain=False)
    sw = leaf.sw
    _queue_two_then_prefer_other(leaf)
    sw.advance(4)
    leaf.send(roce("10.0.1.1", DST, 7, 3))
    size = len(roce("10.0.1.1", DST, 7, 3)) - 14
    assert size >= 64 and _dre_units(leaf) == 4 * (size >> 6)


@pytest.mark.parametrize("dre, no_dre", [(True, False), (False, False), (True, True)],
                         ids=["dre", "dre-off", "no-dre-profile"])
def test_every_member_down_is_dropped_and_counted_as_no_live_member(dre, no_dre):
    # a new flow with the DRE on asks for a second pass; dropped in the first, it is still
    # counted (once), and the bitmap's bits above the group's count are not members
    leaf = TnaLeaf(dre=dre, no_dre=no_dre)
    leaf.sw.set_port_up(2, False)
    leaf.sw.set_port_up(3, False)
    assert leaf.sw.stats["pktgen_port_down"] == 2
    leaf.send(roce("10.0.1.1", DST, 40, 0))
    assert leaf.out() == []
    drops = [leaf.counter(f"{ING}.telemetry.drops", r) for r in range(8)]
    assert drops[6] == 1 and sum(drops) == 1          # DROP_NO_LIVE_MEMBER, nothing else
    # control: a member back up (link and bit, as the controller does) forwards again
    leaf.sw.set_port_up(3, True)
    leaf.sw.register_write(f"{ING}.failover.alive", GROUP, 0xFF ^ 0b01)
    leaf.send(roce("10.0.1.1", DST, 41, 0))
    assert [p for p, _ in leaf.out()] == [3]
