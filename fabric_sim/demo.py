"""`make demo`: the lab fabric on p4sim, RoCEv2 + ECMP against Stellar, side by side.

Six p4sim switches run the real ``p4src/v1model/stellar.p4`` on one virtual clock
(``fabric_sim.simfabric``); every switch serves P4Runtime on a loopback port and gets its pipeline
and rendered entries pushed over it, like separate ``simple_switch_grpc`` processes would.  The
controller polls them over P4Runtime on a virtual-time cadence.

Two scenarios, each run once per mode:

* **congestion** — an AlltoAll among 8 GPUs (message bursts with pauses, as RDMA writes of a
  collective are) beside latency-sensitive RoCE mice, while the leaf1–spine1 link runs at 40% of
  its capacity (a degraded optic).  Reports job completion time, mice p50/p99 latency, receiver
  PSN regressions, CE marks and path changes by reason.
* **failure** — steady cross-leaf flows while the leaf1–spine2 link fails.  Reports packets lost
  (split by whether the failed link is local to the sending leaf, where ``port_down`` acts at
  once, or remote, where only the controller's re-plan helps), path changes for failover, and the
  controller's event-to-last-ack time for its delta push.

Modes:
* ``ecmp``: RoCEv2 + ECMP as deployed today — hash-based path choice, static ECN threshold, one
  queue per class, the controller re-plans after a failure (after ``CONTROLLER_REACTION_US``).
* ``stellar``: adaptive path choice with drain detection, adaptive ECN, elephant/mouse queues,
  local failover through ``port_down`` at the failure instant, controller congestion levels.
* ``no-drain`` (negative control, congestion only): Stellar's adaptive choice with drain detection
  off and a 1 µs flowlet timeout — shows that moving flows without the drain check reorders them.

The hosts model no RDMA retransmission: a PSN regression is counted (a go-back-N receiver would
drop and re-request everything after it), not replayed, so the ``no-drain`` job time flatters it.
"reorder events (switch counters)" is the data plane's own detector, hashed per (src, dst, QP)
into a fixed register array: two flows sharing a cell can count a false event, which is why the
receivers' exact count is reported beside it.

All times are virtual microseconds of the modelled fabric (100G modelled as 1 packet/µs), so the
figures are repeatable run to run; only the controller's wall-clock push time varies.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "fabrics" / "lab.yaml"
STELLAR = ROOT / "p4src" / "v1model" / "stellar.p4"
CONTROLLER_REACTION_US = 500.0  # modelled detection + re-plan delay of a central controller
POLL_US = 50.0  # controller telemetry cadence (virtual time)
JITTER_US = 96.0  # QPs of the collective start spread over one message period
QUEUE_DEPTH = 2000  # deep buffers: RoCE fabrics run lossless (PFC), so congestion shows as delay


@dataclass
class ModeResult:
    scenario: str
    mode: str
    metrics: dict[str, object] = field(default_factory=dict)
    wall_s: float = 0.0


def mode_fabric(fabric, mode: str):
    """The lab fabric's data-plane parameters for one mode."""
    dp = fabric.dataplane
    # Shorter sketch windows than the lab default so the demo's modest flows classify in time.
    elephant = replace(dp.elephant, threshold_bytes=12_000, window_us=250, idle_timeout_us=1000)
    if mode == "ecmp":
        dp = replace(dp, path_mode="ecmp", reservations=False, elephant=elephant,
                     flowlet=replace(dp.flowlet, drain_detection=False, gap_moves=False),
                     ecn=replace(dp.ecn, adaptive=False),
                     classes=tuple(replace(c, elephant_queue=c.queue) for c in dp.classes))
    elif mode == "stellar":
        # Hysteresis 20 µs (lab default 4): at the modelled 1 packet/µs a few queued packets are
        # already several µs, and with a smaller margin the leaves herd onto whichever spine looked
        # cheapest a poll ago (measured: job time 1581 µs vs 1279 µs at 12 messages).
        dp = replace(dp, path_mode="adaptive", reservations=False, elephant=elephant,
                     flowlet=replace(dp.flowlet, hysteresis_us=20))
    elif mode == "no-drain":
        dp = replace(dp, path_mode="adaptive", reservations=False, elephant=elephant,
                     flowlet=replace(dp.flowlet, drain_detection=False, gap_moves=True,
                                     timeout_us=1, hysteresis_us=1))
    else:
        raise ValueError(f"unknown mode {mode}")
    return replace(fabric, dataplane=dp)


