"""A P4Runtime server on a free loopback port, backed by the fake switch (or by the real p4sim
core), with the packets its data plane sent: what the P4Runtime tests and the P4Runtime fuzz
benchmark drive."""
from __future__ import annotations

import threading

from p4sim.p4rt import Device, DeviceOptions, P4RuntimeServer
from p4sim.p4rt.client import P4RuntimeClient
from testkit.fake_switch import FakeProgram, FakeSwitch, fake_p4info

FAKE_CONFIG = b"fake-device-config"
CPU_PORT = 64


class Harness:
    """A running server plus what the data plane put on its (non-CPU) ports."""

    def __init__(self, real: bool = False) -> None:
        self.sent: list[tuple[int, bytes]] = []
        if real:  # the p4sim core itself (default loader and switch factory)
            self.device = Device(DeviceOptions(device_id=1, clock="virtual", cpu_port=CPU_PORT))
        else:
            self.device = Device(
                DeviceOptions(device_id=1, clock="virtual", cpu_port=CPU_PORT),
                program_loader=FakeProgram.from_device_config,
                switch_factory=lambda prog, opts: FakeSwitch(prog, clock=opts.clock,
                                                             cpu_port=opts.cpu_port),
            )
        self._sent_cv = threading.Condition()
        self.device.transmit = self._transmit
        self.server = P4RuntimeServer(self.device, "127.0.0.1:0")
        self.server.start()
        self.address = f"127.0.0.1:{self.server.port}"
        self.clients: list[P4RuntimeClient] = []

    def _transmit(self, port: int, data: bytes) -> None:
        with self._sent_cv:
            self.sent.append((port, data))
            self._sent_cv.notify_all()

    def wait_sent(self, count: int, timeout: float = 5.0) -> list[tuple[int, bytes]]:
        """Block (bounded) until ``count`` packets left on data ports; returns them."""
        with self._sent_cv:
            self._sent_cv.wait_for(lambda: len(self.sent) >= count, timeout=timeout)
            return list(self.sent)

    def client(self, election_id=(0, 1), device_id=1, role=None, connect=True) -> P4RuntimeClient:
        c = P4RuntimeClient(self.address, device_id=device_id, election_id=election_id, role=role)
        self.clients.append(c)
        if connect:
            c.connect()
        c.p4info = fake_p4info()
        return c

    def primary_with_pipeline(self) -> P4RuntimeClient:
        c = self.client()
        c.set_pipeline(fake_p4info(), FAKE_CONFIG)
        return c

    @property
    def switch(self) -> FakeSwitch:
        return self.device.switch

    def close(self) -> None:
        for c in self.clients:
            c.close()
        self.server.stop(0)
