"""`make demo`: the lab fabric on p4sim, RoCEv2 + ECMP against Stellar, side by side.

Six p4sim switches run the real ``p4src/v1model/stellar.p4`` on one virtual clock
(``fabric_sim.simfabric``); every switch serves P4Runtime on a loopback port and gets its pipeline
and rendered entries pushed over it, like separate ``simple_switch_grpc`` processes would.  The
controller polls them over P4Runtime on a virtual-time cadence.

The hosts are reacting RoCEv2 NICs (``fabric_sim.rdma``: RC QPs with PSNs, a window, go-back-N
and DCQCN), so reordering, loss and congestion lengthen the job instead of being counted beside
it.  Links run at real per-byte service times for 4 KB-MTU frames (100G = 3 frames per µs), and
every switch has the study's lossless shared buffer with PFC (fabric_sim.experiment's main mode;
DCQCN at NVIDIA's defaults in the NICs).

Scenarios, each run once per mode:

* **congestion** -- an 8-GPU AlltoAll (every QP one RDMA write, starts spread over
  ``JITTER_US``) beside latency-sensitive 2-packet RoCE mice, while the leaf1-spine1 link runs at
  40% of its capacity (a degraded optic).  Reports job completion, mice FCT p50/p99, PSN
  regressions (reorders) and go-back-N retransmissions, CE marks and path changes by reason.
* **together** -- the same AlltoAll with every QP starting at t=0 (flows that start together see
  each other only through the DRE; no mice).
* **failure** -- steady cross-leaf transfers while the leaf1-spine2 link fails.  Reports go-back-N
  retransmissions and timeouts, and the longest delivery stall of the transfers leaving leaf1
  (the failure is local: the owning switch's port-status handling MODIFYs its
  ``failover.liveness0..7`` entries at once in Stellar mode) and entering leaf1 (remote:
  only the controller's re-plan, ``CONTROLLER_REACTION_US`` later, helps), plus the controller's
  event-to-last-ack wall time for its delta push.

Modes:
* ``ecmp``: RoCEv2 + ECMP as deployed today -- hash-based path choice, static ECN threshold, one
  queue per class; on a failure the switch owning the dead port stops hashing onto it at once
  (local link-down handling), the controller re-plans the rest.
* ``stellar``: adaptive path choice with drain detection, adaptive ECN, elephant/mouse queues,
  local failover at the failure instant (the dead port's entries in the ``failover.liveness0..7``
  tables written down), controller congestion levels.
* ``stellar-jobs`` (congestion only): ``stellar`` plus the controller's job-aware allocation: the
  fabric YAML's jobs get reserved path sets, within which the data plane adapts.
* ``no-drain`` (negative control, congestion only): Stellar's adaptive choice with drain detection
  off and a 50 µs flowlet timeout (LetFlow's range) -- moving flows at gaps without the drain check.

The controller polls every ``POLL_US`` of virtual time (a P4Runtime read of every switch takes
milliseconds on real hardware) and reacts to a failure after ``CONTROLLER_REACTION_US``, the
measured event-to-last-ack time of its delta push on the lab (bench/reaction_time.py).  The fair,
many-seed comparison against every baseline is ``make eval`` (fabric_sim/eval.py); the demo is one
seed of one hash draw.

"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Optional

from control_plane.contract import PATH_CHANGE_REASONS

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "fabrics" / "lab.yaml"
STELLAR = ROOT / "p4src" / "v1model" / "stellar.p4"
# The program per architecture (``--arch``; ``make demo ARCH=tna``) and its preprocessor defines.
PROGRAMS = {"v1model": (STELLAR, {}),
            "tna": (ROOT / "p4src" / "tna" / "stellar.p4", {"__TARGET_TOFINO__": "1"})}
CONTROLLER_REACTION_US = 4900.0  # measured event-to-last-ack of the controller's push (lab)
POLL_US = 1000.0  # controller telemetry cadence (virtual time)
JITTER_US = 20.0  # QPs of the collective start spread over this window
# The switches are the study's main mode (fabric_sim.experiment, RunSpec defaults): queues served
# by bytes at each port's real rate and a lossless shared buffer with PFC, so the per-queue packet
# depth must never bind first.
QUEUE_DEPTH = 1 << 20
MESSAGE_BYTES = 32 * 1024


@dataclass
class ModeResult:
    scenario: str
    mode: str
    metrics: dict[str, object] = field(default_factory=dict)
    wall_s: float = 0.0


def mode_fabric(fabric, mode: str):
    """The lab fabric's data-plane parameters for one mode."""
    dp = fabric.dataplane
    # Shorter sketch windows than the lab default so the demo's modest flows classify in time
    # (the same threshold as the study's baselines: fabric_sim.baselines.EM_THRESHOLD_BYTES).
    elephant = replace(dp.elephant, threshold_bytes=100_000, window_us=250, idle_timeout_us=500)
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
    elif mode == "stellar-jobs":
        # The controller's job-aware allocation: the YAML's jobs get reserved path sets (the
        # congestion scenario runs the moe job's AlltoAll), the data plane adapts within them.
        dp = replace(dp, path_mode="adaptive", reservations=True, elephant=elephant,
                     flowlet=replace(dp.flowlet, hysteresis_us=20))
    elif mode == "no-drain":
        dp = replace(dp, path_mode="adaptive", reservations=False, elephant=elephant,
                     flowlet=replace(dp.flowlet, drain_detection=False, gap_moves=True,
                                     timeout_us=50, hysteresis_us=20))
    else:
        raise ValueError(f"unknown mode {mode}")
    return replace(fabric, dataplane=dp)


