"""Packets per second through p4sim in-process: the L3 example with 1,000 LPM routes, and the
Stellar leaf pipeline (rendered lab entries, RoCEv2 traffic) beside it.

Prints the median of 5 runs (packets/s and microseconds per packet) for each program.  Every packet goes the whole
way: parser, checksum verify, LPM lookup with a direct counter, TTL rewrite, checksum update,
deparser, traffic manager (unlimited rate) and output.  The reference point is BMv2
simple_switch_grpc built -O2: no loss at 20 kpps on this machine class (REFERENCE.md).

    .venv/bin/python bench/p4sim_pps.py [--packets N] [--runs R] [--baseline CHECKOUT]

``--baseline /work/main`` also runs that checkout's copy of this script (its program and entries)
before and after this one's, in the same sitting, and prints the Stellar ratio: on a shared
machine only a ratio measured side by side says whether a change made the pipeline slower.
REFERENCE_PPS is the Stellar leaf's figure on a quiet machine before the sub-control split
(issue 8: the pipeline may not become more than 25% slower than that).
"""
from __future__ import annotations

import argparse
import random
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import p4sim  # noqa: E402
from scapy.all import IP, UDP, Ether, raw  # noqa: E402

TABLE = "MyIngress.ipv4_lpm"
REFERENCE_PPS = 26_700  # Stellar leaf before issue 8, quiet machine


def build_switch(routes: int, seed: int = 1) -> tuple[p4sim.Switch, list[bytes]]:
    prog = p4sim.compile(str(ROOT / "p4src/examples/l3.p4"))
    sw = p4sim.Switch(prog)
    rnd = random.Random(seed)
    dests = []
    seen = set()
    while len(seen) < routes:
        plen = rnd.choice([8, 12, 16, 20, 22, 24, 24, 24, 28, 32])
        v = rnd.getrandbits(32) & (((1 << plen) - 1) << (32 - plen))
        if (v, plen) in seen:
            continue
        seen.add((v, plen))
        sw.insert_entry(TABLE, {"hdr.ipv4.dstAddr": (v, plen)}, "MyIngress.ipv4_forward",
                        {"dstAddr": rnd.getrandbits(48), "port": 1 + len(seen) % 8})
        dests.append(v | rnd.getrandbits(32 - plen) if plen < 32 else v)
    # 64 distinct packets that hit random routes (so lookups probe several prefix lengths)
    pkts = []
    for i in range(64):
        d = dests[rnd.randrange(len(dests))]
        dst = ".".join(str((d >> s) & 0xFF) for s in (24, 16, 8, 0))
        pkts.append(raw(Ether(dst="00:00:00:00:00:01") / IP(src="192.168.0.1", dst=dst, ttl=64) / UDP(sport=1000 + i, dport=4791) / (b"\x00" * 64)))
    return sw, pkts


def build_stellar_leaf(flows: int = 64) -> tuple[p4sim.Switch, list[bytes]]:
    """leaf1 of the lab fabric with its rendered entries; RoCEv2 packets of ``flows`` QPs to the
    other leaves, so every packet takes the whole Stellar ingress and egress (flow state, path
    choice, sketch, ECN window, reorder check) and leaves on an uplink."""
    from control_plane.inprocess import apply_document
    from control_plane.model import load_fabric
    from control_plane.render import render_fabric
    from fabric_sim.roce import RoceFlowTemplate

    prog = p4sim.compile(str(ROOT / "p4src/v1model/stellar.p4"), include_dirs=[str(ROOT / "p4src")])
    fabric = load_fabric(ROOT / "fabrics/lab.yaml")
    # Wall clock: the tenant meters refill with real time (a frozen virtual clock would turn every
    # tenant red once its burst is spent and the benchmark would measure drops).
    sw = p4sim.Switch(prog, clock="wall", priority_queues=fabric.dataplane.priority_queues)
    apply_document(sw, render_fabric(fabric).documents["leaf1"])
    src = fabric.hosts["l1g1"]
    dests = [h for h in fabric.hosts.values() if h.leaf != "leaf1"]
    pkts = []
    for i in range(flows):
        d = dests[i % len(dests)]
        t = RoceFlowTemplate(src.mac, fabric.switches["leaf1"].mac, str(src.ip), str(d.ip), 0x100 + i,
                             payload_len=1024)
        pkts.append(t.packet(i))
    return sw, pkts


def one_run(sw: p4sim.Switch, pkts: list[bytes], n: int) -> tuple[float, float]:
    """(packets per CPU second of this process, packets per wall second).  The CPU-time figure
    is the one to compare: on a shared machine other processes stretch wall time, not the work
    p4sim does per packet."""
    send, m = sw.send, len(pkts)
    c0, t0 = time.process_time(), time.perf_counter()
    for i in range(n):
        send(0, pkts[i % m])
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    out = sw.take_output()
    if len(out) != n:
        raise SystemExit(f"expected {n} packets out, got {len(out)} (stats {dict(sw.stats)})")
    return n / cpu, n / wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--routes", type=int, default=1000)
    ap.add_argument("--baseline", type=Path, default=None,
                    help="another checkout whose Stellar figure to measure in the same sitting")
    a = ap.parse_args()
    base_before = _baseline(a) if a.baseline else None
    medians = {}
    for label, (sw, pkts) in ((f"l3.p4 with {a.routes} LPM routes", build_switch(a.routes)),
                              ("stellar.p4, lab leaf1 entries, RoCEv2", build_stellar_leaf())):
        one_run(sw, pkts, 2000)  # warm-up
        runs = [one_run(sw, pkts, a.packets) for _ in range(a.runs)]
        cpu = [c for c, _ in runs]
        wall = [w for _, w in runs]
        med, wmed = statistics.median(cpu), statistics.median(wall)
        medians[label] = med
        print(f"p4sim in-process, {label}, {a.packets} packets x {a.runs} runs, one core")
        print("  runs (pps, CPU time): " + ", ".join(f"{r:,.0f}" for r in cpu))
        print(f"  wall-clock median: {wmed:,.0f} packets/s (lower when the machine is shared)")
        print(f"  median: {med:,.0f} packets/s, {1e6 / med:.1f} us/packet")
    (l3, l3v), (st, stv) = medians.items()
    print(f"Stellar pipeline costs {l3v / stv:.1f}x the L3 program per packet")
    print(f"Stellar leaf: {stv:,.0f} packets/s here vs {REFERENCE_PPS:,} packets/s reference "
          f"(quiet machine): {stv / REFERENCE_PPS:.2f}x")
    if a.baseline:
        base = statistics.median([base_before, _baseline(a)])
        print(f"baseline {a.baseline}: Stellar leaf {base:,.0f} packets/s (median of its medians "
              f"before and after); this checkout / baseline = {stv / base:.2f}")


def _baseline(a: argparse.Namespace) -> float:
    """The Stellar median printed by the other checkout's copy of this script."""
    proc = subprocess.run([sys.executable, str(a.baseline / "bench" / "p4sim_pps.py"), "--packets",
                           str(a.packets), "--runs", str(a.runs), "--routes", str(a.routes)],
                          capture_output=True, text=True, cwd=a.baseline, check=True,
                          env={"PYTHONPATH": str(a.baseline), "PATH": "/usr/bin:/bin"})
    medians = re.findall(r"^  median: ([\d,]+) packets/s", proc.stdout, re.M)
    return float(medians[-1].replace(",", ""))


if __name__ == "__main__":
    main()
