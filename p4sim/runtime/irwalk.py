"""The one walk over p4sim's IR that both code generators share.

p4sim has two back ends over the same IR: the reference, which writes Python
(``runtime.codegen``), and the native one, which writes C (``native.cgen``).  What an IR node
*means* -- which operand is evaluated first and when it must be pinned in a temporary, how a
cast between widths behaves, how a slice is assigned, which switch labels fall through to which
body, what a select keyset tests, where a transition goes, which scalars a data list holds,
which statement, extern method or extern function a node is, and BMv2's rules for registers,
counters and mark_to_drop -- is decided here, once.  Each back end only says how to spell each
construct in its language, so the two cannot drift apart on a rule (the native backend's
answers must equal the reference's byte for byte).

A back end subclasses ``IRWalker`` and provides:

* ``unsupported``: the exception it raises for a construct it does not run;
* ``fresh(sc)``: a new temporary's name, and ``spell_pin``/``is_stable`` (a value held in one);
* ``spelling``: its table of ``str.format`` templates (a ``spelling.toml`` next to it) for the
  constructs spelled without a decision; a construct missing from it is refused where the walk
  says so (``spell_or_refuse``);
* the ``spell_*`` methods for constructs whose spelling needs a decision of its own (C's 64-bit
  limits, Python's constant shifts), and the statement, extern and builtin methods the walk
  dispatches to (``st_<kind>``, ``extern_<extern>_<method>``, ``builtin_<kind>``) where they
  differ between the two languages;
* ``emit``/``nested``/``inline``: how lines and nested bodies go to its writer.

Expressions come back as code strings; statements that must run before one goes to ``pre``.
"""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Callable, Optional

from p4sim.frontend import ir
from p4sim.runtime.objects import is_composite, scalar_width

# binary operator on bit<W>/int<W> -> the construct a back end writes it as: its ``spell_<kind>``
# method if it has one, else its template ``<kind>`` (``<kind>_signed`` for int<W> where it has one)
BINARY_KINDS = {
    "<": "relational", "<=": "relational", ">": "relational", ">=": "relational",
    "+": "wrap", "-": "wrap", "*": "wrap",
    "&": "bitwise", "|": "bitwise", "^": "bitwise",
    "/": "div", "%": "mod", "<<": "shl", ">>": "shr", "|+|": "sat_add", "|-|": "sat_sub",
}


# v1model extern function -> the builtin_<kind> method of the back end that writes it
BUILTIN_KINDS = {
    "mark_to_drop": "mark_to_drop", "hash": "hash", "random": "random", "digest": "digest",
    "clone": "clone", "clone3": "clone", "clone_preserving_field_list": "clone",
    "resubmit": "resubmit", "resubmit_preserving_field_list": "resubmit",
    "recirculate": "recirculate", "recirculate_preserving_field_list": "recirculate",
    "truncate": "truncate", "log_msg": "log_msg", "assert": "assert", "assume": "assert", "verify": "verify",
    "verify_checksum": "checksum", "update_checksum": "checksum",
    "verify_checksum_with_payload": "checksum", "update_checksum_with_payload": "checksum",
}


# the match kinds of a table key that BMv2's v1model tables implement
MATCH_KINDS = ("exact", "lpm", "ternary", "range", "optional")


def bitmask(w: int) -> int:
    return (1 << w) - 1


def bits_of(t: ir.Type) -> Optional[ir.BitT]:
    """The BitT an arithmetic value of type ``t`` behaves as (serializable enums: underlying)."""
    if isinstance(t, ir.BitT):
        return t
    if isinstance(t, ir.EnumT) and t.underlying is not None:
        return t.underlying
    return None


def table_action_refs(t: ir.TableDecl) -> list[ir.ActionRef]:
    """A table's actions list, then its default and const-entry actions that the list lacks."""
    refs = list(t.actions)
    for extra in ([t.default_action] if t.default_action else []) + [e.action for e in t.const_entries]:
        if not any(r.action is extra.action for r in refs):
            refs.append(extra)
    return refs