class Lab:
    """One mode's fabric: switches up, P4Runtime servers serving, entries pushed, controller."""

    def __init__(self, fabric, program_files: tuple[Path, Path], mode: str, arch: str = "v1model",
                 local_failover: bool = True) -> None:
        from fabric_sim.simfabric import BufferSpec, SimFabric
        from control_plane import archnames
        from control_plane.controller import make_controller
        from control_plane.p4rt import ProgramFiles, SwitchSession, push_fabric
        from control_plane.render import render_fabric

        self.mode = mode
        self.arch = arch
        self.names = archnames.names(arch)
        self.fabric = mode_fabric(fabric, mode)
        from fabric_sim.rdma import NicParams, frame_bytes

        self.pps_per_gbps = 1e9 / (8 * frame_bytes(NicParams().payload))
        from fabric_sim.experiment import study_backend

        # The study's backend on both programs (native unless $P4SIM_BACKEND says otherwise; same
        # answers, faster).
        self.sim = SimFabric(self.fabric, pps_per_gbps=self.pps_per_gbps, queue_depth=QUEUE_DEPTH,
                             byte_rate=True, buffer=BufferSpec(lossless=True),
                             backend=study_backend())
        self.addresses = self.sim.serve_p4runtime()
        rendered = render_fabric(self.fabric, arch=arch)
        # No tenant policing in the demo: with the lab YAML's shares the meters police the
        # collective's own traffic red (fabric_sim/experiment.py says more).
        rendered = replace(rendered, documents={n: dict(d, meters=[]) for n, d in rendered.documents.items()})
        started = time.perf_counter()
        program = ProgramFiles.load(*program_files)
        # 60 s per request: the six servers share this process (and its GIL), and each compiles
        # the pushed program, so on a loaded 2-core machine one pipeline push can take >10 s.
        self.push = push_fabric(self.fabric, rendered.documents, program, self.addresses, progress=None,
                                timeout=60.0)
        if not self.push.ok:
            failed = {n: (r.error or r.write_errors) for n, r in self.push.results.items() if not r.ok}
            raise RuntimeError(f"push failed: {failed}")
        self.push_s = time.perf_counter() - started
        if arch == "tna" and local_failover:
            # Tofino's local failover is the packet generator's port-down app (a switch setting,
            # not a P4Runtime entry): a port going down sends a packet that clears its member's
            # bit in failover.alive, so the data plane skips the port at once.
            for dev in self.sim.devices.values():
                dev.switch.enable_pktgen_port_down(1)
        # Congestion feedback (TNA): the rendered feedback.ports rows copy each uplink's queue
        # delay to mirror session 1, which the pushed document's clone session sends, truncated,
        # to the recirculation port (ECMP renders no session: no feedback, hash members).
        # The controller is a second client with a higher election id: it becomes primary.
        self.sessions = {name: SwitchSession(addr, self.fabric.switches[name].device_id, program.p4info,
                                             election_id=(0, 2), name=name).connect()
                         for name, addr in self.addresses.items()}
        self.controller = make_controller(arch, self.fabric, self.sessions, rendered.plans, rendered.documents)

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
            self.sim.set_port_rate(x, port, self.fabric.switches[x].ports[port].capacity_gbps * fraction)

    def counters(self, name: str, size: int) -> list[int]:
        return [sum(self.sim.switch(s).counter_read(name, i)[0] for s in self.sim.devices)
                for i in range(size)]

    def reorder_events(self) -> int:
        """PSN regressions the switches counted (v1model: per port; TNA: one cell)."""
        n = self.names
        if n.reorder_per_port:
            return sum(self.counters(n.reorder_per_port, 512))
        return sum(self.counters(n.reorder_total_counter, 1))

    def feedback(self) -> tuple[int, int, int]:
        """TNA: (feedback copies mirrored to the recirculation port, copies refused for want of a
        mirror session, groups whose best-member cell a feedback packet in ingress has set)."""
        copies = refused = learned = 0
        for name in self.sim.devices:
            sw = self.sim.switch(name)
            copies += sw.stats["mirrored"]
            refused += sw.stats["unknown_clone_session"]
            learned += sum(sw.register_read(self.names.group_best, g) >> 16 < 8 for g in range(1, 256))
        return copies, refused, learned

    def elephants(self) -> tuple[str, int]:
        """(label, count): v1model counts detections, the TNA program elephant packets."""
        n = self.names
        if n.elephant_detections:
            return "elephant detections", sum(self.counters(n.elephant_detections, 2))
        return "elephant packets (TNA counter)", self.counters(n.elephant_packets, 2)[1]


