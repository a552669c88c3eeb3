"""EmbeddedSwitch: the real core with a P4Runtime server in-process, and a shared virtual clock."""
from __future__ import annotations

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4sim.clock import VirtualClock
from p4sim.p4rt import EmbeddedSwitch
from p4sim.p4rt.client import P4RuntimeClient, update
from testkit.p4sim_process import REPO, compile_program


def test_embedded_switch_programmed_over_p4runtime_forwards(tmp_path):
    json_path, _ = compile_program(REPO / "p4src/examples/l3.p4", tmp_path)
    shared = VirtualClock()
    with EmbeddedSwitch(clock=shared, device_config=json_path.read_bytes()) as sw:
        c = P4RuntimeClient(sw.address, device_id=1)
        try:
            c.connect()
            c.get_p4info()
            c.write(update("INSERT", table_entry=c.table_entry(
                "MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": (0x0A000100, 24)}, "MyIngress.ipv4_forward",
                {"dstAddr": 0x010203040506, "port": 4})))
        finally:
            c.close()
        sw.device.set_queue_rate(1000, port=4)
        pkt = bytes(Ether() / IP(dst="10.0.1.9", ttl=5) / UDP() / (b"e" * 20))
        sw.send(0, pkt)
        sw.send(0, pkt)
        assert [p for p, _ in sw.output] == [4]  # the second waits 1000 µs in the queue
        shared.advance(0)  # a shared clock alone does not release packets...
        sw.advance(1000)   # ...the switch's advance does, and moves the shared clock
        assert [p for p, _ in sw.output] == [4, 4]
        assert shared.now_us == 1000
        assert Ether(sw.output[0][1])[IP].ttl == 4