class Lab:
    """One mode's fabric: switches up, P4Runtime servers serving, entries pushed, controller."""

    def __init__(self, fabric, program_files: tuple[Path, Path], mode: str) -> None:
        from fabric_sim.simfabric import SimFabric
        from control_plane.controller import Controller
        from control_plane.p4rt import ProgramFiles, SwitchSession, push_fabric
        from control_plane.render import render_fabric

        self.mode = mode
        self.fabric = mode_fabric(fabric, mode)
        self.sim = SimFabric(self.fabric, queue_depth=QUEUE_DEPTH)
        self.addresses = self.sim.serve_p4runtime()
        rendered = render_fabric(self.fabric)
        started = time.perf_counter()
        program = ProgramFiles.load(*program_files)
        self.push = push_fabric(self.fabric, rendered.documents, program, self.addresses, progress=None)
        if not self.push.ok:
            raise RuntimeError(f"push failed: {self.push.results}")
        self.push_s = time.perf_counter() - started
        # The controller is a second client with a higher election id: it becomes primary.
        self.sessions = {name: SwitchSession(addr, self.fabric.switches[name].device_id, program.p4info,
                                             election_id=(0, 2), name=name).connect()
                         for name, addr in self.addresses.items()}
        self.controller = Controller(self.fabric, self.sessions, rendered.plans, rendered.documents)

    def close(self) -> None:
        for session in self.sessions.values():
            session.close()
        self.sim.stop()

    def port(self, switch: str, peer: str) -> int:
        return next(p.number for p in self.fabric.switches[switch].ports.values() if p.peer_switch == peer)

    def degrade(self, a: str, b: str, fraction: float) -> None:
        """Run the a–b link (both directions) at ``fraction`` of its capacity."""
        for x, y in ((a, b), (b, a)):
            port = self.port(x, y)
            cap = self.fabric.switches[x].ports[port].capacity_gbps
            self.sim.devices[x].set_queue_rate(int(cap * 10_000 * fraction), port)

    def counters(self, name: str, size: int) -> list[int]:
        return [sum(self.sim.switch(s).counter_read(name, i)[0] for s in self.sim.devices)
                for i in range(size)]


def endpoints(fabric):
    from fabric_sim.traffic import Endpoint

    return {h.name: Endpoint(h.name, str(h.ip), h.mac, h.leaf, h.port) for h in fabric.hosts.values()}


