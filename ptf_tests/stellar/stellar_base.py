"""A Stellar leaf over P4Runtime: the test topology, packet builders and configuration helpers.

Every test starts from the same leaf, configured only through P4Runtime writes named as in
p4src/CONTRACT.md (so the suite runs unchanged against BMv2), and every write is undone after
the test by the base class's autocleanup.  The writes come from ptf_tests/stellar/arch.py, the
one per-architecture place (test parameter ``arch``: the v1model program, or the TNA program on
p4sim's TNA pipe, where a path set is a group and port 68 recirculates feedback):

    port 1  host 10.0.1.1                 10.0.1.1/32 -> path set 11 = {1}
    port 2  uplink to spine A  \\
    port 3  uplink to spine B  /          10.0.2.0/24 -> path set 1 = {2, 3}
    port 4  single-uplink tests           10.0.4.0/24 -> path set 4 = {4}

ECN marking is switched off on every port (v1model: default action ``ecn_off``; TNA: no
``ecn.prob`` rows) except where a test
configures it, so a rate-limited queue changes no packet it does not study.  The sketch's
elephant threshold is out of reach; elephants come only from hints.

State the data plane keeps across tests (flow slots, per-port queue-delay readings, reorder
PSNs) is keyed by flow or port, so each test uses its own QPs/ports; on a virtual clock the
setUp also lets enough time pass for every earlier reading to be stale.
"""
from __future__ import annotations

from typing import Iterable, Sequence

import ptf.testutils as tu
from scapy.layers.l2 import Ether
from scapy.packet import Packet

from bmv2_env.target import NotSupportedByTarget
from ptf_tests.base import P4RuntimeTest
from ptf_tests.stellar.arch import Leaf, NotOnArch, leaf_for
from ptf_tests.stellar.packets import *  # noqa: F401,F403 - the tests take the leaf's numbers and packets from here
from ptf_tests.stellar.realtime import RealTime

# The settle time in real time (scaled, realtime.py): longer than qdelay_max_age_us and an ECN
# window -- the state a timing test on a port of an earlier one could still see.  Flowlet
# state is per flow, and every test has its own flows.
SETTLE_REALTIME_US = 250
# The leaf's ports whose departures the tests count (telemetry.tx_port).
LEAF_PORTS = (1, 2, 3, 4)

