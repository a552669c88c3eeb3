"""Stellar on Tofino: the egress PSN-regression detector (p4src/tna/include/control/reorder.p4).

Data comes from spine 1 (port 2) to the host (port 1): this leaf is the receiver's.  It counts,
per flow direction (src, dst, dest QP), a data PSN below the last one; ACKs and CNPs on the same
key carry PSNs of another sequence and must not count (issue 32, item 6).  The negative controls
compile the program with one mechanism taken out of reorder.p4 (a patched copy of p4src).
"""
from __future__ import annotations

import ipaddress
import shutil
import zlib
from pathlib import Path

import pytest

import p4sim
from tna_leaf import EGR, REPO, TnaLeaf, roce

SRC, DST = "10.0.2.9", "10.0.1.1"
OP_SEND_ONLY, OP_ACK, OP_CNP = 0x04, 0x11, 0x81
REORDER_P4 = Path("p4src/tna/include/control/reorder.p4")
# The variants: what each mechanism is in reorder.p4, and the same line without it.
NO_OPCODE_FILTER = ("const default_action = not_data();", "const default_action = track();")
NO_SIGNATURE = ("v.sig == sig && ", "")
QP_ONLY_KEY = ("{hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.bth.dest_qp}", "{hdr.bth.dest_qp}")

_VARIANTS: dict[tuple[str, str], p4sim.Program] = {}


def _variant(tmp_path_factory, change: tuple[str, str], path: Path = REORDER_P4) -> p4sim.Program:
    """The Tofino-1 program with ``change[0]`` in ``path`` (reorder.p4 unless said) replaced by
    ``change[1]``."""
    if change not in _VARIANTS:
        root = tmp_path_factory.mktemp("p4src")
        for part in ("tna", "include"):
            shutil.copytree(REPO / "p4src" / part, root / "p4src" / part)
        source = root / path
        text = source.read_text()
        assert text.count(change[0]) == 1, f"{change[0]!r} is not in {path.name} once"
        source.write_text(text.replace(change[0], change[1]))
        _VARIANTS[change] = p4sim.compile(str(root / "p4src/tna/stellar.p4"),
                                          defines={"__TARGET_TOFINO__": "1"})
    return _VARIANTS[change]


def _regressions(leaf: TnaLeaf, packets, src: str = SRC, dst: str = DST) -> int:
    """Send (qp, opcode, psn) triples of one direction in order; the regressions they add."""
    before = leaf.counter(f"{EGR}.reorder.regressions", 0)
    for qp, opcode, psn in packets:
        leaf.send(roce(src, dst, qp, psn, opcode=opcode), port=2 if src == SRC else 1)
    leaf.out()
    return leaf.counter(f"{EGR}.reorder.regressions", 0) - before


def _data(qp: int, psns) -> list[tuple[int, int, int]]:
    return [(qp, OP_SEND_ONLY, psn) for psn in psns]


def _data_with_acks_and_cnps(qp: int) -> list[tuple[int, int, int]]:
    """In-order data PSNs 100..109, each followed on the same key by an ACK (the PSN of the
    other direction's stream it acknowledges, lower) and a CNP (PSN 0)."""
    packets = []
    for psn in range(100, 110):
        packets += [(qp, OP_SEND_ONLY, psn), (qp, OP_ACK, psn - 3), (qp, OP_CNP, 0)]
    return packets


def test_acks_and_cnps_beside_in_order_data_are_not_regressions():
    assert _regressions(TnaLeaf(), _data_with_acks_and_cnps(77)) == 0


def test_negative_control_without_the_opcode_filter_acks_and_cnps_count(tmp_path_factory):
    # every ACK is behind the data PSN before it, every CNP behind the ACK: 2 per data packet
    leaf = TnaLeaf(prog=_variant(tmp_path_factory, NO_OPCODE_FILTER))
    assert _regressions(leaf, _data_with_acks_and_cnps(77)) == 20


