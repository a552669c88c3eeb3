"""The run's metrics: link utilisation cannot exceed 1, NCCL's bus bandwidth, iterations, and every
row key documented."""
import pytest

from fabric_sim.experiment import ROW_KEYS, RunSpec, _ser_us, run
from fabric_sim.metrics import busbw_gbps, iteration_times, uplink_imbalance


def test_link_util_stays_within_one_on_a_degraded_link_where_the_old_count_exceeded_it():
    keep: dict = {}
    row = run(RunSpec("a2a", "deg40", "stellar", 1, nbytes=65536), keep)
    assert row["incomplete"] == 0
    assert 0.3 < row["link_util_max"] <= 1.0
    assert row["link_util_mean"] <= row["link_util_max"]
    # negative control: frames counted until the simulation stopped, one frame time each, over
    # the time of the last completion (the old formula) exceed 1 on the 40% link
    sim, fb = keep["sim"], keep["frame_bytes"]
    end = max(t.done_us for t in keep["net"].transfers)
    old = max(sim.tx_packets.get(ref, 0) * _ser_us(fb, 40.0) / end
              for ref in sim.link_ports("leaf1", "spine1"))
    assert old > 1.0


def test_bus_bandwidth_follows_nccl_tests():
    # 1 GB AllReduce in 1 s on 8 ranks: algbw 8 Gb/s, busbw 8 * 2 * 7/8 = 14
    assert busbw_gbps("allreduce", 8, 1e9, 1.0) == pytest.approx(14.0)
    assert busbw_gbps("alltoall", 8, 1e9, 1.0) == pytest.approx(7.0)
    assert busbw_gbps("allgather", 2, 1e9, 1.0) == pytest.approx(4.0)
    row = run(RunSpec("a2a", "sym", "ecmp", 1, nbytes=8192))
    # AlltoAll: busbw = (n-1) x slice / time
    assert row["busbw_gbps"] == pytest.approx(15 * 8192 * 8 / row["completion_us"] / 1e3)


class _T:
    def __init__(self, start, done, iteration=None, warmup=False, kind="job"):
        self.started_us, self.done_us, self.kind = start, done, kind
        if iteration is not None:
            self.iteration, self.warmup = iteration, warmup


def test_iterations_are_timed_separately_and_warm_up_is_left_out():
    ts = [_T(0, 50, 0, warmup=True), _T(10, 40, 0, warmup=True), _T(100, 130, 1), _T(105, 160, 1),
          _T(200, 220, 2), _T(0, 999, kind="flow")]
    assert iteration_times(ts) == [60, 20]
    assert iteration_times([_T(3, 9), _T(1, 5)]) == [8]  # no iterations: one
    assert iteration_times([_T(0, None, 1)]) == []  # unfinished: not timed


def test_uplink_imbalance_is_zero_when_even_and_grows_with_skew():
    from control_plane.model import load_fabric
    from fabric_sim.experiment import FABRICS

    fabric = load_fabric(FABRICS["lab"])
    ups = {(n, p): 0.5 for n, s in fabric.switches.items() for p, x in s.ports.items()
           if x.peer_switch is not None}
    assert uplink_imbalance(ups, fabric) == pytest.approx(0.0)
    leaf1 = sorted(p for (n, p) in ups if n == "leaf1")
    ups[("leaf1", leaf1[0])] = 0.9
    ups[("leaf1", leaf1[1])] = 0.1
    assert uplink_imbalance(ups, fabric) == pytest.approx(1.6)


def test_every_row_key_is_documented():
    row = run(RunSpec("a2a", "fail", "stellar", 1, nbytes=8192))
    assert set(row) - set(ROW_KEYS) == set()


def test_every_mode_is_told_a_degraded_links_rate_through_the_fabric_model():
    from dataclasses import replace as dc_replace

    import fabric_sim.experiment as E
    from control_plane.render import render_fabric

    keep: dict = {}
    run(RunSpec("a2a", "deg40", "stellar", 1, nbytes=4096), keep)
    fabric = keep["fabric"]
    ends = keep["sim"].link_ports(*E.DEGRADED)
    assert all(fabric.switches[r.switch].ports[r.port].capacity_gbps == 40.0 for r in ends)
    # Stellar's rendered port rate follows it (the baselines read the same model)
    rendered = render_fabric(dc_replace(fabric, dataplane=dc_replace(fabric.dataplane, reservations=False)))
    rates = {e["match"]["standard_metadata.egress_spec"]: e["params"]["ps_per_byte"]
             for e in rendered.documents[ends[0].switch]["entries"] if e["action"].endswith("placement.set_rate")}
    assert rates[ends[0].port] == 200  # 40G: 200 ps per byte (100G: 80)
    assert sorted(rates.values()).count(80) == len(rates) - 1


def test_a_training_job_is_measured_per_iteration_without_its_warmup():
    spec = RunSpec("train-a2a", "sym", "ecmp", 1, nbytes=1 << 17, channels=1, iterations=2, warmup=1, gap_us=50.0)
    row = run(spec)
    assert row["incomplete"] == 0 and row["iterations"] == 2 and len(row["iter_us"]) == 2
    # the whole run spans the warm-up, two gaps and two measured iterations: more than their sum
    assert row["completion_us"] > sum(row["iter_us"]) + 2 * spec.gap_us
    assert row["iteration_us_p50"] == pytest.approx(sum(row["iter_us"]) / 2)
    # completion over ideal per iteration: near 1 for one iteration, not the whole run's ~3x
    assert 1.0 <= row["completion_over_ideal"] < row["completion_us"] / row["ideal_us"] / 2
    # NCCL's AlltoAll busbw: every peer's slice / time x (n-1)/n = the bytes a rank sends / time
    assert row["busbw_gbps"] == pytest.approx(spec.nbytes * 8 / row["iteration_us_p50"] / 1e3)
    # the messages (2-3 packets each, short by size) still give the per-QP throughput spread
    assert row["throughput_cv"] is not None and row["throughput_cv"] > 0


def test_an_iteration_still_running_at_the_horizon_counts_until_the_horizon(monkeypatch):
    import fabric_sim.experiment as E

    spec = RunSpec("train-a2a", "sym", "ecmp", 1, nbytes=1 << 17, channels=1, iterations=2, warmup=1)
    whole = run(spec)
    cut = whole["completion_us"] - whole["iter_us"][1] / 2  # the horizon falls in the last iteration
    monkeypatch.setattr(E, "HORIZON_US", cut)
    row = run(spec)
    assert row["incomplete"] > 0 and row["iterations"] == 1
    assert len(row["iter_us"]) == 2 and row["iter_us"][0] == whole["iter_us"][0]
    assert row["iter_us"][1] == pytest.approx(whole["iter_us"][1] / 2, rel=0.05)
