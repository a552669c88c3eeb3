"""Packets per second through p4sim's Tofino pipe in-process, per backend: p4src/tna/stellar.p4
on leaf1 of the lab fabric with its rendered tna entries, and bench/p4sim_pps.py's RoCEv2
packets (64 QPs to the other leaves, 1 KB payloads).

Every packet takes the whole pipe: ingress parser, the Stellar ingress (flow state, path
choice, sketch, meters), ingress deparser, traffic manager, egress parser, the Stellar egress
(queue delay, feedback, ECN, reorder check), egress deparser; with the lab's feedback rows each
data packet also sends a feedback copy (egress mirror) through the recirculation port back into
ingress, where it is consumed: one packet is two ingress and two egress passes.  Prints the
median of 3 runs (packets/s of CPU time, as bench/p4sim_pps.py) per backend and the
native/reference ratio.

    .venv/bin/python bench/p4sim_pps_tna.py [--packets N] [--runs R] [--backend python,native]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import p4sim  # noqa: E402
from p4sim_pps import measure  # noqa: E402  (bench/: this script's directory)


def build_stellar_tna_leaf(flows: int = 64, backend: str = "python") -> tuple[p4sim.Switch, list[bytes]]:
    """leaf1 of the lab fabric on the Tofino pipe with its rendered tna entries and RoCEv2
    packets of ``flows`` QPs from its GPU l1g1 to the other leaves."""
    from control_plane.inprocess import apply_document
    from control_plane.model import load_fabric
    from control_plane.render import render_fabric
    from fabric_sim.roce import RoceFlowTemplate

    prog = p4sim.compile(str(ROOT / "p4src/tna/stellar.p4"))
    fabric = load_fabric(ROOT / "fabrics/lab.yaml")
    # wall clock: the tenant meters refill with real time (as bench/p4sim_pps.py's v1model leaf)
    sw = p4sim.Switch(prog, clock="wall", priority_queues=fabric.dataplane.priority_queues, backend=backend)
    apply_document(sw, render_fabric(fabric, arch="tna").documents["leaf1"])
    src = fabric.hosts["l1g1"]
    dests = [h for h in fabric.hosts.values() if h.leaf != "leaf1"]
    pkts = [RoceFlowTemplate(src.mac, fabric.switches["leaf1"].mac, str(src.ip), str(dests[i % len(dests)].ip),
                             0x100 + i, payload_len=1024).packet(i) for i in range(flows)]
    return sw, pkts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--packets", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--backend", default="python,native", help="comma-separated: python, native")
    a = ap.parse_args()
    medians = {}
    for backend in a.backend.split(","):
        sw, pkts = build_stellar_tna_leaf(backend=backend)
        ran = sw.pipeline.backend
        medians[backend] = med = measure(f"tna/stellar.p4 (Tofino pipe), lab leaf1 entries, RoCEv2, backend {ran}",
                                         sw, pkts, a)
        print(f"RESULT {backend} stellar-tna {med:.0f}")
        if ran != backend:
            print(f"  (asked for {backend}: the {ran} backend ran)")
    if "python" in medians and "native" in medians:
        print(f"native / python, stellar-tna: {medians['native'] / medians['python']:.2f}x")


if __name__ == "__main__":
    main()
