"""RoCEv2 NICs that react: RC queue pairs with PSNs, a window, go-back-N and DCQCN (or Swift).

Why: a fixed send schedule decides a job's length before the first packet; RDMA NICs instead
slow down on congestion (DCQCN), stop at their window, pause on PFC and resend everything after a
PSN gap (go-back-N).  Those reactions are what turn reordering, loss and queueing into job time,
so the study needs them.

Model:

* **Queue pairs.**  A message (``Transfer``: one RDMA WRITE) is posted on an RC QP.  With
  ``channel=None`` every message gets its own QP; with a channel number the QP of (source,
  destination, channel) is created once and kept, as NCCL keeps its QPs for the whole job: PSNs
  run on across messages and DCQCN state (rate, target, alpha) carries over.  QP numbers and UDP
  source ports are drawn from the network's ``seed`` (so each seed hashes differently).
* **Requester** sends PSN ``snd_nxt`` while ``snd_nxt < snd_una + window``, paced at its DCQCN
  rate ``Rc``; the NIC's port serialises its QPs at line rate, round robin among those whose
  pacing allows a packet now, with ACK/NAK/CNP frames first (they share one DSCP, ``DSCP_CNP``,
  so the switches give them the same priority queue in every mode).
* **Responder** accepts only the expected PSN (``epsn``).  A higher PSN is a sequence error: one
  NAK carrying ``epsn`` (out-of-order packets are dropped until ``epsn`` arrives, as RC
  responders do); a lower PSN is a duplicate, answered with an ACK.  In-order packets are
  acknowledged every ``ack_every`` packets, at each message's end, and otherwise at most
  ``ack_timer_us`` after the first unacknowledged one (ACK coalescing with a timer, so a QP
  slowed to a trickle still hears from its responder long before its timeout).
* **Go-back-N**: a NAK(e) sets ``snd_nxt = snd_una = e``; so does the retransmission timeout
  (no ACK progress for ``rto_us`` = 4.096 µs x 2^``timeout_exp``, the InfiniBand/RoCE local ACK
  timeout a QP is configured with; NCCL_IB_TIMEOUT sets the exponent).  Every packet sent again
  is counted as a retransmission.
* **DCQCN** (Zhu et al., SIGCOMM'15) with NVIDIA ConnectX's default parameters (``DcqcnParams``).
  The responder (NP) answers CE-marked packets with a CNP, at most one per QP per
  ``cnp_interval_us``; the requester (RP) on a CNP sets ``Rt = Rc`` and
  ``Rc *= max(1 - alpha/2, min_dec_factor)`` (at most once per ``rate_reduce_period_us``) and
  raises alpha; each ``alpha_timer_us`` without a CNP alpha decays by ``(1-g)``; a timer
  (``rate_timer_us``) and a byte counter (``byte_counter``) drive rate increase stages: fast
  recovery ``Rc = (Rt+Rc)/2`` while both stage counts are at most F, then additive increase
  (``Rt += R_AI``), then hyper increase (``Rt += i R_HAI``) once both passed F.
* **Swift** (Kumar et al., SIGCOMM 2020; ``fabric_sim.swift``) in place of DCQCN when
  ``NicParams.swift`` is set: each ACK's round-trip delay (from the send time of the newest packet
  it acknowledges) drives a window of packets in flight per QP, which bounds ``window`` further;
  below one packet the QP is paced instead.  A NAK or a timeout cuts the window.  An ACK echoes
  how long coalescing held it at the responder (handed to the requester's Swift state with the
  ACK's PSN, as Swift's ACKs carry timestamps), so the delay is the fabric's.
* **PFC**: a PAUSE from the NIC's leaf (``SimFabric.on_host_pause``) stops the NIC's data (class
  ``DATA_CLASS``) or its ACK/CNP frames (``CONTROL_CLASS``) until the XON; paused time per host is
  in ``RdmaNetwork.pause_us``.

All control packets (ACK, NAK, CNP) are real RoCEv2 frames that cross the fabric on the reverse
path, so they queue, can be lost, and are seen by the switches.  Times are virtual µs.
"""
from __future__ import annotations

import heapq
import itertools
import random
import struct
import zlib
from collections import deque
from dataclasses import dataclass, field
from ipaddress import IPv4Address
from typing import Callable, Optional

from fabric_sim.roce import ECN_CE, ECN_ECT0, ECN_NOT_ECT, ICRC_LEN, L2_L3_LEN, ROCEV2_UDP_PORT
from fabric_sim.swift import SwiftParams, SwiftState

