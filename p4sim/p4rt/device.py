"""The running switch as the outside world sees it: one device id, ports, a clock, a pipeline.

``Device`` owns the p4sim ``Switch`` of the committed pipeline and is the only place that feeds it
packets, so locking, output dispatch (CPU port -> P4Runtime packet-in, other ports -> the port
transport), digest draining and the wall-clock service loop are decided once, here.  A new
pipeline replaces the switch; port states and queue settings the operator set are re-applied
to it, as they belong to the device, not to the program.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable

log = logging.getLogger("p4sim.device")


@dataclass
class DeviceOptions:
    device_id: int = 1
    # "wall" | "virtual" | a p4sim.clock.Clock object (several switches sharing one virtual clock)
    clock: Any = "wall"
    priority_queues: int = 1
    drop_port: int = 511
    cpu_port: int | None = None
    seed: int = 0
    # "python" | "native" | None ($P4SIM_BACKEND, else python): the backend of every pipeline
    # this device builds (p4sim.runtime.pipeline.make_pipeline)
    backend: str | None = None


def default_program_loader(device_config: bytes) -> Any:
    """Parse a p4sim device config (the JSON ``p4sim compile`` writes) into a Program."""
    import p4sim

    return p4sim.Program.from_device_config(device_config)


def default_switch_factory(program: Any, options: DeviceOptions) -> Any:
    import p4sim

    return p4sim.Switch(
        program,
        clock=options.clock,
        priority_queues=options.priority_queues,
        drop_port=options.drop_port,
        cpu_port=options.cpu_port,
        seed=options.seed,
        backend=options.backend,
    )


class Device:
    """Glue between the switch, its ports, the P4Runtime server and the control side channel."""

    def __init__(
        self,
        options: DeviceOptions,
        program_loader: Callable[[bytes], Any] = default_program_loader,
        switch_factory: Callable[[Any, DeviceOptions], Any] = default_switch_factory,
    ) -> None:
        self.options = options
        self.program_loader = program_loader
        self.switch_factory = switch_factory
        self.lock = threading.RLock()
        self.switch: Any = None
        # Sinks, wired by whoever runs the device (cli run, tests).
        self.transmit: Callable[[int, bytes], None] | None = None
        self.on_packet_in: Callable[[bytes], None] | None = None
        self.on_digests: Callable[[list], None] | None = None
        self.flush_output: Callable[[], None] | None = None  # ports: wait until sent
        self._port_up: dict[int, bool] = {}
        self._queue_settings: list[tuple[str, tuple]] = []
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._pump: threading.Thread | None = None
        self.dropped_no_pipeline = 0

    @property
    def device_id(self) -> int:
        return self.options.device_id

    @property
    def cpu_port(self) -> int | None:
        return self.options.cpu_port

    @property
    def virtual_clock(self) -> bool:
        clock = self.options.clock
        if isinstance(clock, str):
            return clock == "virtual"
        from p4sim.clock import VirtualClock

        return isinstance(clock, VirtualClock)

    @property
    def clock_name(self) -> str:
        return "virtual" if self.virtual_clock else "wall"

    # -- pipeline ---------------------------------------------------------------------------
    def build_switch(self, device_config: bytes) -> tuple[Any, Any]:
        """Load a device config and build a switch for it, without installing it (VERIFY)."""
        program = self.program_loader(device_config)
        return program, self.switch_factory(program, self.options)

    def install(self, switch: Any) -> None:
        """Make ``switch`` the running one (COMMIT); the old one and its state are dropped."""
        with self.lock:
            switch.buffer_output = False
            switch.on_output = self._on_output
            for port, up in self._port_up.items():
                switch.set_port_up(port, up)
            for op, args in self._queue_settings:
                getattr(switch, op)(*args)
            self.switch = switch
        self._wake.set()

    # -- data plane -------------------------------------------------------------------------
    def _on_output(self, port: int, data: bytes) -> None:
        if log.isEnabledFor(logging.DEBUG):  # -L debug --log-console: a packet trace like BMv2's
            log.debug("port %d out: %d bytes %s", port, len(data), data[:32].hex())
        if self.options.cpu_port is not None and port == self.options.cpu_port:
            if self.on_packet_in is not None:
                self.on_packet_in(data)
        elif self.transmit is not None:
            self.transmit(port, data)

    def _after_activity_locked(self) -> None:
        self.switch.service()
        digests = self.switch.digests()
        if digests and self.on_digests is not None:
            self.on_digests(digests)

    def inject(self, port: int, data: bytes) -> None:
        """A packet arrived on ``port`` (from a transport or a PacketOut on the CPU port)."""
        if log.isEnabledFor(logging.DEBUG):
            log.debug("port %d in: %d bytes %s", port, len(data), data[:32].hex())
        with self.lock:
            if self.switch is None:
                self.dropped_no_pipeline += 1
                return
            self.switch.send(port, data)
            self._after_activity_locked()
        self._wake.set()

    # -- target control (the side channel's operations) ------------------------------------
    def _remember_queue(self, op: str, args: tuple) -> None:
        self._queue_settings.append((op, args))

    def set_queue_rate(self, pps: int, port: int | None = None, priority: int | None = None) -> None:
        with self.lock:
            self._remember_queue("set_queue_rate", (pps, port, priority))
            if self.switch is not None:
                self.switch.set_queue_rate(pps, port, priority)
        self._wake.set()

    def set_queue_depth(self, pkts: int, port: int | None = None, priority: int | None = None) -> None:
        with self.lock:
            self._remember_queue("set_queue_depth", (pkts, port, priority))
            if self.switch is not None:
                self.switch.set_queue_depth(pkts, port, priority)

    def set_queue_weight(self, weight: int, port: int | None = None, priority: int | None = None,
                         group: int | None = None) -> None:
        with self.lock:
            if self.switch is not None:  # first: a refused setting must not be re-applied later
                self.switch.set_queue_weight(weight, port, priority, group)
            self._remember_queue("set_queue_weight", (weight, port, priority, group))
        self._wake.set()

    def set_port_up(self, port: int, up: bool) -> None:
        with self.lock:
            self._port_up[port] = up
            if self.switch is not None:
                self.switch.set_port_up(port, up)

    def sync(self) -> None:
        """Return once every packet taken in so far is processed and its output handed to the
        port transport: a barrier that makes "no packet came out" checks sound."""
        with self.lock:
            pass
        if self.flush_output is not None:
            self.flush_output()

    def now_us(self) -> int:
        with self.lock:
            return 0 if self.switch is None else int(self.switch.now_us)

    def advance(self, us: int) -> int:
        """Move the virtual clock; departures due on the way go out.  Returns the new time."""
        if not self.virtual_clock:
            raise RuntimeError("advance needs --clock virtual (the wall clock moves by itself)")
        with self.lock:
            if self.switch is None:
                raise RuntimeError("no pipeline installed")
            self.switch.advance(us)
            self._after_activity_locked()
            return int(self.switch.now_us)

    # -- wall-clock service loop -----------------------------------------------------------
    def start(self) -> None:
        """Start the loop that releases departures on time (wall clock only)."""
        if self.virtual_clock or self._pump is not None:
            return
        self._pump = threading.Thread(target=self._pump_loop, name="p4sim-tm", daemon=True)
        self._pump.start()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._pump is not None:
            self._pump.join(timeout=2)

    def _pump_loop(self) -> None:
        while not self._stop.is_set():
            timeout = 0.05
            try:
                with self.lock:
                    if self.switch is not None:
                        self._after_activity_locked()
                        due = self.switch.next_departure_us()
                        if due is not None:
                            timeout = min(timeout, max(0.0, (due - self.switch.now_us) / 1e6))
            except Exception:  # noqa: BLE001 - keep serving; the error is logged
                log.exception("traffic manager service failed")
            self._wake.wait(timeout)
            self._wake.clear()
