"""Traffic classes and scheduler weights in the control plane: one test per class rule.

DSCP defaults, YAML overrides and their errors (file:line: key: reason), the weight formula term
by term (urgency, usage decay, tenant alpha/beta, a class's jobs), the queue weights pushed to
p4sim, their BMv2 translation to per-queue rates, and `stellarctl analyze-scheduler`.
"""
from __future__ import annotations

import io
from pathlib import Path

import pytest

from bmv2_env.target import Bmv2Target, NotSupportedByTarget, TargetControl
from control_plane.cli import main
from control_plane.errors import FabricError
from control_plane.model import Fabric, load_fabric, load_fabric_text
from control_plane.scheduler import (ClassScheduler, UsageTracker, apply_weights, bytes_by_class, class_weight,
                                     compute_weights, deadline_urgency, port_packet_rate, queue_weights)

from test_cp_validation import MINI, line_of

ROOT = Path(__file__).resolve().parents[2]
LAB = str(ROOT / "fabrics" / "lab.yaml")


def mini(extra_dataplane: str = "", job_extra: str = "", tenant_extra: str = "") -> str:
    text = MINI.replace("  ecn: {kmin_us: 4, kmax_us: 32, pmax: 0.2}\n",
                        "  ecn: {kmin_us: 4, kmax_us: 32, pmax: 0.2}\n" + extra_dataplane)
    text = text.replace("    subnets: [10.0.1.0/24, 10.0.2.0/24]\n", "    subnets: [10.0.1.0/24, 10.0.2.0/24]\n" + tenant_extra)
    return text.replace("    hosts: [h1, h2]\n", "    hosts: [h1, h2]\n" + job_extra)


def load(text: str) -> Fabric:
    return load_fabric_text(text, "f.yaml")


def problems(text: str) -> list[str]:
    with pytest.raises(FabricError) as caught:
        load(text)
    return [str(p) for p in caught.value.problems]


# ------------------------------------------------------------------------------ classes (DSCP)
def test_design_classes_are_the_defaults() -> None:
    classes = {c.name: c for c in load(MINI).dataplane.classes}
    assert {n: c.dscp for n, c in classes.items()} == {"critical": (63,), "elastic": (32,), "background": (0,),
                                                      "control": (48,)}
    assert {n: c.base_priority for n, c in classes.items()} == {"critical": 4.0, "elastic": 2.0, "background": 1.0,
                                                               "control": 0.0}
    assert [n for n, c in classes.items() if c.weighted] == ["background", "elastic", "critical"]
    assert classes["critical"].queues == (6, 5) and classes["control"].queues == (7,)


def test_yaml_overrides_dscp_and_base_priority() -> None:
    f = load(mini("  classes:\n    critical: {dscp: [46, 47], base_priority: 8}\n    background: {dscp: [8]}\n"))
    classes = {c.name: c for c in f.dataplane.classes}
    assert classes["critical"].dscp == (46, 47) and classes["critical"].base_priority == 8.0
    assert classes["background"].dscp == (8,) and classes["background"].base_priority == 1.0
    assert classes["elastic"].dscp == (32,)  # untouched classes keep the design's defaults


@pytest.mark.parametrize("block,key,reason", [
    ("    critical: {dscp: [64]}\n", "dataplane.classes.critical.dscp[0]", "DSCP must be an integer 0..63"),
    ("    elastic: {dscp: [63]}\n    critical: {dscp: [63]}\n", "dataplane.classes.critical.dscp[0]",
     "DSCP 63 already belongs to class elastic"),
    ("    control: {base_priority: 3}\n", "dataplane.classes.control.base_priority", "strict priority"),
    ("    elastic: {base_priority: 0}\n", "dataplane.classes.elastic.base_priority", "must be greater than 0"),
    ("    elastic: {queue: 6}\n", "dataplane.classes.elastic.queue", "queue 6 is also class critical's"),
    ("    control: {queue: 0, elephant_queue: 0}\n", "dataplane.classes.control.queue",
     "its queues must be above every weighted class's"),
    ("    critical: {bogus: 1}\n", "dataplane.classes.critical.bogus", "unknown key"),
])
def test_bad_class_override_is_reported_with_file_line_and_key(block: str, key: str, reason: str) -> None:
    text = mini("  classes:\n" + block)
    found = problems(text)
    line = line_of(text, block.splitlines()[-1].strip().split(":")[0] + ":", 1)
    match = [p for p in found if f": {key}: " in p]
    assert match and reason in match[0], found
    assert match[0].startswith("f.yaml:"), match
    assert int(match[0].split(":")[1]) == line  # the line of the class the YAML got wrong