# --------------------------------------------------------------------------- the test class
class StellarTest(P4RuntimeTest):
    """A freshly configured leaf (see the module docstring) for every test, on either
    architecture: ``self.leaf`` (ptf_tests/stellar/arch.py) turns the configuration requests
    below into the program's own writes, and ``self.arch`` says which program runs."""

    def setUp(self) -> None:
        super().setUp()
        self.arch = tu.test_param_get("arch", "v1model")
        self.leaf: Leaf = leaf_for(self.arch, self)
        self.leaf.setup(BASE_PARAMS)
        self.path_set(HOST_SET, [HOST_PORT])
        self.route(HOST_IP, 32, HOST_SET)
        self.path_set(UPLINK_SET, [UPLINK_A, UPLINK_B])
        self.route(REMOTE_NET, 24, UPLINK_SET)
        self.path_set(SINGLE_SET, [SINGLE_PORT])
        self.route(SINGLE_NET, 24, SINGLE_SET)
        self.leaf.port_macs({port: (mac_int(port_mac(port)), mac_int(neighbour_mac(port)))
                             for port in (HOST_PORT, UPLINK_A, UPLINK_B, SINGLE_PORT)})
        # None on a virtual clock; on a wall clock the real-time mode of the timing tests
        # (realtime.py), switched on by require_timing().
        self.realtime: RealTime | None = None
        if self.target.has_virtual_clock:
            self.target.advance_us(SETTLE_US)

    def tearDown(self) -> None:
        try:
            leaf = getattr(self, "leaf", None)
            if leaf is not None:
                leaf.cleanup()
        finally:
            super().tearDown()

    def on_arch(self, fn, *args, **kwargs):
        """Run a leaf request; where this architecture's program has no equivalent, skip the
        test with the reason printed (and counted by PTF as a skip)."""
        try:
            return fn(*args, **kwargs)
        except NotOnArch as err:
            reason = f"{self.arch}: {err}"
            print(f"SKIP {self.id()}: {reason}")
            self.skipTest(reason)

    def require_timing(self) -> None:
        """A timing test starts here.  On a virtual clock nothing changes (it drives time).  On a
        wall clock (BMv2, ``p4sim run --clock wall``) the test runs in real-time mode: the
        switch-wide times are pushed scaled (realtime.py's scale), so are the times the test sets
        from now on (``set_params``, ``ecn_port``), and time-defined state of the previous
        test is let expire.  The real-time mode is v1model's (BMv2's architecture): the TNA
        program runs on p4sim's virtual clock only."""
        if self.target.has_virtual_clock:
            return
        told = tu.test_param_get("timing", "")
        if told.startswith("skip"):
            print(f"SKIP {self.id()}: {told}")
            self.skipTest(told)
        if self.arch != "v1model":
            reason = f"{self.arch} on a wall clock: the real-time mode is v1model's (BMv2's)"
            print(f"SKIP {self.id()}: {reason}")
            self.skipTest(reason)
        self.realtime = RealTime(self)
        self.set_params(**{k: v for k, v in BASE_PARAMS.items() if k.endswith("_us")})
        self.realtime.settle(SETTLE_REALTIME_US)

    def t_us(self, test_us: int) -> int:
        """A time in the switch's µs: itself on a virtual clock, scaled in real time."""
        return self.realtime.us(test_us) if self.realtime else test_us

    def t_pps(self, test_pps: int) -> int:
        """A queue rate as the switch is to be set: itself on a virtual clock, scaled down in
        real time (the service time grows with the scale)."""
        return self.realtime.pps(test_pps) if self.realtime else test_pps

    def name(self, key: str) -> str:
        """A P4Info name by role (arch.py's tables), skipping where the program has none."""
        return self.on_arch(self.leaf.name, key)

    # -- configuration (CONTRACT.md section 2; section 9 for TNA) -------------------------------
    def set_params(self, **changes: int) -> None:
        """Switch-wide parameters, in v1model's names (config.params); the TNA leaf translates
        the ones its program has (units: ns) and skips the test for the others.  In real-time
        mode the ``*_us`` ones are scaled."""
        if self.realtime:
            changes = self.realtime.scale_params(changes)
        self.on_arch(self.leaf.set_params, changes)

    def route(self, prefix: str, plen: int, path_set: int) -> None:
        self.leaf.route(prefix, plen, path_set)

    def path_set(self, ps: int, ports: Sequence[int], levels: Sequence[int] = (),
                 ecmp: bool = False) -> None:
        self.leaf.path_set(ps, ports, levels, ecmp)

    def modify_path_set(self, ps: int, ports: Sequence[int], levels: Sequence[int] = (),
                        ecmp: bool = False) -> None:
        """Change a path set's levels or mode, as the controller does (the entry's own DELETE
        still undoes it)."""
        self.on_arch(self.leaf.modify_path_set, ps, ports, levels, ecmp)

    def ecn_port(self, port: int, *, kmin_us: int, kmax_us: int, pmax: int, adapt: int = 0,
                 k_init_us: int | None = None, window_us: int = 100, target_us: int = 4,
                 step_us: int = 2, idle_bytes: int = 625000) -> None:
        """ECN on ``port``; in real-time mode its times (``*_us``) are scaled."""
        times = dict(kmin_us=kmin_us, kmax_us=kmax_us, window_us=window_us, target_us=target_us,
                     step_us=step_us, k_init_us=kmin_us if k_init_us is None else k_init_us)
        if self.realtime:
            times = self.realtime.scale_params(times)
        self.on_arch(self.leaf.ecn_port, port, pmax=pmax, adapt=adapt, idle_bytes=idle_bytes,
                     **times)

    def hint_elephant(self, dst: str, qp: int, src: str = HOST_IP) -> None:
        self.leaf.hint_elephant(src, dst, qp)

    def tenant(self, subnet: str, plen: int, tenant: int) -> None:
        self.leaf.tenant(subnet, plen, tenant)

    def port_down(self, port: int) -> None:
        """The port is dead: v1model, the controller's liveness-table write; TNA, the link goes
        down and the packet generator's port-down packet clears it in the data plane."""
        self.leaf.port_down(port)

    def port_up(self, port: int) -> None:
        self.leaf.port_up(port)

    def probe(self, port: int) -> None:
        """Make ``port`` report its queue delay now.  TNA only (HULA's rule: the best member
        changes when another member reports a lower delay, so an idle member must send to be
        seen); on v1model every packet reads every member's delay and this does nothing.  Its
        packet goes out on ``port`` like any other: tests that count output filter by QP."""
        self.leaf.probe(port)

    def qps_hashing_to(self, member: int, dst: str, count: int, n: int, start: int,
                       src: str = HOST_IP) -> list[int]:
        """The first ``n`` dest QPs >= ``start`` whose flows hash onto ``member`` in this
        program (written from the P4 source, so a test relying on it checks the hash too)."""
        out, qp = [], start
        while len(out) < n:
            if self.leaf.hash_member(src, dst, qp, count) == member:
                out.append(qp)
            qp += 1
        return out

    def routed(self, pkt: Packet | bytes, port: int, *, ecn: int | None = None) -> Packet:
        """The expected packet (both programs rewrite MACs per egress port)."""
        return routed(pkt, port, ecn=ecn)

    def reorder_total(self, ports: Sequence[int]) -> int:
        """PSN regressions the switch counted (v1model per port, TNA switch-wide)."""
        return self.leaf.reorder_total(ports)

    # -- telemetry over P4Runtime -------------------------------------------------------------
    def packets(self, counter: str, index: int) -> int:
        return self.read_counter(counter, index)[0]

    def drops(self, reason: int) -> int:
        return self.packets(self.name("drops"), reason)

    def malformed(self, kind: int) -> int:
        return self.packets(self.name("malformed"), kind)

    def path_changes(self, reason: int) -> int:
        return self.packets(self.name("path_changes"), reason)

    # -- traffic --------------------------------------------------------------------------------
    def send_at_once(self, port: int, pkts: Iterable[Packet | bytes]) -> None:
        """Send packets and wait until the switch took them all in, so on a virtual clock they
        all arrive at the same instant (the clock moves only when the test advances it)."""
        pkts = list(pkts)
        if self.realtime:
            # Serialised first (Scapy takes ms per packet, as long as a service time takes on
            # the virtual clock's scale), then sent back to back; the switch's own ingress
            # counter is the barrier.
            wire = [bytes(p) for p in pkts]
            before = self.realtime.received(port)
            for p in wire:
                tu.send_packet(self, port, p)
            self.realtime.wait_received(port, len(pkts), before)
            return
        before = self.received_count()
        for p in pkts:
            tu.send_packet(self, port, p)
        self.wait_ingested(before, len(pkts))

    def transmitted(self) -> int:
        """Packets the switch sent so far: the target's tally, or in real-time mode the
        program's egress counter over the leaf's ports (every target reads it)."""
        if self.realtime:
            return self.realtime.departed(LEAF_PORTS)
        return int(self.target_op(self.target.stats).get("transmitted", 0))

    def collect(self, count: int, timeout: float = 5.0) -> list[tuple[int, Packet]]:
        """The next ``count`` packets the switch sent, oldest first over all ports (the PTF
        dataplane orders ports by arrival), as (port, parsed packet)."""
        out = []
        for _ in range(count):
            res = tu.dp_poll(self, device_number=0, timeout=timeout)
            if not isinstance(res, self.dataplane.PollSuccess):
                self.fail(f"expected {count} packets from the switch, got {len(out)}")
            out.append((res.port, Ether(bytes(res.packet))))
        return out

    def collect_sent_since(self, before: int) -> list[tuple[int, Packet]]:
        """Everything the switch transmitted since ``transmitted()`` was ``before`` (in real
        time: counted by egress, so on its way; ``collect`` waits for it)."""
        if not self.realtime:
            self.target_op(self.target.sync)
        return self.collect(self.transmitted() - before)

    def tally(self) -> int | None:
        """Packets the switch has transmitted so far, or None where the target cannot tell."""
        try:
            return int(self.target.stats().get("transmitted", 0))
        except NotSupportedByTarget:
            return None

    def collect_all(self, since: int | None, quiet_s: float = 1.0) -> list[tuple[int, Packet]]:
        """Every packet sent since ``tally()`` was ``since``: counted exactly where the target
        keeps tallies, else whatever arrives until the ports stay quiet for ``quiet_s``."""
        if since is not None:
            self.target.sync()
            return self.collect(self.tally() - since)
        out = []
        while True:
            res = tu.dp_poll(self, device_number=0, timeout=quiet_s)
            if not isinstance(res, self.dataplane.PollSuccess):
                return out
            out.append((res.port, Ether(bytes(res.packet))))

    def start_tap(self) -> None:
        """From now on ``take()`` returns every packet the switch sends, none twice."""
        self._tapped = self.transmitted()

    def take(self) -> list[tuple[int, Packet]]:
        """Everything sent since the last ``take()`` (or ``start_tap()``), in departure order."""
        got = self.collect_sent_since(self._tapped)
        self._tapped += len(got)
        return got

