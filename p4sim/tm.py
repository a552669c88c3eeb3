"""The traffic manager: per (egress port, priority) FIFO queues between ingress and egress.

Model (BMv2 simple_switch's, made exact by the virtual clock):

* one drop-tail FIFO per (port, priority), ``depth`` packets deep (default 64);
* ``priority_queues`` N: strict priority, N-1 is served first; a packet whose priority is >= N is
  dropped by the caller;
* a port sends one packet at a time; the packet's queue rate ``pps`` sets how long the port is then
  busy (1/pps seconds).  Rate 0 = unlimited: the packet leaves the moment it is enqueued.

``set_queue_rate`` / ``set_queue_depth`` settings are kept in call order and the last matching one
wins, so ``set_queue_rate(100)`` followed by ``set_queue_rate(10, port=2)`` leaves port 2 at 10 pps
and every other port (including ports first used later) at 100.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Optional

DEFAULT_DEPTH = 64


class Queue:
    __slots__ = ("items", "depth", "rate_pps")

    def __init__(self, depth: int, rate_pps: float) -> None:
        self.items: deque = deque()  # (enqueue time us, packet)
        self.depth = depth
        self.rate_pps = rate_pps


class Port:
    __slots__ = ("queues", "free_at")

    def __init__(self) -> None:
        self.queues: list[Queue] = []
        self.free_at = 0.0  # the port is transmitting until this time


class TrafficManager:
    def __init__(self, priority_queues: int = 1) -> None:
        if priority_queues < 1:
            raise ValueError("priority_queues must be >= 1")
        self.priority_queues = priority_queues
        self.ports: dict[int, Port] = {}
        self.busy: set[int] = set()  # ports with at least one queued packet
        self._rate_settings: list[tuple[Optional[int], Optional[int], float]] = []
        self._depth_settings: list[tuple[Optional[int], Optional[int], int]] = []

    # ---------------------------------------------------------------- configuration
    @staticmethod
    def _resolve(settings: list, port: int, prio: int, default: Any) -> Any:
        v = default
        for p, q, val in settings:
            if (p is None or p == port) and (q is None or q == prio):
                v = val
        return v

    def _port(self, port: int) -> Port:
        ps = self.ports.get(port)
        if ps is None:
            ps = Port()
            for prio in range(self.priority_queues):
                ps.queues.append(Queue(self._resolve(self._depth_settings, port, prio, DEFAULT_DEPTH),
                                       self._resolve(self._rate_settings, port, prio, 0)))
            self.ports[port] = ps
        return ps

    def _check_prio(self, priority: Optional[int]) -> None:
        if priority is not None and not 0 <= priority < self.priority_queues:
            raise ValueError(f"priority {priority} outside 0..{self.priority_queues - 1}")

    def set_rate(self, pps: float, port: Optional[int] = None, priority: Optional[int] = None) -> None:
        if pps < 0:
            raise ValueError("queue rate must be >= 0 pps")
        self._check_prio(priority)
        self._rate_settings.append((port, priority, pps))
        for pn, ps in self.ports.items():
            for prio, q in enumerate(ps.queues):
                q.rate_pps = self._resolve(self._rate_settings, pn, prio, 0)

    def set_depth(self, pkts: int, port: Optional[int] = None, priority: Optional[int] = None) -> None:
        if pkts < 0:
            raise ValueError("queue depth must be >= 0 packets")
        self._check_prio(priority)
        self._depth_settings.append((port, priority, pkts))
        for pn, ps in self.ports.items():
            for prio, q in enumerate(ps.queues):
                q.depth = self._resolve(self._depth_settings, pn, prio, DEFAULT_DEPTH)

    def rate(self, port: int, priority: int = 0) -> float:
        return self._port(port).queues[priority].rate_pps

    def depth(self, port: int, priority: int = 0) -> int:
        return self._port(port).queues[priority].depth

    def occupancy(self, port: int, priority: int = 0) -> int:
        ps = self.ports.get(port)
        return len(ps.queues[priority].items) if ps else 0

    # ---------------------------------------------------------------- data path
    def enqueue(self, pkt: Any, port: int, priority: int, now_us: float) -> int:
        """Queue ``pkt``; returns the number of packets already in that queue (``enq_qdepth``),
        or -1 when the queue is full (drop-tail)."""
        q = self._port(port).queues[priority]
        n = len(q.items)
        if n >= q.depth:
            return -1
        q.items.append((now_us, pkt))
        self.busy.add(port)
        return n

    def idle_unlimited(self, port: int, priority: int, now_us: float) -> bool:
        """True when a packet for (port, priority) would leave the instant it is queued: the
        port has nothing queued, is not transmitting, and the queue has no rate limit."""
        if port in self.busy:
            return False
        ps = self._port(port)
        q = ps.queues[priority]
        return q.rate_pps == 0 and q.depth > 0 and ps.free_at <= now_us

    def _port_ready(self, ps: Port) -> float:
        return max(ps.free_at, min(q.items[0][0] for q in ps.queues if q.items))

    def next_departure(self) -> Optional[float]:
        """Time of the next departure, or None when every queue is empty."""
        best = None
        for port in self.busy:
            t = self._port_ready(self.ports[port])
            if best is None or t < best:
                best = t
        return best

    def pop_due(self, limit_us: float) -> Optional[tuple[float, int, int, float, int, Any]]:
        """The earliest departure at or before ``limit_us``: (departure time, port, priority,
        enqueue time, packets left in that queue, packet); None if nothing is due.  Ties go to
        the lower port number, so runs are repeatable."""
        best_t, best_port = None, None
        for port in self.busy:
            t = self._port_ready(self.ports[port])
            if t <= limit_us and (best_t is None or t < best_t or (t == best_t and port < best_port)):
                best_t, best_port = t, port
        if best_t is None:
            return None
        ps = self.ports[best_port]
        for prio in range(self.priority_queues - 1, -1, -1):  # strict priority: highest first
            q = ps.queues[prio]
            if q.items and q.items[0][0] <= best_t:
                enq_t, pkt = q.items.popleft()
                rate = q.rate_pps
                ps.free_at = best_t + (1e6 / rate if rate else 0.0)
                if not any(qq.items for qq in ps.queues):
                    self.busy.discard(best_port)
                return best_t, best_port, prio, enq_t, len(q.items), pkt
        raise AssertionError("a busy port had no eligible queue")  # unreachable by construction

    def flush_port(self, port: int) -> int:
        """Drop everything queued for ``port`` (it went down); returns how many were dropped."""
        ps = self.ports.get(port)
        if ps is None:
            return 0
        n = sum(len(q.items) for q in ps.queues)
        for q in ps.queues:
            q.items.clear()
        self.busy.discard(port)
        return n
