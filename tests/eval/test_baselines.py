"""Each baseline of ``p4src/baselines/lb.p4`` against its defining behaviour, with a negative
control, on one p4sim switch (a leaf: hosts behind ports 1-2, uplinks 9 and 10 to a remote leaf's
subnet) and, for WCMP's path weights, on the lab's control-plane model.  The program must also be
valid for real p4c (checked where p4c-bm2-ss is installed)."""
from __future__ import annotations

import ipaddress
import shutil
import subprocess
from pathlib import Path

import pytest

import p4sim
from fabric_sim import baselines as B
from fabric_sim.rdma import OP_WRITE_ONLY, build_frame
from fabric_sim.experiment import LB_P4, ROOT

UP_A, UP_B = 9, 10
HOST_PORT = 1
LOCAL, REMOTE = "10.0.1.0/24", "10.0.2.0/24"
ETH_CONGA = 0x88B5
_prog = {}


def _program():
    if "lb" not in _prog:
        _prog["lb"] = p4sim.compile(str(LB_P4), include_dirs=[str(ROOT / "p4src")])
    return _prog["lb"]


def leaf(mode: int, timeout_us: int = 100, leaf_id: int = 1, scales=(65536, 65536)) -> p4sim.Switch:
    """A leaf running ``mode`` with one group of the two uplinks towards leaf 2's subnet; ports
    serve 1000 packets/s so queues build as the test sends."""
    sw = p4sim.Switch(_program(), priority_queues=8)
    sw.set_queue_rate(1000)
    sw.set_default_action("LbIngress.lb_config", "LbIngress.configure", {
        "kmin": 1000, "kmax": 2000, "pmax256": 0, "em_threshold": 0, "em_window_us": 500,
        "dre_shift": B.DRE_SHIFT, "leaf_id": leaf_id})
    sw.insert_entry("LbIngress.route", {"hdr.ipv4.dst_addr": ("10.0.2.0", 24)}, "LbIngress.to_group", {"group": 1})
    sw.insert_entry("LbIngress.route", {"hdr.ipv4.dst_addr": ("10.0.1.0", 24)}, "LbIngress.to_port",
                    {"port": HOST_PORT})
    sw.insert_entry("LbIngress.route", {"hdr.ipv4.dst_addr": ("10.0.9.9", 32)}, "LbIngress.to_port", {"port": UP_A})
    sw.insert_entry("LbIngress.group", {"meta.group": 1}, "LbIngress.set_group", {
        "mode": mode, "count": 2, "salt": 1, "timeout_us": timeout_us, "dst_leaf": 2,
        "p0": UP_A, "p1": UP_B, "p2": 0, "p3": 0, "s0": scales[0], "s1": scales[1], "s2": 0, "s3": 0})
    for slot, port in enumerate((UP_A, UP_B)):
        sw.insert_entry("LbIngress.member", {"meta.group": 1, "meta.slot": slot}, "LbIngress.set_member",
                        {"port": port})
    return sw


def frame(sport: int, dst: str = "10.0.2.5", src: str = "10.0.1.5", psn: int = 0) -> bytes:
    return build_frame(b"\x02" * 6, b"\x04" * 6, int(ipaddress.IPv4Address(src)), int(ipaddress.IPv4Address(dst)),
                       sport, 0x100, psn, OP_WRITE_ONLY, bytes(4096), 2, 26, psn << 1)


def ports_of(sw, sport: int, n: int = 1, in_port: int = HOST_PORT, gap_us: float = 0.0, **kw) -> list[int]:
    """Send ``n`` packets of one flow; the uplink each went to (queued, or sent at once by an
    idle port)."""
    out = []
    for psn in range(n):
        sw.take_output()
        before = {p: sw.queue_occupancy(p) for p in (UP_A, UP_B)}
        sw.send(in_port, frame(sport, psn=psn, **kw))
        after = {p: sw.queue_occupancy(p) for p in (UP_A, UP_B)}
        out += [p for p in (UP_A, UP_B) if after[p] > before[p]]
        out += [p for p, _ in sw.take_output() if p in (UP_A, UP_B)]
        if gap_us:
            sw.advance(gap_us)
    return out


