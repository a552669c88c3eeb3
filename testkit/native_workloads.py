"""Switches and traffic for the native-vs-reference differential (tests/native and
bench/fuzz_diff.py --backends): the L3 example with LPM routes, the Stellar test leaf with its
entries, stellar.p4 on the Tofino pipe with the lab leaf's rendered entries (``stellar-tna``:
``bench/fuzz_diff.py --backends --programs stellar-tna``), and seeded mutations of their frames;
``lockstep`` runs both backends side by side."""
from __future__ import annotations

import functools
import random
import types
from pathlib import Path
from typing import Any, Callable, Iterator

import p4sim
from scapy.all import IP, UDP, Ether, raw

REPO = Path(__file__).resolve().parents[1]
L3_P4 = REPO / "p4src" / "examples" / "l3.p4"
L3_TABLE = "MyIngress.ipv4_lpm"


@functools.lru_cache(maxsize=None)
def program(path: str) -> Any:
    return p4sim.compile(path)


def l3_switch(backend: str, routes: int = 200, seed: int = 1) -> tuple[Any, list[bytes]]:
    """The L3 router with ``routes`` random LPM routes (and a drop route), and frames that hit them."""
    sw = p4sim.Switch(program(str(L3_P4)), backend=backend)
    rnd = random.Random(seed)
    seen: set = set()
    dests = []
    while len(seen) < routes:
        plen = rnd.choice([8, 16, 20, 24, 24, 28, 32])
        v = rnd.getrandbits(32) & (((1 << plen) - 1) << (32 - plen))
        if (v, plen) in seen:
            continue
        seen.add((v, plen))
        if len(seen) % 17 == 0:
            sw.insert_entry(L3_TABLE, {"hdr.ipv4.dstAddr": (v, plen)}, "MyIngress.drop")
        else:
            sw.insert_entry(L3_TABLE, {"hdr.ipv4.dstAddr": (v, plen)}, "MyIngress.ipv4_forward",
                            {"dstAddr": rnd.getrandbits(48), "port": 1 + len(seen) % 8})
        dests.append(v | (rnd.getrandbits(32 - plen) if plen < 32 else 0))
    frames = []
    for i in range(48):
        d = dests[rnd.randrange(len(dests))]
        dst = ".".join(str((d >> s) & 0xFF) for s in (24, 16, 8, 0))
        frames.append(raw(Ether(dst="00:00:00:00:00:01") / IP(src="192.168.0.1", dst=dst, ttl=1 + i % 64)
                          / UDP(sport=1000 + i, dport=4791) / (b"\x00" * 32)))
    return sw, frames


def stellar_leaf(backend: str) -> tuple[Any, list[bytes]]:
    """The Stellar test leaf (testkit/leaf.py: entries as the control plane writes them,
    ECN on) and frames of every kind it handles: RoCEv2 to the remote leaf and to local hosts,
    UDP, TCP, both tenants, several classes."""
    from testkit import leaf as L

    shim = types.SimpleNamespace(Switch=functools.partial(p4sim.Switch, backend=backend))
    lf = L.Leaf(shim, program(str(L.STELLAR_P4)))
    lf.set_ecn_default(enabled=True)
    lf.set_params(elephant_bytes=300, report_path_changes=1)  # elephants and path changes get digested
    # tenant 1 metered (yellow and red both reachable), tenant 2 unmetered
    lf.sw.meter_set_config(f"{L.ING}.qos.tenant_meter", 1, cir=1_000_000, cburst=3000, pir=2_000_000, pburst=6000)
    frames = []
    srcs = ["10.0.1.1", "10.0.1.2", "10.0.1.130"]
    for i in range(40):
        src = srcs[i % 3]
        dst = "10.0.2.%d" % (1 + i % 7) if i % 4 else "10.0.1.%d" % (1 + i % 2)
        frames.append(L.roce(src, dst, qp=0x100 + i % 9, psn=i, dscp=(26, 46, 8, 48)[i % 4],
                             ecn=(2, 1, 0)[i % 3], payload=64 + 8 * (i % 5)))
    for i in range(12):
        frames.append(L.udp("10.0.1.%d" % (1 + i % 2), "10.0.2.9", sport=1000 + i, dscp=(0, 26)[i % 2]))
        frames.append(L.tcp("10.0.1.1", "10.0.2.%d" % (1 + i % 3), sport=2000 + i))
    return lf.sw, frames