def switch_arms(s: ir.SwitchStmt) -> tuple[list[tuple[list[Any], ir.SwitchCase]], Optional[ir.Stmt]]:
    """(labels, case with the body) of each arm of a switch statement, and the default body:
    labels without a body fall through to the next body (P4_16 12.7)."""
    arms = []
    default = None
    pending: list[Any] = []
    for case in s.cases:
        pending += case.labels
        if case.body is None:
            continue
        labels, pending = pending, []
        if "default" in labels:
            default = case.body
        else:
            arms.append((labels, case))
    return arms, default


def load_spelling(path: Path) -> dict[str, str]:
    """A backend's table of templates (construct -> ``str.format`` template)."""
    with open(path, "rb") as f:
        return tomllib.load(f)


class IRWalker:
    """The shared traversal; subclasses spell it (see the module docstring)."""

    unsupported: Callable[..., Exception]
    spelling: dict[str, str]  # the backend's templates for constructs spelled without a decision
    runs_varbit = True  # whether the backend runs varbit headers and header unions
    runs_unions = True

    def spell(self, construct: str, **fields: Any) -> str:
        return self.spelling[construct].format(**fields)

    def spell_or_refuse(self, construct: str, what: str, pos: Any, **fields: Any) -> str:
        """``construct`` spelled, or refused (``what`` at ``pos``) by a backend whose table
        lacks it: it does not run that construct."""
        if construct not in self.spelling:
            raise self.unsupported(what, pos)
        return self.spell(construct, **fields)

    def fresh(self, sc: Any) -> str:  # pragma: no cover - every back end defines it
        raise NotImplementedError

    # ------------------------------------------------------------------ expressions
    def ex(self, e: ir.Expr, sc: Any, pre: list[str]) -> str:
        """Code for ``e``; statements that must run first go to ``pre``."""
        m = getattr(self, "ex_" + type(e).__name__, None)
        if m is None:
            raise self.unsupported(f"expression {type(e).__name__}", e.pos)
        return m(e, sc, pre)

    def sequence(self, items: list[tuple[str, list[str], Optional[ir.Type]]], sc: Any, pre: list[str]) -> list[str]:
        """Operands evaluated left to right (P4_16 8): ``items`` are (code, statements it needs,
        its composite type or None).  Each operand's statements go to ``pre`` in order; an
        operand read before a later operand's statements is pinned in a temporary first (a copy
        for a composite), so a later call's side effects cannot change it."""
        last = max((i for i, (_, p, _) in enumerate(items) if p), default=-1)
        codes = []
        for i, (code, p, comp) in enumerate(items):
            pre += p
            if i < last and not self.is_stable(code, comp):
                t = self.fresh(sc)
                pre.append(self.spell_pin(t, code, comp))
                code = t
            codes.append(code)
        return codes

    def ex_all(self, es: list[ir.Expr], sc: Any, pre: list[str]) -> list[str]:
        """Codes for ``es`` evaluated left to right (see ``sequence``)."""
        items = []
        for e in es:
            p: list[str] = []
            items.append((self.ex(e, sc, p), p, e.type if is_composite(e.type) else None))
        return self.sequence(items, sc, pre)

    def ex_Literal(self, e: ir.Literal, sc: Any, pre: list[str]) -> str:
        if isinstance(e.value, bool):
            return self.spell("bool", v=e.value, n=int(e.value))
        if isinstance(e.value, str):
            return self.spell_or_refuse("string", "string literal", e.pos, v=repr(e.value))
        b = bits_of(e.type)
        return self.spell_int(e.value & bitmask(b.width) if b is not None else e.value, e)

    def ex_VarRef(self, e: ir.VarRef, sc: Any, pre: list[str]) -> str:
        try:
            return sc.vars[id(e.var)]
        except KeyError:
            raise self.out_of_scope(e) from None

    def ex_Slice(self, e: ir.Slice, sc: Any, pre: list[str]) -> str:
        base = self.ex(e.base, sc, pre)
        return self.spell("shifted_slice" if e.lo else "slice", a=base, lo=e.lo, m=bitmask(e.hi - e.lo + 1))

    def ex_Unary(self, e: ir.Unary, sc: Any, pre: list[str]) -> str:
        a = self.ex(e.operand, sc, pre)
        if e.op == "!":
            return self.spell("not", a=a)
        b = bits_of(e.type)
        if b is None:  # compile-time int
            return self.spell_or_refuse("int_unary", f"unary {e.op} on {e.type}", e.pos, op=e.op, a=a)
        if e.op == "-":
            return self.spell("negate", a=a, m=bitmask(b.width))
        if e.op == "~":
            return self.spell("invert", a=a, m=bitmask(b.width))
        raise self.unsupported(f"unary operator {e.op}", e.pos)

    def ex_Binary(self, e: ir.Binary, sc: Any, pre: list[str]) -> str:
        op = e.op
        if op in ("&&", "||"):
            # short-circuit: the right operand (and any statement it needs) runs only when the
            # left one does not decide the result
            a = self.ex(e.left, sc, pre)
            rp: list[str] = []
            b = self.ex(e.right, sc, rp)
            if not rp:
                return self.spell("and" if op == "&&" else "or", a=a, b=b)
            t = self.fresh(sc)
            pre += self.spell_short_circuit(op, t, a, rp, b)
            return t
        a, b = self.ex_all([e.left, e.right], sc, pre)
        lt = e.left.type
        if op in ("==", "!="):
            if is_composite(lt):
                return self.spell_composite_eq(op, a, b, lt)
            return self.spell("compare", a=a, b=b, op=op)
        if op == "++":
            return self.spell_concat(a, b, e)
        bt = bits_of(lt)
        if bt is None:  # untyped compile-time int arithmetic (rare; the front end folds it)
            return self.spell_or_refuse("int_binary", f"arithmetic on {lt}", e.pos, a=a, b=b,
                                        op="//" if op == "/" else op)
        kind = BINARY_KINDS.get(op)
        if kind is None:
            raise self.unsupported(f"binary operator {op}", e.pos)
        spell = getattr(self, "spell_" + kind, None)  # a method where the spelling needs a decision
        if spell is not None:
            return spell(e, a, b, bt)
        signed = kind + "_signed"  # int<W>: the signed spelling where the backend has one
        name = signed if bt.signed and signed in self.spelling else kind
        return self.spell(name, a=a, b=b, op=op, w=bt.width, m=bitmask(bt.width), h=1 << (bt.width - 1))

    def ex_Cast(self, e: ir.Cast, sc: Any, pre: list[str]) -> str:
        a = self.ex(e.operand, sc, pre)
        src, dst = e.operand.type, e.type
        if isinstance(dst, ir.BoolT):
            return a if isinstance(src, ir.BoolT) else self.spell("to_bool", a=a)
        db = bits_of(dst)
        if db is None:
            raise self.unsupported(f"cast to {dst}", e.pos)
        if isinstance(src, ir.BoolT):
            return self.spell("from_bool", a=a)
        sb = bits_of(src)
        if sb is None or db.width < sb.width:  # a compile-time int, or narrowing
            return self.spell("mask", a=a, m=bitmask(db.width))
        if db.width > sb.width and sb.signed:
            return self.spell("sign_extend", a=a, w=sb.width, h=1 << (sb.width - 1), m=bitmask(db.width))
        return a

    def ex_Mux(self, e: ir.Mux, sc: Any, pre: list[str]) -> str:
        c = self.ex(e.cond, sc, pre)
        tp: list[str] = []
        op: list[str] = []
        a, b = self.ex(e.then, sc, tp), self.ex(e.other, sc, op)
        if not tp and not op and self.mux_inline(e.type):
            return self.spell("mux", c=c, a=a, b=b)
        # only the chosen branch runs (with its statements)
        t = self.fresh(sc)
        pre += self.spell_mux_branches(e.type, t, c, tp, a, op, b)
        return t

    def ex_StructExpr(self, e: ir.StructExpr, sc: Any, pre: list[str]) -> str:
        return self.build_struct(e.type, e.fields, sc, pre)

    def ex_ListExpr(self, e: ir.ListExpr, sc: Any, pre: list[str]) -> str:
        if isinstance(e.type, (ir.StructT, ir.HeaderT)):
            return self.build_struct(e.type, dict(zip([f.name for f in e.type.fields], e.items)), sc, pre)
        if "tuple" not in self.spelling:
            raise self.unsupported("list/tuple value outside a hash or checksum", e.pos)
        return self.spell("tuple", items="".join(c + ", " for c in self.ex_all(e.items, sc, pre)))

    def build_struct(self, t: ir.Type, fields: dict[str, ir.Expr], sc: Any, pre: list[str]) -> str:
        """A fresh object of composite type ``t`` built from field expressions (headers: valid)."""
        tmp = self.new_object(t, sc, pre)
        for name, fe in fields.items():
            code = self.ex(fe, sc, pre)
            pre.append(self.spell_field_init(tmp, name, fe.type, code))
        if isinstance(t, ir.HeaderT):
            pre.append(self.spell("set_valid", obj=tmp))
        return tmp

    def ex_ApplyResult(self, e: ir.ApplyResult, sc: Any, pre: list[str]) -> str:
        r = self.apply_table(e, sc, pre)
        spelled = self.spell_apply_result(r)
        if e.field not in spelled:
            raise self.unsupported(f"table apply result .{e.field}", e.pos)
        return spelled[e.field]

    # ------------------------------------------------------------------ lvalues
    def assign(self, lhs: ir.Expr, value: str, sc: Any, out: list[str]) -> None:
        """Append statements writing code ``value`` into P4 lvalue ``lhs``."""
        if isinstance(lhs, ir.DontCare):
            return  # '_': the value is not kept
        if isinstance(lhs, ir.Slice):  # read the whole base, splice the bits in, write it back
            m = bitmask(lhs.hi - lhs.lo + 1)
            keep = bitmask(scalar_width(lhs.base.type)) & ~(m << lhs.lo)
            t = self.fresh(sc)
            out.append(self.spell_pin(t, value, None))
            cur = self.ex(lhs.base, sc, out)
            self.assign(lhs.base, self.spell("splice", cur=cur, keep=keep, t=t, m=m, lo=lhs.lo), sc, out)
            return
        self.assign_whole(lhs, value, sc, out)

    # ------------------------------------------------------------------ data lists
    def flatten(self, e: ir.Expr, sc: Any, pre: list[str]) -> list[tuple[str, Any, str]]:
        """(value code, bit width, field name) for every scalar in a data list/struct/header, in
        order: hash/checksum/digest/log inputs."""
        if isinstance(e, ir.ListExpr) and not isinstance(e.type, (ir.StructT, ir.HeaderT)):
            return [x for i in e.items for x in self.flatten(i, sc, pre)]
        if isinstance(e, ir.StructExpr) or (isinstance(e, ir.ListExpr) and isinstance(e.type, ir.StructT)):
            items = e.fields if isinstance(e, ir.StructExpr) else dict(zip([f.name for f in e.type.fields], e.items))
            out = []
            for f in e.type.fields:
                sub = self.flatten(items[f.name], sc, pre)
                out += [(c, w, f.name if len(sub) == 1 else n) for c, w, n in sub]
            return out
        if is_composite(e.type):
            return self.flatten_obj(self.ex(e, sc, pre), e.type)
        name = e.name if isinstance(e, ir.Member) else (e.var.name if isinstance(e, ir.VarRef) else "")
        return [self.scalar_item(self.ex(e, sc, pre), e.type, name)]

    def flatten_obj(self, code: str, t: ir.Type) -> list[tuple[str, Any, str]]:
        """The scalars of composite object ``code`` of type ``t``, fields in order."""
        if isinstance(t, ir.StackT):
            return [x for i in range(t.size) for x in self.flatten_obj(self.spell("element", code=code, i=i), t.elem)]
        out = []
        for f in t.fields:
            c = self.spell_field(code, f.name)
            out += self.flatten_obj(c, f.type) if is_composite(f.type) else [self.scalar_item(c, f.type, f.name)]
        return out

    def emit_headers(self, code: str, t: ir.Type, pos: Any) -> list[tuple[str, ir.HeaderT]]:
        """The headers ``emit`` of object ``code`` of type ``t`` writes, in order: a struct's
        fields and a stack's elements in turn, a union's members (only a valid one is written)."""
        if isinstance(t, ir.HeaderT):
            if t.varbit is not None and not self.runs_varbit:
                raise self.unsupported("emit of a varbit header", pos)
            return [(code, t)]
        if isinstance(t, ir.StackT):
            return [x for i in range(t.size) for x in self.emit_headers(self.spell("element", code=code, i=i), t.elem, pos)]
        if isinstance(t, ir.HeaderUnionT) and not self.runs_unions:
            raise self.unsupported("emit of a header union", pos)
        if isinstance(t, (ir.StructT, ir.HeaderUnionT)):
            return [x for f in t.fields for x in self.emit_headers(self.spell_field(code, f.name), f.type, pos)]
        raise self.unsupported("emit of a non-header value", pos)

    def scalar_item(self, code: str, t: ir.Type, name: str) -> tuple[str, Any, str]:
        """One scalar of a data list: (value code, bit width, field name)."""
        return (code, scalar_width(t), name)

    # ------------------------------------------------------------------ extern objects
    def extern_call(self, e: ir.ExternCall, sc: Any, pre: list[str]) -> Optional[str]:
        """A v1model extern method, by ``extern_<extern>_<method>`` (none: refused)."""
        m = getattr(self, f"extern_{e.instance.extern}_{e.method}", None)
        if m is None:
            raise self.unsupported(f"extern method {e.instance.extern}.{e.method}", e.pos)
        return m(e, sc, pre)

    def pinned_index(self, index: ir.Expr, sc: Any, pre: list[str]) -> str:
        t = self.fresh(sc)
        pre.append(self.spell_pin(t, self.ex(index, sc, pre), None))
        return t

    def extern_register_read(self, e: ir.ExternCall, sc: Any, pre: list[str]) -> None:
        """``read(result, index)``; out of range, the result is 0 (BMv2)."""
        cells, size = self.extern_state(e.instance)
        i = self.pinned_index(e.args[1], sc, pre)
        self.assign(e.args[0], self.spell("register_read", cells=cells, size=size, i=i), sc, pre)

    def extern_register_write(self, e: ir.ExternCall, sc: Any, pre: list[str]) -> None:
        """``write(index, value)``; out of range, nothing is written (BMv2)."""
        cells, size = self.extern_state(e.instance)
        i = self.pinned_index(e.args[0], sc, pre)
        v = self.ex(e.args[1], sc, pre)
        pre.append(self.spell("register_write", cells=cells, size=size, i=i, v=v))

    def extern_counter_count(self, e: ir.ExternCall, sc: Any, pre: list[str]) -> None:
        """``count(index)``: one packet and its length in bytes; out of range, nothing (BMv2)."""
        cells, size = self.extern_state(e.instance)
        i = self.pinned_index(e.args[0], sc, pre)
        pre += self.spell("counter_count", cells=cells, size=size, i=i).split("\n")

    def extern_direct_counter_count(self, e: ir.ExternCall, sc: Any, pre: list[str]) -> None:
        """A no-op: BMv2 counts a direct counter on every hit of its table."""

    # ------------------------------------------------------------------ extern functions
    def builtin_call(self, e: ir.BuiltinCall, sc: Any, pre: list[str]) -> None:
        """A v1model extern function, by the backend's ``builtin_<kind>`` (none: refused)."""
        m = getattr(self, "builtin_" + BUILTIN_KINDS.get(e.name, "?"), None)
        if m is None:
            raise self.unsupported(f"{e.name}()", e.pos)
        m(e, sc, pre)

    def builtin_mark_to_drop(self, e: ir.BuiltinCall, sc: Any, pre: list[str]) -> None:
        """The packet goes to the drop port and to no multicast group (the standard metadata
        argument, or the packet's own when it is omitted)."""
        sm = self.ex(e.args[0], sc, pre) if e.args else self.spell("standard_metadata")
        pre += self.spell("mark_to_drop", sm=sm).split("\n")

    @staticmethod
    def field_list(e: ir.BuiltinCall, i: int) -> Optional[int]:
        """The field list a ``*_preserving_field_list`` call names (argument ``i``), else None."""
        a = e.args
        return a[i].value if e.name.endswith("field_list") and len(a) > i and isinstance(a[i], ir.Literal) else None

    def digest_items(self, e: ir.BuiltinCall, sc: Any, pre: list[str]) -> tuple[ir.Type, list[tuple[str, Any, str]], list[str]]:
        """A digest's type, its scalars (``flatten``) and their names: the struct's field names
        when it has one field per scalar, else each scalar's own."""
        t = e.type_args[0] if e.type_args else e.args[1].type
        items = self.flatten(e.args[1], sc, pre)
        names = [f.name for f in t.fields] if isinstance(t, ir.StructT) and len(t.fields) == len(items) else [x[2] for x in items]
        return t, items, names

    # ------------------------------------------------------------------ statements
    def stmt(self, s: ir.Stmt, sc: Any, w: Any) -> None:
        """One statement, written to ``w`` (the backend's writer) by the ``st_<kind>`` method
        for its kind; ``a = a op b`` by ``compound_assign`` (its lvalue is evaluated once)."""
        if isinstance(s, ir.Assign) and isinstance(s.rhs, ir.Binary) and s.rhs.left is s.lhs:
            self.compound_assign(s, sc, w)
            return
        m = getattr(self, "st_" + type(s).__name__, None)
        if m is None:
            raise self.unsupported(f"statement {type(s).__name__}", s.pos)
        m(s, sc, w)

    def st_Empty(self, s: ir.Empty, sc: Any, w: Any) -> None:
        pass

    def st_CallStmt(self, s: ir.CallStmt, sc: Any, w: Any) -> None:
        self.call_stmt(s.call, sc, w)

    def st_If(self, s: ir.If, sc: Any, w: Any) -> None:
        pre: list[str] = []
        c = self.ex(s.cond, sc, pre)
        self.emit(pre, w)
        self.emit([self.spell("if", c=c)], w)
        self.nested(s.then, sc, w)
        if s.other is not None:
            self.emit([self.spell("else")], w)
            self.nested(s.other, sc, w)
        self.emit(self.spell_end_if(), w)

    def st_SwitchStmt(self, s: ir.SwitchStmt, sc: Any, w: Any) -> None:
        """The subject pinned once, then an if/else-if chain over the arms (action ids or
        values), the default arm last."""
        pre: list[str] = []
        subj = self.ex(s.subject, sc, pre)
        self.emit(pre, w)
        t = self.fresh(sc)
        self.emit([self.spell_pin(t, subj, None)], w)
        arms, default = switch_arms(s)
        for i, (labels, case) in enumerate(arms):
            conds = self.switch_conds(t, labels, sc, pre, case.pos)
            self.emit(pre, w)
            self.emit([self.spell_arm(i, conds)], w)
            self.nested(case.body, sc, w)
        if default is not None and not arms:
            self.inline(default, sc, w)
        elif default is not None:
            self.emit([self.spell("else")], w)
            self.nested(default, sc, w)
        if arms:
            self.emit(self.spell_end_if(), w)

    def switch_conds(self, subject: str, labels: list[Any], sc: Any, pre: list[str], pos: Any) -> list[str]:
        """The tests of one switch arm on the subject's temporary: an action label compares the
        action id a table apply returned, an expression label its value."""
        conds = []
        for lab in labels:
            if isinstance(lab, ir.ActionDecl):
                conds.append(f"{subject} == {self.action_id(lab)}")
            else:
                conds.append(f"{subject} == {self.switch_label(lab, sc, pre, pos)}")
        return conds

    def goto(self, state: str, states: dict[str, Any]) -> str:
        """A parser transition: ``accept`` and ``reject`` end the parser, any other state (its
        number or label in ``states``) runs next."""
        if state == "accept":
            return self.spell("accept")
        if state == "reject":
            return self.spell("reject")
        return self.spell("goto", state=states[state])

    def select_keys(self, keys: list[ir.Expr], sc: Any, pre: list[str]) -> list[str]:
        """A parser select's key values, each pinned in a temporary (left to right)."""
        out = []
        for k in keys:
            t = self.fresh(sc)
            pre.append(self.spell_pin(t, self.ex(k, sc, pre), None))
            out.append(t)
        return out

    def select_conds(self, keys: list[str], keysets: list[Any]) -> list[str]:
        """What one select case tests: a value, a mask or a range per key (default: nothing)."""
        conds = []
        for key, ks in zip(keys, keysets):
            if isinstance(ks, ir.KsValue):
                conds.append(self.spell("ks_value", key=key, value=ks.value))
            elif isinstance(ks, ir.KsMask):
                conds.append(self.spell("ks_mask", key=key, mask=ks.mask, value=ks.value & ks.mask))
            elif isinstance(ks, ir.KsRange):
                conds.append(self.spell("ks_range", key=key, lo=ks.lo, hi=ks.hi))
        return conds
