"""One run of the fabric study: (workload, topology, mode, seed) -> a row of metrics.

A run builds the fabric on a ``SimFabric`` (by default: queues served by bytes at the link rate,
and a lossless shared-buffer switch with PFC; ``RunSpec.buffer`` / ``byte_rate`` select the lossy
mode or the older static 2 MB queues served one 4 KB frame slot per packet), installs the
mode's pipeline in-process (no gRPC: sweeps do not test the P4Runtime path, ``make demo`` does),
starts ``RdmaNetwork`` NICs with the workload's transfers, applies the topology's events, and
runs until every transfer completed (or the horizon).  Every run is independent and
deterministic given its spec, so sweeps parallelise.

Backend: every switch of a run runs its program on p4sim's native backend (generated C, the
default here) or on the reference interpreter (``run(spec, backend="python")``, ``python -m
fabric_sim run --backend python``, ``python -m fabric_sim.eval --backend python``, or
``$P4SIM_BACKEND``).  The two give identical rows (tests/native/test_fabric_identity.py; the whole
quick matrix: ``bench/fabric_identity.py``), so the backend is not part of ``RunSpec``: it
decides how fast a row comes, never what it says.  Without a C compiler the native backend falls
back to the reference with one warning per program.

Modes:
* baselines on ``p4src/baselines/lb.p4`` (``fabric_sim.baselines``): ecmp, wcmp (path
  capacity), ecmp-em, letflow-<timeout µs>, spray, drill, least (least loaded at start),
  conga[-<timeout µs>]; ``oracle`` is no run: every row's ``ideal_us`` is the fluid optimum;
* ``stellar``: ``p4src/v1model/stellar.p4`` with the fabric's rendered entries, adaptive path
  choice with drain detection, adaptive ECN, elephant/mouse queues, failover through the controller-written
  ``failover.liveness0..7`` tables, and the
  controller polling every ``POLL_US`` of virtual time;
* ``stellar-nodrain-<T>``: the same with drain detection off and flowlet timeout T (the control);
* ``stellar-static-ecn``: Stellar with the baselines' static ECN instead of its adaptive ECN (the
  ablation that separates Stellar's ECN effect from its routing effect): the DCQCN RED ramp of
  ``fabric_sim.baselines`` (Kmin 25, Kmax 100 packets, Pmax 0.2) turned into queue delay at each
  port's (possibly degraded) rate, since Stellar's ECN block compares sojourn time, not length.

A degraded link (``deg70``/``deg40``/``deg10``) runs at its fraction of the rate on the wire, and
every mode is told that rate the same way, through the fabric model (``with_capacities``).

Timing that matters: failures are detected by the switch that owns the port at once (both
baselines and Stellar); the rest of the fabric learns after ``REACTION_US``, the controller's
measured event-to-last-ack time on the lab over P4Runtime (bench/reaction_time.py: 4.9 ms
median).  The controller's congestion poll runs every ``POLL_US`` (a P4Runtime read of every
switch's telemetry takes milliseconds, not the 50 µs the old demo assumed).
"""
from __future__ import annotations

import os
import statistics
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Optional

from control_plane.contract import PATH_CHANGE_REASONS

ROOT = Path(__file__).resolve().parents[1]
FABRICS = {"lab": ROOT / "fabrics" / "lab.yaml", "pod": ROOT / "fabrics" / "pod.yaml",
           "conweave": ROOT / "fabrics" / "conweave.yaml"}
STELLAR_P4 = ROOT / "p4src" / "v1model" / "stellar.p4"
LB_P4 = ROOT / "p4src" / "baselines" / "lb.p4"
REACTION_US = 4900.0
POLL_US = 1000.0
QUEUE_DEPTH = 512  # packets per (port, priority) queue: 2 MB of 4 KB frames
FAIL_AT_US = 40.0
DEGRADED = ("leaf1", "spine1")
FAILED = ("leaf1", "spine2")
HORIZON_US = 200_000.0
SHORT_PACKETS = 4  # a "short" flow: at most 4 packets (16 KB)
STUDY_BACKEND = "native"  # the backend when neither run(backend=) nor $P4SIM_BACKEND names one
WALL_KEYS = ("wall_s",)  # the only row keys that differ between two runs of one spec

# Stellar's path-change reasons 1.. (define.p4 CHANGE_*, after CHANGE_NEW) as row keys
STELLAR_MOVE_KEYS = tuple(f"moves_{reason}" for reason in PATH_CHANGE_REASONS[1:])

_programs: dict[str, object] = {}