def mutate(rnd: random.Random, frame: bytes) -> bytes:
    """One seeded mutation: flipped bits, a changed byte, truncation or extension."""
    b = bytearray(frame)
    k = rnd.randrange(6)
    if k == 0 and b:
        for _ in range(rnd.randint(1, 4)):
            i = rnd.randrange(len(b))
            b[i] ^= 1 << rnd.randrange(8)
    elif k == 1 and b:
        b[rnd.randrange(min(len(b), 64))] = rnd.getrandbits(8)
    elif k == 2:
        del b[rnd.randrange(len(b) + 1):]
    elif k == 3:
        b += bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 40)))
    elif k == 4 and len(b) > 34:
        b[14] = rnd.choice([0x45, 0x46, 0x4F, 0x44, 0x55, 0x40])  # IPv4 version/IHL
    elif b:
        b[rnd.randrange(min(len(b), 60))] = rnd.choice([0, 0xFF, 0x08, 0x11, 0x06, 0x12, 0xB7])
    return bytes(b)


def traffic(frames: list[bytes], count: int, seed: int, ports: tuple[int, ...]) -> Iterator[tuple[int, bytes, float]]:
    """``count`` (port, frame, microseconds to advance after it): originals and mutations mixed,
    with gaps long enough for queues, flowlet gaps and ECN windows to matter."""
    rnd = random.Random(seed)
    for _ in range(count):
        f = frames[rnd.randrange(len(frames))]
        if rnd.random() < 0.6:
            f = mutate(rnd, f)
        yield rnd.choice(ports), f, rnd.choice((0.0, 0.0, 0.5, 3.0, 40.0, 400.0))


def runs(frames: list[bytes], count: int, seed: int, ports: tuple[int, ...]) -> Iterator[tuple[int, list[bytes], float]]:
    """``count`` frames as (port, frames, microseconds to advance after them): runs of 1..60
    frames on one port for ``Switch.send_many``, originals and mutations mixed, with gaps for
    queues, flowlets and meters to matter."""
    rnd = random.Random(seed)
    sent = 0
    while sent < count:
        k = min(count - sent, rnd.choice((1, 2, 5, 20, 60)))
        run = [frames[rnd.randrange(len(frames))] for _ in range(k)]
        sent += k
        yield rnd.choice(ports), [mutate(rnd, f) if rnd.random() < 0.4 else f for f in run], rnd.choice((0.0, 0.5, 40.0, 400.0))


def stellar_leaf_queued(backend: str) -> tuple[Any, list[bytes]]:
    """The Stellar leaf with rate-limited, shallow queues: every packet departs from a queue (the
    fabric's path: dequeue metadata, queue delay for ECN, tail drops), not the idle fast path."""
    sw, frames = stellar_leaf(backend)
    sw.set_queue_rate(5_000)  # 200 us per packet: longer than most of the traffic's gaps
    sw.set_queue_depth(2)
    return sw, frames


BUILDERS: dict[str, tuple[Callable[[str], tuple[Any, list[bytes]]], tuple[int, ...]]] = {
    "l3": (l3_switch, (0, 1, 2)),
    "stellar": (stellar_leaf, (1, 2, 3, 4)),
    "stellar-queued": (stellar_leaf_queued, (1, 2, 3, 4)),
}


def lockstep(name: str, count: int, seed: int, check_every: int = 10_000, batch: bool = False) -> dict[str, Any]:
    """The same ``count`` frames through the reference and the native backend side by side:
    frames whose outputs differ, state items that differ (checked every ``check_every`` frames
    and at the end), and whether stats and digests match.  ``batch``: the frames in runs
    (``runs``), each one ``send_many`` on the native switch and one ``send`` per frame on the
    reference; a differing output is reported by the index of the run's first frame."""
    from p4sim.native.compare import diff_state, state

    build, ports = {**BUILDERS, **TNA_BUILDERS}[name]
    ref, frames = build("python")
    nat, _ = build("native")
    if nat.pipeline.backend != "native":
        raise RuntimeError(f"{name}: the native backend fell back to the reference")
    bad_frames: list[int] = []
    bad_state: set[str] = set()
    digests = [0, 0]
    stream = runs(frames, count, seed, ports) if batch else ((p, [f], g) for p, f, g in traffic(frames, count, seed, ports))
    i = 0
    for port, run, gap in stream:
        for frame in run:
            ref.send(port, frame)
        if batch:
            nat.send_many(port, run)
        else:
            nat.send(port, run[0])
        if gap:
            ref.advance(gap)
            nat.advance(gap)
        if ref.take_output() != nat.take_output():
            bad_frames.append(i)
        i += len(run)
        if i % check_every < len(run) or i == count:
            bad_state.update(diff_state(state(ref), state(nat)))
            a, b = ref.digests(), nat.digests()
            digests[0] += len(a)
            digests[1] += a != b
    return {"frames": count, "bad_frames": bad_frames, "bad_state": sorted(bad_state),
            "stats_equal": dict(ref.stats) == dict(nat.stats), "digests": digests[0],
            "digest_mismatches": digests[1], "transmitted": ref.stats.get("transmitted", 0)}


