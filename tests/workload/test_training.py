"""Training-like workloads (fabric_sim.workloads.Training): NCCL-style channels on persistent
QPs, iterations with compute gaps and launch skew, warm-up excluded, per-seed placement."""
import pytest

from fabric_sim import workloads as W
from fabric_sim.rdma import NicParams, RdmaNetwork
from test_rdma import Wire, _Fabric, _Host, _Switch


def _net(n=4, seed=0):
    fab = _Fabric(switches={"leaf": _Switch()})
    wire = Wire()
    for i in range(n):
        h = _Host(f"h{i}", f"10.0.0.{i + 1}", f"02:00:00:00:00:{i + 1:02x}", "leaf")
        fab.hosts[h.name] = h
        wire.by_ip[bytes([10, 0, 0, i + 1])] = h.name
    return wire, RdmaNetwork(wire, fab, NicParams(), seed=seed)


def _job(kind, iterations=3, warmup=1, gap=50.0, seed=0, nbytes=64 * 4096):
    wire, net = _net(seed=seed)
    job = W.training(net, W.place_ranks(sorted(net.nics), seed), W.Collective(kind, nbytes, 2, 16 * 4096),
                     iterations, warmup, gap, 5.0, seed)
    net.start()
    wire.run()
    return job, net


@pytest.mark.parametrize("kind", ["ring", "tree", "a2a", "moe", "perm"])
def test_every_collective_runs_its_iterations_and_excludes_the_warmup(kind):
    job, net = _job(kind)
    assert len(job.records) == 4 and len(job.measured()) == 3
    assert job.measured() == [e - s for s, e in job.records[1:]]
    assert all(t.done_us is not None for t in net.transfers)
    for (_, end), (start, _) in zip(job.records, job.records[1:]):
        assert start == pytest.approx(end + 50.0)  # the compute gap between iterations


def test_channels_use_persistent_qps_per_rank_pair():
    job, net = _job("a2a")
    # 4 ranks, 12 ordered pairs, 2 channels: 24 QPs carry the 4 iterations (one slice per pair)
    assert len(net._send) == 24 and len(net.transfers) == 24 * 4
    negative = _net()[1]  # channel=None: one QP per message
    for _ in range(3):
        negative.qp("h0", "h1", None, 0.0)
    assert len(negative._send) == 3


def test_ring_pipelines_slices_step_by_step():
    job, net = _job("ring", iterations=1, warmup=0)
    # 2 channels x 2(n-1) steps x n ranks x 1 slice (256 KB / (4 ranks x 2 channels) = 32 KB)
    assert len(net.transfers) == 2 * (2 * 3) * 4 * 1
    later = [t for t in net.transfers if t.deps]
    assert later and all(t.started_us >= max(d.done_us for d in t.deps) for t in later)


def test_moe_sizes_are_skewed_and_a2a_sizes_are_not():
    moe, net_moe = _job("moe", iterations=1, warmup=0, nbytes=3 * 64 * 4096)
    a2a, net_a2a = _job("a2a", iterations=1, warmup=0, nbytes=3 * 64 * 4096)

    def per_pair(net):
        out = {}
        for t in net.transfers:
            out[(t.src, t.dst)] = out.get((t.src, t.dst), 0) + t.packets
        return out

    assert max(per_pair(net_moe).values()) > 2 * min(per_pair(net_moe).values())
    assert max(per_pair(net_a2a).values()) == min(per_pair(net_a2a).values())


def test_perm_sends_each_rank_to_one_fixed_partner():
    job, net = _job("perm", iterations=2, warmup=0)
    pairs = {(t.src, t.dst) for t in net.transfers}
    ranks = job.ranks
    assert pairs == {(ranks[r], ranks[(r + 2) % 4]) for r in range(4)}  # the same 4 pairs both iterations
    assert sum(t.packets for t in net.transfers) == 2 * 4 * 64  # nbytes per rank, per iteration
    a2a, net_a2a = _job("a2a", iterations=1, warmup=0)
    assert len({(t.src, t.dst) for t in net_a2a.transfers}) == 12  # the control: every ordered pair


def test_each_seed_randomises_placement_skew_and_qps():
    hosts = [f"h{i}" for i in range(8)]
    assert W.place_ranks(hosts, 1) == W.place_ranks(hosts, 1) != W.place_ranks(hosts, 2)
    j1, n1 = _job("a2a", iterations=1, warmup=0, seed=1)
    j2, n2 = _job("a2a", iterations=1, warmup=0, seed=2)
    assert sorted(n1._send) != sorted(n2._send)  # QP numbers
    assert {t.started_us for t in n1.transfers} != {t.started_us for t in n2.transfers}  # launch skew


def test_a_bad_collective_is_refused():
    with pytest.raises(ValueError):
        W.Collective("allgather", 1024)
