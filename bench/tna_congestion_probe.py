"""Why the demo's congestion scenario comes out as it does: one run, instrumented.

Runs fabric_sim.demo.run_congestion (one arch, one mode, one seed) with a probe on every
switch that records, without changing anything the program does:

* every frame a switch sends on a fabric port (time, switch, port, flow, bytes, CE bit): bytes
  per uplink, which member each AlltoAll flow was placed on at each leaf, the degraded link's
  share, CE marks per port;
* TNA only: every feedback packet that re-enters ingress on the recirculation port (time,
  reported port, queue delay) and, at the first packet of each AlltoAll flow at its source
  leaf, the group's ``path_choice.group_best`` cell and the members' DRE cells
  (``dre.dre<k>``: two-window byte sums) as that packet found them, i.e. the inputs of its
  placement; flows placed within one feedback interval of each other are grouped to show
  herding.

    PYTHONPATH=. .venv/bin/python bench/tna_congestion_probe.py --arch tna --mode stellar --seed 7
"""
from __future__ import annotations

import argparse
import collections
import json
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from control_plane import contract  # noqa: E402  (after the path insert)

PIPE_I = "pipe.StellarIngress"
FEEDBACK_PORT = 68
FEEDBACK_INTERVAL_US = 2.0


def parse(frame: bytes):
    """(src ip, dst ip, dest QP or None, ip total length, ECN bits) of an IPv4 frame, else None."""
    off = 12
    et = struct.unpack_from("!H", frame, off)[0]
    off += 2
    if et == 0x8100:
        et = struct.unpack_from("!H", frame, off + 2)[0]
        off += 4
    if et != 0x0800 or len(frame) < off + 20:
        return None
    vihl, tos, tot = struct.unpack_from("!BBH", frame, off)
    src, dst = frame[off + 12:off + 16], frame[off + 16:off + 20]
    proto = frame[off + 9]
    ihl = (vihl & 15) * 4
    qp = None
    if proto == 17 and len(frame) >= off + ihl + 8 + 12:
        dport = struct.unpack_from("!H", frame, off + ihl + 2)[0]
        if dport == 4791:
            qp = struct.unpack_from("!I", frame, off + ihl + 8 + 4)[0] & 0xFFFFFF
    return ".".join(map(str, src)), ".".join(map(str, dst)), qp, tot, tos & 3


class Probe:
    def __init__(self, lab) -> None:
        self.lab = lab
        self.tx = []          # (t, switch, port, src, dst, qp, bytes, ce)
        self.feedback = []    # (t, switch, port, qdelay_ns)
        self.first = {}       # (switch, src, dst, qp) -> snapshot at the flow's first packet
        fab = lab.fabric
        self.uplinks = {s: {p: pr.peer_switch for p, pr in fab.switches[s].ports.items() if pr.peer_switch}
                        for s in fab.switches}
        self.host_ports = {s: {p for p, pr in fab.switches[s].ports.items() if pr.host} for s in fab.switches}
        for name, dev in lab.sim.devices.items():
            self._wrap(name, dev.switch)

    def _wrap(self, name, sw) -> None:
        emit, ingress = sw._emit, getattr(sw, "_tna_ingress", None)
        probe = self

        def _emit(port, data, *a, **kw):
            if port in probe.uplinks[name]:
                f = parse(data)
                if f is not None:
                    probe.tx.append((sw.now_us, name, port, f[0], f[1], f[2], f[3], int(f[4] == 3)))
            return emit(port, data, *a, **kw)

        sw._emit = _emit
        if ingress is None:
            return

        def _tna_ingress(data, port, now, resubmit, passes):
            if port == FEEDBACK_PORT and resubmit is None and len(data) >= 14 + 9 \
                    and struct.unpack_from("!H", data, 12)[0] == 0x88B6:
                w, qd = struct.unpack_from("!HI", data, 14)
                probe.feedback.append((now, name, w & 0x1FF, qd))
            elif resubmit is None and port in probe.host_ports[name]:
                f = parse(data)
                if f is not None and f[2] is not None and f[3] > 1000:   # RDMA data, not ACKs/CNPs
                    key = (name, f[0], f[1], f[2])
                    if key not in probe.first:
                        probe.first[key] = probe.snapshot(sw, now)
            return ingress(data, port, now, resubmit, passes)

        sw._tna_ingress = _tna_ingress

    def snapshot(self, sw, now):
        snap = {"t": now, "groups": {}}
        for g in range(1, 5):
            best = sw.register_read(f"{PIPE_I}.path_choice.group_best", g)
            pair = sw.register_read(f"{PIPE_I}.dre.dre0", g)   # members 0 and 1, one lane each
            snap["groups"][g] = {"best": best >> 16, "best_ns": (best & 0xFFFF) * 16,
                                 "sum": [((pair >> 16) & 0xFFFF) * contract.TNA_DRE_UNIT_BYTES,
                                         (pair & 0xFFFF) * contract.TNA_DRE_UNIT_BYTES],
                                 "win": sw.register_read(f"{PIPE_I}.dre.window", g)}
        return snap


