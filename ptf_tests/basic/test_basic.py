"""PTF tests of the harness itself on ptf_tests/p4/ptf_basic.p4 (ports 0-7, CPU port 255).

They run unchanged against p4sim and BMv2: everything goes through P4Runtime, the PTF dataplane
and the target-control API.
"""
from __future__ import annotations

import queue

import grpc
import ptf.testutils as tu
from ptf.dataplane import match_exp_pkt
from p4.v1 import p4runtime_pb2
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether

from ptf_tests.base import P4RuntimeTest
from p4sim.p4rt.client import WriteFailed, update

ROUTER_MAC = "00:00:00:00:aa:aa"
NEXT_HOP_MAC = "00:00:00:00:02:02"
LPM = "BasicIngress.ipv4_lpm"
ACL = "BasicIngress.acl"
SMAC = "BasicIngress.smac"
L2 = "BasicIngress.l2_special"
BROADCAST = "ff:ff:ff:ff:ff:ff"


def mac_int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


def ip_int(ip: str) -> int:
    a, b, c, d = (int(x) for x in ip.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def udp_packet(dst="10.0.2.5", src="10.0.1.1", sport=1234, dport=4791, ttl=64, smac="00:00:00:00:01:01"):
    return Ether(dst=ROUTER_MAC, src=smac) / IP(src=src, dst=dst, ttl=ttl) / UDP(sport=sport, dport=dport) / (b"x" * 40)


def routed(pkt, out_mac=NEXT_HOP_MAC):
    """What ipv4_forward makes of ``pkt``: MACs rewritten, TTL - 1, checksum recomputed."""
    exp = pkt.copy()
    exp[Ether].src = exp[Ether].dst
    exp[Ether].dst = out_mac
    exp[IP].ttl -= 1
    del exp[IP].chksum
    return Ether(bytes(exp))


class L3ForwardTest(P4RuntimeTest):
    """LPM route -> right port, MACs rewritten, TTL decremented, checksum valid."""

    def runTest(self):
        self.insert(LPM, {"hdr.ipv4.dstAddr": (ip_int("10.0.2.0"), 24)}, "BasicIngress.ipv4_forward",
                    {"dstAddr": mac_int(NEXT_HOP_MAC), "port": 2})
        pkt = udp_packet()
        tu.send_packet(self, 1, pkt)
        tu.verify_packet(self, routed(pkt), 2)
        tu.verify_no_other_packets(self)
        # Negative control: no route -> the default action drops.
        self.send_settled(1, udp_packet(dst="10.0.3.5"))
        tu.verify_no_other_packets(self)


class LongestPrefixWinsTest(P4RuntimeTest):
    def runTest(self):
        self.insert(LPM, {"hdr.ipv4.dstAddr": (ip_int("10.0.0.0"), 8)}, "BasicIngress.ipv4_forward",
                    {"dstAddr": mac_int(NEXT_HOP_MAC), "port": 3})
        self.insert(LPM, {"hdr.ipv4.dstAddr": (ip_int("10.0.2.0"), 24)}, "BasicIngress.ipv4_forward",
                    {"dstAddr": mac_int(NEXT_HOP_MAC), "port": 4})
        pkt = udp_packet(dst="10.0.2.9")
        tu.send_packet(self, 1, pkt)
        tu.verify_packet(self, routed(pkt), 4)
        pkt = udp_packet(dst="10.9.9.9")
        tu.send_packet(self, 1, pkt)
        tu.verify_packet(self, routed(pkt), 3)
        tu.verify_no_other_packets(self)


class PacketOutTest(P4RuntimeTest):
    """A PacketOut leaves on the port named in its packet_out header, payload untouched."""

    def runTest(self):
        pkt = udp_packet(dst="192.168.7.7")
        self.p4rt.packet_out(bytes(pkt), {"egress_port": 3, "_pad": 0})
        tu.verify_packet(self, pkt, 3)
        tu.verify_no_other_packets(self)


class PacketInTest(P4RuntimeTest):
    """An ACL punt reaches the controller with its ingress port; non-matching traffic does not."""

    def runTest(self):
        self.insert(ACL, {"hdr.ipv4.srcAddr": (ip_int("10.0.0.0"), 0xFF000000),
                          "hdr.ipv4.protocol": (17, 0xFF)}, "BasicIngress.punt", priority=10)
        pkt = udp_packet(src="10.1.1.1", dst="172.16.0.1")
        tu.send_packet(self, 4, pkt)
        payload, md = self.p4rt.packet_in(timeout=5)
        self.assertEqual(md["ingress_port"], 4)
        self.assertEqual(payload, bytes(pkt))
        tu.verify_no_other_packets(self)
        # Negative control: TCP does not match the ACL -> no packet-in.
        tcp = Ether(dst=ROUTER_MAC) / IP(src="10.1.1.1", dst="172.16.0.1") / TCP() / (b"y" * 40)
        self.send_settled(4, tcp)
        tu.verify_no_other_packets(self)
        with self.assertRaises(queue.Empty):
            self.p4rt.packets.get(timeout=0.5)


class CounterAndRegisterTest(P4RuntimeTest):
    """port_pkts counts per ingress port; last_len holds the last packet's length."""

    def runTest(self):
        self.insert(LPM, {"hdr.ipv4.dstAddr": (ip_int("10.0.2.0"), 24)}, "BasicIngress.ipv4_forward",
                    {"dstAddr": mac_int(NEXT_HOP_MAC), "port": 2})
        before = self.read_counter("port_pkts", 5)
        other_before = self.read_counter("port_pkts", 6)
        sizes = []
        for n in (0, 30):
            pkt = udp_packet() / (b"z" * n)
            sizes.append(len(pkt))
            tu.send_packet(self, 5, pkt)
            tu.verify_packet(self, routed(pkt), 2)
        after = self.read_counter("port_pkts", 5)
        self.assertEqual(after[0] - before[0], 2)
        self.assertEqual(after[1] - before[1], sum(sizes))
        self.assertEqual(self.read_counter("port_pkts", 6), other_before)  # control: other port
        self.assertEqual(self.read_register("last_len", 5), sizes[-1])


class DigestTest(P4RuntimeTest):
    """An unknown source MAC produces one learn_t digest (after a DigestEntry); a known one none."""

    def runTest(self):
        digest_id = self.p4rt.object_id("digests", "learn_t")
        de = p4runtime_pb2.DigestEntry(digest_id=digest_id)
        de.config.max_list_size = 1
        de.config.ack_timeout_ns = 10**9 * 60
        self.write_undoable(update("INSERT", digest_entry=de),
                            update("DELETE", digest_entry=p4runtime_pb2.DigestEntry(digest_id=digest_id)))
        src = "00:00:00:00:06:06"
        tu.send_packet(self, 6, udp_packet(smac=src))
        # BMv2 may first deliver learn events it buffered from earlier tests' unknown sources
        # once a DigestEntry exists (p4sim drops those); acknowledge and pass over them.
        ours = []
        for _ in range(16):
            dl = self.p4rt.digests.get(timeout=5).digest
            self.assertEqual(dl.digest_id, digest_id)
            ack = p4runtime_pb2.StreamMessageRequest()
            ack.digest_ack.digest_id, ack.digest_ack.list_id = dl.digest_id, dl.list_id
            self.p4rt.stream_send(ack)
            ours = [[int.from_bytes(m.bitstring, "big") for m in d.struct.members] for d in dl.data
                    if int.from_bytes(d.struct.members[0].bitstring, "big") == mac_int(src)]
            if ours:
                break
        self.assertEqual(ours, [[mac_int(src), 6]])
        # Negative control: once learned (smac hit), the same source produces no digest.
        self.insert(SMAC, {"hdr.ethernet.srcAddr": mac_int(src)}, "NoAction")
        self.send_settled(6, udp_packet(smac=src))
        with self.assertRaises(queue.Empty):
            self.p4rt.digests.get(timeout=0.5)


class BadWritesTest(P4RuntimeTest):
    """Each malformed write gets the spec's code, changes nothing, and the switch keeps serving."""

    def expect_code(self, entry, code, pi_code=None):
        """The spec's ``code``; on BMv2 also ``pi_code``, where its PI is known to differ."""
        with self.assertRaises(WriteFailed) as ctx:
            self.p4rt.write(update("INSERT", table_entry=entry))
        allowed = [[code]] + ([[pi_code]] if pi_code and self.target.name == "bmv2" else [])
        self.assertIn([e.code for e in ctx.exception.errors], allowed)

    def runTest(self):
        c = self.p4rt
        fwd = {"dstAddr": mac_int(NEXT_HOP_MAC), "port": 2}
        # Wrong width: port is bit<9>.  The P4Runtime spec asks for OUT_OF_RANGE (p4sim);
        # BMv2's PI answers INVALID_ARGUMENT (seen against simple_switch_grpc 1.15.5).
        self.expect_code(c.table_entry(LPM, {"hdr.ipv4.dstAddr": (ip_int("10.0.2.0"), 24)},
                                       "BasicIngress.ipv4_forward", dict(fwd, port=512)),
                         "OUT_OF_RANGE", pi_code="INVALID_ARGUMENT")
        # Unknown table.
        bad_table = c.table_entry(LPM, {"hdr.ipv4.dstAddr": (ip_int("10.0.2.0"), 24)},
                                  "BasicIngress.ipv4_forward", fwd)
        bad_table.table_id = 0x02FFFFFF
        # The spec's NOT_FOUND (p4sim); PI rejects the unknown id as INVALID_ARGUMENT.
        self.expect_code(bad_table, "NOT_FOUND", pi_code="INVALID_ARGUMENT")
        # LPM value with bits past the prefix.
        self.expect_code(c.table_entry(LPM, {"hdr.ipv4.dstAddr": (ip_int("10.0.2.1"), 24)},
                                       "BasicIngress.ipv4_forward", fwd), "INVALID_ARGUMENT")
        # Ternary table without priority.
        self.expect_code(c.table_entry(ACL, {"hdr.ipv4.srcAddr": (ip_int("10.0.0.0"), 0xFF000000)},
                                       "BasicIngress.punt"), "INVALID_ARGUMENT")
        self.assertEqual(self.read_table(LPM), [])
        self.assertEqual(self.read_table(ACL), [])
        # Still serving: a good write and the data plane work.
        self.insert(LPM, {"hdr.ipv4.dstAddr": (ip_int("10.0.2.0"), 24)}, "BasicIngress.ipv4_forward", fwd)
        pkt = udp_packet()
        tu.send_packet(self, 1, pkt)
        tu.verify_packet(self, routed(pkt), 2)


class BackupCannotWriteTest(P4RuntimeTest):
    def runTest(self):
        backup = self.new_client(election_id=(0, 0))
        entry = backup.table_entry(LPM, {"hdr.ipv4.dstAddr": (ip_int("10.0.2.0"), 24)},
                                   "BasicIngress.ipv4_forward", {"dstAddr": 1, "port": 2})
        with self.assertRaises(grpc.RpcError) as ctx:
            backup.write(update("INSERT", table_entry=entry))
        self.assertEqual(ctx.exception.code(), grpc.StatusCode.PERMISSION_DENIED)
        self.assertEqual(backup.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(
            table_id=entry.table_id))), [])
        # Control: the primary may write the same entry.
        self.insert(LPM, {"hdr.ipv4.dstAddr": (ip_int("10.0.2.0"), 24)}, "BasicIngress.ipv4_forward",
                    {"dstAddr": 1, "port": 2})


