"""A whole fabric of in-process p4sim switches wired by modelled links on one virtual clock.

This is the no-root way to run a fabric YAML end to end: every switch is a ``p4sim.Switch`` in
virtual-clock mode, each egress port's queue drains at the link's modelled rate, and a frame that
departs port P of switch A arrives at the peer port after the link delay.  Hosts (GPU NICs) inject
frames at their scheduled times and the receiving side hands delivered frames to a callback.

Time advances on one event heap: frames arriving over links or at hosts, timers (failures,
controller polls), host events (a NIC's next transmission) and each switch's next queue
departure.  A switch's clock is brought forward only when one of its own events is due (its next
departure, or a frame arriving on one of its ports), so the cost of an event does not grow with
the number of switches; timers marked ``sync`` (anything that reads or writes switch state, like
the controller) first bring every switch to the timer's time.  Every link has a positive delay, so
a departure at time t only causes events after t and no switch ever receives a frame "in its
past".  Ties are broken by kind (departures first, as a switch that is due releases its packets
before it takes the next one) and then by insertion order, so runs are deterministic.

Rates are modelled, not real: ``pps_per_gbps`` converts a link's capacity into the queue rate
(packets per second of virtual time).  The default, 10,000 pps per Gbps, makes a 100G link send
one packet per virtual microsecond, which keeps queue delays in the tens of microseconds where
flowlet timeouts and ECN windows live, while the number of simulated packets stays small.
``byte_rate=True`` instead serves every queue by bytes at the link's capacity (p4sim.tm's byte
rate), so a 64-byte ACK takes 64 bytes of link time, not a full frame's slot.

``buffer`` gives every switch a shared buffer (p4sim.buffer): ``BufferSpec(lossless=True)`` is a
PFC fabric (per ingress port and class XOFF/XON at a dynamic threshold, headroom of 2 BDP + 2 MTU
per port); the PAUSE reaches the upstream port (or host NIC, through ``on_host_pause``) after the
link delay and stops that class there.  PAUSE frames are signals here, not frames on the wire
(64 bytes each: their link time is negligible).  Two PFC classes: the top queue (control: CNPs
and ACKs) and every other queue (data).  ``BufferSpec(lossless=False)`` is the lossy mode:
dynamic-threshold drops, no pauses.

``backend`` is every switch's p4sim backend ("python", the reference, or "native"; None:
``$P4SIM_BACKEND``, else the reference).  Both give identical runs (tests/native/test_fabric_identity.py).
"""
from __future__ import annotations

import heapq
import itertools
import random
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

from control_plane.model import Fabric
from p4sim.buffer import BufferConfig, headroom_for

DeliverFn = Callable[[float, str, bytes], None]  # (time_us, host name, frame)


@dataclass(frozen=True)
class PortRef:
    switch: str
    port: int


@dataclass(frozen=True)
class BufferSpec:
    """Every switch's shared buffer.  ``kb_per_gbps``: buffer per Gbps of the switch's port
    capacity; 5 KB/Gbps is Broadcom Tomahawk's ratio (16 MB for 32 x 100G), so a leaf with six
    100G ports has 3 MB.  ``alpha``: the dynamic threshold's factor.  ``mtu``: the largest frame,
    for headroom."""

    lossless: bool = True
    kb_per_gbps: float = 5.0
    alpha: float = 0.125
    mtu: int = 4200


HostPauseFn = Callable[[float, str, int, bool], None]  # (time_us, host, PFC class, xoff)
DATA_CLASS, CONTROL_CLASS = 0, 1


