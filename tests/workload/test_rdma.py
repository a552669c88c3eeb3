"""Reacting RoCEv2 NICs (fabric_sim.rdma) on a two-host wire whose faults the test controls:
go-back-N after a reorder, DCQCN's rate cut on CE, a collective step waiting for the previous
one.  Each mechanism has its negative control (no fault -> no reaction)."""
import heapq
import itertools
from dataclasses import dataclass, field

import pytest

from fabric_sim.rdma import OP_CNP, OP_WRITE_ONLY, DcqcnParams, NicParams, RdmaNetwork, build_frame
from fabric_sim.roce import ECN_CE, RoceFlowTemplate, parse_roce

L2 = 42  # BTH offset


@dataclass
class _Host:
    name: str
    ip: str
    mac: str
    leaf: str
    capacity_gbps: float = 100.0


@dataclass
class _Switch:
    mac: str = "02:00:00:00:00:fe"


@dataclass
class _Fabric:
    hosts: dict = field(default_factory=dict)
    switches: dict = field(default_factory=dict)


class Wire:
    """A 1 µs wire between hosts: ``fault(frame) -> list of (extra delay, frame)`` rewrites what
    arrives (drop, delay, CE-mark); events on one heap like SimFabric's."""

    def __init__(self, fault=None):
        self.heap, self.seq, self.now_us = [], itertools.count(), 0.0
        self.deliver = None
        self.fault = fault or (lambda f: [(0.0, f)])
        self.by_ip = {}

    def at(self, t, fn, sync=True):
        heapq.heappush(self.heap, (t, next(self.seq), fn))

    def inject(self, t, host, frame):
        dst = self.by_ip[frame[30:34]]
        for extra, f in self.fault(frame):
            self.at(t + 1.0 + extra, lambda f=f: self.deliver(self.now_us, dst, f))

    def run(self, until_us=1e9):
        while self.heap and self.heap[0][0] <= until_us:
            t, _, fn = heapq.heappop(self.heap)
            self.now_us = t
            fn()


def pair(fault=None, params=NicParams()):
    fab = _Fabric()
    fab.switches["leaf"] = _Switch()
    wire = Wire(fault)
    for name, ip in (("a", "10.0.0.1"), ("b", "10.0.0.2")):
        fab.hosts[name] = _Host(name, ip, "02:00:00:00:00:0" + ("1" if name == "a" else "2"), "leaf")
        wire.by_ip[bytes(int(x) for x in ip.split("."))] = name
    net = RdmaNetwork(wire, fab, params)
    return wire, net


def _opcode(frame):
    return frame[L2]


def _psn(frame):
    return int.from_bytes(frame[L2 + 9:L2 + 12], "big")


def test_frames_match_scapy_built_rocev2_packets():
    ref = RoceFlowTemplate("02:00:00:00:00:01", "02:00:00:00:00:fe", "10.0.0.1", "10.0.0.2", 0x123,
                           payload_len=256, udp_sport=50000).packet(7, ip_id=14)
    payload = (bytes(range(256)) * 2)[:256]
    mine = build_frame(bytes.fromhex("020000000001"), bytes.fromhex("0200000000fe"), 0x0A000001, 0x0A000002, 50000, 0x123, 7,
                       OP_WRITE_ONLY, payload, 2, 26, 14)
    assert mine == ref  # same bytes, IPv4 checksum and ICRC included
    f = parse_roce(mine)
    assert (f.psn, f.dqpn, f.ecn, f.dscp) == (7, 0x123, 2, 26)


def test_in_order_delivery_needs_no_retransmission():
    wire, net = pair()
    t = net.transfer("a", "b", 40 * 4096)
    net.start()
    wire.run()
    assert t.done_us is not None and t.delivered == 40
    assert (t.retransmits, t.naks, t.reorders) == (0, 0, 0)


def test_go_back_n_resends_from_the_expected_psn_after_a_reorder():
    # PSN 5 is held back 3 µs: PSNs 6.. arrive first, the responder NAKs with ePSN 5, and the
    # requester resends 5 and everything after it.
    def fault(frame):
        if _opcode(frame) == OP_WRITE_ONLY and _psn(frame) == 5 and not (frame[19] & 1):
            return [(3.0, frame)]
        return [(0.0, frame)]

    wire, net = pair(fault)
    t = net.transfer("a", "b", 40 * 4096)
    net.start()
    wire.run()
    assert t.done_us is not None and t.delivered == 40
    assert t.reorders >= 1  # the late PSN 5 arrived behind a later one
    assert t.naks == 1  # one NAK per sequence error, not one per out-of-order packet
    # go-back-N: every packet sent after PSN 5 before the NAK came back is sent again
    assert t.retransmits >= 2