def hashed_to(port: int, avoid: tuple = ()) -> int:
    """A UDP source port whose ECMP hash picks ``port`` (so a negative control is meaningful)."""
    for sport in range(49152, 49500):
        if sport not in avoid and ports_of(leaf(B.MODE_ECMP), sport) == [port]:
            return sport
    raise AssertionError("no such flow")


def fill(sw, port: int, n: int) -> None:
    """Queue ``n`` packets on ``port`` (a host route pinned to it: no load-balancing choice)."""
    for i in range(n):
        sw.send(HOST_PORT, frame(40000 + i, dst="10.0.9.9"))
    assert sw.queue_occupancy(port) == n - 1  # the first left at once


def test_drill_sends_each_packet_to_the_shorter_queue_and_ecmp_does_not():
    sport = hashed_to(UP_A)
    drill = leaf(B.MODE_DRILL)
    fill(drill, UP_A, 20)
    assert ports_of(drill, sport, 8) == [UP_B] * 8  # A holds 20 packets; B fills to 8 < 20
    ecmp = leaf(B.MODE_ECMP)
    fill(ecmp, UP_A, 20)
    assert ports_of(ecmp, sport, 8) == [UP_A] * 8  # negative control: the hash ignores queues
    # per packet: with equal queues DRILL spreads one flow's packets over both uplinks
    even = leaf(B.MODE_DRILL)
    assert set(ports_of(even, sport, 16)) == {UP_A, UP_B}


def test_least_loaded_places_a_new_flow_away_from_the_loaded_uplink_and_keeps_it_there():
    a = hashed_to(UP_A)
    b = hashed_to(UP_A, avoid=(a,))  # ECMP puts both flows on A
    least = leaf(B.MODE_LEAST)
    assert ports_of(least, a, 10) == [UP_A] * 10  # tie at start: its hash member
    assert ports_of(least, b, 1) == [UP_B]  # A carries 10 packets of load: B goes to the other
    least.advance(20_000)  # loads decay; B is placed and does not move
    assert ports_of(least, b, 5) == [UP_B] * 5
    ecmp = leaf(B.MODE_ECMP)
    ports_of(ecmp, a, 10)
    assert ports_of(ecmp, b, 1) == [UP_A]  # negative control: hashing collides


def test_least_loaded_weighs_load_by_the_path_capacity():
    a = hashed_to(UP_A)
    b = hashed_to(UP_B)
    # uplink A's path runs at 40%: scale 2.5x.  A flow of 10 packets on B looks lighter than
    # 5 on A would; with equal scales (negative control) 5 on A is the lighter one.
    for scales, expected in (((163840, 65536), UP_B), ((65536, 65536), UP_A)):
        sw = leaf(B.MODE_LEAST, scales=scales)
        ports_of(sw, a, 5)
        ports_of(sw, b, 6)
        c = hashed_to(UP_B, avoid=(a, b))
        assert ports_of(sw, c, 1) == [expected], scales


def shimmed(f: bytes, src_leaf: int, path: int, ce: int, fb_path: int = 0, fb_metric: int = 0) -> bytes:
    """``f`` with a CONGA shim after its Ethernet header."""
    shim = bytes([src_leaf, path, ce, fb_path, fb_metric, 0]) + f[12:14]
    return f[:12] + ETH_CONGA.to_bytes(2, "big") + shim + f[14:]


def _conga_from_leaf2(fb_path: int, fb_metric: int, sport: int = 50000) -> bytes:
    """A packet from leaf 2 to a host here, with leaf 2's shim carrying feedback on our path
    ``fb_path`` towards it."""
    return shimmed(frame(sport, dst="10.0.1.7", src="10.0.2.7"), 2, 0, 17, fb_path, fb_metric)


