"""The flow-level model: max-min fairness, placement policies, agreement with the packet level
on the 16-GPU lab, and ECMP's collisions against balls-into-bins."""
import math

import numpy as np
import pytest

from fabric_sim.flowmodel import (VALIDATION_SWITCH, FFlow, FlowSim, Topo, collisions, iteration_spans, job_times, lb_ecmp_spine, many_jobs,
                                  maxmin, validate_on_lab, validate_policy)

# The flow model was validated against the packet level's previous NIC model (an ACK every 16th
# packet, no ACK timer, the SIGCOMM'15 DCQCN); the NIC model now coalesces ACKs with a timer and
# runs NVIDIA's DCQCN, which these agreements (and the hash reproduction's ACK count) do not
# model yet.  They wait for the flow model's re-validation (issue 31, item 8).
NEW_HOST_MODEL = pytest.mark.skip(reason="flow model not yet re-validated against the new NIC model "
                                         "(ACK timer, NVIDIA DCQCN): issue 31 item 8")

# Stated tolerance of the flow model against the packet level (ECMP, symmetric lab, AlltoAll
# 64 KB per QP, the same paths): the collective within 20%, the median per-flow FCT within 15%.
# Measured: 11% and 6.5% (seeds 1 and 2).  What it leaves out: latency, DCQCN's transients,
# queueing and ACK slots.
COLLECTIVE_TOL, FCT_TOL = 0.20, 0.15

# Per policy on the asymmetric lab (leaf1-spine1 at 40%), AlltoAll 32 KB per QP, each flow on the
# spine the packet level put it on.  Measured (seeds 1, 2): completion/ideal within 10-19% in
# absolute terms (the flow model is always the faster: it leaves out DCQCN's transients and the
# ACK/CNP service slots), and each policy's completion relative to ECMP's within 2-8%.  The
# effects it reports are larger than the relative tolerance: WCMP finishes ~45% sooner than ECMP,
# Stellar ~20% sooner.
ABS_TOL, REL_TOL = 0.25, 0.10
POLICIES = ("ecmp", "wcmp", "stellar")


def test_maxmin_gives_the_textbook_allocation():
    # links: 0 cap 10, 1 cap 4; flow a uses 0, flow b uses 0 and 1, flow c uses 1
    r = maxmin(np.array([[0, -1], [0, 1], [1, -1]]), np.array([10.0, 4.0]))
    assert r == pytest.approx([8.0, 2.0, 2.0])


def test_flows_sharing_a_nic_split_it_and_finish_together():
    topo = Topo.leaf_spine(2, 2, 2, host_gbps=100, link_gbps=100)
    fs = [FFlow(0, "leaf1g1", "leaf1g2", 1e6, 0.0), FFlow(1, "leaf1g1", "leaf2g1", 1e6, 0.0)]
    FlowSim(topo, "ecmp").run(fs)
    assert fs[0].done_us == pytest.approx(160.0) and fs[1].done_us == pytest.approx(160.0)


def test_a_later_flow_gets_the_rate_an_earlier_one_leaves():
    topo = Topo.leaf_spine(1, 1, 2, host_gbps=100)
    fs = [FFlow(0, "leaf1g1", "leaf1g2", 1e6, 0.0), FFlow(1, "leaf1g1", "leaf1g2", 1e6, 40.0)]
    FlowSim(topo, "ecmp").run(fs)
    # alone at 100G for 40 µs (0.5 MB), then both at 50G: the first finishes at 120 µs, the
    # second (0.5 MB by then) has the NIC alone for its last 0.5 MB: 160 µs
    assert fs[0].done_us == pytest.approx(120.0) and fs[1].done_us == pytest.approx(160.0)


def test_job_aware_placement_beats_hashing_many_jobs_on_512_gpus():
    from control_plane.model import load_fabric
    from pathlib import Path

    topo = Topo.from_fabric(load_fabric(Path(__file__).resolve().parents[2] / "fabrics" / "cluster512.yaml"))
    res = {}
    for pol in ("ecmp", "jobaware"):
        fl = many_jobs(topo, 32, 4e6, seed=1)
        FlowSim(topo, pol, seed=1).run(fl)
        res[pol] = max(job_times(fl).values())
    assert res["jobaware"] < 0.75 * res["ecmp"]


