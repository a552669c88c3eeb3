"""Class weights: the design's formula, the usage history it divides by, and how weights reach a switch.

The design gives each weighted class i (critical, elastic, background; control is strict) a weight

    weight_i = (base_priority_i + alpha * deadline_urgency_i) / (1 + beta * historical_usage_i)

* ``base_priority_i``: the class's, from the fabric YAML (defaults critical 4, elastic 2, background 1);
* ``deadline_urgency``: of a job of that class, from its ``remaining_s`` (time left to its deadline):
  ``1 - remaining_s / urgency_horizon_s`` clamped to [0, 1] - 0 for a deadline a horizon or more
  away (or none), 1 when it is due now.  Linear, so an operator can do it in their head;
* ``alpha``, ``beta``: the job's tenant's (``tenants[].alpha/beta``), else the fabric's
  ``dataplane.scheduler`` defaults;
* ``historical_usage_i``: the class's share of the bytes the fabric's ports sent, smoothed per
  controller interval as ``usage <- d * usage + (1 - d) * sample`` with d = ``priority_decay_factor``
  (0.95): a class that took most of the link lately is divided down, and forgiven geometrically.

A queue has one weight, so a class takes the largest weight any of its jobs earns (taking the sum
would reward splitting one job into many); a class without a job has its base priority over the
usage term.  The share of class i is its weight over the sum of the weighted classes' weights.

On a switch the shares become:

* p4sim: DWRR weights (``p4sim.tm``), quantum = share x ``quantum_bytes`` per round, a class's
  mouse and elephant queues in one DWRR group (strict priority inside it), via target control
  ``set_queue_weight``; control and unused queues stay strict.  Weights off = every queue weight 0
  = strict priority, exactly BMv2's default behaviour;
* BMv2: per-queue rates (``simple_switch_CLI set_queue_rate``), share x the port's packet rate, see
  ``bmv2_env.target.Bmv2Target.set_queue_weights`` for what that can and cannot do.

`ClassScheduler` is what the controller loop calls each interval: feed it the per-queue byte
counters, and it updates the usage history, recomputes the weights and applies them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping, Optional, Protocol

from .model import WEIGHTED_CLASSES, Fabric, Job, TrafficClass


@dataclass(frozen=True)
class WeightTerms:
    """One candidate weight of a class and every term that produced it."""

    traffic_class: str
    base_priority: float
    alpha: float
    urgency: float
    beta: float
    usage: float
    job: Optional[str] = None  # the job whose deadline gave the urgency (None: the class default)
    tenant: Optional[str] = None
    remaining_s: Optional[float] = None

    @property
    def weight(self) -> float:
        return class_weight(self.base_priority, self.alpha, self.urgency, self.beta, self.usage)

    def formula(self) -> str:
        return (f"({self.base_priority:g} + {self.alpha:g}*{self.urgency:.3f}) / "
                f"(1 + {self.beta:g}*{self.usage:.3f}) = {self.weight:.3f}")


@dataclass(frozen=True)
class ClassWeight:
    """A weighted class's weight (the largest candidate's) and its share of a port."""

    name: str
    terms: WeightTerms
    candidates: tuple[WeightTerms, ...]
    share: float

    @property
    def weight(self) -> float:
        return self.terms.weight


def deadline_urgency(remaining_s: Optional[float], horizon_s: float) -> float:
    """0 with no deadline or one at least a horizon away, rising linearly to 1 when due now."""
    if remaining_s is None:
        return 0.0
    return min(1.0, max(0.0, 1.0 - remaining_s / horizon_s))


def class_weight(base_priority: float, alpha: float, urgency: float, beta: float, usage: float) -> float:
    """The design's formula, term for term."""
    return (base_priority + alpha * urgency) / (1.0 + beta * usage)


def job_terms(fabric: Fabric, job: Job, usage: Mapping[str, float]) -> WeightTerms:
    sched = fabric.dataplane.scheduler
    cls = fabric.dataplane.traffic_class(job.traffic_class)
    tenant = fabric.tenants.get(job.tenant) if job.tenant else None
    return WeightTerms(cls.name, cls.base_priority, tenant.alpha if tenant else sched.alpha,
                       deadline_urgency(job.remaining_s, sched.urgency_horizon_s),
                       tenant.beta if tenant else sched.beta, usage.get(cls.name, 0.0),
                       job=job.name, tenant=job.tenant, remaining_s=job.remaining_s)


