"""Elephant detection reported to the controller: a flow whose bytes in a sketch window cross
elephant_bytes is reported by one elephant_digest_t (over the P4Runtime stream), once per flow;
a flow below the threshold is not, nor is a flow the controller already hinted as elephant.

The sketch window is set far longer than the test, so no window boundary falls inside it and
the test runs unchanged on a wall-clock target.

Per architecture: v1model reports a flow once (kept in its flow state) and counts detections
(elephant.detections, by sketch or by hint).  TNA reports a flow once per sketch window (bits
31:20 of the ns clock, ~1.05 ms; fixed, so this test runs on TNA only on the virtual clock,
which stands still while it sends) and counts packets classified elephant
(telemetry.elephants[1]), not detections; its sketch counts IPv4 bytes, not frame bytes."""
from __future__ import annotations

import queue

import ptf.testutils as tu
from p4.v1 import p4runtime_pb2

from p4sim.p4rt.client import update
from ptf_tests.stellar.stellar_base import (HOST_IP, HOST_PORT, SINGLE_PORT, StellarTest, ip_int,
                                            roce)

DST = "10.0.4.90"
FRAME_LEN = len(roce(DST, 1, 0))
THRESHOLD_PKTS = 20
LONG_US = 600_000_000          # 10 minutes: no sketch window or idle timeout inside the test
BY_SKETCH, BY_HINT = 0, 1


class ElephantDigestTest(StellarTest):

    def setUp(self) -> None:
        super().setUp()
        self.set_params(elephant_bytes=THRESHOLD_PKTS * FRAME_LEN, elephant_window_us=LONG_US,
                        elephant_idle_us=LONG_US)
        self.digest_id = self.p4rt.object_id("digests", self.name("elephant_digest"))
        de = p4runtime_pb2.DigestEntry(digest_id=self.digest_id)
        de.config.max_list_size = 1
        de.config.ack_timeout_ns = 10**9
        self.write_undoable(update("INSERT", digest_entry=de), update(
            "DELETE", digest_entry=p4runtime_pb2.DigestEntry(digest_id=self.digest_id)))

    def send_flow(self, qp: int, count: int) -> None:
        """``count`` packets of one flow, each forwarded."""
        for psn in range(count):
            pkt = roce(DST, qp, psn)
            tu.send_packet(self, HOST_PORT, pkt)
            tu.verify_packet(self, self.routed(pkt, SINGLE_PORT), SINGLE_PORT)

    def next_digest(self, timeout: float) -> list[int] | None:
        try:
            dl = self.p4rt.digests.get(timeout=timeout).digest
        except queue.Empty:
            return None
        self.assertEqual(dl.digest_id, self.digest_id)
        ack = p4runtime_pb2.StreamMessageRequest()
        ack.digest_ack.digest_id, ack.digest_ack.list_id = dl.digest_id, dl.list_id
        self.p4rt.stream_send(ack)
        [data] = dl.data
        return [int.from_bytes(m.bitstring, "big") for m in data.struct.members]

    def classified(self) -> tuple[int, int]:
        """(by sketch, by hint): v1model's detections counter; on TNA the packets classified
        elephant (one counter for both; the test tells them apart by what it sent)."""
        if self.arch == "tna":
            n = self.packets(self.name("elephants"), 1)
            return n, n
        name = self.name("elephant_detections")
        return self.packets(name, BY_SKETCH), self.packets(name, BY_HINT)

    def runTest(self):
        if self.arch == "tna":
            self.require_virtual_clock()   # TNA's sketch window is fixed (~1.05 ms)
        sketch, hinted = self.classified()
        # A flow well past the threshold: reported once, with its key and its byte estimate.
        self.send_flow(0xE01, 2 * THRESHOLD_PKTS)
        fields = self.next_digest(timeout=5)
        self.assertIsNotNone(fields, "no elephant digest")
        src, dst, proto, l4_id, nbytes = fields
        self.assertEqual((src, dst, proto, l4_id), (ip_int(HOST_IP), ip_int(DST), 17, 0xE01))
        self.assertGreaterEqual(nbytes, THRESHOLD_PKTS * FRAME_LEN)
        self.assertIsNone(self.next_digest(timeout=0.5), "elephant reported more than once")
        if self.arch == "tna":      # the packets past the threshold are elephants, not all
            self.assertTrue(0 < self.classified()[0] - sketch < 2 * THRESHOLD_PKTS)
        else:
            self.assertEqual(self.classified()[0], sketch + 1)
        sketch, hinted = self.classified()

        # Control: a mouse below the threshold is not reported (nor classified).
        self.send_flow(0xE02, THRESHOLD_PKTS // 2)
        self.assertIsNone(self.next_digest(timeout=0.5), "a mouse was reported")
        self.assertEqual(self.classified(), (sketch, hinted))

        # A hinted elephant is counted (by hint) but not reported: the controller knows it.
        self.hint_elephant(DST, 0xE03)
        self.send_flow(0xE03, 2 * THRESHOLD_PKTS)
        self.assertIsNone(self.next_digest(timeout=0.5), "a hinted elephant was reported")
        if self.arch == "tna":      # every packet of the hinted flow is an elephant
            self.assertEqual(self.classified()[1], hinted + 2 * THRESHOLD_PKTS)
        else:
            self.assertEqual(self.classified(), (sketch, hinted + 1))
