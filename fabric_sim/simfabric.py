"""A whole fabric of in-process p4sim switches wired by modelled links on one virtual clock.

This is the no-root way to run a fabric YAML end to end: every switch is a ``p4sim.Switch`` in
virtual-clock mode, each egress port's queue drains at the link's modelled rate, and a frame that
departs port P of switch A arrives at the peer port after the link delay.  Hosts (GPU NICs) inject
frames at their scheduled times and the receiving side hands delivered frames to a callback.

Time advances event by event: the next event is the earliest of (next scheduled injection, next
frame arriving over a link, next departure from any switch queue).  All switch clocks advance by
the same step so they always agree, and because every link has a positive delay a departure at
time t can only cause an arrival after t — so no switch ever receives a frame "in its past".

Rates are modelled, not real: ``pps_per_gbps`` converts a link's capacity into the queue rate
(packets per second of virtual time).  The default, 10,000 pps per Gbps, makes a 100G link send
one packet per virtual microsecond, which keeps queue delays in the tens of microseconds where
flowlet timeouts and ECN windows live, while the number of simulated packets stays small.
"""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

from control_plane.model import Fabric

DeliverFn = Callable[[float, str, bytes], None]  # (time_us, host name, frame)


@dataclass(frozen=True)
class PortRef:
    switch: str
    port: int


