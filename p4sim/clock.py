"""Clocks for p4sim: the wall clock for live runs and a virtual clock for exact, repeatable tests.

Every timestamp p4sim produces (``ingress_global_timestamp``, ``enq_timestamp``, meter refills,
queue departures) is read from one of these in microseconds since the switch started, which is
BMv2's unit.  In virtual mode nothing moves until the caller advances time, so a test can build a
queue, step through departures and assert exact delays without ever sleeping.
"""
from __future__ import annotations

import time


class Clock:
    """Interface shared by both clocks."""

    virtual: bool = False

    @property
    def now_us(self) -> float:
        raise NotImplementedError

    def advance(self, us: float) -> None:
        raise NotImplementedError


class WallClock(Clock):
    """Microseconds of monotonic wall time since construction (the switch's start)."""

    virtual = False

    def __init__(self) -> None:
        self.start = time.monotonic()  # time.monotonic() at time 0 (the native batch reads it too)

    @property
    def now_us(self) -> float:
        return (time.monotonic() - self.start) * 1e6

    def advance(self, us: float) -> None:
        """Wall time cannot be pushed; callers wait instead (kept so both clocks share a shape)."""
        raise RuntimeError("a wall clock cannot be advanced; use a VirtualClock")


class VirtualClock(Clock):
    """Time that only moves when ``advance`` is called (or ``set`` by the switch's event loop)."""

    virtual = True
    # A plain attribute here, not the base class's property: the switch's event loop and the
    # fabric simulator read it several times per packet.  Only advance and set change it.
    now_us: float = 0.0

    def __init__(self, start_us: float = 0) -> None:
        self.now_us = start_us

    def advance(self, us: float) -> None:
        if us < 0:
            raise ValueError(f"cannot move a clock backwards ({us} us)")
        self.now_us += us

    def set(self, t_us: float) -> None:
        """Jump to an absolute time (never backwards); the switch uses it to stop at departures."""
        if t_us < self.now_us:
            raise ValueError(f"cannot move a clock backwards (to {t_us} from {self.now_us})")
        self.now_us = t_us


def make_clock(kind: "str | Clock") -> Clock:
    """``"virtual"`` / ``"wall"`` or an existing Clock object."""
    if isinstance(kind, Clock):
        return kind
    if kind == "virtual":
        return VirtualClock()
    if kind == "wall":
        return WallClock()
    raise ValueError(f"clock must be 'virtual' or 'wall', not {kind!r}")
