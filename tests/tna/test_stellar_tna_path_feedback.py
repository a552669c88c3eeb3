"""Stellar on Tofino: path feedback between leaves (p4src/tna/include/control/path_feedback.p4),
on the lab fabric rendered for the TNA program: leaf1, spine1, spine2 and leaf2 as p4sim TNA
switches, packets carried along the fabric's links by the test.

Leaf1 tags a packet for leaf2 with the 0x88B5 shim (its leaf id, the uplink's index as the path,
the congestion field); the spine raises the field to its egress queue delay; leaf2 stores it per
(leaf1, path) and strips the shim, so the host receives the same bytes as without feedback.
Traffic leaf2 sends back returns the stored entry; leaf1 strips it and hands it to path choice as
a feedback copy: a congested spine downlink that leaf1 cannot see makes its uplink lose "best"
(path_choice.group_best) without the controller.  Negative controls: feedback off, no shim and
the congested path stays best.  A path whose traffic goes unanswered (spine1's link to leaf2
cut: a remote failure) turns silent after suspect_silence_us and its flows leave it without the
controller; with silence detection off they stay on the dead path.  A path to a leaf that sends
nothing back (one-way traffic) is never silent: nothing could carry an answer.  After the suspect
hold a silent path is probed again (a new unanswered period).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

p4sim = pytest.importorskip("p4sim")
from scapy.all import IP, UDP, Ether, Raw, raw  # noqa: E402
from scapy.contrib.roce import BTH  # noqa: E402

from control_plane import feedback  # noqa: E402
from control_plane.inprocess import apply_document  # noqa: E402
from control_plane.model import load_fabric  # noqa: E402
from control_plane.render import render_fabric  # noqa: E402
from tna_leaf import program as tna_program  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FB_PARAMS = "pipe.StellarEgress.path_feedback.params"
FB_ACTION = "StellarEgress.path_feedback.set_params"
LEAF_PARAMS, LEAF_ACTION = "pipe.StellarIngress.params", "StellarIngress.set_params"
GROUP_BEST = "pipe.StellarIngress.path_choice.group_best"
SHIMS = "pipe.StellarEgress.path_feedback.shims"
RETURNS = "pipe.StellarEgress.path_feedback.returns"
FROM_LEAF = "pipe.StellarEgress.path_feedback.from_leaf"
ETHERTYPE_FB = 0x88B5
H1, H2 = "10.0.1.1", "10.0.2.1"     # a host of leaf1 and one of leaf2
NAMES = ("leaf1", "spine1", "spine2", "leaf2")


@pytest.fixture(scope="module")
def fabric():
    """The lab without job reservations: leaf1's remote leaves share group 1 = {port 9 via
    spine1, port 10 via spine2}."""
    lab = load_fabric(str(ROOT / "fabrics" / "lab.yaml"))
    return replace(lab, dataplane=replace(lab.dataplane, reservations=False))


def lab(fabric, feedback_on: bool = True, prog: p4sim.Program | None = None) -> dict[str, p4sim.Switch]:
    """``prog``: another build of the program (a negative control's variant) instead."""
    rendered = render_fabric(fabric, arch="tna")
    switches = {}
    for name in NAMES:
        sw = p4sim.Switch(prog or tna_program(1), priority_queues=8)
        apply_document(sw, rendered.documents[name])
        sw.enable_pktgen_port_down(1)    # a switch sees its own ports go down
        if not feedback_on:
            entry = next(e for e in rendered.documents[name]["entries"] if e["table"] == FB_PARAMS)
            sw.set_default_action(FB_PARAMS, FB_ACTION, dict(entry["params"], on=0))
        switches[name] = sw
    return switches


def roce(src: str, dst: str, qp: int, psn: int = 0) -> bytes:
    return raw(Ether() / IP(src=src, dst=dst, tos=(26 << 2) | 2) / UDP(sport=49152, dport=4791)
               / BTH(opcode=4, dqpn=qp, psn=psn) / Raw(b"\x00" * 256))


def out_of(sw: p4sim.Switch, port: int, pkts: list[bytes], settle_us: float = 200) -> list[tuple[int, bytes]]:
    for pkt in pkts:
        sw.send(port, pkt)
    sw.advance(settle_us)
    return sw.take_output()


def carry(fabric, switches, name: str, port: int, pkts: list[bytes],
          settle_us: float = 200) -> list[tuple[str, int, bytes]]:
    """Send ``pkts`` into ``name``'s ``port`` and follow every copy along the fabric's links
    (each switch given ``settle_us`` of its own clock); returns (switch, host port, frame) where
    they left towards a host."""
    delivered = []
    by_port: dict[int, list[bytes]] = {}
    for out_port, frame in out_of(switches[name], port, pkts, settle_us):
        by_port.setdefault(out_port, []).append(frame)
    for out_port, frames in by_port.items():
        link = fabric.switches[name].ports[out_port]
        if link.peer_switch is None:
            delivered += [(name, out_port, f) for f in frames]
        else:
            delivered += carry(fabric, switches, link.peer_switch, link.peer_port, frames, settle_us)
    return delivered


def unshim(frame: bytes) -> Ether:
    """The frame as the host would see it: the 8-byte shim removed, its EtherType put back."""
    if frame[12:14] == ETHERTYPE_FB.to_bytes(2, "big"):
        frame = frame[:12] + frame[14:16] + frame[22:]
    return Ether(frame)


def uplink_of(fabric, leaf: str, spine: str) -> int:
    return next(p.number for p in fabric.switches[leaf].ports.values() if p.peer_switch == spine)


def test_the_source_leaf_tags_and_the_destination_leaf_strips_to_the_same_bytes(fabric):
    on, off = lab(fabric), lab(fabric, feedback_on=False)
    qp = 7
    (up, tagged), = out_of(on["leaf1"], 1, [roce(H1, H2, qp)])
    frame = Ether(tagged)
    assert frame.type == ETHERTYPE_FB
    shim = bytes(frame.payload)[:8]
    assert int.from_bytes(shim[:2], "big") == 0x0800                      # the displaced EtherType
    assert shim[2] == feedback.leaf_ids(fabric)["leaf1"]                  # source leaf
    assert shim[3] >> 5 == [p.number for p in fabric.switches["leaf1"].uplinks].index(up)   # path
    # negative control: feedback off, the same packet leaves untagged
    (_, plain), = out_of(off["leaf1"], 1, [roce(H1, H2, qp)])
    assert Ether(plain).type == 0x0800
    # end to end: the host behind leaf2 receives the same bytes either way
    with_fb = carry(fabric, lab(fabric), "leaf1", 1, [roce(H1, H2, qp)])
    without = carry(fabric, off, "leaf1", 1, [roce(H1, H2, qp)])
    assert len(with_fb) == 1 and [(n, p) for n, p, _ in with_fb] == [(n, p) for n, p, _ in without]
    assert with_fb[0][2] == without[0][2] and Ether(with_fb[0][2]).type == 0x0800


def _congested_spine1_then_reverse(fabric, feedback_on: bool, spine1_reports_first: bool = False,
                                   answers: int = 4, **leaf1_feedback: int):
    """Leaf1 keeps its flows where they start (no drain moves, a 10 ms flowlet timeout) and
    starts eight flows to leaf2 together (the DRE spreads them over both uplinks); spine1's
    uplink is then made best (a local report, as its own feedback copies make them).  Two
    packets of a flow on spine1 cross spine1's downlink to leaf2, slowed to 50 us a packet
    (the second queues there: leaf1 cannot see it); leaf2's host answers with four packets;
    a flow on spine2 sends once more (spine2 reports its idle uplink).  ``spine1_reports_first``:
    the flow on spine1 sends once more before that (its uplink's own report comes first).
    ``answers``: how many packets leaf2's host sends back (the first returns spine1's path, the
    second spine2's).  ``leaf1_feedback``: leaf1's path_feedback parameters instead of the
    rendered ones.  Returns the switches and leaf1's members via spine1 and spine2."""
    from test_stellar_tna_paths import _feedback
    switches = lab(fabric, feedback_on)
    leaf1 = switches["leaf1"]
    pinned = dict(next(e for e in render_fabric(fabric, arch="tna").documents["leaf1"]["entries"]
                       if e["table"] == LEAF_PARAMS)["params"], drain=0, flowlet_timeout=10_000_000)
    leaf1.set_default_action(LEAF_PARAMS, LEAF_ACTION, pinned)
    if leaf1_feedback:
        fb = next(e for e in render_fabric(fabric, arch="tna").documents["leaf1"]["entries"] if e["table"] == FB_PARAMS)
        leaf1.set_default_action(FB_PARAMS, FB_ACTION, dict(fb["params"], **leaf1_feedback))
    via1, via2 = uplink_of(fabric, "leaf1", "spine1"), uplink_of(fabric, "leaf1", "spine2")
    member = {p: m for m, p in enumerate(sorted((via1, via2)))}
    first = out_of(leaf1, 1, [roce(H1, H2, qp) for qp in range(1, 9)])
    started = {unshim(f)[BTH].dqpn: p for p, f in first}
    for port, frame in first:            # delivered: leaf2 measures both paths (none is silent)
        link = fabric.switches["leaf1"].ports[port]
        carry(fabric, switches, link.peer_switch, link.peer_port, [frame])
    qp1 = next(q for q, p in started.items() if p == via1)
    qp2 = next(q for q, p in started.items() if p == via2)
    leaf1.send(68, _feedback(via2, 100_000))
    leaf1.send(68, _feedback(via1, 0))
    assert leaf1.register_read(GROUP_BEST, 1) >> 16 == member[via1]
    down = uplink_of(fabric, "leaf2", "spine1")
    spine1_to_leaf2 = fabric.switches["leaf2"].ports[down].peer_port
    switches["spine1"].set_queue_rate(20_000, port=spine1_to_leaf2)    # 50 us per packet
    frames = [f for _, f in out_of(leaf1, 1, [roce(H1, H2, qp1, 1), roce(H1, H2, qp1, 2)], settle_us=5)]
    delivered = carry(fabric, switches, "spine1", fabric.switches["leaf1"].ports[via1].peer_port, frames)
    assert len(delivered) == 2
    switches["spine1"].set_queue_rate(0, port=spine1_to_leaf2)
    back = carry(fabric, switches, "leaf2", 1, [roce(H2, H1, 40 + i) for i in range(answers)])
    assert [n for n, _, _ in back] == ["leaf1"] * answers
    if spine1_reports_first:
        assert [p for p, _ in out_of(leaf1, 1, [roce(H1, H2, qp1, 3)])] == [via1]
    assert [p for p, _ in out_of(leaf1, 1, [roce(H1, H2, qp2, 1)])] == [via2]
    return switches, member[via1], member[via2]


def test_a_congested_remote_downlink_loses_best_once_the_far_leaf_answers(fabric):
    switches, spine1_member, spine2_member = _congested_spine1_then_reverse(fabric, feedback_on=True)
    leaf1, leaf2 = switches["leaf1"], switches["leaf2"]
    # leaf2 measured leaf1's path 0 (spine1) at the ~49 us spine1's downlink queued the packet
    cell = leaf2.register_read(FROM_LEAF, feedback.leaf_ids(fabric)["leaf1"] << 3 | spine1_member)
    assert cell >> 15 == 1 and 45 <= cell & 0x1FFF <= 50, hex(cell)
    assert leaf2.counter_read(RETURNS, 0)[0] >= 1                        # ... returned it
    assert leaf1.counter_read(RETURNS, 1)[0] >= 1                        # ... leaf1 received it
    assert leaf1.counter_read(SHIMS, 1)[0] == 4                          # and stripped the answers
    best, delay16 = divmod(leaf1.register_read(GROUP_BEST, 1), 1 << 16)
    assert best == spine2_member, (best, delay16)


def test_negative_control_without_feedback_the_congested_path_stays_best(fabric):
    switches, spine1_member, _ = _congested_spine1_then_reverse(fabric, feedback_on=False)
    leaf1 = switches["leaf1"]
    best = leaf1.register_read(GROUP_BEST, 1) >> 16
    assert best == spine1_member
    assert leaf1.counter_read(SHIMS, 1)[0] == 0


# The uplink's own reports carry the path's fresh congestion (to_leaf, max_age): a report of the
# congested uplink between the far leaf's answer and the other uplink's report does not undo it.
# One answer (spine1's path only), and no silence detection: spine2's path goes unanswered here.
def test_the_congested_uplinks_own_report_keeps_the_remote_congestion(fabric):
    switches, _, spine2_member = _congested_spine1_then_reverse(fabric, True, spine1_reports_first=True,
                                                                answers=1, suspect_silence_ns=0)
    best, delay16 = divmod(switches["leaf1"].register_read(GROUP_BEST, 1), 1 << 16)
    assert best == spine2_member, (best, delay16)


def test_negative_control_a_stale_entry_leaves_the_local_report_alone(fabric):
    # max_age 0: no entry is fresh, spine1's next report is its idle queue, and spine2's equal
    # report cannot take over (the hysteresis)
    switches, spine1_member, _ = _congested_spine1_then_reverse(fabric, True, spine1_reports_first=True,
                                                                answers=1, suspect_silence_ns=0, max_age_ns=0)
    assert switches["leaf1"].register_read(GROUP_BEST, 1) >> 16 == spine1_member


# ------------------------------------------------------------------ a silent remote failure
HINT = "pipe.StellarIngress.elephant.hint"
ARRIVAL = "pipe.StellarEgress.path_feedback.arrival"
LEVELS = "pipe.StellarIngress.dre_base.levels"


def _cut_spine1_leaf2(fabric, switches) -> None:
    """The spine1-leaf2 link fails: both ends see their port down (leaf1 does not)."""
    down = uplink_of(fabric, "leaf2", "spine1")
    switches["leaf2"].set_port_up(down, False)
    switches["spine1"].set_port_up(fabric.switches["leaf2"].ports[down].peer_port, False)
    for name in ("leaf2", "spine1"):
        switches[name].advance(1)


def _silent_failure(fabric, silence_ns: int | None = None, rounds: int = 40, cut: bool = True,
                    answer: bool = True, mouse: bool = True, spine2_report_ns: int | None = None,
                    hold_ns: int | None = None) -> dict:
    """Leaf1 sends an elephant A (via spine1) and a mouse B (via spine2, hinted: it never drains)
    to leaf2 every 30 us of leaf1's clock, leaf2's host answers each round; spine1 is the best
    member, and both uplinks are measured (as after the controller's first poll: no move leaves
    an unmeasured member).  After 5 rounds spine1's link to leaf2 is cut (``cut``); without
    ``answer`` leaf2 sends nothing back (one-way traffic); without ``mouse`` A is the only flow
    after the first round; ``spine2_report_ns``: from round 15 on, spine2's uplink reports this
    queue delay each round (a moderate one: it takes "best" only from a saturated spine1);
    ``hold_ns``: leaf1's suspect hold.  Also returns the rounds whose tags found a path silent.  Returns the uplink of each A packet leaf1 sent, the
    rounds' times on leaf1's clock, the cut's time, and A's packets leaf2 delivered."""
    from test_stellar_tna_paths import _feedback
    switches = lab(fabric)
    # leaf2 does not report its dead uplink (no `arrival` rows: it records no uplink for leaf1's
    # paths), so only silence can find the failure; the report is test_stellar_tna_dead_uplink.py's
    switches["leaf2"].clear_table(ARRIVAL)
    leaf1 = switches["leaf1"]
    rendered = render_fabric(fabric, arch="tna").documents["leaf1"]["entries"]
    params = next(e for e in rendered if e["table"] == LEAF_PARAMS)["params"]
    leaf1.set_default_action(LEAF_PARAMS, LEAF_ACTION, dict(params, flowlet_timeout=10_000_000,
                                                            drain_any_flows=0, elephant_threshold=1))
    levels = next(e for e in rendered if e["table"] == LEVELS and e["match"]["meta.group"] == 1)
    leaf1.modify_entry(LEVELS, {"meta.group": 1}, levels["action"], dict(levels["params"], measured=0b11))
    if silence_ns is not None or hold_ns is not None:
        fb = next(e for e in rendered if e["table"] == FB_PARAMS)["params"]
        changes = {k: v for k, v in (("suspect_silence_ns", silence_ns), ("suspect_hold_ns", hold_ns)) if v is not None}
        leaf1.set_default_action(FB_PARAMS, FB_ACTION, dict(fb, **changes))
    via1, via2 = uplink_of(fabric, "leaf1", "spine1"), uplink_of(fabric, "leaf1", "spine2")
    first = out_of(leaf1, 1, [roce(H1, H2, qp) for qp in range(1, 9)], settle_us=20)
    placed = {unshim(f)[BTH].dqpn: p for p, f in first}
    a = next(q for q, p in placed.items() if p == via1)
    b = next(q for q, p in placed.items() if p == via2)
    leaf1.insert_entry(HINT, {"hdr.ipv4.src_addr": (0x0A000101, 0xFFFFFFFF), "hdr.ipv4.dst_addr": (0x0A000201, 0xFFFFFFFF),
                              "meta.l4": (b, 0xFFFFFFFF)}, "StellarIngress.elephant.hint_mouse", {}, priority=10)
    leaf1.send(68, _feedback(via2, 100_000))
    leaf1.send(68, _feedback(via1, 0))             # spine1 best
    a_ports, times, delivered, cut_at, silent_rounds = [], [], 0, None, []
    for r in range(rounds):
        if r == 5 and cut:
            _cut_spine1_leaf2(fabric, switches)
            cut_at = leaf1.now_us
        times.append(leaf1.now_us)
        if spine2_report_ns is not None and r >= 15:
            leaf1.send(68, _feedback(via2, spine2_report_ns))
        sends = [roce(H1, H2, a, r + 1)] + ([roce(H1, H2, b, r + 1)] if mouse else [])
        for port, frame in out_of(leaf1, 1, sends, settle_us=20):
            if unshim(frame)[BTH].dqpn == a:
                a_ports.append(port)
            link = fabric.switches["leaf1"].ports[port]
            got = carry(fabric, switches, link.peer_switch, link.peer_port, [frame], settle_us=10)
            delivered += sum(1 for _, _, f in got if Ether(f)[BTH].dqpn == a)
        if answer:
            carry(fabric, switches, "leaf2", 1, [roce(H2, H1, 90, r)], settle_us=10)  # the answer
        else:
            switches["leaf2"].advance(10)
        silent_rounds.append(leaf1.counter_read(SUSPECTS, 0)[0])
    counts = [0] + silent_rounds
    return {"a_ports": a_ports, "times": times, "cut_at": cut_at, "delivered": delivered,
            "via1": via1, "via2": via2, "suspects": leaf1.counter_read(SUSPECTS, 0)[0],
            "silent_rounds": [r for r in range(rounds) if counts[r + 1] > counts[r]]}


SUSPECTS = "pipe.StellarEgress.path_feedback.suspects"


def test_a_silent_remote_failure_moves_the_flow_off_the_dead_path_without_the_controller(fabric):
    run = _silent_failure(fabric)
    ports, times = run["a_ports"], run["times"]
    assert ports[:5] == [run["via1"]] * 5 and run["suspects"] > 0
    moved = next(i for i, p in enumerate(ports) if p == run["via2"])
    recovery = times[moved] - run["cut_at"]
    assert all(p == run["via2"] for p in ports[moved:])           # it stays off the dead path
    assert 300 <= recovery <= 400, recovery                       # suspect_silence_us (300) + a few rounds
    assert run["delivered"] == 5 + len(ports) - moved             # everything it sent after the move arrives


def test_negative_control_without_silence_detection_the_flow_stays_on_the_dead_path(fabric):
    run = _silent_failure(fabric, silence_ns=0)
    assert set(run["a_ports"]) == {run["via1"]} and run["suspects"] == 0
    assert run["delivered"] == 5                                  # black-holed since the cut


def test_one_way_traffic_is_never_silent(fabric):
    """A lone flow A, and leaf2 sends nothing back, so nothing can carry feedback to leaf1 and
    no answer proves nothing: A stays where it is for 1.2 ms, four times the silence, although
    spine2's uplink reports a moderate 50 us from 450 us on (a path is silent only while its
    destination leaf keeps sending here, the rule of v1model's fb_heard; without it A's
    unanswered path went silent, its reports saturated, spine2 took "best" and A moved).  The
    answered, cut path is the silent case above."""
    run = _silent_failure(fabric, cut=False, answer=False, mouse=False, spine2_report_ns=50_000)
    assert run["suspects"] == 0
    assert set(run["a_ports"]) == {run["via1"]} and run["delivered"] == len(run["a_ports"])


def test_a_silent_path_is_probed_again_after_the_suspect_hold(fabric):
    """The suspect hold (v1model's suspect_hold_us): a lone flow on the cut path (nothing else
    reports, so it stays there and its tags keep checking the path, 30 us apart).  With a 150 us
    hold its tags find the path silent for 5 rounds from 300 us after the unanswered period
    began; the next tag starts a new period (the path is probed again), and the path is silent
    again only 300 us after that."""
    run = _silent_failure(fabric, mouse=False, hold_ns=150_000, rounds=50)
    silent = run["silent_rounds"]
    first = silent[0]
    assert silent[:5] == list(range(first, first + 5))          # 150 us of silence
    assert silent[5:10] == list(range(first + 16, first + 21))  # probe at first + 5, silent 300 us on


def test_negative_control_with_the_default_hold_the_path_stays_silent(fabric):
    run = _silent_failure(fabric, mouse=False, rounds=50)       # 2 ms: longer than the run
    silent = run["silent_rounds"]
    assert silent == list(range(silent[0], 50)) and len(silent) >= 30
