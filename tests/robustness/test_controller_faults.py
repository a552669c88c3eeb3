"""Controller faults on the lab fabric over real P4Runtime (a p4sim server per switch): a switch
restarting mid-push, a Write that gets no answer in time, link flaps faster than the controller
looks, and the controller's own restart.  After each, ``Controller.resync`` reconciles, and
every switch is read back (a fresh read-only session) and compared with the rendered state for
the topology as it then is: no missing entry, no stale path set, no extra anything."""
from __future__ import annotations

import json
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from control_plane import contract, p4rt
from control_plane.controller import Controller
from control_plane.model import load_fabric
from control_plane.ops import fabric_without_link, find_link
from control_plane.p4rt import ProgramFiles, SwitchSession, compute_diff
from control_plane.render import render_fabric

ROOT = Path(__file__).resolve().parents[2]
PATH_SET = "StellarIngress.routing.path_set"


@pytest.fixture(scope="module")
def program_files(tmp_path_factory):
    from fabric_sim.demo import build_program

    return build_program(tmp_path_factory.mktemp("stellar"))


@pytest.fixture()
def lab(program_files):
    from fabric_sim.demo import Lab

    fabric = load_fabric(ROOT / "fabrics" / "lab.yaml")
    fabric = replace(fabric, dataplane=replace(fabric.dataplane, reservations=False))
    lab = Lab(fabric, program_files, "stellar")
    lab.program = ProgramFiles.load(*program_files)
    yield lab
    lab.close()


def target(fabric, down_links=()):
    """The rendered state with ``down_links`` failed: documents for the fabric without them, with
    their ports' liveness entries MODIFYed to port_down (what a reconcile must leave on the
    switches), and no meters (the demo's Lab pushes none)."""
    after = fabric
    for link in down_links:
        after = fabric_without_link(after, link)
    rendered = render_fabric(after)
    docs = {}
    for name, doc in rendered.documents.items():
        key = lambda e: (e["table"], json.dumps(e.get("match", {}), sort_keys=True))  # noqa: E731
        down = {key(e): e
                for link in down_links for sw, port in ((link.leaf, link.leaf_port), (link.spine, link.spine_port))
                if sw == name for e in contract.liveness_entries(port, down=True)}
        entries = [dict(e, action=down[key(e)]["action"]) if key(e) in down else e for e in doc["entries"]]
        docs[name] = {**doc, "entries": entries, "meters": []}
    return after, rendered.plans, docs


def read_back(lab, docs) -> dict[str, list[str]]:
    """Every switch's differences from its document, read over a new read-only session."""
    out = {}
    for name, addr in lab.addresses.items():
        with SwitchSession(addr, lab.fabric.switches[name].device_id, lab.program.p4info,
                           name=name).connect(read_only=True) as s:
            state = s.read_state(docs[name])
            diff = compute_diff(name, docs[name], state)
            lines = diff.lines()
            have = sorted(e["match"]["meta.route.path_set_id"] for e in state.entries.values() if e["table"] == PATH_SET)
            want = sorted(e["match"]["meta.route.path_set_id"] for e in docs[name]["entries"]
                          if e["table"] == PATH_SET and not e.get("default_action"))
            if have != want:
                lines.append(f"path sets {have} != rendered {want}")
            if lines:
                out[name] = lines
    return out


def restart_switch(lab, name: str) -> None:
    """Power-cycle one switch: its P4Runtime server goes away and comes back on the same port
    with no pipeline, no entries and no primary."""
    from p4sim.p4rt.server import P4RuntimeServer

    server = lab.sim.servers[name]
    port = server.port
    server.stop(0)
    dev = lab.sim.devices[name]
    with dev.lock:
        dev.switch = None
    new = P4RuntimeServer(dev, f"127.0.0.1:{port}")
    new.start()
    lab.sim.servers[name] = new


def test_read_back_sees_a_stale_path_set(lab):
    """Negative control for every test below: a path set the document lacks is reported."""
    _, _, docs = target(lab.fabric)
    assert read_back(lab, docs) == {}
    lab.sim.switch("leaf1").insert_entry(PATH_SET, {"meta.route.path_set_id": 77},
                                         "StellarIngress.routing.set_members",
                                         {"count": 1, "ecmp": 0, **{f"port{i}": 0 for i in range(8)},
                                          **{f"level{i}": 0 for i in range(8)}, "measured": 0})
    problems = read_back(lab, docs)
    assert list(problems) == ["leaf1"] and any("77" in line for line in problems["leaf1"])


def test_switch_restart_mid_push(lab):
    """leaf2 restarts in the middle of a failover Write (after its first update); the resync
    pushes its pipeline again and converges every switch."""
    link = find_link(lab.fabric, "leaf1", "spine1")
    after, plans, docs = target(lab.fabric, [link])
    service = lab.sim.servers["leaf2"].service
    real_apply = service._apply_or_raise
    restarter: list[threading.Thread] = []

    def apply_then_restart(pipe, update):
        real_apply(pipe, update)
        if not restarter:
            restarter.append(threading.Thread(target=restart_switch, args=(lab, "leaf2")))
            restarter[0].start()

    service._apply_or_raise = apply_then_restart  # looked up per update by Write
    try:
        lab.controller.handle_link_failure("leaf1", "spine1", [(link.leaf, link.leaf_port),
                                                                (link.spine, link.spine_port)])
    except p4rt.P4RuntimePushError:
        pass  # the restarting switch may fail the Write; the resync is what repairs it
    restarter[0].join(timeout=30)
    assert lab.sim.devices["leaf2"].switch is None  # it did restart: empty
    push = lab.controller.resync(docs, lab.program, lab.addresses, fabric=after, plans=plans)
    assert push.ok, {n: r.error for n, r in push.results.items() if r.error}
    assert push.results["leaf2"].pipeline_pushed
    assert read_back(lab, docs) == {}
    # and the controller's sessions work again: a second resync writes nothing
    again = lab.controller.resync(docs, lab.program, lab.addresses)
    assert again.ok and again.written == 0