def _poll(lab, net) -> None:
    """The controller's congestion poll, every POLL_US while a transfer is unfinished."""
    def step() -> None:
        lab.controller.step(lab.sim.now_us)
        if any(t.done_us is None for t in net.transfers):
            lab.sim.at(lab.sim.now_us + POLL_US, step)

    lab.sim.at(POLL_US, step)


def _fct(ts) -> list[float]:
    return [t.done_us - t.started_us for t in ts if t.done_us is not None]


def run_congestion(fabric, files, mode: str, messages: int, together: bool = False,
                   arch: str = "v1model", seed: int = 7, mice_seed: int = 1,
                   probe=None) -> ModeResult:
    """``seed`` draws the AlltoAll's start jitter, ``mice_seed`` the mice (pairs and starts); the
    demo's figures are seed 7 / mice seed 1.  ``probe(lab)``, if given, is called once the lab
    is up and degraded, before any traffic; it returns ``finish(net, a2a, mice)``, called after
    the run before the lab closes, whose dict is added to the metrics (bench/tna_congestion_probe.py)."""
    from fabric_sim.rdma import RdmaNetwork
    from fabric_sim.traffic import percentile
    from fabric_sim.workloads import alltoall

    started = time.perf_counter()
    lab = Lab(fabric, files, mode, arch)
    try:
        lab.degrade("leaf1", "spine1", 0.4)
        finish = probe(lab) if probe is not None else None
        net = RdmaNetwork(lab.sim, lab.fabric)
        job = lab.fabric.jobs["moe"]
        members = list(job.hosts)
        a2a = alltoall(net, members, MESSAGE_BYTES * messages, jitter_us=0.0 if together else JITTER_US,
                       seed=seed, tag="moe")
        mice = []
        if not together:
            import random

            rng = random.Random(mice_seed)
            others = [h for h in lab.fabric.hosts if h not in members]
            pairs = [(a, b) for a in others for b in others
                     if lab.fabric.hosts[a].leaf != lab.fabric.hosts[b].leaf]
            horizon = 3.0 * MESSAGE_BYTES * messages * len(members) * 8 / 100e3
            for _ in range(6 * messages):
                src, dst = rng.choice(pairs)
                mice.append(net.transfer(src, dst, 2 * 4096, "mouse", "mice", rng.uniform(5, horizon)))
        net.start()
        if mode != "ecmp":
            _poll(lab, net)
        lab.sim.run(until_us=200_000)
        reasons = lab.counters(lab.names.path_changes, len(PATH_CHANGE_REASONS))
        done = [t for t in a2a if t.done_us is not None]
        job_us = (max(t.done_us for t in a2a) - min(t.started_us for t in a2a)) if len(done) == len(a2a) else None
        mice_fct = _fct(mice)
        m = {"job completion (us)": job_us}
        if not together:
            m.update({"mice p50 FCT (us)": percentile(mice_fct, 50),
                      "mice p99 FCT (us)": percentile(mice_fct, 99)})
        m.update({
            "PSN regressions at receivers": sum(t.reorders for t in net.transfers),
            "go-back-N retransmissions": sum(t.retransmits for t in net.transfers),
            "reorder events (switch counters)": lab.reorder_events(),
            "CE marks / CNPs": f"{sum(t.ce for t in net.transfers)}/{sum(t.cnps for t in net.transfers)}",
            "transfers completed": f"{sum(t.done_us is not None for t in net.transfers)}/{len(net.transfers)}",
            "path changes gap/drain/failover": f"{reasons[1]}/{reasons[2]}/{reasons[3]}",
            "path changes explore/suspect/restart": f"{reasons[5]}/{reasons[6]}/{reasons[7]}",
            "controller writes": lab.controller.writes,
        })
        label, count = lab.elephants()
        m[label] = count
        if arch == "tna":
            m["feedback copies / refused / groups with a best member"] = "/".join(map(str, lab.feedback()))
        if finish is not None:
            m.update(finish(net, a2a, mice) or {})
        return ModeResult("together (all QPs at t=0)" if together else "congestion", mode, m,
                          time.perf_counter() - started)
    finally:
        lab.close()