# Every key of a run's row (``run``), with its meaning.  Slowdown = FCT / the unloaded FCT of the
# same transfer (``_ideal_fct``); buckets by packets of 4 KB: short <= 4 (16 KB), medium <= 64
# (256 KB), long above.  Times are µs of virtual time.
ROW_KEYS: dict[str, str] = {
    "workload": "RunSpec.workload", "topo": "RunSpec.topo", "mode": "RunSpec.mode", "seed": "RunSpec.seed",
    "fabric": "RunSpec.fabric", "nbytes": "RunSpec.nbytes (bytes per QP of a collective)",
    "duration_us": "RunSpec.duration_us (arrival window of Poisson workloads)",
    "buffer": "RunSpec.buffer (lossless PFC shared buffer | lossy | static)",
    "byte_rate": "RunSpec.byte_rate (queues served by bytes)", "timeout_exp": "RunSpec.timeout_exp (RTO 4.096 us x 2^t)",
    "dcqcn": "RunSpec.dcqcn (nvidia | paper | swift | off)", "channels": "RunSpec.channels (QPs per rank pair, train-*)",
    "slice_bytes": "RunSpec.slice_bytes (message slice, train-*)", "warmup": "RunSpec.warmup (iterations left out)",
    "gap_us": "RunSpec.gap_us (compute between iterations)", "skew_us": "RunSpec.skew_us (launch skew)",
    "scenario": "workload/topo",
    "transfers": "RDMA messages (QPs) in the run", "incomplete": "transfers not done at the horizon",
    "completion_us": "the collective's last completion minus its first start (None if unfinished)",
    "ideal_us": "fluid lower bound of the collective (perfect balancing, real link rates; train-*: "
                "of one iteration, median over the measured ones)",
    "completion_over_ideal": "completion_us / ideal_us (the oracle: 1.0; train-*: median over the "
                             "measured iterations of iteration time / that iteration's fluid bound)",
    "iterations": "measured iterations of the collective that completed (warm-up excluded; 1 without "
                  "iterations)",
    "iteration_us_p50": "median per-iteration time (train-*: an iteration unfinished at the horizon "
                        "counts until the horizon)", "iteration_us_max": "slowest iteration",
    "busbw_gbps": "NCCL bus bandwidth at the median iteration time (AllReduce algbw*2(n-1)/n, "
                  "AlltoAll algbw*(n-1)/n; train-*: of the job's collective, warm-up excluded)",
    **{f"fct_slowdown_{b}_{q}": f"{q} FCT slowdown of {b} transfers" for b in ("short", "medium", "long")
       for q in ("p50", "p99")},
    "fct_slowdown_mean": "mean FCT slowdown over every completed transfer (ConWeave's average)",
    "fct_slowdown_p99": "p99 FCT slowdown over every completed transfer",
    "short_fct_p99_us": "p99 FCT of short transfers", "short_fcts": "every short FCT (CDFs; not in the CSV)",
    "latency_p50_us": "median one-way latency of first transmissions", "latency_p99_us": "its p99",
    "throughput_cv": "std-dev / mean of per-transfer throughput among the bulk transfers (train-*: among "
                     "every message of the measured iterations)",
    "retransmits": "go-back-N retransmitted packets", "reorders": "first transmissions that arrived "
                   "behind a later PSN at the responder", "naks": "NAKs sent", "timeouts": "RTO expiries",
    "ce_marks": "CE-marked data packets received", "cnps": "CNPs sent",
    "link_packets": "frames sent per switch-to-switch port (sorted by switch, port; not in the CSV)",
    "link_util_max": "busiest switch-to-switch port: bytes serialised at its real rate within "
                     "[first start, last completion] / the window (<= 1)",
    "link_util_mean": "mean of the same over the switch-to-switch ports",
    "uplink_imbalance": "worst leaf's (max - min) / mean of its uplinks' utilisation",
    "failover_us": "failure to the last affected flow's recovery: the longest in-order delivery pause "
                   "of a transfer in flight at the failure or started after it (fail topology only)",
    "moves_gap": "path changes at a flowlet gap (Stellar, LetFlow, CONGA)",
    "moves_drain": "Stellar path changes at a drain point", "moves_failover": "Stellar path changes by failover",
    "moves_membership": "Stellar path changes because its path set's members changed",
    "moves_explore": "Stellar path changes by exploration (congestion signals on a locally best path)",
    "moves_suspect": "Stellar path changes off a silent path (its feedback stopped)",
    "moves_restart": "Stellar path changes at a go-back-N restart (a resent PSN; a lossy path's flows leave here)",
    "iter_us": "every measured iteration's time of a training job (not in the CSV)",
    "pause_us_total": "PFC pause time summed over switch ports and host NICs",
    "pause_us_max_port": "the most-paused port's pause time", "paused_ports": "ports paused at least once",
    "pause_us_by_port": "pause time per paused switch port (not in the CSV)",
    "xoff_sent": "PFC XOFF frames sent", "drops_buffer": "frames dropped for want of shared buffer (lossy)",
    "drops_headroom": "frames dropped beyond PFC headroom (lossless: must be 0)",
    "wall_s": "wall time of the run (s)", "traversals": "frames taken in by a switch",
    "drops_tail": "frames dropped at a full queue", "drops_gray": "frames dropped by a gray failure",
    "drops_wire": "frames sent on a dead port",
    "resends_to_dead": "resends other leaves sent toward the failed link after it could be suspect "
                       "(failure + suspect_silence_us; fail topology only)",
    "resends_to_dead_early": "the same, before that time",
}


