"""p4sim's P4Runtime server: p4runtime 1.4.1 over gRPC, as simple_switch_grpc offers it.

``P4RuntimeServer(Device(...), "127.0.0.1:9559")`` is what ``p4sim run`` starts;
``EmbeddedSwitch`` runs the same in-process for tests and simulations.
"""
from p4sim.p4rt.device import Device, DeviceOptions
from p4sim.p4rt.embedded import EmbeddedSwitch
from p4sim.p4rt.server import P4RuntimeServer, P4RuntimeService

__all__ = ["Device", "DeviceOptions", "EmbeddedSwitch", "P4RuntimeServer", "P4RuntimeService"]