class SimFabric:
    """Switches + links + hosts of one fabric on a shared virtual clock.

    Each switch is a ``p4sim.p4rt.device.Device`` (the same object ``p4sim run`` serves), so the
    fabric can be configured over real P4Runtime (``serve_p4runtime``) exactly like separate
    ``simple_switch_grpc`` processes, or loaded in-process (``install_program``) for fast tests.
    """

    def __init__(self, fabric: Fabric, pps_per_gbps: float = 10_000.0,
                 queue_depth: Optional[int] = None, seed: int = 0) -> None:
        from p4sim.p4rt.device import Device, DeviceOptions

        self.fabric = fabric
        self.now_us = 0.0
        dp = fabric.dataplane
        self.devices = {
            name: Device(DeviceOptions(device_id=fabric.switches[name].device_id, clock="virtual",
                                       priority_queues=dp.priority_queues, seed=seed + i))
            for i, name in enumerate(sorted(fabric.switches))
        }
        # Wiring: (switch, port) -> (peer switch, peer port, delay) or (host name, delay).
        self.peer: dict[PortRef, tuple[PortRef, float]] = {}
        self.host_port: dict[PortRef, tuple[str, float]] = {}
        self.host_attach: dict[str, tuple[PortRef, float]] = {}
        for sname, s in fabric.switches.items():
            dev = self.devices[sname]
            for number, port in s.ports.items():
                # Device remembers queue settings and re-applies them to every pipeline pushed.
                dev.set_queue_rate(int(port.capacity_gbps * pps_per_gbps), number)
                if queue_depth is not None:
                    dev.set_queue_depth(queue_depth, number)
                ref = PortRef(sname, number)
                if port.peer_switch is not None:
                    self.peer[ref] = (PortRef(port.peer_switch, port.peer_port), port.delay_us)
                elif port.host is not None:
                    self.host_port[ref] = (port.host, port.delay_us)
                    self.host_attach[port.host] = (ref, port.delay_us)
        self.down: set[PortRef] = set()
        self._arrivals: list[tuple[float, int, PortRef, bytes]] = []  # frames on the wire
        self._seq = itertools.count()
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self.deliver: Optional[DeliverFn] = None
        self.dropped_on_wire = 0
        self.servers: dict[str, object] = {}
        for name, dev in self.devices.items():
            dev.transmit = self._make_output_handler(name)

    def switch(self, name: str):
        """The running ``p4sim.Switch`` of a device (after a pipeline was installed)."""
        return self.devices[name].switch

    def install_program(self, program) -> None:
        """Load ``program`` on every switch directly (no P4Runtime)."""
        for dev in self.devices.values():
            dev.install(dev.switch_factory(program, dev.options))

    def serve_p4runtime(self, host: str = "127.0.0.1") -> dict[str, str]:
        """Start a P4Runtime server per switch on a free loopback port; returns the addresses."""
        from p4sim.p4rt.server import P4RuntimeServer

        addresses = {}
        for name, dev in self.devices.items():
            server = P4RuntimeServer(dev, f"{host}:0")
            server.start()
            self.servers[name] = server
            addresses[name] = f"{host}:{server.port}"
        return addresses

    def stop(self) -> None:
        for server in self.servers.values():
            server.stop(0)
        self.servers.clear()

    # ---------------------------------------------------------------- wiring of departures
    def _make_output_handler(self, name: str) -> Callable[[int, bytes], None]:
        dev = self.devices[name]

        def on_output(port: int, frame: bytes) -> None:
            t = dev.switch.now_us  # called during the switch's advance: the departure time
            ref = PortRef(name, port)
            if ref in self.down:
                self.dropped_on_wire += 1
            elif ref in self.peer:
                peer, delay = self.peer[ref]
                heapq.heappush(self._arrivals, (t + delay, next(self._seq), peer, frame))
            elif ref in self.host_port:
                host, delay = self.host_port[ref]
                if self.deliver is not None:
                    self.deliver(t + delay, host, frame)
            else:
                self.dropped_on_wire += 1  # an unwired port: the frame goes nowhere

        return on_output

    # ---------------------------------------------------------------- control
    def at(self, time_us: float, action: Callable[[], None]) -> None:
        """Run ``action`` when the fabric clock reaches ``time_us`` (link failures, pushes...)."""
        heapq.heappush(self._timers, (time_us, next(self._seq), action))

    def fail_link(self, a: str, b: str) -> list[PortRef]:
        """Take down every link between switches a and b (both ends); returns the ports."""
        ends = [ref for ref, (peer, _) in self.peer.items()
                if {ref.switch, peer.switch} == {a, b}]
        for ref in ends:
            self.down.add(ref)
            self.devices[ref.switch].set_port_up(ref.port, False)
        return ends

    # ---------------------------------------------------------------- running
    def inject(self, time_us: float, host: str, frame: bytes) -> None:
        """A host NIC puts ``frame`` on its link at ``time_us``."""
        ref, delay = self.host_attach[host]
        heapq.heappush(self._arrivals, (time_us + delay, next(self._seq), ref, frame))

    def _next_departure(self) -> Optional[float]:
        times = []
        for dev in self.devices.values():
            with dev.lock:
                t = dev.switch.next_departure_us() if dev.switch is not None else None
            if t is not None:
                times.append(t)
        return min(times) if times else None

    def _advance_to(self, t: float) -> None:
        if t > self.now_us:
            dt = t - self.now_us
            for dev in self.devices.values():
                if dev.switch is not None:
                    dev.advance(dt)
            self.now_us = t

    def run(self, sends: Iterable, until_us: float, on_send: Optional[Callable] = None) -> None:
        """Play ``sends`` (objects with time_us, src (with .name) and frame, in time order) and
        everything they cause, up to ``until_us`` of virtual time."""
        sends = iter(sends)
        pending = next(sends, None)
        while True:
            candidates = []
            if pending is not None:
                candidates.append(pending.time_us)
            if self._arrivals:
                candidates.append(self._arrivals[0][0])
            if self._timers:
                candidates.append(self._timers[0][0])
            dep = self._next_departure()
            if dep is not None:
                candidates.append(dep)
            if not candidates:
                break
            t = max(min(candidates), self.now_us)
            if t > until_us:
                break
            self._advance_to(t)
            while self._timers and self._timers[0][0] <= t:
                heapq.heappop(self._timers)[2]()
            while pending is not None and pending.time_us <= t:
                if on_send is not None:
                    on_send(pending)
                self.inject(pending.time_us, pending.src.name, pending.frame)
                pending = next(sends, None)
            while self._arrivals and self._arrivals[0][0] <= t:
                _, _, ref, frame = heapq.heappop(self._arrivals)
                if ref in self.down:
                    self.dropped_on_wire += 1
                    continue
                self.devices[ref.switch].inject(ref.port, frame)
