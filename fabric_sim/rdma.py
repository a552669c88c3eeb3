"""RoCEv2 NICs that react: RC queue pairs with PSNs, a window, go-back-N and DCQCN.

Why: a fixed send schedule decides a job's length before the first packet; RDMA NICs instead
slow down on congestion (DCQCN), stop at their window and resend everything after a PSN gap
(go-back-N).  Those reactions are what turn reordering, loss and queueing into job time, so the
study needs them.

Model, per RC queue pair (one transfer = one QP, PSNs from 0):

* **Requester** sends PSN ``snd_nxt`` while ``snd_nxt < snd_una + window``, paced at its DCQCN
  rate ``Rc``; the NIC's port serialises packets of all its QPs at line rate (round robin among
  QPs that may send, ACK/NAK/CNP first).
* **Responder** accepts only the expected PSN (``epsn``).  A higher PSN is a sequence error: it
  sends one NAK carrying ``epsn`` (and drops out-of-order packets silently until ``epsn`` arrives,
  as RC responders do); a lower PSN is a duplicate and is answered with an ACK.  In-order packets
  are acknowledged every ``ack_every`` packets and at the end of the message (ACK coalescing).
* **Go-back-N**: a NAK(e) sets ``snd_nxt = snd_una = e``; so does a retransmission timeout with no
  ACK progress for ``rto_us``.  Every packet sent again is counted as a retransmission.
* **DCQCN** (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM'15):
  the responder (NP) answers a CE-marked packet with a CNP, at most one per ``cnp_interval_us``
  per QP; the requester (RP) on a CNP sets ``Rt = Rc``, ``Rc *= (1 - alpha/2)`` and
  ``alpha = (1-g) alpha + g``; without CNPs alpha decays by ``(1-g)`` every ``alpha_timer_us``;
  a timer (``rate_timer_us``) and a byte counter (``byte_counter``) each drive rate increase
  stages: fast recovery ``Rc = (Rt+Rc)/2`` for the first F stages, then additive increase
  (``Rt += R_AI``), then hyper increase (``Rt += R_HAI``) once both counters passed F.

All control packets (ACK, NAK, CNP) are real RoCEv2 frames that cross the fabric on the reverse
path, so they queue, can be lost, and are seen by the switches.  PFC is not modelled: a full
queue drops (tail drop), and go-back-N recovers.  Times are virtual µs of the fabric.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from ipaddress import IPv4Address
from typing import Callable, Optional

from fabric_sim.roce import ECN_CE, ECN_ECT0, ECN_NOT_ECT, ICRC_LEN, L2_L3_LEN, ROCEV2_UDP_PORT

OP_WRITE_ONLY = 0x0A  # RC RDMA WRITE Only
OP_ACK = 0x11  # RC Acknowledge (BTH + AETH)
OP_CNP = 0x81  # RoCEv2 Congestion Notification Packet
AETH_ACK = 0x1F  # syndrome: ACK, credits field "invalid" (no end-to-end credits)
AETH_NAK_PSN_SEQ = 0x60  # syndrome: NAK, PSN sequence error
DSCP_DATA = 26
DSCP_CNP = 48  # NVIDIA NICs' default cnp_dscp


@dataclass(frozen=True)
class DcqcnParams:
    """DCQCN constants.  Where each comes from:

    * ``g`` = 1/256, ``alpha_timer_us`` K = 55 µs, ``rate_timer_us`` T = 55 µs, ``byte_counter``
      B = 10 MB, ``stages_f`` F = 5, ``rai_gbps`` R_AI = 40 Mb/s and ``cnp_interval_us`` N = 50 µs:
      the DCQCN paper's recommended parameters (SIGCOMM'15, section 5).
    * ``rhai_gbps`` R_HAI = 10 R_AI: the ratio of NVIDIA/Mellanox's defaults (rpg_hai_rate 50 Mb/s
      vs rpg_ai_rate 5 Mb/s); the paper leaves it open.
    * ``alpha_init`` = 1023/1024 (initial_alpha_value 1023) and ``min_dec_factor`` = 0.5 (one CNP
      at most halves the rate, rpg_min_dec_fac 50%): NVIDIA's DCQCN parameter defaults.
    * ``min_rate_gbps`` = 0.001 (rpg_min_rate 1 Mb/s): the same defaults.
    """

    g: float = 1 / 256
    alpha_timer_us: float = 55.0
    rate_timer_us: float = 55.0
    byte_counter: int = 10 * 1024 * 1024
    stages_f: int = 5
    rai_gbps: float = 0.040
    rhai_gbps: float = 0.400
    cnp_interval_us: float = 50.0
    alpha_init: float = 1023 / 1024
    min_dec_factor: float = 0.5
    min_rate_gbps: float = 0.001
    enabled: bool = True


@dataclass(frozen=True)
class NicParams:
    """What every NIC of a run shares.  ``payload`` 4096 B is RoCE's largest MTU (what AI
    fabrics run); ``window`` bounds packets in flight per QP; ``rto_us`` is scaled down from
    real RNIC timeouts (4.096 µs x 2^14 = 67 ms by default) so a run stays short: a stalled
    flow's penalty in the study is therefore a lower bound of the real one."""

    payload: int = 4096
    window: int = 64
    ack_every: int = 16
    rto_us: float = 500.0
    dcqcn: DcqcnParams = field(default_factory=DcqcnParams)


