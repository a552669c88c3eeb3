"""The flow-level model: max-min fairness, placement policies, agreement with the packet level
on the 16-GPU lab, and ECMP's collisions against balls-into-bins."""
import math

import numpy as np
import pytest

from fabric_sim.flowmodel import (FFlow, FlowSim, Topo, collisions, hashed_spine, iteration_spans, job_times, many_jobs, maxmin,
                                  recorded_paths, seen_key, validate_on_lab, validate_policy)

# The flow model against today's packet level (fabric_sim.experiment.run: lossless PFC shared
# buffer, byte-rate queues, persistent-QP NICs) with DCQCN off (PFC only), AlltoAll 32 KB per QP
# on the 16-GPU lab, seed 1 unless stated.  Stated tolerances and what they were measured at
# (docs/flow-model.md has the tables):
# * ABS_TOL: the collective's completion, flow model (on the paths the packet level took) vs
#   packet level.  Measured, seeds 1-3: deg40 <= 1.4%, sym <= 8.3% (the flow model is the faster:
#   it has no queueing and no PFC pauses).
# * REL_TOL: each policy's completion relative to ECMP's.  Measured, seeds 1-3: deg40 <= 0.3%
#   (WCMP), <= 1.7% (Stellar); sym <= 8.7% (Stellar; 3.1% on seed 1).  The effects it checks:
#   on deg40 WCMP and Stellar finish in 0.52-0.67x and 0.48-0.63x of ECMP's time (far larger);
#   on sym Stellar in 0.83-0.89x, only just larger than the tolerance.
# * FCT_TOL: the median per-flow FCT.  Measured <= 12%; at 128 KB per QP, ECMP on deg40 reaches
#   39% (PFC is not max-min fair per flow), so FCTs are checked only at this size.
# * OWN_TOL: the flow model's own placement (what it runs at 512-4096 GPUs) vs the packet level:
#   Stellar's (deterministic) per seed, measured 0.2-0.3% on deg40, 8.0-8.3% on sym; ECMP's and WCMP's salted hashes as the
#   median over seeds 1-5 (7 seeds measured: ECMP 0.4%, WCMP 7%).
# Under DCQCN (NVIDIA defaults) the flow model is no predictor: at 128 KB per QP it misses the
# packet level by 42-51% (max-min fair rates are what ideal congestion control converges to;
# DCQCN's cuts keep the links far from full).  At 32 KB DCQCN does not engage.
ABS_TOL, REL_TOL, FCT_TOL, OWN_TOL = 0.10, 0.10, 0.15, 0.15
POLICIES = ("ecmp", "wcmp", "stellar")
OWN_SEEDS = (1, 2, 3, 4, 5)


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


def test_flow_model_agrees_with_the_packet_level_on_the_symmetric_lab_under_ecmp():
    v = validate_on_lab(seed=1)
    err = abs(v["flow_completion_us"] - v["packet_completion_us"]) / v["packet_completion_us"]
    assert err < ABS_TOL, v
    assert v["median_fct_error"] < FCT_TOL, v


def test_the_hash_reproduction_puts_flows_where_the_packet_level_did():
    from fabric_sim.experiment import RunSpec, run

    keep = {}
    with recorded_paths() as seen:
        run(RunSpec("a2a", "sym", "ecmp", 3, nbytes=8192, dcqcn="off"), keep=keep)
    net, fabric = keep["net"], keep["fabric"]
    cross = [t for t in net.transfers if fabric.hosts[t.src].leaf != fabric.hosts[t.dst].leaf]
    taken = {}
    for t in cross:
        (spine,) = seen[seen_key(net, fabric, t)]  # ECMP keeps a flow on one spine
        taken[t.tid] = spine
    predicted = {t.tid: hashed_spine(net, fabric, t, keep["salt"]) for t in cross}
    assert len(taken) == len(cross) == 192
    assert taken == predicted
    # negative control: the same hash without the salt puts many flows elsewhere
    unsalted = {t.tid: hashed_spine(net, fabric, t, 1) for t in cross}
    assert sum(taken[k] != unsalted[k] for k in taken) > 40


@pytest.fixture(scope="module")
def per_policy():
    """The packet level and the flow model per policy, PFC only, 32 KB per QP: deg40 with
    ECMP and WCMP on seeds 1-5 (their own-placement check is over seeds), Stellar on seed 1;
    sym on seed 1 (~40 s of packet-level runs in all)."""
    out = {("deg40", m, s): validate_policy(m, "deg40", seed=s) for m in ("ecmp", "wcmp") for s in OWN_SEEDS}
    out[("deg40", "stellar", 1)] = validate_policy("stellar", "deg40", seed=1)
    out.update({("sym", m, 1): validate_policy(m, "sym", seed=1) for m in ("ecmp", "stellar")})
    return out


