"""Swift: delay-based, window-based congestion control at the sender (Kumar et al., "Swift:
Delay is Simple and Effective for Congestion Control in the Datacenter", SIGCOMM 2020).

Why: the fabric study's NICs run DCQCN, which htsim (the independent simulator the network and
host model is cross-checked against) does not implement; htsim's RDMA-style controls are Swift,
HPCC, EQDS and NDP.  Swift needs nothing from the switches (HPCC needs in-band telemetry), only
the round-trip delay the sender measures on each ACK, so our NIC can run the same control as
htsim and the two simulators can be compared with congestion control on.

The algorithm (the paper's Algorithm 1, one window on the whole round-trip delay as htsim models
it), per ACK that acknowledges ``n`` new packets and measures ``delay`` (the ACK's arrival minus
the send time of the newest packet it acknowledges):

* the delay is the fabric's: an ACK that the responder held back (ACK coalescing: every
  ``ack_every`` packets or after ``ack_timer_us``) echoes how long it held it since the newest
  packet arrived, and that hold is subtracted, as Swift separates endpoint delay from fabric delay
  with the timestamps its ACKs carry (htsim acknowledges every packet at once, so holds nothing);
* target = base + hops x h + fs(cwnd): a base target, a per-hop part (hops = links on the path)
  and flow-based scaling fs = clamp(a / sqrt(cwnd) + b, 0, fs_range), with a and b chosen so that
  fs is fs_range at the small end of ``fs_span`` (packets of window) and 0 at its large end (more
  flows, smaller windows, a larger target: fairness among many flows);
* delay < target: additive increase, cwnd += ai x n / cwnd (cwnd >= 1) or ai x n (cwnd < 1),
  i.e. ``ai`` packets per round trip;
* otherwise, at most once per round trip (since the last decrease, smoothed RTT): multiplicative
  decrease cwnd *= max(1 - beta x (delay - target) / delay, 1 - max_mdf);
* a retransmission (NAK or timeout) cuts cwnd by ``max_mdf`` (at most once per round trip), as
  htsim's Swift does after a loss recovery;
* cwnd stays within ``window_bounds``; below one packet the sender paces one packet every
  srtt / cwnd instead of using a window.

The constants (``SwiftParams``) are those htsim's Swift source (``sim/swift.cpp``) configures, so
the cross-check runs both simulators with the same control; the paper does not fix one set for
every fabric.  Times are µs, windows packets.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional


@dataclass(frozen=True)
class SwiftParams:
    """Swift's constants as htsim configures them (``SwiftSrc``; htsim's driver sets the initial
    window): base target 20 µs, h = base / 6.55 per hop, flow scaling over 5 x base between 0.1
    and 100 packets of window, ai = 1 packet per RTT, beta = 0.8, max_mdf = 0.5, window between
    10 bytes (in packets of 4 KB) and 1000 packets (``window_bounds``), initial window 15 packets."""

    # the target delay: base, per hop, and flow scaling's range and the windows it spans
    base_target_us: float = 20.0
    h_us: float = 20.0 / 6.55
    fs_range_us: float = 100.0
    fs_span: tuple[float, float] = (0.1, 100.0)  # windows (packets) of full and of no scaling
    # the window's reactions
    ai: float = 1.0
    beta: float = 0.8
    max_mdf: float = 0.5
    # the window's bounds and start (packets)
    window_bounds: tuple[float, float] = (10 / 4096, 1000.0)
    init_cwnd: float = 15.0

    @property
    def fs_alpha(self) -> float:
        lo, hi = self.fs_span
        return self.fs_range_us / (1 / math.sqrt(lo) - 1 / math.sqrt(hi))

    @property
    def fs_beta(self) -> float:
        return -self.fs_alpha / math.sqrt(self.fs_span[1])

    def target_us(self, cwnd: float, hops: int) -> float:
        """The target round-trip delay of a window of ``cwnd`` packets over ``hops`` links."""
        fs = min(self.fs_range_us, max(0.0, self.fs_alpha / math.sqrt(cwnd) + self.fs_beta)) if cwnd > 0 else 0.0
        return self.base_target_us + hops * self.h_us + fs


class SwiftState:
    """One queue pair's Swift sender: its window, smoothed RTT and the send times it measures
    delay from."""

    __slots__ = ("p", "hops", "cwnd", "srtt", "last_decrease", "sent", "held", "delay_us", "decreases")

    def __init__(self, params: SwiftParams, hops: int) -> None:
        self.p, self.hops = params, hops
        self.cwnd = params.init_cwnd
        self.srtt = 0.0  # no sample yet
        self.last_decrease = -math.inf
        self.sent: dict[int, float] = {}  # PSN -> time of its latest transmission
        self.held: dict[int, float] = {}  # an ACK's PSN -> how long its responder held it (echoed)
        self.delay_us: Optional[float] = None  # the latest delay sample
        self.decreases = 0

    def window(self) -> int:
        """Packets the QP may have in flight: whole packets of the window; below one packet,
        pacing (``pacing_us``) decides instead."""
        return max(1, int(self.cwnd + 1e-9)) if self.cwnd >= 1 else 1 << 30

    def pacing_us(self) -> float:
        """Gap between packets when the window is below one packet (0: window mode)."""
        return self.srtt / self.cwnd if self.cwnd < 1 and self.srtt > 0 else 0.0

    def on_send(self, psn: int, t: float) -> None:
        self.sent[psn] = t

    def on_ack_sent(self, epsn: int, held_us: float) -> None:
        """The responder sends an ACK of ``epsn`` ``held_us`` after the newest packet it covers
        arrived (the echo the ACK carries to the requester)."""
        self.held[epsn] = held_us

    def on_ack(self, old_una: int, epsn: int, t: float) -> None:
        """An ACK moved the first unacknowledged PSN from ``old_una`` to ``epsn`` at ``t``."""
        sent_at = self.sent.get(epsn - 1)
        held = self.held.pop(epsn, 0.0)
        for psn in range(old_una, epsn):
            self.sent.pop(psn, None)
            self.held.pop(psn, None)  # echoes of duplicate ACKs
        if sent_at is None:
            return
        delay = t - sent_at - held
        may_decrease = self._may_decrease(t)  # against the RTT known before this sample
        self.delay_us = delay
        self.srtt = delay if self.srtt == 0 else 0.875 * self.srtt + 0.125 * delay
        p = self.p
        target = p.target_us(self.cwnd, self.hops)
        acked = epsn - old_una
        if delay < target:
            self.cwnd += p.ai * acked / self.cwnd if self.cwnd >= 1 else p.ai * acked
        elif may_decrease:
            self._cut(max(1 - p.beta * (delay - target) / delay, 1 - p.max_mdf), t)
        self.cwnd = min(p.window_bounds[1], max(p.window_bounds[0], self.cwnd))

    def on_retransmit(self, t: float) -> None:
        """A NAK or a timeout: the packet was lost (or overtaken); back off by ``max_mdf``."""
        if self._may_decrease(t):
            self._cut(1 - self.p.max_mdf, t)
            self.cwnd = max(self.p.window_bounds[0], self.cwnd)

    def _may_decrease(self, t: float) -> bool:
        return t - self.last_decrease >= self.srtt

    def _cut(self, factor: float, t: float) -> None:
        self.cwnd *= factor
        self.last_decrease = t
        self.decreases += 1
