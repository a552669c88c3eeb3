"""Packet robustness campaign on the Stellar leaf (stellar.p4 on p4sim, in-process).

Shared by ``tests/robustness/test_packet_fuzz.py`` (small counts, CI) and
``bench/fuzz_packets.py`` (>= 100,000 frames).  Frames come from two sources:

- *structure-aware mutation* (``mutated_frames``): a valid Ethernet / 802.1Q / IPv4 (with and
  without options) / UDP / RoCEv2 BTH / TCP frame, then one to three mutations that know where
  each header and field is: truncation at or near a header boundary, a field set to an edge value
  (version, IHL, total length, TTL 0/1, protocol, fragment offset, UDP port 4791, UDP length, BTH
  opcode), a wrong IPv4 checksum, random bytes flipped inside one header, junk appended, or a
  frame of pure noise;
- *hypothesis* strategies (the test) over the same builders and over raw bytes.

Every frame is sent on a host port or an uplink.  The campaign checks, per frame and in total:
no exception and no p4sim ``runtime_error``/``assert_failed`` (a crash), no frame that takes
longer than ``hang_s`` to process (a hang; SIGALRM interrupts a frame that never returns), and
the drop accounting of the program itself: every frame sent either leaves the switch or is
counted in ``telemetry.drops`` under a reason other than DROP_NONE, and p4sim's own drop count
equals the program's (no drop without a reason).  Afterwards the switch must still forward a
clean RoCEv2 frame and a clean UDP frame, with their MAC rewrite and a correct checksum.
"""
from __future__ import annotations

import random
import signal
import struct
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Iterator, Optional

from scapy.all import IP, TCP, UDP, Dot1Q, Ether, IPOption_NOP, IPOption_RR, Raw, raw
from scapy.contrib.roce import BTH

from testkit.leaf import (ING, UPLINKS, Leaf, ip_checksum_ok, mac_of, neighbour_mac, roce,
                                udp)

ETH, VLAN, IPV4, UDP_LEN, BTH_LEN, TCP_LEN = 14, 4, 20, 8, 12, 20
REASONS = 16  # REASON_SLOTS
SEND_PORTS = (1, 2, 3, 4)
DESTS = ("10.0.2.7", "10.0.2.200", "10.0.1.1", "10.0.1.2", "10.0.9.9", "10.0.1.77", "10.0.3.3")
# A route to a path set the controller never wrote (a half-applied push): DROP_NO_PATH_SET.
DANGLING_ROUTE = ("10.0.3.0", 24)
DANGLING_PATH_SET = 9


def campaign_leaf(p4sim_module, program) -> Leaf:
    """The test leaf plus a route whose path set is missing, so the corpus reaches that drop
    reason too (everything here is a table entry, so BMv2 can be given the same)."""
    leaf = Leaf(p4sim_module, program)
    leaf.sw.insert_entry(f"{ING}.routing.lpm", {"hdr.ipv4.dst_addr": DANGLING_ROUTE},
                         f"{ING}.routing.set_path_set", {"path_set_id": DANGLING_PATH_SET})
    return leaf
SOURCES = ("10.0.1.1", "10.0.1.2", "10.0.1.130", "10.0.2.7", "192.168.0.1")


# -- well-formed bases ----------------------------------------------------------------------
@dataclass
class Frame:
    """Bytes plus where the headers start (for mutations); ``l3`` None = no IPv4."""

    data: bytes
    l3: Optional[int]
    l4: Optional[int] = None
    l4_kind: str = ""
    note: str = ""


def _eth(**kw):
    return Ether(src="02:00:00:00:09:09", dst=mac_of(1), **kw)