def test_ecmp_collisions_match_balls_into_bins():
    n, m, trials = 16, 8, 3000
    pairs, empty = collisions(n, m, trials)
    exp_pairs = n * (n - 1) / 2 / m  # each pair shares a link with probability 1/m
    exp_empty = m * (1 - 1 / m) ** n
    # per-trial standard deviations are below sqrt(pairs) ~ 4 and sqrt(m) ~ 3: 4 sigma of the mean
    assert abs(pairs - exp_pairs) < 4 * 4 / math.sqrt(trials) + 0.05 * exp_pairs
    assert abs(empty - exp_empty) < 4 * 3 / math.sqrt(trials) + 0.05 * exp_empty


def test_a_salt_appended_to_a_crc_input_cannot_change_which_flows_collide():
    # negative control for the salted hash: CRC is affine, so the appended salt XORs one constant
    # into every hash; modulo 8 the collision pattern is the same for every salt
    pairs, _ = collisions(16, 8, 200, linear=True)
    pairs_one, _ = collisions(16, 8, 1, linear=True)
    assert pairs == pairs_one  # identical in all 200 trials
    mixed, _ = collisions(16, 8, 200)
    assert mixed != collisions(16, 8, 1)[0]


@NEW_HOST_MODEL
def test_flow_model_agrees_with_the_packet_level_on_the_lab():
    v = validate_on_lab(seed=1)
    err = abs(v["flow_completion_us"] - v["packet_completion_us"]) / v["packet_completion_us"]
    assert err < COLLECTIVE_TOL
    assert v["median_fct_error"] < FCT_TOL


@NEW_HOST_MODEL
def test_the_hash_reproduction_puts_flows_where_the_packet_level_did():
    from fabric_sim.experiment import RunSpec, run

    keep = {}
    run(RunSpec("a2a", "sym", "ecmp", 3, nbytes=8192, **VALIDATION_SWITCH), keep=keep)
    net, fabric, sim = keep["net"], keep["fabric"], keep["sim"]
    predicted = {}
    for t in net.transfers:
        src, dst = fabric.hosts[t.src], fabric.hosts[t.dst]
        if src.leaf == dst.leaf:
            continue
        sport = net.send_qp_of[t.tid].sport
        sp = lb_ecmp_spine(fabric, src.leaf, str(src.ip), str(dst.ip), sport, 4791, keep["salt"])
        predicted[(src.leaf, sp)] = predicted.get((src.leaf, sp), 0) + t.packets
        # the responder's coalesced ACKs (every 16th packet and the last) on their own hash
        back = lb_ecmp_spine(fabric, dst.leaf, str(dst.ip), str(src.ip), sport ^ 1, 4791, keep["salt"])
        predicted[(dst.leaf, back)] = predicted.get((dst.leaf, back), 0) + (t.packets - 1) // 16 + 1 + t.cnps
    seen = {}
    for ref, n in sim.tx_packets.items():
        peer = sim.peer[ref][0].switch
        if fabric.switches[ref.switch].role == "leaf":
            seen[(ref.switch, peer)] = n
    # no loss in this run, so every data, ACK and CNP frame is where the hash says
    assert seen == predicted
    # negative control: the other spine for every flow does not match
    flipped = {(l, "spine2" if s == "spine1" else "spine1"): v for (l, s), v in predicted.items()}
    assert sum(abs(seen.get(k, 0) - flipped.get(k, 0)) for k in seen) > sum(abs(seen[k] - predicted.get(k, 0)) for k in seen)


@pytest.fixture(scope="module")
def per_policy():
    """One packet-level run per policy (seed 1, 32 KB per QP: a few seconds each)."""
    return {m: validate_policy(m, "deg40", seed=1, nbytes=32768) for m in POLICIES}


@NEW_HOST_MODEL
def test_flow_model_agrees_per_policy_on_the_asymmetric_lab(per_policy):
    for m, v in per_policy.items():
        assert v["flow_completion_error"] < ABS_TOL, (m, v)
        assert v["flow_median_fct_error"] < ABS_TOL, (m, v)


