"""``p4sim.Switch``: a v1model switch (BMv2 simple_switch semantics) run in-process.

Packet walk, in BMv2's order::

    send(port, bytes) -> parser -> verify_checksum -> ingress
        -> I2E clone? -> resubmit? -> multicast (mcast_grp) | drop (egress_spec == drop port) | unicast
        -> traffic manager queue (port, standard_metadata.priority)
        -> at departure: egress -> E2E clone? -> drop? -> compute_checksum -> deparser
        -> recirculate? -> output (port, bytes)

Every public method takes ``lock`` (an RLock) because the P4Runtime server and packet-I/O threads
call in concurrently.  Nothing here ever lets a packet crash the switch: failures are dropped and
counted in ``stats``.
"""
from __future__ import annotations

import logging
import threading
from collections import Counter as _Tally
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from p4sim.clock import Clock, VirtualClock, WallClock, make_clock
from p4sim.errors import RuntimeApiError
from p4sim.runtime import archs, support
from p4sim.runtime.externs import MeterConfig, validate_meter_config
from p4sim.runtime.limits import M9, M16, M19, M32, M48, MAX_REINJECT
from p4sim.runtime.pipeline import Digest, PacketContext, Pipeline, make_pipeline
from p4sim.runtime.tables import TableEntry
from p4sim.tm import TrafficManager

log = logging.getLogger("p4sim.switch")

NORMAL, INGRESS_CLONE, EGRESS_CLONE, COALESCED, RECIRC, REPLICATION, RESUBMIT = 0, 1, 2, 3, 4, 5, 6


class _InFlight:
    """A packet between ingress and output: its parsed state and what it still needs."""

    __slots__ = ("hdr", "meta", "sm", "payload", "orig", "truncate", "passes")

    def __init__(self, hdr: Any, meta: Any, sm: Any, payload: bytes, orig: bytes, truncate: Optional[int],
                 passes: int) -> None:
        self.hdr, self.meta, self.sm, self.payload = hdr, meta, sm, payload
        self.orig, self.truncate, self.passes = orig, truncate, passes


@dataclass
class _Session:
    replicas: list[tuple[int, int]]
    truncate_bytes: int = 0


def _checked(setting: Callable[..., Any], *args: Any) -> None:
    """Apply a traffic-manager setting; a refused one is a control-plane INVALID_ARGUMENT."""
    try:
        setting(*args)
    except ValueError as e:
        raise RuntimeApiError("INVALID_ARGUMENT", str(e)) from None


