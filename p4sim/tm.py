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

Weighted queues (``set_weight``; p4sim's addition, BMv2 has no equivalent - see
``bmv2_env.target.Bmv2Target.set_queue_weights`` for how weights become BMv2 queue rates):

* a queue's weight is 0 by default, which means *strict*: exactly today's behaviour.  With no
  weight set anywhere the scheduler is the strict-priority one above, packet for packet.
* queues with a weight > 0 are *weighted*.  They are grouped (``group``, default: the queue's own
  number); the groups share the port by DWRR (deficit weighted round robin, Shreedhar and
  Varghese), byte based: a group's quantum is its weight in bytes per round, a group may send its
  head packet when its deficit covers the packet's size, and an empty group's deficit is reset.
  Inside a group the queues are served in strict priority (a class's mouse queue before its
  elephant queue), so a class keeps one share however its traffic is split.
* all weighted groups together are one strict-priority level, ranked at the highest weighted
  queue number: strict queues above it pre-empt every weighted queue, strict queues below it
  send only when no weighted queue has a packet ready.
* a group's quantum is the weight of its highest queue (give a group's queues one weight).
* long-run byte shares of backlogged groups are proportional to their weights; rounds in which
  no group could send are skipped arithmetically, so small weights cost no extra work.
"""
from __future__ import annotations

import heapq
from collections import deque
from typing import Any, Optional

from p4sim.buffer import BufferConfig, SharedBuffer

DEFAULT_DEPTH = 64
_BLOCKED = float("inf")  # Port.ready of a port whose queued packets are all paused
MAX_WEIGHT = 1 << 24  # bytes per DWRR round; far above any MTU, low enough to keep deficits small


class Queue:
    __slots__ = ("items", "depth", "rate_pps", "rate_bps", "weight", "group", "bytes", "paused", "ingress")

    def __init__(self, depth: int, rate_pps: float, weight: int = 0, group: int = 0) -> None:
        self.items: deque = deque()  # (enqueue time us, packet, size in bytes)
        self.depth = depth
        self.rate_pps = rate_pps
        self.rate_bps = 0.0  # > 0: served by bytes at this many bits/s (wins over rate_pps)
        self.weight = weight  # 0 = strict priority
        self.group = group
        self.bytes = 0  # bytes queued
        self.paused = False  # PFC: the downstream port sent XOFF for this queue's class
        self.ingress: deque = deque()  # ingress port of each queued packet (shared buffer only)


class Port:
    __slots__ = ("queues", "free_at", "deficit", "rr", "fresh", "groups", "wrank", "ready", "stamp")

    def __init__(self) -> None:
        self.queues: list[Queue] = []
        self.free_at = 0.0  # the port is transmitting until this time
        self.ready = 0.0  # when a busy port sends next: max(free_at, earliest head enqueue time)
        self.stamp = 0  # the port's live entry in the readiness heap carries this number
        # DWRR state (only used when some queue of the port is weighted)
        self.groups: list[tuple[int, int, list[int]]] = []  # (group id, quantum, queue numbers high->low)
        self.wrank = -1  # highest weighted queue number: where the weighted level sits; -1 = none
        self.deficit: dict[int, int] = {}
        self.rr = 0  # index into groups of the group being visited
        self.fresh = True  # the visited group has not had its quantum for this visit yet


class TrafficManager:
    def __init__(self, priority_queues: int = 1) -> None:
        if priority_queues < 1:
            raise ValueError("priority_queues must be >= 1")
        self.priority_queues = priority_queues
        self.ports: dict[int, Port] = {}
        self.busy: set[int] = set()  # ports with at least one queued packet
        # Readiness heap: (ready time, port, stamp), one live entry per busy port (the one whose
        # stamp is the port's); older entries are skipped when they reach the top.  Ties go to the
        # lower port number.  This replaces a scan of every busy port on each event.  Read-only
        # outside this class: the switch's loop looks at its top to skip pop_due when nothing is due.
        self.heap: list[tuple[float, int, int]] = []
        self._byte_rate_settings: list[tuple[Optional[int], Optional[int], float]] = []
        self.buffer: Optional[SharedBuffer] = None
        self.paused_us: dict[tuple[int, int], float] = {}  # (port, PFC class) -> time paused
        self._paused_since: dict[tuple[int, int], float] = {}
        self._rate_settings: list[tuple[Optional[int], Optional[int], float]] = []
        self._depth_settings: list[tuple[Optional[int], Optional[int], int]] = []
        self._weight_settings: list[tuple[Optional[int], Optional[int], tuple[int, Optional[int]]]] = []

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
                ps.queues[-1].rate_bps = self._resolve(self._byte_rate_settings, port, prio, 0.0)
            self._apply_weights(port, ps)
            self.ports[port] = ps
        return ps

    def _check_prio(self, priority: Optional[int]) -> None:
        if priority is not None and not 0 <= priority < self.priority_queues:
            raise ValueError(f"priority {priority} outside 0..{self.priority_queues - 1}")

    def set_rate(self, pps: float, port: Optional[int] = None, priority: Optional[int] = None) -> None:
        if pps < 0:
            raise ValueError("queue rate must be >= 0 pps")
        self._apply(self._rate_settings, "rate_pps", 0, pps, port, priority)

    def _apply(self, settings: list, attr: str, default: Any, value: Any, port: Optional[int],
               priority: Optional[int]) -> None:
        """Record a setting and re-resolve ``attr`` of every existing queue (last match wins)."""
        self._check_prio(priority)
        settings.append((port, priority, value))
        for pn, ps in self.ports.items():
            for prio, q in enumerate(ps.queues):
                setattr(q, attr, self._resolve(settings, pn, prio, default))

    def set_byte_rate(self, bps: float, port: Optional[int] = None, priority: Optional[int] = None) -> None:
        """Serve the queue by bytes: a packet of B bytes keeps the port busy B * 8 / ``bps``
        seconds (0 = back to the packet rate).  p4sim's addition: BMv2's queue rate counts
        packets whatever their size, so a 64-byte ACK costs as much link time as a 4 KB frame;
        a byte rate is how a link serialises, and what the fabric simulator uses."""
        if bps < 0:
            raise ValueError("queue byte rate must be >= 0 bits/s")
        self._apply(self._byte_rate_settings, "rate_bps", 0.0, bps, port, priority)

    def set_buffer(self, config: Optional[BufferConfig]) -> SharedBuffer:
        """Give the switch a shared buffer (dynamic thresholds, PFC when lossless; see
        ``p4sim.buffer``), or none (``None``: per-queue packet depths only, as BMv2)."""
        if any(self.busy):
            raise ValueError("set the buffer before packets are queued")
        self.buffer = SharedBuffer(config) if config is not None else None
        return self.buffer

    def pause(self, port: int, pfc_class: int, on: bool, now_us: float) -> None:
        """PFC from the peer of ``port``: stop (``on``) or resume sending the queues of
        ``pfc_class``.  A frame already being sent finishes; paused time is kept per (port, class)."""
        ps = self._port(port)
        classes = self.buffer.config.classes if self.buffer is not None else tuple(range(self.priority_queues))
        for prio, q in enumerate(ps.queues):
            if classes[prio] == pfc_class:
                q.paused = on
        key = (port, pfc_class)
        if on:
            self._paused_since.setdefault(key, now_us)
        elif key in self._paused_since:
            self.paused_us[key] = self.paused_us.get(key, 0.0) + now_us - self._paused_since.pop(key)
        if port in self.busy:
            self._reready(port, ps, now_us)

    def pause_time_us(self, now_us: float) -> dict[tuple[int, int], float]:
        """Time each (port, PFC class) has spent paused up to ``now_us``."""
        out = dict(self.paused_us)
        for key, since in self._paused_since.items():
            out[key] = out.get(key, 0.0) + now_us - since
        return out

    def set_depth(self, pkts: int, port: Optional[int] = None, priority: Optional[int] = None) -> None:
        if pkts < 0:
            raise ValueError("queue depth must be >= 0 packets")
        self._check_prio(priority)
        self._depth_settings.append((port, priority, pkts))
        for pn, ps in self.ports.items():
            for prio, q in enumerate(ps.queues):
                q.depth = self._resolve(self._depth_settings, pn, prio, DEFAULT_DEPTH)

    def set_weight(self, weight: int, port: Optional[int] = None, priority: Optional[int] = None,
                   group: Optional[int] = None) -> None:
        """DWRR weight (bytes per round) of a queue; 0 = strict priority (the default).

        ``group``: queues with the same group id share one DWRR share, served in strict priority
        among themselves; default: the queue's own number (a group of one)."""
        if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= MAX_WEIGHT:
            raise ValueError(f"queue weight must be an integer 0..{MAX_WEIGHT} (0 = strict), not {weight!r}")
        if group is not None and not 0 <= group < self.priority_queues:
            raise ValueError(f"group {group} outside 0..{self.priority_queues - 1}")
        self._check_prio(priority)
        self._weight_settings.append((port, priority, (weight, group)))
        for pn, ps in self.ports.items():
            self._apply_weights(pn, ps)

    def _apply_weights(self, port: int, ps: Port) -> None:
        groups: dict[int, list[int]] = {}
        for prio in range(self.priority_queues - 1, -1, -1):
            weight, group = self._resolve(self._weight_settings, port, prio, (0, None))
            q = ps.queues[prio]
            q.weight, q.group = weight, (prio if group is None else group)
            if weight:
                groups.setdefault(q.group, []).append(prio)
        # visiting order: by highest member queue, high first (repeatable, and it is the order a
        # reader expects); quantum = the weight of the group's highest queue
        order = sorted(groups.items(), key=lambda kv: -kv[1][0])
        ps.groups = [(g, ps.queues[members[0]].weight, members) for g, members in order]
        ps.wrank = order[0][1][0] if order else -1
        ps.deficit = {g: ps.deficit.get(g, 0) for g, _, _ in ps.groups}
        if ps.rr >= len(ps.groups):
            ps.rr, ps.fresh = 0, True

    def rate(self, port: int, priority: int = 0) -> float:
        return self._port(port).queues[priority].rate_pps

    def depth(self, port: int, priority: int = 0) -> int:
        return self._port(port).queues[priority].depth

    def weight(self, port: int, priority: int = 0) -> tuple[int, int]:
        """(weight, group) of a queue; weight 0 = strict."""
        q = self._port(port).queues[priority]
        return q.weight, q.group

    def occupancy(self, port: int, priority: int = 0) -> int:
        ps = self.ports.get(port)
        return len(ps.queues[priority].items) if ps else 0

    # ---------------------------------------------------------------- data path
    def enqueue(self, pkt: Any, port: int, priority: int, now_us: float, size: int = 1,
                ingress: int = -1) -> int:
        """Queue ``pkt`` (``size`` bytes, what DWRR and a byte rate charge; ``ingress``: the port
        it came in on, for the shared buffer); returns the number of packets already in that
        queue (``enq_qdepth``), or -1 when the packet is dropped (queue or buffer full)."""
        ps = self.ports.get(port) or self._port(port)
        q = ps.queues[priority]
        n = len(q.items)
        if n >= q.depth:
            return -1
        buf = self.buffer
        if buf is not None:
            if not buf.admit(ingress, priority, q.bytes, size, now_us):
                return -1
            q.ingress.append(ingress)
        q.items.append((now_us, pkt, size))
        q.bytes += size
        if q.paused:
            if port not in self.busy:
                self.busy.add(port)
                ps.ready, ps.stamp = _BLOCKED, ps.stamp + 1  # nothing to send until a resume
        elif port not in self.busy:
            self.busy.add(port)
            self._schedule(port, ps, max(ps.free_at, now_us))
        elif now_us < ps.ready and ps.free_at < ps.ready:
            # an enqueue time earlier than every head, or the first sendable packet of a port
            # whose other queues are paused, moves the port's turn forward
            self._schedule(port, ps, max(ps.free_at, now_us))
        return n

    def _schedule(self, port: int, ps: Port, ready: float) -> None:
        ps.ready = ready
        ps.stamp += 1
        heapq.heappush(self.heap, (ready, port, ps.stamp))

    def _top(self) -> Optional[tuple[float, int, int]]:
        """The live heap entry of the port that sends first (stale entries are dropped)."""
        heap, ports, busy = self.heap, self.ports, self.busy
        while heap:
            e = heap[0]
            if e[1] in busy and ports[e[1]].stamp == e[2]:
                return e
            heapq.heappop(heap)
        return None

    def idle_unlimited(self, port: int, priority: int, now_us: float) -> bool:
        """True when a packet for (port, priority) would leave the instant it is queued: the
        port has nothing queued, is not transmitting, and the queue has no rate limit."""
        if port in self.busy or self.buffer is not None:
            return False  # a shared buffer charges every packet: it is always queued
        ps = self._port(port)
        q = ps.queues[priority]
        return q.rate_pps == 0 and not q.rate_bps and q.depth > 0 and ps.free_at <= now_us and not q.paused

    def next_departure(self) -> Optional[float]:
        """Time of the next departure, or None when every queue is empty."""
        heap = self.heap
        if heap:  # a live top, found without calling _top: the fabric asks after every event
            e = heap[0]
            if e[1] in self.busy and self.ports[e[1]].stamp == e[2]:
                return e[0]
        e = self._top()
        return None if e is None else e[0]

    def pop_due(self, limit_us: float) -> Optional[tuple[float, int, int, float, int, Any]]:
        """The earliest departure at or before ``limit_us``: (departure time, port, priority,
        enqueue time, packets left in that queue, packet); None if nothing is due.  Ties go to
        the lower port number, so runs are repeatable."""
        heap = self.heap
        if not heap or heap[0][0] > limit_us:
            # Nothing due, decided without _top's clean-up of stale entries: the earliest entry,
            # live or stale, bounds every live one.
            return None
        e = heap[0]
        if not (e[1] in self.busy and self.ports[e[1]].stamp == e[2]):  # a stale top: _top
            e = self._top()
            if e is None or e[0] > limit_us:
                return None
        heapq.heappop(heap)
        best_t, best_port = e[0], e[1]
        ps = self.ports[best_port]
        queues = ps.queues
        if ps.wrank < 0:
            # Strict priority only (no weighted queue on the port): _select's loop, inline,
            # because every departure of a run passes here.
            prio = len(queues) - 1
            while True:
                q = queues[prio]
                items = q.items
                if items and items[0][0] <= best_t and not q.paused:
                    break
                prio -= 1
                if prio < 0:
                    raise AssertionError("a busy port had no eligible queue")  # unreachable
        else:
            prio = self._select(ps, best_t)
            q = queues[prio]
        enq_t, pkt, size = q.items.popleft()
        q.bytes -= size
        if q.rate_bps:
            ps.free_at = best_t + size * 8e6 / q.rate_bps
        else:
            rate = q.rate_pps
            ps.free_at = best_t + (1e6 / rate if rate else 0.0)
        if self.buffer is not None:
            self.buffer.release(q.ingress.popleft(), prio, size, best_t)
        self._reready(best_port, ps, best_t)
        return best_t, best_port, prio, enq_t, len(q.items), pkt

    def _reready(self, port: int, ps: Port, now_us: float) -> None:
        """Put a port's next turn (not before ``now_us``) in the heap, or take the port out of
        it (empty, or every queued packet paused)."""
        head = None  # the earliest enqueue time at the head of a queue that may send
        queued = False
        for qq in ps.queues:
            items = qq.items
            if items:
                queued = True
                if not qq.paused:
                    h = items[0][0]
                    if head is None or h < head:
                        head = h
        if head is not None:
            ready = max(ps.free_at, head, now_us)
            ps.ready = ready
            ps.stamp += 1
            heapq.heappush(self.heap, (ready, port, ps.stamp))
        else:
            if not queued:
                self.busy.discard(port)
            ps.ready = _BLOCKED
            ps.stamp += 1

    @staticmethod
    def _ready(q: Queue, t: float) -> bool:
        return bool(q.items) and q.items[0][0] <= t and not q.paused

    def _select(self, ps: Port, t: float) -> int:
        """The queue that sends at ``t``: strict queues by number, the weighted level by DWRR."""
        queues = ps.queues
        for prio in range(self.priority_queues - 1, -1, -1):
            q = queues[prio]
            if q.weight:
                if prio == ps.wrank:
                    chosen = self._dwrr(ps, t)
                    if chosen is not None:
                        return chosen
                continue
            if self._ready(q, t):
                return prio
        raise AssertionError("a busy port had no eligible queue")  # unreachable by construction

    def _dwrr(self, ps: Port, t: float) -> Optional[int]:
        """One DWRR decision among the weighted groups, or None when none has a packet ready."""
        queues, groups = ps.queues, ps.groups

        def head(members: list[int]) -> Optional[int]:
            return next((m for m in members if self._ready(queues[m], t)), None)

        if not any(head(members) is not None for _, _, members in groups):
            return None
        unserved = 0  # consecutive fresh visits that sent nothing
        while True:
            gid, quantum, members = groups[ps.rr]
            m = head(members)
            if m is None:
                ps.deficit[gid] = 0  # an idle group keeps no credit
            else:
                if ps.fresh:
                    ps.deficit[gid] += quantum
                    ps.fresh = False
                size = queues[m].items[0][2]
                if ps.deficit[gid] >= size:
                    ps.deficit[gid] -= size
                    return m
            ps.rr = (ps.rr + 1) % len(groups)
            ps.fresh = True
            unserved += 1
            if unserved == len(groups):
                # A whole round sent nothing: every ready group is short of its head packet.
                # Skip the further empty rounds at once (same deficits as looping through them).
                rounds = min(-(-(queues[h].items[0][2] - ps.deficit[g]) // q) - 1
                             for g, q, mem in groups if (h := head(mem)) is not None)
                if rounds > 0:
                    for g, q, mem in groups:
                        if head(mem) is not None:
                            ps.deficit[g] += rounds * q
                unserved = 0

    def flush_port(self, port: int) -> int:
        """Drop everything queued for ``port`` (it went down); returns how many were dropped."""
        ps = self.ports.get(port)
        if ps is None:
            return 0
        n = sum(len(q.items) for q in ps.queues)
        for prio, q in enumerate(ps.queues):
            if self.buffer is not None:
                for (_, _, size), ingress in zip(q.items, q.ingress):
                    self.buffer.release(ingress, prio, size, ps.free_at)
                q.ingress.clear()
            q.items.clear()
            q.bytes = 0
        for g in ps.deficit:
            ps.deficit[g] = 0
        self.busy.discard(port)
        return n