def run_congestion(fabric, files, mode: str, messages: int) -> ModeResult:
    from fabric_sim.traffic import Collector, Workload, percentile

    started = time.perf_counter()
    lab = Lab(fabric, files, mode)
    try:
        lab.degrade("leaf1", "spine1", 0.4)
        eps = endpoints(lab.fabric)
        job = lab.fabric.jobs["moe"]
        members = [eps[h] for h in job.hosts]
        w = Workload()
        # 8-packet messages at half line rate per QP, 80 µs apart: ~0.08 packets/µs per QP.
        w.alltoall(members, packets_per_pair=8 * messages, start_us=0, gap_us=2, job="moe",
                   burst=8, idle_us=80, jitter_us=JITTER_US)
        others = [eps[h] for h in eps if h not in job.hosts]
        pairs = [(a, b) for a in others for b in others if a.leaf != b.leaf]
        horizon = 96 * messages
        w.mice(pairs, count=12 * messages, packets=2, start_us=50, end_us=horizon, gap_us=1)
        collector = Collector(w)
        lab.sim.deliver = lambda t, host, frame: collector.on_receive(t, frame)
        if mode != "ecmp":
            _every(lab.sim, POLL_US, horizon + 2000, lambda: lab.controller.step(lab.sim.now_us))
        lab.sim.run(w.schedule(lambda e: lab.fabric.switches[e.leaf].mac), until_us=horizon + 20_000,
                    on_send=collector.on_send)
        reasons = lab.counters("StellarIngress.flowlet.path_changes", 5)
        mice = collector.latencies("mouse")
        m = {
            "job completion (us)": collector.job_completion_us("moe"),
            "mice p50 latency (us)": percentile(mice, 50),
            "mice p99 latency (us)": percentile(mice, 99),
            "job p99 latency (us)": percentile(collector.latencies("job"), 99),
            "PSN regressions at receivers": collector.total("reorders"),
            "reorder events (switch counters)": sum(lab.counters("StellarEgress.reorder.events", 512)),
            "CE-marked packets delivered": collector.total("ce_marks"),
            "packets sent": collector.total("sent"),
            "packets delivered": collector.total("received"),
            "path changes gap/drain/failover": f"{reasons[1]}/{reasons[2]}/{reasons[3]}",
            "elephant detections": sum(lab.counters("StellarIngress.elephant.detections", 2)),
            "controller writes": lab.controller.writes,
        }
        return ModeResult("congestion", mode, m, time.perf_counter() - started)
    finally:
        lab.close()


def run_failure(fabric, files, mode: str, messages: int) -> ModeResult:
    from fabric_sim.traffic import Collector, Workload

    started = time.perf_counter()
    lab = Lab(fabric, files, mode)
    try:
        eps = endpoints(lab.fabric)
        w = Workload()
        l1 = [e for e in eps.values() if e.leaf == "leaf1"]
        l2 = [e for e in eps.values() if e.leaf == "leaf2"]
        for a in l1:
            for b in l2:
                w.add(a, b, 8 * messages, start_us=0, gap_us=4, kind="job", job="steady")
                w.add(b, a, 8 * messages, start_us=0, gap_us=4, kind="job", job="steady")
        horizon = 4 * 8 * messages
        fail_at = horizon * 0.4
        collector = Collector(w)
        lab.sim.deliver = lambda t, host, frame: collector.on_receive(t, frame)
        report = {}

        def fail():
            ports = lab.sim.fail_link("leaf1", "spine2")
            down = [(r.switch, r.port) for r in ports]
            if mode == "stellar":
                lab.controller.mark_ports_down(down)  # the switches' own port-status handling
            lab.sim.at(lab.sim.now_us + CONTROLLER_REACTION_US,
                       lambda: report.update(r=lab.controller.handle_link_failure(
                           "leaf1", "spine2", down, mark_down=(mode == "stellar"))))

        lab.sim.at(fail_at, fail)
        lab.sim.run(w.schedule(lambda e: lab.fabric.switches[e.leaf].mac), until_us=horizon + 20_000,
                    on_send=collector.on_send)
        lost = collector.total("sent") - collector.total("received")
        reasons = lab.counters("StellarIngress.flowlet.path_changes", 5)
        r = report.get("r")
        m = {
            "packets sent": collector.total("sent"),
            "packets lost": lost,
            "  lost leaving leaf1 (failure is local)": _lost(collector, w, lambda f: f.src.leaf == "leaf1"),
            "  lost entering leaf1 (failure is remote)": _lost(collector, w, lambda f: f.dst.leaf == "leaf1"),
            "flows that lost packets": sum(1 for f in w.flows
                                           if collector.results[f.fid].received < f.packets),
            "PSN regressions at receivers": collector.total("reorders"),
            "path changes for failover": reasons[3],
            "controller push after failure (ms, wall)": round(r.wall_ms, 1) if r else None,
            "controller entries written": r.entries_written if r else None,
        }
        return ModeResult("failure", mode, m, time.perf_counter() - started)
    finally:
        lab.close()


def _lost(collector, workload, which) -> int:
    return sum(f.packets - collector.results[f.fid].received for f in workload.flows if which(f))


