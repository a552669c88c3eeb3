"""Packets per second through p4sim in-process, per backend: the L3 example with 1,000 LPM routes,
and the Stellar leaf pipeline (rendered lab entries, RoCEv2 traffic) beside it.

Prints the median of 3 runs (packets/s of CPU time and microseconds per packet) for each program
on each backend (``--backend python,native``: the reference and the native C backend), and the
native/reference ratio.  Every packet goes the whole way: parser, checksum verify, LPM lookup
with a direct counter, TTL rewrite, checksum update, deparser, traffic manager (unlimited rate)
and output.  Goals (issue 30): >= 240,000 packets/s on the Stellar leaf, >= 1,000,000 on L3.
The reference point is BMv2 simple_switch_grpc built -O2: no loss at 20 kpps on this machine
class (REFERENCE.md).

    .venv/bin/python bench/p4sim_pps.py [--packets N] [--runs R] [--backend python,native] [--baseline CHECKOUT]

``--baseline /work/main`` also runs that checkout's copy of this script (its program, entries and
default backend) before and after this one's, in the same sitting, and prints this checkout's
figures over the baseline's: on a shared machine only ratios measured side by side say whether
a change made the pipeline faster or slower.  REFERENCE_PPS is the Stellar leaf's figure on a
quiet machine before the sub-control split (issue 8).
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


GOALS = {"l3": 1_000_000, "stellar": 240_000}


def build_switch(routes: int, seed: int = 1, backend: str = "python") -> tuple[p4sim.Switch, list[bytes]]:
    prog = p4sim.compile(str(ROOT / "p4src/examples/l3.p4"))
    sw = p4sim.Switch(prog, backend=backend)
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


def build_stellar_leaf(flows: int = 64, backend: str = "python") -> tuple[p4sim.Switch, list[bytes]]:
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
    sw = p4sim.Switch(prog, clock="wall", priority_queues=fabric.dataplane.priority_queues, backend=backend)
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


def measure(label: str, sw: p4sim.Switch, pkts: list[bytes], a: argparse.Namespace) -> float:
    one_run(sw, pkts, 2000)  # warm-up
    runs = [one_run(sw, pkts, a.packets) for _ in range(a.runs)]
    cpu = [c for c, _ in runs]
    med, wmed = statistics.median(cpu), statistics.median([w for _, w in runs])
    print(f"p4sim in-process, {label}, {a.packets} packets x {a.runs} runs, one core")
    print("  runs (pps, CPU time): " + ", ".join(f"{r:,.0f}" for r in cpu))
    print(f"  wall-clock median: {wmed:,.0f} packets/s (lower when the machine is shared)")
    print(f"  median: {med:,.0f} packets/s, {1e6 / med:.1f} us/packet")
    return med


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--routes", type=int, default=1000)
    ap.add_argument("--backend", default="python,native", help="comma-separated: python, native")
    ap.add_argument("--baseline", type=Path, default=None,
                    help="another checkout whose figures to measure in the same sitting")
    a = ap.parse_args()
    backends = a.backend.split(",")
    base_before = _baseline(a) if a.baseline else None
    medians: dict[tuple[str, str], float] = {}
    for backend in backends:
        for prog, label, (sw, pkts) in (
                ("l3", f"l3.p4 with {a.routes} LPM routes", build_switch(a.routes, backend=backend)),
                ("stellar", "stellar.p4, lab leaf1 entries, RoCEv2", build_stellar_leaf(backend=backend))):
            ran = sw.pipeline.backend
            medians[(backend, prog)] = med = measure(f"{label}, backend {ran}", sw, pkts, a)
            print(f"RESULT {backend} {prog} {med:.0f}")
            if ran != backend:
                print(f"  (asked for {backend}: the {ran} backend ran)")
    print()
    for backend in backends:
        l3, st = medians[(backend, "l3")], medians[(backend, "stellar")]
        print(f"{backend}: Stellar pipeline costs {l3 / st:.1f}x the L3 program per packet; Stellar leaf "
              f"{st / REFERENCE_PPS:.2f}x the pre-issue-8 reference ({REFERENCE_PPS:,} packets/s)")
        for prog, goal in GOALS.items():
            v = medians[(backend, prog)]
            print(f"  {prog}: {v:,.0f} packets/s, goal {goal:,}: {'met' if v >= goal else f'{v / goal:.0%} of it'}")
    if "python" in backends and "native" in backends:
        for prog in GOALS:
            print(f"native / python, {prog}: {medians[('native', prog)] / medians[('python', prog)]:.2f}x")
    if a.baseline:
        after = _baseline(a)
        for prog in GOALS:
            base = statistics.median([base_before[prog], after[prog]])
            line = ", ".join(f"{b} {medians[(b, prog)] / base:.2f}x" for b in backends)
            print(f"baseline {a.baseline}, {prog}: {base:,.0f} packets/s (median of its medians before "
                  f"and after); this checkout / baseline: {line}")


def _baseline(a: argparse.Namespace) -> dict[str, float]:
    """The other checkout's medians per program (its default backend): its RESULT lines, or for
    a copy of this script without them, its median lines in order (l3, then stellar)."""
    proc = subprocess.run([sys.executable, str(a.baseline / "bench" / "p4sim_pps.py"), "--packets",
                           str(a.packets), "--runs", str(a.runs), "--routes", str(a.routes)],
                          capture_output=True, text=True, cwd=a.baseline, check=True,
                          env={"PYTHONPATH": str(a.baseline), "PATH": "/usr/bin:/bin"})
    results = re.findall(r"^RESULT python (\w+) (\d+)", proc.stdout, re.M)
    if results:
        return {p: float(v) for p, v in results}
    medians = re.findall(r"^  median: ([\d,]+) packets/s", proc.stdout, re.M)
    return dict(zip(("l3", "stellar"), (float(m.replace(",", "")) for m in medians)))


if __name__ == "__main__":
    main()