class QueueRateVirtualClockTest(P4RuntimeTest):
    """A 1000 pps queue releases one packet per 1000 µs of (virtual) time."""

    def runTest(self):
        self.require_virtual_clock()
        self.insert(LPM, {"hdr.ipv4.dstAddr": (ip_int("10.0.2.0"), 24)}, "BasicIngress.ipv4_forward",
                    {"dstAddr": mac_int(NEXT_HOP_MAC), "port": 2})
        self.target.set_queue_rate(1000, port=2)
        try:
            pkts = [udp_packet(sport=1000 + i) for i in range(3)]
            before = self.received_count()
            for p in pkts:
                tu.send_packet(self, 1, p)
            self.wait_ingested(before, 3)
            tu.verify_packet(self, routed(pkts[0]), 2)
            tu.verify_no_other_packets(self)  # the other two wait in the queue
            self.advance_us(999)
            tu.verify_no_other_packets(self)
            self.advance_us(1)
            tu.verify_packet(self, routed(pkts[1]), 2)
            tu.verify_no_other_packets(self)
            self.advance_us(1000)
            tu.verify_packet(self, routed(pkts[2]), 2)
        finally:
            self.target.set_queue_rate(0, port=2)
            # The port is busy sending the last packet until 1000 µs after it left; let that
            # time pass so the next test finds an idle port.
            self.advance_us(1000)