def frame_bytes(payload: int) -> int:
    return L2_L3_LEN + 12 + payload + ICRC_LEN


def _ip_checksum(h: bytes) -> int:
    s = sum(struct.unpack("!10H", h))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def build_frame(src_mac: bytes, dst_mac: bytes, src_ip: int, dst_ip: int, sport: int, dqpn: int,
                psn: int, opcode: int, payload: bytes, ecn: int, dscp: int, ip_id: int) -> bytes:
    """An untagged Ethernet/IPv4/UDP/BTH frame with valid IPv4 checksum and ICRC (the same
    layout as ``fabric_sim.roce.RoceFlowTemplate``; tests compare the two)."""
    total = 20 + 8 + 12 + len(payload) + ICRC_LEN
    ip = bytearray(struct.pack("!BBHHHBBHII", 0x45, (dscp << 2) | ecn, total, ip_id & 0xFFFF, 0x4000,
                               64, 17, 0, src_ip, dst_ip))
    struct.pack_into("!H", ip, 10, _ip_checksum(bytes(ip)))
    udp = struct.pack("!HHHH", sport, ROCEV2_UDP_PORT, 8 + 12 + len(payload) + ICRC_LEN, 0)
    bth = struct.pack("!BBHII", opcode, 0, 0xFFFF, dqpn & 0xFFFFFF, psn & 0xFFFFFF)
    body = bytes(ip) + udp + bth + payload
    b = bytearray(body)
    b[1] = 0xFF
    b[8] = 0xFF
    b[10:12] = b"\xff\xff"
    b[26:28] = b"\xff\xff"
    b[28 + 4] = 0xFF
    crc = zlib.crc32(b"\xff" * 8 + bytes(b)) & 0xFFFFFFFF
    return dst_mac + src_mac + b"\x08\x00" + body + struct.pack("<I", crc)


def _mac(s: str) -> bytes:
    return bytes(int(x, 16) for x in s.split(":"))


class Transfer:
    """One RDMA WRITE message of ``packets`` packets on its own RC QP (requester ``src``,
    responder ``dst``).  Filled in by the run: start, completion, counters."""

    def __init__(self, tid: int, src: str, dst: str, packets: int, kind: str = "job",
                 tag: Optional[str] = None) -> None:
        self.tid, self.src, self.dst, self.packets, self.kind, self.tag = tid, src, dst, packets, kind, tag
        self.deps: list["Transfer"] = []
        self.dependents: list["Transfer"] = []
        self.waiting = 0
        self.start_at: Optional[float] = None  # earliest start (for time-triggered transfers)
        self.started_us: Optional[float] = None
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
        self.waiting = len(self.deps)
        return self


class _SendQP:
    __slots__ = ("t", "qpn", "peer_qpn", "nic", "peer", "snd_nxt", "snd_una", "max_sent", "rate", "target",
                 "alpha", "eligible", "t_stage", "b_stage", "bytes_since", "last_alpha", "last_rate_timer",
                 "cnp_in_period", "last_progress", "rto_check", "sport", "sent_at")

    def __init__(self, t: Transfer, qpn: int, peer_qpn: int, nic: "Nic", peer: "Nic", now: float, sport: int) -> None:
        self.t, self.qpn, self.peer_qpn, self.nic, self.peer = t, qpn, peer_qpn, nic, peer
        self.snd_nxt = self.snd_una = 0
        self.max_sent = -1
        self.rate = self.target = nic.line_gbps
        self.alpha = nic.params.dcqcn.alpha_init
        self.eligible = now
        self.t_stage = self.b_stage = 0
        self.bytes_since = 0
        self.last_alpha = self.last_rate_timer = now
        self.cnp_in_period = False
        self.last_progress = now
        self.rto_check: Optional[float] = None
        self.sport = sport
        self.sent_at: dict[int, float] = {}


