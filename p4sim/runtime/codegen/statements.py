"""Statements: assignments, declarations, if/switch/for, calls, and the packet_in/packet_out
methods (extract, advance, emit) of parsers and deparsers."""
from __future__ import annotations

from typing import Any, Optional

from p4sim.errors import Pos, Unsupported
from p4sim.frontend import ir
from p4sim.runtime.codegen.base import CompilerBase
from p4sim.runtime.codegen.common import Scope, Writer, bitmask, unpack_fields
from p4sim.runtime.objects import default_scalar, header_layout, is_composite, pyattr, varbit_split


class StatementCompiler(CompilerBase):
    # ------------------------------------------------------------------ statements
    def stmts(self, body: list[ir.Stmt], sc: Scope, w: Writer) -> None:
        start = len(w.lines)
        for s in body:
            self.stmt(s, sc, w)
        if len(w.lines) == start:
            w("pass")

    def flush(self, pre: list[str], w: Writer) -> None:
        for line in pre:
            w(line)
        pre.clear()

    emit = flush

    def st_Block(self, s: ir.Block, sc: Scope, w: Writer) -> None:
        for x in s.stmts:
            self.stmt(x, sc, w)

    def compound_assign(self, s: ir.Assign, sc: Scope, w: Writer) -> None:
        """``a op= b``: the lvalue (its indices) is evaluated once, first."""
        pre: list[str] = []
        lhs = self.pin_lvalue(s.lhs, sc, pre)
        v = self.ex(ir.Binary(s.rhs.type, s.rhs.pos, s.rhs.op, lhs, s.rhs.right), sc, pre)
        self.assign(lhs, v, sc, pre)
        self.flush(pre, w)

    def st_Assign(self, s: ir.Assign, sc: Scope, w: Writer) -> None:
        pre: list[str] = []
        rp: list[str] = []
        v = self.ex(s.rhs, sc, rp)
        # the lvalue is evaluated before the right-hand side (its indices are pinned first)
        lhs = self.pin_lvalue(s.lhs, sc, pre) if rp else s.lhs
        pre += rp
        self.assign(lhs, v, sc, pre)
        self.flush(pre, w)

    def st_VarDecl(self, s: ir.VarDecl, sc: Scope, w: Writer) -> None:
        self.declare(s, sc, w)

    def st_For(self, s: ir.For, sc: Scope, w: Writer) -> None:
        pre: list[str] = []
        for x in s.init:
            self.stmt(x, sc, w)
        w("while True:")
        w.indent()
        if s.cond is not None:
            c = self.ex(s.cond, sc, pre)
            self.flush(pre, w)
            w(f"if not {c}: break")
        sc.loops.append(s.update)
        self.stmts([s.body], sc, w)
        sc.loops.pop()
        for x in s.update:
            self.stmt(x, sc, w)
        w.dedent()

    def st_Break(self, s: ir.Break, sc: Scope, w: Writer) -> None:
        w("break")

    def st_Continue(self, s: ir.Continue, sc: Scope, w: Writer) -> None:
        for x in sc.loops[-1]:  # a C-style loop's update runs before the next test
            self.stmt(x, sc, w)
        w("continue")

    def st_Exit(self, s: ir.Exit, sc: Scope, w: Writer) -> None:
        w("raise _ExitBlock()")

    def st_Return(self, s: ir.Return, sc: Scope, w: Writer) -> None:
        pre: list[str] = []
        v = self.ex(s.value, sc, pre) if s.value is not None else None
        self.flush(pre, w)
        w(sc.returns(v))

    def declare(self, s: ir.VarDecl, sc: Scope, w: Writer) -> None:
        pre: list[str] = []
        name = sc.vars.get(id(s.var))
        if name is None:
            name = f"v{next(self.ids)}_{pyattr(s.var.name)}"
            sc.vars[id(s.var)] = name
        t = s.var.type
        if is_composite(t):
            w(f"{name} = {self.classes.name(t)}()")
            if s.init is not None:
                v = self.ex(s.init, sc, pre)
                self.flush(pre, w)
                w(f"{name}._set({v})")
        elif isinstance(t, ir.TupleT) and s.init is None:  # a tuple of scalars: its zero value
            w(f"{name} = ({''.join(default_scalar(x) + ', ' for x in t.elems)})")
        else:
            v = self.ex(s.init, sc, pre) if s.init is not None else default_scalar(t, self.err.get("NoError", 0))
            self.flush(pre, w)
            w(f"{name} = {v}")

    def declare_locals(self, local_decls: list[Any], sc: Scope, w: Writer) -> None:
        """A block's local declarations: variables declared, extern instances named."""
        for loc in local_decls:
            if isinstance(loc, ir.VarDecl):
                self.declare(loc, sc, w)
            else:
                self.extern_name(loc)

    def call_stmt(self, c: ir.Expr, sc: Scope, w: Writer) -> None:
        pre: list[str] = []
        if isinstance(c, ir.PacketCall):
            self.packet_stmt(c, sc, w)
            return
        if isinstance(c, ir.StackCall):
            obj = self.ex(c.target, sc, pre)
            n = self.ex(c.args[0], sc, pre)
            self.flush(pre, w)
            w(f"{obj}.{'_push' if c.method == 'push_front' else '_pop'}({n})")
            return
        if isinstance(c, ir.Call) and hasattr(c, "control"):  # a sub-control apply (if the IR adds it)
            self.control_apply_call(c, sc, pre)
            self.flush(pre, w)
            return
        v = self.ex(c, sc, pre)
        self.flush(pre, w)
        if v not in ("None",) and not v.startswith("_t"):
            w(v)

    def control_apply_call(self, c: Any, sc: Scope, pre: list[str]) -> None:
        ctl = c.control
        fn = self.gname(ctl, "CTL", ctl.name)
        r = self.call_with_copy_out(f"{fn}(", ctl.params, c.args, c.directions, sc, pre, has_value=False)
        if r != "None":
            pre.append(r)

    @staticmethod
    def spell_arm(i: int, conds: list[str]) -> str:
        return f"{'elif' if i else 'if'} {' or '.join(conds) or 'False'}:"



    @staticmethod
    def spell_end_if() -> list[str]:
        return []

    def nested(self, body: ir.Stmt, sc: Scope, w: Writer) -> None:
        w.indent()
        self.stmts([body], sc, w)
        w.dedent()

    def inline(self, body: ir.Stmt, sc: Scope, w: Writer) -> None:
        self.stmts([body], sc, w)

    def switch_label(self, lab: ir.Expr, sc: Scope, pre: list[str], pos: Optional[Pos]) -> str:
        return self.ex(lab, sc, pre)

    # ------------------------------------------------------------------ packet_in / packet_out
    def packet_stmt(self, c: ir.PacketCall, sc: Scope, w: Writer) -> None:
        pre: list[str] = []
        if c.method in ("extract", "advance") and not sc.in_parser:
            raise Unsupported(f"packet.{c.method} outside the v1model parser", c.pos)
        if c.method == "emit" and sc.kind != "deparser":
            raise Unsupported("packet.emit outside the v1model deparser", c.pos)
        if c.method == "extract":
            tgt = c.args[0]
            t = tgt.type
            if not isinstance(t, ir.HeaderT):
                raise Unsupported("extract into a non-header", c.pos)
            union = self.union_of(tgt)
            nxt = union if union is not None else tgt  # hdr.u.next.h: the union is the element
            is_next = (isinstance(nxt, ir.StackProp) and nxt.prop == "next") or (
                isinstance(nxt, ir.Member) and isinstance(nxt.base.type, ir.StackT) and nxt.name == "next")
            stack = self.ex(nxt.base, sc, pre) if is_next else None
            if union is not None:
                uobj = sc.new_tmp()
                pre.append(f"{uobj} = {self.ex(union, sc, pre)}")
                obj = f"{uobj}.{pyattr(tgt.name)}"
            else:
                obj = self.ex(tgt, sc, pre)
            if t.varbit is not None:
                self.extract_varbit(t, obj, c.args[1], sc, pre, w)
            else:
                self.flush(pre, w)
                W = t.width
                w(f"_e = pos + {W}")
                w(f"if _e > nbits: raise _ParserError({self.error_code('PacketTooShort')})")
                w(f"_h = {obj}")
                w(f"_x = (int.from_bytes(data[pos >> 3:(_e + 7) >> 3], 'big') >> ((-_e) & 7)) & {bitmask(W)}")
                for line in unpack_fields("_h", header_layout(t), lambda s: f"(_x >> {s})" if s else "_x"):
                    w(line)
            w("_h._v = True")
            if union is not None:
                w(f"{uobj}._only(_h)")
            w("pos = _e")
            if is_next:
                w(f"{stack}.n += 1")
        elif c.method == "advance":
            n = self.ex(c.args[0], sc, pre)
            self.flush(pre, w)
            w(f"pos += {n}")
            w(f"if pos > nbits: raise _ParserError({self.error_code('PacketTooShort')})")
        elif c.method == "emit":
            items = self.emit_items(c.args[0], sc, pre)
            self.flush(pre, w)
            for obj, t in items:
                if t.varbit is not None:
                    before, va, after = varbit_split(t)
                    w(f"if {obj}._v:")
                    w(f"    _vb = {obj}.{va}")
                    w(f"    _acc = (((((_acc << {before.width}) | {self.packed_fields(obj, before)}) << _vb[0]) | _vb[1])"
                      f" << {after.width}) | {self.packed_fields(obj, after)}")
                    w(f"    _nb += {t.width} + _vb[0]")
                    continue
                w(f"if {obj}._v:")
                w(f"    _acc = (_acc << {t.width}) | {self.packed_fields(obj, t)}")
                w(f"    _nb += {t.width}")
        elif c.method == "lookahead":  # its value is unused, but too few bits is PacketTooShort
            code = self.ex_PacketCall(c, sc, pre)
            self.flush(pre, w)
            w(code)
        elif c.method == "length":
            pass
        else:
            raise Unsupported(f"packet method {c.method}", c.pos)

    @staticmethod
    def packed_fields(obj: str, t: ir.HeaderT) -> str:
        """The fixed-size fields of header ``t`` (object ``obj``) as one integer, first field in
        the most significant bits."""
        lay = header_layout(t)
        return " | ".join(f"({'int(' if b else ''}{obj}.{a}{')' if b else ''} << {s})" if s else
                          f"{'int(' if b else ''}{obj}.{a}{')' if b else ''}" for a, _, s, b in lay) or "0"

    def extract_varbit(self, t: ir.HeaderT, obj: str, size: ir.Expr, sc: Scope, pre: list[str], w: Writer) -> None:
        """``extract(hdr, bits)`` as BMv2 does it: a size that is not a whole number of bytes is
        ParserInvalidArgument, too few bytes left PacketTooShort, a size above the varbit's
        maximum HeaderTooShort (checked in that order); the varbit field takes ``bits`` bits."""
        n = self.ex(size, sc, pre)
        self.flush(pre, w)
        before, va, after = varbit_split(t)
        mx = t.varbit.type.max_width
        w(f"_n = {n}")
        w(f"if _n & 7: raise _ParserError({self.error_code('ParserInvalidArgument')})")
        w(f"_e = pos + {t.width} + _n")
        w(f"if _e > nbits: raise _ParserError({self.error_code('PacketTooShort')})")
        w(f"if _n > {mx}: raise _ParserError({self.error_code('HeaderTooShort')})")
        w(f"_h = {obj}")
        w(f"_x = (int.from_bytes(data[pos >> 3:(_e + 7) >> 3], 'big') >> ((-_e) & 7)) & ((1 << ({t.width} + _n)) - 1)")
        for line in unpack_fields("_h", header_layout(after), lambda s: f"(_x >> {s})" if s else "_x"):
            w(line)
        w(f"_h.{va} = (_n, (_x >> {after.width}) & ((1 << _n) - 1))")
        for line in unpack_fields("_h", header_layout(before), lambda s: f"(_x >> ({s + after.width} + _n))"):
            w(line)

    def emit_items(self, e: ir.Expr, sc: Scope, pre: list[str]) -> list[tuple[str, ir.HeaderT]]:
        return self.emit_headers(self.ex(e, sc, pre), e.type, e.pos)