def program(path: Path):
    """Compile once per process (sweep workers reuse it for every run)."""
    import p4sim

    key = str(path)
    if key not in _programs:
        _programs[key] = p4sim.compile(key, include_dirs=[str(ROOT / "p4src")])
    return _programs[key]


def base_fabric(name: str):
    """The fabric YAML ``FABRICS[name]``, parsed once per process and file version (a frozen
    model that runs derive from with ``replace``, never change): sweep workers spent a tenth of
    a short run re-reading it."""
    from control_plane.model import load_fabric

    path = FABRICS[name]
    key = (str(path), path.stat().st_mtime_ns)
    if key not in _fabrics:
        _fabrics[key] = load_fabric(path)
    return _fabrics[key]


_fabrics: dict[tuple[str, int], object] = {}


@dataclass(frozen=True)
class RunSpec:
    # a2a | a2a-jit | ring | perm | incast | websearch-L | datamining-L | alistorage-L | fbhdp-L | tenants
    # | train-{a2a,ring,tree,moe}
    workload: str
    topo: str  # sym | deg70 | deg40 | deg10 | fail | gray
    mode: str
    seed: int
    fabric: str = "lab"
    nbytes: int = 131072  # per QP for collectives (train-*: the collective's size per rank)
    duration_us: float = 300.0  # arrival window of Poisson workloads
    # Switch and transport model (fabric_sim.simfabric, p4sim.buffer, fabric_sim.rdma):
    buffer: str = "lossless"  # lossless (PFC, shared buffer) | lossy (shared buffer, drops) | static (per-queue 2 MB)
    byte_rate: bool = True  # queues served by bytes (False: BMv2's packet rate, one 4 KB slot per frame)
    timeout_exp: Optional[int] = None  # RTO = 4.096 us x 2^t (None: NicParams' default)
    # the NICs' congestion control: DCQCN nvidia (ConnectX defaults) | paper (SIGCOMM'15), swift (Swift,
    # SIGCOMM 2020, with htsim's constants) or off (PFC only)
    dcqcn: str = "nvidia"
    # train-* workloads (fabric_sim.workloads.training): NCCL-like iterations on persistent QPs
    channels: int = 2
    slice_bytes: int = 1 << 20
    iterations: int = 3  # measured, after the warm-up ones
    warmup: int = 1
    gap_us: float = 20.0  # compute between iterations
    skew_us: float = 5.0  # launch skew between ranks

    @property
    def scenario(self) -> str:
        return f"{self.workload}/{self.topo}"


def stellar_fabric(fabric, mode: str):
    """Stellar's data-plane parameters for a mode (the lab YAML's, with the elephant threshold
    the baselines use, so both classify the same flows)."""
    from fabric_sim.baselines import EM_IDLE_US, EM_THRESHOLD_BYTES

    dp = fabric.dataplane
    dp = replace(dp, path_mode="adaptive", reservations=False,
                 elephant=replace(dp.elephant, threshold_bytes=EM_THRESHOLD_BYTES, window_us=250,
                                  idle_timeout_us=EM_IDLE_US))
    if mode.startswith("stellar-nodrain"):
        timeout = int(mode.rsplit("-", 1)[1])
        dp = replace(dp, flowlet=replace(dp.flowlet, drain_detection=False, gap_moves=True, timeout_us=timeout))
    elif mode == STATIC_ECN:
        from fabric_sim.baselines import ECN_PMAX256
        from fabric_sim.rdma import NicParams, frame_bytes

        fastest = max(p.capacity_gbps for s in fabric.switches.values() for p in s.ports.values())
        kmin, kmax = static_ecn_us(fastest, frame_bytes(NicParams().payload))
        # Per-port values (degraded ports, slower ports) are written by static_ecn_document.
        dp = replace(dp, ecn=replace(dp.ecn, enabled=True, adaptive=False, kmin_us=kmin, kmax_us=kmax,
                                     k_init_us=kmin, pmax=ECN_PMAX256 / 256))
    elif mode == JOBS:
        dp = replace(dp, reservations=True)
    elif mode != "stellar":
        raise ValueError(f"unknown Stellar mode {mode}")
    return replace(fabric, dataplane=dp)


JOBS = "stellar-jobs"
# The controller's job model for the study's collectives (control_plane.demands): the workload
# token -> the collective its members run.
JOB_COLLECTIVES = {"a2a": "AlltoAll", "train-a2a": "AlltoAll", "ring": "AllReduce", "train-ring": "AllReduce"}