class QueueRateWallClockTest(P4RuntimeTest):
    """On a wall clock (BMv2, ``p4sim run --clock wall``): a 4 pps queue (250 ms a packet) lets
    three packets sent back to back out one service time apart; control: on the unlimited
    queue the same three leave together.  (On a virtual clock QueueRateVirtualClockTest checks
    the exact instants.)  Margins: each gap must be at least half a service time (125 ms) and
    the control's whole spread below it, so a stall of the switch or of PTF's receive thread
    shorter than 125 ms flips neither verdict."""

    PPS = 4

    def gaps(self, pps: int, sport: int) -> list[float]:
        """Seconds between the three departures (PTF's receive stamps) at queue rate ``pps``."""
        self.target.set_queue_rate(pps, port=2)
        pkts = [udp_packet(sport=sport + i) for i in range(3)]
        for p in pkts:
            tu.send_packet(self, 1, p)
        stamps = []
        for p in pkts:
            res = tu.dp_poll(self, device_number=0, port_number=2, timeout=10)
            if not isinstance(res, self.dataplane.PollSuccess):
                self.fail(f"{len(stamps)} of 3 packets left port 2 at {pps} pps")
            self.assertTrue(match_exp_pkt(routed(p), res.packet), "not the packet sent, or out of order")
            stamps.append(res.time)
        return [b - a for a, b in zip(stamps, stamps[1:])]

    def runTest(self):
        if self.target.has_virtual_clock:
            reason = "virtual clock: QueueRateVirtualClockTest checks the exact departures"
            print(f"SKIP {self.id()}: {reason}")
            self.skipTest(reason)
        self.target_op(self.target.set_queue_rate, 0, port=2)   # skips where rates cannot be set
        self.insert(LPM, {"hdr.ipv4.dstAddr": (ip_int("10.0.2.0"), 24)}, "BasicIngress.ipv4_forward",
                    {"dstAddr": mac_int(NEXT_HOP_MAC), "port": 2})
        half = 0.5 / self.PPS
        try:
            limited = self.gaps(self.PPS, 3000)
            self.assertTrue(all(g >= half for g in limited), f"gaps {limited} s at {self.PPS} pps")
        finally:
            self.target.set_queue_rate(0, port=2)
        unlimited = self.gaps(0, 3010)
        self.assertLess(sum(unlimited), half, f"gaps {unlimited} s on the unlimited queue")


