"""The fabric simulator: modelled link delays and rates on one virtual clock."""
from fabric_sim.traffic import Collector, Endpoint, Workload


def _ep(fabric, name):
    h = fabric.hosts[name]
    return Endpoint(h.name, str(h.ip), h.mac, h.leaf, h.port)


def _run(sim, fabric, flows, until=5000):
    w = Workload()
    for src, dst, n, gap in flows:
        w.add(_ep(fabric, src), _ep(fabric, dst), n, start_us=0, gap_us=gap, kind="job", job="j")
    c = Collector(w)
    times = []

    def deliver(t, host, frame):
        times.append((t, host))
        c.on_receive(t, frame)

    sim.deliver = deliver
    sim.run(w.schedule(lambda e: fabric.switches[e.leaf].mac), until_us=until, on_send=c.on_send)
    return c, times


def test_one_packet_arrives_after_exactly_the_sum_of_link_delays(lab_sim, lab_fabric):
    # host link 0.5 + leaf-spine 1.0 + spine-leaf 1.0 + host link 0.5; empty queues depart at once
    _, times = _run(lab_sim, lab_fabric, [("l1g1", "l2g1", 1, 1)])
    assert times == [(3.0, "l2g1")]


def test_a_modelled_line_rate_spaces_a_burst_at_the_receiver(lab_sim, lab_fabric):
    # Hosts offer 4 packets at once (gap 0.1 µs); a 100G port is modelled as 1 packet/µs, so
    # they leave the first switch 1 µs apart and arrive 1 µs apart.
    _, times = _run(lab_sim, lab_fabric, [("l1g1", "l1g2", 4, 0.1)])
    arrivals = [t for t, _ in times]
    assert len(arrivals) == 4
    assert [round(b - a, 6) for a, b in zip(arrivals, arrivals[1:])] == [1.0, 1.0, 1.0]


def test_same_workload_gives_identical_timings_run_to_run(stellar_program, lab_fabric, lab_sim):
    from fabric_sim.simfabric import SimFabric
    from control_plane.inprocess import apply_document

    flows = [("l1g1", "l2g1", 30, 0.5), ("l1g2", "l2g2", 30, 0.5), ("l3g1", "l2g1", 30, 0.5)]
    _, first = _run(lab_sim, lab_fabric, flows)
    other = SimFabric(lab_fabric, queue_depth=1000)
    other.install_program(stellar_program)
    for name, doc in lab_sim.rendered.documents.items():
        apply_document(other.switch(name), doc)
    _, second = _run(other, lab_fabric, flows)
    assert first == second and len(first) == 90


L1_TO_L2 = [(f"l1g{i}", f"l2g{j}", 3, 1) for i in range(1, 5) for j in range(1, 5)]


def test_a_failed_link_loses_the_flows_hashed_onto_it_when_nobody_marks_it_down(lab_sim, lab_fabric):
    ends = lab_sim.fail_link("leaf1", "spine1")
    assert {(r.switch, r.port) for r in ends} == {("leaf1", 9), ("spine1", 1)}
    c, _ = _run(lab_sim, lab_fabric, L1_TO_L2)
    assert 0 < c.total("received") < c.total("sent")


def test_port_down_makes_the_leaf_avoid_the_failed_link_at_once(lab_sim, lab_fabric):
    lab_sim.fail_link("leaf1", "spine1")
    from control_plane import contract
    from control_plane.controller import InProcessOps

    InProcessOps(lab_sim.switch("leaf1")).modify_entries(contract.liveness_entries(9, down=True))
    c, _ = _run(lab_sim, lab_fabric, L1_TO_L2)
    assert c.total("received") == c.total("sent") == 48
