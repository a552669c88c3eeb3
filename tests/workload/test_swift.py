"""Swift (fabric_sim.swift in the NICs of fabric_sim.rdma) against its published behaviour
(Kumar et al., SIGCOMM 2020): flows sharing a bottleneck converge near their fair share, the link
stays near full, and the round-trip delay settles at the target rather than at what the buffer
allows.  The bottleneck is test_dcqcn's: one byte-served 100G FIFO (its ECN marks are ignored:
Swift reacts to delay only).  On the packet-level fabric, the negative control: with congestion
control off, an incast fills the leaf's queue until PFC pauses the senders; Swift keeps it below.
"""
import statistics

import pytest
from test_dcqcn import GBPS, share

from fabric_sim.experiment import RunSpec, nic_params, run
from fabric_sim.rdma import DcqcnParams, NicParams, frame_bytes
from fabric_sim.swift import SwiftParams, SwiftState

SWIFT = NicParams(dcqcn=DcqcnParams(enabled=False), swift=SwiftParams())
NO_CC = NicParams(dcqcn=DcqcnParams(enabled=False))
HORIZON_US = 9000.0


def bottleneck(n_flows: int, nic: NicParams):
    """``share`` with a probe every 10 µs over the last third: (delay, target) of each QP that
    has a delay sample, and the bottleneck queue in bytes."""
    delays, queue = [], []

    def during(net, sim):
        def probe(t: float) -> None:
            for qp in net.send_qp_of.values():
                s = qp.swift
                if s is not None and s.delay_us is not None:
                    delays.append((s.delay_us, s.p.target_us(s.cwnd, s.hops)))
            queue.append(sim.queued)
            if t + 10 < HORIZON_US:
                sim.at(t + 10, lambda: probe(t + 10))

        sim.at(HORIZON_US * 2 / 3, lambda: probe(HORIZON_US * 2 / 3))

    per_flow, util, flows, sim = share(n_flows, nic, horizon_us=HORIZON_US, during=during)
    return per_flow, util, delays, queue


@pytest.mark.parametrize("n_flows", [2, 4])
def test_swift_flows_sharing_a_bottleneck_converge_near_the_fair_share_and_keep_it_full(n_flows):
    per_flow, util, delays, _ = bottleneck(n_flows, SWIFT)
    fair = GBPS / n_flows
    assert util >= 0.95, (per_flow, util)
    assert all(abs(x - fair) <= 0.10 * fair for x in per_flow), per_flow


def test_swift_holds_the_delay_near_its_target_and_the_queue_below_what_the_window_allows():
    _, _, delays, queue = bottleneck(4, SWIFT)
    errors = [abs(d - target) / target for d, target in delays]
    assert statistics.median(errors) <= 0.05 and max(errors) <= 0.25, statistics.median(errors)
    target = statistics.median(t for _, t in delays)
    queue_us = statistics.median(queue) * 8 / (GBPS * 1e3)
    assert queue_us < target  # the queue is part of the delay, never more
    _, _, _, queue_off = bottleneck(4, NO_CC)  # negative control: the windows alone set the queue
    assert statistics.median(queue_off) > 2.5 * statistics.median(queue)
    assert statistics.median(queue_off) >= 0.9 * 4 * NO_CC.window * frame_bytes(NO_CC.payload)


def test_target_delay_has_the_base_the_hop_part_and_flow_scaling_between_its_bounds():
    p = SwiftParams()
    few, many = p.fs_span
    assert p.target_us(many, 0) == pytest.approx(p.base_target_us)  # many packets: no scaling
    assert p.target_us(few, 0) == pytest.approx(p.base_target_us + p.fs_range_us)
    assert p.target_us(0.01, 0) == pytest.approx(p.base_target_us + p.fs_range_us)  # clamped
    assert p.target_us(many, 4) - p.target_us(many, 2) == pytest.approx(2 * p.h_us)
    assert p.target_us(10, 0) > p.target_us(40, 0)  # a smaller window earns a larger target


def test_additive_increase_is_ai_packets_per_window_and_a_decrease_is_bounded_and_once_per_rtt():
    s = SwiftState(SwiftParams(), hops=2)
    w = s.cwnd
    for psn in range(int(w)):
        s.on_send(psn, 0.0)
    for psn in range(int(w)):  # one window acknowledged packet by packet, fast: below target
        s.on_ack(psn, psn + 1, 5.0)
    assert s.cwnd == pytest.approx(w + 1, rel=0.05)
    before = s.cwnd
    s.on_send(100, 10.0)
    s.on_ack(int(w), 101, 10.0 + 1000.0)  # a delay far above target: cut, by at most max_mdf
    assert s.cwnd == pytest.approx(before * (1 - s.p.max_mdf))
    cut = s.cwnd
    s.on_send(101, 1010.0)
    s.on_ack(101, 102, 1060.0)  # again above target, but within one RTT of the last cut
    assert s.cwnd >= cut


def test_below_one_packet_of_window_the_sender_paces_one_packet_per_srtt_over_cwnd():
    s = SwiftState(SwiftParams(), hops=2)
    s.cwnd, s.srtt = 0.25, 20.0
    assert s.pacing_us() == pytest.approx(80.0) and s.window() > 1000
    s.cwnd = 3.7
    assert s.pacing_us() == 0.0 and s.window() == 3


def test_the_responders_ack_hold_is_not_counted_as_fabric_delay():
    s = SwiftState(SwiftParams(), hops=2)
    s.on_send(0, 0.0)
    s.on_ack_sent(1, 4.0)  # coalescing held the ACK 4 µs after the packet arrived
    s.on_ack(0, 1, 10.0)
    assert s.delay_us == pytest.approx(6.0)


def test_a_run_spec_selects_swift_and_a_nic_refuses_two_controls():
    p = nic_params(RunSpec("a2a", "sym", "ecmp", 1, dcqcn="swift"))
    assert p.swift == SwiftParams() and not p.dcqcn.enabled
    with pytest.raises(ValueError, match="one congestion control"):
        NicParams(swift=SwiftParams())
    with pytest.raises(ValueError, match="unknown congestion control"):
        nic_params(RunSpec("a2a", "sym", "ecmp", 1, dcqcn="timely"))


@pytest.fixture(scope="module")
def incast():
    """15 x 512 KB into one 100G port of the lab, lossless, with Swift and with no control."""
    return {cc: run(RunSpec("incast", "sym", "ecmp", 3, nbytes=512 * 1024, dcqcn=cc)) for cc in ("swift", "off")}


def test_on_the_fabric_swift_keeps_an_incast_below_pfc_where_no_control_pauses(incast):
    swift, off = incast["swift"], incast["off"]
    for row in (swift, off):
        assert row["incomplete"] == 0 and row["drops_headroom"] == 0 and row["timeouts"] == 0
        assert row["completion_us"] <= 1.05 * row["ideal_us"]  # both keep the receiver's port busy
    # negative control: without a control the queue grows until PFC pauses, on and off, throughout
    assert off["xoff_sent"] > 100 and off["pause_us_total"] > 1000
    # Swift pauses only for its first windows (15 senders x 15 packets at t = 0)
    assert swift["pause_us_total"] < off["pause_us_total"] / 10 and swift["xoff_sent"] < off["xoff_sent"] / 10