class _RecvQP:
    __slots__ = ("t", "qpn", "peer_qpn", "nic", "peer", "epsn", "nak_sent", "last_cnp", "max_seen", "sport")

    def __init__(self, t: Transfer, qpn: int, peer_qpn: int, nic: "Nic", peer: "Nic", sport: int) -> None:
        self.t, self.qpn, self.peer_qpn, self.nic, self.peer = t, qpn, peer_qpn, nic, peer
        self.epsn = 0
        self.nak_sent = False
        self.last_cnp = -1e18
        self.max_seen = -1
        self.sport = sport


class Nic:
    """One GPU's RoCEv2 NIC on the fabric: its QPs, its port's serialiser, its feedback."""

    def __init__(self, net: "RdmaNetwork", host, line_gbps: float, params: NicParams) -> None:
        self.net, self.host, self.params = net, host, params
        self.name = host.name
        self.ip = int(IPv4Address(str(host.ip)))
        self.mac = _mac(host.mac)
        self.gw = _mac(net.fabric.switches[host.leaf].mac)
        self.line_gbps = line_gbps
        self.senders: list[_SendQP] = []
        self.ctrl: list[bytes] = []
        self.free_at = 0.0
        self._tx_at: Optional[float] = None
        self._rr = 0
        self.payload = bytes(range(256)) * (params.payload // 256) + bytes(params.payload % 256)

    def ser_us(self, nbytes: int) -> float:
        return nbytes * 8 / (self.line_gbps * 1e3)

    # ---- transmission scheduling
    def kick(self, now: float) -> None:
        t = max(now, self.free_at)
        if not self.ctrl:
            ready = [q.eligible for q in self.senders if self._can_send(q)]
            if not ready:
                return
            t = max(t, min(ready))
        if self._tx_at is not None and self._tx_at <= t:
            return
        self._tx_at = t
        self.net.sim.at(t, lambda: self._tx(t), sync=False)

    def _can_send(self, q: _SendQP) -> bool:
        return q.snd_nxt < q.t.packets and q.snd_nxt < q.snd_una + self.params.window

    def _tx(self, t: float) -> None:
        if self._tx_at != t:
            return  # superseded by an earlier transmission opportunity
        self._tx_at = None
        if self.ctrl:
            frame = self.ctrl.pop(0)
            self.net.sim.inject(t, self.name, frame)
            self.free_at = t + self.ser_us(len(frame))
        else:
            n = len(self.senders)
            chosen = None
            for i in range(n):
                q = self.senders[(self._rr + i) % n]
                if self._can_send(q) and q.eligible <= t + 1e-9:
                    chosen = q
                    self._rr = (self._rr + i + 1) % n
                    break
            if chosen is not None:
                self._send_data(chosen, t)
        self.kick(t)

    def _send_data(self, q: _SendQP, t: float) -> None:
        p = self.params
        psn = q.snd_nxt
        retx = psn <= q.max_sent
        if retx:
            q.t.retransmits += 1
        else:
            q.max_sent = psn
        q.snd_nxt += 1
        frame = build_frame(self.mac, self.gw, self.ip, q.peer.ip, q.sport, q.peer_qpn, psn, OP_WRITE_ONLY,
                            self.payload, ECN_ECT0, DSCP_DATA, (psn << 1) | retx)
        q.sent_at[psn] = t
        self.net.sim.inject(t, self.name, frame)
        size = len(frame)
        self.free_at = t + self.ser_us(size)
        self._dcqcn_timers(q, t)
        q.bytes_since += size
        if q.bytes_since >= p.dcqcn.byte_counter:
            q.bytes_since = 0
            q.b_stage += 1
            self._increase(q)
        q.eligible = t + size * 8 / (q.rate * 1e3)
        if q.rto_check is None:
            self._arm_rto(q, t)

    # ---- DCQCN reaction point
    def _dcqcn_timers(self, q: _SendQP, t: float) -> None:
        d = self.params.dcqcn
        if not d.enabled:
            return
        while t - q.last_alpha >= d.alpha_timer_us:
            q.last_alpha += d.alpha_timer_us
            if not q.cnp_in_period:
                q.alpha *= 1 - d.g
            q.cnp_in_period = False
        while t - q.last_rate_timer >= d.rate_timer_us:
            q.last_rate_timer += d.rate_timer_us
            q.t_stage += 1
            self._increase(q)

    def _increase(self, q: _SendQP) -> None:
        d = self.params.dcqcn
        f = d.stages_f
        if q.t_stage > f and q.b_stage > f:
            q.target += d.rhai_gbps * (min(q.t_stage, q.b_stage) - f)
        elif q.t_stage > f or q.b_stage > f:
            q.target += d.rai_gbps
        q.target = min(q.target, self.line_gbps)
        q.rate = min(self.line_gbps, (q.target + q.rate) / 2)

    def on_cnp(self, q: _SendQP, t: float) -> None:
        d = self.params.dcqcn
        q.t.cnps += 1
        if not d.enabled:
            return
        self._dcqcn_timers(q, t)
        q.target = q.rate
        q.rate = max(d.min_rate_gbps, q.rate * max(d.min_dec_factor, 1 - q.alpha / 2))
        q.alpha = (1 - d.g) * q.alpha + d.g
        q.cnp_in_period = True
        q.t_stage = q.b_stage = 0
        q.bytes_since = 0
        q.last_rate_timer = t
        q.last_alpha = t
        if q.t.min_rate_gbps is None or q.rate < q.t.min_rate_gbps:
            q.t.min_rate_gbps = q.rate
        # a slower rate pushes the next departure out
        q.eligible = max(q.eligible, t)

    # ---- go-back-N requester
    def on_ack(self, q: _SendQP, epsn: int, nak: bool, t: float) -> None:
        if epsn > q.snd_una:
            q.snd_una = epsn
            q.last_progress = t
        if nak:
            q.t.naks += 1
            q.snd_nxt = q.snd_una  # go back N: resend from the expected PSN
        elif q.snd_nxt < q.snd_una:
            q.snd_nxt = q.snd_una
        if q.snd_una >= q.t.packets:
            self.senders.remove(q)
            self.net.sender_done(q)
        self.kick(t)

    def _arm_rto(self, q: _SendQP, t: float) -> None:
        due = t + self.params.rto_us
        q.rto_check = due
        self.net.sim.at(due, lambda: self._rto(q, due), sync=False)

    def _rto(self, q: _SendQP, due: float) -> None:
        if q.rto_check != due or q.snd_una >= q.t.packets:
            return
        q.rto_check = None
        if q.snd_una < q.snd_nxt and due - q.last_progress >= self.params.rto_us - 1e-9:
            q.t.timeouts += 1
            q.snd_nxt = q.snd_una
            q.last_progress = due
            self.kick(due)
        if q.snd_una < q.t.packets and q in self.senders:
            self._arm_rto(q, max(due, q.last_progress))

    # ---- responder
    def on_data(self, r: _RecvQP, psn: int, retx: bool, ecn: int, t: float) -> None:
        tr = r.t
        if not retx:
            if psn < r.max_seen:
                tr.reorders += 1
            r.max_seen = max(r.max_seen, psn)
        if ecn == ECN_CE:
            tr.ce += 1
            if t - r.last_cnp >= self.params.dcqcn.cnp_interval_us:
                r.last_cnp = t
                self._queue_ctrl(r, OP_CNP, 0, b"\x00" * 16, DSCP_CNP, t)
        if psn == r.epsn:
            r.epsn += 1
            r.nak_sent = False
            tr.delivered += 1
            tr.delivery_times.append(t)
            sent = self.net.sent_time(tr, psn)
            if sent is not None and not retx:
                tr.latencies.append(t - sent)
            if r.epsn == tr.packets:
                tr.done_us = t
                self._ack(r, False, t)
                self.net.transfer_done(tr, t)
            elif r.epsn % self.params.ack_every == 0:
                self._ack(r, False, t)
        elif psn > r.epsn:
            if not r.nak_sent:
                r.nak_sent = True
                self._ack(r, True, t)
        else:
            self._ack(r, False, t)  # duplicate: tell the requester where we are

    def _ack(self, r: _RecvQP, nak: bool, t: float) -> None:
        syndrome = AETH_NAK_PSN_SEQ if nak else AETH_ACK
        aeth = struct.pack("!I", (syndrome << 24) | (r.epsn & 0xFFFFFF))
        self._queue_ctrl(r, OP_ACK, r.epsn, aeth, DSCP_DATA, t)

    def _queue_ctrl(self, r: _RecvQP, opcode: int, psn: int, payload: bytes, dscp: int, t: float) -> None:
        frame = build_frame(self.mac, self.gw, self.ip, r.peer.ip, r.sport, r.peer_qpn, psn, opcode,
                            payload, ECN_NOT_ECT, dscp, 0)
        self.ctrl.append(frame)
        self.kick(t)


class RdmaNetwork:
    """Every NIC of a fabric on a ``SimFabric``, plus the transfers (QPs) it runs."""

    def __init__(self, sim, fabric, params: NicParams = NicParams(),
                 on_done: Optional[Callable[[Transfer, float], None]] = None) -> None:
        self.sim, self.fabric, self.params = sim, fabric, params
        self.nics = {h.name: Nic(self, h, h.capacity_gbps, params) for h in fabric.hosts.values()}
        self.transfers: list[Transfer] = []
        self._send: dict[tuple[str, int], _SendQP] = {}
        self._recv: dict[tuple[str, int], _RecvQP] = {}
        self._by_tid: dict[int, _SendQP] = {}
        self._next_qpn = 0x100
        self.on_done = on_done
        self.unmatched = 0
        sim.deliver = self._deliver

    def transfer(self, src: str, dst: str, nbytes: int, kind: str = "job", tag: Optional[str] = None,
                 start_us: Optional[float] = 0.0) -> Transfer:
        """A message of ``nbytes`` from ``src`` to ``dst`` (rounded up to whole packets); it starts
        at ``start_us``, or (``start_us=None``) once the transfers it is made to wait ``after()``
        have completed."""
        packets = max(1, -(-nbytes // self.params.payload))
        t = Transfer(len(self.transfers), src, dst, packets, kind, tag)
        t.start_at = start_us
        self.transfers.append(t)
        return t

    def start(self) -> None:
        """Schedule every transfer that waits for nothing (call once, before ``sim.run``)."""
        for t in self.transfers:
            if not t.deps and t.start_at is not None:
                self.sim.at(t.start_at, lambda t=t: self._begin(t, t.start_at), sync=False)

    def _begin(self, t: Transfer, now: float) -> None:
        src, dst = self.nics[t.src], self.nics[t.dst]
        sq, rq = self._next_qpn, self._next_qpn + 1
        self._next_qpn += 2
        sport = 49152 + (sq * 2654435761 >> 8) % 16384  # RoCEv2 NICs pick a UDP source port per QP
        s = _SendQP(t, sq, rq, src, dst, now, sport)
        r = _RecvQP(t, rq, sq, dst, src, sport ^ 1)
        self._send[(src.name, sq)] = s
        self._recv[(dst.name, rq)] = r
        self._by_tid[t.tid] = s
        t.started_us = now
        src.senders.append(s)
        src.kick(now)

    def sent_time(self, t: Transfer, psn: int) -> Optional[float]:
        s = self._by_tid.get(t.tid)
        return s.sent_at.pop(psn, None) if s is not None else None

    def transfer_done(self, t: Transfer, now: float) -> None:
        if self.on_done is not None:
            self.on_done(t, now)
        for d in t.dependents:
            d.waiting -= 1
            if d.waiting == 0:
                self.sim.at(now, lambda d=d: self._begin(d, now), sync=False)

    def sender_done(self, q: _SendQP) -> None:
        pass

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
            nic.on_data(r, psn, bool(ip_id & 1), frame[15] & 3, t)
            return
        s = self._send.get((host, dqpn))
        if s is None:
            self.unmatched += 1
            return
        if opcode == OP_CNP:
            nic.on_cnp(s, t)
        elif opcode == OP_ACK:
            syndrome = frame[bth + 12]
            epsn = int.from_bytes(frame[bth + 13:bth + 16], "big")
            if s in nic.senders:
                nic.on_ack(s, epsn, (syndrome & 0xE0) == 0x60, t)
        else:
            self.unmatched += 1
