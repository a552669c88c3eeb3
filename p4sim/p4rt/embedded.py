"""A p4sim switch with its P4Runtime server inside the calling process.

For tests and simulations that want a real P4Runtime endpoint (p4runtime-shell, the control
plane's push/reconcile) without a subprocess: the server listens on a free loopback port and the
ports are in-process, so the test feeds packets with ``send`` and reads ``output``.
"""
from __future__ import annotations

from typing import Any, Callable

from p4sim.p4rt.device import Device, DeviceOptions
from p4sim.p4rt.p4info_proto import p4info_message
from p4sim.p4rt.server import P4RuntimeServer
from p4sim.ports import InProcessPorts


class EmbeddedSwitch:
    """``with EmbeddedSwitch() as sw: connect to sw.address ...``"""

    def __init__(self, device_id: int = 1, address: str = "127.0.0.1:0", clock: Any = "virtual",
                 cpu_port: int | None = 255, priority_queues: int = 1, drop_port: int = 511,
                 device_config: bytes | None = None,
                 on_output: Callable[[int, bytes], None] | None = None) -> None:
        self.device = Device(DeviceOptions(device_id=device_id, clock=clock, cpu_port=cpu_port,
                                           priority_queues=priority_queues, drop_port=drop_port))
        self.ports = InProcessPorts(on_output)
        self.device.transmit = self.ports.transmit
        self.ports.start(self.device.inject, self.device.set_port_up)
        self.server = P4RuntimeServer(self.device, address)
        host = address.rpartition(":")[0]
        self.address = f"{host}:{self.server.port}"
        if device_config is not None:
            program, switch = self.device.build_switch(device_config)
            self.server.service.install_pipeline(p4info_message(program.p4info), device_config, 0, switch)
        self._started = False

    @property
    def output(self) -> list[tuple[int, bytes]]:
        """Packets the switch sent on its (non-CPU) ports so far, in order."""
        return self.ports.output

    def send(self, port: int, data: bytes) -> None:
        self.device.inject(port, data)

    def advance(self, us: int) -> int:
        return self.device.advance(us)

    def start(self) -> "EmbeddedSwitch":
        if not self._started:
            self.server.start()
            self.device.start()
            self._started = True
        return self

    def stop(self) -> None:
        if self._started:
            self.server.stop(0)
            self.device.stop()
            self._started = False

    def __enter__(self) -> "EmbeddedSwitch":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