def _stall(t, after: float) -> Optional[float]:
    """The longest pause in a transfer's in-order delivery after ``after`` (None: never done)."""
    if t.done_us is None:
        return None
    times = [after] + [x for x in t.delivery_times if x > after]
    return max((b - a for a, b in zip(times, times[1:])), default=0.0)


FAILURE_TIMEOUT_EXP = 7


def run_failure(fabric, files, mode: str, messages: int, local_failover: bool = True,
                arch: str = "v1model") -> ModeResult:
    """``local_failover``: the failed link's own switches take the dead port out of path choice at
    once (its ``failover.liveness0..7`` entries MODIFYed to down; what ECMP hardware's link-down
    handling does too).  False is the negative
    control: every switch waits for the controller."""
    from fabric_sim.rdma import NicParams, RdmaNetwork

    started = time.perf_counter()
    lab = Lab(fabric, files, mode, arch, local_failover)
    try:
        # A short retransmission timeout (4.096 us x 2^7 = 524 us, what an adaptive-retransmission
        # NIC uses): with a standard one (t = 14: 67 ms and up) both modes just wait for it.
        net = RdmaNetwork(lab.sim, lab.fabric, NicParams(timeout_exp=FAILURE_TIMEOUT_EXP))
        hosts = lab.fabric.hosts
        l1 = [h for h in hosts if hosts[h].leaf == "leaf1"]
        l2 = [h for h in hosts if hosts[h].leaf == "leaf2"]
        size = MESSAGE_BYTES * messages
        for a, b in zip(l1, l2):
            net.transfer(a, b, size, "job", "out")
            net.transfer(b, a, size, "job", "in")
        fail_at = 0.25 * size * 8 / 100e3 * len(l1)
        report = {}

        def fail():
            ports = lab.sim.fail_link("leaf1", "spine2")
            down = [(r.switch, r.port) for r in ports]
            if local_failover and arch == "v1model":
                lab.controller.mark_ports_down(down)  # the switches' own port-status handling
            # (TNA: the pktgen port-down packet did it in the data plane, Lab enabled it)
            lab.sim.at(lab.sim.now_us + CONTROLLER_REACTION_US,
                       lambda: report.update(r=lab.controller.handle_link_failure(
                           "leaf1", "spine2", down, mark_down=True)))

        lab.sim.at(fail_at, fail)
        net.start()
        lab.sim.run(until_us=200_000)
        reasons = lab.counters(lab.names.path_changes, len(PATH_CHANGE_REASONS))
        r = report.get("r")

        def worst(tag):
            stalls = [_stall(t, fail_at) for t in net.transfers if t.tag == tag]
            return None if any(x is None for x in stalls) else max(stalls)

        m = {
            "transfers completed": f"{sum(t.done_us is not None for t in net.transfers)}/{len(net.transfers)}",
            "go-back-N retransmissions": sum(t.retransmits for t in net.transfers),
            "retransmission timeouts": sum(t.timeouts for t in net.transfers),
            "  longest stall leaving leaf1, local failure (us)": worst("out"),
            "  longest stall entering leaf1, remote failure (us)": worst("in"),
            "PSN regressions at receivers": sum(t.reorders for t in net.transfers),
            "path changes for failover": reasons[3],
            "controller push after failure (ms, wall)": round(r.wall_ms, 1) if r else None,
            "controller entries written": r.entries_written if r else None,
        }
        return ModeResult("failure", mode, m, time.perf_counter() - started)
    finally:
        lab.close()