def test_a_data_psn_regression_counts_once():
    leaf = TnaLeaf()
    assert _regressions(leaf, _data(77, [1, 2, 3])) == 0
    assert _regressions(leaf, _data(77, [2])) == 1
    assert _regressions(leaf, _data(77, [3, 3, 4])) == 0   # a duplicate is not a regression


def _is_data(opcode: int) -> bool:
    """bth_is_data (p4src/include/functions.p4): RC/UC SEND, WRITE, READ response."""
    op = opcode & 0x1F
    return opcode >> 5 in (0, 1) and (op <= 0x0B or 0x0D <= op <= 0x10)


def test_exactly_the_data_opcodes_are_tracked():
    # per opcode a QP of its own: a data PSN 10, then PSN 5 with the opcode
    leaf = TnaLeaf()
    tracked = {op for op in range(256)
               if _regressions(leaf, [(1000 + op, OP_SEND_ONLY, 10), (1000 + op, op, 5)]) == 1}
    assert tracked == {op for op in range(256) if _is_data(op)}
    assert len(tracked) == 2 * 16 and OP_ACK not in tracked and OP_CNP not in tracked


def test_a_go_back_n_resend_counts_once():
    leaf = TnaLeaf()
    assert _regressions(leaf, _data(77, range(1, 7))) == 0
    assert _regressions(leaf, _data(77, range(3, 9))) == 1   # 3..6 resent, then 7, 8 new


def test_psn_wraparound_is_in_order():
    assert _regressions(TnaLeaf(), _data(77, [0xFFFFFE, 0xFFFFFF, 0, 1, 2])) == 0


def _both_directions(leaf: TnaLeaf) -> int:
    """One QP number, data both ways interleaved: PSNs 1000.. one way, 5.. the other."""
    total = 0
    for i in range(5):
        total += _regressions(leaf, _data(77, [1000 + i]))
        total += _regressions(leaf, _data(77, [5 + i]), src=DST, dst=SRC)
    return total


def test_the_two_directions_of_a_qp_are_tracked_apart(tmp_path_factory):
    assert _both_directions(TnaLeaf()) == 0
    # negative control: keyed by the dest QP alone, each direction's packet jumps the other's
    assert _both_directions(TnaLeaf(prog=_variant(tmp_path_factory, QP_ONLY_KEY))) == 5


def _qps_sharing_a_slot() -> tuple[int, int]:
    """Two dest QPs whose (SRC, DST, QP) CRC-32 has the same slot bits [12:0]."""
    key = ipaddress.IPv4Address(SRC).packed + ipaddress.IPv4Address(DST).packed
    seen: dict[int, int] = {}
    for qp in range(1, 1 << 16):
        crc = zlib.crc32(key + qp.to_bytes(3, "big"))
        if crc % 8192 in seen:
            return seen[crc % 8192], qp
        seen[crc % 8192] = qp
    raise AssertionError("no two QPs share a slot")


def _slot_sharers(leaf: TnaLeaf) -> int:
    qp_a, qp_b = _qps_sharing_a_slot()
    # both in order on their own; A far ahead in PSN space
    return (_regressions(leaf, _data(qp_a, [1000, 1001])) + _regressions(leaf, _data(qp_b, [1, 2]))
            + _regressions(leaf, _data(qp_a, [1002])))


def test_two_flows_sharing_a_slot_are_not_compared(tmp_path_factory):
    leaf = TnaLeaf()
    qp_a, _ = _qps_sharing_a_slot()
    assert _slot_sharers(leaf) == 0
    # the slot is the one the test computed (the CRC is p4sim's CRC-32): it holds A's last PSN
    slot = zlib.crc32(ipaddress.IPv4Address(SRC).packed + ipaddress.IPv4Address(DST).packed
                      + qp_a.to_bytes(3, "big")) % 8192
    assert leaf.sw.register_read(f"{EGR}.reorder.max_psn", slot) & 0xFFFFFFFF == 1002 << 8
    # negative control: without the signature, B's PSN 1 lands behind A's 1001
    assert _slot_sharers(TnaLeaf(prog=_variant(tmp_path_factory, NO_SIGNATURE))) == 1
