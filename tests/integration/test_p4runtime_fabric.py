"""The lab fabric configured and watched over real P4Runtime (in-process servers)."""
import io

import pytest

from control_plane import contract
from control_plane.controller import watch


@pytest.fixture()
def lab(lab_fabric, stellar_files):
    from fabric_sim.demo import Lab

    lab = Lab(lab_fabric, stellar_files, "stellar")
    yield lab
    lab.close()


def test_every_switch_holds_the_pushed_pipeline_and_entries(lab):
    assert lab.push.ok and lab.push.written > 0
    for name in lab.sim.devices:
        assert lab.sim.switch(name).table_entries("StellarIngress.routing.lpm")


def _departures(switch, port, delay_us, packets=100):
    """`packets` more packets left `port` after `delay_us` of queueing (the egress histogram,
    read over P4Runtime as counters)."""
    index = port * len(contract.QDELAY_BUCKET_LOWER_US) + contract.qdelay_bucket(delay_us)
    have, nbytes = switch.counter_read(contract.QDELAY_HIST, index)
    switch.counter_write(contract.QDELAY_HIST, index, have + packets, nbytes + 1000 * packets)


def test_watch_shows_the_busiest_link_first(lab):
    _departures(lab.sim.switch("spine1"), 3, 91)          # [64, 96) us bucket
    out = io.StringIO()
    watch(lab.fabric, lab.sessions, interval_s=0, count=1, out=out, top=3)
    rows = out.getvalue().splitlines()
    assert rows[2].split() == ["spine1:3", "->", "leaf3", "96", "us"]


def test_watch_treats_a_silent_port_as_idle(lab):
    # Two maps: the first sees the departures, the second (nothing left since) an idle link.
    _departures(lab.sim.switch("spine1"), 3, 91)
    out = io.StringIO()
    watch(lab.fabric, lab.sessions, interval_s=0, count=2, out=out, top=1)
    first, second = out.getvalue().split("congestion map")[1:]
    assert "96 us" in first and "96 us" not in second
