"""p4sim's P4Runtime server: p4runtime 1.4.1 over gRPC, as simple_switch_grpc offers it."""
from p4sim.p4rt.device import Device, DeviceOptions
from p4sim.p4rt.server import P4RuntimeServer, P4RuntimeService

__all__ = ["Device", "DeviceOptions", "P4RuntimeServer", "P4RuntimeService"]
