"""``NativeTnaPipeline``: the ``TnaPipeline`` interface (six blocks, the intrinsic metadata
classes) with every block running in C (p4sim/native/tna.py).

It is built on the reference pipeline's own control-plane objects, as v1model's
``NativePipeline`` is: tables, registers, counters and meters keep the reference's API and
checks, and their state lives in C.  The switch (``TnaSwitch``) is the reference's own: it
builds the per-pass objects through this pipeline's classes (views of C structs) and calls the
blocks with the same arguments, so everything outside the blocks is shared code.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from p4sim.frontend import ir
from p4sim.native.pipeline import NativeMeterCell, NativePipeline
from p4sim.native.program import Callbacks, NativeProgram, view_class
from p4sim.native.tables import NativeTable
from p4sim.native.tna import TM_T, TnaGenerated, generate_tna
from p4sim.native import build
from p4sim.runtime.objects import header_layout, pyattr
from p4sim.runtime.support import AssertFailed
from p4sim.runtime.tna import TnaContext, TnaPipeline, TnaRuleError


class TnaNativeProgram(NativeProgram):
    """A TNA program compiled to C, with a view class per C struct the switch builds."""

    def __init__(self, prog: ir.Program) -> None:
        self.gen: TnaGenerated = generate_tna(prog)
        self.mod = build.build(self.gen.cdef, self.gen.source)
        self.views: dict[int, type] = {}
        self._bind_callbacks()
        ffi = self.mod.ffi

        @ffi.def_extern(name="p4n_py_getrandbits")
        def _bits(h: Any, w: int) -> int:
            return ffi.from_handle(h).ctx.rng.getrandbits(w)

    def view(self, t: ir.Type) -> type:
        """The Python class over ``t``'s C struct (as the reference's generated class is used by
        the switch: scalar fields, and for a header ``_v``, ``_pack`` and ``_WIDTH``)."""
        cls = self.views.get(id(t))
        if cls is None:
            cname = self.gen.type_structs[id(t)]
            base = view_class(self.mod.ffi, cname, self.gen.struct_fields[cname])
            ns: dict[str, Any] = {"__slots__": ()}
            if isinstance(t, ir.HeaderT):
                lay = header_layout(t)
                ns["_WIDTH"] = sum(w for _, w, _, _ in lay)
                ns["_v"] = property(lambda s: bool(s._p._v), lambda s, v: setattr(s._p, "_v", int(bool(v))))
                ns["_pack"] = lambda s, lay=lay: _pack(s, lay)
            cls = self.views[id(t)] = type(cname, (base,), ns)
        return cls


def _pack(obj: Any, lay: list[tuple[str, int, int, bool]]) -> int:
    v = 0
    for attr, _, shift, _ in lay:
        v |= int(getattr(obj, attr)) << shift
    return v


def _c_ones(t: ir.StructT, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str, int]]:
    """The reference's ``tna._ones_of`` in C field names: every unsigned bit and bool field of
    a struct (nested structs too) with its all-ones value."""
    out: list[tuple[tuple[str, ...], str, int]] = []
    for f in t.fields:
        ft, a = f.type, "f_" + "".join(c if c.isalnum() else "_" for c in f.name)
        if isinstance(ft, ir.BitT) and not ft.signed:
            out.append((path, a, (1 << ft.width) - 1))
        elif isinstance(ft, ir.BoolT):
            out.append((path, a, 1))
        elif isinstance(ft, ir.StructT):
            out += _c_ones(ft, path + (a,))
    return out


class _Tm:
    """The TM metadata the switch reads after a native ingress pass."""

    __slots__ = ("bypass_egress", "copy_to_cpu", "mcast_grp_a", "mcast_grp_b", "qid", "ucast_egress_port", "ucast_w")

    def __init__(self, bypass: int, cpu: int, a: int, b: int, qid: int, port: int, written: int) -> None:
        self.bypass_egress, self.copy_to_cpu, self.mcast_grp_a, self.mcast_grp_b = bypass, cpu, a, b
        self.qid, self.ucast_egress_port, self.ucast_w = qid, port, written


class NativeTnaPipeline(TnaPipeline):
    """A TNA program loaded into one switch, its six blocks compiled to C."""

    table_class = NativeTable
    backend = "native"

    def __init__(self, code: Any, ctx: TnaContext, native: TnaNativeProgram) -> None:
        self.native, ffi, lib = native, native.mod.ffi, native.mod.lib
        self._cb = Callbacks(ctx, native.gen.digests, native.gen.logs)  # (the handle keeps it alive)
        self._handle = ffi.new_handle(self._cb)
        self.S = ffi.gc(lib.p4n_new(self._handle), lib.p4n_free)
        super().__init__(code, ctx)
        self._lib, self._ffi = lib, ffi
        self._err = ffi.new("int32_t *")
        self._st = ffi.new("int32_t[9]")
        self._out = lib.p4n_out(self.S)
        prog, gen = self.prog, native.gen
        names = {"IG_INTR": "ingress_intrinsic_metadata_t", "IG_TM": TM_T,
                 "IG_PRSR": "ingress_intrinsic_metadata_from_parser_t",
                 "IG_DPRSR": "ingress_intrinsic_metadata_for_deparser_t", "EG_INTR": "egress_intrinsic_metadata_t",
                 "EG_PRSR": "egress_intrinsic_metadata_from_parser_t",
                 "EG_DPRSR": "egress_intrinsic_metadata_for_deparser_t",
                 "EG_OPORT": "egress_intrinsic_metadata_for_output_port_t"}
        for attr, tname in names.items():
            setattr(self, attr, native.view(prog.types[tname]))
        ip = gen.role_params["ingress_parser"]
        ep = gen.role_params["egress_parser"]
        self.IH, self.IM = native.view(ip[0][1]), native.view(ip[1][1])
        self.EH, self.EM = native.view(ep[0][1]), native.view(ep[1][1])
        self.M = self.IM
        self._c_ones = {id(t): ([] if self.auto_init_metadata else _c_ones(t))
                        for t in (self.meta_type, self.egress_meta_type)}
        for role in ir.TNA_ROLES:
            setattr(self, role, self._block(role))
        if gen.passes:
            self.ingress_pass, self.egress_pass = self._ingress_pass, self._egress_pass
            self._res = ffi.new("int64_t[15]")
            self._obuf = ffi.new("char[]", 4096)
            self._room = 4096 - 64 - native.gen.out_bytes
            self._unpack = ffi.unpack
            self._reads_ig = int("ingress" in self.reads_parser_err)
            self._reads_eg = int("egress" in self.reads_parser_err)
            self._md_bytes = self.ctx.port_md_bits >> 3
        self._bind_state()  # registers start at their constructor's value in C too (p4n_new)

    # the state binding and table loading are v1model's (same generated state layout)
    _bind_state = NativePipeline._bind_state
    _sync = NativePipeline._sync

    # ---------------------------------------------------------------- the blocks
    def _block(self, role: str) -> Callable[..., Any]:
        fn = getattr(self._lib, f"p4n_{role}")
        lib, S, X, err, st = self._lib, self.S, self.ctx, self._err, self._st
        if role.endswith("_parser"):
            def parser(data: bytes, nbits: int, *objs: Any) -> tuple[int, Optional[int]]:
                if self.dirty_tables:
                    self._sync()
                lib.p4n_begin(S, X.now, X.sm.packet_length, X.pass_id)
                pos = fn(S, data, nbits, *[o._p for o in objs], err)
                e = err[0]
                return pos, (None if e == -2 else e)
            return parser
        if role.endswith("_deparser"):
            def deparser(*objs: Any) -> tuple[int, int]:
                nb = fn(S, *[o._p for o in objs])
                self._status()
                if st[4]:
                    X.mirror = (st[5], self._bits(lib.p4n_mirror(S), st[6]), st[6])
                if st[7]:
                    X.resubmit_req = (self._bits(lib.p4n_resub(S), st[8]), st[8])
                return self._bits(self._out, nb), nb
            return deparser

        def control(*objs: Any) -> None:
            if self.dirty_tables:
                self._sync()
            fn(S, *[o._p for o in objs])
            self._status()
        return control

    def _bits(self, buf: Any, nb: int) -> int:
        if not nb:
            return 0
        return int.from_bytes(self._ffi.buffer(buf, (nb + 7) >> 3), "big") >> ((-nb) & 7)

    def _status(self) -> None:
        """Raise what the reference would have raised inside the block."""
        st = self._st
        if self._lib.p4n_status(self.S, st):
            gen = self.native.gen
            if st[1]:
                where, what, reg = gen.reg_sites[st[1] - 1]
                prev = gen.reg_sites[st[2] - 1][0] if st[2] else "?"
                raise TnaRuleError(f"{where}: {what}: register {reg} was already accessed in this pass (at {prev}); "
                                   "Tofino allows one access per register per packet")
            raise AssertFailed(gen.asserts[st[0] - 1])

    # ---------------------------------------------------------------- whole passes (tna_pass.py)
    def _buffer(self, n: int) -> Any:
        """The output buffer, large enough for ``n`` bytes of packet plus metadata and headers."""
        if n > self._room:
            self._obuf = self._ffi.new("char[]", 2 * n + 64 + self.native.gen.out_bytes)
            self._room = 2 * n
        return self._obuf

    def _ingress_pass(self, sw: Any, data: bytes, port: int, now: float, resubmitted: bool,
                      md: int) -> Optional[tuple[bytes, int, Any]]:
        """``TnaSwitch._ingress_blocks`` in one C call (``p4n_ig_pass``)."""
        if self.dirty_tables:
            self._sync()
        X, res, n = self.ctx, self._res, len(data)
        self._begin(X, now)
        out = self._buffer(n)
        k = self._lib.p4n_ig_pass(self.S, md.to_bytes(self._md_bytes, "big"), self._md_bytes, data, n, port,
                                  int(resubmitted), int(round(now * 1000)), now, X.pass_id, self._reads_ig, out, res)
        err = res[0]
        if err != -2 and not sw.ingress_parser_error(err):
            return None
        if k < 0:
            return self._gone(sw, k, "ingress")
        if res[9]:
            X.mirror = (res[10], self._bits(self._lib.p4n_mirror(self.S), res[11]), res[11])
        if res[12]:
            X.resubmit_req = (self._bits(self._lib.p4n_resub(self.S), res[13]), res[13])
        return self._unpack(out, k), res[2], _Tm(res[3], res[4], res[5], res[6], res[7], res[8], res[14])

    def _egress_pass(self, sw: Any, t: float, ns_t: int, intr: tuple, pkt: Any) -> Optional[tuple[bytes, int]]:
        """``TnaSwitch._egress_blocks`` in one call (``p4n_eg_pass``)."""
        if self.dirty_tables:
            self._sync()
        X, res, data = self.ctx, self._res, pkt.data
        self._begin(X, t)
        out = self._buffer(len(data))
        k = self._lib.p4n_eg_pass(self.S, data, len(data), *intr, ns_t, t, X.pass_id, pkt.orig_len, self._reads_eg,
                                  out, res)
        if res[0] != -2 and not sw.egress_parser_error():
            return None
        if k < 0:
            return self._gone(sw, k, "egress")
        if res[9]:
            X.mirror = (res[10], self._bits(self._lib.p4n_mirror(self.S), res[11]), res[11])
        return self._unpack(out, k), res[2]

    @staticmethod
    def _begin(X: TnaContext, now: float) -> None:
        """``TnaContext.begin_pass`` for what a native pass leaves in Python: the pass id, the
        time (digests are stamped with it) and the requests (p4n_begin clears C's state)."""
        X.pass_id += 1
        X.now = now
        X.mirror = X.resubmit_req = None

    def _gone(self, sw: Any, k: int, gress: str) -> None:
        """What the reference's blocks do when a pass ends the packet: -3 a parser error (counted
        already), -4 a parser that did not skip the metadata, -5 an assert (a register rule
        raises)."""
        if k == -4:
            return sw.metadata_not_skipped()
        if k == -5:
            try:
                self._status()
            except AssertFailed as e:
                return sw.assert_failed(e.where)
        return None

    def fresh_metadata(self, obj: Any, t: ir.StructT) -> Any:
        for path, attr, value in self._c_ones[id(t)]:
            target = obj._p
            for step in path:
                target = getattr(target, step)
            setattr(target, attr, value)
        return obj

    @staticmethod
    def ucast_set(tm: Any) -> bool:
        return bool(tm.ucast_w if isinstance(tm, _Tm) else tm._p._w)