def compute_weights(fabric: Fabric, usage: Optional[Mapping[str, float]] = None,
                    jobs: Optional[Iterable[str]] = None) -> dict[str, ClassWeight]:
    """Weight and share of every weighted class, given each class's usage history.

    ``jobs``: the jobs that are running (default: every job in the fabric)."""
    usage = usage or {}
    sched = fabric.dataplane.scheduler
    names = list(jobs if jobs is not None else fabric.jobs)
    unknown = [j for j in names if j not in fabric.jobs]
    if unknown:
        raise ValueError(f"{fabric.source}: no job {', '.join(map(repr, unknown))} (jobs: {', '.join(fabric.jobs)})")
    running = [fabric.jobs[j] for j in names]
    picked: dict[str, tuple[WeightTerms, tuple[WeightTerms, ...]]] = {}
    for cls in _weighted(fabric):
        default = WeightTerms(cls.name, cls.base_priority, sched.alpha, 0.0, sched.beta, usage.get(cls.name, 0.0))
        candidates = tuple(job_terms(fabric, j, usage) for j in running if j.traffic_class == cls.name) or (default,)
        best = max(candidates, key=lambda t: t.weight)  # first of equals: the fabric's job order
        picked[cls.name] = (best, candidates)
    total = sum(t.weight for t, _ in picked.values())
    return {name: ClassWeight(name, t, cands, t.weight / total if total else 0.0)
            for name, (t, cands) in picked.items()}


def _weighted(fabric: Fabric) -> list[TrafficClass]:
    return [c for c in fabric.dataplane.classes if c.name in WEIGHTED_CLASSES]


# ---------------------------------------------------------------------------------------------
# usage history
# ---------------------------------------------------------------------------------------------
@dataclass
class UsageTracker:
    """Each weighted class's historical usage: an exponentially decaying share of bytes sent."""

    decay: float = 0.95
    usage: dict[str, float] = field(default_factory=lambda: {c: 0.0 for c in WEIGHTED_CLASSES})

    def observe(self, sample: Mapping[str, float]) -> dict[str, float]:
        """One interval's usage (fraction 0..1 per class; missing = 0): blend it in, return the history."""
        for name in self.usage:
            value = sample.get(name, 0.0)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"usage sample of {name} must be a fraction 0..1, got {value!r}")
            self.usage[name] = self.decay * self.usage[name] + (1.0 - self.decay) * value
        return dict(self.usage)

    def observe_bytes(self, sent: Mapping[str, int]) -> dict[str, float]:
        """Bytes each class sent in the interval -> its share of all of them (control's bytes
        count in the total: time on the wire the weighted classes did not get)."""
        total = sum(sent.values())
        return self.observe({c: (sent.get(c, 0) / total if total else 0.0) for c in self.usage})


def bytes_by_class(fabric: Fabric, tx_queue: Mapping[tuple[int, int], tuple[int, int]]) -> dict[str, int]:
    """Per (port, queue) (packets, bytes) counters -> bytes per class (queues not a class's: ignored).

    ``tx_queue`` is what ``control_plane.ops.read_switch_stats`` reads (``SwitchStats.tx_queue``)
    from ``StellarEgress.telemetry.tx_queue``; sum it over switches, or pass one switch."""
    owner = {q: c.name for c in fabric.dataplane.classes for q in c.queues}
    sent: dict[str, int] = {}
    for (_, queue), (_, nbytes) in tx_queue.items():
        name = owner.get(queue)
        if name is not None:
            sent[name] = sent.get(name, 0) + nbytes
    return sent


