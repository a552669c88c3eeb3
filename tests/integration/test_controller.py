"""The controller loop on the lab fabric, through in-process SwitchOps."""
import pytest

from control_plane import contract
from control_plane.controller import PATH_SET_TABLE, Controller, InProcessOps


@pytest.fixture()
def controller(lab_sim, lab_fabric):
    ops = {name: InProcessOps(lab_sim.switch(name)) for name in lab_sim.devices}
    return Controller(lab_fabric, ops, lab_sim.rendered.plans, lab_sim.rendered.documents,
                      quantum_us=2, max_age_us=200, headroom=2.0)


def path_set_params(sim, switch, ps_id):
    for e in sim.switch(switch).table_entries(PATH_SET_TABLE):
        if e.match["meta.route.path_set_id"] == ps_id:
            return e.params
    raise AssertionError(f"no path set {ps_id} on {switch}")


def departures(switch, port, delay_us, packets=100):
    """`packets` more packets left `port` after `delay_us` of queueing (the egress histogram)."""
    index = port * len(contract.QDELAY_BUCKET_LOWER_US) + contract.qdelay_bucket(delay_us)
    have, nbytes = switch.counter_read(contract.QDELAY_HIST, index)
    switch.counter_write(contract.QDELAY_HIST, index, have + packets, nbytes + 1000 * packets)


def liveness(switch, port):
    """The actions of the port's entries in the eight member-position liveness tables."""
    found = [e.action.rsplit(".", 1)[1] for i, t in enumerate(contract.LIVENESS_TABLES)
             for e in switch.table_entries(t) if e.match == {f"meta.route.port{i}": port}]
    assert len(found) == 8, found
    return set(found)


class PIStrictOps(InProcessOps):
    """What simple_switch_grpc's P4Runtime (PI) allows: no register reads or writes at all."""

    def read_registers(self, names, indexes=None):
        raise RuntimeError("UNIMPLEMENTED: Register reads are not supported yet")

    def write_registers(self, cells):
        raise RuntimeError("UNIMPLEMENTED: register writes are refused")


def test_the_controller_works_with_what_bmv2_p4runtime_accepts(lab_sim, lab_fabric):
    # Congestion map and levels from counters, failover through table writes: nothing of it
    # needs a register, so a target that refuses register access (BMv2) runs it all.
    ops = {name: PIStrictOps(lab_sim.switch(name)) for name in lab_sim.devices}
    controller = Controller(lab_fabric, ops, lab_sim.rendered.plans, lab_sim.rendered.documents)
    departures(lab_sim.switch("spine1"), 2, 37)
    controller.step(now_us=10)
    assert controller.writes > 0
    controller.handle_link_failure("leaf1", "spine2", [("leaf1", 10), ("spine2", 1)])
    controller.mark_ports_down([("leaf1", 9)])
    assert liveness(lab_sim.switch("leaf1"), 10) == liveness(lab_sim.switch("leaf1"), 9) == {"port_down"}
    # negative control: the stand-in does refuse register access, as PI does
    with pytest.raises(RuntimeError, match="UNIMPLEMENTED"):
        ops["leaf1"].write_registers([("queue_qdelay_us", 0, 1)])


def leaf2_set_id(plan):
    return next(r.path_set for r in plan.routes if str(r.prefix) == "10.0.2.0/24")


def test_remote_queue_delay_becomes_the_level_of_the_member_through_that_spine(lab_sim, controller):
    # spine1's port towards leaf2 has a standing 37 µs queue: its packets leave after 37 µs,
    # counted in the [32, 48) µs bucket, whose upper edge is the reading.
    spine1 = lab_sim.switch("spine1")
    departures(spine1, 2, 37)
    controller.step(now_us=10)
    ps = leaf2_set_id(controller.plans["leaf1"])
    params = path_set_params(lab_sim, "leaf1", ps)
    levels = {params[f"port{i}"]: params[f"level{i}"] for i in range(params["count"])}
    assert levels == {9: 96, 10: 0}  # port 9 leads to spine1 (48 us x headroom 2), port 10 to spine2
    # leaf3 reaches leaf2 through the same spine port: it gets the same level
    p3 = path_set_params(lab_sim, "leaf3", leaf2_set_id(controller.plans["leaf3"]))
    assert {p3[f"port{i}"]: p3[f"level{i}"] for i in range(p3["count"])}[9] == 96


def test_unchanged_telemetry_writes_nothing_and_small_changes_stay_below_the_quantum(lab_sim, lab_fabric):
    ops = {name: InProcessOps(lab_sim.switch(name)) for name in lab_sim.devices}
    controller = Controller(lab_fabric, ops, lab_sim.rendered.plans, lab_sim.rendered.documents,
                            quantum_us=2, headroom=1.0)
    spine1 = lab_sim.switch("spine1")
    departures(spine1, 2, 37)
    controller.step(now_us=10)
    first = controller.writes
    assert first > 0
    departures(spine1, 2, 37)          # the same queue between two polls: nothing to write
    controller.step(now_us=20)
    assert controller.writes == first
    departures(spine1, 2, 45)          # 45 us: the same [32, 48) bucket, the same reading
    controller.step(now_us=30)
    assert controller.writes == first
    departures(spine1, 2, 50)          # 50 us: the next bucket (reading 64): written
    controller.step(now_us=40)
    assert controller.writes > first