def _every(sim, period: float, until: float, action) -> None:
    """Schedule ``action`` every ``period`` µs of virtual time up to ``until``."""
    t = period
    while t <= until:
        sim.at(t, action)
        t += period


def build_program(out_dir: Path) -> tuple[Path, Path]:
    from p4sim.compiler import compile_files

    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, p4info_path = out_dir / "stellar.json", out_dir / "stellar.p4info.txtpb"
    compile_files(str(STELLAR), [str(ROOT / "p4src")], {}, str(json_path), str(p4info_path))
    return json_path, p4info_path


def format_report(results: list[ModeResult]) -> str:
    lines = []
    for scenario in dict.fromkeys(r.scenario for r in results):
        rows = [r for r in results if r.scenario == scenario]
        keys = list(dict.fromkeys(k for r in rows for k in r.metrics))
        width = max(len(k) for k in keys) + 2
        lines.append(f"\n== {scenario} ==")
        lines.append("".ljust(width) + "".join(r.mode.rjust(14) for r in rows))
        for k in keys:
            lines.append(k.ljust(width) + "".join(_fmt(r.metrics.get(k)).rjust(14) for r in rows))
        lines.append("wall time (s)".ljust(width) + "".join(f"{r.wall_s:.1f}".rjust(14) for r in rows))
    return "\n".join(lines)


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.1f}"
    return str(v)


def plot(results: list[ModeResult], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cong = [r for r in results if r.scenario == "congestion"]
    fail = [r for r in results if r.scenario == "failure"]
    panels = [("job completion (us)", cong), ("mice p99 latency (us)", cong),
              ("PSN regressions at receivers", cong), ("packets lost", fail)]
    fig, axes = plt.subplots(1, len(panels), figsize=(4 * len(panels), 3.6))
    colours = {"ecmp": "#999999", "stellar": "#1f77b4", "no-drain": "#d62728"}
    for ax, (key, rows) in zip(axes, panels):
        vals = [r.metrics.get(key) or 0 for r in rows]
        ax.bar([r.mode for r in rows], vals, color=[colours.get(r.mode, "#555") for r in rows])
        ax.set_title(f"{key}\n({rows[0].scenario})" if rows else key, fontsize=9)
        for i, v in enumerate(vals):
            ax.text(i, v, _fmt(v), ha="center", va="bottom", fontsize=8)
    fig.suptitle("Stellar vs RoCEv2+ECMP on the lab fabric (p4sim, virtual time)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: Optional[list[str]] = None) -> int:
    from control_plane.model import load_fabric

    ap = argparse.ArgumentParser(prog="python -m fabric_sim", description=__doc__.split("\n")[0])
    ap.add_argument("--fabric", default=str(LAB))
    ap.add_argument("--out", default=str(ROOT / "build" / "demo"))
    ap.add_argument("--messages", type=int, default=12, help="messages per AlltoAll flow")
    ap.add_argument("--quick", action="store_true", help="a short run (CI): 4 messages per flow")
    args = ap.parse_args(argv)
    messages = 4 if args.quick else args.messages
    out = Path(args.out)
    fabric = load_fabric(args.fabric)
    print(f"compiling {STELLAR.relative_to(ROOT)} with p4sim ...", flush=True)
    files = build_program(out)
    results = []
    for scenario, runner, modes in (("congestion", run_congestion, ("ecmp", "stellar", "no-drain")),
                                    ("failure", run_failure, ("ecmp", "stellar"))):
        for mode in modes:
            print(f"running {scenario} / {mode} ...", flush=True)
            results.append(runner(fabric, files, mode, messages))
    text = format_report(results)
    print(text)
    (out / "report.txt").write_text(text + "\n")
    (out / "report.json").write_text(json.dumps([r.__dict__ for r in results], indent=2, default=str))
    plot(results, out / "report.png")
    print(f"\nwrote {out / 'report.txt'}, {out / 'report.json'} and {out / 'report.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
