"""Path feedback between leaves (p4src/README.md, "Path feedback"; p4src/tna/README.md, "Data
plane v3"): the shim is added at the source leaf on a fabric port and is absent at the host port,
on both programs (the entries from ptf_tests/stellar/arch.py, ``path_feedback``).

The leaf is leaf 1; SINGLE_PORT (10.0.4.0/24, leaf 4) is marked as facing a switch.
"""
from __future__ import annotations

import ptf.testutils as tu
from scapy.layers.l2 import Ether

from ptf_tests.stellar.stellar_base import HOST_IP, HOST_PORT, SINGLE_NET, SINGLE_PORT, StellarTest, roce

ETHERTYPE_FB = 0x88B5


def shim(frame: bytes, *, src_leaf: int, path: int = 0, path_count_m1: int = 0, congestion: int = 0,
         fb: tuple[int, int] | None = None) -> bytes:
    """``frame`` with the 8-byte shim after its MAC addresses (header.p4: stellar_fb_h)."""
    fb_valid, fb_path, fb_metric = (1, *fb) if fb else (0, 0, 0)
    word = (src_leaf << 8) | (path << 5) | (path_count_m1 << 2) | (fb_valid << 1)
    body = (frame[12:14] + word.to_bytes(2, "big") + congestion.to_bytes(2, "big")
            + ((fb_path << 13) | fb_metric).to_bytes(2, "big"))
    return frame[:12] + ETHERTYPE_FB.to_bytes(2, "big") + body + frame[14:]


class FeedbackTest(StellarTest):
    def setUp(self) -> None:
        super().setUp()
        self.leaf.path_feedback(1, SINGLE_NET, 24, 4, SINGLE_PORT)


class ShimAddedAtTheSourceLeafTest(FeedbackTest):
    """A host's packet to another leaf leaves on the fabric port with the shim: leaf 1, path 0 of
    a one-member set, congestion 0, nothing returned yet; the rest byte for byte as routed."""

    def runTest(self):
        out = roce("10.0.4.7", qp=0x600, psn=1)
        tu.send_packet(self, HOST_PORT, out)
        expected = shim(bytes(self.routed(out, SINGLE_PORT)), src_leaf=1)
        tu.verify_packet(self, Ether(expected), SINGLE_PORT)
        tu.verify_no_other_packets(self)


class ShimAbsentAtTheHostPortTest(FeedbackTest):
    """A tagged packet from leaf 5 (path 2 of 4, congestion 37, returning 9 us for path 1)
    reaches the host without the shim: exactly the packet an untagged one becomes."""

    def runTest(self):
        back = roce(HOST_IP, qp=0x601, psn=2, src="10.0.4.7")
        tagged = shim(bytes(back), src_leaf=5, path=2, path_count_m1=3, congestion=37, fb=(1, 9))
        tu.send_packet(self, SINGLE_PORT, Ether(tagged))
        tu.verify_packet(self, self.routed(back, HOST_PORT), HOST_PORT)
        tu.verify_no_other_packets(self)