def test_conga_moves_new_flowlets_off_a_path_the_remote_leaf_reports_congested():
    sport = hashed_to(UP_A)
    sw = leaf(B.MODE_CONGA)
    sw.send(UP_B, _conga_from_leaf2(fb_path=0, fb_metric=200))
    sw.advance(10_000)
    (port, out), = sw.take_output()
    assert port == HOST_PORT and out[12:14] == b"\x08\x00"  # the shim is stripped before the host
    assert len(out) == len(_conga_from_leaf2(0, 200)) - 8
    sw.send(HOST_PORT, frame(sport))
    (port, sent), = sw.take_output()
    assert port == UP_B  # path 0 (uplink A) is congested towards leaf 2
    assert int.from_bytes(sent[12:14], "big") == ETH_CONGA and len(sent) == len(frame(sport)) + 8
    assert sent[14] == 1 and sent[15] == 1  # the shim: source leaf 1, path 1
    # negative control: no feedback -> the same flow stays on its hash member
    assert ports_of(leaf(B.MODE_CONGA), sport, 1) == [UP_A]


def test_conga_keeps_a_flow_within_its_flowlet_and_reroutes_at_a_gap():
    sport = hashed_to(UP_A)
    sw = leaf(B.MODE_CONGA, timeout_us=100)
    assert ports_of(sw, sport, 3, gap_us=10) == [UP_A] * 3
    sw.send(UP_B, _conga_from_leaf2(fb_path=0, fb_metric=200))
    assert ports_of(sw, sport, 2, gap_us=10) == [UP_A] * 2  # mid-flowlet: no move
    sw.advance(500)
    assert ports_of(sw, sport, 1) == [UP_B]  # after the gap: the uncongested path
    assert sw.counter_read("LbIngress.flowlet_moves", 0)[0] == 1


def test_every_mode_sends_acks_and_cnps_ahead_of_queued_data():
    from fabric_sim.rdma import OP_ACK, OP_CNP

    for mode in (B.MODE_ECMP, B.MODE_DRILL, B.MODE_CONGA):
        sw = leaf(mode)
        sport = hashed_to(UP_A)
        ports_of(sw, sport, 6)  # data queued on the uplinks (the first leaves at once)
        for op in (OP_ACK, OP_CNP):
            sw.send(HOST_PORT, build_frame(b"\x02" * 6, b"\x04" * 6, 0x0A000105, 0x0A000205, sport, 7, 0, op,
                                           bytes(16), 0, 48, 0))
        ports_of(sw, sport, 1)  # negative control: data sent after them stays behind the queue
        sw.advance(20_000)
        opcodes = [o[50 if o[12:14] == ETH_CONGA.to_bytes(2, "big") else 42]  # after the shim, if any
                   for p, o in sw.take_output() if p in (UP_A, UP_B)]
        assert sorted(opcodes[:2]) == sorted((OP_ACK, OP_CNP)), (mode, opcodes)
        assert len(opcodes) > 4 and set(opcodes[2:]) == {OP_WRITE_ONLY}


def test_wcmp_weighs_by_the_whole_paths_capacity_where_local_weights_see_nothing():
    from control_plane.model import load_fabric
    from fabric_sim.experiment import FABRICS

    fabric = load_fabric(FABRICS["lab"])
    spine1 = {(a, p.number) for a in ("leaf1", "spine1") for p in fabric.switches[a].ports.values()
              if p.peer_switch in ("leaf1", "spine1")}
    cap = {k: 40.0 for k in spine1}  # the leaf1-spine1 link at 40%, both ends
    bf = B.BaselineFabric(None, fabric, B.baseline("wcmp"), 1, cap)
    members = bf._members("leaf2", "leaf1")  # leaf2's own uplinks are both healthy
    path = B._slots([(p, c) for p, _, c in members], weighted=True)
    local = B._slots([(p, c) for p, c, _ in members], weighted=True)
    via1 = next(p for p, _, _ in members if fabric.switches["leaf2"].ports[p].peer_switch == "spine1")
    assert path.count(via1) < 0.5 * (len(path) - path.count(via1))
    assert local.count(via1) == len(local) - local.count(via1)  # negative control: local ports only