OP_WRITE_ONLY = 0x0A  # RC RDMA WRITE Only
OP_ACK = 0x11  # RC Acknowledge (BTH + AETH)
OP_CNP = 0x81  # RoCEv2 Congestion Notification Packet
AETH_ACK = 0x1F  # syndrome: ACK, credits field "invalid" (no end-to-end credits)
AETH_NAK_PSN_SEQ = 0x60  # syndrome: NAK, PSN sequence error
DSCP_DATA = 26
DSCP_CNP = 48  # NVIDIA NICs' default cnp_dscp; ACKs and NAKs use it too (one control queue)
DATA_CLASS, CONTROL_CLASS = 0, 1  # PFC classes (fabric_sim.simfabric uses the same two)
PSN_MASK = 0xFFFFFF


@dataclass(frozen=True)
class DcqcnParams:
    """DCQCN constants: NVIDIA ConnectX-4 and later firmware defaults, from NVIDIA's public "DCQCN
    CC Parameters" page (MLNX_OFED sysfs names in brackets):

    * ``g`` = 5/1024: alpha = (1019/1024) alpha (+ 5/1024 with a CNP) [dce_tcp_g = 1019];
    * ``alpha_timer_us`` = 1 µs [dce_tcp_rtt]; ``alpha_init`` = 1023/1024 [initial_alpha_value];
    * ``rate_timer_us`` = 300 µs [rpg_time_reset]; ``byte_counter`` = 32767 B [rpg_byte_reset];
    * ``stages_f`` = 1 [rpg_threshold]; ``rai_gbps`` = 5 Mb/s [rpg_ai_rate];
      ``rhai_gbps`` = 50 Mb/s [rpg_hai_rate];
    * ``min_dec_factor`` = 0.5 [rpg_min_dec_fac 50%]; ``min_rate_gbps`` = 1 Mb/s [rpg_min_rate];
    * ``rate_reduce_period_us`` = 4 µs [rate_reduce_monitor_period];
    * ``cnp_interval_us`` = 4 µs [min_time_between_cnps, the NP side];
    * ``clamp_target`` = False [clamp_tgt_rate 0]: a CNP sets Rt = Rc only when
      ``clamp_target_after_timer`` [clamp_tgt_rate_after_time_inc 1] and the rate timer raised the
      rate since the last CNP; otherwise Rt keeps the higher target and fast recovery heads back
      to it.

    The DCQCN paper's own recommendation (g = 1/256, K = T = 55 µs, B = 10 MB, F = 5, R_AI = 40
    Mb/s, N = 50 µs) is ``DcqcnParams.paper()``."""

    g: float = 5 / 1024
    alpha_timer_us: float = 1.0
    rate_timer_us: float = 300.0
    byte_counter: int = 32767
    stages_f: int = 1
    rai_gbps: float = 0.005
    rhai_gbps: float = 0.050
    cnp_interval_us: float = 4.0
    rate_reduce_period_us: float = 4.0
    alpha_init: float = 1023 / 1024
    min_dec_factor: float = 0.5
    min_rate_gbps: float = 0.001
    clamp_target: bool = False
    clamp_target_after_timer: bool = True
    enabled: bool = True

    @classmethod
    def paper(cls) -> "DcqcnParams":
        return cls(g=1 / 256, alpha_timer_us=55.0, rate_timer_us=55.0, byte_counter=10 * 1024 * 1024, stages_f=5,
                   rai_gbps=0.040, rhai_gbps=0.400, cnp_interval_us=50.0, rate_reduce_period_us=0.0,
                   clamp_target=True)


@dataclass(frozen=True)
class NicParams:
    """What every NIC of a run shares.  ``payload`` 4096 B is RoCE's largest MTU (what AI fabrics
    run); ``window`` bounds packets in flight per QP; ``timeout_exp`` t gives the retransmission
    timeout 4.096 µs x 2^t (t = 14: 67 ms; NCCL's NCCL_IB_TIMEOUT defaults to 18-20, 1-4 s: sweep
    it); ``ack_every`` / ``ack_timer_us``: ACK coalescing (see the module docstring)."""

    payload: int = 4096
    window: int = 64
    ack_every: int = 16
    ack_timer_us: float = 4.0
    timeout_exp: int = 14
    dcqcn: DcqcnParams = field(default_factory=DcqcnParams)
    swift: Optional[SwiftParams] = None  # Swift instead of DCQCN (then ``dcqcn.enabled`` must be False)

    def __post_init__(self) -> None:
        if self.swift is not None and self.dcqcn.enabled:
            raise ValueError("a NIC runs one congestion control: Swift needs DcqcnParams(enabled=False)")

    @property
    def rto_us(self) -> float:
        return 4.096 * (1 << self.timeout_exp)


