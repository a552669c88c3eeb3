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
from p4sim.native.program import Callbacks, NativeProgram, _view_class
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
            base = _view_class(self.mod.ffi, cname, self.gen.struct_fields[cname])
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


class NativeTnaPipeline(TnaPipeline):
    """A TNA program loaded into one switch, its six blocks compiled to C."""

    table_class = NativeTable
    backend = "native"

    def __init__(self, code: Any, ctx: TnaContext, native: TnaNativeProgram) -> None:
        self.native = native
        ffi, lib = native.mod.ffi, native.mod.lib
        self._cb = Callbacks(ctx, native.gen.digests, native.gen.logs)
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

    def fresh_metadata(self, obj: Any, t: ir.StructT) -> Any:
        for path, attr, value in self._c_ones[id(t)]:
            target = obj._p
            for step in path:
                target = getattr(target, step)
            setattr(target, attr, value)
        return obj

    def ucast_set(self, tm: Any) -> bool:
        return bool(tm._p._w)