def base_frame(rng: random.Random) -> Frame:
    kind = rng.choice(["roce", "roce", "roce", "udp", "tcp", "options", "vlan", "arp", "ipv6"])
    src, dst = rng.choice(SOURCES), rng.choice(DESTS)
    tos = rng.randrange(256)
    ttl = rng.choice([64, 64, 2, 1, 255])
    payload = b"\x00" * rng.choice([0, 1, 16, 64, 256, 1024])
    if kind in ("roce", "vlan"):
        l2 = Ether(src="02:00:00:00:09:09", dst=mac_of(1))
        off = ETH
        if kind == "vlan":
            l2 = l2 / Dot1Q(vlan=rng.randrange(4096))
            off += VLAN
        pkt = (l2 / IP(src=src, dst=dst, tos=tos, ttl=ttl) / UDP(sport=rng.randrange(49152, 65536), dport=4791)
               / BTH(opcode=rng.choice([4, 0, 1, 2, 17, 100]), dqpn=rng.randrange(1 << 24),
                     psn=rng.randrange(1 << 24)) / Raw(payload))
        return Frame(raw(pkt), off, off + IPV4, "udp", kind)
    if kind == "udp":
        pkt = _eth() / IP(src=src, dst=dst, tos=tos, ttl=ttl) / UDP(sport=rng.randrange(65536),
                                                                    dport=rng.randrange(65536)) / Raw(payload)
        return Frame(raw(pkt), ETH, ETH + IPV4, "udp", kind)
    if kind == "tcp":
        pkt = _eth() / IP(src=src, dst=dst, tos=tos, ttl=ttl) / TCP(sport=rng.randrange(65536),
                                                                    dport=rng.randrange(65536)) / Raw(payload)
        return Frame(raw(pkt), ETH, ETH + IPV4, "tcp", kind)
    if kind == "options":
        opts = rng.choice([[IPOption_NOP()] * 4, [IPOption_RR()], [IPOption_RR(), IPOption_NOP()],
                           [IPOption_NOP()] * 40])
        pkt = (_eth() / IP(src=src, dst=dst, tos=tos, ttl=ttl, options=opts)
               / UDP(sport=7, dport=rng.choice([4791, 53])) / Raw(b"\x04" + payload))
        data = raw(pkt)
        ihl = data[ETH] & 0x0F
        return Frame(data, ETH, ETH + 4 * ihl, "udp", kind)
    if kind == "arp":
        return Frame(raw(_eth(type=0x0806) / Raw(b"\x00\x01\x08\x00\x06\x04" + b"\x00" * 22)), None, note=kind)
    return Frame(raw(_eth(type=0x86DD) / Raw(b"\x60" + b"\x00" * 39 + payload)), None, note=kind)


# -- mutations ------------------------------------------------------------------------------
def _put(data: bytes, off: int, value: bytes) -> bytes:
    if off >= len(data):
        return data
    return data[:off] + value[: len(data) - off] + data[off + len(value):]