def test_a_write_without_answer_times_out_and_resync_repairs_the_late_write(lab, monkeypatch):
    """leaf2 stalls one Write past the client's deadline (then applies it late); the push names
    leaf2 and finishes the others; the resync converges leaf2 to the rendered state."""
    monkeypatch.setattr(p4rt.session, "RPC_TIMEOUT_S", 3.0)  # read by every session call
    link = find_link(lab.fabric, "leaf2", "spine2")
    after, plans, docs = target(lab.fabric, [link])
    service = lab.sim.servers["leaf2"].service
    real_apply = service._apply_or_raise
    release, finished = threading.Event(), threading.Event()

    def stalled(pipe, update):
        if not release.is_set():
            release.wait(timeout=30)
            try:
                return real_apply(pipe, update)
            finally:
                finished.set()
        return real_apply(pipe, update)

    service._apply_or_raise = stalled
    push = p4rt.push_fabric(after, docs, None, lab.addresses, progress=None, election_id=(0, 2),
                            sessions={n: s for n, s in lab.sessions.items()})
    assert not push.results["leaf2"].ok and "no answer" in push.results["leaf2"].error
    assert all(r.ok for n, r in push.results.items() if n != "leaf2")
    release.set()
    assert finished.wait(timeout=30)
    push = lab.controller.resync(docs, lab.program, lab.addresses, fabric=after, plans=plans)
    assert push.ok, {n: r.error for n, r in push.results.items() if r.error}
    assert read_back(lab, docs) == {}


def flap(lab, sw: str, port: int, up: int) -> None:
    """The switch's own port-status handling (in-process, not the controller): its liveness
    entries for ``port`` to port_up/port_down, inserted where the controller has removed them."""
    from p4sim.errors import RuntimeApiError

    switch = lab.sim.switch(sw)
    for e in contract.liveness_entries(port, down=not up):
        try:
            switch.modify_entry(e["table"], e["match"], e["action"], {})
        except RuntimeApiError:
            switch.insert_entry(e["table"], e["match"], e["action"], {})


def test_link_flaps_faster_than_the_controller_polls(lab):
    """The switches' port-status handling marks a port down and up several times (liveness
    entries) between two looks of the controller; the controller reacts to the first loss (incremental delta), then reconciles to
    whatever the link is when it next looks: down, and later up again."""
    link = find_link(lab.fabric, "leaf3", "spine1")
    ends = [(link.leaf, link.leaf_port), (link.spine, link.spine_port)]
    lab.controller.handle_link_failure("leaf3", "spine1", ends)
    for up in (1, 0, 1, 0, 1, 0):  # flaps the controller does not see one by one
        for sw, port in ends:
            flap(lab, sw, port, up)
    after, plans, docs = target(lab.fabric, [link])  # it looks: the link is down
    push = lab.controller.resync(docs, lab.program, lab.addresses, fabric=after, plans=plans)
    assert push.ok and read_back(lab, docs) == {}
    for up in (1, 0, 1):  # ... flaps again and stays up
        for sw, port in ends:
            flap(lab, sw, port, up)
    full = load_fabric(ROOT / "fabrics" / "lab.yaml")
    full = replace(full, dataplane=lab.fabric.dataplane)
    restored, plans, docs = target(full)
    push = lab.controller.resync(docs, lab.program, lab.addresses, fabric=restored, plans=plans)
    assert push.ok, {n: r.error for n, r in push.results.items() if r.error}
    assert read_back(lab, docs) == {}  # the failover's path sets are gone, the full ones back
    assert lab.controller.fabric.link("leaf3", "spine1") or lab.controller.fabric.link("spine1", "leaf3")


def test_controller_restart_converges_and_removes_drift(lab):
    """The controller dies mid-failover (sessions gone without a goodbye); while it is down a
    stale path set appears on leaf4 and a route is changed on spine1.  The new controller (a
    higher election id) reconciles every switch to the rendered state; a second pass writes
    nothing."""
    link = find_link(lab.fabric, "leaf4", "spine2")
    after, plans, docs = target(lab.fabric, [link])
    # die after marking the ports down, before the path sets are re-pushed
    for sw, port in ((link.leaf, link.leaf_port), (link.spine, link.spine_port)):
        lab.sessions[sw].modify_entries(contract.liveness_entries(port, down=True))
    for s in lab.sessions.values():  # the old controller's channels drop, no stream half-close
        if s.client.channel is not None:
            p4rt.EventLoop.run(s.client.channel.close(None), 10)
    lab.sim.switch("leaf4").insert_entry(PATH_SET, {"meta.route.path_set_id": 99},
                                         "StellarIngress.routing.set_members",
                                         {"count": 1, "ecmp": 0, **{f"port{i}": 0 for i in range(8)},
                                          **{f"level{i}": 0 for i in range(8)}, "measured": 0})
    sessions = {name: SwitchSession(addr, lab.fabric.switches[name].device_id, lab.program.p4info,
                                    election_id=(0, 3), name=name).connect()
                for name, addr in lab.addresses.items()}
    try:
        fresh = Controller(after, sessions, plans, docs)
        push = fresh.resync(docs, lab.program, lab.addresses)
        assert push.ok, {n: r.error for n, r in push.results.items() if r.error}
        assert read_back(lab, docs) == {}
        assert fresh.resync(docs, lab.program, lab.addresses).written == 0
    finally:
        for s in sessions.values():
            s.close()
