"""p4sim: an embedded P4_16 v1model target (front end, interpreter, traffic manager, P4Runtime).

In-process use::

    import p4sim
    prog = p4sim.compile("p4src/examples/l3.p4")
    sw = p4sim.Switch(prog)                      # virtual clock
    sw.insert_entry("MyIngress.ipv4_lpm", {"hdr.ipv4.dstAddr": ("10.0.1.0", 24)},
                    "MyIngress.ipv4_forward", {"dstAddr": "00:00:00:00:01:01", "port": 1})
    sw.send(0, packet_bytes)
    sw.take_output()                             # [(1, bytes)]

The heavy names are imported lazily so that ``import p4sim.frontend`` (or any submodule) never
drags the runtime in, and no import cycle can form through this file.
"""
from typing import Any

from p4sim.errors import CompileError, RuntimeApiError, Unsupported

_LAZY = {
    "Program": ("p4sim.program", "Program"),
    "compile": ("p4sim.program", "compile"),
    "Switch": ("p4sim.switch", "Switch"),
    "VirtualClock": ("p4sim.clock", "VirtualClock"),
    "WallClock": ("p4sim.clock", "WallClock"),
}

__all__ = ["CompileError", "RuntimeApiError", "Unsupported", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        mod, attr = _LAZY[name]
        value = getattr(importlib.import_module(mod), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'p4sim' has no attribute {name!r}")