def test_flow_model_agrees_per_policy_on_the_asymmetric_and_symmetric_lab(per_policy):
    for key, v in per_policy.items():
        # every cross-leaf transfer's spine was read off the wire (Stellar's through its shim)
        assert v["unrecorded_transfers"] == 0 and v["split_transfers"] == 0, key
        assert v["flow_completion_error"] < ABS_TOL, (key, v)
        assert v["flow_median_fct_error"] < FCT_TOL, (key, v)


@pytest.mark.parametrize("topo,policy,effect", [("deg40", "wcmp", 0.30), ("deg40", "stellar", 0.30),
                                                 ("sym", "stellar", 0.12)])
def test_flow_model_reproduces_each_policys_effect_against_ecmp(per_policy, topo, policy, effect):
    ecmp, v = per_policy[(topo, "ecmp", 1)], per_policy[(topo, policy, 1)]
    pkt = v["packet_completion_us"] / ecmp["packet_completion_us"]
    flo = v["flow_completion_us"] / ecmp["flow_completion_us"]
    assert abs(flo - pkt) / pkt < REL_TOL, (pkt, flo)
    assert 1 - pkt > effect > REL_TOL  # the effect is larger than the tolerance that checks it


def test_flow_model_orders_the_policies_as_the_packet_level(per_policy):
    runs = {m: per_policy[("deg40", m, 1)] for m in POLICIES}
    by_pkt = sorted(POLICIES, key=lambda m: runs[m]["packet_completion_us"])
    by_flow = sorted(POLICIES, key=lambda m: runs[m]["flow_completion_us"])
    assert by_pkt == by_flow == ["stellar", "wcmp", "ecmp"]


def test_the_flow_models_own_placement_matches_the_packet_level_per_policy(per_policy):
    # Stellar's placement (bottleneck share of each path set) is deterministic: per seed
    for topo in ("deg40", "sym"):
        v = per_policy[(topo, "stellar", 1)]
        assert abs(v["own_completion_us"] - v["packet_completion_us"]) / v["packet_completion_us"] < ABS_TOL, v
    # negative control (deg40; on sym the hash's draw is within 6% of Stellar's, which the
    # relative test above separates): the hash's placement misses Stellar's by far more
    v = per_policy[("deg40", "stellar", 1)]
    hashed = per_policy[("deg40", "ecmp", 1)]["own_completion_us"]
    assert abs(hashed - v["packet_completion_us"]) / v["packet_completion_us"] > 3 * ABS_TOL
    # ECMP's and WCMP's hashes: the flow model's salted draw is not lb.p4's, so over seeds
    for m in ("ecmp", "wcmp"):
        pkt = np.median([per_policy[("deg40", m, s)]["packet_over_ideal"] for s in OWN_SEEDS])
        own = np.median([per_policy[("deg40", m, s)]["own_over_ideal"] for s in OWN_SEEDS])
        assert abs(own - pkt) / pkt < OWN_TOL, (m, pkt, own)


def test_stellars_placement_in_the_flow_model_holds_with_staggered_starts():
    # AlltoAll with up to 20 us of start jitter (64 KB per QP, deg40): flows are placed one
    # after another while earlier ones run, so the model's path load must grow with each flow
    # placed on a path (offered load).  Measured: 195 vs the packet level's 199 us (1.6%); a
    # sum of the max-min rates (which stops growing once the path is congested) gave 259 us.
    v = validate_policy("stellar", "deg40", seed=1, nbytes=65536, workload="a2a-jit")
    assert abs(v["own_completion_us"] - v["packet_completion_us"]) / v["packet_completion_us"] < ABS_TOL, v
    # negative control: the flow model's hash placement of the same flows misses it by far more
    assert v["hash_completion_error"] > 3 * ABS_TOL, v


def test_negative_control_a_model_blind_to_the_degraded_link_disagrees(per_policy):
    # the same paths on the nominal-rate fabric: ECMP's flows on the 40G link look as fast as
    # the others, so the model misses the packet level by far more than the tolerance
    ecmp = per_policy[("deg40", "ecmp", 1)]
    assert ecmp["blind_completion_error"] > 3 * ABS_TOL, ecmp
    pkt = per_policy[("deg40", "wcmp", 1)]["packet_completion_us"] / ecmp["packet_completion_us"]
    blind = per_policy[("deg40", "wcmp", 1)]["blind_completion_us"] / ecmp["blind_completion_us"]
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
