"""Expressions: typing, implicit conversions, constant folding, calls and their arguments."""
from __future__ import annotations

import warnings

from typing import Any, Optional

from lark import Token, Tree

from p4sim.errors import CompileError
from p4sim.frontend import ir
from p4sim.frontend.check_base import CheckerBase, CompileWarning
from p4sim.frontend.consteval import FoldError, fold_binary, fold_cast, mask, parse_int_literal
from p4sim.frontend.symbols import (ConstSym, Node, Param, Scope, Sig, TypeVar, same_type,
                                    type_name)



def _power_of_two(e: ir.Expr) -> bool:
    """A literal 2^k (k >= 0): what p4c strength-reduces '/' and '%' by."""
    return isinstance(e, ir.Literal) and isinstance(e.value, int) and e.value > 0 and e.value & (e.value - 1) == 0

class ExprChecker(CheckerBase):
    """Checks expressions against an expected type; folds constants; classifies calls."""

    def check_lvalue(self, e: ir.Expr, node: Tree) -> None:
        base = e
        while True:
            if isinstance(base, ir.VarRef):
                v = base.var
                if id(v) in self.readonly_ids:
                    raise self.err(f"cannot assign to read-only parameter "
                                   f"'{v.name.split('.')[-1]}'", node)
                if v.kind == "param" and (v.direction == "in" or v.direction is None):
                    raise self.err(f"cannot assign to read-only parameter '{v.name}'", node)
                if isinstance(v.type, ir.ExternT):
                    raise self.err(f"cannot assign to '{v.name}'", node)
                return
            if isinstance(base, (ir.Member, ir.StackIndex, ir.Slice)):
                base = base.base
                continue
            if isinstance(base, ir.StackProp) and base.prop in ("next", "last"):
                if not self.in_parser:
                    raise self.err(f"'.{base.prop}' can only be used in a parser", node)
                base = base.base
                continue
            raise self.err("expression is not an lvalue", node)

    def coerce(self, e: ir.Expr, t: ir.Type, node: Any) -> ir.Expr:
        """Implicit conversions P4_16 allows: int literal -> bit/int<W>, list -> struct/header/
        tuple, serializable enum -> its underlying type."""
        if same_type(e.type, t):
            return e
        if isinstance(t, TypeVar):
            return e
        if isinstance(e.type, ir.IntT) and isinstance(t, ir.BitT) and isinstance(e, ir.Literal):
            # p4c: an implicit cast of the literal, folded with a warning if it does not fit
            return ir.Literal(t, e.pos, self.fit_literal(int(e.value), t, node))
        if isinstance(e, ir.ListExpr) and isinstance(t, (ir.StructT, ir.HeaderT)):
            if len(e.items) != len(t.fields):
                raise self.err(f"{type_name(t)} has {len(t.fields)} fields, the list has "
                               f"{len(e.items)}", node)
            return ir.StructExpr(t, e.pos, {f.name: self.coerce(i, f.type, node)
                                            for f, i in zip(t.fields, e.items)})
        if isinstance(e, ir.StructExpr) and isinstance(t, (ir.StructT, ir.HeaderT)) \
                and e.type is None:
            return self._struct_expr_to(e, t, node)
        if isinstance(e, ir.ListExpr) and isinstance(t, ir.TupleT):
            if len(e.items) != len(t.elems):
                raise self.err("tuple sizes differ", node)
            items = [self.coerce(i, et, node) for i, et in zip(e.items, t.elems)]
            return ir.ListExpr(t, e.pos, items)
        if isinstance(e.type, ir.EnumT) and e.type.underlying is not None \
                and same_type(e.type.underlying, t):
            if isinstance(e, ir.Literal):
                return ir.Literal(t, e.pos, e.value)
            return ir.Cast(t, e.pos, e)
        raise self.err(f"cannot use a value of type {type_name(e.type)} where "
                       f"{type_name(t)} is expected", node)

    def _struct_expr_to(self, e: ir.StructExpr, t, node) -> ir.StructExpr:
        names = [f.name for f in t.fields]
        if set(e.fields) != set(names):
            missing = set(names) - set(e.fields)
            extra = set(e.fields) - set(names)
            raise self.err(f"initializer for {t.name}: "
                           + (f"missing {sorted(missing)} " if missing else "")
                           + (f"unknown {sorted(extra)}" if extra else ""), node)
        return ir.StructExpr(t, e.pos, {f.name: self.coerce(e.fields[f.name], f.type, node)
                                        for f in t.fields})

    def subst(self, t: ir.Type, bindings: dict[str, ir.Type]) -> ir.Type:
        if isinstance(t, TypeVar):
            return bindings.get(t.name, t)
        return t

    def value_view(self, node: Tree, scope: Scope) -> Tree:
        """``x.f`` where ``x`` is lexed as a type name but a value named ``x`` is in scope (the
        tokenizer's type-name table is program-wide): read it as a member of the value."""
        if isinstance(node, Tree) and node.data == "type_member":
            name = self.ident(node.children[0])
            if not isinstance(self.types.get(name), ir.EnumT) and scope.lookup(name) is not None:
                tok = node.children[0]
                ident = Token("IDENTIFIER", str(tok), start_pos=tok.start_pos, line=tok.line,
                              column=tok.column, end_pos=tok.end_pos)
                return Tree("member", [Tree("name_ref", [ident], node.meta), node.children[1]],
                            node.meta)
        return node

    def expr(self, node: Node, scope: Scope, expected: Optional[ir.Type]) -> ir.Expr:
        if isinstance(node, Token):
            raise self.err(f"unexpected '{node}'", node)
        if node.data == "type_member":
            node = self.value_view(node, scope)
        handler = getattr(self, "x_" + node.data, None)
        if handler is None:
            raise self.err(f"unexpected expression ({node.data})", node)
        return handler(node, scope, expected)

    def x_int_lit(self, n: Tree, scope, expected) -> ir.Expr:
        value, t = parse_int_literal(str(n.children[0]))
        if t is None:
            return ir.Literal(ir.IntT(), self.pos(n), value)
        return ir.Literal(t, self.pos(n), self.fit_literal(value, t, n))

    def fit_literal(self, value: int, t: ir.BitT, node: Any) -> int:
        """An integer given the type ``t`` without an explicit cast (``8w300``, ``bit<1> b = 4``,
        ``x + 300``): as p4c's IR::Constant::handleOverflow, a value outside the type's range is
        a warning -- "signed value does not fit", "negative value with unsigned type" or "value
        does not fit" -- and keeps its low W bits (two's complement).  Not an error in p4c."""
        w = t.width
        if t.signed:
            bad = not -(1 << (w - 1)) <= value < (1 << (w - 1))
            what = f"signed value {value} does not fit in {type_name(t)}"
        elif value < 0:
            bad, what = True, f"negative value {value} with unsigned type {type_name(t)}"
        else:
            bad, what = value >= (1 << w), f"value {value} does not fit in {type_name(t)}"
        if bad:
            warnings.warn(f"{self.pos(node)}: warning: {what}; truncated (as p4c does)",
                          CompileWarning, stacklevel=3)
        return value & mask(w)

    def x_true_lit(self, n, scope, expected) -> ir.Expr:
        return ir.Literal(ir.BoolT(), self.pos(n), True)

    def x_false_lit(self, n, scope, expected) -> ir.Expr:
        return ir.Literal(ir.BoolT(), self.pos(n), False)

    def x_string_lit(self, n, scope, expected) -> ir.Expr:
        raw = str(n.children[0])[1:-1]
        return ir.Literal(ir.StringT(), self.pos(n), bytes(raw, "utf-8").decode("unicode_escape"))

    def x_name_ref(self, n: Tree, scope: Scope, expected) -> ir.Expr:
        return self._symbol_expr(scope.lookup(self.ident(n.children[0])), n)

    def x_top_name_ref(self, n: Tree, scope: Scope, expected) -> ir.Expr:
        return self._symbol_expr(self.global_scope.lookup(self.ident(n.children[0])), n)

    def _symbol_expr(self, sym: Any, n: Tree) -> ir.Expr:
        name = self.ident(n.children[0])
        if sym is None:
            raise self.err(f"unknown name '{name}'", n)
        if isinstance(sym, ConstSym):
            lit = sym.lit
            return ir.Literal(lit.type, self.pos(n), lit.value)
        if isinstance(sym, ir.Var):
            return ir.VarRef(sym.type, self.pos(n), sym)
        kind = {ir.ActionDecl: "an action", ir.TableDecl: "a table",
                ir.ExternInstance: "an extern instance", ir.FunctionDecl: "a function"}
        raise self.err(f"'{name}' is {kind.get(type(sym), 'not a value')} and cannot be used "
                       "as a value here", n)

    def x_type_member(self, n: Tree, scope, expected) -> ir.Expr:
        tname, fname = self.ident(n.children[0]), self.ident(n.children[1])
        t = self.types.get(tname)
        if isinstance(t, ir.EnumT):
            if fname not in t.members:
                raise self.err(f"enum {tname} has no member '{fname}'", n.children[1])
            return ir.Literal(t, self.pos(n), t.value_of(fname))
        raise self.unsupported(f"'{tname}.{fname}' (type members other than enum members)", n)

    def x_error_member(self, n: Tree, scope, expected) -> ir.Expr:
        fname = self.ident(n.children[0])
        if fname not in self.errors:
            raise self.err(f"unknown error '{fname}'", n)
        return ir.Literal(ir.ErrorT(), self.pos(n), self.errors.index(fname))

    def x_this_ref(self, n, scope, expected) -> ir.Expr:
        raise self.unsupported("'this'", n)

    def x_ctor_expr(self, n, scope, expected) -> ir.Expr:
        raise self.unsupported("instantiation inside an expression", n)

    def x_empty_list(self, n, scope, expected) -> ir.Expr:
        if isinstance(expected, (ir.StructT, ir.HeaderT)):
            return self.coerce(ir.ListExpr(ir.TupleT([]), self.pos(n), []), expected, n)
        return ir.ListExpr(ir.TupleT([]), self.pos(n), [])

    def x_list_expr(self, n: Tree, scope, expected) -> ir.Expr:
        item_types: list[Optional[ir.Type]] = [None] * len(n.children)
        if isinstance(expected, (ir.StructT, ir.HeaderT)) and \
                len(expected.fields) == len(n.children):
            item_types = [f.type for f in expected.fields]
        elif isinstance(expected, ir.TupleT) and len(expected.elems) == len(n.children):
            item_types = list(expected.elems)
        items = [self.expr(c, scope, it) for c, it in zip(n.children, item_types)]
        e = ir.ListExpr(ir.TupleT([i.type for i in items]), self.pos(n), items)
        if isinstance(expected, (ir.StructT, ir.HeaderT, ir.TupleT)):
            return self.coerce(e, expected, n)
        return e

    def x_struct_expr(self, n: Tree, scope, expected) -> ir.Expr:
        fields: dict[str, ir.Expr] = {}
        ftypes = {}
        if isinstance(expected, (ir.StructT, ir.HeaderT)):
            ftypes = {f.name: f.type for f in expected.fields}
        for kv in n.children:
            fname = self.ident(kv.children[0])
            if fname in fields:
                raise self.err(f"field '{fname}' given twice", kv)
            fields[fname] = self.expr(kv.children[1], scope, ftypes.get(fname))
        if not isinstance(expected, (ir.StructT, ir.HeaderT)):
            raise self.err("a struct initializer needs a known struct or header type here", n)
        return self._struct_expr_to(ir.StructExpr(None, self.pos(n), fields), expected, n)

    def _binop_token(self, n: Tree) -> str:
        return str(n.children[1]) if len(n.children) == 3 else ">>"

    def x_lor(self, n, scope, expected):
        return self._logic(n, scope)

    def x_land(self, n, scope, expected):
        return self._logic(n, scope)

    def _logic(self, n: Tree, scope) -> ir.Expr:
        op = str(n.children[1])
        b = ir.BoolT()
        left = self.coerce(self.expr(n.children[0], scope, b), b, n.children[0])
        right = self.coerce(self.expr(n.children[2], scope, b), b, n.children[2])
        return self._fold(ir.Binary(b, self.pos(n), op, left, right), b)

    def _operands(self, n: Tree, scope, expected, lnode, rnode) -> tuple[ir.Expr, ir.Expr]:
        """Check both operands and unify their types (int literals take the other's type)."""
        left = self.expr(lnode, scope, None)
        right = self.expr(rnode, scope, None)
        lt, rt = left.type, right.type
        if isinstance(lt, ir.IntT) and not isinstance(rt, ir.IntT):
            left = self.coerce(left, rt, lnode)
        elif isinstance(rt, ir.IntT) and not isinstance(lt, ir.IntT):
            right = self.coerce(right, lt, rnode)
        elif isinstance(lt, ir.IntT) and isinstance(rt, ir.IntT) and \
                isinstance(expected, ir.BitT):
            left = self.coerce(left, expected, lnode)
            right = self.coerce(right, expected, rnode)
        elif not same_type(lt, rt):
            # a serializable enum meets its underlying type
            if isinstance(lt, ir.EnumT) and lt.underlying is not None and \
                    same_type(lt.underlying, rt):
                left = self.coerce(left, rt, lnode)
            elif isinstance(rt, ir.EnumT) and rt.underlying is not None and \
                    same_type(rt.underlying, lt):
                right = self.coerce(right, lt, rnode)
            else:
                raise self.err(f"operands have different types: {type_name(lt)} and "
                               f"{type_name(rt)}", n)
        return left, right

    def _fold(self, e: ir.Binary, operand_type: ir.Type) -> ir.Expr:
        if isinstance(e.left, ir.Literal) and isinstance(e.right, ir.Literal):
            try:
                v = fold_binary(e.op, operand_type, e.left.value, e.right.value)
            except FoldError as exc:
                raise CompileError(str(exc), e.pos) from None
            return ir.Literal(e.type, e.pos, v)
        return e

    def x_eq(self, n: Tree, scope, expected):
        op = str(n.children[1])
        left, right = self._operands(n, scope, None, n.children[0], n.children[2])
        if isinstance(left.type, (ir.ExternT, ir.TupleT, ir.StringT)):
            raise self.err(f"cannot compare values of type {type_name(left.type)}", n)
        return self._fold(ir.Binary(ir.BoolT(), self.pos(n), op, left, right), left.type)

    def x_rel(self, n: Tree, scope, expected):
        op = str(n.children[1])
        left, right = self._operands(n, scope, None, n.children[0], n.children[2])
        if not isinstance(left.type, (ir.BitT, ir.IntT)):
            raise self.err(f"operator {op} needs numeric operands, not {type_name(left.type)}",
                           n)
        return self._fold(ir.Binary(ir.BoolT(), self.pos(n), op, left, right), left.type)

    def _arith(self, n: Tree, scope, expected):
        op = str(n.children[1])
        if op == "++":
            return self._concat(n, scope)
        left, right = self._operands(n, scope, expected, n.children[0], n.children[2])
        t = left.type
        if not isinstance(t, (ir.BitT, ir.IntT)):
            raise self.err(f"operator {op} needs numeric operands, not {type_name(t)}", n)
        if isinstance(t, ir.IntT) and op in ("|+|", "|-|"):
            raise self.err(f"operator {op} needs operands with a width", n)
        if op in ("/", "%") and isinstance(t, ir.BitT) and t.signed:
            raise self.err(f"{op}: cannot operate on signed values (as p4c: '/' and '%' "
                           "are defined on bit<W> only)", n)
        result = self._fold(ir.Binary(t, self.pos(n), op, left, right), t)
        if op in ("/", "%") and not isinstance(result, ir.Literal) and not _power_of_two(right):
            # p4c folds '/' and '%', turns them into a shift or a mask by a constant power of two,
            # and refuses the rest ("could not evaluate expression at compilation time"): neither
            # BMv2 nor Tofino divides at run time.
            raise self.err(f"{op}: could not evaluate expression at compilation time (p4c divides "
                           "compile-time values, or by a constant power of two; neither BMv2 nor "
                           "Tofino divides at run time)", n)
        return result

    def _concat(self, n: Tree, scope) -> ir.Expr:
        left = self.expr(n.children[0], scope, None)
        right = self.expr(n.children[2], scope, None)
        for side, node in ((left, n.children[0]), (right, n.children[2])):
            if not isinstance(side.type, ir.BitT):
                raise self.err(f"'++' needs bit<W>/int<W> operands with a width, not "
                               f"{type_name(side.type)}", node)
        t = ir.BitT(left.type.width + right.type.width, left.type.signed)
        e = ir.Binary(t, self.pos(n), "++", left, right)
        if isinstance(left, ir.Literal) and isinstance(right, ir.Literal):
            return ir.Literal(t, e.pos, (left.value << right.type.width) | right.value)
        return e

    def x_shift(self, n: Tree, scope, expected):
        if len(n.children) == 4:
            op, lnode, rnode = ">>", n.children[0], n.children[3]
        else:
            op, lnode, rnode = str(n.children[1]), n.children[0], n.children[2]
        left = self.expr(lnode, scope, expected if isinstance(expected, ir.BitT) else None)
        right = self.expr(rnode, scope, None)
        if isinstance(left.type, ir.IntT) and isinstance(expected, ir.BitT) \
                and not isinstance(right, ir.Literal):
            left = self.coerce(left, expected, lnode)
        if not isinstance(left.type, (ir.BitT, ir.IntT)):
            raise self.err(f"cannot shift a value of type {type_name(left.type)}", lnode)
        if isinstance(right.type, ir.BitT):
            if right.type.signed:
                raise self.err("a shift amount must be unsigned", rnode)
        elif isinstance(right.type, ir.IntT):
            if int(right.value) < 0:
                raise self.err("a shift amount must not be negative", rnode)
        else:
            raise self.err(f"a shift amount must be a number, not {type_name(right.type)}", rnode)
        if isinstance(left.type, ir.IntT) and not isinstance(right, ir.Literal):
            raise self.err("shifting an integer literal by a run-time amount needs a width "
                           "(cast the literal)", lnode)
        e = ir.Binary(left.type, self.pos(n), op, left, right)
        if isinstance(left, ir.Literal) and isinstance(right, ir.Literal):
            return ir.Literal(left.type, e.pos, fold_binary(op, left.type, left.value,
                                                            int(right.value)))
        return e

    def x_lnot(self, n, scope, expected):
        b = ir.BoolT()
        e = self.coerce(self.expr(n.children[0], scope, b), b, n.children[0])
        if isinstance(e, ir.Literal):
            return ir.Literal(b, self.pos(n), not e.value)
        return ir.Unary(b, self.pos(n), "!", e)

    def x_bnot(self, n, scope, expected):
        e = self.expr(n.children[0], scope, expected)
        if isinstance(e.type, ir.IntT) and isinstance(expected, ir.BitT):
            e = self.coerce(e, expected, n.children[0])
        if not isinstance(e.type, ir.BitT):
            raise self.err(f"'~' needs a bit<W>/int<W> operand, not {type_name(e.type)}", n)
        if isinstance(e, ir.Literal):
            return ir.Literal(e.type, self.pos(n), ~e.value & mask(e.type.width))
        return ir.Unary(e.type, self.pos(n), "~", e)

    def x_neg(self, n, scope, expected):
        e = self.expr(n.children[0], scope, expected)
        if isinstance(e.type, ir.IntT):
            return ir.Literal(e.type, self.pos(n), -int(e.value))
        if not isinstance(e.type, ir.BitT):
            raise self.err(f"unary '-' needs a number, not {type_name(e.type)}", n)
        if isinstance(e, ir.Literal):
            return ir.Literal(e.type, self.pos(n), -e.value & mask(e.type.width))
        return ir.Unary(e.type, self.pos(n), "-", e)

    def x_upos(self, n, scope, expected):
        e = self.expr(n.children[0], scope, expected)
        if not isinstance(e.type, (ir.BitT, ir.IntT)):
            raise self.err(f"unary '+' needs a number, not {type_name(e.type)}", n)
        return e

    def x_mux(self, n: Tree, scope, expected):
        cond_n, then_n, else_n = n.children
        b = ir.BoolT()
        cond = self.coerce(self.expr(cond_n, scope, b), b, cond_n)
        then, other = self._operands(n, scope, expected, then_n, else_n)
        if isinstance(then.type, ir.IntT) and isinstance(expected, ir.BitT):
            then = self.coerce(then, expected, then_n)
            other = self.coerce(other, expected, else_n)
        if isinstance(cond, ir.Literal):
            return then if cond.value else other
        if isinstance(then.type, ir.IntT):
            raise self.err("the branches of '?:' need a type with a width", n)
        return ir.Mux(then.type, self.pos(n), cond, then, other)

    def x_cast(self, n: Tree, scope, expected):
        t = self.resolve_type(n.children[0])
        e = self.expr(n.children[1], scope, t if isinstance(t, ir.BitT) else None)
        src = e.type
        if same_type(src, t):
            return e
        ok = False
        if isinstance(src, ir.IntT) and isinstance(t, (ir.BitT, ir.BoolT)):
            if isinstance(t, ir.BoolT):
                ok = e.value in (0, 1)
            else:
                return ir.Literal(t, self.pos(n), int(e.value) & mask(t.width))
        elif isinstance(src, ir.BitT) and isinstance(t, ir.BitT):
            ok = src.signed == t.signed or src.width == t.width
        elif isinstance(src, ir.BitT) and isinstance(t, ir.BoolT):
            ok = src.width == 1 and not src.signed
        elif isinstance(src, ir.BoolT) and isinstance(t, ir.BitT):
            ok = t.width == 1 and not t.signed
        elif isinstance(src, ir.EnumT) and src.underlying is not None and isinstance(t, ir.BitT):
            ok = same_type(src.underlying, t)
            if not ok and isinstance(e, ir.Literal):
                return ir.Literal(t, self.pos(n), fold_cast(e.value, src.underlying, t))
            if not ok:
                e = ir.Cast(src.underlying, e.pos, e)
                src = src.underlying
                ok = src.signed == t.signed or src.width == t.width
        elif isinstance(t, ir.EnumT) and t.underlying is not None and \
                isinstance(src, (ir.BitT, ir.IntT)):
            if isinstance(src, ir.IntT):
                e = self.coerce(e, t.underlying, n.children[1])
                src = t.underlying
            ok = same_type(src, t.underlying)
        if not ok:
            raise self.err(f"cannot cast {type_name(src)} to {type_name(t)}", n)
        if isinstance(e, ir.Literal):
            return ir.Literal(t, self.pos(n), fold_cast(e.value, src, t))
        return ir.Cast(t, self.pos(n), e)

    def x_member(self, n: Tree, scope: Scope, expected) -> ir.Expr:
        base_n, fname_n = n.children
        base_n = self.value_view(base_n, scope)
        fname = self.ident(fname_n)
        sym = self.expr_symbol(base_n, scope) if base_n.data in ("name_ref", "top_name_ref") \
            else None
        if isinstance(sym, (ir.TableDecl, ir.ExternInstance, ir.ActionDecl)):
            raise self.err(f"'{fname}' of '{self.ident(base_n.children[0])}' must be called",
                           n)
        base = self.expr(base_n, scope, None)
        bt = base.type
        if isinstance(base, ir.ApplyResult) and base.field is None:
            if fname in ("hit", "miss"):
                return ir.ApplyResult(ir.BoolT(), self.pos(n), base.table, fname)
            if fname == "action_run":
                return ir.ApplyResult(bt, self.pos(n), base.table, "action_run")
            raise self.err(f"a table apply result has no '{fname}' (hit, miss, action_run)",
                           fname_n)
        if isinstance(bt, (ir.HeaderT, ir.StructT, ir.HeaderUnionT)):
            for f in bt.fields:
                if f.name == fname:
                    return ir.Member(f.type, self.pos(n), base, fname)
            raise self.err(f"{type_name(bt)} has no field '{fname}'", fname_n)
        if isinstance(bt, ir.StackT):
            if fname in ("next", "last", "lastIndex") and not self.in_parser:
                # P4_16 8.18 / p4c: these depend on the parser's nextIndex, so only a parser may use them
                raise self.err(f"'{fname}' of a header stack can only be used in a parser", fname_n)
            if fname in ("next", "last"):
                return ir.StackProp(bt.elem, self.pos(n), base, fname)
            if fname == "lastIndex":
                return ir.StackProp(ir.BitT(32), self.pos(n), base, fname)
            if fname == "size":
                return ir.Literal(ir.BitT(32), self.pos(n), bt.size)
            raise self.err(f"a header stack has no '{fname}'", fname_n)
        raise self.err(f"a value of type {type_name(bt)} has no member '{fname}'", fname_n)

    def x_index(self, n: Tree, scope, expected) -> ir.Expr:
        base = self.expr(n.children[0], scope, None)
        if isinstance(base.type, ir.TupleT):
            i = self.const_int(n.children[1], scope)
            if not 0 <= i < len(base.type.elems):
                raise self.err(f"index {i} out of bounds for {type_name(base.type)}", n.children[1])
            return ir.TupleIndex(base.type.elems[i], self.pos(n), base, i)
        if not isinstance(base.type, ir.StackT):
            raise self.err(f"cannot index a value of type {type_name(base.type)}", n)
        idx = self.expr(n.children[1], scope, None)
        if isinstance(idx.type, ir.IntT):
            if not 0 <= int(idx.value) < base.type.size:
                raise self.err(f"index {idx.value} out of bounds for a stack of "
                               f"{base.type.size}", n.children[1])
            idx = ir.Literal(ir.BitT(32), idx.pos, int(idx.value))
        elif isinstance(idx, ir.Literal) and isinstance(idx.type, ir.BitT):
            v = idx.value - (1 << idx.type.width) if idx.type.signed and idx.value >> (idx.type.width - 1) else idx.value
            if not 0 <= v < base.type.size:
                raise self.err(f"index {v} out of bounds for a stack of {base.type.size}",
                               n.children[1])
        elif not isinstance(idx.type, ir.BitT):
            # bit<W> or int<W> (p4c accepts both; a negative run-time index is out of bounds)
            raise self.err(f"a stack index must be bit<W> or int<W>, not {type_name(idx.type)}",
                           n.children[1])
        return ir.StackIndex(base.type.elem, self.pos(n), base, idx)

    def x_slice(self, n: Tree, scope, expected) -> ir.Expr:
        base = self.expr(n.children[0], scope, None)
        hi = self.const_int(n.children[1], scope)
        lo = self.const_int(n.children[2], scope)
        if isinstance(base.type, ir.IntT) and isinstance(base, ir.Literal):
            return ir.Literal(ir.BitT(hi - lo + 1), self.pos(n),
                              (int(base.value) >> lo) & mask(hi - lo + 1))
        if not isinstance(base.type, ir.BitT):
            raise self.err(f"cannot slice a value of type {type_name(base.type)}", n)
        if not (0 <= lo <= hi < base.type.width):
            raise self.err(f"slice [{hi}:{lo}] out of range for {type_name(base.type)}", n)
        t = ir.BitT(hi - lo + 1)
        if isinstance(base, ir.Literal):
            return ir.Literal(t, self.pos(n), (base.value >> lo) & mask(t.width))
        return ir.Slice(t, self.pos(n), base, hi, lo)

    def x_call(self, n: Tree, scope: Scope, expected) -> ir.Expr:
        callee, args = n.children
        return self.call(n, callee, [], args, scope)

    def x_call_targs(self, n: Tree, scope: Scope, expected) -> ir.Expr:
        callee = n.children[0]
        args = n.children[-1]
        targs = [self.resolve_type(c) for c in n.children[1:-1]
                 if isinstance(c, Tree) and c.data != "rangle"]
        return self.call(n, callee, targs, args, scope)

    def call(self, n: Tree, callee: Tree, targs: list[ir.Type], args: Tree,
             scope: Scope) -> ir.Expr:
        arg_nodes = list(args.children)
        pos = self.pos(n)
        callee = self.value_view(callee, scope)
        if callee.data == "member":
            base_n, mname_n = callee.children
            base_n = self.value_view(base_n, scope)
            mname = self.ident(mname_n)
            sym = self.expr_symbol(base_n, scope) \
                if base_n.data in ("name_ref", "top_name_ref") else None
            if isinstance(sym, ir.TableDecl):
                if mname != "apply":
                    raise self.err(f"tables only have 'apply', not '{mname}'", mname_n)
                if arg_nodes:
                    raise self.err("table apply() takes no arguments", args)
                if self.in_parser or self.cur_action or self.cur_function:
                    raise self.err("tables can only be applied from a control's apply block",
                                   n)
                return ir.ApplyResult(ir.ApplyResultT(sym), pos, sym, None)
            if isinstance(sym, ir.ExternInstance):
                et = self.extern_types[sym.extern]
                sigs = et.methods.get(mname)
                if not sigs:
                    raise self.err(f"{sym.extern} has no method '{mname}'", mname_n)
                bindings = dict(zip(et.type_params, sym.type_args))
                args_e, dirs, tb = self.bind_args(sigs, arg_nodes, targs, bindings, scope, n,
                                                  f"{sym.name}.{mname}")
                ret = self.subst(tb[1].ret, tb[0]) if tb[1] else ir.VoidT()
                return ir.ExternCall(ret, pos, args_e, dirs, sym, mname)
            base = self.expr(base_n, scope, None)
            bt = base.type
            if isinstance(bt, ir.HeaderT):
                if mname not in ("isValid", "setValid", "setInvalid"):
                    raise self.err(f"headers have no method '{mname}'", mname_n)
                if arg_nodes:
                    raise self.err(f"{mname}() takes no arguments", args)
                if mname != "isValid":
                    self.check_lvalue(base, base_n)
                t = ir.BoolT() if mname == "isValid" else ir.VoidT()
                return ir.HeaderCall(t, pos, [], [], base, mname)
            if isinstance(bt, ir.HeaderUnionT):
                if mname != "isValid":
                    raise self.err(f"header unions have no method '{mname}' (only isValid)",
                                   mname_n)
                if arg_nodes:
                    raise self.err("isValid() takes no arguments", args)
                return ir.HeaderCall(ir.BoolT(), pos, [], [], base, mname)
            if isinstance(bt, ir.StackT):
                if mname not in ("push_front", "pop_front"):
                    raise self.err(f"header stacks have no method '{mname}'", mname_n)
                if len(arg_nodes) != 1:
                    raise self.err(f"{mname}() takes one argument", args)
                self.check_lvalue(base, base_n)
                count = self.const_int(arg_nodes[0], scope)
                if count < 0:
                    raise self.err("count must not be negative", arg_nodes[0])
                return ir.StackCall(ir.VoidT(), pos,
                                    [ir.Literal(ir.IntT(), self.pos(arg_nodes[0]), count)],
                                    [None], base, mname)
            if isinstance(bt, ir.ExternT) and bt.name in ("packet_in", "packet_out"):
                et = self.extern_types[bt.name]
                sigs = et.methods.get(mname)
                if not sigs:
                    raise self.err(f"{bt.name} has no method '{mname}'", mname_n)
                args_e, dirs, (bind, sig) = self.bind_args(sigs, arg_nodes, targs, {}, scope, n,
                                                           mname)
                ret = self.subst(sig.ret, bind)
                if isinstance(ret, TypeVar):
                    raise self.err(f"{mname} needs an explicit type argument", n)
                if mname == "extract":
                    at = args_e[0].type
                    if not isinstance(at, ir.HeaderT):
                        raise self.err(f"extract needs a header, not {type_name(at)}", n)
                    if (at.varbit is not None) != (len(args_e) == 2):
                        raise self.err("a header with a varbit field is extracted with its size "
                                       "(extract(hdr, bits)), any other header without", n)
                if mname == "lookahead" and isinstance(ret, ir.HeaderT) and ret.varbit is not None:
                    raise self.err("lookahead of a header with a varbit field", n)
                if mname == "lookahead" and not _lookahead_type(ret):
                    raise self.unsupported(f"lookahead of {type_name(ret)}", n)
                if mname == "emit" and not isinstance(args_e[0].type,
                                                      (ir.HeaderT, ir.StackT, ir.StructT,
                                                       ir.HeaderUnionT)):
                    raise self.err(f"emit needs a header, header stack or struct of headers, "
                                   f"not {type_name(args_e[0].type)}", n)
                return ir.PacketCall(ret, pos, args_e, dirs, base, mname)
            if isinstance(bt, ir.ExternT):
                raise self.err(f"{bt.name} has no method '{mname}'", mname_n)
            raise self.err(f"a value of type {type_name(bt)} has no method '{mname}'", mname_n)
        if callee.data in ("name_ref", "top_name_ref"):
            name = self.ident(callee.children[0])
            sym = self.expr_symbol(callee, scope)
            if isinstance(sym, ir.ActionDecl):
                if self.in_parser:
                    raise self.err("actions cannot be called from a parser", n)
                if targs:
                    raise self.err("actions take no type arguments", n)
                params = [Param(v.name, v.direction, v.type, self.param_default(v)) for v in sym.params]
                sig = Sig(name, [], params, ir.VoidT())
                args_e, dirs, _ = self.bind_args([sig], arg_nodes, [], {}, scope, n, name)
                return ir.ActionCall(ir.VoidT(), pos, args_e, [v.direction for v in sym.params],
                                     sym)
            if isinstance(sym, ir.FunctionDecl):
                params = [Param(v.name, v.direction, v.type, self.param_default(v)) for v in sym.params]
                sig = Sig(name, [], params, sym.return_type)
                args_e, dirs, _ = self.bind_args([sig], arg_nodes, [], {}, scope, n, name)
                return ir.FunctionCall(sym.return_type, pos, args_e, dirs, sym)
            if sym is None and name in self.extern_funcs:
                return self.builtin_call(name, n, targs, arg_nodes, scope)
            if sym is None:
                raise self.err(f"unknown function or action '{name}'", callee)
            raise self.err(f"'{name}' cannot be called", callee)
        if callee.data == "type_member":
            raise self.unsupported("calling a method of a type", n)
        raise self.err("this expression cannot be called", n)

    def builtin_call(self, name: str, n: Tree, targs: list[ir.Type], arg_nodes: list,
                     scope: Scope) -> ir.Expr:
        sigs = self.extern_funcs[name]
        if name == "verify" and not self.in_parser:
            raise self.err("verify() can only be called in a parser", n)
        args_e, dirs, (bind, sig) = self.bind_args(sigs, arg_nodes, targs, {}, scope, n, name)
        type_args = []
        for tp in sig.type_params:
            t = bind.get(tp)
            if t is None:
                raise self.err(f"cannot infer type parameter {tp} of {name}", n)
            type_args.append(t)
        if name == "digest":
            data_t = type_args[0]
            if not isinstance(data_t, ir.StructT):
                raise self.err(f"digest data must be a struct, not {type_name(data_t)}", n)
            if all(d is not data_t for d in self.digests):
                self.digests.append(data_t)
        if name in ("resubmit", "recirculate", "clone3"):
            raise self.unsupported(f"{name}() with a field list (use "
                                   f"{'clone_preserving_field_list' if name == 'clone3' else name + '_preserving_field_list'}"
                                   ")", n)
        ret = self.subst(sig.ret, bind)
        return ir.BuiltinCall(ret, self.pos(n), args_e, dirs, name, type_args)

    def bind_args(self, sigs: list[Sig], arg_nodes: list, targs: list[ir.Type],
                  bindings: dict[str, ir.Type], scope: Scope, n: Tree, what: str):
        """Match arguments to one of the overloads, fill defaults, infer type variables and
        check directions.  Returns (args, directions, (bindings, sig))."""
        named = [a for a in arg_nodes if isinstance(a, Tree) and a.data == "named_arg"]
        if named and len(named) != len(arg_nodes):
            raise self.err("mixing named and positional arguments", n)
        candidates = []
        for s in sigs:
            required = [p for p in s.params if p.default is None]
            if named:
                names = {self.ident(a.children[0]) for a in named}
                if names <= {p.name for p in s.params} and \
                        {p.name for p in required} <= names:
                    candidates.append(s)
            elif len(required) <= len(arg_nodes) <= len(s.params):
                candidates.append(s)
        if not candidates:
            counts = sorted({len(s.params) for s in sigs})
            raise self.err(f"{what} takes {' or '.join(map(str, counts))} argument(s), "
                           f"{len(arg_nodes)} given", n)
        sig = candidates[0]
        bind = dict(bindings)
        if targs:
            if len(targs) != len(sig.type_params):
                raise self.err(f"{what} takes {len(sig.type_params)} type argument(s)", n)
            bind.update(zip(sig.type_params, targs))
        # pair params with argument nodes
        if named:
            by_name = {self.ident(a.children[0]): a.children[1] for a in named}
            pairs = [(p, by_name.get(p.name)) for p in sig.params]
        else:
            pairs = [(p, arg_nodes[i] if i < len(arg_nodes) else None)
                     for i, p in enumerate(sig.params)]
        # pass 1: check arguments whose parameter type is known
        checked: list[Optional[ir.Expr]] = []
        for p, a in pairs:
            if a is None:
                checked.append(None)
                continue
            pt = self.subst(p.type, bind)
            if isinstance(a, Tree) and a.data == "dontcare_arg":
                if p.direction != "out":
                    raise self.err("'_' can only be passed for an out parameter", a)
                checked.append(ir.DontCare(pt, self.pos(a)))
                continue
            checked.append(self.expr(a, scope, None if isinstance(pt, TypeVar) else pt))
        # infer type variables from typed arguments
        for (p, a), e in zip(pairs, checked):
            if isinstance(p.type, TypeVar) and p.type.name not in bind and e is not None:
                if not isinstance(e.type, ir.IntT) and not (
                        isinstance(e.type, ir.TupleT) and
                        any(isinstance(x, ir.IntT) for x in e.type.elems)):
                    bind[p.type.name] = e.type
        out_args: list[ir.Expr] = []
        dirs: list[Optional[str]] = []
        for (p, a), e in zip(pairs, checked):
            pt = self.subst(p.type, bind)
            if e is None:
                if p.default is None:
                    raise self.err(f"missing argument '{p.name}' of {what}", n)
                e = self.expr(p.default, self.global_scope, pt)
                a = n
            if isinstance(e, ir.DontCare):
                if isinstance(pt, TypeVar):
                    raise self.err(f"cannot infer the type of '_' for '{p.name}' (give {what} "
                                   "its type argument)", a)
                out_args.append(ir.DontCare(pt, e.pos))
                dirs.append(p.direction)
                continue
            if isinstance(pt, TypeVar):
                if isinstance(e.type, ir.TupleT) and any(isinstance(x, ir.IntT)
                                                         for x in e.type.elems):
                    raise self.err("integer literals in a list need a width (e.g. 8w1)", a)
                bind[pt.name] = e.type
                pt = e.type
            e = self.coerce(e, pt, a)
            if p.direction in ("out", "inout"):
                self.check_lvalue(e, a)
            out_args.append(e)
            dirs.append(p.direction)
        return out_args, dirs, (bind, sig)

    x_bor = x_bxor = x_band = x_add = x_mul = _arith


def _lookahead_type(t: ir.Type, top: bool = True) -> bool:
    """Types ``lookahead<T>`` reads: bit/int, bool, serializable enums, a header, and structs
    (also as header fields) of those scalars, nested (p4c-bm2-ss's mid end turns serializable
    enums into their bit type, then ExpandLookahead reads each leaf as a slice of one
    ``lookahead<bit<W>>``).  A header inside a struct is not read by p4sim's lookahead."""
    if isinstance(t, (ir.BitT, ir.BoolT)) or isinstance(t, ir.EnumT) and t.underlying is not None:
        return True
    if isinstance(t, ir.HeaderT) and top:
        return all(_lookahead_type(f.type, False) for f in t.fields if isinstance(f.type, ir.StructT))
    if isinstance(t, ir.StructT):
        return all(_lookahead_type(f.type, False) for f in t.fields)
    return False