def _every(sim, period: float, until: float, action) -> None:
    """Schedule ``action`` every ``period`` µs of virtual time up to ``until``."""
    t = period
    while t <= until:
        sim.at(t, action)
        t += period


def build_program(out_dir: Path, arch: str = "v1model") -> tuple[Path, Path]:
    from p4sim.compiler import compile_files

    source, defines = PROGRAMS[arch]
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, p4info_path = out_dir / "stellar.json", out_dir / "stellar.p4info.txtpb"
    compile_files(str(source), [str(ROOT / "p4src")], dict(defines), str(json_path), str(p4info_path))
    return json_path, p4info_path


TNA_NOTES = """\
program: p4src/tna/stellar.p4 on p4sim's Tofino pipe (TnaSwitch).  Where it legitimately differs
from the v1model run:
  * path choice: the DRE (per group and member), the controller's dre_base.levels, and queue delay
    that reaches ingress only by feedback: egress mirrors a copy per uplink at most every 2 us
    to the recirculation port (mirror session 1: the documents' clone session, pushed over
    P4Runtime with the entries), so a choice sees local
    congestion one feedback copy late (v1model: the next packet sees it);
  * drain: a departure is known once its feedback copy is back in ingress;
  * ECMP mode: dre_choice = 0 and no mirror session: flows stay on their hash member;
  * local failover: the packet generator's port-down packet clears failover.alive in the data
    plane; the controller's delta is a re-render diff (group ids stable: a new member list gets
    a new id), new groups' alive cells before routes point at them;
  * elephants: the TNA program counts elephant packets, not detections.
"""


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


def verdict(results: list[ModeResult]) -> str:
    """The report's first lines: per scenario, Stellar's figures as ratios to ECMP's (lower is
    better for each), said plainly when Stellar is behind, with whether any flow moved -- at the
    demo's sizes the figures are mostly placement when a QP starts."""
    def pick(scenario: str, mode: str) -> Optional[ModeResult]:
        return next((r for r in results if r.scenario == scenario and r.mode == mode), None)

    lines = ["Verdict (Stellar / ECMP; below 1 is better for Stellar):"]
    for scenario, keys, mode in [(sc, k, m) for sc, k in PLOT_METRICS.items() for m in VERDICT_MODES]:
        ecmp, stellar = pick(scenario, "ecmp"), pick(scenario, mode)
        if ecmp is None or stellar is None:
            continue
        parts, behind = [], []
        for key in keys:
            a, b = ecmp.metrics.get(key), stellar.metrics.get(key)
            if not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
                continue
            name = key.strip().split(" (")[0]
            if a == 0:
                parts.append(f"{name} {_fmt(b)} vs {_fmt(a)}")
                if b > 0:
                    behind.append(name)
                continue
            parts.append(f"{name} {b / a:.2f}x")
            if b > a * 1.02:
                behind.append(name)
        moved = stellar.metrics.get("path changes gap/drain/failover", "")
        explored = stellar.metrics.get("path changes explore/suspect/restart", "")
        label = scenario if mode == "stellar" else f"{scenario}, {mode}"
        who = "Stellar" if mode == "stellar" else mode
        lines.append(f"- {label}: " + ", ".join(parts)
                     + (f"; {who} is BEHIND ECMP on {', '.join(behind)}" if behind else f"; {who} is not behind")
                     + (f" (moves gap/drain/failover {moved}, explore/suspect/restart {explored})" if moved else ""))
    if any(r.mode == "stellar" and r.metrics.get("path changes gap/drain/failover", "0/0/0").split("/")[:2] == ["0", "0"]
           and r.scenario != "failure" for r in results):
        lines.append("  Where no flow moved, the run ended before Stellar's adaptation acted: what differs is "
                     "the placement when each QP started (make eval runs the sizes where flows move).")
    return "\n".join(lines)


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.1f}"
    return str(v)