def frame_bytes(payload: int) -> int:
    return L2_L3_LEN + 12 + payload + ICRC_LEN


# IPv4 + UDP + BTH in one pack: version/IHL, TOS, total length, id, flags (DF), TTL, protocol,
# header checksum, source, destination; source port, destination port, length, checksum; opcode,
# flags, P_Key, reserved + destination QP, PSN
_HEADERS = struct.Struct("!BBHHHBBHIIHHHHBBHII")
_ICRC_PREFIX = zlib.crc32(b"\xff" * 8)  # the ICRC starts over 8 bytes of ones (the masked LRH)
_ICRC = struct.Struct("<I")


def build_frame(src_mac: bytes, dst_mac: bytes, src_ip: int, dst_ip: int, sport: int, dqpn: int,
                psn: int, opcode: int, payload: bytes, ecn: int, dscp: int, ip_id: int) -> bytes:
    """An untagged Ethernet/IPv4/UDP/BTH frame with valid IPv4 checksum and ICRC (the same
    layout as ``fabric_sim.roce.RoceFlowTemplate``; tests compare the two).

    Every frame a NIC sends is built here, so it does the work once: the IPv4 checksum is summed
    from the fields, the headers are packed twice (as sent, and with the fields the ICRC masks
    set to ones) and the ICRC runs over the masked headers and then the payload, so the payload
    is neither copied nor masked."""
    n = len(payload)
    total = 20 + 8 + 12 + n + ICRC_LEN
    tos = (dscp << 2) | ecn
    ip_id &= 0xFFFF
    s = ((0x45 << 8) | tos) + total + ip_id + 0x4000 + ((64 << 8) | 17) + (src_ip >> 16) + (src_ip & 0xFFFF) \
        + (dst_ip >> 16) + (dst_ip & 0xFFFF)
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    udp_len, dqpn, psn = 8 + 12 + n + ICRC_LEN, dqpn & 0xFFFFFF, psn & 0xFFFFFF
    headers = _HEADERS.pack(0x45, tos, total, ip_id, 0x4000, 64, 17, ~s & 0xFFFF, src_ip, dst_ip,
                            sport, ROCEV2_UDP_PORT, udp_len, 0, opcode, 0, 0xFFFF, dqpn, psn)
    # masked: TOS, TTL, IPv4 checksum, UDP checksum and the BTH's reserved byte before the QP
    masked = _HEADERS.pack(0x45, 0xFF, total, ip_id, 0x4000, 0xFF, 17, 0xFFFF, src_ip, dst_ip,
                           sport, ROCEV2_UDP_PORT, udp_len, 0xFFFF, opcode, 0, 0xFFFF, 0xFF000000 | dqpn, psn)
    crc = zlib.crc32(payload, zlib.crc32(masked, _ICRC_PREFIX)) & 0xFFFFFFFF
    return b"".join((dst_mac, src_mac, b"\x08\x00", headers, payload, _ICRC.pack(crc)))


def _mac(s: str) -> bytes:
    return bytes(int(x, 16) for x in s.split(":"))


class Transfer:
    """One RDMA WRITE message of ``packets`` packets from requester ``src`` to responder ``dst``,
    on its own QP (``channel`` None) or on the persistent QP of (src, dst, channel).  Filled in
    by the run: start, completion, counters."""

    def __init__(self, tid: int, src: str, dst: str, packets: int, kind: str = "job",
                 tag: Optional[str] = None, channel: Optional[int] = None) -> None:
        self.tid, self.src, self.dst, self.packets, self.kind, self.tag = tid, src, dst, packets, kind, tag
        self.channel = channel
        self.deps: list["Transfer"] = []
        self.dependents: list["Transfer"] = []
        self.callbacks: list[Callable[["Transfer", float], None]] = []  # run at completion
        self.waiting = 0
        self.start_at: Optional[float] = None  # earliest start (for time-triggered transfers)
        self.not_before: Optional[float] = None  # a dependent transfer starts no earlier than this
        self.psn0 = 0  # first PSN on its QP
        self.started_us: Optional[float] = None  # posted on its QP
        self.done_us: Optional[float] = None  # responder holds the whole message
        self.retransmits = 0
        self.naks = 0
        self.timeouts = 0
        self.reorders = 0  # first transmissions that arrived behind a later PSN
        self.ce = 0
        self.cnps = 0
        self.delivered = 0  # in-order packets
        self.min_rate_gbps: Optional[float] = None
        self.delivery_times: list[float] = []  # in-order delivery instants (for failover stalls)
        self.latencies: list[float] = []  # one-way latency of first transmissions

    def after(self, *deps: "Transfer") -> "Transfer":
        """Start only when every transfer in ``deps`` has completed (a collective step)."""
        for d in deps:
            self.deps.append(d)
            d.dependents.append(self)
        self.waiting = sum(d.done_us is None for d in self.deps)
        return self