def test_shared_queues_are_fine_without_weights() -> None:
    """Negative control of the shared-queue rule: with weights off a queue needs no owner."""
    f = load(mini("  scheduler: {weights: false}\n  classes:\n    elastic: {queue: 6}\n"))
    assert f.dataplane.traffic_class("elastic").queue == 6


@pytest.mark.parametrize("extra,key", [
    ("  scheduler: {priority_decay_factor: 1.0}\n", "dataplane.scheduler.priority_decay_factor"),
    ("  scheduler: {urgency_horizon_s: 0}\n", "dataplane.scheduler.urgency_horizon_s"),
    ("  scheduler: {alpha: -1}\n", "dataplane.scheduler.alpha"),
    ("  scheduler: {weights: 1}\n", "dataplane.scheduler.weights"),
])
def test_bad_scheduler_settings(extra: str, key: str) -> None:
    assert any(f": {key}: " in p for p in problems(mini(extra))), problems(mini(extra))


def test_job_class_and_deadline_and_tenant_terms_are_checked() -> None:
    found = problems(mini(job_extra="    class: urgent\n    remaining_s: -5\n", tenant_extra="    beta: -1\n"))
    assert any(": jobs[0].class: " in p for p in found), found
    assert any(": jobs[0].remaining_s: " in p for p in found), found
    assert any(": tenants[0].beta: " in p for p in found), found


def test_job_class_defaults_to_its_tenants_then_the_fabric_default() -> None:
    lab = load_fabric(LAB)
    assert lab.jobs["moe"].traffic_class == "critical" and lab.jobs["dense"].traffic_class == "elastic"
    tenant_class = MINI.replace("  - name: t1\n", "  - name: t1\n    class: background\n")
    assert load(tenant_class.replace("    hosts: [h1, h2]\n", "    hosts: [h1, h2]\n    tenant: t1\n")
                ).jobs["j1"].traffic_class == "background"
    assert load(mini("  default_class: critical\n")).jobs["j1"].traffic_class == "critical"  # no tenant
    assert load(mini(job_extra="    class: critical\n")).jobs["j1"].traffic_class == "critical"


# ------------------------------------------------------------------------------ the formula
def test_formula_term_by_term() -> None:
    assert class_weight(4, 2, 0.5, 1, 0.0) == 5.0
    assert class_weight(4, 2, 0.5, 1, 1.0) == 2.5
    assert class_weight(4, 0, 1.0, 0, 1.0) == 4.0  # alpha = beta = 0: base priority only


def test_deadline_urgency_from_remaining_time() -> None:
    assert deadline_urgency(None, 3600) == 0.0
    assert deadline_urgency(7200, 3600) == 0.0 and deadline_urgency(3600, 3600) == 0.0
    assert deadline_urgency(900, 3600) == 0.75 and deadline_urgency(0, 3600) == 1.0


def test_class_weight_uses_its_jobs_tenant_alpha_and_deadline() -> None:
    lab = load_fabric(LAB)  # moe: llm (alpha 2), critical, 900 s left; dense: batch, elastic
    w = compute_weights(lab)
    assert w["critical"].terms.job == "moe" and w["critical"].weight == pytest.approx(4 + 2 * 0.75)
    assert w["elastic"].weight == 2.0 and w["background"].weight == 1.0 and w["background"].terms.job is None
    assert sum(c.share for c in w.values()) == pytest.approx(1.0)
    assert w["critical"].share == pytest.approx(5.5 / 8.5)
    # negative control: without the deadline the urgency term is gone
    assert compute_weights(lab, jobs=["dense"])["critical"].weight == 4.0
    with pytest.raises(ValueError, match="no job 'nope'"):
        compute_weights(lab, jobs=["nope"])


def test_a_class_takes_its_most_deserving_jobs_weight() -> None:
    text = mini(job_extra="    class: critical\n    remaining_s: 1800\n"
                "  - {name: j2, collective: AllReduce, bandwidth_gbps: 10, hosts: [h1, h2], class: critical,"
                " remaining_s: 360}\n")
    w = compute_weights(load(text))["critical"]
    assert w.terms.job == "j2" and w.weight == pytest.approx(4 + 0.9) and len(w.candidates) == 2


def test_usage_divides_the_weight_by_tenant_beta() -> None:
    lab = load_fabric(LAB)
    busy = compute_weights(lab, {"critical": 0.5})
    assert busy["critical"].weight == pytest.approx(5.5 / 1.5)
    assert busy["elastic"].weight == 2.0  # a class's usage touches only its own weight
    assert busy["critical"].share < compute_weights(lab)["critical"].share


