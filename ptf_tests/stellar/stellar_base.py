"""Stellar-specific helpers on top of ``P4RuntimeTest``: configure a switch the way the control
plane does (p4src/CONTRACT.md), by P4Info name, every write undone after the test."""
from __future__ import annotations

import ptf.testutils as tu
from p4.v1 import p4runtime_pb2
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from p4sim.p4rt.client import update
from ptf_tests.base import P4RuntimeTest

ING, EGR = "StellarIngress", "StellarEgress"
CHANGE_FAILOVER = 3
DROP_MALFORMED, DROP_NO_ROUTE = 1, 4
MALFORMED_TRUNC_IPV4, MALFORMED_IPV4_OPTIONS = 2, 8
SWITCH_MAC = "02:00:00:00:00:01"


def mac_int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


def ip_int(ip: str) -> int:
    a, b, c, d = (int(x) for x in ip.split("."))
    return (a << 24) | (b << 16) | (c << 8) | d


def udp_flow(sport: int, src: str = "10.0.1.1", dst: str = "10.0.2.5", ttl: int = 64, tos: int = 0):
    return (Ether(dst=SWITCH_MAC, src="02:00:00:00:01:01") / IP(src=src, dst=dst, ttl=ttl, tos=tos)
            / UDP(sport=sport, dport=5000) / (b"s" * 40))


class StellarTest(P4RuntimeTest):
    def route(self, prefix: str, plen: int, path_set: int) -> None:
        self.insert(f"{ING}.routing.lpm", {"hdr.ipv4.dst_addr": (ip_int(prefix), plen)},
                    f"{ING}.routing.set_path_set", {"path_set_id": path_set})

    @staticmethod
    def _members(ports: list[int], levels: list[int] | None, ecmp: bool) -> dict[str, int]:
        levels = levels or [0] * len(ports)
        params = {"count": len(ports), "ecmp": int(ecmp)}
        for i in range(8):
            params[f"port{i}"] = ports[i] if i < len(ports) else 0
            params[f"level{i}"] = levels[i] if i < len(ports) else 0
        return params

    def path_set(self, ps: int, ports: list[int], levels: list[int] | None = None, ecmp: bool = False) -> None:
        self.insert(f"{ING}.routing.path_set", {"meta.route.path_set_id": ps},
                    f"{ING}.routing.set_members", self._members(ports, levels, ecmp))

    def modify_path_set(self, ps: int, ports: list[int], levels: list[int] | None = None,
                        ecmp: bool = False) -> None:
        """MODIFY an existing path set (as the controller does when levels change)."""
        self.p4rt.write(update("MODIFY", table_entry=self.p4rt.table_entry(
            f"{ING}.routing.path_set", {"meta.route.path_set_id": ps}, f"{ING}.routing.set_members",
            self._members(ports, levels, ecmp))))

    def port_macs(self, port: int, src: str, dst: str) -> None:
        self.insert(f"{EGR}.rewrite.port_mac", {"standard_metadata.egress_port": port},
                    f"{EGR}.rewrite.set_macs", {"src_mac": mac_int(src), "dst_mac": mac_int(dst)})

    def port_down(self, port: int) -> None:
        """The controller's liveness write (register ``port_down``), undone after the test."""
        def entry(value: bytes) -> p4runtime_pb2.RegisterEntry:
            re = p4runtime_pb2.RegisterEntry(register_id=self.p4rt.object_id("registers", "port_down"))
            re.index.index = port
            re.data.bitstring = value
            return re
        self.write_undoable(update("MODIFY", register_entry=entry(b"\x01")),
                            update("MODIFY", register_entry=entry(b"\x00")))

    def counter(self, name: str, index: int) -> int:
        return self.read_counter(name, index)[0]

    def collect(self, count: int, timeout: float = 5.0) -> list[tuple[int, bytes]]:
        """The next ``count`` packets the switch sent, as (port, bytes)."""
        out = []
        for _ in range(count):
            res = tu.dp_poll(self, device_number=0, timeout=timeout)
            if not isinstance(res, self.dataplane.PollSuccess):
                self.fail(f"expected {count} packets, got {len(out)}")
            out.append((res.port, bytes(res.packet)))
        return out
