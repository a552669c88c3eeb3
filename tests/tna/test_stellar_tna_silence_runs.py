"""Stellar on Tofino: silence is proven only by a run of the destination leaf's packets
(p4src/tna/include/control/path_feedback.p4: heard, run_since, prev_proof; v1model's
fb_heard_since, fb_prev_since, fb_prev_heard in tests/stellar/test_suspect_moved.py).

One leaf (leaf 1, TnaLeaf) tags its flow to leaf 2 on uplink P; leaf 2's packets come in from the
spine with the shim (source leaf 2), some carrying the answer for P, and are stripped towards the
host.  A path is silent when its unanswered period is older than the silence (300 us) and a run
of leaf 2's packets (no pause over half the silence) covered half the silence after the period
began: the current run or the one before it.  A leaf that paused and resumed has not had the
chance to answer yet, so its first packets without an answer do not silence a live path.
Controls: a leaf that keeps sending without answering (a cut path) silences it, and so does one
whose run before a pause covered the period; the negative controls compile the program without
the run test (the paused leaf's first packets silence the path) or without the previous run
(the covered period is found silent only once the new run is long enough).

A flow routed by hash (its flow slot held by another active flow) leaves its hash member once
that member's path is silent (failover.p4's `silent`, v1model's hash_key); control: with silence
detection off, or with the program that does not read the silent members, it keeps feeding the
dead path.
"""
from __future__ import annotations

import ipaddress
import zlib
from pathlib import Path
from typing import Callable

from scapy.contrib.roce import BTH
from test_stellar_tna_path_feedback import unshim
from test_stellar_tna_reorder import _variant
from tna_leaf import CHANGE_FAILOVER, EGR, ING, TnaLeaf, roce

SRC, DST, QP = "10.0.1.1", "10.0.2.9", 0x61
SILENCE_NS = 300_000
SUSPECTS = f"{EGR}.path_feedback.suspects"
PATH_FEEDBACK_P4 = Path("p4src/tna/include/control/path_feedback.p4")
NO_RUN_RULE = (" && since_after[31:31] == 0", "")
NO_PREV_RUN = ("(proof != 0 && prev_after[31:31] == 0)", "false")
Schedule = Callable[[int], bool]


def _leaf(prog=None, silence_ns: int = SILENCE_NS, hold_ns: int = 2_000_000) -> TnaLeaf:
    """Leaf 1 of path feedback with silence on; leaf 2 is behind 10.0.2.0/24."""
    leaf = TnaLeaf(flowlet_timeout_ns=10_000_000, prog=prog)
    leaf.sw.set_default_action(f"{EGR}.path_feedback.params", f"{EGR}.path_feedback.set_params",
                               {"on": 1, "leaf": 1, "interval_ns": 2000, "max_age_ns": 500_000,
                                "suspect_silence_ns": silence_ns, "suspect_hold_ns": hold_ns})
    for index, port in enumerate((2, 3)):
        leaf.sw.insert_entry(f"{EGR}.path_feedback.port_kind", {"eg_intr_md.egress_port": port},
                             f"{EGR}.path_feedback.fabric_port", {"index": index})
    leaf.sw.insert_entry(f"{EGR}.path_feedback.dest_leaf", {"hdr.ipv4.dst_addr": (0x0A000200, 24)},
                         f"{EGR}.path_feedback.set_dest_leaf", {"leaf": 2, "mask": 1})
    return leaf


def _from_leaf2(psn: int, answer_path: int | None) -> bytes:
    """Leaf 2's packet to this leaf's host, with leaf 2's shim; ``answer_path``: the entry it
    returns for this leaf's path of that index (None: no entry)."""
    frame = roce(DST, SRC, 0x3000, psn)
    valid = answer_path is not None
    shim = (0x0800.to_bytes(2, "big") + bytes([2, (1 << 2) | (int(valid) << 1)]) + bytes(2)
            + (((answer_path or 0) << 13).to_bytes(2, "big")))
    return frame[:12] + (0x88B5).to_bytes(2, "big") + shim + frame[14:]


def never(t: int) -> bool:
    return False


def _silent_tags(prog, a_sends: Schedule, b_sends: Schedule, b_answers: Schedule,
                 until: int = 900, b_answers_other: Schedule = never,
                 a_resends: Schedule = never, hold_ns: int = 2_000_000) -> list[int]:
    """Each microsecond t: this leaf's flow sends if ``a_sends(t)`` (going back to its first
    PSN, a go-back-N resend, if ``a_resends(t)``), then leaf 2's packet arrives if
    ``b_sends(t)``, answering for the flow's path if ``b_answers(t)``, else for this leaf's
    other path if ``b_answers_other(t)``; ``hold_ns`` the suspect hold.  Returns the times of
    the tags that found the path silent."""
    leaf = _leaf(prog, hold_ns=hold_ns)
    path = {2: 0, 3: 1}[leaf.flow_port(QP, SRC, DST)]
    psn, silent, before = 1, [], leaf.counter(SUSPECTS, 0)
    for t in range(until):
        if a_resends(t):
            psn = 1
        if a_sends(t):
            leaf.send(roce(SRC, DST, QP, psn))
            psn += 1
        if b_sends(t):
            answer = path if b_answers(t) else (1 - path if b_answers_other(t) else None)
            leaf.send(_from_leaf2(t, answer), port=2)
        count = leaf.counter(SUSPECTS, 0)
        if count > before:
            silent.append(t)
            before = count
        leaf.sw.advance(1)
        leaf.out()
    return silent