class PortDownTest(P4RuntimeTest):
    """A port set down transmits nothing; back up, it forwards again."""

    def runTest(self):
        self.insert(LPM, {"hdr.ipv4.dstAddr": (ip_int("10.0.2.0"), 24)}, "BasicIngress.ipv4_forward",
                    {"dstAddr": mac_int(NEXT_HOP_MAC), "port": 2})
        self.target_op(self.target.set_port_up, 2, False)
        try:
            self.send_settled(1, udp_packet())
            tu.verify_no_other_packets(self)
        finally:
            self.target.set_port_up(2, True)
        pkt = udp_packet()
        tu.send_packet(self, 1, pkt)
        tu.verify_packet(self, routed(pkt), 2)


class MulticastTest(P4RuntimeTest):
    """A multicast group written through the PRE replicates to each member port, once."""

    def runTest(self):
        self.add_mcast_group(1, [1, 3, 5])
        self.insert(L2, {"hdr.ethernet.dstAddr": mac_int(BROADCAST)}, "BasicIngress.set_mcast_grp", {"grp": 1})
        frame = Ether(dst=BROADCAST, src="00:00:00:00:00:07", type=0x88B5) / (b"m" * 50)
        tu.send_packet(self, 0, frame)
        tu.verify_packets(self, frame, [1, 3, 5])
        # Negative control: a frame for another MAC is not replicated (and, non-IP, dropped).
        self.send_settled(0, Ether(dst="00:00:00:00:00:99", src="00:00:00:00:00:07", type=0x88B5) / (b"n" * 50))
        tu.verify_no_other_packets(self)


class MirrorTest(P4RuntimeTest):
    """An I2E clone to a clone session: the original is routed, its copy leaves on the mirror port."""

    def runTest(self):
        self.add_clone_session(100, [7])
        self.insert(LPM, {"hdr.ipv4.dstAddr": (ip_int("10.0.2.0"), 24)}, "BasicIngress.ipv4_forward",
                    {"dstAddr": mac_int(NEXT_HOP_MAC), "port": 2})
        self.insert(L2, {"hdr.ethernet.dstAddr": mac_int(ROUTER_MAC)}, "BasicIngress.mirror", {"session": 100})
        pkt = udp_packet()
        tu.send_packet(self, 1, pkt)
        tu.verify_each_packet_on_each_port(self, [routed(pkt), pkt], [2, 7])
        tu.verify_no_other_packets(self)