@pytest.mark.skipif(shutil.which("p4c-bm2-ss") is None, reason="p4c-bm2-ss (real p4c) is not installed here")
def test_real_p4c_compiles_the_baselines(tmp_path: Path):
    proc = subprocess.run(["p4c-bm2-ss", "--arch", "v1model", "-I", str(ROOT / "p4src"), "-o",
                           str(tmp_path / "lb.json"), str(LB_P4)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr


def test_conga_hops_raise_the_congestion_field_to_their_port_load():
    spine = leaf(B.MODE_CONGA, leaf_id=0)
    to_remote = shimmed(frame(50007), src_leaf=1, path=0, ce=0)  # leaf 1 -> leaf 2's subnet
    for _ in range(12):
        spine.send(UP_A, to_remote)  # back to back: one flowlet, one port
    spine.advance(20_000)
    ces = [out[16] for port, out in spine.take_output() if port in (UP_A, UP_B)]
    assert len(ces) == 12
    assert ces[0] == 0  # negative control: an idle port leaves CE as the packet brought it
    assert ces[-1] > 0 and ces == sorted(ces)  # the load builds up, and CE with it


def wide_leaf(mode: int, n: int) -> p4sim.Switch:
    """``leaf`` with its group rewritten to ``n`` uplinks, ports 9..8+n, entries as the study
    writes them (``set_group8`` past 4 members)."""
    sw = leaf(mode)
    params = {"mode": mode, "count": n, "salt": 1, "timeout_us": 100, "dst_leaf": 2,
              **B._adaptive_params([(UP_A + i, 100.0, 100.0) for i in range(n)], mode)}
    sw.modify_entry("LbIngress.group", {"meta.group": 1}, B.group_action(params), params)
    return sw


def test_adaptive_groups_take_eight_members_and_choose_past_the_fourth():
    """ConWeave's fabric gives a leaf 8 uplinks: CONGA must see all 8 paths, DRILL spray over
    all 8.  Negative control: a 4-member entry never reaches a member past the fourth, whatever
    the feedback, and more than 8 members are refused."""
    uplinks = range(UP_A, UP_A + 8)
    for n, expected in ((8, {UP_A + 7}), (4, set(range(UP_A, UP_A + 4)))):
        sw = wide_leaf(B.MODE_CONGA, n)
        for path in range(7):  # leaf 2 reports every path but the last congested
            sw.send(UP_B, _conga_from_leaf2(fb_path=path, fb_metric=200, sport=50000 + path))
        sw.advance(10_000)
        sw.take_output()
        chosen = set()
        for sport in range(49152, 49160):
            sw.send(HOST_PORT, frame(sport))
            sw.advance(10_000)
            chosen |= {(p, out[15]) for p, out in sw.take_output() if p in uplinks}
        assert {p for p, _ in chosen} <= expected and len(chosen) >= 1, (n, chosen)
        assert all(path == p - UP_A for p, path in chosen)  # the shim names the member index
    for n, expected in ((8, set(uplinks)), (4, set(range(UP_A, UP_A + 4)))):
        sw = wide_leaf(B.MODE_DRILL, n)
        for psn in range(64):
            sw.send(HOST_PORT, frame(49152, psn=psn))
        sw.advance(1_000_000)
        assert {p for p, _ in sw.take_output()} == expected, n
    assert B.group_action(B._adaptive_params([(9, 100.0, 100.0)] * 4, B.MODE_CONGA)) == "LbIngress.set_group"
    with pytest.raises(ValueError, match="at most 8 members, got 9"):
        B._adaptive_params([(9, 100.0, 100.0)] * 9, B.MODE_DRILL)