def _paused(prog=None) -> list[int]:
    """Both talk every 4 us until t=100 (answered); this leaf sends once more at t=110, which
    leaf 2 can answer only when it sends again.  Leaf 2 resumes at t=500, its answer on its
    frames from t=540 (the first ones after the pause carry none); this leaf resumes at t=520.
    The path is live throughout."""
    return _silent_tags(prog, lambda t: (t % 4 == 0 and (t < 100 or t >= 520)) or t == 110,
                        lambda t: t % 4 == 0 and (t < 100 or t >= 500),
                        lambda t: t < 100 or t >= 540)


def test_a_leaf_that_paused_has_not_answered_yet():
    assert _paused() == []


def test_negative_control_without_the_run_rule_the_paused_leaf_silences_a_live_path(tmp_path_factory):
    silent = _paused(_variant(tmp_path_factory, NO_RUN_RULE, PATH_FEEDBACK_P4))
    assert silent and min(silent) >= 520 and max(silent) <= 540   # until its answer (after the tag at 540)


def test_control_a_leaf_that_keeps_sending_without_answering_silences_the_path():
    """No pause; leaf 2's answers stop at t=100 (the path is cut)."""
    silent = _silent_tags(None, lambda t: t % 4 == 0, lambda t: t % 4 == 0, lambda t: t < 100)
    assert silent and 400 <= silent[0] <= 420                      # the silence after t=100


def _covered_then_paused(prog=None) -> list[int]:
    """This leaf's send at t=110 goes unanswered while leaf 2 keeps sending until t=400 (286 us
    after it: more than half the silence), pauses, and resumes at t=600 without answering; this
    leaf resumes at t=620."""
    return _silent_tags(prog, lambda t: (t % 4 == 0 and (t < 100 or t >= 620)) or t == 110,
                        lambda t: t % 4 == 0 and (t < 400 or t >= 600), lambda t: t < 100,
                        until=700)


def test_control_the_run_before_a_pause_proves_the_silence():
    assert _covered_then_paused()[:1] == [620]


def test_negative_control_without_the_previous_run_the_proof_waits_for_the_new_run(tmp_path_factory):
    assert _covered_then_paused(_variant(tmp_path_factory, NO_PREV_RUN, PATH_FEEDBACK_P4)) == []


# ------------------------------------------------------------------ flows routed by hash
def _colliding_qps() -> tuple[int, int]:
    """(owner, other): two QPs in the same flow slot (flow_key.p4's CRC-32 [12:0]) with
    different signatures; the other is routed by hash, to member CRC[2:0] % 2."""
    key = ipaddress.IPv4Address(SRC).packed + ipaddress.IPv4Address(DST).packed + bytes([17, 0])
    seen: dict[int, int] = {}
    for qp in range(0x100, 1 << 20):
        crc = zlib.crc32(key + qp.to_bytes(3, "big"))
        slot = crc & 0x1FFF
        if slot in seen:
            return seen[slot], qp
        seen[slot] = qp
    raise AssertionError("no colliding pair")


def _hashed_flow(silence_ns: int, prog=None) -> dict:
    """The owner and the other flow send every 4 us, so the other stays routed by hash, on P;
    leaf 2 sends every 4 us, answering for both paths until t=100 and then only for Q (P's
    remote link is cut).  Returns the other flow's ports."""
    owner, other = _colliding_qps()
    crc = zlib.crc32(ipaddress.IPv4Address(SRC).packed + ipaddress.IPv4Address(DST).packed
                     + bytes([17, 0]) + other.to_bytes(3, "big"))
    p_index = crc & 1
    leaf = _leaf(prog, silence_ns=silence_ns)
    for index, port in enumerate((2, 3)):
        leaf.sw.insert_entry(f"{EGR}.path_feedback.uplink_port", {"hdr.fb.fb_path": index},
                             f"{EGR}.path_feedback.path_uplink", {"port": port})
    ports = []
    for t in range(800):
        if t % 4 == 0:
            leaf.send(roce(SRC, DST, owner, t // 4))
            leaf.send(roce(SRC, DST, other, t // 4))
            answer = p_index if (t < 100 and t % 8 == 0) else 1 - p_index
            leaf.send(_from_leaf2(t, answer), port=2)
        leaf.sw.advance(1)
        ports += [p for p, f in leaf.out() if p in (2, 3) and unshim(f)[BTH].dqpn == other]
    return {"P": 2 + p_index, "Q": 3 - p_index, "ports": ports,
            "failovers": leaf.counter(f"{ING}.telemetry.path_changes", CHANGE_FAILOVER)}


def test_a_flow_routed_by_hash_leaves_a_silent_member():
    run = _hashed_flow(SILENCE_NS)
    ports = run["ports"]
    moved = ports.index(run["Q"])
    assert 100 <= moved <= 110                                     # t = 400-440 us: cut + silence
    assert set(ports[:moved]) == {run["P"]} and set(ports[moved:]) == {run["Q"]}
    assert run["failovers"] >= len(ports) - moved                  # the fallback, per packet


def test_control_without_silence_the_flow_routed_by_hash_stays_on_the_dead_path():
    run = _hashed_flow(0)
    assert set(run["ports"]) == {run["P"]}


NO_SILENT_READ = ("1w0 &&& 1w0): do_read_silent();", "1w0 &&& 1w0): no_silent();")


def test_negative_control_without_the_silent_bitmap_the_flow_stays_on_its_hash_member(tmp_path_factory):
    prog = _variant(tmp_path_factory, NO_SILENT_READ, Path("p4src/tna/include/control/failover.p4"))
    run = _hashed_flow(SILENCE_NS, prog)
    assert set(run["ports"]) == {run["P"]}