def _tail_loss(params=NicParams()):
    """A 10-packet message whose last packet (PSN 9) is lost once: no later packet triggers a
    NAK, so only the timeout recovers it."""
    dropped = []

    def fault(frame):
        if _opcode(frame) == OP_WRITE_ONLY and _psn(frame) == 9 and not dropped:
            dropped.append(1)
            return []
        return [(0.0, frame)]

    wire, net = pair(fault, params)
    t = net.transfer("a", "b", 10 * 4096)
    net.start()
    wire.run()
    return t


def test_a_lost_tail_packet_is_recovered_by_the_timeout():
    t = _tail_loss()
    assert t.done_us is not None and t.delivered == 10 and t.timeouts == 1
    # go back to the last acknowledged PSN (ACKs are coalesced, so earlier PSNs go again too)
    assert 1 <= t.retransmits <= 10
    assert t.done_us > NicParams().rto_us


def _ce_marks(frame):
    if _opcode(frame) == OP_WRITE_ONLY:
        b = bytearray(frame)
        b[15] = (b[15] & 0xFC) | ECN_CE
        return [(0.0, bytes(b))]
    return [(0.0, frame)]


def test_dcqcn_cuts_the_rate_on_ce_and_the_transfer_takes_longer():
    wire, net = pair(_ce_marks)
    slow = net.transfer("a", "b", 200 * 4096)
    net.start()
    wire.run()
    wire2, net2 = pair()
    fast = net2.transfer("a", "b", 200 * 4096)
    net2.start()
    wire2.run()
    assert slow.cnps > 0 and slow.min_rate_gbps < 60  # each CNP cuts Rc by alpha/2
    assert fast.cnps == 0 and fast.min_rate_gbps is None  # negative control: no CE, no cut
    assert slow.done_us > 1.5 * fast.done_us
    # the responder rate-limits CNPs to one per cnp_interval_us
    assert slow.cnps <= slow.done_us / DcqcnParams().cnp_interval_us + 1


def test_dcqcn_off_ignores_cnps():
    wire, net = pair(_ce_marks, NicParams(dcqcn=DcqcnParams(enabled=False)))
    t = net.transfer("a", "b", 200 * 4096)
    net.start()
    wire.run()
    assert t.cnps > 0 and t.min_rate_gbps is None


def test_the_rate_recovers_after_the_cnps_stop():
    marked = {"n": 0}

    def fault(frame):
        if _opcode(frame) == OP_WRITE_ONLY and marked["n"] < 40:
            marked["n"] += 1
            return _ce_marks(frame)
        return [(0.0, frame)]

    wire, net = pair(fault)
    t = net.transfer("a", "b", 3000 * 4096)
    net.start()
    wire.run()
    q = t  # the QP is gone once complete; recovery shows in the tail's pace
    gaps = [b - a for a, b in zip(t.delivery_times[-200:], t.delivery_times[-199:])]
    line_gap = 4154 * 8 / 100e3
    assert q.min_rate_gbps < 60
    assert sum(gaps) / len(gaps) < 1.3 * line_gap  # back near line rate by the end


def test_a_collective_step_waits_for_the_previous_one():
    wire, net = pair()
    first = net.transfer("a", "b", 20 * 4096)
    second = net.transfer("b", "a", 20 * 4096, start_us=None).after(first)
    net.start()
    wire.run()
    assert second.started_us == pytest.approx(first.done_us)
    assert second.done_us > first.done_us
    # negative control: without the dependency both run at once
    wire2, net2 = pair()
    a = net2.transfer("a", "b", 20 * 4096)
    b = net2.transfer("b", "a", 20 * 4096, start_us=0.0)
    net2.start()
    wire2.run()
    assert b.started_us == 0.0 < a.done_us


def test_a_delayed_step_delays_the_whole_collective():
    def slow_first(frame):
        if _opcode(frame) == OP_WRITE_ONLY and frame[30:34] == bytes([10, 0, 0, 2]):
            return [(20.0, frame)]
        return [(0.0, frame)]

    def chain(fault):
        wire, net = pair(fault)
        s1 = net.transfer("a", "b", 8 * 4096)
        s2 = net.transfer("b", "a", 8 * 4096, start_us=None).after(s1)
        net.start()
        wire.run()
        return s2.done_us

    assert chain(slow_first) > chain(None) + 15


