"""v1model's externs and extern functions (register, counter, meter, hash, checksum, clone,
digest ...), and the data lists they take; an architecture's own externs come from its
registered code generator (``archs``)."""
from __future__ import annotations

from typing import Any, Optional

from p4sim.errors import Pos, Unsupported
from p4sim.frontend import ir
from p4sim.runtime.codegen.base import CompilerBase
from p4sim.runtime.codegen.common import Scope, bitmask, enum_member
from p4sim.runtime.objects import scalar_width


class ExternCompiler(CompilerBase):
    # ------------------------------------------------------------------ data lists
    @staticmethod
    def scalar_item(code: str, t: ir.Type, name: str) -> tuple[str, Any, str]:
        if isinstance(t, ir.VarbitT):  # its current length: the width is a run-time expression
            return (f"{code}[1]", f"{code}[0]", name)
        if isinstance(t, ir.BoolT):
            return (f"(1 if {code} else 0)", 1, name)
        return (code, scalar_width(t), name)

    @staticmethod
    def packed(items: list[tuple[str, Any, str]]) -> tuple[str, Any]:
        """One int holding the items MSB-first back to back, and its width (BMv2's packing).
        With a varbit among them the width is a run-time expression (its current length)."""
        if any(not isinstance(w, int) for _, w, _ in items):
            acc = "0"
            for c, w, _ in items:
                acc = f"((({acc}) << ({w})) | ({c}))"
            return acc, "(" + " + ".join(f"({w})" for _, w, _ in items) + ")"
        total = sum(w for _, w, _ in items)
        parts, off = [], total
        for c, w, _ in items:
            off -= w
            parts.append(f"(({c}) << {off})" if off else f"({c})")
        return (" | ".join(parts) or "0"), total

    # ------------------------------------------------------------------ externs and builtins
    def extern_call(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> Optional[str]:
        if self.arch_externs is not None and e.instance.extern in self.arch_externs.EXTERNS:
            return self.arch_externs.extern_call(self, e, sc, pre)
        self.extern_name(e.instance)
        return super().extern_call(e, sc, pre)

    def extern_state(self, inst: ir.ExternInstance) -> tuple[str, int]:
        """A register's or counter's global name and size.  Register calls are inlined on the
        cell list ({E}_c, bound per switch): registers are the most frequent extern calls in
        stateful programs and a method call per access adds up."""
        return self.extern_name(inst), int(inst.ctor_args[0])

    def extern_meter_execute_meter(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> None:
        E = self.extern_name(e.instance)
        self.assign(e.args[1], f"{E}.execute({self.ex(e.args[0], sc, pre)}, X.sm.packet_length, X.now)", sc, pre)

    def extern_direct_meter_read(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> None:
        self.assign(e.args[0], f"X.dmeter.get({id(e.instance)}, 0)", sc, pre)

    def builtin_hash(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        a = e.args
        algo = enum_member(a[1])
        data, width = self.packed(self.flatten(a[3], sc, pre))
        ow = scalar_width(a[0].type)
        if algo == "random":
            h = f"X.rng.getrandbits(32)"
        else:
            h = f"{self.algo(algo, True, e.pos)}({data}, {width})"
        base, mx = self.ex(a[2], sc, pre), self.ex(a[4], sc, pre)
        tmp = sc.new_tmp()
        pre.append(f"{tmp} = {mx}")
        self.assign(a[0], f"((({base}) + ({h}) % {tmp}) & {bitmask(ow)} if {tmp} else ({base}) & {bitmask(ow)})", sc, pre)

    def builtin_random(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        lo, hi = self.ex(e.args[1], sc, pre), self.ex(e.args[2], sc, pre)
        self.assign(e.args[0], f"X.random({lo}, {hi})", sc, pre)

    def builtin_digest(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        t, items, names = self.digest_items(e, sc, pre)
        tup = "(" + "".join(f"({nm!r}, {w}, {c}), " for (c, w, _), nm in zip(items, names)) + ")"
        pre.append(f"X.digest({getattr(t, 'name', 'digest')!r}, {tup})")

    def builtin_clone(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        self.uses_clone = True
        kind = enum_member(e.args[0])
        session = self.ex(e.args[1], sc, pre)
        pre.append(f"X.request_clone({kind!r}, {session}, {self.field_list(e, 2)!r})")

    def builtin_resubmit(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        pre.append(f"X.resubmit = ({self.field_list(e, 0)!r},)")

    def builtin_recirculate(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        pre.append(f"X.recirculate = ({self.field_list(e, 0)!r},)")

    def builtin_truncate(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        pre.append(f"X.truncate = {self.ex(e.args[0], sc, pre)}")

    def builtin_log_msg(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        msg = self.ex(e.args[0], sc, pre)
        vals = [c for c, _, _ in self.flatten(e.args[1], sc, pre)] if len(e.args) > 1 else []
        pre.append(f"X.log({msg}, ({''.join(v + ', ' for v in vals)}))")

    def builtin_assert(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        where = str(e.pos) if e.pos else e.name
        pre.append(f"if not {self.ex(e.args[0], sc, pre)}: raise _AssertFailed({where!r})")

    def builtin_verify(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        pre.append(f"if not {self.ex(e.args[0], sc, pre)}: raise _ParserError({self.ex(e.args[1], sc, pre)})")

    @staticmethod
    def algo(name: str, on_int: bool, pos: Optional[Pos] = None) -> str:
        """Global name of a hash implementation (bound in base_namespace), checked now so an
        algorithm p4sim lacks is a compile error, not a per-packet failure."""
        from p4sim.runtime import hashing

        if name not in hashing.ALGORITHMS:
            raise Unsupported(f"hash algorithm {name}", pos)
        return f"_HI_{name}" if on_int else f"_HB_{name}"

    def builtin_checksum(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        a = e.args
        cond = self.ex(a[0], sc, pre)
        algo = enum_member(a[3])
        data, width = self.packed(self.flatten(a[1], sc, pre))
        cw = scalar_width(a[2].type)
        payload = e.name.endswith("_with_payload")
        if payload:
            self.uses_payload = True
        if payload:
            calc = f"({self.algo(algo, False, e.pos)}(_pack_bits({data}, {width}) + X.payload) & {bitmask(cw)})"
        else:
            calc = f"({self.algo(algo, True, e.pos)}({data}, {width}) & {bitmask(cw)})"
        pre.append(f"if {cond}:")
        if e.name.startswith("verify"):
            pre.append(f"    if {calc} != {self.ex(a[2], sc, pre)}: X.sm.checksum_error = 1")
        else:
            inner: list[str] = []
            self.assign(a[2], calc, sc, inner)
            pre += ["    " + line for line in inner]