@NEW_HOST_MODEL
def test_flow_model_reproduces_each_policys_effect_against_ecmp(per_policy):
    ecmp = per_policy["ecmp"]
    for m in ("wcmp", "stellar"):
        pkt = per_policy[m]["packet_completion_us"] / ecmp["packet_completion_us"]
        flo = per_policy[m]["flow_completion_us"] / ecmp["flow_completion_us"]
        assert abs(flo - pkt) / pkt < REL_TOL, (m, pkt, flo)
        assert 1 - pkt > REL_TOL  # the effect is larger than the tolerance that checks it


@NEW_HOST_MODEL
def test_flow_model_orders_the_policies_as_the_packet_level(per_policy):
    # Also waits for the re-validation: in the validation switch mode (static queues served per
    # packet, so every ACK and CNP takes a 4 KB slot) Stellar's packet-level AlltoAll is now
    # slower than ECMP's (480 vs 403 us, seed 1) while the flow model, which gives control frames
    # no slots, orders it between WCMP and ECMP; with byte-rate queues the packet level agrees
    # (Stellar 99, ECMP 159 us).
    by_pkt = sorted(POLICIES, key=lambda m: per_policy[m]["packet_completion_us"])
    by_flow = sorted(POLICIES, key=lambda m: per_policy[m]["flow_completion_us"])
    assert by_pkt == by_flow


def test_negative_control_a_model_blind_to_the_degraded_link_disagrees(per_policy):
    # the same paths on the nominal-rate fabric: ECMP's and Stellar's flows on the 40G link look
    # as fast as the others, so the model misses the packet level by far more than the tolerance
    for m in ("ecmp", "stellar"):
        assert per_policy[m]["blind_completion_error"] > 1.5 * ABS_TOL, (m, per_policy[m])
    ecmp = per_policy["ecmp"]
    pkt = per_policy["wcmp"]["packet_completion_us"] / ecmp["packet_completion_us"]
    blind = per_policy["wcmp"]["blind_completion_us"] / ecmp["blind_completion_us"]
    assert abs(blind - pkt) / pkt > 2 * REL_TOL


def test_approximate_maxmin_stays_within_its_tolerance_of_exact():
    rng = np.random.default_rng(3)
    links = rng.integers(-1, 40, size=(600, 4))
    cap = rng.uniform(10, 100, size=40)
    exact, approx = maxmin(links, cap), maxmin(links, cap, rel_tol=0.01)
    assert np.all(approx <= exact * 1.0101 + 1e-9) and np.all(approx >= exact / 1.0101 - 1e-9)
    load = np.bincount(links[links >= 0], weights=np.broadcast_to(approx[:, None], links.shape)[links >= 0],
                       minlength=40)
    assert np.all(load <= cap * (1 + 1e-9))  # feasible


def test_an_iteration_starts_after_the_previous_one_ends_plus_the_compute_gap():
    topo = Topo.leaf_spine(2, 2, 2, host_gbps=100, link_gbps=100)
    fs = many_jobs(topo, 4, 1e6, seed=1, iterations=3, gap_us=50.0)
    FlowSim(topo, "ecmp", seed=1).run(fs)
    spans = iteration_spans(fs)
    for it in (1, 2):
        prev_end = spans[("job0", it - 1)][1]
        assert spans[("job0", it)][0] == pytest.approx(prev_end + 50.0)
    # negative control: the same flows without the barrier (all at t=0) overlap and finish sooner
    flat = [FFlow(f.fid, f.src, f.dst, f.nbytes, 0.0, f.job) for f in many_jobs(topo, 4, 1e6, 1, iterations=3)]
    FlowSim(topo, "ecmp", seed=1).run(flat)
    assert all(f.started_us == 0.0 for f in flat)
    assert max(job_times(flat).values()) <= spans[("job0", 2)][1] - 2 * 50.0 + 1e-6


def test_launch_skew_delays_each_ranks_start_within_the_bound():
    topo = Topo.leaf_spine(2, 2, 4, host_gbps=100, link_gbps=100)
    fs = many_jobs(topo, 8, 1e5, seed=2, iterations=2, skew_us=20.0)
    FlowSim(topo, "ecmp", seed=2).run(fs)
    spans = iteration_spans(fs)
    first = [f for f in fs if f.iteration == 1]
    assert all(spans[("job0", 0)][1] <= f.started_us <= spans[("job0", 0)][1] + 20.0 for f in first)
    assert len({round(f.started_us, 6) for f in first}) > 1
