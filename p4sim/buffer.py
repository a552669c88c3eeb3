"""A shared packet buffer with dynamic thresholds and PFC, for p4sim's traffic manager.

This goes beyond BMv2 (simple_switch has fixed per-queue packet depths and no PFC); a switch has
one only when ``TrafficManager.set_buffer`` gives it one, as the fabric simulator does.  The model
is the one shared-buffer switch ASICs document and RDMA simulators use:

* **Shared pool** of ``size_bytes`` minus the headroom reserved per (ingress port, PFC class).
* **Dynamic threshold** (Choudhury and Hahne): an owner may hold at most ``alpha`` times the free
  shared buffer.  In ``lossless`` mode the owner is the (ingress port, class) a packet came in on;
  in lossy mode it is the egress queue, and a packet over the threshold is dropped.
* **PFC** (IEEE 802.1Qbb), lossless mode: when an (ingress port, class) would pass its threshold,
  the packet goes into that ingress's headroom and the switch sends XOFF for the class to the
  upstream port (``on_pfc``); when the owner is back under its threshold by ``xon_offset_bytes``
  and its headroom is empty, XON.  Headroom absorbs what is on the wire while the pause travels:
  ``2 * BDP + MTU`` per (port, class) sizes it (``headroom_for``).  A packet that finds the
  headroom full is dropped and counted (``headroom_drops``): with the sizing above it means the
  upstream did not honour the pause.
* Queue priorities map to PFC classes by ``classes`` (queue number -> class); queues of one class
  are paused together (a class's mouse and elephant queues, for example).

Bytes are the frame lengths the traffic manager is given.  Times are the TM's microseconds.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional


def headroom_for(gbps: float, delay_us: float, mtu: int) -> int:
    """PFC headroom of one (port, class): both directions of the link's bandwidth-delay product
    (the pause travelling up, the frames already sent travelling down) plus one frame the
    upstream had started."""
    return int(2 * gbps * 1e3 / 8 * delay_us) + 2 * mtu


@dataclass
class BufferConfig:
    size_bytes: int
    alpha: float = 0.125
    lossless: bool = True
    classes: tuple[int, ...] = (0, 0, 0, 0, 0, 0, 0, 0)  # queue number -> PFC class
    headroom_bytes: dict[int, int] = field(default_factory=dict)  # ingress port -> per class
    xon_offset_bytes: int = 2 * 4200

    def __post_init__(self) -> None:
        if self.size_bytes <= 0 or not 0 < self.alpha <= 64:
            raise ValueError("buffer size must be > 0 bytes and alpha in (0, 64]")


class SharedBuffer:
    """Occupancy and PFC state of one switch's buffer (see the module docstring)."""

    def __init__(self, config: BufferConfig) -> None:
        self.config = config
        reserved = sum(config.headroom_bytes.values()) * len(set(config.classes)) if config.lossless else 0
        self.shared_size = config.size_bytes - reserved
        if self.shared_size <= 0:
            raise ValueError(f"headroom ({reserved} B) leaves no shared buffer of {config.size_bytes} B")
        self.used = 0  # shared bytes in use
        self.owner: dict[tuple[int, int], int] = {}  # (ingress, class) -> shared bytes (lossless)
        self.headroom: dict[tuple[int, int], int] = {}  # (ingress, class) -> headroom bytes
        self.xoff: set[tuple[int, int]] = set()  # (ingress, class) pausing its upstream
        self.on_pfc: Optional[Callable[[int, int, bool, float], None]] = None  # (ingress, class, xoff, t)
        self.drops = 0
        self.headroom_drops = 0
        self.xoff_sent = 0
        self.peak = 0

    def _threshold(self) -> float:
        return self.config.alpha * (self.shared_size - self.used)

    def admit(self, ingress: int, prio: int, queue_bytes: int, size: int, now: float) -> bool:
        """Charge ``size`` bytes arriving on ``ingress`` for queue ``prio`` (holding
        ``queue_bytes``); False = drop."""
        c = self.config
        if not c.lossless:
            if queue_bytes + size > self._threshold() or self.used + size > self.shared_size:
                self.drops += 1
                return False
            self.used += size
            self.peak = max(self.peak, self.used)
            return True
        key = (ingress, c.classes[prio])
        mine = self.owner.get(key, 0)
        # _threshold(), inline: every packet of a lossless fabric is admitted here
        if (key not in self.xoff and mine + size <= c.alpha * (self.shared_size - self.used)
                and self.used + size <= self.shared_size):
            self.owner[key] = mine + size
            self.used += size
            self.peak = max(self.peak, self.used)
            return True
        if key not in self.xoff:
            self.xoff.add(key)
            self.xoff_sent += 1
            if self.on_pfc is not None:
                self.on_pfc(key[0], key[1], True, now)
        room = c.headroom_bytes.get(ingress, 0)
        held = self.headroom.get(key, 0)
        if held + size > room:
            self.headroom_drops += 1
            self.drops += 1
            return False
        self.headroom[key] = held + size
        return True

    def release(self, ingress: int, prio: int, size: int, now: float) -> None:
        """``size`` bytes that came in on ``ingress`` for queue ``prio`` left (or were flushed)."""
        c = self.config
        if not c.lossless:
            self.used -= size
            return
        key = (ingress, c.classes[prio])
        held = self.headroom.get(key, 0)
        take = min(held, size)  # headroom empties first: it is what the pause protects
        if take:
            self.headroom[key] = held - take
        rest = size - take
        if rest:
            self.owner[key] = self.owner.get(key, 0) - rest
            self.used -= rest
        if self.xoff:
            self._resume(now)

    def _resume(self, now: float) -> None:
        limit = self._threshold() - self.config.xon_offset_bytes
        for key in [k for k in self.xoff if not self.headroom.get(k) and self.owner.get(k, 0) <= limit]:
            self.xoff.discard(key)
            if self.on_pfc is not None:
                self.on_pfc(key[0], key[1], False, now)