def test_usage_decays_by_priority_decay_factor() -> None:
    t = UsageTracker(0.95)
    assert t.observe({"elastic": 1.0})["elastic"] == pytest.approx(0.05)
    assert t.observe({"elastic": 1.0})["elastic"] == pytest.approx(0.05 * 0.95 + 0.05)
    before = t.usage["elastic"]
    for _ in range(20):
        t.observe({})
    assert t.usage["elastic"] == pytest.approx(before * 0.95 ** 20)  # forgiven geometrically
    slow = UsageTracker(0.5)
    assert slow.observe({"elastic": 1.0})["elastic"] == 0.5  # the factor is the knob
    with pytest.raises(ValueError):
        t.observe({"elastic": 1.5})


def test_usage_from_per_queue_byte_counters() -> None:
    lab = load_fabric(LAB)
    sent = bytes_by_class(lab, {(9, 6): (1, 600), (9, 5): (1, 400), (10, 3): (2, 1000), (9, 7): (1, 100),
                                (9, 0): (1, 50)})
    assert sent == {"critical": 1000, "elastic": 1000, "control": 100}  # queue 0 is no class's
    t = UsageTracker(0.0)  # no memory: the usage is the last interval's share of bytes
    assert t.observe_bytes(sent) == {"critical": pytest.approx(1000 / 2100), "elastic": pytest.approx(1000 / 2100),
                                     "background": 0.0}


def test_scheduler_decay_factor_comes_from_the_fabric() -> None:
    f = load(mini("  scheduler: {priority_decay_factor: 0.5}\n"))
    s = ClassScheduler(f, {})
    s.step({"critical": 100})
    assert s.tracker.usage["critical"] == 0.5


# ------------------------------------------------------------------------------ to the switches
def test_queue_weights_group_a_classes_queues_and_keep_control_strict() -> None:
    lab = load_fabric(LAB)
    q = queue_weights(lab, compute_weights(lab))
    assert q[7] == (0, 7) and q[0] == (0, 0)
    assert q[6] == q[5] == (round(5.5 / 8.5 * 16384), 6)
    assert q[4] == q[3] == (round(2 / 8.5 * 16384), 4) and q[2] == q[1] == (round(1 / 8.5 * 16384), 2)
    assert queue_weights(lab, None) == {i: (0, i) for i in range(8)}


class Recorder:
    def __init__(self):
        self.calls = []

    def set_queue_weights(self, port, weights, port_pps):
        self.calls.append((port, dict(weights), port_pps))


def test_weights_off_pushes_nothing_so_the_switch_keeps_strict_priority() -> None:
    off = Recorder()
    ClassScheduler(load(mini("  scheduler: {weights: false}\n")), {"leaf1": off}).step()
    assert off.calls == []  # BMv2 and p4sim keep their default scheduling exactly
    on = Recorder()
    ClassScheduler(load(MINI), {"leaf1": on}).step()
    assert on.calls and all(w[6][0] > 0 and w[7] == (0, 7) for _, w, _ in on.calls)  # the control


def test_turning_weights_off_sets_the_queues_back_to_strict() -> None:
    rec = Recorder()
    s = ClassScheduler(load(MINI), {"leaf1": rec})
    s.step()
    s.fabric = load(mini("  scheduler: {weights: false}\n"))
    rec.calls.clear()
    s.step()
    assert rec.calls and all(w == {i: (0, i) for i in range(8)} for _, w, _ in rec.calls)
    rec.calls.clear()
    s.step()
    assert rec.calls == []  # once undone, nothing more to push


def test_step_counters_samples_the_bytes_since_the_last_read() -> None:
    lab = load_fabric(LAB)
    s = ClassScheduler(lab, {}, jobs=[])
    s.step_counters({"leaf1": {(9, 6): (10, 5000), (9, 4): (10, 5000)}})
    assert s.tracker.usage["critical"] == 0.0  # the first read is only the baseline
    s.step_counters({"leaf1": {(9, 6): (20, 9000), (9, 4): (20, 5000)}, "leaf2": {(9, 4): (1, 0)}})
    assert s.tracker.usage == {"critical": pytest.approx(0.05), "elastic": 0.0, "background": 0.0}
    assert s.weights["critical"].weight == pytest.approx(4 / 1.05)