def job_fabric(fabric, spec: "RunSpec"):
    """The fabric with the run's collective declared as its one job (``stellar-jobs``): the
    controller reserves paths for exactly the traffic that runs (the YAML's own jobs are not
    running here), each member injecting at its NIC's rate.  Ring order and rank placement are
    the workload's (``workloads.place_ranks`` for train-*), so the reservation and the traffic
    agree on who sends to whom."""
    from control_plane.model import Job
    from fabric_sim import workloads as W

    collective = JOB_COLLECTIVES.get(spec.workload)
    if collective is None:
        raise ValueError(f"mode {JOBS}: the controller has no job model for workload {spec.workload} "
                         f"(one of {', '.join(sorted(JOB_COLLECTIVES))})")
    members = W.hosts_of(fabric)
    hosts = W.place_ranks(members, spec.seed) if spec.workload.startswith("train-") else list(members)
    rate = min(fabric.hosts[h].capacity_gbps for h in hosts)
    job = Job(name="study", collective=collective, hosts=tuple(hosts), bandwidth_gbps=rate, start_s=0.0,
              tenant=None, root=None)
    return replace(fabric, jobs={"study": job})


STATIC_ECN = "stellar-static-ecn"


def static_ecn_us(capacity_gbps: float, fb: int) -> tuple[int, int]:
    """The baselines' RED thresholds (packets) as queue delay at ``capacity_gbps``, whole µs
    (the ECN block's unit): a FIFO served at that rate holds K packets for K frame times."""
    from fabric_sim.baselines import ECN_KMAX_PACKETS, ECN_KMIN_PACKETS

    per_packet_us = _ser_us(fb, capacity_gbps)
    return (max(1, round(ECN_KMIN_PACKETS * per_packet_us)),
            max(2, round(ECN_KMAX_PACKETS * per_packet_us)))


def static_ecn_document(doc: dict, port_gbps: dict[int, float], fb: int) -> dict:
    """``doc`` (one switch's rendered entries) with each port's static ECN thresholds at that
    port's actual rate ``port_gbps[port]`` (a degraded link's queue drains slower, so the same
    packet count is a longer delay).  Touches nothing but the ECN config entries' K values."""
    entries = []
    for e in doc["entries"]:
        if e["table"] == "StellarEgress.ecn.config" and e["action"].endswith("set_ecn_params"):
            kmin, kmax = static_ecn_us(port_gbps[e["match"]["standard_metadata.egress_port"]], fb)
            e = dict(e, params=dict(e["params"], kmin_us=kmin, kmax_us=kmax, k_init_us=kmin, adapt=0))
        entries.append(e)
    return dict(doc, entries=entries)


def with_capacities(fabric, capacity: dict):
    """``fabric`` with the ports in ``capacity`` ((switch, port) -> Gb/s) at that rate.  A
    degraded link's real rate reaches every mode through the fabric model, as a port's reported
    speed would: Stellar's rendered port rates and the controller's path capacities, the
    baselines' WCMP weights and DRE scales all read it from there."""
    switches = dict(fabric.switches)
    for (name, number), gbps in capacity.items():
        s = switches[name]
        switches[name] = replace(s, ports={**s.ports, number: replace(s.ports[number], capacity_gbps=gbps)})
    return replace(fabric, switches=switches)


def _capacity_fraction(topo: str) -> Optional[float]:
    return {"deg70": 0.7, "deg40": 0.4, "deg10": 0.1}.get(topo)


def study_backend(backend: Optional[str] = None) -> str:
    """The p4sim backend of a run: ``backend``, else ``$P4SIM_BACKEND``, else ``STUDY_BACKEND``."""
    choice = backend or os.environ.get("P4SIM_BACKEND") or STUDY_BACKEND
    if choice not in ("python", "native"):
        raise ValueError(f"unknown p4sim backend {choice!r} (python | native)")
    return choice