# ---------------------------------------------------------------------------------------------
# weights -> queues -> switches
# ---------------------------------------------------------------------------------------------
def queue_weights(fabric: Fabric, weights: Optional[Mapping[str, ClassWeight]]) -> dict[int, tuple[int, int]]:
    """queue -> (DWRR weight in bytes per round, group) for every queue of a port.

    A weighted class's queues form one group (its highest queue's number) with weight
    share x ``quantum_bytes`` (at least 1).  Control, unused queues, and every queue when
    ``weights`` is None or the fabric turns weights off: (0, queue) = strict priority."""
    dp = fabric.dataplane
    result = {q: (0, q) for q in range(dp.priority_queues)}
    if weights is None or not dp.scheduler.weights or dp.priority_queues == 1:
        return result
    for cls in _weighted(fabric):
        w = max(1, round(weights[cls.name].share * dp.scheduler.quantum_bytes))
        for q in cls.queues:
            result[q] = (w, cls.queues[0])
    return result


def port_packet_rate(fabric: Fabric, capacity_gbps: float) -> int:
    """A port's line rate in packets/s at ``rate_packet_bytes`` (what BMv2's queue rates count)."""
    return max(1, round(capacity_gbps * 1e9 / 8 / fabric.dataplane.scheduler.rate_packet_bytes))


class QueueWeightTarget(Protocol):
    """What applying weights needs from a switch (``bmv2_env.target.TargetControl`` has it)."""

    def set_queue_weights(self, port: int, weights: Mapping[int, tuple[int, int]], port_pps: int) -> None: ...


class InProcessQueues:
    """QueueWeightTarget on an in-process ``p4sim.Switch`` (tests, the in-process fabric)."""

    def __init__(self, switch) -> None:
        self.switch = switch

    def set_queue_weights(self, port: int, weights: Mapping[int, tuple[int, int]], port_pps: int) -> None:
        for queue, (weight, group) in sorted(weights.items()):
            self.switch.set_queue_weight(weight, port, queue, group)


def apply_weights(fabric: Fabric, targets: Mapping[str, QueueWeightTarget],
                  weights: Optional[Mapping[str, ClassWeight]],
                  port_pps: Optional[Mapping[tuple[str, int], int]] = None) -> int:
    """Set every port of every switch in ``targets`` to the weights; returns ports configured.

    ``port_pps`` overrides a port's packet rate (default: its capacity at ``rate_packet_bytes``),
    for a test bed whose ports are limited below line rate."""
    per_queue = queue_weights(fabric, weights)
    done = 0
    for name, target in targets.items():
        for number, port in sorted(fabric.switches[name].ports.items()):
            pps = (port_pps or {}).get((name, number)) or port_packet_rate(fabric, port.capacity_gbps)
            target.set_queue_weights(number, per_queue, pps)
            done += 1
    return done


@dataclass
class ClassScheduler:
    """The controller's class-weight loop: usage in, weights out, applied to the switches.

    ``step`` is meant to be called once per controller interval; it is independent of the
    congestion-map loop (``control_plane.controller``) so either runs without the other."""

    fabric: Fabric
    targets: Mapping[str, QueueWeightTarget]
    port_pps: Optional[Mapping[tuple[str, int], int]] = None
    jobs: Optional[list[str]] = None
    tracker: UsageTracker = field(init=False)
    weights: dict[str, ClassWeight] = field(init=False, default_factory=dict)
    pushed: bool = field(init=False, default=False)  # weights were applied at least once
    _last: dict[tuple[str, int, int], int] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self.tracker = UsageTracker(self.fabric.dataplane.scheduler.priority_decay_factor)

    def step(self, sent_bytes: Optional[Mapping[str, int]] = None) -> dict[str, ClassWeight]:
        """Blend in the bytes each class sent since the last step (None: no sample, e.g. the
        first call), recompute the weights and push them.

        With ``scheduler.weights: false`` nothing is pushed, so the switches keep their own
        (strict-priority) scheduling exactly; only if weights were pushed earlier are the
        queues set back to strict."""
        if sent_bytes is not None:
            self.tracker.observe_bytes(sent_bytes)
        self.weights = compute_weights(self.fabric, self.tracker.usage, self.jobs)
        if self.fabric.dataplane.scheduler.weights:
            apply_weights(self.fabric, self.targets, self.weights, self.port_pps)
            self.pushed = True
        elif self.pushed:
            apply_weights(self.fabric, self.targets, None, self.port_pps)
            self.pushed = False
        return self.weights

    def step_counters(self, tx_queue: Mapping[str, Mapping[tuple[int, int], tuple[int, int]]]) -> dict[str, ClassWeight]:
        """``step`` from cumulative per-(port, queue) (packets, bytes) counters of each switch
        (``SwitchStats.tx_queue``, as ``control_plane.ops.collect_stats`` reads them): the bytes
        since the previous call are the sample; the first call only records the baseline."""
        first = not self._last
        delta: dict[tuple[int, int], tuple[int, int]] = {}
        for switch, cells in tx_queue.items():
            for (port, queue), (_, nbytes) in cells.items():
                before = self._last.get((switch, port, queue), nbytes)
                self._last[(switch, port, queue)] = nbytes
                cell = (port, queue)
                delta[cell] = (0, delta.get(cell, (0, 0))[1] + max(0, nbytes - before))  # a reset counter: 0
        return self.step(None if first else bytes_by_class(self.fabric, delta))


