"""The pusher against `p4sim run` processes, started as simple_switch_grpc would be.

test_p4rt_push.py covers reconcile in depth on in-process servers; this checks the same path
end to end against separate switch processes (their own gRPC servers, device ids from the
fabric, the device config parsed by the target itself), for two switches of the lab fabric.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from control_plane.model import load_fabric
from control_plane.p4rt import P4RuntimePushError, ProgramFiles, SwitchSession, push_fabric
from control_plane.render import entry_identity, render_fabric
from testkit.p4sim_process import compile_program, start_p4sim

ROOT = Path(__file__).resolve().parents[2]
SWITCHES = ("spine1", "leaf1")


@pytest.fixture(scope="module")
def lab():
    return load_fabric(ROOT / "fabrics" / "lab.yaml")


@pytest.fixture(scope="module")
def switches(lab, tmp_path_factory):
    procs = {}
    try:
        for name in SWITCHES:
            where = tmp_path_factory.mktemp(name)
            procs[name] = start_p4sim(where, priority_queues=lab.dataplane.priority_queues,
                                      device_id=lab.switches[name].device_id)
        yield procs
    finally:
        for proc in procs.values():
            proc.stop()


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> ProgramFiles:
    out = tmp_path_factory.mktemp("build")
    json_path, info_path = compile_program(ROOT / "p4src" / "v1model" / "stellar.p4", out)
    return ProgramFiles.load(json_path, info_path)


def test_push_to_p4sim_processes_is_exact_and_idempotent(lab, switches, program):
    documents = render_fabric(lab).documents
    addresses = {name: proc.grpc_addr for name, proc in switches.items()}
    first = push_fabric(lab, documents, program, addresses, switches=list(SWITCHES), progress=None)
    assert first.ok, {n: r.error for n, r in first.results.items()}
    assert all(r.pipeline_pushed and r.diff.written == r.diff.total > 0 for r in first.results.values())
    for name in SWITCHES:
        with SwitchSession(addresses[name], lab.switches[name].device_id, name=name) as session:
            held = {entry_identity(e) for e in session.read_entries()}
            assert held == {entry_identity(e) for e in documents[name]["entries"] if not e.get("default_action")}
    second = push_fabric(lab, documents, program, addresses, switches=list(SWITCHES), progress=None)
    assert second.in_sync and second.written == 0
    assert not any(r.pipeline_pushed for r in second.results.values())


def test_wrong_device_id_is_named(lab, switches):
    session = SwitchSession(switches["leaf1"].grpc_addr, 77, name="leaf1", timeout=5.0)
    with pytest.raises(P4RuntimePushError, match="leaf1") as exc:
        session.connect()
    assert switches["leaf1"].grpc_addr in str(exc.value) and "NOT_FOUND" in str(exc.value)