def _ip_checksum(data: bytes, l3: int) -> bytes:
    if len(data) <= l3:
        return data
    ihl = (data[l3] & 0x0F) * 4
    hdr = bytearray(data[l3:l3 + max(ihl, IPV4)])
    if len(hdr) < IPV4:
        return data
    hdr[10:12] = b"\0\0"
    total = sum(struct.unpack(f"!{len(hdr) // 2}H", bytes(hdr[: len(hdr) // 2 * 2])))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return _put(data, l3 + 10, struct.pack("!H", ~total & 0xFFFF))


def mutate(frame: Frame, rng: random.Random) -> tuple[bytes, str]:
    data, l3, l4 = frame.data, frame.l3, frame.l4
    ops = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        op = rng.choice(["truncate", "field", "field", "field", "checksum", "flip", "append",
                         "noise", "none"])
        if l3 is None and op in ("field", "checksum"):
            op = "flip"
        if op == "truncate":
            cuts = [0, 1, ETH - 1, ETH, ETH + 2]
            if l3 is not None:
                cuts += [l3 + k for k in (1, 8, IPV4 - 1, IPV4)]
            if l4 is not None:
                cuts += [l4 + k for k in (0, 2, UDP_LEN - 1, UDP_LEN, UDP_LEN + BTH_LEN - 1, TCP_LEN - 1)]
            cut = rng.choice(cuts + [rng.randrange(len(data) + 1)])
            data = data[:cut]
        elif op == "field" and l3 is not None:
            name, off, values = rng.choice([
                ("version/ihl", l3, [bytes([v]) for v in (0x45, 0x44, 0x40, 0x4F, 0x46, 0x65, 0x00, 0xFF)]),
                ("total_len", l3 + 2, [b"\0\0", b"\0\x14", b"\xff\xff", struct.pack("!H", len(data))]),
                ("flags/frag", l3 + 6, [b"\x20\x00", b"\x00\x01", b"\x1f\xff", b"\x40\x00"]),
                ("ttl", l3 + 8, [b"\0", b"\x01", b"\x02", b"\xff"]),
                ("protocol", l3 + 9, [b"\x11", b"\x06", b"\x01", b"\x00", b"\xff"]),
                ("dst", l3 + 16, [b"\x0a\x00\x02\x07", b"\xff\xff\xff\xff", b"\0\0\0\0", b"\x0a\x00\x01\x02"]),
                ("udp dport", (l4 or l3 + IPV4) + 2, [b"\x12\xb7", b"\0\0", b"\xff\xff"]),
                ("udp len", (l4 or l3 + IPV4) + 4, [b"\0\0", b"\0\x08", b"\xff\xff"]),
                ("bth opcode", (l4 or l3 + IPV4) + UDP_LEN, [bytes([rng.randrange(256)])]),
            ])
            data = _put(data, off, rng.choice(values))
            if rng.random() < 0.7:  # usually keep the checksum right, so the field is what is tested
                data = _ip_checksum(data, l3)
            op = f"field {name}"
        elif op == "checksum" and l3 is not None:
            data = _put(data, l3 + 10, bytes([rng.randrange(256), rng.randrange(256)]))
        elif op == "flip" and data:
            start = rng.choice([0, l3 or 0, l4 or 0, rng.randrange(len(data))])
            for _ in range(rng.randrange(1, 5)):
                i = min(len(data) - 1, start + rng.randrange(24))
                data = data[:i] + bytes([data[i] ^ (1 << rng.randrange(8))]) + data[i + 1:]
        elif op == "append":
            data = data + bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
        elif op == "noise":
            data = bytes(rng.randrange(256) for _ in range(rng.choice([0, 1, 13, 14, 33, 60, 200])))
        ops.append(op)
    return data, f"{frame.note}: {', '.join(ops)}"


def mutated_frames(seed: int, count: int) -> Iterator[tuple[int, bytes, str]]:
    """(ingress port, frame, description) for ``count`` mutated frames, reproducible by seed."""
    rng = random.Random(seed)
    for _ in range(count):
        frame = base_frame(rng)
        data, what = mutate(frame, rng)
        yield rng.choice(SEND_PORTS), data, what


# -- the campaign ---------------------------------------------------------------------------
class Hang(Exception):
    pass


@dataclass
class CampaignResult:
    cases: int = 0
    delivered: int = 0
    crashes: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)
    accounting: list[str] = field(default_factory=list)  # frames lost without a counted reason
    drops_by_reason: dict[int, int] = field(default_factory=dict)
    malformed_by_kind: dict[int, int] = field(default_factory=dict)
    decisions: list[tuple[int, tuple]] = field(default_factory=list)  # (case, sorted outputs)
    seconds: float = 0.0
    forwards_after: bool = False

    @property
    def ok(self) -> bool:
        return not (self.crashes or self.hangs or self.accounting) and self.forwards_after

    def summary(self) -> str:
        drops = sum(self.drops_by_reason.values())
        return (f"{self.cases} cases: {len(self.crashes)} crashes, {len(self.hangs)} hangs, "
                f"{self.delivered} forwarded, {drops} dropped under a reason "
                f"{dict(sorted(self.drops_by_reason.items()))}, {len(self.accounting)} unaccounted; "
                f"forwards normally afterwards: {'yes' if self.forwards_after else 'NO'}")


def _alarm(_sig, _frame):
    raise Hang()


def _drops(leaf: Leaf) -> list[int]:
    return [leaf.drops(r) for r in range(REASONS)]


def run_campaign(leaf: Leaf, frames: Iterable[tuple[int, bytes, str]], hang_s: float = 2.0,
                 keep_decisions: bool = False, batch: int = 16,
                 progress: Optional[Callable[[int], None]] = None) -> CampaignResult:
    """Send every frame; check crashes, hangs and the drop accounting batch by batch."""
    res = CampaignResult()
    sw = leaf.sw
    started = time.perf_counter()
    use_alarm = hasattr(signal, "setitimer")
    old = signal.signal(signal.SIGALRM, _alarm) if use_alarm else None
    try:
        pending: list[tuple[int, str]] = []

        def settle() -> None:
            leaf.advance(50)  # unlimited-rate queues: everything queued departs
            outputs = leaf.sw.take_output()
            res.delivered += len(outputs)
            if keep_decisions and len(pending) == 1:
                res.decisions.append((pending[0][0], tuple(sorted((p, bytes(f)) for p, f in outputs))))

        totals_before = _drops(leaf)
        stats_before = dict(sw.stats)
        sent_in_batch: list[tuple[int, str]] = []
        for port, data, what in frames:
            case = res.cases
            res.cases += 1
            errors_before = sw.stats["runtime_error"] + sw.stats["assert_failed"]
            try:
                if use_alarm:
                    signal.setitimer(signal.ITIMER_REAL, hang_s)
                t0 = time.perf_counter()
                sw.send(port, data)
                if time.perf_counter() - t0 > hang_s:
                    res.hangs.append(f"#{case} {what}: {time.perf_counter() - t0:.1f}s")
            except Hang:
                res.hangs.append(f"#{case} {what}: no answer within {hang_s}s ({data.hex()[:120]})")
            except Exception as err:  # noqa: BLE001 - a crash is what the campaign looks for
                res.crashes.append(f"#{case} {what}: {type(err).__name__}: {err} ({data.hex()[:120]})")
            finally:
                if use_alarm:
                    signal.setitimer(signal.ITIMER_REAL, 0)
            if sw.stats["runtime_error"] + sw.stats["assert_failed"] > errors_before:
                res.crashes.append(f"#{case} {what}: p4sim caught a runtime error ({data.hex()[:120]})")
            sent_in_batch.append((case, what))
            if keep_decisions or len(sent_in_batch) >= batch:
                pending = sent_in_batch
                settle()
                sent_in_batch = []
            if progress is not None and res.cases % 5000 == 0:
                progress(res.cases)
        if sent_in_batch:
            pending = sent_in_batch
            settle()
        totals = [a - b for a, b in zip(_drops(leaf), totals_before)]
        res.drops_by_reason = {r: n for r, n in enumerate(totals) if n}
        res.malformed_by_kind = {k: leaf.malformed(k) for k in range(REASONS) if leaf.malformed(k)}
        stats = {k: sw.stats[k] - stats_before.get(k, 0) for k in sw.stats}
        lost_by_target = sum(stats.get(k, 0) for k in ("queue_full", "port_down", "priority_invalid",
                                                         "resubmit_limit", "recirculate_limit"))
        if totals[0]:
            res.accounting.append(f"{totals[0]} drops counted under DROP_NONE (no reason)")
        if stats.get("dropped", 0) != sum(totals):
            res.accounting.append(f"p4sim dropped {stats.get('dropped', 0)} frames, the program counted "
                                  f"{sum(totals)} under a reason")
        if lost_by_target:
            res.accounting.append(f"{lost_by_target} frames lost in the target ({stats})")
        if res.delivered + sum(totals) != res.cases - len(res.crashes) - len(res.hangs):
            res.accounting.append(f"{res.cases} sent = {res.delivered} forwarded + {sum(totals)} "
                                  f"dropped under a reason does not hold")
    finally:
        if use_alarm:
            signal.signal(signal.SIGALRM, old)
    res.forwards_after = forwards_normally(leaf)
    res.seconds = time.perf_counter() - started
    return res


def forwards_normally(leaf: Leaf) -> bool:
    """A clean RoCEv2 frame to the remote leaf leaves on an uplink, a clean UDP frame to a local
    host on its port, both with the egress MAC rewrite and a correct IPv4 checksum."""
    leaf.sw.take_output()
    ok = True
    for frame, ports in ((roce("10.0.1.1", "10.0.2.7", qp=77, psn=1), UPLINKS),
                         (udp("10.0.2.7", "10.0.1.2"), (2,))):
        leaf.send(1 if ports == UPLINKS else 3, frame)
        out = leaf.drain_output(settle_us=50)
        if len(out) != 1 or out[0].port not in ports:
            return False
        pkt = out[0].pkt
        ok &= pkt[Ether].src == mac_of(out[0].port) and pkt[Ether].dst == neighbour_mac(out[0].port)
        ok &= ip_checksum_ok(pkt) and bytes(pkt[IP].payload)[:8] == frame[ETH + IPV4:ETH + IPV4 + 8]
    return bool(ok)


__all__ = ["mutated_frames", "run_campaign", "forwards_normally", "base_frame", "mutate", "Frame",
           "CampaignResult", "campaign_leaf"]