class SimFabric:
    """Switches + links + hosts of one fabric on a shared virtual clock.

    Each switch is a ``p4sim.p4rt.device.Device`` (the same object ``p4sim run`` serves), so the
    fabric can be configured over real P4Runtime (``serve_p4runtime``) exactly like separate
    ``simple_switch_grpc`` processes, or loaded in-process (``install_program``) for fast tests.
    """

    def __init__(self, fabric: Fabric, pps_per_gbps: float = 10_000.0,
                 queue_depth: Optional[int] = None, seed: int = 0, byte_rate: bool = False,
                 buffer: Optional[BufferSpec] = None, backend: Optional[str] = None) -> None:
        from p4sim.p4rt.device import Device, DeviceOptions

        self.fabric = fabric
        self.now_us = 0.0
        self.pps_per_gbps = pps_per_gbps
        self.byte_rate = byte_rate
        self.buffer_spec = buffer
        dp = fabric.dataplane
        self.devices = {
            name: Device(DeviceOptions(device_id=fabric.switches[name].device_id, clock="virtual",
                                       priority_queues=dp.priority_queues, seed=seed + i,
                                       backend=backend),
                         switch_factory=self._switch_factory(name))
            for i, name in enumerate(sorted(fabric.switches))
        }
        self.on_host_pause: Optional[HostPauseFn] = None
        self.host_pause_us: dict[str, float] = {}  # filled by whoever pauses hosts (RdmaNetwork)
        # Wiring: (switch, port) -> (peer switch, peer port, delay) or (host name, delay).
        self._rates: dict[tuple[str, int], float] = {}  # (switch, port) -> Gbps it sends at
        self.peer: dict[PortRef, tuple[PortRef, float]] = {}
        self.host_port: dict[PortRef, tuple[str, float]] = {}
        self.host_attach: dict[str, tuple[PortRef, float]] = {}
        for sname, s in fabric.switches.items():
            dev = self.devices[sname]
            for number, port in s.ports.items():
                # Device remembers queue settings and re-applies them to every pipeline pushed.
                self.set_port_rate(sname, number, port.capacity_gbps)
                if queue_depth is not None:
                    dev.set_queue_depth(queue_depth, number)
                ref = PortRef(sname, number)
                if port.peer_switch is not None:
                    self.peer[ref] = (PortRef(port.peer_switch, port.peer_port), port.delay_us)
                elif port.host is not None:
                    self.host_port[ref] = (port.host, port.delay_us)
                    self.host_attach[port.host] = (ref, port.delay_us)
        self.down: set[PortRef] = set()
        self.loss: dict[PortRef, float] = {}  # silent per-packet drop probability (gray failure)
        self._loss_rng = random.Random(seed ^ 0x9E3779B9)
        self._heap: list[tuple] = []  # (time, kind rank, seq, kind, payload)
        self._seq = itertools.count()
        self._due: dict[str, Optional[float]] = {name: None for name in self.devices}  # scheduled departure
        self.deliver: Optional[DeliverFn] = None
        self.dropped_on_wire = 0
        self.dropped_gray = 0
        self.tx_packets: dict[PortRef, int] = {}  # frames sent on each switch-to-switch port
        self.traversals = 0  # frames taken in by a switch (the bench's "fabric packets")
        self.events = 0
        self.servers: dict[str, object] = {}
        for name, dev in self.devices.items():
            dev.transmit = self._make_output_handler(name)

    def _switch_factory(self, name: str):
        """Every switch a device builds (in-process or pushed over P4Runtime) gets the fabric's
        byte rates and shared buffer, wired to the PFC signalling of this fabric."""
        from p4sim.p4rt.device import default_switch_factory

        def build(program, options):
            sw = default_switch_factory(program, options)
            s = self.fabric.switches[name]
            if self.byte_rate:
                for number, port in s.ports.items():
                    sw.tm.set_byte_rate(self._rates.get((name, number), port.capacity_gbps) * 1e9, number)
            spec = self.buffer_spec
            if spec is not None:
                nq = sw.priority_queues
                total = sum(p.capacity_gbps for p in s.ports.values())
                buf = sw.tm.set_buffer(BufferConfig(
                    int(spec.kb_per_gbps * 1000 * total), alpha=spec.alpha, lossless=spec.lossless,
                    classes=tuple(CONTROL_CLASS if q == nq - 1 and nq > 1 else DATA_CLASS for q in range(nq)),
                    headroom_bytes={n: headroom_for(p.capacity_gbps, p.delay_us, spec.mtu)
                                    for n, p in s.ports.items()},
                    xon_offset_bytes=2 * spec.mtu))
                buf.on_pfc = lambda ingress, cls, xoff, t: self._pfc(name, ingress, cls, xoff, t)
            return sw

        return build

    def set_port_rate(self, switch: str, port: int, gbps: float) -> None:
        """The rate a switch port sends at (a degraded link: less than its capacity)."""
        self._rates[(switch, port)] = gbps
        dev = self.devices[switch]
        dev.set_queue_rate(int(gbps * self.pps_per_gbps), port)
        if self.byte_rate and dev.switch is not None:
            dev.switch.tm.set_byte_rate(gbps * 1e9, port)

    def _pfc(self, name: str, ingress: int, cls: int, xoff: bool, t: float) -> None:
        """A switch's buffer sends XOFF/XON for ``cls`` out of ``ingress``: it reaches the peer
        one link delay later."""
        ref = PortRef(name, ingress)
        if ref in self.peer:
            peer, delay = self.peer[ref]
            self._push(t + delay, _PFC, (peer, cls, xoff))
        elif ref in self.host_port:
            host, delay = self.host_port[ref]
            self._push(t + delay, _PFC, (host, cls, xoff))

    def pause_us(self) -> dict[tuple[str, int], float]:
        """Time each switch port spent paused by PFC (summed over classes), up to now."""
        out: dict[tuple[str, int], float] = {}
        for name, dev in self.devices.items():
            if dev.switch is not None:
                for (port, _), us in dev.switch.tm.pause_time_us(self.now_us).items():
                    out[(name, port)] = out.get((name, port), 0.0) + us
        return out

    def switch(self, name: str):
        """The running ``p4sim.Switch`` of a device (after a pipeline was installed)."""
        return self.devices[name].switch

    def install_program(self, program) -> None:
        """Load ``program`` on every switch directly (no P4Runtime): what sweeps use."""
        for dev in self.devices.values():
            dev.install(dev.switch_factory(program, dev.options))

    def serve_p4runtime(self, host: str = "127.0.0.1") -> dict[str, str]:
        """Start a P4Runtime server per switch on a free loopback port; returns the addresses.
        Used where the controller (or the push) is under test."""
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

    # ---------------------------------------------------------------- the event heap
    def _push(self, t: float, kind: int, payload) -> None:
        heapq.heappush(self._heap, (t, kind, next(self._seq), payload))

    def _bring(self, name: str, t: float, serve: bool = False) -> None:
        """Advance one switch's clock to ``t`` (its departures due on the way go out); ``serve``:
        also when it is there already (a departure became due at its present instant)."""
        dev = self.devices[name]
        sw = dev.switch
        if sw is None:
            return
        now = sw.now_us
        if t > now or serve:
            if self.servers:
                dev.advance(t - now)  # the device also hands digests to its P4Runtime server
            else:
                sw.run_to(t)  # advance(t - now), the switch's clock being virtual
                if sw.ctx.digests:
                    _drain_digests(dev, sw)

    def _reschedule(self, name: str) -> None:
        sw = self.devices[name].switch
        nd = sw.tm.next_departure() if sw is not None else None
        if nd is not None and nd != self._due[name]:  # _push, inline (after every switch event)
            heapq.heappush(self._heap, (nd, _DEPART, next(self._seq), name))
        self._due[name] = nd

    def _sync_all(self, t: float) -> None:
        for name in self.devices:
            self._bring(name, t)
            self._reschedule(name)

    # ---------------------------------------------------------------- wiring of departures
    def _make_output_handler(self, name: str) -> Callable[[int, bytes], None]:
        dev = self.devices[name]
        # port -> (PortRef, peer wiring or None, host wiring or None): the wiring is fixed at
        # construction, so each port's is looked up once, not per frame (every frame of the
        # fabric passes here, and hashing a PortRef is a Python call)
        routes: dict[int, tuple] = {}

        def on_output(port: int, frame: bytes) -> None:
            t = dev.switch.clock.now_us  # called during the switch's advance: the departure time
            route = routes.get(port)
            if route is None:
                ref = PortRef(name, port)
                route = routes[port] = (ref, self.peer.get(ref), self.host_port.get(ref))
            ref, peer, host = route
            if self.down and ref in self.down:
                self.dropped_on_wire += 1
            elif self.loss and ref in self.loss and self._loss_rng.random() < self.loss[ref]:
                self.dropped_gray += 1
            elif peer is not None:  # _push, inline: every switch-to-switch hop passes here
                self.tx_packets[ref] = self.tx_packets.get(ref, 0) + 1
                heapq.heappush(self._heap, (t + peer[1], _ARRIVE, next(self._seq), (peer[0], frame)))
            elif host is not None:
                self._push(t + host[1], _DELIVER, (host[0], frame))
            else:
                self.dropped_on_wire += 1  # an unwired port: the frame goes nowhere

        return on_output

    # ---------------------------------------------------------------- control
    def at(self, time_us: float, action: Callable[[], None], sync: bool = True) -> None:
        """Run ``action`` when the fabric clock reaches ``time_us``.  ``sync``: bring every switch
        to that time first (link failures, controller polls and pushes); host events pass False."""
        self._push(time_us, _TIMER if sync else _HOST, action)

    def fail_link(self, a: str, b: str) -> list[PortRef]:
        """Take down every link between switches a and b (both ends); returns the ports."""
        ends = self.link_ports(a, b)
        for ref in ends:
            self.down.add(ref)
            self.devices[ref.switch].set_port_up(ref.port, False)
        return ends

    def link_ports(self, a: str, b: str) -> list[PortRef]:
        """Both ends of every link between switches a and b."""
        return [ref for ref, (peer, _) in self.peer.items() if {ref.switch, peer.switch} == {a, b}]

    def gray_fail(self, a: str, b: str, drop_probability: float) -> None:
        """The a-b link silently drops each frame with ``drop_probability`` (both directions); the
        ports stay up, so nothing but end-to-end loss shows it."""
        for ref in self.link_ports(a, b):
            self.loss[ref] = drop_probability

    # ---------------------------------------------------------------- running
    def inject(self, time_us: float, host: str, frame: bytes) -> None:
        """A host NIC puts ``frame`` on its link at ``time_us``."""
        ref, delay = self.host_attach[host]
        self._push(time_us + delay, _ARRIVE, (ref, frame))

    def run(self, sends: Iterable = (), until_us: float = float("inf"),
            on_send: Optional[Callable] = None) -> None:
        """Play ``sends`` (objects with time_us, src (with .name) and frame, in time order) and
        everything they and the scheduled events cause, up to ``until_us`` of virtual time."""
        sends = iter(sends)
        pending = next(sends, None)
        token = object()  # a _SEND event left over from an earlier run() is ignored
        if pending is not None:
            self._push(pending.time_us, _SEND, token)
        heap = self._heap
        while heap:
            t, kind, _, payload = heap[0]
            if t > until_us:
                break
            heapq.heappop(heap)
            self.events += 1
            if t > self.now_us:
                self.now_us = t
            if kind == _DEPART:
                if self._due.get(payload) != t:
                    continue  # stale: the switch's head of line changed since
                self._due[payload] = None
                self._bring(payload, t, serve=True)
                self._reschedule(payload)
            elif kind == _ARRIVE:
                ref, frame = payload
                if self.down and ref in self.down:
                    self.dropped_on_wire += 1
                    continue
                name = ref.switch
                dev = self.devices[name]
                sw = dev.switch
                self.traversals += 1
                if self.servers or sw is None or dev.on_digests is not None:
                    self._bring(name, t)
                    if sw is None or self.servers:
                        dev.inject(ref.port, frame)
                    else:
                        sw.send(ref.port, frame)
                        _drain_digests(dev, sw)
                else:
                    # Every frame a switch takes in passes here: advance and send in one call
                    # (Switch.arrive_at), what Device.inject does minus its locking and
                    # re-service, and digests dropped unread as _drain_digests does when
                    # nobody listens.
                    sw.arrive_at(t, ref.port, frame)
                    if sw.ctx.digests:
                        sw.digests()
                self._reschedule(name)
            elif kind == _DELIVER:
                if self.deliver is not None:
                    self.deliver(t, *payload)
            elif kind == _PFC:
                target, cls, xoff = payload
                if isinstance(target, PortRef):
                    self._bring(target.switch, t)
                    sw = self.devices[target.switch].switch
                    if sw is not None:
                        sw.tm.pause(target.port, cls, xoff, t)
                        self._bring(target.switch, t, serve=True)  # a resumed queue may send now
                        self._reschedule(target.switch)
                elif self.on_host_pause is not None:
                    self.on_host_pause(t, target, cls, xoff)
            elif kind == _HOST:
                payload()
            elif kind == _TIMER:
                self._sync_all(t)
                payload()
                self._sync_all(t)
            elif payload is token:  # _SEND: the next entry of a fixed schedule
                while pending is not None and pending.time_us <= t:
                    if on_send is not None:
                        on_send(pending)
                    self.inject(pending.time_us, pending.src.name, pending.frame)
                    pending = next(sends, None)
                if pending is not None:
                    self._push(pending.time_us, _SEND, token)


def _drain_digests(dev, sw) -> None:
    """Digests a switch generated go where ``Device`` sends them (nowhere when nobody listens)."""
    if sw.ctx.digests:
        digests = sw.digests()
        if dev.on_digests is not None:
            dev.on_digests(digests)


# Event kinds, in tie-break order at one instant.
_DEPART, _TIMER, _SEND, _HOST, _ARRIVE, _DELIVER, _PFC = range(7)