def run(spec: RunSpec, keep: Optional[dict] = None, backend: Optional[str] = None) -> dict:
    """Run one spec; returns its metrics row (flat dict, CSV-ready).  ``keep``: a dict that gets
    the run's objects (sim, net, fabric) for callers that look deeper (the flow-model check).
    ``backend``: p4sim's backend for every switch (``study_backend``); the row is the same."""
    from fabric_sim import distributions as D
    from fabric_sim import workloads as W
    from fabric_sim.rdma import NicParams, RdmaNetwork, frame_bytes
    from fabric_sim.simfabric import SimFabric

    started = time.perf_counter()
    base = base_fabric(spec.fabric)
    base = replace(base, dataplane=replace(base.dataplane, reservations=False))
    params = nic_params(spec)
    fb = frame_bytes(params.payload)
    stellar = spec.mode.startswith("stellar")
    fabric = stellar_fabric(base, spec.mode) if stellar else base
    if spec.mode == JOBS:
        fabric = job_fabric(fabric, spec)
    sim = SimFabric(fabric, pps_per_gbps=1e9 / (8 * fb), queue_depth=_queue_depth(spec), seed=spec.seed,
                    byte_rate=spec.byte_rate, buffer=_buffer_spec(spec), backend=study_backend(backend))
    frac = _capacity_fraction(spec.topo)
    capacity = {}
    if frac is not None:
        for ref in sim.link_ports(*DEGRADED):
            cap = fabric.switches[ref.switch].ports[ref.port].capacity_gbps * frac
            capacity[(ref.switch, ref.port)] = cap
            sim.set_port_rate(ref.switch, ref.port, cap)
        fabric = with_capacities(fabric, capacity)  # every mode learns the real rate the same way
    if spec.topo == "gray":
        sim.gray_fail(*DEGRADED, 0.01)

    controller = bf = None
    if stellar:
        from control_plane.controller import Controller, InProcessOps
        from control_plane.inprocess import apply_document
        from control_plane.render import render_fabric

        sim.install_program(program(STELLAR_P4))
        rendered = render_fabric(fabric)
        for name, doc in rendered.documents.items():
            if spec.workload != "tenants":
                # Tenant policing only where isolation is the question: the lab YAML's meters
                # (PIR = 70% / 40% of a leaf's uplinks, applied to everything a tenant's hosts
                # send, intra-leaf included) drop an AlltoAll's own packets red otherwise, and
                # the baselines police nothing.
                doc = dict(doc, meters=[])
            if spec.mode == STATIC_ECN:
                doc = static_ecn_document(doc, {n: capacity.get((name, n), p.capacity_gbps)
                                                for n, p in fabric.switches[name].ports.items()}, fb)
            apply_document(sim.switch(name), doc)
        controller = Controller(fabric, {n: InProcessOps(sim.switch(n)) for n in sim.devices},
                                rendered.plans, rendered.documents)
    else:
        from fabric_sim.baselines import BaselineFabric, baseline, salt_for

        sim.install_program(program(LB_P4))
        bf = BaselineFabric(sim, fabric, baseline(spec.mode), salt_for(spec.seed), capacity)
        bf.install()

    from fabric_sim.baselines import MODE_CONGA, MODE_FLOWLET
    from fabric_sim.metrics import LinkMeter

    meter = LinkMeter(sim)
    dead = None
    if spec.topo == "fail":
        from control_plane.params import param
        from fabric_sim.metrics import DeadPathResends

        leaf, spine = FAILED if fabric.switches[FAILED[0]].role == "leaf" else FAILED[::-1]
        dead = DeadPathResends(sim, fabric, leaf, spine, FAIL_AT_US + param("suspect_silence_us").default)
    net = RdmaNetwork(sim, fabric, params, seed=spec.seed)
    members = W.hosts_of(fabric)
    kind, _, arg = spec.workload.partition("-")
    job = None
    if kind == "train":
        job = W.training(net, W.place_ranks(members, spec.seed), W.Collective(arg, spec.nbytes, spec.channels,
                         spec.slice_bytes), spec.iterations, spec.warmup, spec.gap_us, spec.skew_us, spec.seed)
    elif spec.workload == "a2a":
        W.alltoall(net, members, spec.nbytes)
    elif spec.workload == "a2a-jit":
        W.alltoall(net, members, spec.nbytes, jitter_us=20.0, seed=spec.seed)
    elif spec.workload == "ring":
        W.ring_allreduce(net, members, spec.nbytes * len(members))
    elif spec.workload == "perm":
        W.permutation(net, members, spec.nbytes * 8, spec.seed)
    elif spec.workload == "incast":
        W.incast(net, members, spec.nbytes, spec.seed)
    elif kind in D.CDFS:  # published distributions at real sizes (the ConWeave reference setup)
        D.poisson(net, members, kind, int(arg) / 100, spec.duration_us, spec.seed)
    elif kind in W.CDFS:
        W.poisson(net, members, kind, int(arg) / 100, spec.duration_us, spec.seed)
    elif spec.workload == "tenants":
        W.tenants(net, fabric, spec.nbytes, spec.seed)
    else:
        raise ValueError(f"unknown workload {spec.workload}")
    net.start()

    fail_info: dict = {}
    if spec.topo == "fail":
        a, b = FAILED

        def fail() -> None:
            ports = sim.fail_link(a, b)
            down = [(r.switch, r.port) for r in ports]
            fail_info["ports"] = down
            if controller is not None:
                controller.mark_ports_down(down)  # the switches' own port-status handling
                sim.at(sim.now_us + REACTION_US,
                       lambda: controller.handle_link_failure(a, b, down, mark_down=True))
            else:
                bf.local_link_down(ports)
                spine = a if fabric.switches[a].role == "spine" else b
                leaf = b if spine == a else a
                sim.at(sim.now_us + REACTION_US, lambda: bf.routing_converged(spine, leaf))

        sim.at(FAIL_AT_US, fail)
    if controller is not None:
        def poll() -> None:
            controller.step(sim.now_us)
            if any(t.done_us is None for t in net.transfers):
                sim.at(sim.now_us + POLL_US, poll)

        sim.at(POLL_US, poll)
    sim.run(until_us=HORIZON_US)
    if keep is not None:
        keep.update(sim=sim, net=net, fabric=fabric, salt=bf.salt if bf is not None else None, frame_bytes=fb)
    row = metrics(spec, net, sim, fabric, base, capacity, fb, meter)
    row.update(transport_metrics(sim, net, job))
    if job is not None:
        row.update(training_metrics(spec, job, net, fabric, fb, capacity, sim.now_us))
    if stellar:
        # flowlet.path_changes is indexed by define.p4's CHANGE_* reason (0 = a new flow's placement)
        for index, key in enumerate(STELLAR_MOVE_KEYS, start=1):
            row[key] = sum(sim.switch(n).counter_read("StellarIngress.flowlet.path_changes", index)[0]
                           for n in sim.devices)
    elif bf is not None and bf.spec.mode in (MODE_FLOWLET, MODE_CONGA):
        row["moves_gap"] = bf.counter("LbIngress.flowlet_moves")
    row["wall_s"] = round(time.perf_counter() - started, 2)
    row["traversals"] = sim.traversals
    row["drops_tail"] = _tail_drops(sim)
    row["drops_gray"] = sim.dropped_gray
    row["drops_wire"] = sim.dropped_on_wire
    row["resends_to_dead"] = dead.late if dead is not None else None
    row["resends_to_dead_early"] = dead.early if dead is not None else None
    return row