def test_a_link_nothing_left_on_since_the_last_poll_is_idle(lab_sim, controller):
    spine1 = lab_sim.switch("spine1")
    departures(spine1, 2, 50)
    cmap = controller.poll(now_us=100)
    assert cmap.qdelay_us[("spine1", 2)] == 64
    cmap = controller.poll(now_us=1000)  # no departure since: idle, whatever the old readings
    assert cmap.qdelay_us[("spine1", 2)] == 0


def test_the_reading_is_the_90th_percentile_of_the_interval(lab_sim, controller):
    spine1 = lab_sim.switch("spine1")
    departures(spine1, 2, 0, packets=85)
    departures(spine1, 2, 100, packets=15)   # a tail above 10%: it sets the reading
    assert controller.poll(now_us=100).qdelay_us[("spine1", 2)] == 128
    departures(spine1, 2, 0, packets=95)
    departures(spine1, 2, 100, packets=5)    # 5% tail: below the quantile
    assert controller.poll(now_us=200).qdelay_us[("spine1", 2)] == 0


def test_link_failure_marks_ports_down_and_rewrites_only_affected_path_sets(lab_sim, controller, lab_fabric):
    before = {n: {e.match["meta.route.path_set_id"]: e.params
                  for e in lab_sim.switch(n).table_entries(PATH_SET_TABLE)} for n in lab_sim.devices}
    report = controller.handle_link_failure("leaf1", "spine2", [("leaf1", 10), ("spine2", 1)])
    assert liveness(lab_sim.switch("leaf1"), 10) == {"port_down"}
    assert liveness(lab_sim.switch("spine2"), 1) == {"port_down"}
    assert liveness(lab_sim.switch("leaf1"), 9) == {"port_up"}
    after = {n: {e.match["meta.route.path_set_id"]: e.params
                 for e in lab_sim.switch(n).table_entries(PATH_SET_TABLE)} for n in lab_sim.devices}
    changed = {(n, ps) for n in after for ps in after[n] if after[n][ps] != before[n][ps]}
    assert report.entries_written == len(changed) > 0
    # leaf1 now reaches every other leaf only through port 9 (spine1) ...
    for ps in (leaf2_set_id(controller.plans["leaf1"]),):
        p = after["leaf1"][ps]
        assert {p[f"port{i}"] for i in range(p["count"])} == {9}
    # ... and the other leaves stop sending leaf1's traffic through spine2.
    p = after["leaf2"][next(r.path_set for r in controller.plans["leaf2"].routes
                            if str(r.prefix) == "10.0.1.0/24")]
    assert {p[f"port{i}"] for i in range(p["count"])} == {9}
    # path sets not involving the failed link are untouched
    assert all(n in ("leaf1", "leaf2", "leaf3", "leaf4", "spine2") for n, _ in changed)


def _uplink_sets(controller, sim, leaf):
    return {r.path_set: path_set_params(sim, leaf, r.path_set) for r in controller.plans[leaf].routes
            if controller.plans[leaf].path_set(r.path_set).slots[0].via.startswith("spine")}


def test_the_first_reading_marks_members_measured_even_when_it_equals_the_rendered_level(lab_sim, controller):
    # Rendered: uplink members unmeasured (the data plane moves no flow off them), levels 0.
    before = _uplink_sets(controller, lab_sim, "leaf1")
    assert before and all(p["measured"] == 0 for p in before.values())
    controller.step(now_us=10)  # an idle fabric: every reading 0, i.e. the rendered levels
    after = _uplink_sets(controller, lab_sim, "leaf1")
    for ps, p in after.items():
        assert [p[f"level{i}"] for i in range(8)] == [before[ps][f"level{i}"] for i in range(8)] == [0] * 8
        assert p["measured"] == (1 << p["count"]) - 1, ps  # written anyway: the bits are new
    # Control: a second identical reading changes nothing, so nothing is written.
    written = controller.writes
    controller.step(now_us=20)
    assert controller.writes == written


def test_a_failover_repush_makes_the_changed_members_unmeasured_until_the_next_reading(lab_sim, controller):
    controller.step(now_us=10)
    controller.handle_link_failure("leaf1", "spine2", [("leaf1", 10), ("spine2", 1)])
    ps = leaf2_set_id(controller.plans["leaf1"])
    assert path_set_params(lab_sim, "leaf1", ps)["measured"] == 0  # members moved: levels unknown
    controller.step(now_us=20)
    params = path_set_params(lab_sim, "leaf1", ps)
    assert params["measured"] == (1 << params["count"]) - 1
