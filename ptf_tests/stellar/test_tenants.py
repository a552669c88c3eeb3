"""Tenant policing over P4Runtime: a tenant above its meter (MeterEntry, bytes/s) is demoted
(yellow) and then dropped (red); another tenant's traffic on the same port is not touched.

The committed and peak rates are tiny (CIR and PIR bytes/s), so in the time a burst may take to
send -- on BMv2 over veth with one core busy, up to seconds (at 200 bytes/s, 1.35 s already
let three more packets through) -- the buckets refill by less than one packet (~90 bytes
in 20 s): the outcome is set by the burst sizes alone and the test runs unchanged on a
wall-clock target (the +-2 packet slack covers a target whose bucket arithmetic rounds
differently).

Per architecture: v1model counts yellow (demoted) and red packets per tenant (qos.tenant_yellow,
qos.tenant_red); the TNA program acts on red only -- dropped, counted as the drop reason
DROP_TENANT_RED -- so there the green+yellow share is checked by what left, and red by the drop
counter and the packets missing."""
from __future__ import annotations

import ptf.testutils as tu
from p4.v1 import p4runtime_pb2

from p4sim.p4rt.client import update
from ptf_tests.stellar.stellar_base import HOST_PORT, SINGLE_PORT, StellarTest, qp_of, roce

DST = "10.0.4.80"
TENANT1_SRC, TENANT2_SRC = "10.0.1.10", "10.0.1.200"
FRAME_LEN = len(roce(DST, 1, 0, src=TENANT1_SRC))
CBURST_PKTS, PBURST_PKTS, BURST = 16, 32, 44   # 88 frames: PTF keeps 100 per port
CIR, PIR = 2, 4                                # bytes/s
DROP_TENANT_RED = 7


class _TenantTest(StellarTest):
    def setUp(self) -> None:
        super().setUp()
        for tenant, subnet in ((1, "10.0.1.0"), (2, "10.0.1.128")):
            self.tenant(subnet, 25, tenant)

    def meter(self, tenant: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        """Configure a tenant's meter; reset to unconfigured (all green) after the test."""
        mid = self.p4rt.object_id("meters", self.name("tenant_meter"))
        entry = p4runtime_pb2.MeterEntry(meter_id=mid)
        entry.index.index = tenant
        entry.config.cir, entry.config.cburst = cir, cburst
        entry.config.pir, entry.config.pburst = pir, pburst
        reset = p4runtime_pb2.MeterEntry(meter_id=mid)
        reset.index.index = tenant
        self.write_undoable(update("MODIFY", meter_entry=entry), update("MODIFY", meter_entry=reset))

    def burst_both_tenants(self, qp1: int, qp2: int) -> dict[int, int]:
        """BURST packets from each tenant, interleaved; packets that left, per QP."""
        since = self.tally()
        received = None if since is None else self.received_count()
        for psn in range(BURST):
            tu.send_packet(self, HOST_PORT, roce(DST, qp1, psn, src=TENANT1_SRC))
            tu.send_packet(self, HOST_PORT, roce(DST, qp2, psn, src=TENANT2_SRC))
        if received is not None:
            self.wait_ingested(received, 2 * BURST)   # all taken in before we count the output
        counts = {qp1: 0, qp2: 0}
        for port, pkt in self.collect_all(since):
            self.assertEqual(port, SINGLE_PORT)
            counts[qp_of(pkt)] += 1
        return counts

    def tenant_counters(self, tenant: int) -> tuple[int, int] | None:
        """(yellow, red) of a tenant, or None where the program keeps no per-tenant counts."""
        if self.arch == "tna":
            return None
        return (self.packets(self.name("tenant_yellow"), tenant),
                self.packets(self.name("tenant_red"), tenant))


class TenantOverItsMeterTest(_TenantTest):
    """Tenant 1's burst: ~CBURST green, ~PBURST-CBURST yellow (demoted, still sent), the rest
    red (dropped, counted as tenant_red).  Tenant 2, unmetered, loses nothing."""

    def runTest(self):
        self.meter(1, cir=CIR, cburst=CBURST_PKTS * FRAME_LEN, pir=PIR, pburst=PBURST_PKTS * FRAME_LEN)
        before1, before2 = self.tenant_counters(1), self.tenant_counters(2)
        drops = self.drops(DROP_TENANT_RED)
        sent = self.burst_both_tenants(0xC01, 0xC02)
        self.assertTrue(PBURST_PKTS - 2 <= sent[0xC01] <= PBURST_PKTS + 2, f"tenant 1 sent {sent}")
        red = BURST - sent[0xC01]
        if before1 is not None:
            yellow, counted_red = (a - b for a, b in zip(self.tenant_counters(1), before1))
            self.assertTrue(CBURST_PKTS - 2 <= yellow <= CBURST_PKTS + 2, f"yellow {yellow}")
            self.assertEqual(counted_red, red)
        self.assertEqual(self.drops(DROP_TENANT_RED), drops + red)
        # The other tenant is untouched.
        self.assertEqual(sent[0xC02], BURST)
        self.assertEqual(self.tenant_counters(2), before2)


class TenantWithoutMeterControlTest(_TenantTest):
    """Control: the same bursts with no meter configured -- nothing demoted or dropped."""

    def runTest(self):
        before, drops = self.tenant_counters(1), self.drops(DROP_TENANT_RED)
        sent = self.burst_both_tenants(0xC03, 0xC04)
        self.assertEqual(sent, {0xC03: BURST, 0xC04: BURST})
        self.assertEqual(self.tenant_counters(1), before)
        self.assertEqual(self.drops(DROP_TENANT_RED), drops)