def nic_params(spec: RunSpec):
    """The NICs of a run: NicParams' defaults with the spec's timeout and congestion control
    (a DCQCN flavour, Swift, or none)."""
    from fabric_sim.rdma import DcqcnParams, NicParams
    from fabric_sim.swift import SwiftParams

    off = DcqcnParams(enabled=False)
    p = {"nvidia": NicParams(dcqcn=DcqcnParams()), "paper": NicParams(dcqcn=DcqcnParams.paper()),
         "swift": NicParams(dcqcn=off, swift=SwiftParams()), "off": NicParams(dcqcn=off)}.get(spec.dcqcn)
    if p is None:
        raise ValueError(f"unknown congestion control {spec.dcqcn!r} (nvidia | paper | swift | off)")
    return p if spec.timeout_exp is None else replace(p, timeout_exp=spec.timeout_exp)


def _buffer_spec(spec: RunSpec):
    from fabric_sim.simfabric import BufferSpec

    if spec.buffer not in ("lossless", "lossy", "static"):
        raise ValueError(f"unknown buffer mode {spec.buffer!r} (lossless | lossy | static)")
    return None if spec.buffer == "static" else BufferSpec(lossless=spec.buffer == "lossless")


def _queue_depth(spec: RunSpec) -> int:
    # with a shared buffer the buffer decides; the per-queue packet depth only must not bind
    return QUEUE_DEPTH if spec.buffer == "static" else 1 << 20


def transport_metrics(sim, net, job) -> dict:
    """PFC pause time (switch ports and host NICs) and buffer drops."""
    ports = sim.pause_us()
    hosts = net.pause_us(sim.now_us)
    bufs = [dev.switch.tm.buffer for dev in sim.devices.values() if dev.switch.tm.buffer is not None]
    row = {
        "pause_us_total": round(sum(ports.values()) + sum(hosts.values()), 3),
        "pause_us_max_port": round(max(list(ports.values()) + list(hosts.values()), default=0.0), 3),
        "paused_ports": sum(1 for v in list(ports.values()) + list(hosts.values()) if v > 0),
        "pause_us_by_port": {f"{s}:{p}": round(v, 3) for (s, p), v in sorted(ports.items()) if v > 0},
        "xoff_sent": sum(b.xoff_sent for b in bufs),
        "drops_buffer": sum(b.drops for b in bufs),
        "drops_headroom": sum(b.headroom_drops for b in bufs),
    }
    return row


# a training collective's NCCL name (fabric_sim.metrics.BUSBW_FACTOR)
_TRAIN_COLLECTIVE = {"a2a": "alltoall", "moe": "alltoall", "ring": "allreduce", "tree": "allreduce",
                     "perm": "sendrecv"}


def training_metrics(spec: RunSpec, job, net, fabric, fb: int, capacity: dict, now_us: float) -> dict:
    """A training job's keys from its own iteration records (it starts each iteration after
    the last one's end plus the compute gap): per-iteration times, the fluid optimum of one
    iteration, and NCCL's bus bandwidth.  They replace ``metrics()``' whole-run reading, whose
    completion spans warm-up and compute gaps.  A measured iteration still running at the
    horizon counts as lasting until ``now_us`` (a lower bound: a mode whose job stalls is not
    judged on its finished iterations alone)."""
    from fabric_sim.metrics import busbw_gbps

    its = job.measured()
    kind = job.collective.kind
    done = len(its)
    running = [t for t in net.transfers if t.tag == f"{kind}{job.warmup + done}" and t.started_us is not None]
    if done < spec.iterations and len(job.records) >= job.warmup and running:
        its = its + [now_us - min(t.started_us for t in running)]
    ratios, ideals, tput = [], [], []
    for i, took in enumerate(its, start=job.warmup):
        ts = [t for t in net.transfers if t.tag == f"{kind}{i}"]
        if ts:
            ideal = fluid_bound(fabric, ts, fb, capacity)
            ideals.append(ideal)
            ratios.append(took / ideal)
        tput += [t.packets / (t.done_us - t.started_us) for t in ts
                 if t.done_us is not None and t.started_us is not None and t.done_us > t.started_us]
    ranks = len(job.ranks)
    # nccl-tests' size: the AllReduce buffer, or every peer's slice of an AlltoAll (own included)
    size = spec.nbytes * ranks / (ranks - 1) if _TRAIN_COLLECTIVE[kind] == "alltoall" else spec.nbytes
    p50 = statistics.median(its) if its else None
    return {"iter_us": [round(x, 3) for x in its], "iterations": done, "iteration_us_p50": p50,
            "iteration_us_max": max(its) if its else None,
            "ideal_us": statistics.median(ideals) if ideals else None,
            "completion_over_ideal": statistics.median(ratios) if ratios else None,
            "busbw_gbps": busbw_gbps(_TRAIN_COLLECTIVE[kind], ranks, size, p50 / 1e6) if p50 else None,
            # every message of the measured iterations, whatever its size: a training job's
            # messages are its QPs' per-iteration shares, short or not
            "throughput_cv": statistics.pstdev(tput) / statistics.fmean(tput) if len(tput) > 1 else None}