def _msg_of(msgs: deque, psn: int) -> Optional[Transfer]:
    """The posted message that holds ``psn`` (messages are in PSN order; few are outstanding)."""
    for m in msgs:
        if psn < m.psn0 + m.packets:
            return m if psn >= m.psn0 else None
    return None


def _unwrap(field24: int, near: int) -> int:
    """A 24-bit PSN from the wire as the full PSN closest to ``near``."""
    d = (field24 - near) & PSN_MASK
    return near + d - (1 << 24) if d >= 1 << 23 else near + d


class _SendQP:
    __slots__ = ("qpn", "peer_qpn", "nic", "peer", "msgs", "snd_nxt", "snd_una", "snd_end", "max_sent", "rate",
                 "target", "alpha", "eligible", "t_stage", "b_stage", "bytes_since", "last_alpha",
                 "last_rate_timer", "last_cut", "cnp_in_period", "timer_raised", "last_progress", "rto_check",
                 "sport", "sent_at", "swift",
                 "queued", "last_tx", "last_size")

    def __init__(self, qpn: int, peer_qpn: int, nic: "Nic", peer: "Nic", now: float, sport: int) -> None:
        self.qpn, self.peer_qpn, self.nic, self.peer = qpn, peer_qpn, nic, peer
        self.msgs: deque[Transfer] = deque()  # posted and not yet fully acknowledged
        self.snd_nxt = self.snd_una = self.snd_end = 0
        self.max_sent = -1
        self.rate = self.target = nic.line_gbps
        self.alpha = nic.params.dcqcn.alpha_init
        self.eligible = now
        self.t_stage = self.b_stage = 0
        self.bytes_since = 0
        self.last_alpha = self.last_rate_timer = now
        self.last_cut = -1e18
        self.cnp_in_period = False
        self.timer_raised = False  # the rate timer raised the rate since the last CNP
        self.last_progress = now
        self.rto_check: Optional[float] = None
        self.sport = sport
        self.sent_at: dict[int, float] = {}
        # Swift's sender state (fabric_sim.swift); hops = links on a leaf-spine path
        swift = nic.params.swift
        hops = 2 if nic.host.leaf == peer.host.leaf else 4
        self.swift: Optional[SwiftState] = None if swift is None else SwiftState(swift, hops)
        self.queued = False  # in the NIC's ready deque or waiting heap
        self.last_tx = now  # the rate limiter spaces packets from the last one sent
        self.last_size = 0

    def repace(self) -> None:
        """The next packet may leave one frame time at the current rate after the last one
        (with Swift below a window of one packet: ``srtt / cwnd`` after it)."""
        gap = self.swift.pacing_us() if self.swift is not None else 0.0
        self.eligible = self.last_tx + (gap or self.last_size * 8 / (self.rate * 1e3))


class _RecvQP:
    __slots__ = ("qpn", "peer_qpn", "nic", "peer", "msgs", "epsn", "nak_sent", "last_cnp", "max_seen", "sport",
                 "sq", "unacked", "ack_due", "last_in")

    def __init__(self, qpn: int, peer_qpn: int, nic: "Nic", peer: "Nic", sport: int, sq: _SendQP) -> None:
        self.qpn, self.peer_qpn, self.nic, self.peer = qpn, peer_qpn, nic, peer
        self.msgs: deque[Transfer] = deque()  # posted and not yet complete, in PSN order
        self.epsn = 0
        self.nak_sent = False
        self.last_cnp = -1e18
        self.max_seen = -1
        self.sport = sport
        self.sq = sq  # the requester's side (send times for latency measurement; Swift's ACK echo)
        self.unacked = 0
        self.ack_due: Optional[float] = None
        self.last_in = 0.0  # arrival of the newest in-order packet (Swift's ACK echoes its hold)


