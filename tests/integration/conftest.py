"""Shared fixtures: the Stellar program compiled once, the lab fabric, rendered entries."""
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def stellar_program():
    import p4sim

    return p4sim.compile(str(ROOT / "p4src" / "v1model" / "stellar.p4"), include_dirs=[str(ROOT / "p4src")])


@pytest.fixture(scope="session")
def lab_fabric():
    """The lab fabric without job reservations: every flow uses its leaf's routing path set
    (reservations pin jobs to spines, which is tested by the control-plane suite)."""
    from dataclasses import replace

    from control_plane.model import load_fabric

    fabric = load_fabric(ROOT / "fabrics" / "lab.yaml")
    return replace(fabric, dataplane=replace(fabric.dataplane, reservations=False))


@pytest.fixture()
def lab_sim(stellar_program, lab_fabric):
    """The lab fabric on one virtual clock, entries applied in-process."""
    from fabric_sim.simfabric import SimFabric
    from control_plane.inprocess import apply_document
    from control_plane.render import render_fabric

    sim = SimFabric(lab_fabric, queue_depth=1000)
    sim.install_program(stellar_program)
    rendered = render_fabric(lab_fabric)
    for name, doc in rendered.documents.items():
        apply_document(sim.switch(name), doc)
    sim.rendered = rendered
    yield sim
    sim.stop()


@pytest.fixture(scope="session")
def stellar_files(tmp_path_factory):
    """stellar.p4 compiled by `p4sim compile` into (device config, P4Info) files."""
    from fabric_sim.demo import build_program

    return build_program(tmp_path_factory.mktemp("stellar"))


@pytest.fixture(scope="session")
def lab_fabric_full():
    """The lab fabric exactly as the YAML says (the demo derives its modes from it)."""
    from control_plane.model import load_fabric

    return load_fabric(ROOT / "fabrics" / "lab.yaml")