def _tail_drops(sim) -> int:
    return sum(dev.switch.stats.get("queue_full", 0) for dev in sim.devices.values())


def _ser_us(fb: int, gbps: float) -> float:
    return fb * 8 / (gbps * 1e3)


def _ideal_fct(fabric, t, fb: int) -> float:
    """Unloaded FCT: serialise every packet at the NIC, plus propagation and one store-and-
    forward serialisation per switch on the path."""
    src, dst = fabric.hosts[t.src], fabric.hosts[t.dst]
    ser = _ser_us(fb, src.capacity_gbps)
    if src.leaf == dst.leaf:
        prop, hops = src.delay_us + dst.delay_us, 1
    else:
        link = next(p for p in fabric.switches[src.leaf].ports.values() if p.peer_switch is not None)
        prop, hops = src.delay_us + 2 * link.delay_us + dst.delay_us, 3
    return t.packets * ser + prop + hops * ser


def fluid_bound(fabric, transfers, fb: int, capacity: dict) -> float:
    """Lower bound on the time to move ``transfers`` (started together) with perfect load
    balancing: the busiest resource (a NIC's send or receive side, a leaf's uplinks or downlinks
    taken together) divided by its capacity, plus one unloaded packet's path."""
    load: dict[tuple, float] = {}
    cap: dict[tuple, float] = {}
    for t in transfers:
        bits = t.packets * fb * 8
        s, d = fabric.hosts[t.src], fabric.hosts[t.dst]
        for key, c in ((("tx", t.src), s.capacity_gbps), (("rx", t.dst), d.capacity_gbps)):
            load[key] = load.get(key, 0) + bits
            cap[key] = c
        if s.leaf != d.leaf:
            for key, leaf in ((("up", s.leaf), s.leaf), (("down", d.leaf), d.leaf)):
                load[key] = load.get(key, 0) + bits
                if key not in cap:
                    total = 0.0
                    for number, p in fabric.switches[leaf].ports.items():
                        if p.peer_switch is None:
                            continue
                        if key[0] == "up":
                            total += capacity.get((leaf, number), p.capacity_gbps)
                        else:
                            total += capacity.get((p.peer_switch, p.peer_port), p.capacity_gbps)
                    cap[key] = total
    worst = max(load[k] / (cap[k] * 1e3) for k in load)
    first = min(transfers, key=lambda t: _ideal_fct(fabric, t, fb) / t.packets)
    return worst + _ideal_fct(fabric, first, fb) - first.packets * _ser_us(fb, 100.0)


def _ideal_collective(spec: RunSpec, fabric, transfers, fb: int, capacity: dict) -> Optional[float]:
    jobs = [t for t in transfers if t.kind == "job"]
    if not jobs:
        return None
    if spec.workload == "ring":
        n = len({t.src for t in jobs})
        steps = [jobs[i:i + n] for i in range(0, len(jobs), n)]
        return sum(fluid_bound(fabric, s, fb, capacity) for s in steps)
    if spec.workload == "a2a-jit":
        return fluid_bound(fabric, jobs, fb, capacity)  # jitter only delays some starts
    return fluid_bound(fabric, jobs, fb, capacity)


