"""Stateful v1model externs: register, counter, meter (and the per-entry direct variants).

Index checks follow BMv2: a data-plane access with an out-of-range index never crashes the switch
(register reads give 0, writes and counts are ignored, meters give GREEN); control-plane accesses
with a bad index raise ``RuntimeApiError(OUT_OF_RANGE)``.
"""
from __future__ import annotations

from dataclasses import dataclass

from p4sim.errors import RuntimeApiError

GREEN, YELLOW, RED = 0, 1, 2


def _check_index(kind: str, name: str, index: int, size: int) -> None:
    if not isinstance(index, int) or not 0 <= index < size:
        raise RuntimeApiError("OUT_OF_RANGE", f"{kind} {name}: index {index} outside 0..{size - 1}")


class Register:
    """``register<T>(size)``: an array of ``width``-bit cells, all 0 at start."""

    def __init__(self, name: str, size: int, width: int) -> None:
        self.name, self.size, self.width = name, size, width
        self.mask = (1 << width) - 1
        self.cells = [0] * size

    def read(self, index: int) -> int:
        return self.cells[index] if index < self.size else 0

    def write(self, index: int, value: int) -> None:
        if index < self.size:
            self.cells[index] = value

    # control plane
    def api_read(self, index: int) -> int:
        _check_index("register", self.name, index, self.size)
        return self.cells[index]

    def api_write(self, index: int, value: int) -> None:
        _check_index("register", self.name, index, self.size)
        if not isinstance(value, int) or not 0 <= value <= self.mask:
            raise RuntimeApiError("OUT_OF_RANGE", f"register {self.name}: value {value!r} does not fit in {self.width} bits")
        self.cells[index] = value


class Counter:
    """``counter(size, CounterType)``: packets and bytes per index (bytes = packet_length).

    Both numbers are kept whatever the type; ``kind`` records what the program asked for so the
    control plane reports only the meaningful one(s) (BMv2 does the same).
    """

    def __init__(self, name: str, size: int, kind: str) -> None:
        self.name, self.size, self.kind = name, size, kind
        self.packets = [0] * size
        self.bytes = [0] * size

    def count(self, index: int, nbytes: int) -> None:
        if index < self.size:
            self.packets[index] += 1
            self.bytes[index] += nbytes

    def api_read(self, index: int) -> tuple[int, int]:
        _check_index("counter", self.name, index, self.size)
        return self.packets[index], self.bytes[index]

    def api_write(self, index: int, packets: int, nbytes: int) -> None:
        _check_index("counter", self.name, index, self.size)
        self.packets[index], self.bytes[index] = int(packets), int(nbytes)


@dataclass
class MeterConfig:
    """Rates in units (packets or bytes, per the meter's type) per second, bursts in units,
    as P4Runtime's MeterConfig."""

    cir: int
    cburst: int
    pir: int
    pburst: int


class TwoRateMeter:
    """One two-rate three-colour marker (RFC 2698, colour-blind), BMv2's meter algorithm.

    Both buckets start full.  A packet of size B is RED if the peak bucket holds fewer than B
    tokens; else YELLOW (peak bucket pays) if the committed bucket holds fewer than B; else GREEN
    (both pay).  An unconfigured meter marks everything GREEN.
    """

    __slots__ = ("config", "tc", "tp", "last_us")

    def __init__(self) -> None:
        self.config: MeterConfig | None = None
        self.tc = self.tp = 0.0
        self.last_us = 0.0

    def configure(self, config: MeterConfig | None, now_us: float) -> None:
        self.config = config
        if config is not None:
            self.tc, self.tp = float(config.cburst), float(config.pburst)
        self.last_us = now_us

    def execute(self, size: int, now_us: float) -> int:
        c = self.config
        if c is None:
            return GREEN
        dt = now_us - self.last_us
        if dt > 0:
            self.tc = min(float(c.cburst), self.tc + dt * c.cir / 1e6)
            self.tp = min(float(c.pburst), self.tp + dt * c.pir / 1e6)
            self.last_us = now_us
        if self.tp < size:
            return RED
        if self.tc < size:
            self.tp -= size
            return YELLOW
        self.tp -= size
        self.tc -= size
        return GREEN


def validate_meter_config(what: str, cir: int, cburst: int, pir: int, pburst: int) -> MeterConfig:
    vals = (cir, cburst, pir, pburst)
    if any(not isinstance(v, int) or v < 0 for v in vals):
        raise RuntimeApiError("INVALID_ARGUMENT", f"{what}: meter rates and bursts must be integers >= 0, got {vals}")
    if pir < cir:
        raise RuntimeApiError("INVALID_ARGUMENT", f"{what}: peak rate {pir} is below committed rate {cir}")
    return MeterConfig(cir, cburst, pir, pburst)


class Meter:
    """``meter(size, MeterType)``: an array of two-rate three-colour markers."""

    def __init__(self, name: str, size: int, kind: str) -> None:
        self.name, self.size, self.kind = name, size, kind  # kind: "packets" | "bytes"
        self.cells = [TwoRateMeter() for _ in range(size)]

    def execute(self, index: int, packet_length: int, now_us: float) -> int:
        if index >= self.size:
            return GREEN
        return self.cells[index].execute(packet_length if self.kind == "bytes" else 1, now_us)

    def api_set(self, index: int, config: MeterConfig | None, now_us: float) -> None:
        _check_index("meter", self.name, index, self.size)
        self.cells[index].configure(config, now_us)

    def api_get(self, index: int) -> MeterConfig | None:
        _check_index("meter", self.name, index, self.size)
        return self.cells[index].config