class Switch:
    """One v1model switch running ``program`` (a ``p4sim.Program`` or an ``ir.Program``).

    ``clock``: "virtual" (time moves only through ``advance``) or "wall"; ``priority_queues``:
    strict-priority queues per port (``standard_metadata.priority`` picks one, 1..8);
    ``drop_port``: the egress_spec value that drops (``mark_to_drop``); ``cpu_port``: the port
    whose output is packet-in and whose input is packet-out; ``seed``: for ``random()`` and the
    "random" hash, so runs repeat.

    Packets: ``send`` (``send_many`` for a list), ``advance``/``service``, ``take_output`` (or
    ``on_output``), ``digests``.
    Control plane: table entries and defaults, registers, counters, meters (direct ones by
    entry), multicast groups, clone sessions, queue rate/depth/weight (p4sim.tm), port up/down.  Names are P4Info
    names (a unique dotted suffix also works).  Bad requests raise ``RuntimeApiError`` with a
    google.rpc code name.
    """

    def __new__(cls, program: Any = None, *args: Any, **kw: Any) -> "Switch":
        # ``Switch(program)`` builds the switch class registered for the program's architecture
        # (a TNA/T2NA program: the Tofino pipe model, p4sim.runtime.tna_switch.TnaSwitch).
        if cls is Switch:
            arch = archs.arch_of(program)
            if arch != "v1model":
                cls = archs.get(arch).switch_class()
        return super().__new__(cls)

    def __init__(self, program: Any, clock: "str | Clock" = "virtual", priority_queues: int = 1,
                 drop_port: int = 511, cpu_port: Optional[int] = None, seed: int = 0,
                 backend: Optional[str] = None) -> None:
        if not 1 <= priority_queues <= 8:
            raise ValueError(f"priority_queues must be 1..8 (standard_metadata.priority is 3 bits), not {priority_queues}")
        self.lock = threading.RLock()
        self.clock = make_clock(clock)
        self.drop_port = drop_port
        self.cpu_port = cpu_port
        self.seed = seed
        self.backend = backend  # "python" | "native" | None: $P4SIM_BACKEND, else python
        self.priority_queues = priority_queues
        self.tm = TrafficManager(priority_queues)
        self.stats: _Tally = _Tally()
        self.buffer_output = True
        self.on_output: Optional[Callable[[int, bytes], None]] = None
        self._out: list[tuple[int, bytes]] = []
        self._down: set[int] = set()
        self._mcast: dict[int, list[tuple[int, int]]] = {}
        self._clone_sessions: dict[int, _Session] = {}
        self.program = None
        self.pipeline: Optional[Pipeline] = None
        self.load(program)

    # ---------------------------------------------------------------- program
    def load(self, program: Any) -> None:
        """(Re)load a program: fresh tables and extern state; queues, sessions and groups stay
        (as after SetForwardingPipelineConfig on BMv2)."""
        from p4sim.program import Program

        with self.lock:
            if not isinstance(program, Program):
                program = Program(program)
            if program.ir.arch != "v1model":
                raise RuntimeApiError("INVALID_ARGUMENT", f"a {program.ir.arch} program runs on a "
                                      "TnaSwitch (p4sim.Switch(program) makes one), not on this v1model switch")
            ctx = PacketContext(self.drop_port, self.seed)
            pipeline = make_pipeline(program, ctx, self.backend)
            if self.pipeline is not None:  # queued packets belong to the old program
                for port in list(self.tm.busy):
                    self.stats["pipeline_reload"] += self.tm.flush_port(port)
            self.pipeline = pipeline
            self.program = program
            self.ctx = ctx

    @property
    def tables(self) -> dict:
        return self.pipeline.tables

    # ---------------------------------------------------------------- time
    @property
    def now_us(self) -> float:
        return self.clock.now_us

    def advance(self, us: float) -> None:
        """Virtual clock: move time forward by ``us``, running every departure due on the way (in
        order, each at its own time).  Wall clock: just process what is due now."""
        if not us >= 0:
            raise RuntimeApiError("INVALID_ARGUMENT", f"cannot advance time by {us!r} us")
        with self.lock:
            if isinstance(self.clock, VirtualClock):
                target = self.clock.now_us + us
                self._run_until(target)
                self.clock.set(target)
            else:
                self._run_until(self.clock.now_us)

    def service(self) -> None:
        """Process every departure due up to the clock's now (the wall-clock run loop calls it)."""
        with self.lock:
            self._run_until(self.clock.now_us)

    def next_departure_us(self) -> Optional[float]:
        with self.lock:
            return self.tm.next_departure()

    def _run_until(self, t: float) -> None:
        tm, virt = self.tm, isinstance(self.clock, VirtualClock)
        heap = tm.heap
        # pop_due's own first test, made before calling it: most calls (one per event of a
        # fabric run, and one after every departure) find nothing due
        while tm.busy and heap and heap[0][0] <= t:
            d = tm.pop_due(t)
            if d is None:
                return
            if virt and d[0] > self.clock.now_us:
                self.clock.set(d[0])
            self._depart(*d)

    # ---------------------------------------------------------------- packet I/O
    def send(self, port: int, data: bytes) -> None:
        """A packet arrives on ``port`` now (``cpu_port``: a packet-out from the controller)."""
        with self.lock:
            now = self.clock.now_us
            if self.tm.busy:
                self._run_until(now)
            self._take(port, data, now)

    def run_to(self, t: float) -> float:
        """Virtual clock: ``advance`` to ``t`` when it is later than now, else ``service``;
        returns the clock's new time.  The fabric simulator's call for a switch whose departure
        is due (``advance(t - now)`` without its argument checks)."""
        with self.lock:
            clock = self.clock
            now = clock.now_us
            if t > now:
                now += t - now  # what advance(t - now) computes: the same float
                self._run_until(now)
                clock.set(now)
            else:
                self._run_until(now)
            return now

    def arrive_at(self, t: float, port: int, data: bytes) -> None:
        """Virtual clock: ``advance`` to ``t`` (when it is later than now), then ``send(port,
        data)``, in one call.  The fabric simulator's entry for every frame a switch takes in:
        the same steps in the same order, without send's second look for due departures (the
        advance has just run every one up to ``t``) or advance's argument checks."""
        with self.lock:
            self._take(port, data, self.run_to(t))

    def _take(self, port: int, data: bytes, now: float) -> None:
        """A packet arrives on ``port`` at ``now``, the switch's present with nothing due."""
        self.stats["received"] += 1
        if port in self._down:
            self.stats["port_down"] += 1
            return
        if not 0 <= port <= M9:
            raise RuntimeApiError("INVALID_ARGUMENT", f"port {port} outside 0..511")
        self._arrive(bytes(data), port, now)
        if self.tm.busy:
            self._run_until(now)

    def send_many(self, port: int, frames: Sequence[bytes]) -> None:
        """``send(port, f)`` for each frame in order: the same outputs in the same order, the same
        counters, registers, meters, digests and stats.  The native backend runs the frames in a
        few C calls (p4sim/native/batch.py) where ``send`` makes several Python calls per frame;
        elsewhere (the reference backend, a program that clones, resubmits, recirculates or
        truncates, an ``on_output`` callback, which must see each output before the next frame
        arrives, a clock other than p4sim's own) this is that loop of ``send``.  On the wall
        clock, each frame arrives at its own time, read in C."""
        with self.lock:
            frames = frames if isinstance(frames, (list, tuple)) else list(frames)
            batch = self.pipeline.batch
            if (batch is None or self.on_output is not None or type(self)._arrive is not Switch._arrive
                    or port in self._down or not 0 <= port <= M9):
                return self._send_each(port, frames)
            clock = self.clock
            if type(clock) is VirtualClock:
                now, wall_t0 = clock.now_us, -1.0
                self._run_until(now)
            elif type(clock) is WallClock and not self.tm.busy:
                now, wall_t0 = 0.0, clock.start
            else:  # queued packets depart between wall-clock arrivals: send serves them
                return self._send_each(port, frames)
            done = batch.run(self, frames, port, now, wall_t0)
            self._send_each(port, frames[done:])

    def _send_each(self, port: int, frames: Sequence[bytes]) -> None:
        for f in frames:
            self.send(port, f)

    def _arrive(self, data: bytes, port: int, now: float) -> None:
        """A packet enters the pipeline (the architecture's first block; TnaSwitch overrides)."""
        fast = self.pipeline.fast_arrive  # the native backend's whole-packet path, else None
        if fast is not None:
            fast(self, data, port, now)
            return
        self._ingress(data, port, NORMAL, now, None, 0)

    def take_output(self) -> list[tuple[int, bytes]]:
        """Packets transmitted so far, in departure order (and forget them)."""
        with self.lock:
            out, self._out = self._out, []
            return out

    def digests(self) -> list[Digest]:
        """Digest messages generated so far (and forget them)."""
        with self.lock:
            d, self.ctx.digests = self.ctx.digests, []
            return d

    def _emit(self, port: int, data: bytes) -> None:
        self.stats["transmitted"] += 1
        if self.buffer_output:
            self._out.append((port, data))
        cb = self.on_output
        if cb is not None:
            try:
                cb(port, data)
            except Exception:  # a broken consumer must not stop the switch
                log.exception("on_output callback failed")

    # ---------------------------------------------------------------- pipeline stages
    def _ingress(self, data: bytes, port: int, itype: int, now: float, meta: Any, passes: int) -> None:
        p, X = self.pipeline, self.ctx
        sm = p.SM()
        hdr = p.H()
        if meta is None:
            meta = p.M()
        sm.ingress_port = port
        sm.instance_type = itype
        sm.packet_length = len(data)
        sm.ingress_global_timestamp = int(now) & M48
        X.begin(sm, now)
        try:
            pos, err = p.parser(data, len(data) << 3, hdr, meta, sm)
            if err is not None:
                self.count_parser_stop(err)
                if err >= 0:
                    sm.parser_error = err
            payload = data[pos >> 3:]
            X.payload = payload
            p.verify(hdr, meta)
            p.ingress(hdr, meta, sm)
        except support.AssertFailed as e:
            self.stats["assert_failed"] += 1
            log.warning("assert/assume failed at %s: packet dropped", e.where)
            return
        except Exception:
            self.stats["runtime_error"] += 1
            log.exception("ingress failed: packet dropped")
            return
        clone, resub, trunc = X.clone, X.resubmit, X.truncate
        if clone is not None and clone[0] == "I2E":
            try:
                self._clone_i2e(data, port, now, meta, clone, passes)
            except Exception:  # never let one packet's clone stop the switch
                self.stats["runtime_error"] += 1
                log.exception("ingress-to-egress clone failed: clone dropped")
        if resub is not None:
            if passes >= MAX_REINJECT:
                self.stats["resubmit_limit"] += 1
                return
            self._ingress(data, port, RESUBMIT, now, p.preserved_meta(meta, resub[0]), passes + 1)
            return
        self.after_ingress(hdr, meta, sm, payload, data, now, trunc, passes)

    def after_ingress(self, hdr: Any, meta: Any, sm: Any, payload: bytes, data: bytes, now: float,
                      truncate: Optional[int] = None, passes: int = 0) -> None:
        """A packet whose ingress has run (here, or in the native backend's whole-packet path):
        multicast, drop or the queue of ``standard_metadata.egress_spec``."""
        pkt = _InFlight(hdr, meta, sm, payload, data, truncate, passes)
        grp = sm.mcast_grp
        if grp:
            self._multicast(pkt, grp, now)
        elif sm.egress_spec == self.drop_port:
            self.stats["dropped"] += 1
        else:
            self._enqueue(pkt, sm.egress_spec, now)

    def count_parser_stop(self, err: int) -> None:
        """Count a parser that stopped with error ``err`` (< 0: an explicit ``transition
        reject`` without an error; ingress still runs, as for any parser stop in v1model, and
        parser_error keeps what verify() set, NoError)."""
        p = self.pipeline
        if err < 0:
            self.stats["parser_reject"] += 1
            return
        self.stats["parser_error"] += 1
        self.stats["parser_error." + p.error_name(err)] += 1
        if err == p.too_short:
            self.stats["malformed"] += 1

    def _enqueue(self, pkt: _InFlight, port: int, now: float) -> None:
        if port in self._down:
            self.stats["port_down"] += 1
            return
        sm = pkt.sm
        prio = sm.priority
        if prio >= self.priority_queues:
            self.stats["priority_invalid"] += 1
            return
        tm = self.tm
        if tm.idle_unlimited(port, prio, now):
            # Fast path, same result as queue-then-pop: an unlimited-rate queue on an idle port
            # lets the packet depart at once with empty queues on both sides.
            sm.enq_qdepth = 0
            sm.enq_timestamp = int(now) & M32
            self._depart(now, port, prio, now, 0, pkt)
            return
        self._queue(pkt, port, prio, now)

    def enqueue_unicast(self, hdr: Any, meta: Any, sm: Any, payload: bytes, data: bytes, port: int, prio: int,
                        now: float) -> None:
        """A NORMAL packet whose ingress chose unicast to ``port`` (up, not the drop port) at a
        valid priority ``prio``, for a queue that is not idle with an unlimited rate: the native
        backend's ``fast_arrive`` has checked all of ``after_ingress``/``_enqueue``'s cases, so
        the packet goes straight into its queue (every packet of a fabric run comes here)."""
        self._queue(_InFlight(hdr, meta, sm, payload, data, None, 0), port, prio, now)

    def _queue(self, pkt: _InFlight, port: int, prio: int, now: float) -> None:
        sm = pkt.sm
        depth = self.tm.enqueue(pkt, port, prio, now, len(pkt.orig), sm.ingress_port)  # DWRR charges bytes
        if depth < 0:
            self.stats["queue_full"] += 1
            return
        sm.enq_qdepth = depth & M19
        sm.enq_timestamp = int(now) & M32

    def _depart(self, t: float, port: int, prio: int, enq_t: float, left: int, pkt: _InFlight) -> None:
        p, X = self.pipeline, self.ctx
        if port in self._down:
            self.stats["port_down"] += 1
            return
        fast = p.fast_depart  # the native backend: this whole method in one C call, else None
        if fast is not None:
            fast(self, t, port, enq_t, left, pkt)
            return
        sm, hdr, meta = pkt.sm, pkt.hdr, pkt.meta
        sm.egress_port = port
        sm.deq_qdepth = left & M19
        sm.deq_timedelta = (int(t) - int(enq_t)) & M32
        sm.egress_global_timestamp = int(t) & M48
        # As simple_switch: egress starts with egress_spec != drop port (only an egress
        # mark_to_drop drops) and packet_length = the length the packet entered ingress with.
        sm.egress_spec = (self.drop_port + 1) & M9
        sm.packet_length = len(pkt.orig)
        X.begin(sm, t, pkt.payload)
        X.truncate = pkt.truncate
        try:
            p.egress(hdr, meta, sm)
            clone, recirc, trunc = X.clone, X.recirculate, X.truncate
            if clone is not None and clone[0] == "E2E":
                self._clone_e2e(pkt, t, clone)
            if sm.egress_spec == self.drop_port:
                self.stats["dropped"] += 1
                return
            X.begin(sm, t, pkt.payload)  # a clone's egress may have run in between
            p.compute(hdr, meta)
            acc, nb = p.deparser(hdr)
        except support.AssertFailed as e:
            self.stats["assert_failed"] += 1
            log.warning("assert/assume failed at %s: packet dropped", e.where)
            return
        except Exception:
            self.stats["runtime_error"] += 1
            log.exception("egress failed: packet dropped")
            return
        pad = (-nb) & 7
        out = (acc << pad).to_bytes((nb + pad) >> 3, "big") + pkt.payload if nb else pkt.payload
        if recirc is not None:
            if pkt.passes >= MAX_REINJECT:
                self.stats["recirculate_limit"] += 1
                return
            self._ingress(out, sm.ingress_port, RECIRC, t, p.preserved_meta(meta, recirc[0]), pkt.passes + 1)
            return
        if trunc:
            out = out[:trunc]
        self._emit(port, out)

    def _copy_for(self, pkt: _InFlight, itype: int, meta: Any) -> _InFlight:
        sm = pkt.sm._copy()
        sm.instance_type = itype
        return _InFlight(pkt.hdr._copy(), meta, sm, pkt.payload, pkt.orig, pkt.truncate, pkt.passes)

    def _multicast(self, pkt: _InFlight, grp: int, now: float) -> None:
        replicas = self._mcast.get(grp)
        if replicas is None:
            self.stats["unknown_mcast_group"] += 1
            return
        for port, rid in replicas:
            c = self._copy_for(pkt, REPLICATION, pkt.meta._copy())
            c.sm.egress_rid = rid & M16
            c.sm.egress_spec = port
            self._enqueue(c, port, now)

    def _clone_session(self, session: int) -> Optional[_Session]:
        s = self._clone_sessions.get(session)
        if s is None:
            self.stats["unknown_clone_session"] += 1
        return s

    def _clone_i2e(self, data: bytes, port: int, now: float, meta: Any, clone: tuple, passes: int) -> None:
        """An ingress-to-egress clone carries the packet as it arrived (re-parsed), with metadata
        reset except the preserved field list, like BMv2."""
        s = self._clone_session(clone[1])
        if s is None:
            return
        p, X = self.pipeline, self.ctx
        saved = (X.sm, X.now, X.payload, X.clone, X.resubmit, X.recirculate, X.truncate)
        hdr, scratch_meta, sm = p.H(), p.M(), p.SM()
        sm.ingress_port, sm.packet_length, sm.instance_type = port, len(data), INGRESS_CLONE
        sm.ingress_global_timestamp = int(now) & M48
        X.sm = sm
        try:
            pos, err = p.parser(data, len(data) << 3, hdr, scratch_meta, sm)
        finally:
            X.sm, X.now, X.payload, X.clone, X.resubmit, X.recirculate, X.truncate = saved
        if err is not None and err >= 0:
            sm.parser_error = err
        base = _InFlight(hdr, None, sm, data[pos >> 3:], data, s.truncate_bytes or None, passes)
        for eport, rid in s.replicas:
            c = self._copy_for(base, INGRESS_CLONE, p.preserved_meta(meta, clone[2]))
            c.sm.egress_rid = rid & M16
            c.sm.egress_spec = eport
            self._enqueue(c, eport, now)

    def _clone_e2e(self, pkt: _InFlight, now: float, clone: tuple) -> None:
        s = self._clone_session(clone[1])
        if s is None:
            return
        p = self.pipeline
        for eport, rid in s.replicas:
            c = self._copy_for(pkt, EGRESS_CLONE, p.preserved_meta(pkt.meta, clone[2]))
            c.truncate = s.truncate_bytes or None
            c.sm.egress_rid = rid & M16
            c.sm.egress_spec = eport
            self._enqueue(c, eport, now)

    # ---------------------------------------------------------------- ports and replication
    def set_port_up(self, port: int, up: bool) -> None:
        """A down port neither receives nor transmits; what is queued for it is dropped."""
        with self.lock:
            if up:
                self._down.discard(port)
            else:
                self._down.add(port)
                self.stats["port_down"] += self.tm.flush_port(port)

    def port_is_up(self, port: int) -> bool:
        with self.lock:
            return port not in self._down

    @staticmethod
    def _replicas(replicas: Any) -> list[tuple[int, int]]:
        out = []
        for r in replicas:
            if isinstance(r, int):
                r = (r, 0)
            port, rid = r
            if not 0 <= port <= M9 or not 0 <= rid <= M16:
                raise RuntimeApiError("OUT_OF_RANGE", f"replica {(port, rid)}: port must fit 9 bits, rid 16 bits")
            out.append((int(port), int(rid)))
        return out

    def set_mcast_group(self, group_id: int, replicas: list) -> None:
        with self.lock:
            if not 0 < group_id <= M16:
                raise RuntimeApiError("OUT_OF_RANGE", f"multicast group id {group_id} outside 1..65535")
            self._mcast[group_id] = self._replicas(replicas)

    def get_mcast_group(self, group_id: int) -> list[tuple[int, int]]:
        with self.lock:
            if group_id not in self._mcast:
                raise RuntimeApiError("NOT_FOUND", f"no multicast group {group_id}")
            return list(self._mcast[group_id])

    def mcast_groups(self) -> dict[int, list[tuple[int, int]]]:
        with self.lock:
            return {k: list(v) for k, v in self._mcast.items()}

    def delete_mcast_group(self, group_id: int) -> None:
        with self.lock:
            if self._mcast.pop(group_id, None) is None:
                raise RuntimeApiError("NOT_FOUND", f"no multicast group {group_id}")

    # What this target's P4Runtime server takes in a CloneSessionEntry (p4sim/p4rt/writes.py):
    # simple_switch_grpc's PI -- session ids 1..32767, class of service 0 (else UNIMPLEMENTED),
    # no truncation (BMv2's PI target refuses packet_length_bytes != 0).  The in-process API
    # below is not limited by them (tests truncate v1model clones directly).
    CLONE_MAX_SESSION_ID = 32767
    CLONE_TRUNCATION = False
    CLONE_ONE_REPLICA = False
    CLONE_MAX_CLASS_OF_SERVICE = 0

    def set_clone_session(self, session_id: int, replicas: list, truncate_bytes: int = 0) -> None:
        with self.lock:
            if not 0 < session_id < (1 << 32):
                raise RuntimeApiError("OUT_OF_RANGE", f"clone session id {session_id} must be > 0")
            if truncate_bytes < 0:
                raise RuntimeApiError("INVALID_ARGUMENT", "truncate_bytes must be >= 0")
            self._clone_sessions[session_id] = _Session(self._replicas(replicas), int(truncate_bytes))

    def get_clone_session(self, session_id: int) -> tuple[list[tuple[int, int]], int]:
        with self.lock:
            s = self._clone_sessions.get(session_id)
            if s is None:
                raise RuntimeApiError("NOT_FOUND", f"no clone session {session_id}")
            return list(s.replicas), s.truncate_bytes

    def clone_sessions(self) -> dict[int, tuple[list[tuple[int, int]], int]]:
        with self.lock:
            return {k: (list(s.replicas), s.truncate_bytes) for k, s in self._clone_sessions.items()}

    def delete_clone_session(self, session_id: int) -> None:
        with self.lock:
            if self._clone_sessions.pop(session_id, None) is None:
                raise RuntimeApiError("NOT_FOUND", f"no clone session {session_id}")

    # ---------------------------------------------------------------- queues
    def set_queue_rate(self, pps: float, port: Optional[int] = None, priority: Optional[int] = None) -> None:
        with self.lock:
            try:
                self.tm.set_rate(pps, port, priority)
            except ValueError as e:
                raise RuntimeApiError("INVALID_ARGUMENT", str(e)) from None

    def set_queue_byte_rate(self, bps: float, port: Optional[int] = None, priority: Optional[int] = None) -> None:
        """Serve queues by bytes at ``bps`` bits/s instead of packets (p4sim.tm; beyond BMv2)."""
        with self.lock:
            _checked(self.tm.set_byte_rate, bps, port, priority)

    def set_queue_depth(self, pkts: int, port: Optional[int] = None, priority: Optional[int] = None) -> None:
        with self.lock:
            try:
                self.tm.set_depth(pkts, port, priority)
            except ValueError as e:
                raise RuntimeApiError("INVALID_ARGUMENT", str(e)) from None

    def set_queue_weight(self, weight: int, port: Optional[int] = None, priority: Optional[int] = None,
                         group: Optional[int] = None) -> None:
        """DWRR weight of a queue (0 = strict, the default); see p4sim.tm."""
        with self.lock:
            try:
                self.tm.set_weight(weight, port, priority, group)
            except ValueError as e:
                raise RuntimeApiError("INVALID_ARGUMENT", str(e)) from None

    def queue_occupancy(self, port: int, priority: int = 0) -> int:
        with self.lock:
            return self.tm.occupancy(port, priority)

    # ---------------------------------------------------------------- tables
    def insert_entry(self, table: str, match: dict, action: str, params: Optional[dict] = None,
                     priority: Optional[int] = None) -> None:
        with self.lock:
            self.pipeline.table(table).insert(match, action, params, priority)

    def modify_entry(self, table: str, match: dict, action: str, params: Optional[dict] = None,
                     priority: Optional[int] = None) -> None:
        with self.lock:
            self.pipeline.table(table).modify(match, action, params, priority)

    def delete_entry(self, table: str, match: dict, priority: Optional[int] = None) -> None:
        with self.lock:
            self.pipeline.table(table).delete(match, priority)

    def clear_table(self, table: str) -> None:
        with self.lock:
            self.pipeline.table(table).clear()

    def set_default_action(self, table: str, action: str, params: Optional[dict] = None) -> None:
        with self.lock:
            self.pipeline.table(table).set_default(action, params)

    def get_default_action(self, table: str) -> tuple[Optional[str], dict[str, int]]:
        with self.lock:
            return self.pipeline.table(table).get_default()

    def table_entries(self, table: str) -> list[TableEntry]:
        with self.lock:
            return self.pipeline.table(table).public_entries()

    def direct_counter_read(self, table: str, match: dict, priority: Optional[int] = None) -> tuple[int, int]:
        with self.lock:
            c = self.pipeline.table(table).direct_counter(match, priority)
            return c[0], c[1]

    def direct_counter_write(self, table: str, match: dict, packets: int, bytes: int,
                             priority: Optional[int] = None) -> None:
        with self.lock:
            c = self.pipeline.table(table).direct_counter(match, priority)
            c[0], c[1] = int(packets), int(bytes)

    def direct_meter_set_config(self, table: str, match: dict, cir: int, cburst: int, pir: int, pburst: int,
                                priority: Optional[int] = None) -> None:
        with self.lock:
            self.pipeline.table(table).direct_meter_set(match, (cir, cburst, pir, pburst), priority, self.now_us)

    def direct_meter_get_config(self, table: str, match: dict, priority: Optional[int] = None) -> Optional[MeterConfig]:
        with self.lock:
            t = self.pipeline.table(table)
            if not t.has_meter:
                raise RuntimeApiError("NOT_FOUND", f"table {t.name} has no direct meter")
            return t.find(match, priority).meter.config

    # ---------------------------------------------------------------- externs
    def register_read(self, name: str, index: int) -> int:
        with self.lock:
            return self.pipeline.register(name).api_read(index)

    def register_write(self, name: str, index: int, value: int) -> None:
        with self.lock:
            self.pipeline.register(name).api_write(index, value)

    def register_size(self, name: str) -> int:
        with self.lock:
            return self.pipeline.register(name).size

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        with self.lock:
            return self.pipeline.counter(name).api_read(index)

    def counter_write(self, name: str, index: int, packets: int, bytes: int) -> None:
        with self.lock:
            self.pipeline.counter(name).api_write(index, packets, bytes)

    def counter_size(self, name: str) -> int:
        with self.lock:
            return self.pipeline.counter(name).size

    def meter_size(self, name: str) -> int:
        with self.lock:
            return self.pipeline.meter(name).size

    def meter_set_config(self, name: str, index: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        with self.lock:
            cfg = validate_meter_config(name, cir, cburst, pir, pburst)
            self.pipeline.meter(name).api_set(index, cfg, self.now_us)

    def meter_reset_config(self, name: str, index: int) -> None:
        with self.lock:
            self.pipeline.meter(name).api_set(index, None, self.now_us)

    def meter_get_config(self, name: str, index: int) -> Optional[MeterConfig]:
        with self.lock:
            return self.pipeline.meter(name).api_get(index)
