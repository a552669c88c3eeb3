"""The lab fabric configured and watched over real P4Runtime (in-process servers)."""
import io

import pytest

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


def test_watch_shows_the_busiest_link_first(lab):
    spine1 = lab.sim.switch("spine1")
    spine1.register_write("port_qdelay_us", 3, 91)
    spine1.register_write("port_qdelay_stamp", 3, 5000)
    out = io.StringIO()
    watch(lab.fabric, lab.sessions, interval_s=0, count=1, out=out, top=3)
    rows = out.getvalue().splitlines()
    assert rows[2].split() == ["spine1:3", "->", "leaf3", "91", "us"]


def test_watch_treats_a_silent_port_as_idle(lab):
    spine1 = lab.sim.switch("spine1")
    spine1.register_write("port_qdelay_us", 3, 91)
    spine1.register_write("port_qdelay_stamp", 3, 100)
    spine1.register_write("port_qdelay_stamp", 1, 5000)  # another port departed much later
    out = io.StringIO()
    watch(lab.fabric, lab.sessions, interval_s=0, count=1, out=out, top=1)
    assert "91 us" not in out.getvalue()
