"""One program compiled to native code: the built module, the Python views of its packet
structs, and the callbacks into the switch (random numbers and digests stay in Python so the
seeded stream and the digest records are the reference's own)."""
from __future__ import annotations

from typing import Any

from p4sim.frontend import ir
from p4sim.native import batch, build
from p4sim.native.cgen import Generated, generate
from p4sim.runtime.objects import pyattr


class Callbacks:
    """What C calls back into: the switch's PacketContext (``ctx``) and the digest layouts."""

    def __init__(self, ctx: Any, digests: list[tuple[str, list[tuple[str, int]]]], logs: list[str]) -> None:
        self.ctx = ctx
        self.digests = digests
        self.logs = logs
        self.live_now: Any = None  # in a wall-clock batch: the C double holding the frame's time


def _view_class(ffi: Any, cname: str, scalars: list[str]) -> type:
    """A Python class over one C struct, with a property per scalar field (the names the
    switch uses on the reference's objects: ``sm.egress_spec`` ...) and ``_copy``."""
    ctype = f"struct {cname} *"
    lines = ["class View:", "    __slots__ = ('_p',)",
             "    def __init__(self, p=None):", "        self._p = _new(_T) if p is None else p",
             "    def _copy(self):", "        n = _new(_T)", "        n[0] = self._p[0]", "        return View(n)"]
    for f in scalars:
        a, c = pyattr(f), "f_" + "".join(ch if ch.isalnum() else "_" for ch in f)
        lines += [f"    @property", f"    def {a}(self):", f"        return self._p.{c}",
                  f"    @{a}.setter", f"    def {a}(self, v):", f"        self._p.{c} = v"]
    ns: dict[str, Any] = {"_new": ffi.new, "_T": ctype}
    exec("\n".join(lines), ns)
    cls = ns["View"]
    cls.__name__ = cname
    cls._FIELDS = tuple(pyattr(f) for f in scalars)
    return cls


view_class = _view_class  # (public: p4sim/native/tna_pipeline.py builds its views with it)


class NativeProgram:
    """Generated C for ``prog``, compiled (or found in the cache) and loaded."""

    def __init__(self, prog: ir.Program) -> None:
        self.gen: Generated = generate(prog)
        cdef, source, self.batch = batch.with_batch(prog.arch, self.gen.cdef, self.gen.source)
        self.mod = build.build(cdef, source)
        ffi = self.mod.ffi
        self.H, self.M, self.SM = (_view_class(ffi, self.gen.structs[k], self.gen.struct_fields[self.gen.structs[k]])
                                   for k in ("H", "M", "SM"))
        self._bind_callbacks()

    def _bind_callbacks(self) -> None:
        ffi = self.mod.ffi
        if getattr(self.mod, "_p4n_bound", False):
            return

        @ffi.def_extern(name="p4n_py_random")
        def _random(h: Any, lo: int, hi: int) -> int:
            return ffi.from_handle(h).ctx.random(lo, hi)

        @ffi.def_extern(name="p4n_py_getrandbits32")
        def _bits32(h: Any) -> int:
            return ffi.from_handle(h).ctx.rng.getrandbits(32)

        @ffi.def_extern(name="p4n_py_digest")
        def _digest(h: Any, idx: int, vals: Any) -> None:
            cb = ffi.from_handle(h)
            if cb.live_now is not None:
                cb.ctx.now = cb.live_now[0]
            name, fields = cb.digests[idx]
            cb.ctx.digest(name, tuple((n, w, vals[i]) for i, (n, w) in enumerate(fields)))

        @ffi.def_extern(name="p4n_py_log")
        def _log(h: Any, idx: int, n: int, vals: Any) -> None:
            cb = ffi.from_handle(h)
            cb.ctx.log(cb.logs[idx], tuple(vals[i] for i in range(n)))

        self.mod._p4n_bound = True