class Nic:
    """One GPU's RoCEv2 NIC on the fabric: its QPs, its port's serialiser, its feedback.

    Scheduling keeps no per-packet scans: QPs that may send now wait in ``ready`` (round robin),
    QPs held back by their DCQCN pacing in the ``waiting`` heap by the time they may send; QPs
    with nothing to send (window full, no message) are in neither until an ACK or a post."""

    def __init__(self, net: "RdmaNetwork", host, line_gbps: float, params: NicParams) -> None:
        self.net, self.host, self.params = net, host, params
        self.name = host.name
        self.ip = int(IPv4Address(str(host.ip)))
        self.mac = _mac(host.mac)
        self.gw = _mac(net.fabric.switches[host.leaf].mac)
        self.line_gbps = line_gbps
        self.ctrl: deque[bytes] = deque()
        self.ready: deque[_SendQP] = deque()
        self.waiting: list[tuple[float, int, _SendQP]] = []
        self._seq = itertools.count()
        self.free_at = 0.0
        self._tx_at: Optional[float] = None
        self.paused = [False, False]  # PFC: [data class, control class]
        self._paused_since: dict[int, float] = {}
        self.paused_us = 0.0
        self.payload = bytes(range(256)) * (params.payload // 256) + bytes(params.payload % 256)

    def ser_us(self, nbytes: int) -> float:
        return nbytes * 8 / (self.line_gbps * 1e3)

    # ---- transmission scheduling
    def _can_send(self, q: _SendQP) -> bool:
        window = self.params.window if q.swift is None else min(self.params.window, q.swift.window())
        return q.snd_nxt < q.snd_end and q.snd_nxt < q.snd_una + window

    def activate(self, q: _SendQP, now: float) -> None:
        """``q`` may have something to send: put it where the scheduler finds it."""
        if q.queued or not self._can_send(q):
            return
        q.queued = True
        if q.eligible <= now + 1e-9:
            self.ready.append(q)
        else:
            # wake no later than the next rate-timer stage: a rate increase may move it forward
            d = self.params.dcqcn
            wake = min(q.eligible, q.last_rate_timer + d.rate_timer_us) if d.enabled else q.eligible
            heapq.heappush(self.waiting, (wake, next(self._seq), q))

    def kick(self, now: float) -> None:
        t = max(now, self.free_at)
        if not (self.ctrl and not self.paused[CONTROL_CLASS]):
            if self.paused[DATA_CLASS] or not (self.ready or self.waiting):
                return
            if not self.ready:
                t = max(t, self.waiting[0][0])
        if self._tx_at is not None and self._tx_at <= t:
            return
        self._tx_at = t
        self.net.sim.at(t, lambda: self._tx(t), sync=False)

    def _tx(self, t: float) -> None:
        if self._tx_at != t:
            return  # superseded by an earlier transmission opportunity
        self._tx_at = None
        if self.ctrl and not self.paused[CONTROL_CLASS]:
            frame = self.ctrl.popleft()
            self.net.sim.inject(t, self.name, frame)
            self.free_at = t + self.ser_us(len(frame))
        elif not self.paused[DATA_CLASS]:
            waiting, ready = self.waiting, self.ready
            while waiting and waiting[0][0] <= t + 1e-9:
                ready.append(heapq.heappop(waiting)[2])
            while ready:
                q = ready.popleft()
                q.queued = False
                if not self._can_send(q):
                    continue
                if q.eligible > t + 1e-9:
                    self._dcqcn_timers(q, t)  # a rate-timer stage may have raised its rate
                if q.eligible <= t + 1e-9:
                    self._send_data(q, t)
                    self.activate(q, t)
                    break
                self.activate(q, t)  # not yet (pacing, or a CNP slowed it): back to waiting
        self.kick(t)

    def _send_data(self, q: _SendQP, t: float) -> None:
        p = self.params
        psn = q.snd_nxt
        retx = psn <= q.max_sent
        if retx:
            m = _msg_of(q.msgs, psn)
            if m is not None:
                m.retransmits += 1
        else:
            q.max_sent = psn
        q.snd_nxt += 1
        frame = build_frame(self.mac, self.gw, self.ip, q.peer.ip, q.sport, q.peer_qpn, psn, OP_WRITE_ONLY,
                            self.payload, ECN_ECT0, DSCP_DATA, (psn << 1) | retx)
        q.sent_at[psn] = t
        if q.swift is not None:
            q.swift.on_send(psn, t)
        self.net.sim.inject(t, self.name, frame)
        size = len(frame)
        self.free_at = t + self.ser_us(size)
        self._dcqcn_timers(q, t)
        q.bytes_since += size
        if p.dcqcn.enabled and q.bytes_since >= p.dcqcn.byte_counter:
            q.bytes_since = 0
            q.b_stage += 1
            self._increase(q)
        q.last_tx, q.last_size = t, size
        q.repace()
        if q.rto_check is None:
            self._arm_rto(q, t)

    # ---- PFC
    def on_pause(self, cls: int, xoff: bool, t: float) -> None:
        if self.paused[cls] == xoff:
            return
        self.paused[cls] = xoff
        if xoff:
            self._paused_since[cls] = t
        else:
            self.paused_us += t - self._paused_since.pop(cls, t)
            self.kick(t)

    def pause_time_us(self, now: float) -> float:
        return self.paused_us + sum(now - since for since in self._paused_since.values())

    # ---- DCQCN reaction point
    def _dcqcn_timers(self, q: _SendQP, t: float) -> None:
        d = self.params.dcqcn
        if not d.enabled:
            return
        n = int((t - q.last_alpha) / d.alpha_timer_us + 1e-9)  # (float slack: a stage due now is due)
        if n > 0:  # alpha periods gone by: decay in each but one that saw a CNP
            q.last_alpha += n * d.alpha_timer_us
            q.alpha *= (1 - d.g) ** (n - 1 if q.cnp_in_period else n)
            q.cnp_in_period = False
        n = int((t - q.last_rate_timer) / d.rate_timer_us + 1e-9)
        if n > 0:
            q.last_rate_timer += n * d.rate_timer_us
            for _ in range(min(n, 64)):  # past 64 stages a QP is at line rate: count the rest
                q.t_stage += 1
                self._increase(q)
            q.timer_raised = True
            q.t_stage += max(0, n - 64)

    def _increase(self, q: _SendQP) -> None:
        d = self.params.dcqcn
        f = d.stages_f
        if q.t_stage > f and q.b_stage > f:
            q.target += d.rhai_gbps * (min(q.t_stage, q.b_stage) - f)
        elif q.t_stage > f or q.b_stage > f:
            q.target += d.rai_gbps
        q.target = min(q.target, self.line_gbps)
        q.rate = min(self.line_gbps, (q.target + q.rate) / 2)
        q.repace()

    def on_cnp(self, q: _SendQP, t: float) -> None:
        d = self.params.dcqcn
        m = q.msgs[0] if q.msgs else None
        if m is not None:
            m.cnps += 1
        if not d.enabled:
            return
        self._dcqcn_timers(q, t)
        if t - q.last_cut >= d.rate_reduce_period_us:
            q.last_cut = t
            if d.clamp_target or (d.clamp_target_after_timer and q.timer_raised):
                q.target = q.rate
            q.timer_raised = False
            q.rate = max(d.min_rate_gbps, q.rate * max(d.min_dec_factor, 1 - q.alpha / 2))
            q.t_stage = q.b_stage = 0
            q.bytes_since = 0
            q.last_rate_timer = t
            if m is not None and (m.min_rate_gbps is None or q.rate < m.min_rate_gbps):
                m.min_rate_gbps = q.rate
        q.alpha = (1 - d.g) * q.alpha + d.g
        q.cnp_in_period = True
        q.last_alpha = t
        q.repace()

    # ---- go-back-N requester
    def on_ack(self, q: _SendQP, epsn: int, nak: bool, t: float) -> None:
        if epsn > q.snd_una:
            if q.swift is not None:
                q.swift.on_ack(q.snd_una, epsn, t)
                q.repace()  # below one packet of window the pacing gap follows cwnd
            q.snd_una = epsn
            q.last_progress = t
            while q.msgs and q.msgs[0].psn0 + q.msgs[0].packets <= epsn:
                q.msgs.popleft()
        if nak:
            if q.msgs:
                q.msgs[0].naks += 1
            if q.swift is not None:
                q.swift.on_retransmit(t)
            q.snd_nxt = q.snd_una  # go back N: resend from the expected PSN
        elif q.snd_nxt < q.snd_una:
            q.snd_nxt = q.snd_una
        self.activate(q, t)
        self.kick(t)

    def _arm_rto(self, q: _SendQP, t: float) -> None:
        due = t + self.params.rto_us
        q.rto_check = due
        self.net.sim.at(due, lambda: self._rto(q, due), sync=False)

    def _rto(self, q: _SendQP, due: float) -> None:
        if q.rto_check != due:
            return
        q.rto_check = None
        if q.snd_una < q.snd_nxt and due - q.last_progress >= self.params.rto_us - 1e-9:
            if q.msgs:
                q.msgs[0].timeouts += 1
            if q.swift is not None:
                q.swift.on_retransmit(due)
            q.snd_nxt = q.snd_una
            q.last_progress = due
            self.activate(q, due)
            self.kick(due)
        if q.snd_una < q.snd_end:
            # the timer runs from the last ACK progress (or on from now, when nothing moved)
            progressed = q.last_progress + self.params.rto_us > due + 1e-9
            self._arm_rto(q, q.last_progress if progressed else due)

    # ---- responder
    def on_data(self, r: _RecvQP, psn: int, retx: bool, ecn: int, t: float) -> None:
        if not r.msgs:
            return  # a late duplicate of a completed message
        head = r.msgs[0]
        if not retx:
            if psn < r.max_seen:
                head.reorders += 1
            r.max_seen = max(r.max_seen, psn)
        if ecn == ECN_CE:
            head.ce += 1
            if t - r.last_cnp >= self.params.dcqcn.cnp_interval_us:
                r.last_cnp = t
                self._queue_ctrl(r, OP_CNP, 0, b"\x00" * 16, t)
        if psn == r.epsn:
            r.epsn += 1
            r.nak_sent = False
            head.delivered += 1
            head.delivery_times.append(t)
            sent = r.sq.sent_at.pop(psn, None)
            if sent is not None and not retx:
                head.latencies.append(t - sent)
            r.unacked += 1
            r.last_in = t
            if r.epsn == head.psn0 + head.packets:
                head.done_us = t
                r.msgs.popleft()
                self._ack(r, False, t)
                self.net.transfer_done(head, t)
            elif r.unacked >= self.params.ack_every:
                self._ack(r, False, t)
            elif r.ack_due is None:
                due = t + self.params.ack_timer_us
                r.ack_due = due
                self.net.sim.at(due, lambda: self._ack_timer(r, due), sync=False)
        elif psn > r.epsn:
            if not r.nak_sent:
                r.nak_sent = True
                self._ack(r, True, t)
        else:
            self._ack(r, False, t)  # duplicate: tell the requester where we are

    def _ack_timer(self, r: _RecvQP, due: float) -> None:
        if r.ack_due == due and r.unacked:
            self._ack(r, False, due)

    def _ack(self, r: _RecvQP, nak: bool, t: float) -> None:
        if r.sq.swift is not None and not nak:
            r.sq.swift.on_ack_sent(r.epsn, t - r.last_in)
        r.unacked = 0
        r.ack_due = None
        syndrome = AETH_NAK_PSN_SEQ if nak else AETH_ACK
        aeth = struct.pack("!I", (syndrome << 24) | (r.epsn & PSN_MASK))
        self._queue_ctrl(r, OP_ACK, r.epsn, aeth, t)

    def _queue_ctrl(self, r: _RecvQP, opcode: int, psn: int, payload: bytes, t: float) -> None:
        frame = build_frame(self.mac, self.gw, self.ip, r.peer.ip, r.sport, r.peer_qpn, psn, opcode,
                            payload, ECN_NOT_ECT, DSCP_CNP, 0)
        self.ctrl.append(frame)
        self.kick(t)


class RdmaNetwork:
    """Every NIC of a fabric on a ``SimFabric``, plus the messages (transfers) it runs.

    ``seed`` draws QP numbers and UDP source ports (the ECMP entropy a NIC gives each QP)."""

    def __init__(self, sim, fabric, params: NicParams = NicParams(),
                 on_done: Optional[Callable[[Transfer, float], None]] = None, seed: int = 0) -> None:
        self.sim, self.fabric, self.params = sim, fabric, params
        self.nics = {h.name: Nic(self, h, h.capacity_gbps, params) for h in fabric.hosts.values()}
        self.transfers: list[Transfer] = []
        self._send: dict[tuple[str, int], _SendQP] = {}
        self._recv: dict[tuple[str, int], _RecvQP] = {}
        # transfer id -> the send QP it went on (the flow model reads each flow's QP and UDP port)
        self.send_qp_of: dict[int, _SendQP] = {}
        self._qps: dict[tuple[str, str, int], tuple[_SendQP, _RecvQP]] = {}
        self._rng = random.Random(seed * 7919 + 0x5EED)
        self.on_done = on_done
        self.unmatched = 0
        self.started = False
        sim.deliver = self._deliver
        if hasattr(sim, "on_host_pause"):
            sim.on_host_pause = self._host_pause

    def transfer(self, src: str, dst: str, nbytes: int, kind: str = "job", tag: Optional[str] = None,
                 start_us: Optional[float] = 0.0, channel: Optional[int] = None) -> Transfer:
        """A message of ``nbytes`` from ``src`` to ``dst`` (rounded up to whole packets) on its own
        QP or, with ``channel``, on the persistent QP of (src, dst, channel).  It starts at
        ``start_us``, or (``start_us=None``) once the transfers it is made to wait ``after()``
        have completed.  Transfers made while the network runs are scheduled at once."""
        packets = max(1, -(-nbytes // self.params.payload))
        t = Transfer(len(self.transfers), src, dst, packets, kind, tag, channel)
        t.start_at = start_us
        self.transfers.append(t)
        if self.started and start_us is not None:
            self.sim.at(start_us, lambda: self._begin(t, start_us), sync=False)
        return t

    def start(self) -> None:
        """Schedule every transfer that waits for nothing (call once, before ``sim.run``)."""
        self.started = True
        for t in self.transfers:
            if not t.deps and t.start_at is not None:
                self.sim.at(t.start_at, lambda t=t: self._begin(t, t.start_at), sync=False)

    def qp(self, src: str, dst: str, channel: Optional[int], now: float) -> tuple[_SendQP, _RecvQP]:
        """The QP pair a message from ``src`` to ``dst`` on ``channel`` goes on (a fresh one for
        ``channel=None``)."""
        key = (src, dst, channel)
        if channel is not None and key in self._qps:
            return self._qps[key]
        s_nic, d_nic = self.nics[src], self.nics[dst]
        sq = self._fresh_qpn(src)
        rq = self._fresh_qpn(dst)
        sport = self._rng.randrange(49152, 65536)  # RoCEv2 NICs pick a UDP source port per QP
        s = _SendQP(sq, rq, s_nic, d_nic, now, sport)
        r = _RecvQP(rq, sq, d_nic, s_nic, sport ^ 1, s)
        self._send[(src, sq)] = s
        self._recv[(dst, rq)] = r
        if channel is not None:
            self._qps[key] = (s, r)
        return s, r

    def _fresh_qpn(self, host: str) -> int:
        while True:
            n = self._rng.randrange(0x100, 1 << 24)
            if (host, n) not in self._send and (host, n) not in self._recv:
                return n

    def _begin(self, t: Transfer, now: float) -> None:
        if t.not_before is not None and t.not_before > now:
            when = t.not_before
            self.sim.at(when, lambda: self._begin(t, when), sync=False)
            return
        s, r = self.qp(t.src, t.dst, t.channel, now)
        self.send_qp_of[t.tid] = s
        t.psn0 = s.snd_end
        s.snd_end += t.packets
        s.msgs.append(t)
        r.msgs.append(t)
        t.started_us = now
        s.nic.activate(s, now)
        s.nic.kick(now)

    def transfer_done(self, t: Transfer, now: float) -> None:
        if self.on_done is not None:
            self.on_done(t, now)
        for cb in t.callbacks:
            cb(t, now)
        for d in t.dependents:
            d.waiting -= 1
            if d.waiting == 0:
                self.sim.at(now, lambda d=d: self._begin(d, now), sync=False)

    def _host_pause(self, t: float, host: str, cls: int, xoff: bool) -> None:
        nic = self.nics.get(host)
        if nic is not None:
            nic.on_pause(cls, xoff, t)

    def pause_us(self, now: float) -> dict[str, float]:
        """Time each host NIC spent paused by PFC, up to ``now``."""
        return {name: nic.pause_time_us(now) for name, nic in self.nics.items()}

    def _deliver(self, t: float, host: str, frame: bytes) -> None:
        if len(frame) < L2_L3_LEN + 12 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
            self.unmatched += 1
            return
        bth = L2_L3_LEN
        opcode = frame[bth]
        dqpn = int.from_bytes(frame[bth + 5:bth + 8], "big")
        psn = int.from_bytes(frame[bth + 9:bth + 12], "big")
        nic = self.nics[host]
        if opcode == OP_WRITE_ONLY:
            r = self._recv.get((host, dqpn))
            if r is None:
                self.unmatched += 1
                return
            ip_id = int.from_bytes(frame[18:20], "big")
            nic.on_data(r, _unwrap(psn, r.epsn), bool(ip_id & 1), frame[15] & 3, t)
            return
        s = self._send.get((host, dqpn))
        if s is None:
            self.unmatched += 1
            return
        if opcode == OP_CNP:
            nic.on_cnp(s, t)
        elif opcode == OP_ACK:
            syndrome = frame[bth + 12]
            epsn = _unwrap(int.from_bytes(frame[bth + 13:bth + 16], "big"), s.snd_una)
            nic.on_ack(s, epsn, (syndrome & 0xE0) == 0x60, t)
        else:
            self.unmatched += 1