def metrics(spec: RunSpec, net, sim, fabric, base, capacity: dict, fb: int, meter=None) -> dict:
    """The row of one run; every key is listed in ``ROW_KEYS`` (with its meaning)."""
    import numpy as np

    ts = net.transfers
    row: dict = asdict(spec)
    row["scenario"] = spec.scenario
    jobs = [t for t in ts if t.kind == "job"]
    done = [t for t in ts if t.done_us is not None]
    row["transfers"] = len(ts)
    row["incomplete"] = len(ts) - len(done)
    if jobs and all(t.done_us is not None for t in jobs):
        start = min(t.started_us for t in jobs)
        row["completion_us"] = max(t.done_us for t in jobs) - start
        ideal = _ideal_collective(spec, fabric, ts, fb, capacity)
        row["ideal_us"] = ideal
        row["completion_over_ideal"] = row["completion_us"] / ideal if ideal else None
    else:
        row["completion_us"] = row["ideal_us"] = row["completion_over_ideal"] = None
    # FCT slowdowns per size bucket
    slow = {"short": [], "medium": [], "long": []}
    for t in done:
        s = (t.done_us - t.started_us) / _ideal_fct(fabric, t, fb)
        bucket = "short" if t.packets <= SHORT_PACKETS else "medium" if t.packets <= 64 else "long"
        slow[bucket].append(s)
    every = [s for xs in slow.values() for s in xs]
    row["fct_slowdown_mean"] = float(np.mean(every)) if every else None
    row["fct_slowdown_p99"] = float(np.percentile(every, 99)) if every else None
    for b, xs in slow.items():
        row[f"fct_slowdown_{b}_p50"] = float(np.percentile(xs, 50)) if xs else None
        row[f"fct_slowdown_{b}_p99"] = float(np.percentile(xs, 99)) if xs else None
    short_fct = [t.done_us - t.started_us for t in done if t.packets <= SHORT_PACKETS]
    row["short_fct_p99_us"] = float(np.percentile(short_fct, 99)) if short_fct else None
    row["short_fcts"] = [round(x, 2) for x in short_fct]  # for CDF plots (kept out of the CSV)
    lat = [x for t in ts for x in t.latencies]
    row["latency_p50_us"] = float(np.percentile(lat, 50)) if lat else None
    row["latency_p99_us"] = float(np.percentile(lat, 99)) if lat else None
    # per-flow throughput variation among the collective's (or the bulk) transfers
    bulk = [t for t in (jobs or done) if t.done_us is not None and t.packets > SHORT_PACKETS]
    tput = np.array([t.packets / (t.done_us - t.started_us) for t in bulk]) if bulk else np.array([])
    row["throughput_cv"] = float(tput.std() / tput.mean()) if len(tput) > 1 else None
    row["retransmits"] = sum(t.retransmits for t in ts)
    row["reorders"] = sum(t.reorders for t in ts)
    row["naks"] = sum(t.naks for t in ts)
    row["timeouts"] = sum(t.timeouts for t in ts)
    row["ce_marks"] = sum(t.ce for t in ts)
    row["cnps"] = sum(t.cnps for t in ts)
    # link utilisation over the measured window: the first start to the last completion
    from fabric_sim.metrics import iteration_times, link_utils, uplink_imbalance

    first = min((t.started_us for t in ts if t.started_us is not None), default=0.0)
    end = max((t.done_us for t in done), default=0.0)
    row["link_packets"] = [sim.tx_packets.get(ref, 0) for ref in sorted(sim.peer, key=lambda r: (r.switch, r.port))]
    utils = link_utils(meter, fabric, capacity, first, end) if meter is not None and end > first else {}
    row["link_util_max"] = max(utils.values()) if utils else None
    row["link_util_mean"] = statistics.fmean(utils.values()) if utils else None
    row["uplink_imbalance"] = uplink_imbalance(utils, fabric) if utils else None
    iters = iteration_times(ts)
    row["iterations"] = len(iters)
    row["iteration_us_p50"] = float(np.percentile(iters, 50)) if iters else None
    row["iteration_us_max"] = max(iters) if iters else None
    row["busbw_gbps"] = _busbw(spec, jobs, iters)
    row["failover_us"] = _failover_us(ts) if spec.topo == "fail" else None
    return row


_COLLECTIVE = {"a2a": "alltoall", "a2a-jit": "alltoall", "ring": "allreduce"}


def _busbw(spec: RunSpec, jobs, iters: list[float]) -> Optional[float]:
    """NCCL bus bandwidth (Gb/s) of the run's collective at its median iteration time.  The
    per-rank buffer (nccl-tests' "size") is ``nbytes`` x ranks for both: an AlltoAll sends
    ``nbytes`` to each peer (own slice included in the size), the ring AllReduce reduces a
    buffer of ``nbytes`` x ranks."""
    from fabric_sim.metrics import busbw_gbps

    coll = _COLLECTIVE.get(spec.workload)
    if coll is None or not iters or not jobs:
        return None
    ranks = len({t.src for t in jobs})
    return busbw_gbps(coll, ranks, spec.nbytes * ranks, statistics.median(iters) / 1e6)


def _failover_us(ts) -> Optional[float]:
    """From the failure to the last affected flow's recovery: for every transfer in flight at
    the failure or started after it (a training job's next messages meet the stale routes too),
    the longest pause in its in-order delivery after the failure or its start; the maximum over
    transfers (None if one never completed)."""
    worst = 0.0
    for t in ts:
        if t.started_us is None or (t.done_us is not None and t.done_us < FAIL_AT_US):
            continue
        if t.done_us is None:
            return None
        t0 = max(FAIL_AT_US, t.started_us)
        times = [t0] + [x for x in t.delivery_times if x > t0]
        gap = max((b - a for a, b in zip(times, times[1:])), default=0.0)
        worst = max(worst, gap)
    return worst
