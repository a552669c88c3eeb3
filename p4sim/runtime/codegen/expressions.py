"""Expressions and lvalues: Python expressions for P4 expressions, in P4's evaluation order
(P4_16 §8), calls with copy-in/copy-out, and assignments."""
from __future__ import annotations

import itertools
from typing import Optional

from p4sim.errors import CompileError, Pos, Unsupported
from p4sim.frontend import ir
from p4sim.runtime.codegen.base import CompilerBase
from p4sim.runtime.codegen.common import (STABLE_CODE, Pinned, Scope, bitmask, bits_of, gress_of, indented,
                                          unpack_fields)
from p4sim.runtime.objects import default_scalar, header_layout, is_composite, pyattr, scalar_width


class ExpressionCompiler(CompilerBase):
    # ------------------------------------------------------------------ expressions
    def ex(self, e: ir.Expr, sc: Scope, pre: list[str]) -> str:
        """Python expression for ``e``; statements that must run first go to ``pre``."""
        m = getattr(self, "ex_" + type(e).__name__, None)
        if m is None:
            raise Unsupported(f"expression {type(e).__name__}", e.pos)
        return m(e, sc, pre)

    def ex_Pinned(self, e: Pinned, sc: Scope, pre: list[str]) -> str:
        return e.code

    def ex_TupleIndex(self, e: ir.TupleIndex, sc: Scope, pre: list[str]) -> str:
        return f"{self.ex(e.base, sc, pre)}[{e.index}]"

    def ex_DontCare(self, e: ir.DontCare, sc: Scope, pre: list[str]) -> str:
        """``_`` for an out parameter: a fresh throw-away value (a scratch header for extract)."""
        return f"{self.classes.name(e.type)}()" if is_composite(e.type) else default_scalar(e.type)

    def sequence(self, items: list[tuple[str, list[str], bool]], sc: Scope, pre: list[str]) -> list[str]:
        """Operands evaluated left to right (P4_16 §8): ``items`` are (code, statements it needs,
        is a composite object reference).  Each operand's statements go to ``pre`` in order; an
        operand read before a later operand's statements is captured in a temporary first (a copy
        for a composite), so a later call's side effects cannot change it."""
        last = max((i for i, (_, p, _) in enumerate(items) if p), default=-1)
        codes = []
        for i, (code, p, comp) in enumerate(items):
            pre += p
            if i < last and not STABLE_CODE.match(code):
                t = sc.new_tmp()
                pre.append(f"{t} = {code}._copy()" if comp else f"{t} = {code}")
                code = t
            codes.append(code)
        return codes

    def ex_all(self, es: list[ir.Expr], sc: Scope, pre: list[str]) -> list[str]:
        """Python codes for ``es`` evaluated left to right (see ``sequence``)."""
        items = []
        for e in es:
            p: list[str] = []
            items.append((self.ex(e, sc, p), p, is_composite(e.type)))
        return self.sequence(items, sc, pre)

    def pin_lvalue(self, lv: ir.Expr, sc: Scope, pre: list[str]) -> ir.Expr:
        """``lv`` with its run-time stack indices computed now into temporaries, so the lvalue
        means what it meant before a right-hand side or a call's other arguments ran."""
        if isinstance(lv, ir.StackIndex):
            base = self.pin_lvalue(lv.base, sc, pre)
            if isinstance(lv.index, (ir.Literal, Pinned)):
                return lv if base is lv.base else ir.StackIndex(lv.type, lv.pos, base, lv.index)
            t = sc.new_tmp()
            pre.append(f"{t} = {self.ex(lv.index, sc, pre)}")
            return ir.StackIndex(lv.type, lv.pos, base, Pinned(lv.index.type, lv.pos, t))
        if isinstance(lv, ir.Member):
            base = self.pin_lvalue(lv.base, sc, pre)
            return lv if base is lv.base else ir.Member(lv.type, lv.pos, base, lv.name)
        if isinstance(lv, ir.Slice):
            base = self.pin_lvalue(lv.base, sc, pre)
            return lv if base is lv.base else ir.Slice(lv.type, lv.pos, base, lv.hi, lv.lo)
        if isinstance(lv, ir.StackProp):
            base = self.pin_lvalue(lv.base, sc, pre)
            return lv if base is lv.base else ir.StackProp(lv.type, lv.pos, base, lv.prop)
        return lv

    def ex_Literal(self, e: ir.Literal, sc: Scope, pre: list[str]) -> str:
        if isinstance(e.value, bool):
            return "True" if e.value else "False"
        if isinstance(e.value, str):
            return repr(e.value)
        b = bits_of(e.type)
        if b is not None:
            return str(e.value & bitmask(b.width))
        return str(e.value)

    def ex_VarRef(self, e: ir.VarRef, sc: Scope, pre: list[str]) -> str:
        try:
            return sc.vars[id(e.var)]
        except KeyError:
            raise CompileError(f"p4sim runtime: variable {e.var.name} is not in scope here", e.pos) from None

    def ex_Member(self, e: ir.Member, sc: Scope, pre: list[str]) -> str:
        if e.name == "parser_err":  # TNA: a program that reads it handles parser errors itself
            self.reads_parser_err.add(gress_of(self.cur_role))
        base = self.ex(e.base, sc, pre)
        if isinstance(e.base.type, ir.StackT):
            if e.name == "size":
                return str(e.base.type.size)
            if e.name in ("next", "last", "lastIndex"):
                return self.stack_prop(base, e.base.type, e.name, sc)
        code = f"{base}.{pyattr(e.name)}"
        if base in sc.roots and is_composite(e.type):
            return self.member_alias(code, sc)
        return code

    @staticmethod
    def member_alias(code: str, sc: Scope) -> str:
        """A local for a composite member of a stable object (``hdr.ipv4`` of a control's ``hdr``).

        Safe because composite values are only ever updated in place (``_set``, setInvalid clears
        the object's own dict): the object a member path reaches is the same for the whole
        packet, so it can be looked up once per call instead of on every access."""
        alias = sc.member_alias.get(code)
        if alias is None:
            alias = f"_m{len(sc.alias_order)}"
            sc.member_alias[code] = alias
            sc.alias_order.append((alias, code))
            sc.roots.add(alias)
        return alias

    def ex_StackIndex(self, e: ir.StackIndex, sc: Scope, pre: list[str]) -> str:
        base = self.ex(e.base, sc, pre)
        if isinstance(e.index, ir.Literal):
            i = e.index.value
            if not 0 <= i < e.base.type.size:
                raise CompileError(f"stack index {i} out of bounds (size {e.base.type.size})", e.pos)
            return f"{base}.e[{i}]"
        return f"{base}._at({self.ex(e.index, sc, pre)})"

    def stack_prop(self, base: str, t: ir.StackT, prop: str, sc: Scope) -> str:
        if prop == "next":
            return f"_stk_next({base})"
        if prop == "last":
            return f"_stk_last({base})"
        if prop == "lastIndex":
            return f"(({base}.n - 1) & 0xFFFFFFFF)"
        raise Unsupported(f"stack property {prop}")

    def ex_StackProp(self, e: ir.StackProp, sc: Scope, pre: list[str]) -> str:
        return self.stack_prop(self.ex(e.base, sc, pre), e.base.type, e.prop, sc)

    def ex_Slice(self, e: ir.Slice, sc: Scope, pre: list[str]) -> str:
        base = self.ex(e.base, sc, pre)
        m = bitmask(e.hi - e.lo + 1)
        return f"(({base} >> {e.lo}) & {m})" if e.lo else f"({base} & {m})"

    def ex_Unary(self, e: ir.Unary, sc: Scope, pre: list[str]) -> str:
        a = self.ex(e.operand, sc, pre)
        if e.op == "!":
            return f"(not {a})"
        b = bits_of(e.type)
        if b is None:  # compile-time int
            return f"({e.op}{a})"
        if e.op == "-":
            return f"((-{a}) & {bitmask(b.width)})"
        if e.op == "~":
            return f"({a} ^ {bitmask(b.width)})"
        raise Unsupported(f"unary operator {e.op}", e.pos)

    def ex_Binary(self, e: ir.Binary, sc: Scope, pre: list[str]) -> str:
        op = e.op
        if op in ("&&", "||"):
            # short-circuit: the right operand (and any statement it needs) runs only when the
            # left one does not decide the result
            a = self.ex(e.left, sc, pre)
            rp: list[str] = []
            b = self.ex(e.right, sc, rp)
            if not rp:
                return f"({a} {'and' if op == '&&' else 'or'} {b})"
            t = sc.new_tmp()
            pre.append(f"{t} = {a}")
            pre.append(f"if {t}:" if op == "&&" else f"if not {t}:")
            pre += indented(rp + [f"{t} = {b}"])
            return t
        a, b = self.ex_all([e.left, e.right], sc, pre)
        lt = e.left.type
        if op in ("==", "!="):
            if is_composite(lt):
                r = f"{a}._eq({b})"
                return r if op == "==" else f"(not {r})"
            return f"({a} {op} {b})"
        if op == "++":
            rw = scalar_width(e.right.type)
            return f"(({a} << {rw}) | {b})"
        bt = bits_of(lt)
        if bt is None:  # untyped compile-time int arithmetic (rare; the front end folds it)
            pyop = {"/": "//"}.get(op, op)
            return f"({a} {pyop} {b})"
        W, M, signed = bt.width, bitmask(bt.width), bt.signed
        H = 1 << (W - 1)
        if op in ("<", "<=", ">", ">="):
            if signed:
                return f"((({a} ^ {H}) - {H}) {op} (({b} ^ {H}) - {H}))"
            return f"({a} {op} {b})"
        if op in ("+", "-", "*"):
            return f"(({a} {op} {b}) & {M})"
        if op in ("&", "|", "^"):
            return f"({a} {op} {b})"
        if op == "/":
            return f"_sdiv({a}, {b}, {W})" if signed else f"_udiv({a}, {b})"
        if op == "%":
            return f"_smod({a}, {b}, {W})" if signed else f"_umod({a}, {b})"
        if op == "<<":
            if isinstance(e.right, ir.Literal):
                n = e.right.value
                return "0" if n >= W else f"(({a} << {n}) & {M})"
            return f"_shl({a}, {b}, {W})"
        if op == ">>":
            if signed:
                return f"(((({a} ^ {H}) - {H}) >> {b}) & {M})"
            return f"({a} >> {b})"
        if op == "|+|":
            return f"_sat_add_s({a}, {b}, {W})" if signed else f"min({a} + {b}, {M})"
        if op == "|-|":
            return f"_sat_sub_s({a}, {b}, {W})" if signed else f"max({a} - {b}, 0)"
        raise Unsupported(f"binary operator {op}", e.pos)

    def ex_Cast(self, e: ir.Cast, sc: Scope, pre: list[str]) -> str:
        a = self.ex(e.operand, sc, pre)
        src, dst = e.operand.type, e.type
        if isinstance(dst, ir.BoolT):
            return a if isinstance(src, ir.BoolT) else f"({a} != 0)"
        db = bits_of(dst)
        if db is None:
            raise Unsupported(f"cast to {dst}", e.pos)
        if isinstance(src, ir.BoolT):
            return f"(1 if {a} else 0)"
        sb = bits_of(src)
        if sb is None:  # compile-time int
            return f"({a} & {bitmask(db.width)})"
        if db.width < sb.width:
            return f"({a} & {bitmask(db.width)})"
        if db.width > sb.width and sb.signed:
            H = 1 << (sb.width - 1)
            return f"((({a} ^ {H}) - {H}) & {bitmask(db.width)})"
        return a

    def ex_Mux(self, e: ir.Mux, sc: Scope, pre: list[str]) -> str:
        c = self.ex(e.cond, sc, pre)
        tp: list[str] = []
        op: list[str] = []
        a, b = self.ex(e.then, sc, tp), self.ex(e.other, sc, op)
        if not tp and not op:
            return f"({a} if {c} else {b})"
        # only the chosen branch runs (with its statements)
        t = sc.new_tmp()
        pre.append(f"if {c}:")
        pre += indented(tp + [f"{t} = {a}"])
        pre.append("else:")
        pre += indented(op + [f"{t} = {b}"])
        return t

    def ex_ListExpr(self, e: ir.ListExpr, sc: Scope, pre: list[str]) -> str:
        if isinstance(e.type, (ir.StructT, ir.HeaderT)):
            return self.build_struct(e.type, dict(zip([f.name for f in e.type.fields], e.items)), sc, pre)
        return "(" + "".join(c + ", " for c in self.ex_all(e.items, sc, pre)) + ")"

    def ex_StructExpr(self, e: ir.StructExpr, sc: Scope, pre: list[str]) -> str:
        return self.build_struct(e.type, e.fields, sc, pre)

    def build_struct(self, t: ir.Type, fields: dict[str, ir.Expr], sc: Scope, pre: list[str]) -> str:
        """A fresh object of composite type ``t`` built from field expressions (headers: valid)."""
        cls = self.classes.name(t)
        tmp = sc.new_tmp()
        pre.append(f"{tmp} = {cls}()")
        for name, fe in fields.items():
            if is_composite(fe.type):
                pre.append(f"{tmp}.{pyattr(name)}._set({self.ex(fe, sc, pre)})")
            else:
                pre.append(f"{tmp}.{pyattr(name)} = {self.ex(fe, sc, pre)}")
        if isinstance(t, ir.HeaderT):
            pre.append(f"{tmp}._v = True")
        return tmp

    @staticmethod
    def union_of(lv: ir.Expr) -> Optional[ir.Expr]:
        """The header union that header lvalue ``lv`` is a member of, if it is one."""
        if isinstance(lv, ir.Member) and isinstance(lv.base.type, ir.HeaderUnionT):
            return lv.base
        return None

    def ex_HeaderCall(self, e: ir.HeaderCall, sc: Scope, pre: list[str]) -> str:
        obj = self.ex(e.target, sc, pre)
        if isinstance(e.target.type, ir.HeaderUnionT):
            if e.method == "isValid":  # valid when one of its members is
                return f"{obj}._valid()"
            raise Unsupported(f"header union method {e.method}", e.pos)
        if e.method == "isValid":
            return f"{obj}._v"
        if e.method == "setValid":
            u = self.union_of(e.target)
            if u is not None:  # the other members of the union become invalid
                pre.append(f"{self.ex(u, sc, pre)}._only({obj})")
            pre.append(f"{obj}._v = True")
            return "None"
        if e.method == "setInvalid":
            # an invalid header reads as zeros (BMv2's zeroed fields), so forget every field
            pre.append(f"{obj}._inv()" if e.target.type.has_structs else f"{obj}.__dict__.clear()")
            return "None"
        raise Unsupported(f"header method {e.method}", e.pos)

    def ex_ApplyResult(self, e: ir.ApplyResult, sc: Scope, pre: list[str]) -> str:
        t = self.table_name(e.table, e.pos)
        call = f"{t}.apply({sc.frame})"
        if e.field is None:
            return call
        if e.field == "hit":
            return f"{call}[0]"
        if e.field == "miss":
            return f"(not {call}[0])"
        if e.field == "action_run":
            return f"{call}[1]"
        raise Unsupported(f"table apply result .{e.field}", e.pos)

    def table_name(self, t: ir.TableDecl, pos: Optional[Pos]) -> str:
        if id(t) not in self.tables:
            raise CompileError(f"table {t.qualified_name} applied outside its control", pos)
        return self.tables[id(t)].global_name

    def ex_ActionCall(self, e: ir.ActionCall, sc: Scope, pre: list[str]) -> str:
        fn = self.action_name(e.action, None)
        return self.call_with_copy_out(f"{fn}({sc.frame or 'None'}, ", e.action.params, e.args, e.directions, sc, pre,
                                       has_value=False, may_exit=self.may_exit(e.action))

    def ex_FunctionCall(self, e: ir.FunctionCall, sc: Scope, pre: list[str]) -> str:
        fn = self.gname(e.function, "FN", e.function.name)
        has_value = not isinstance(e.function.return_type, ir.VoidT)
        return self.call_with_copy_out(f"{fn}(", e.function.params, e.args, e.directions, sc, pre, has_value=has_value)

    def call_with_copy_out(self, head: str, params: list[ir.Var], args: list[Optional[ir.Expr]],
                           directions: list[Optional[str]], sc: Scope, pre: list[str], has_value: bool,
                           may_exit: bool = False) -> str:
        """A call with P4's copy-in/copy-out (P4_16 §6.8): arguments are evaluated left to right,
        lvalues of ``out``/``inout`` arguments first pinned (their indices computed), ``in`` and
        ``inout`` values copied in (composites by value: the callee works on a copy), and
        ``out``/``inout`` values written back after the call -- also when the callee ends with
        ``exit`` (``may_exit``).  Scalar outs come back as the callee's returned tuple."""
        items: list[tuple[str, list[str], bool]] = []
        outs: list[ir.Expr] = []  # scalar out/inout lvalues, in the callee's return-tuple order
        backs: list[tuple[ir.Expr, str]] = []  # composite out/inout lvalues and their copies
        for p, a, d in itertools.zip_longest(params, args, directions):
            d = d if d is not None else p.direction
            ap: list[str] = []
            if a is None:
                code = default_scalar(p.type) if not is_composite(p.type) else f"{self.classes.name(p.type)}()"
            elif is_composite(p.type):
                if d in ("out", "inout"):
                    lv = self.pin_lvalue(a, sc, ap)
                    code = sc.new_tmp()
                    if d == "out":
                        ap.append(f"{code} = {self.classes.name(p.type)}()")
                    else:
                        ap.append(f"{code} = {self.ex(lv, sc, ap)}._copy()")
                    backs.append((lv, code))
                else:
                    code = f"{self.ex(a, sc, ap)}._copy()"
            elif d == "out":
                code = default_scalar(p.type, self.err.get("NoError", 0))
                outs.append(self.pin_lvalue(a, sc, ap))
            elif d == "inout":
                lv = self.pin_lvalue(a, sc, ap)
                code = self.ex(lv, sc, ap)
                outs.append(lv)
            else:
                code = self.ex(a, sc, ap)
            items.append((code, ap, False))
        codes = self.sequence(items, sc, pre)
        call = head + ", ".join(codes) + ")"
        if not outs and not backs:
            return call
        tmp = sc.new_tmp()
        base = 1 if has_value else 0

        def copy_out(src: str) -> list[str]:
            lines: list[str] = []
            for i, lv in enumerate(outs):
                self.assign(lv, f"{src}[{base + i}]", sc, lines)
            for lv, t in backs:
                self.assign(lv, t, sc, lines)
            return lines

        if may_exit:
            pre += ["try:", f"    {tmp} = {call}", "except _ExitBlock as _xb:"]
            pre += indented(copy_out("_xb.vals") + ["raise"])
        else:
            pre.append(f"{tmp} = {call}")
        pre += copy_out(tmp)
        if not has_value:
            return "None"
        # the callee returns (value, scalar outs...) when it has scalar outs, else just the value
        return f"{tmp}[0]" if outs else tmp

    def ex_PacketCall(self, e: ir.PacketCall, sc: Scope, pre: list[str]) -> str:
        if e.method == "lookahead":
            t = e.type
            if isinstance(t, ir.StructT):  # a struct of bit/bool fields, first field first
                lay = header_layout(ir.HeaderT(t.name, t.fields))
                total = sum(fw for _, fw, _, _ in lay)
                tmp, x = sc.new_tmp(), sc.new_tmp()
                pre.append(f"{x} = _look(data, pos, nbits, {total})")
                pre.append(f"{tmp} = {self.classes.name(t)}()")
                pre += unpack_fields(tmp, lay, lambda s: f"({x} >> {s})")
                return tmp
            w = t.width if isinstance(t, ir.HeaderT) else scalar_width(t)
            val = f"_look(data, pos, nbits, {w})"
            if isinstance(t, ir.HeaderT):
                return f"{self.classes.name(t)}()._unpack({val})"
            if isinstance(t, ir.BoolT):
                return f"({val} != 0)"
            return val
        if e.method == "length":
            return "(nbits >> 3)" if sc.in_parser else "0"
        raise Unsupported(f"packet method {e.method} in an expression", e.pos)

    def ex_ExternCall(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> str:
        v = self.extern_call(e, sc, pre)
        return v if v is not None else "None"

    def ex_BuiltinCall(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> str:
        if self.arch_externs is not None:
            v = self.arch_externs.builtin_call(self, e, sc, pre)
            if v is not None:
                return v
        self.builtin_call(e, sc, pre)
        return "None"

    # ------------------------------------------------------------------ lvalues
    def assign(self, lhs: ir.Expr, value: str, sc: Scope, out: list[str]) -> None:
        """Append statements writing python expression ``value`` into P4 lvalue ``lhs``."""
        if isinstance(lhs, ir.DontCare):
            return  # '_': the value is not kept
        if is_composite(lhs.type):
            obj = self.ex(lhs, sc, out)
            out.append(f"{obj}._set({value})")
            u = self.union_of(lhs)
            if u is not None:  # a valid header assigned to a union member invalidates the others
                out.append(f"if {obj}._v: {self.ex(u, sc, out)}._only({obj})")
            return
        if isinstance(lhs, ir.VarRef):
            out.append(f"{self.ex_VarRef(lhs, sc, out)} = {value}")
        elif isinstance(lhs, ir.Member):
            out.append(f"{self.ex(lhs.base, sc, out)}.{pyattr(lhs.name)} = {value}")
        elif isinstance(lhs, ir.Slice):
            bw = scalar_width(lhs.base.type)
            m = bitmask(lhs.hi - lhs.lo + 1)
            keep = bitmask(bw) & ~(m << lhs.lo)
            tmp = sc.new_tmp()
            out.append(f"{tmp} = {value}")
            cur = self.ex(lhs.base, sc, out)
            self.assign(lhs.base, f"(({cur} & {keep}) | (({tmp} & {m}) << {lhs.lo}))", sc, out)
        else:
            raise Unsupported(f"assignment to {type(lhs).__name__}", lhs.pos)
