"""``NativePipeline``: the v1model pipeline interface of ``p4sim.runtime.pipeline.Pipeline`` with
every per-packet block running in C.

It is built on the reference pipeline's own control-plane objects, so tables, registers,
counters and meters have exactly the reference's API and checks; only where their state lives
changes: register cells and counter arrays are views of C memory, meter cells read and write C,
and tables are loaded into C (p4sim/native/tables.py).
"""
from __future__ import annotations

import logging
from typing import Any, Optional

from p4sim.native.batch import Batch
from p4sim.native.program import Callbacks, NativeProgram
from p4sim.native.tables import NativeLink, NativeTable
from p4sim.runtime.externs import MeterConfig
from p4sim.runtime.objects import pyattr
from p4sim.runtime.pipeline import PacketContext, Pipeline
from p4sim.runtime.support import AssertFailed

switch_log = logging.getLogger("p4sim.switch")


class NativeMeterCell:
    """One meter cell in C with the reference ``TwoRateMeter``'s attributes."""

    __slots__ = ("_c", "config")

    def __init__(self, c: Any) -> None:
        self._c = c
        self.config: Optional[MeterConfig] = None

    def configure(self, config: Optional[MeterConfig], now_us: float) -> None:
        c = self._c
        self.config = config
        c.configured = int(config is not None)
        if config is not None:
            c.cir, c.cburst, c.pir, c.pburst = config.cir, config.cburst, config.pir, config.pburst
            c.tc, c.tp = float(config.cburst), float(config.pburst)
        c.last_us = now_us

    @property
    def tc(self) -> float:
        return self._c.tc

    @property
    def tp(self) -> float:
        return self._c.tp

    @property
    def last_us(self) -> float:
        return self._c.last_us