def format_weights(fabric: Fabric, weights: Mapping[str, ClassWeight], job: Optional[str] = None) -> str:
    """Each class's weight and why (the formula's terms), as ``stellarctl analyze-scheduler`` prints it."""
    dp = fabric.dataplane
    sched = dp.scheduler
    lines = [f"class weights: weight = (base_priority + alpha*urgency) / (1 + beta*usage); urgency = 1 - "
             f"remaining_s/{sched.urgency_horizon_s:g} s (clamped 0..1); usage decays by "
             f"{sched.priority_decay_factor:g} per interval"
             + ("" if sched.weights else "  [scheduler.weights: false - NOT applied, every queue strict]")]
    lines.append("  (share: of a port whose weighted classes are all backlogged; an idle class's share goes to "
                 "the others)")
    per_queue = queue_weights(fabric, weights)
    for cls in sorted(dp.classes, key=lambda c: -max(c.queues)):
        dscp = ",".join(map(str, cls.dscp)) or "-"
        if not cls.weighted:
            lines.append(f"  {cls.name:<10} DSCP {dscp:<7} queues {'/'.join(map(str, cls.queues)):<5} strict priority "
                         "(above every weighted class)")
            continue
        cw = weights[cls.name]
        t = cw.terms
        who = (f"job {t.job}" + (f" (tenant {t.tenant})" if t.tenant else "") if t.job
               else "no job in this class: base priority")
        quantum = per_queue[cls.queues[0]][0]
        lines.append(f"  {cls.name:<10} DSCP {dscp:<7} queues {'/'.join(map(str, cls.queues)):<5} weight {cw.weight:6.3f}"
                     f"  share {cw.share:6.1%}" + (f"  DWRR {quantum} B/round" if quantum else ""))
        lines.append(f"             = {t.formula()}  <- {who}")
        deadline = ("no deadline" if t.remaining_s is None else f"deadline in {t.remaining_s:g} s")
        lines.append(f"             base {t.base_priority:g} (class), alpha {t.alpha:g} and beta {t.beta:g} "
                     f"({'tenant ' + t.tenant if t.tenant else 'fabric default'}), urgency {t.urgency:.3f} "
                     f"({deadline}), usage {t.usage:.3f}")
        others = [c for c in cw.candidates if c is not t]
        for c in others:
            lines.append(f"             (job {c.job}: {c.weight:.3f}, lower)")
    if job is not None:
        j = fabric.jobs[job]
        cls = dp.traffic_class(j.traffic_class)
        if cls.weighted:
            mine = job_terms(fabric, j, {c: weights[c].terms.usage for c in weights})
            lines.append(f"  job {job} sends {cls.name} (DSCP {','.join(map(str, cls.dscp)) or '-'}): its own weight "
                         f"{mine.weight:.3f}" + (" sets the class weight" if weights[cls.name].terms.job == job
                                                 else f"; the class has {weights[cls.name].weight:.3f} from "
                                                      f"{weights[cls.name].terms.job or 'its base priority'}"))
        else:
            lines.append(f"  job {job} sends {cls.name}: strict priority, no weight")
    return "\n".join(lines) + "\n"