def test_cnp_frames_go_to_the_requester_qp():
    seen = []

    def fault(frame):
        if _opcode(frame) == OP_CNP:
            seen.append(frame)
        return _ce_marks(frame)

    wire, net = pair(fault)
    net.transfer("a", "b", 4 * 4096)
    net.start()
    wire.run()
    assert seen and all(f[30:34] == bytes([10, 0, 0, 1]) for f in seen)


def _slow_pair(ack_timer_us, gbps=0.1, timeout_exp=8):
    wire, net = pair(params=NicParams(ack_timer_us=ack_timer_us, timeout_exp=timeout_exp))
    for nic in net.nics.values():
        nic.line_gbps = gbps  # a QP crawling at 100 Mb/s: 16 packets take 5.3 ms
    return wire, net


def test_the_ack_timer_keeps_a_slow_qp_from_timing_out():
    wire, net = _slow_pair(ack_timer_us=4.0)
    t = net.transfer("a", "b", 40 * 4096)
    net.start()
    wire.run()
    assert t.done_us is not None and t.timeouts == 0 and t.retransmits == 0


def test_without_the_ack_timer_coalescing_makes_a_slow_qp_time_out():  # negative control
    wire, net = _slow_pair(ack_timer_us=1e9)
    t = net.transfer("a", "b", 40 * 4096)
    net.start()
    wire.run()
    assert t.done_us is not None and t.timeouts > 0 and t.retransmits > 0


def test_the_retransmission_timeout_is_4_096_us_times_two_to_the_exponent():
    assert NicParams(timeout_exp=14).rto_us == 4.096 * 16384
    done = {}
    for exp in (10, 12):  # the tail-loss recovery waits exactly one timeout
        t = _tail_loss(NicParams(timeout_exp=exp))
        assert t.timeouts == 1
        done[exp] = t.done_us
    assert done[12] - done[10] == pytest.approx(4.096 * (4096 - 1024), abs=5.0)


def test_acks_and_cnps_share_the_control_dscp():
    seen = {}

    def fault(frame):
        seen.setdefault(_opcode(frame), set()).add(frame[15] >> 2)
        return _ce_marks(frame)

    wire, net = pair(fault)
    net.transfer("a", "b", 40 * 4096)
    net.start()
    wire.run()
    from fabric_sim.rdma import DSCP_CNP, OP_ACK
    assert seen[OP_ACK] == seen[OP_CNP] == {DSCP_CNP} and seen[OP_WRITE_ONLY] == {26}


def _two_messages(channel):
    """Message 1 is CE-marked all along (DCQCN cuts its QP's rate); message 2 follows on the same
    (channel) or a fresh (None) QP, unmarked.  Returns both transfers."""
    marking = [True]

    def fault(frame):
        return _ce_marks(frame) if marking[0] else [(0.0, frame)]

    wire, net = pair(fault)
    first = net.transfer("a", "b", 300 * 4096, channel=channel)
    second = net.transfer("a", "b", 100 * 4096, start_us=None, channel=channel).after(first)
    first.callbacks.append(lambda t, now: marking.__setitem__(0, False))
    net.start()
    wire.run()
    return net, first, second


def test_a_persistent_qp_keeps_its_dcqcn_state_and_psns_across_messages():
    net, first, second = _two_messages(channel=0)
    assert len(net._send) == 1 and second.psn0 == first.packets  # one QP, PSNs run on
    _, f2, fresh = _two_messages(channel=None)  # negative control: a new QP per message
    assert fresh.psn0 == 0
    assert first.min_rate_gbps < 50 and f2.min_rate_gbps < 50
    # the carried-over (cut) rate makes the second message slower than on a fresh QP at line rate
    assert second.done_us - second.started_us > 1.3 * (fresh.done_us - fresh.started_us)


def test_each_seed_draws_its_own_qp_numbers_and_udp_ports():
    def qps(seed):
        wire, _ = pair()
        net = RdmaNetwork(wire, _Fabric(hosts=wire_hosts, switches={"leaf": _Switch()}), seed=seed)
        s, _ = net.qp("a", "b", 0, 0.0)
        return s.qpn, s.sport

    wire0, net0 = pair()
    wire_hosts = net0.fabric.hosts
    assert qps(1) == qps(1) and qps(1) != qps(2)