def backend_differential(count: int, seed: int, programs: list[str], batch: bool = False) -> int:
    """Native vs reference backend: prints, per program, the count of frames whose outputs
    differ and the state items (registers, counters, meters, tables) that differ; 1 if any.
    ``batch``: the native switch takes the frames through ``send_many`` (see ``lockstep``)."""
    import time

    failed = 0
    for name in programs:
        t0 = time.process_time()
        r = lockstep(name, count, seed, batch=batch)
        bad = len(r["bad_frames"]) + len(r["bad_state"]) + (not r["stats_equal"]) + r["digest_mismatches"]
        failed += bad
        print(f"{name}{' (native send_many)' if batch else ''}: {r['frames']:,} frames (seed {seed}), "
              f"{r['transmitted']:,} transmitted, "
              f"{r['digests']:,} digests: {len(r['bad_frames'])} output mismatches, "
              f"{len(r['bad_state'])} state mismatches {r['bad_state'] or ''}, stats "
              f"{'identical' if r['stats_equal'] else 'DIFFER'}, {r['digest_mismatches']} digest mismatches "
              f"({time.process_time() - t0:.0f} s CPU)")
        if r["bad_frames"]:
            print(f"  first differing frames: {r['bad_frames'][:10]}")
    return 1 if failed else 0


STELLAR_TNA = REPO / "p4src" / "tna" / "stellar.p4"


def stellar_tna_lab(backend: str) -> tuple[Any, list[bytes]]:
    """leaf1 of the lab fabric on p4sim's Tofino pipe (p4src/tna/stellar.p4) with its rendered
    entries (tenant meters, feedback rows, the mirror session to the recirculation port), and
    RoCEv2 frames of several classes, ECN marks and opcodes from its GPUs to other leaves and
    to each other, from the spines to its GPUs, and UDP; uplink 9's queue is rate-limited and
    shallow, so egress sees queue delay, tail drops happen and feedback copies recirculate."""
    from control_plane.inprocess import apply_document
    from control_plane.model import load_fabric
    from control_plane.render import render_fabric
    from fabric_sim.roce import RoceFlowTemplate

    fabric = load_fabric(REPO / "fabrics" / "lab.yaml")
    sw = p4sim.Switch(program(str(STELLAR_TNA)), priority_queues=fabric.dataplane.priority_queues,
                      backend=backend)
    apply_document(sw, render_fabric(fabric, arch="tna").documents["leaf1"])
    sw.set_queue_rate(20_000, port=9)
    sw.set_queue_depth(3, port=9)
    mac = fabric.switches["leaf1"].mac
    local = [h for h in fabric.hosts.values() if h.leaf == "leaf1"]
    remote = [h for h in fabric.hosts.values() if h.leaf != "leaf1"]
    frames = []
    for i in range(48):
        src, dst = (local[i % 4], remote[i % len(remote)]) if i % 6 else (local[i % 4], local[(i + 1) % 4])
        if i % 8 == 7:
            src, dst = remote[i % len(remote)], local[i % 4]  # arriving from a spine
        t = RoceFlowTemplate(src.mac, mac, str(src.ip), str(dst.ip), 0x100 + i % 11, payload_len=64 + 32 * (i % 4),
                             dscp=(32, 63, 0, 48, 26)[i % 5], ecn=(2, 1, 0)[i % 3])
        frames.append(t.packet(i))
    for i in range(6):
        frames.append(raw(Ether(src=local[i % 4].mac, dst=mac) / IP(src=str(local[i % 4].ip), dst=str(remote[i].ip))
                          / UDP(sport=1000 + i, dport=2000) / (b"\x00" * 32)))
    return sw, frames


# Tofino programs (a TnaSwitch): the same lockstep comparison
TNA_BUILDERS: dict[str, tuple[Callable[[str], tuple[Any, list[bytes]]], tuple[int, ...]]] = {
    "stellar-tna": (stellar_tna_lab, (1, 2, 3, 4, 9, 10)),
}
