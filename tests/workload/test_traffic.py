"""Workload scheduling and receiver-side accounting."""
from fabric_sim.traffic import Collector, Endpoint, Workload, percentile

A = Endpoint("gpu1", "10.0.1.1", "02:00:00:00:01:01", "leaf1", 1)
B = Endpoint("gpu2", "10.0.2.1", "02:00:00:00:02:01", "leaf2", 1)
C = Endpoint("gpu3", "10.0.3.1", "02:00:00:00:03:01", "leaf3", 1)
GW = "02:00:00:00:00:fe"


def test_schedule_is_time_ordered_and_paced_per_flow():
    w = Workload()
    w.add(A, B, 3, start_us=0, gap_us=10, kind="job", job="j")
    w.add(B, A, 2, start_us=5, gap_us=10, kind="job", job="j")
    sends = list(w.schedule(GW))
    assert [(s.time_us, s.fid, s.psn) for s in sends] == [
        (0, 0, 0), (5, 1, 0), (10, 0, 1), (15, 1, 1), (20, 0, 2)]


def test_alltoall_creates_one_qp_per_ordered_pair():
    w = Workload()
    flows = w.alltoall([A, B, C], packets_per_pair=4, start_us=0, gap_us=1, job="a2a")
    assert len(flows) == 6
    assert len({f.dqpn for f in flows}) == 6
    assert {(f.src.name, f.dst.name) for f in flows} == {
        (s.name, d.name) for s in (A, B, C) for d in (A, B, C) if s is not d}


def test_collector_counts_psn_regressions_latency_and_completion():
    w = Workload()
    w.add(A, B, 4, start_us=0, gap_us=1, kind="job", job="j")
    c = Collector(w)
    sends = list(w.schedule(GW))
    for s in sends:
        c.on_send(s)
    # deliver PSNs 0, 2, 1, 3: one regression (1 after 2)
    for t, i in ((10, 0), (12, 2), (13, 1), (20, 3)):
        c.on_receive(t, sends[i].frame)
    r = c.results[0]
    assert r.received == 4 and r.reorders == 1
    assert sorted(r.latencies_us) == [10, 10, 12, 17]
    assert c.job_completion_us("j") == 20


def test_job_completion_is_none_when_a_packet_is_lost():
    w = Workload()
    w.add(A, B, 2, start_us=0, gap_us=1, kind="job", job="j")
    c = Collector(w)
    sends = list(w.schedule(GW))
    for s in sends:
        c.on_send(s)
    c.on_receive(5, sends[0].frame)
    assert c.job_completion_us("j") is None


def test_percentile_is_nearest_rank():
    vals = list(range(1, 101))
    assert percentile(vals, 50) == 50
    assert percentile(vals, 99) == 99
    assert percentile(vals, 100) == 100
    assert percentile([7], 99) == 7
    assert percentile([], 50) is None


def test_messages_are_separated_by_the_idle_pause():
    w = Workload()
    w.add(A, B, 5, start_us=0, gap_us=2, kind="job", job="j", burst=2, idle_us=10)
    assert [s.time_us for s in w.schedule(GW)] == [0, 2, 14, 16, 28]