class NativePipeline(Pipeline):
    """A program loaded into one switch, its blocks compiled to C (see ``NativeProgram``)."""

    table_class = NativeTable
    backend = "native"

    def __init__(self, code: Any, ctx: PacketContext, native: NativeProgram) -> None:
        self.native = native
        ffi, lib = native.mod.ffi, native.mod.lib
        self._cb = Callbacks(ctx, native.gen.digests, native.gen.logs)
        self._handle = ffi.new_handle(self._cb)
        self.S = ffi.gc(lib.p4n_new(self._handle, ctx.drop_port), lib.p4n_free)
        super().__init__(code, ctx)
        for name in ("parser", "verify", "ingress", "egress", "compute", "deparser"):
            del self.__dict__[name]  # the reference's generated functions: these run in C here
        self.H, self.M, self.SM = native.H, native.M, native.SM
        self._lib, self._ffi = lib, ffi
        self._err = ffi.new("int32_t *")
        self._out = lib.p4n_out(self.S)
        self._res = ffi.new("int64_t[5]")
        self._unpack = ffi.unpack
        self._hdr_room = native.gen.out_bytes
        self._outbuf = ffi.new("char[]", 4096 + self._hdr_room)
        self._ctl = lib.p4n_ctl(self.S)
        self._reinjects = native.gen.reinjects
        self._asserts = bool(native.gen.asserts)
        if self._reinjects:  # clones, resubmits, recirculations and truncation: the switch's own path
            self.fast_arrive = self.fast_depart = None
        elif native.batch:
            self.batch = Batch(self)
        S = self.S
        self._scratch_ptrs = (lib.p4n_scratch_h(S), lib.p4n_scratch_m(S), lib.p4n_scratch_sm(S))
        self._new, self._types = ffi.new, tuple(ffi.typeof(p) for p in self._scratch_ptrs)
        self._bind_state()

    def _bind_state(self) -> None:
        ffi, lib, S, gen = self._ffi, self._lib, self.S, self.native.gen
        for r in gen.registers:
            reg = self.registers[r.inst.qualified_name]
            reg.cells = ffi.cast(f"uint64_t(*)[{r.size}]", lib.p4n_reg(S, r.index))[0]
        for c in gen.counters:
            ctr = self.counters[c.inst.qualified_name]
            ctr.packets = ffi.cast(f"uint64_t(*)[{c.size}]", lib.p4n_ctr(S, c.index, 0))[0]
            ctr.bytes = ffi.cast(f"uint64_t(*)[{c.size}]", lib.p4n_ctr(S, c.index, 1))[0]
        for m in gen.meters:
            base = lib.p4n_mtr(S, m.index)
            self.meters[m.inst.qualified_name].cells = [NativeMeterCell(base + i) for i in range(m.size)]
        self.dirty_tables: list[NativeTable] = []
        for spec in gen.tables:
            t = self.tables[spec.decl.qualified_name]
            t.link = NativeLink(self, t, spec, lib.p4n_table(S, spec.index), ffi, lib)
            t.dirty = True
            self.dirty_tables.append(t)

    def _sync(self) -> None:
        while self.dirty_tables:
            self.dirty_tables.pop().link.push()

    # ---------------------------------------------------------------- the whole-packet path
    def fast_arrive(self, sw: Any, data: bytes, port: int, now: float) -> None:
        """``Switch._ingress`` + ``_enqueue`` + ``_depart`` for a NORMAL arrival, in two C calls
        when the packet is unicast to an idle unlimited-rate queue (the common case); otherwise
        the parsed packet is handed to the switch's own multicast/queue code.  The native subset
        has no clone, resubmit, recirculate or truncate, so nothing else can happen."""
        if self.dirty_tables:
            self._sync()
        res = self._res
        self.ctx.now = now  # digests are stamped with it
        self._lib.p4n_fast_ingress(self.S, data, len(data), port, now, res)
        pos, err, espec, grp, prio = self._unpack(res, 5)
        if (err == -2 and espec >= 0 and not grp and espec != sw.drop_port and espec not in sw._down
                and prio < sw.priority_queues):  # the common cases, checked in one line
            if sw.tm.idle_unlimited(espec, prio, now):
                return self._egress_idle(sw, data, pos, espec, now)
            return self._hand_over(sw, data, pos, espec, 0, prio, now)
        self.ingress_done(sw, data, now, pos, err, espec, grp, prio)

    def ingress_done(self, sw: Any, data: bytes, now: float, pos: int, err: int, espec: int, grp: int,
                     prio: int) -> None:
        """The rest of ``fast_arrive`` once p4n_fast_ingress has run (the packet's state is in
        the scratch structs): also where ``send_many``'s C loop hands back a frame that needs
        Python (p4sim/native/batch.py)."""
        if err != -2:
            sw.count_parser_stop(err)
        if espec < 0:
            return self._assert_failed(sw)
        if not grp:
            if espec == sw.drop_port:
                sw.stats["dropped"] += 1
                return
            if espec in sw._down:
                sw.stats["port_down"] += 1
                return
            if prio >= sw.priority_queues:
                sw.stats["priority_invalid"] += 1
                return
            if sw.tm.idle_unlimited(espec, prio, now):
                return self._egress_idle(sw, data, pos, espec, now)
        self._hand_over(sw, data, pos, espec, grp, prio, now)

    def _hand_over(self, sw: Any, data: bytes, pos: int, espec: int, grp: int, prio: int, now: float) -> None:
        """The parsed packet (copied out of the scratch structs) to the switch's multicast code,
        or, unicast to an up port at a valid priority, into its queue."""
        h, m, x = self._scratch_ptrs
        th, tm, tx = self._types
        new = self._new  # each view gets its own struct, made as a copy of the scratch one
        hdr, meta, sm = self.H(new(th, h[0])), self.M(new(tm, m[0])), self.SM(new(tx, x[0]))
        if grp:
            sw.after_ingress(hdr, meta, sm, data[pos >> 3:], data, now)
        else:  # checked above: unicast, up, valid priority, a queue with a rate (the fabric's case)
            sw.enqueue_unicast(hdr, meta, sm, data[pos >> 3:], data, espec, prio, now)

    def _egress_idle(self, sw: Any, data: bytes, pos: int, port: int, now: float) -> None:
        """The unlimited-rate idle queue's departure at ``now``: egress to output bytes in C."""
        n = len(data)
        out = self._outbuf
        if len(out) < n + self._hdr_room:
            out = self._room(n)
        k = self._lib.p4n_fast_egress(self.S, data, n, pos, port, now, out)
        if k >= 0:  # the common case of _output
            sw._emit(port, self._unpack(out, k))
        else:
            self._output(sw, port, out, k)

    def fast_depart(self, sw: Any, t: float, port: int, enq_t: float, left: int, pkt: Any) -> None:
        """``Switch._depart`` of a queued packet on an up port, in one C call (``p4n_depart``):
        the dequeue metadata, egress, checksum and deparser, and the output bytes.  In the fabric
        every queue has a rate, so every packet takes this path, not ``fast_arrive``'s idle-queue
        one; doing its metadata writes, three block calls and the byte assembly in C removes most
        of the per-departure Python work."""
        if self.dirty_tables:
            self._sync()
        payload = pkt.payload
        self.ctx.now = t  # all the C blocks read of the context: digests are stamped with it
        n = len(payload)
        out = self._outbuf
        if len(out) < n + self._hdr_room:
            out = self._room(n)
        k = self._lib.p4n_depart(self.S, pkt.hdr._p, pkt.meta._p, pkt.sm._p, payload, n, port, left, enq_t, t,
                                 len(pkt.orig), out)
        if k >= 0:  # _output's common case, inline: every departure of a fabric run comes here
            sw._emit(port, self._unpack(out, k))
        else:
            self._output(sw, port, out, k)

    def _room(self, n: int) -> Any:
        """The output buffer, large enough for ``n`` bytes of packet plus the deparsed headers."""
        out = self._outbuf
        if len(out) < n + self._hdr_room:
            out = self._outbuf = self._ffi.new("char[]", 2 * n + self._hdr_room)
        return out

    def _output(self, sw: Any, port: int, out: Any, k: int) -> None:
        """What a C egress returned: ``k`` bytes to send, -1 dropped by egress, -2 assert failed."""
        if k == -2:
            self._assert_failed(sw)
        elif k < 0:
            sw.stats["dropped"] += 1
        else:
            sw._emit(port, self._unpack(out, k))

    def _assert_failed(self, sw: Any) -> None:
        """As the switch handles the reference's AssertFailed: counted, logged, packet dropped."""
        where = self.native.gen.asserts[self._lib.p4n_assert_at(self.S) - 1]
        sw.stats["assert_failed"] += 1
        switch_log.warning("assert/assume failed at %s: packet dropped", where)

    def _check_assert(self) -> None:
        k = self._lib.p4n_assert_at(self.S)
        if k:
            raise AssertFailed(self.native.gen.asserts[k - 1])

    # ---------------------------------------------------------------- per-packet blocks
    def parser(self, data: bytes, nbits: int, hdr: Any, meta: Any, sm: Any) -> tuple[int, Optional[int]]:
        if self.dirty_tables:
            self._sync()
        err = self._err
        pos = self._lib.p4n_parser(self.S, data, nbits, hdr._p, meta._p, sm._p, err)
        e = err[0]
        return pos, (None if e == -2 else e)

    def verify(self, hdr: Any, meta: Any) -> None:
        self._lib.p4n_verify(self.S, hdr._p, meta._p, self.ctx.sm._p)
        if self._asserts:
            self._check_assert()

    def ingress(self, hdr: Any, meta: Any, sm: Any) -> None:
        self._control(self._lib.p4n_ingress, hdr, meta, sm)

    def egress(self, hdr: Any, meta: Any, sm: Any) -> None:
        self._control(self._lib.p4n_egress, hdr, meta, sm)

    def _control(self, fn: Any, hdr: Any, meta: Any, sm: Any) -> None:
        """Run the ingress or egress control in C, then hand the switch what it asked for."""
        if self.dirty_tables:
            self._sync()
        fn(self.S, hdr._p, meta._p, sm._p, self.ctx.now)
        if self._asserts:
            self._check_assert()
        if self._reinjects:
            self._signals()

    def _signals(self) -> None:
        """What the block asked of the switch, as the reference leaves it in the context:
        X.clone (kind, session, field list), X.resubmit / X.recirculate (field list,), X.truncate."""
        c, X = self._ctl, self.ctx
        if c.clone_set:
            X.clone = ("E2E" if c.clone_kind else "I2E", c.clone_session, None if c.clone_fl < 0 else c.clone_fl)
        if c.resub_set:
            X.resubmit = (None if c.resub_fl < 0 else c.resub_fl,)
        if c.recirc_set:
            X.recirculate = (None if c.recirc_fl < 0 else c.recirc_fl,)
        if c.trunc_set:
            X.truncate = c.trunc

    def compute(self, hdr: Any, meta: Any) -> None:
        self._lib.p4n_compute(self.S, hdr._p, meta._p, self.ctx.sm._p)
        if self._asserts:
            self._check_assert()

    def deparser(self, hdr: Any) -> tuple[int, int]:
        nb = self._lib.p4n_deparser(self.S, hdr._p, self.ctx.sm._p)
        if not nb:
            return 0, 0
        acc = int.from_bytes(self._ffi.buffer(self._out, (nb + 7) >> 3), "big") >> ((-nb) & 7)
        return acc, nb

    def preserved_meta(self, meta: Any, index: Optional[int]) -> Any:
        fields = self.field_list_fields(index)
        if fields is None:
            return meta._copy()
        m = self.M()
        keep = set(fields)
        for f in self.meta_type.fields:
            if pyattr(f.name) in keep:
                c = "f_" + "".join(ch if ch.isalnum() else "_" for ch in f.name)
                setattr(m._p, c, getattr(meta._p, c))
        return m