def test_apply_weights_to_p4sim_through_target_control() -> None:
    """TargetControl's default set_queue_weights sends one set_queue_weight per queue."""
    class Fake(TargetControl):
        name = "fake"

        def __init__(self):
            self.sent = []

        def set_queue_rate(self, pps, port=None, priority=None): ...

        def set_queue_depth(self, pkts, port=None, priority=None): ...

        def set_port_up(self, port, up): ...

        def set_queue_weight(self, weight, port=None, priority=None, group=None):
            self.sent.append((port, priority, weight, group))

    lab = load_fabric(LAB)
    fake = Fake()
    ports = apply_weights(lab, {"leaf1": fake}, compute_weights(lab))
    assert ports == len(lab.switches["leaf1"].ports) and len(fake.sent) == 8 * ports
    assert (9, 6, round(5.5 / 8.5 * 16384), 6) in fake.sent and (9, 7, 0, 7) in fake.sent


def test_bmv2_weights_become_per_queue_rates(monkeypatch) -> None:
    lab = load_fabric(LAB)
    sent: list[str] = []
    target = Bmv2Target(thrift_port=1)
    monkeypatch.setattr(target, "run_cli", lambda cmds: sent.extend(cmds) or "")
    apply_weights(lab, {"spine1": target}, compute_weights(lab), port_pps={("spine1", 1): 17_000})
    port1 = [c for c in sent if c.split()[2] == "1"]
    assert "set_queue_rate 11000 1 6" in port1 and "set_queue_rate 11000 1 5" in port1  # 5.5/8.5 of 17000
    assert "set_queue_rate 4000 1 4" in port1 and "set_queue_rate 2000 1 2" in port1
    assert "set_queue_rate 17000 1 7" in port1  # strict: the port's whole rate
    other = [c for c in sent if c.split()[2] == "2"]  # no override: 100 Gbps at 4096-byte packets
    assert f"set_queue_rate {port_packet_rate(lab, 100.0)} 2 7" in other


def test_bmv2_has_no_weighted_scheduler_of_its_own() -> None:
    with pytest.raises(NotSupportedByTarget):
        Bmv2Target(thrift_port=1).set_queue_weight(5, 1, 1)


# ------------------------------------------------------------------------------ stellarctl
def run_cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), out=out, err=err), out.getvalue(), err.getvalue()


def test_analyze_scheduler_shows_each_class_weight_and_why() -> None:
    code, out, err = run_cli("analyze-scheduler", LAB, "moe")
    assert code == 0, err
    assert "critical   DSCP 63      queues 6/5   weight  5.500  share  64.7%" in out
    assert "= (4 + 2*0.750) / (1 + 1*0.000) = 5.500  <- job moe (tenant llm)" in out
    assert "urgency 0.750 (deadline in 900 s)" in out
    assert "elastic    DSCP 32" in out and "background DSCP 0" in out and "control    DSCP 48" in out
    assert "strict priority" in out
    assert "job moe sends critical (DSCP 63): its own weight 5.500 sets the class weight" in out


def test_analyze_scheduler_usage_changes_the_weights() -> None:
    code, out, _ = run_cli("analyze-scheduler", LAB, "dense", "--usage", "critical=0.5")
    assert code == 0 and "= (4 + 2*0.750) / (1 + 1*0.500) = 3.667" in out
    assert "job dense sends elastic (DSCP 32)" in out
    code, _, err = run_cli("analyze-scheduler", LAB, "--usage", "critical=2")
    assert code == 2 and "expected CLASS=FRACTION" in err


def test_analyze_scheduler_says_when_weights_are_off(tmp_path: Path) -> None:
    f = tmp_path / "off.yaml"
    f.write_text(Path(LAB).read_text().replace("    weights: true ", "    weights: false"))
    code, out, _ = run_cli("analyze-scheduler", str(f))
    assert code == 0 and "NOT applied, every queue strict" in out


def test_four_queue_layout_with_weights() -> None:
    """A switch with --priority-queues 4: one queue per class, control on top, all weighted below."""
    f = load(mini("  priority_queues: 4\n  classes:\n"
                  "    control: {queue: 3, elephant_queue: 3}\n    critical: {queue: 2, elephant_queue: 2}\n"
                  "    elastic: {queue: 1, elephant_queue: 1}\n    background: {queue: 0, elephant_queue: 0}\n"))
    q = queue_weights(f, compute_weights(f))
    assert q[3] == (0, 3) and [q[i][1] for i in (2, 1, 0)] == [2, 1, 0]
    assert q[2][0] == round(4 / 7 * 16384) and q[0][0] == round(1 / 7 * 16384)
    # the queue range errors come alone, not with a shared-queue error for every clamped class
    found = problems(mini("  priority_queues: 4\n"))
    assert found and all("does not exist with priority_queues 4" in p for p in found), found