def analyse(probe: Probe, net, a2a, fabric) -> dict:
    ip_host = {h.ip if isinstance(h.ip, str) else str(h.ip): n for n, h in fabric.hosts.items()}
    hosts = fabric.hosts
    # per-flow placement at the source leaf: the uplink of its first data packet there
    flow_of = {}
    for t in a2a:
        flow_of[(str(hosts[t.src].ip), str(hosts[t.dst].ip))] = t
    placed = {}
    bytes_port = collections.Counter()
    ce_port = collections.Counter()
    pkts_port = collections.Counter()
    for (tm, sw, port, src, dst, qp, nb, ce) in probe.tx:
        bytes_port[(sw, port)] += nb
        pkts_port[(sw, port)] += 1
        ce_port[(sw, port)] += ce
        t = flow_of.get((src, dst))
        if t is None or qp is None or nb <= 1000 or not sw.startswith("leaf"):
            continue
        if hosts[t.src].leaf == sw:
            placed.setdefault((src, dst, qp), (sw, port, tm))
    return {"placed": placed, "bytes": bytes_port, "pkts": pkts_port, "ce": ce_port}


def lab_port(p: Probe, switch: str, peer: str) -> int:
    return next(port for port, s in p.uplinks[switch].items() if s == peer)


def placements(p: Probe, a: dict) -> list[dict]:
    """Each AlltoAll flow's placement at its source leaf with what its first packet found: the
    group's feedback best member, the members' DRE sums and the levels the rendered rows give."""
    from control_plane.render_tna import dre_rows
    rr = dre_rows(100.0)
    width, levels = rr[0]["high"] - rr[0]["low"] + 1, len(rr)
    out = []
    for (sw, src, dst, qp), snap in p.first.items():
        pl = a["placed"].get((src, dst, qp))
        if pl is None:
            continue
        g = next((g for g, v in snap["groups"].items() if v["win"]), 1)
        gs = snap["groups"][g]
        lv = [min(levels - 1, x // contract.TNA_DRE_UNIT_BYTES // width) for x in gs["sum"]]
        ports = sorted(p.uplinks[sw])
        out.append({"t": snap["t"], "switch": sw, "src": src, "dst": dst, "via": p.uplinks[sw][pl[1]],
                    "best": gs["best"], "best_ns": gs["best_ns"], "sum": gs["sum"], "levels": lv,
                    "capped": all(v == levels - 1 for v in lv),
                    "on_best": gs["best"] < 8 and pl[1] == ports[gs["best"]]})
    return sorted(out, key=lambda r: r["t"])


def summary(args, fabric, files) -> int:
    """--seeds N: per seed and mode, the job time and what explains it (the 40 % link's shares,
    placements with both DRE levels capped, placements on the feedback's best member)."""
    import numpy as np
    from fabric_sim import demo
    modes = args.modes.split(",")
    rows = []
    for seed in range(1, args.seeds + 1):
        for mode in modes:
            box = {}

            def probe(lab, box=box):
                pr = Probe(lab)

                def finish(net, a2a, mice):
                    box["p"], box["a"] = pr, analyse(pr, net, a2a, lab.fabric)
                    return {}
                return finish
            r = demo.run_congestion(fabric, files, mode, args.messages, arch=args.arch, seed=seed,
                                    mice_seed=seed, probe=probe)
            pr, a = box["p"], box["a"]
            kb = a["bytes"]
            down = kb[("spine1", lab_port(pr, "spine1", "leaf1"))], kb[("spine2", lab_port(pr, "spine2", "leaf1"))]
            up = kb[("leaf1", lab_port(pr, "leaf1", "spine1"))], kb[("leaf1", lab_port(pr, "leaf1", "spine2"))]
            pl = placements(pr, a) if args.arch == "tna" else []
            far = [x for x in pl if x["switch"] != "leaf1"]
            row = {"seed": seed, "mode": mode, "job": r.metrics["job completion (us)"],
                   "in_kb": down[0] / 1024, "in_share": down[0] / max(1, sum(down)),
                   "out_share": up[0] / max(1, sum(up)),
                   "capped": sum(x["capped"] for x in pl) / max(1, len(pl)),
                   "far_on_best": sum(x["on_best"] for x in far) / max(1, len(far))}
            rows.append(row)
            print(f"seed {seed:>2} {mode:<8} job {row['job']:6.1f}  spine1->leaf1 {row['in_kb']:5.0f} KB "
                  f"({row['in_share']:.0%} of leaf1's inbound)  leaf1->spine1 {row['out_share']:.0%}  "
                  f"capped {row['capped']:.0%}  leaves 2-4 on feedback best {row['far_on_best']:.0%}", flush=True)
    print("\nmedians over seeds")
    for mode in modes:
        xs = [r for r in rows if r["mode"] == mode]
        med = {k: float(np.median([r[k] for r in xs])) for k in ("job", "in_kb", "in_share", "out_share", "capped", "far_on_best")}
        corr = float(np.corrcoef([r["job"] for r in xs], [r["in_kb"] for r in xs])[0, 1])
        print(f"  {mode:<8} job {med['job']:.1f} us, spine1->leaf1 {med['in_kb']:.0f} KB ({med['in_share']:.0%}), "
              f"leaf1->spine1 {med['out_share']:.0%}, capped {med['capped']:.0%}, leaves 2-4 on feedback best "
              f"{med['far_on_best']:.0%}; corr(job, spine1->leaf1 KB) = {corr:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


def main(argv=None) -> int:
    from control_plane.model import load_fabric
    from fabric_sim import demo

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--arch", default="tna", choices=("v1model", "tna"))
    ap.add_argument("--mode", default="stellar")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--mice-seed", type=int, default=None, help="default: the demo's 1 for seed 7, else the seed")
    ap.add_argument("--messages", type=int, default=2)
    ap.add_argument("--json", help="write the raw records here")
    ap.add_argument("--seeds", type=int, default=0, help="summary over seeds 1..N instead of one run")
    ap.add_argument("--modes", default="ecmp,stellar", help="--seeds: the modes (comma-separated)")
    ap.add_argument("--dre-units-per-level", type=int, default=None,
                    help="as in bench/tna_congestion.py (16: the render before the range fix)")
    args = ap.parse_args(argv)
    if args.dre_units_per_level is not None:
        contract.TNA_DRE_UNITS_PER_LEVEL = args.dre_units_per_level
    mice_seed = args.mice_seed if args.mice_seed is not None else (1 if args.seed == 7 else args.seed)
    fabric = load_fabric(str(demo.LAB))
    files = demo.build_program(ROOT / "build" / "bench" / args.arch, args.arch)
    if args.seeds:
        return summary(args, fabric, files)
    box = {}

    def probe(lab):
        p = Probe(lab)
        box["p"] = p

        def finish(net, a2a, mice):
            box["a"] = analyse(p, net, a2a, lab.fabric)
            box["a2a"], box["fabric"] = a2a, lab.fabric
            return {}
        return finish

    r = demo.run_congestion(fabric, files, args.mode, args.messages, arch=args.arch, seed=args.seed,
                            mice_seed=mice_seed, probe=probe)
    p, a, a2a, fab = box["p"], box["a"], box["a2a"], box["fabric"]
    hosts = fab.hosts
    print(f"{args.arch} {args.mode} seed {args.seed}/{mice_seed}: job {r.metrics['job completion (us)']:.1f} us, "
          f"mice p50/p99 {r.metrics['mice p50 FCT (us)']:.1f}/{r.metrics['mice p99 FCT (us)']:.1f}, "
          f"CE/CNP {r.metrics['CE marks / CNPs']}")
    print("\nper fabric port: packets, KB, CE marks (all traffic)")
    for (sw, port) in sorted(a["bytes"]):
        print(f"  {sw:>7}:{port:<3} -> {p.uplinks[sw][port]:<7} {a['pkts'][(sw, port)]:>5} pkts "
              f"{a['bytes'][(sw, port)] / 1024:>7.0f} KB  CE {a['ce'][(sw, port)]:>4}")
    kb = a["bytes"]
    up = kb[("leaf1", lab_port(p, "leaf1", "spine1"))], kb[("leaf1", lab_port(p, "leaf1", "spine2"))]
    down = kb[("spine1", lab_port(p, "spine1", "leaf1"))], kb[("spine2", lab_port(p, "spine2", "leaf1"))]
    print(f"\nthe 40 % link's share: leaf1->spine1 {up[0] / 1024:.0f} KB of leaf1's {sum(up) / 1024:.0f} KB up "
          f"({up[0] / max(1, sum(up)):.0%}); spine1->leaf1 {down[0] / 1024:.0f} KB of {sum(down) / 1024:.0f} KB "
          f"into leaf1 ({down[0] / max(1, sum(down)):.0%}); ideal share 0.4/1.4 = 29 %")
    # AlltoAll placement per source leaf, by destination leaf
    print("\nAlltoAll flows per source leaf and uplink (to leaf1 / to others)")
    per = collections.defaultdict(collections.Counter)
    for (src, dst, qp), (sw, port, tm) in a["placed"].items():
        dleaf = next(h.leaf for h in hosts.values() if str(h.ip) == dst)
        per[sw][(p.uplinks[sw][port], "to leaf1" if dleaf == "leaf1" else "other")] += 1
    for sw in sorted(per):
        print(f"  {sw}: " + ", ".join(f"{k[0]} {k[1]}: {v}" for k, v in sorted(per[sw].items())))
    last = max(a2a, key=lambda t: t.done_us)
    print(f"\nlast AlltoAll flow: {last.src}->{last.dst} start {last.started_us:.1f} done {last.done_us:.1f}")
    if args.arch == "tna":
        print(f"\nfeedback packets: {len(p.feedback)}; first per leaf port:")
        seen = {}
        for (tm, sw, port, qd) in p.feedback:
            seen.setdefault((sw, port), []).append((tm, qd))
        for k in sorted(seen):
            if k[0].startswith("leaf"):
                xs = seen[k]
                print(f"  {k[0]}:{k[1]} first at {xs[0][0]:.1f} us, {len(xs)} copies, max delay {max(q for _, q in xs) / 1000:.1f} us, "
                      f"delays (us) " + " ".join(f"{tm:.0f}:{q / 1000:.1f}" for tm, q in xs[:14]))
        print("\nplacement of each AlltoAll flow at its source leaf (time order): t, flow, uplink, "
              "group_best member (delay us), DRE sums KB m0/m1")
        rows = placements(p, a)
        for x in rows:
            bs = "none" if x["best"] >= 8 else f"m{x['best']} ({x['best_ns'] / 1000:.1f})"
            print(f"  {x['t']:6.1f} {x['switch']} {x['src']:>9}->{x['dst']:<9} {x['via']:<7} best {bs:<12} "
                  f"DRE {x['sum'][0] / 1024:5.0f}/{x['sum'][1] / 1024:5.0f} KB  levels {x['levels'][0]:>2}/{x['levels'][1]:>2}"
                  f"{'  both capped' if x['capped'] else ''}")
        far = [x for x in rows if x["switch"] != "leaf1"]
        print(f"\n{len(rows)} placements, {sum(x['capped'] for x in rows)} with both members' DRE level at the cap; "
              f"leaves 2-4: {sum(x['on_best'] for x in far)} of {len(far)} on the member feedback named best")
        if args.json:
            Path(args.json).write_text(json.dumps({"feedback": p.feedback, "tx": p.tx}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