# The modes the verdict compares with ECMP, each on its own line.
VERDICT_MODES = ("stellar", "stellar-jobs")
# What each scenario's panel shows (lower is better for all of them), by the report's keys.
PLOT_METRICS = {
    "congestion": ("job completion (us)", "mice p50 FCT (us)", "mice p99 FCT (us)",
                   "go-back-N retransmissions", "PSN regressions at receivers"),
    "together (all QPs at t=0)": ("job completion (us)", "go-back-N retransmissions"),
    "failure": ("  longest stall leaving leaf1, local failure (us)",
                "  longest stall entering leaf1, remote failure (us)", "go-back-N retransmissions",
                "retransmission timeouts"),
}


def plot(results: list[ModeResult], path: Path) -> None:
    """One panel per scenario, every metric as a ratio to ECMP (``fabric_sim.plots``)."""
    from fabric_sim.plots import ratio_panels

    panels = []
    for scenario in dict.fromkeys(r.scenario for r in results):
        rows = [r for r in results if r.scenario == scenario]
        metrics = {}
        for key in PLOT_METRICS.get(scenario, ()):
            values = {r.mode: r.metrics.get(key) for r in rows if key in r.metrics}
            if values:
                metrics[key.strip().replace(", local failure", "").replace(", remote failure", "")] = values
        panels.append((scenario, metrics))
    ratio_panels(panels, path, "Stellar vs RoCEv2+ECMP on the lab fabric (p4sim, virtual time): "
                               "each metric over ECMP's, lower is better")


def main(argv: Optional[list[str]] = None) -> int:
    from control_plane.model import load_fabric

    ap = argparse.ArgumentParser(prog="python -m fabric_sim", description=__doc__.split("\n")[0])
    ap.add_argument("--fabric", default=str(LAB))
    ap.add_argument("--out", default=str(ROOT / "build" / "demo"))
    ap.add_argument("--messages", type=int, default=8, help="32 KB messages per AlltoAll QP")
    ap.add_argument("--quick", action="store_true", help="a short run (CI): 2 messages per QP")
    ap.add_argument("--arch", choices=tuple(PROGRAMS), default="v1model",
                    help="the program the switches run: p4src/v1model/stellar.p4 (default) or "
                         "p4src/tna/stellar.p4 (p4sim's Tofino pipe)")
    args = ap.parse_args(argv)
    messages = 2 if args.quick else args.messages
    arch = args.arch
    out = Path(args.out) / "tna" if arch == "tna" and args.out == str(ROOT / "build" / "demo") else Path(args.out)
    fabric = load_fabric(args.fabric)
    print(f"compiling {PROGRAMS[arch][0].relative_to(ROOT)} with p4sim ...", flush=True)
    files = build_program(out, arch)
    results = []
    for scenario, runner, modes in (
            ("congestion", run_congestion, ("ecmp", "stellar", "stellar-jobs", "no-drain")),
            ("together", lambda f, p, m, n, arch: run_congestion(f, p, m, n, together=True, arch=arch),
             ("ecmp", "stellar")),
            ("failure", run_failure, ("ecmp", "stellar"))):
        for mode in modes:
            print(f"running {scenario} / {mode} ...", flush=True)
            results.append(runner(fabric, files, mode, messages, arch=arch))
    text = verdict(results) + "\n" + format_report(results)
    if arch == "tna":
        text = TNA_NOTES + text
    print(text)
    (out / "report.txt").write_text(text + "\n")
    (out / "report.json").write_text(json.dumps([r.__dict__ for r in results], indent=2, default=str))
    plot(results, out / "report.png")
    print(f"\nwrote {out / 'report.txt'}, {out / 'report.json'} and {out / 'report.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
