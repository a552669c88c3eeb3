"""Compile the IR once into Python code: one Python function per parser, control, action and
function, built as source text and ``exec``-ed into a private namespace.

WHY source text rather than a tree of nested closures: a nested-closure interpreter pays one
Python call per IR node per packet; generating straight-line Python lets CPython run the
per-packet path at its own speed (the L3 benchmark's >= 20 kpps target needs that).  Either way
the IR is walked exactly once, at load time; the per-packet path never looks at the IR.

Conventions of the generated code (see objects.py for the composite-type classes):

* scalar values are ints holding the W-bit pattern; every arithmetic result is masked;
* composite values (headers, structs, stacks) are objects updated *in place* (``_set``), so a
  reference held by a caller always sees an assignment made by a callee;
* a control's parameters and control-level locals live on a per-apply frame object ``F`` that its
  actions and table key functions receive; other locals are Python locals;
* an action/function returns a tuple of its scalar ``out``/``inout`` parameters (copy-out); the
  caller writes them back;
* runtime services (the current packet's standard metadata, clone/resubmit requests, digests ...)
  go through the context object ``X`` (see ``pipeline.PacketContext``).
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from p4sim.errors import CompileError, Pos, Unsupported
from p4sim.frontend import ir
from p4sim.runtime import archs, support
from p4sim.runtime.objects import (ClassFactory, default_scalar, header_layout, is_composite, pyattr, scalar_width,
                                   varbit_split)


def _gress_of(role: Optional[str]) -> str:
    return "egress" if role and role.startswith("egress") else "ingress"


def _mask(w: int) -> int:
    return (1 << w) - 1


def _bits(t: ir.Type) -> Optional[ir.BitT]:
    """The BitT an arithmetic value of type ``t`` behaves as (serializable enums: underlying)."""
    if isinstance(t, ir.BitT):
        return t
    if isinstance(t, ir.EnumT) and t.underlying is not None:
        return t.underlying
    return None


@dataclass(eq=False)
class Pinned(ir.Expr):
    """A value already computed into a Python temporary: an lvalue's run-time stack index
    evaluated before the right-hand side of its assignment (P4_16: lvalues are evaluated first)."""

    code: str = ""


# Python expressions whose value cannot change when other code runs in between: literals and
# temporaries assigned once.  Anything else read before a later operand's statements must be
# captured into a temporary first, so side effects of later operands cannot change it.
_STABLE = re.compile(r"^(?:_t\d+(?:\[\d+\])?|-?\d+|True|False|None|'[^'\\]*')$")


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


def enum_member(lit: ir.Expr) -> str:
    """The member name of an enum Literal (HashAlgorithm.crc16 -> "crc16")."""
    t = lit.type
    if not isinstance(lit, ir.Literal) or not isinstance(t, ir.EnumT):
        raise CompileError("expected a constant enum member here", lit.pos)
    if t.values is not None:
        return t.members[t.values.index(lit.value)]
    return t.members[lit.value]


class Writer:
    """Indented source lines."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def __call__(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def indent(self) -> "Writer":
        self.depth += 1
        return self

    def dedent(self) -> None:
        self.depth -= 1

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


@dataclass
class Scope:
    """What names mean inside the function being generated."""

    vars: dict[int, str]
    frame: Optional[str] = None  # "F" inside controls and actions
    kind: str = "control"  # control | action | function | parser | deparser
    returns: Callable[[Optional[str]], str] = lambda v: "return"
    in_parser: bool = False
    tmp: Any = field(default_factory=lambda: itertools.count())
    loops: list = field(default_factory=list)  # update statements of the enclosing for loops
    # Composite sub-objects read through a local bound once at function entry (see member_alias)
    roots: set = field(default_factory=set)
    member_alias: dict = field(default_factory=dict)  # "P_hdr.ipv4" -> "_m0"
    alias_order: list = field(default_factory=list)  # [("_m0", "P_hdr.ipv4"), ...]

    def new_tmp(self) -> str:
        return f"_t{next(self.tmp)}"


@dataclass
class ActionInfo:
    """What a table needs to know about one of its actions."""

    decl: ir.ActionDecl
    ref: ir.ActionRef
    action_id: int
    fn_name: str  # generated callable ``fn(F, *control_plane_args)``
    cp_params: list[tuple[str, int]]  # (name, width) of control-plane parameters


@dataclass
class TableInfo:
    decl: ir.TableDecl
    control: ir.ControlDecl
    key_fn_name: str
    global_name: str
    actions: list[ActionInfo]


class ProgramCompiler:
    """Turns an ``ir.Program`` into Python source plus the tables it needs."""

    def __init__(self, prog: ir.Program) -> None:
        self.prog = prog
        self.err = {name: i for i, name in enumerate(prog.errors)}
        self.classes = ClassFactory(self.err.get("NoError", 0))
        self.w = Writer()
        self.ids = itertools.count(1)
        self.global_names: dict[int, str] = {}
        self.action_ids: dict[int, int] = {}
        self.action_fn: dict[int, str] = {}
        self.tables: dict[int, TableInfo] = {}
        self.externs: dict[int, tuple[str, ir.ExternInstance]] = {}
        self.controls: dict[int, str] = {}
        self.functions: dict[int, str] = {}
        self.pending_actions: list[tuple[ir.ActionDecl, Optional[ir.ControlDecl]]] = []
        self.uses_clone = False
        self.uses_payload = False
        # TNA: the role being compiled (ingress, egress_deparser ...), the control, and which
        # gress owns each register (see the architecture's extern code generator)
        self.cur_role: Optional[str] = None
        self.cur_control: Optional[ir.ControlDecl] = None
        self.reg_gress: dict[int, tuple] = {}
        self.reads_parser_err: set[str] = set()
        # the architecture's own externs and extern functions (None: v1model's, compiled here)
        self.arch_externs = archs.get(prog.arch).extern_codegen()

    # ------------------------------------------------------------------ names
    def gname(self, obj: Any, prefix: str, label: str = "") -> str:
        key = id(obj)
        if key not in self.global_names:
            safe = "".join(c if c.isalnum() else "_" for c in label)
            self.global_names[key] = f"{prefix}{next(self.ids)}_{safe}" if safe else f"{prefix}{next(self.ids)}"
        return self.global_names[key]

    def error_code(self, name: str) -> int:
        if name not in self.err:
            raise CompileError(f"the program declares no error.{name} (core.p4 should)")
        return self.err[name]

    def extern_name(self, inst: ir.ExternInstance) -> str:
        if id(inst) not in self.externs:
            self.externs[id(inst)] = (self.gname(inst, "E", inst.qualified_name), inst)
        return self.externs[id(inst)][0]

    def action_id(self, a: ir.ActionDecl) -> int:
        if id(a) not in self.action_ids:
            self.action_ids[id(a)] = len(self.action_ids) + 1
        return self.action_ids[id(a)]

    def action_name(self, a: ir.ActionDecl, control: Optional[ir.ControlDecl]) -> str:
        if id(a) not in self.action_fn:
            self.action_fn[id(a)] = self.gname(a, "A", a.qualified_name)
            self.action_id(a)
            self.pending_actions.append((a, control))
        return self.action_fn[id(a)]

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
            if i < last and not _STABLE.match(code):
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
        b = _bits(e.type)
        if b is not None:
            return str(e.value & _mask(b.width))
        return str(e.value)

    def ex_VarRef(self, e: ir.VarRef, sc: Scope, pre: list[str]) -> str:
        try:
            return sc.vars[id(e.var)]
        except KeyError:
            raise CompileError(f"p4sim runtime: variable {e.var.name} is not in scope here", e.pos) from None

    def ex_Member(self, e: ir.Member, sc: Scope, pre: list[str]) -> str:
        if e.name == "parser_err":  # TNA: a program that reads it handles parser errors itself
            self.reads_parser_err.add(_gress_of(self.cur_role))
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
        m = _mask(e.hi - e.lo + 1)
        return f"(({base} >> {e.lo}) & {m})" if e.lo else f"({base} & {m})"

    def ex_Unary(self, e: ir.Unary, sc: Scope, pre: list[str]) -> str:
        a = self.ex(e.operand, sc, pre)
        if e.op == "!":
            return f"(not {a})"
        b = _bits(e.type)
        if b is None:  # compile-time int
            return f"({e.op}{a})"
        if e.op == "-":
            return f"((-{a}) & {_mask(b.width)})"
        if e.op == "~":
            return f"({a} ^ {_mask(b.width)})"
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
            pre += _indent(rp + [f"{t} = {b}"])
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
        bt = _bits(lt)
        if bt is None:  # untyped compile-time int arithmetic (rare; the front end folds it)
            pyop = {"/": "//"}.get(op, op)
            return f"({a} {pyop} {b})"
        W, M, signed = bt.width, _mask(bt.width), bt.signed
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
        db = _bits(dst)
        if db is None:
            raise Unsupported(f"cast to {dst}", e.pos)
        if isinstance(src, ir.BoolT):
            return f"(1 if {a} else 0)"
        sb = _bits(src)
        if sb is None:  # compile-time int
            return f"({a} & {_mask(db.width)})"
        if db.width < sb.width:
            return f"({a} & {_mask(db.width)})"
        if db.width > sb.width and sb.signed:
            H = 1 << (sb.width - 1)
            return f"((({a} ^ {H}) - {H}) & {_mask(db.width)})"
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
        pre += _indent(tp + [f"{t} = {a}"])
        pre.append("else:")
        pre += _indent(op + [f"{t} = {b}"])
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
            pre += _indent(copy_out("_xb.vals") + ["raise"])
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
                for a, fw, s, b in lay:
                    v = f"({x} >> {s}) & {_mask(fw)}"
                    pre.append(f"{tmp}.{a} = {'bool(' + v + ')' if b else v}")
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
            m = _mask(lhs.hi - lhs.lo + 1)
            keep = _mask(bw) & ~(m << lhs.lo)
            tmp = sc.new_tmp()
            out.append(f"{tmp} = {value}")
            cur = self.ex(lhs.base, sc, out)
            self.assign(lhs.base, f"(({cur} & {keep}) | (({tmp} & {m}) << {lhs.lo}))", sc, out)
        else:
            raise Unsupported(f"assignment to {type(lhs).__name__}", lhs.pos)

    # ------------------------------------------------------------------ data lists
    def flatten(self, e: ir.Expr, sc: Scope, pre: list[str]) -> list[tuple[str, int, str]]:
        """(python value, bit width, field name) for every scalar in a data list/struct/header,
        in order: hash/checksum/digest inputs."""
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

    def flatten_obj(self, code: str, t: ir.Type) -> list[tuple[str, int, str]]:
        if isinstance(t, ir.StackT):
            return [x for i in range(t.size) for x in self.flatten_obj(f"{code}.e[{i}]", t.elem)]
        out = []
        for f in t.fields:
            c = f"{code}.{pyattr(f.name)}"
            out += self.flatten_obj(c, f.type) if is_composite(f.type) else [self.scalar_item(c, f.type, f.name)]
        return out

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
        inst, m, a = e.instance, e.method, e.args
        if self.arch_externs is not None and inst.extern in self.arch_externs.EXTERNS:
            return self.arch_externs.extern_call(self, e, sc, pre)
        E = self.extern_name(inst)
        if inst.extern == "register":
            # inlined on the cell list ({E}_c, bound per switch): registers are the most frequent
            # extern calls in stateful programs and a method call per access adds up.  Out of
            # range: reads give 0, writes are ignored (BMv2).
            size = int(inst.ctor_args[0])
            idx = sc.new_tmp()
            if m == "read":
                pre.append(f"{idx} = {self.ex(a[1], sc, pre)}")
                self.assign(a[0], f"({E}_c[{idx}] if {idx} < {size} else 0)", sc, pre)
                return
            if m == "write":
                pre.append(f"{idx} = {self.ex(a[0], sc, pre)}")
                pre.append(f"if {idx} < {size}: {E}_c[{idx}] = {self.ex(a[1], sc, pre)}")
                return
        elif inst.extern == "counter" and m == "count":
            size = int(inst.ctor_args[0])
            idx = sc.new_tmp()
            pre.append(f"{idx} = {self.ex(a[0], sc, pre)}")
            pre.append(f"if {idx} < {size}:")
            pre.append(f"    {E}_p[{idx}] += 1")
            pre.append(f"    {E}_b[{idx}] += X.sm.packet_length")
            return
        elif inst.extern == "direct_counter" and m == "count":
            return  # BMv2 counts a direct counter on every hit of its table; count() is a no-op
        elif inst.extern == "meter" and m == "execute_meter":
            self.assign(a[1], f"{E}.execute({self.ex(a[0], sc, pre)}, X.sm.packet_length, X.now)", sc, pre)
            return
        elif inst.extern == "direct_meter" and m == "read":
            self.assign(a[0], f"X.dmeter.get({id(inst)}, 0)", sc, pre)
            return
        raise Unsupported(f"extern method {inst.extern}.{m}", e.pos)

    def builtin_call(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        n, a = e.name, e.args
        if n == "mark_to_drop":
            sm = self.ex(a[0], sc, pre) if a else "X.sm"
            pre.append(f"{sm}.egress_spec = X.drop_port")
            pre.append(f"{sm}.mcast_grp = 0")
        elif n == "hash":
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
            self.assign(a[0], f"((({base}) + ({h}) % {tmp}) & {_mask(ow)} if {tmp} else ({base}) & {_mask(ow)})", sc, pre)
        elif n == "random":
            lo, hi = self.ex(a[1], sc, pre), self.ex(a[2], sc, pre)
            self.assign(a[0], f"X.random({lo}, {hi})", sc, pre)
        elif n in ("verify_checksum", "update_checksum", "verify_checksum_with_payload",
                   "update_checksum_with_payload"):
            self.checksum(e, sc, pre)
        elif n == "digest":
            t = e.type_args[0] if e.type_args else a[1].type
            items = self.flatten(a[1], sc, pre)
            names = [f.name for f in t.fields] if isinstance(t, ir.StructT) and len(t.fields) == len(items) else [x[2] for x in items]
            tup = "(" + "".join(f"({nm!r}, {w}, {c}), " for (c, w, _), nm in zip(items, names)) + ")"
            pre.append(f"X.digest({getattr(t, 'name', 'digest')!r}, {tup})")
        elif n in ("clone", "clone3", "clone_preserving_field_list"):
            self.uses_clone = True
            kind = enum_member(a[0])
            session = self.ex(a[1], sc, pre)
            fl = a[2].value if n == "clone_preserving_field_list" and isinstance(a[2], ir.Literal) else None
            pre.append(f"X.request_clone({kind!r}, {session}, {fl!r})")
        elif n in ("resubmit", "resubmit_preserving_field_list"):
            fl = a[0].value if n.endswith("field_list") and isinstance(a[0], ir.Literal) else None
            pre.append(f"X.resubmit = ({fl!r},)")
        elif n in ("recirculate", "recirculate_preserving_field_list"):
            fl = a[0].value if n.endswith("field_list") and isinstance(a[0], ir.Literal) else None
            pre.append(f"X.recirculate = ({fl!r},)")
        elif n == "truncate":
            pre.append(f"X.truncate = {self.ex(a[0], sc, pre)}")
        elif n == "log_msg":
            msg = self.ex(a[0], sc, pre)
            vals = [c for c, _, _ in self.flatten(a[1], sc, pre)] if len(a) > 1 else []
            pre.append(f"X.log({msg}, ({''.join(v + ', ' for v in vals)}))")
        elif n in ("assert", "assume"):
            where = str(e.pos) if e.pos else n
            pre.append(f"if not {self.ex(a[0], sc, pre)}: raise _AssertFailed({where!r})")
        elif n == "verify":
            pre.append(f"if not {self.ex(a[0], sc, pre)}: raise _ParserError({self.ex(a[1], sc, pre)})")
        else:
            raise Unsupported(f"{n}()", e.pos)

    @staticmethod
    def algo(name: str, on_int: bool, pos: Optional[Pos] = None) -> str:
        """Global name of a hash implementation (bound in base_namespace), checked now so an
        algorithm p4sim lacks is a compile error, not a per-packet failure."""
        from p4sim.runtime import hashing

        if name not in hashing.ALGORITHMS:
            raise Unsupported(f"hash algorithm {name}", pos)
        return f"_HI_{name}" if on_int else f"_HB_{name}"

    def checksum(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        a = e.args
        cond = self.ex(a[0], sc, pre)
        algo = enum_member(a[3])
        data, width = self.packed(self.flatten(a[1], sc, pre))
        cw = scalar_width(a[2].type)
        payload = e.name.endswith("_with_payload")
        if payload:
            self.uses_payload = True
        if payload:
            calc = f"({self.algo(algo, False, e.pos)}(_pack_bits({data}, {width}) + X.payload) & {_mask(cw)})"
        else:
            calc = f"({self.algo(algo, True, e.pos)}({data}, {width}) & {_mask(cw)})"
        pre.append(f"if {cond}:")
        if e.name.startswith("verify"):
            pre.append(f"    if {calc} != {self.ex(a[2], sc, pre)}: X.sm.checksum_error = 1")
        else:
            inner: list[str] = []
            self.assign(a[2], calc, sc, inner)
            pre += ["    " + line for line in inner]

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

    def stmt(self, s: ir.Stmt, sc: Scope, w: Writer) -> None:
        pre: list[str] = []
        if isinstance(s, ir.Block):
            for x in s.stmts:
                self.stmt(x, sc, w)
        elif isinstance(s, ir.Empty):
            pass
        elif isinstance(s, ir.Assign) and isinstance(s.rhs, ir.Binary) and s.rhs.left is s.lhs:
            # compound assignment ``a op= b``: the lvalue (its indices) is evaluated once, first
            lhs = self.pin_lvalue(s.lhs, sc, pre)
            v = self.ex(ir.Binary(s.rhs.type, s.rhs.pos, s.rhs.op, lhs, s.rhs.right), sc, pre)
            self.assign(lhs, v, sc, pre)
            self.flush(pre, w)
        elif isinstance(s, ir.Assign):
            rp: list[str] = []
            v = self.ex(s.rhs, sc, rp)
            # the lvalue is evaluated before the right-hand side (its indices are pinned first)
            lhs = self.pin_lvalue(s.lhs, sc, pre) if rp else s.lhs
            pre += rp
            self.assign(lhs, v, sc, pre)
            self.flush(pre, w)
        elif isinstance(s, ir.VarDecl):
            self.declare(s, sc, w)
        elif isinstance(s, ir.If):
            c = self.ex(s.cond, sc, pre)
            self.flush(pre, w)
            w(f"if {c}:")
            w.indent()
            self.stmts([s.then], sc, w)
            w.dedent()
            if s.other is not None:
                w("else:")
                w.indent()
                self.stmts([s.other], sc, w)
                w.dedent()
        elif isinstance(s, ir.CallStmt):
            self.call_stmt(s.call, sc, w)
        elif isinstance(s, ir.SwitchStmt):
            self.switch(s, sc, w)
        elif isinstance(s, ir.For):
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
        elif isinstance(s, ir.Break):
            w("break")
        elif isinstance(s, ir.Continue):
            for x in sc.loops[-1]:  # a C-style loop's update runs before the next test
                self.stmt(x, sc, w)
            w("continue")
        elif isinstance(s, ir.Exit):
            w("raise _ExitBlock()")
        elif isinstance(s, ir.Return):
            v = self.ex(s.value, sc, pre) if s.value is not None else None
            self.flush(pre, w)
            w(sc.returns(v))
        else:
            raise Unsupported(f"statement {type(s).__name__}", s.pos)

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

    def switch(self, s: ir.SwitchStmt, sc: Scope, w: Writer) -> None:
        pre: list[str] = []
        subj = self.ex(s.subject, sc, pre)
        self.flush(pre, w)
        tmp = sc.new_tmp()
        w(f"{tmp} = {subj}")
        pending: list = []
        first = True
        default_body = None
        for case in s.cases:
            pending += case.labels
            if case.body is None:
                continue
            labels, pending = pending, []
            if "default" in labels:
                default_body = case.body
                continue
            conds = []
            for lab in labels:
                if isinstance(lab, ir.ActionDecl):
                    conds.append(f"{tmp} == {self.action_id(lab)}")
                else:
                    conds.append(f"{tmp} == {self.ex(lab, sc, pre)}")
            self.flush(pre, w)
            w(f"{'if' if first else 'elif'} {' or '.join(conds) or 'False'}:")
            first = False
            w.indent()
            self.stmts([case.body], sc, w)
            w.dedent()
        if default_body is not None:
            if first:
                self.stmts([default_body], sc, w)
            else:
                w("else:")
                w.indent()
                self.stmts([default_body], sc, w)
                w.dedent()

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
                w(f"_x = (int.from_bytes(data[pos >> 3:(_e + 7) >> 3], 'big') >> ((-_e) & 7)) & {_mask(W)}")
                for a, fw, s, b in header_layout(t):
                    v = f"(_x >> {s}) & {_mask(fw)}" if s else f"_x & {_mask(fw)}"
                    w(f"_h.{a} = {'bool(' + v + ')' if b else v}")
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
        for a, fw, s, b in header_layout(after):
            v = f"(_x >> {s}) & {_mask(fw)}" if s else f"_x & {_mask(fw)}"
            w(f"_h.{a} = {'bool(' + v + ')' if b else v}")
        w(f"_h.{va} = (_n, (_x >> {after.width}) & ((1 << _n) - 1))")
        for a, fw, s, b in header_layout(before):
            v = f"(_x >> ({s + after.width} + _n)) & {_mask(fw)}"
            w(f"_h.{a} = {'bool(' + v + ')' if b else v}")

    def emit_items(self, e: ir.Expr, sc: Scope, pre: list[str]) -> list[tuple[str, ir.HeaderT]]:
        code = self.ex(e, sc, pre)
        return self._emit_obj(code, e.type, e.pos)

    def _emit_obj(self, code: str, t: ir.Type, pos: Optional[Pos]) -> list[tuple[str, ir.HeaderT]]:
        if isinstance(t, ir.HeaderT):
            return [(code, t)]
        if isinstance(t, ir.StackT):
            return [x for i in range(t.size) for x in self._emit_obj(f"{code}.e[{i}]", t.elem, pos)]
        if isinstance(t, (ir.StructT, ir.HeaderUnionT)):  # a union: only its valid member emits
            return [x for f in t.fields for x in self._emit_obj(f"{code}.{pyattr(f.name)}", f.type, pos)]
        raise Unsupported("emit of a non-header value", pos)

    # ------------------------------------------------------------------ blocks
    def compile_parser(self, p: ir.ParserDecl) -> str:
        fn = self.gname(p, "PRS", p.name)
        sc = Scope(vars={}, kind="parser", in_parser=True)
        params = []
        for v in p.params:
            if isinstance(v.type, ir.ExternT) and v.type.name == "packet_in":
                continue
            nm = f"p_{pyattr(v.name)}"
            sc.vars[id(v)] = nm
            params.append(nm)
        w = Writer()
        w(f"def {fn}(data, nbits, {', '.join(params)}):")
        w.indent()
        w('"""Returns (bit position where parsing stopped, error code or None)."""')
        w("pos = 0")
        for loc in p.locals:
            if isinstance(loc, ir.VarDecl):
                self.declare(loc, sc, w)
            else:
                self.extern_name(loc)
        states = list(p.states.values())
        sid = {s.name: i for i, s in enumerate(states)}
        w(f"st = {sid['start']}")
        w("try:")
        w.indent()
        w("while True:")
        w.indent()
        self.dispatch(states, 0, len(states), sid, sc, w)
        w.dedent()
        w.dedent()
        w("except _ParserError as err:")
        w("    return pos, err.code")
        w.dedent()
        self.w.lines += w.lines
        self.w("")
        return fn

    def dispatch(self, states: list[ir.ParserState], lo: int, hi: int, sid: dict[str, int], sc: Scope,
                 w: Writer) -> None:
        """Select state ``st`` among states[lo:hi] by binary search on its number, so a parser
        with many states pays a few comparisons per transition rather than a linear chain."""
        if hi - lo <= 3:
            for i in range(lo, hi):
                w(f"{'if' if i == lo else 'elif'} st == {i}:" if i < hi - 1 else ("else:" if i > lo else "if True:"))
                w.indent()
                for x in states[i].stmts:
                    self.stmt(x, sc, w)
                self.transition(states[i].transition, sid, sc, w)
                w.dedent()
            return
        mid = (lo + hi) // 2
        w(f"if st < {mid}:")
        w.indent()
        self.dispatch(states, lo, mid, sid, sc, w)
        w.dedent()
        w("else:")
        w.indent()
        self.dispatch(states, mid, hi, sid, sc, w)
        w.dedent()

    def transition(self, t: Any, sid: dict[str, int], sc: Scope, w: Writer) -> None:
        def goto(name: str) -> str:
            if name == "accept":
                return "return pos, None"
            if name == "reject":
                return "return pos, -1"
            return f"st = {sid[name]}"

        if isinstance(t, str):
            w(goto(t))
            return
        pre: list[str] = []
        keys = []
        for k in t.keys:
            tmp = sc.new_tmp()
            pre.append(f"{tmp} = {self.ex(k, sc, pre)}")
            keys.append(tmp)
        self.flush(pre, w)
        first = True
        for case in t.cases:
            conds = []
            for key, ks in zip(keys, case.keysets):
                if isinstance(ks, ir.KsDefault):
                    continue
                if isinstance(ks, ir.KsValue):
                    conds.append(f"{key} == {ks.value}")
                elif isinstance(ks, ir.KsMask):
                    conds.append(f"({key} & {ks.mask}) == {ks.value & ks.mask}")
                elif isinstance(ks, ir.KsRange):
                    conds.append(f"{ks.lo} <= {key} <= {ks.hi}")
            w(f"{'if' if first else 'elif'} {' and '.join(conds) or 'True'}:")
            w(f"    {goto(case.next_state)}")
            first = False
        w(f"{'else:' if not first else 'if True:'}")
        w(f"    raise _ParserError({self.error_code('NoMatch')})")

    def frame_class(self, c: ir.ControlDecl) -> tuple[str, dict[int, str]]:
        name = f"FR{next(self.ids)}_{pyattr(c.name)}"
        attrs, vars_ = [], {}
        for v in c.params:
            a = f"p_{pyattr(v.name)}"
            attrs.append(a)
            vars_[id(v)] = f"F.{a}"
        for loc in c.locals:
            if isinstance(loc, ir.VarDecl):
                a = f"l{next(self.ids)}_{pyattr(loc.var.name)}"
                attrs.append(a)
                vars_[id(loc.var)] = f"F.{a}"
        self.w(f"class {name}:")
        self.w(f"    __slots__ = {tuple(attrs)!r}")
        self.w("")
        return name, vars_

    @staticmethod
    def aliased(c: Optional[ir.ControlDecl], fvars: dict[int, str]) -> tuple[dict[int, str], list[tuple[str, str]]]:
        """Scope vars where a control's composite parameters/locals are read through a Python
        local (``P_hdr = F.p_hdr``) instead of the frame: composite values are updated in place,
        never rebound, so the alias stays right, and it saves an attribute load per access."""
        if c is None:
            return dict(fvars), []
        out, binds = dict(fvars), []
        comps = [v for v in c.params if is_composite(v.type)]
        comps += [loc.var for loc in c.locals if isinstance(loc, ir.VarDecl) and is_composite(loc.var.type)]
        for v in comps:
            fexpr = fvars[id(v)]
            alias = "P_" + fexpr[2:]
            out[id(v)] = alias
            binds.append((alias, fexpr))
        return out, binds

    @staticmethod
    def bind_used(w: "Writer", body: list[str], binds: list[tuple[str, str]], depth: int,
                  sc: Optional[Scope] = None) -> None:
        """Emit ``alias = F.attr`` for the frame aliases, then ``_mN = alias.member`` for the
        member aliases, that ``body`` needs (directly or through another alias), then the body."""
        text = "\n".join(body)

        def used(name: str, where: str) -> bool:
            return re.search(r"\b" + re.escape(name) + r"\b", where) is not None

        needed_members: list[tuple[str, str]] = []
        if sc is not None:
            need_text = text
            for alias, code in reversed(sc.alias_order):  # later aliases build on earlier ones
                if used(alias, need_text):
                    needed_members.append((alias, code))
                    need_text += "\n" + code
            needed_members.reverse()
            text = text + "\n" + "\n".join(code for _, code in needed_members)
        for alias, fexpr in binds:
            if used(alias, text):
                w.lines.append("    " * depth + f"{alias} = {fexpr}")
        for alias, code in needed_members:
            w.lines.append("    " * depth + f"{alias} = {code}")
        w.lines += body

    def compile_control(self, c: ir.ControlDecl, role: Optional[str] = None) -> str:
        saved = (self.cur_role, self.cur_control)
        self.cur_role, self.cur_control = role, c
        try:
            return self._compile_control(c, role)
        finally:
            self.cur_role, self.cur_control = saved

    def _compile_control(self, c: ir.ControlDecl, role: Optional[str] = None) -> str:
        fn = self.gname(c, "CTL", c.name)
        frame, fvars = self.frame_class(c)
        # tables first: apply bodies refer to them by name
        for t in c.tables.values():
            self.compile_table(t, c, fvars)
        for a in c.actions.values():
            self.action_name(a, c)
        for loc in c.locals:  # TNA: a RegisterAction's apply runs as an action of this control
            if isinstance(loc, ir.ExternInstance):
                for a in loc.methods.values():
                    self.action_name(a, c)
        self.drain_actions(fvars)
        is_dep = role in ("deparser", "ingress_deparser", "egress_deparser")
        sc = Scope(vars=dict(fvars), frame="F", kind="deparser" if is_dep else "control")
        params = []
        for v in c.params:
            if isinstance(v.type, ir.ExternT) and v.type.name == "packet_out":
                params.append(None)
                continue
            params.append(f"p_{pyattr(v.name)}")
        scalar_outs = [fvars[id(v)] for v in c.params
                       if v.direction in ("out", "inout") and not is_composite(v.type) and not isinstance(v.type, ir.ExternT)]
        if is_dep:
            sc.returns = lambda v: "return _acc, _nb"
        elif scalar_outs:
            sc.returns = lambda v: f"return ({', '.join(scalar_outs)},)"
        w = Writer()
        w(f"def {fn}({', '.join(p for p in params if p)}):")
        w.indent()
        w(f"F = {frame}()")
        for v, p in zip(c.params, params):
            if p:
                w(f"F.{p} = {p}")
        if is_dep:
            w("_acc = 0")
            w("_nb = 0")
        for loc in c.locals:
            if isinstance(loc, ir.VarDecl):
                self.declare(loc, sc, w)
            else:
                self.extern_name(loc)
        avars, binds = self.aliased(c, fvars)
        sc.vars.update(avars)
        sc.roots = {alias for alias, _ in binds}
        body = Writer()
        body.depth = w.depth + (1 if role is not None else 0)
        self.stmts([c.apply], sc, body)
        if role is not None:  # ``exit`` ends the top-level block (raised from any depth)
            w("try:")
            self.bind_used(w, body.lines, binds, w.depth + 1, sc)
            w("except _ExitBlock:")
            w("    pass")
        else:
            self.bind_used(w, body.lines, binds, w.depth, sc)
        w(sc.returns(None))
        w.dedent()
        self.w.lines += w.lines
        self.w("")
        return fn

    def compile_table(self, t: ir.TableDecl, c: ir.ControlDecl, fvars: dict[int, str]) -> None:
        for k in t.keys:
            if k.match_kind not in ("exact", "lpm", "ternary", "range", "optional"):
                raise Unsupported(f"match kind {k.match_kind!r} (table {t.qualified_name})", k.pos or t.pos)
        if sum(k.match_kind == "lpm" for k in t.keys) > 1:
            raise CompileError(f"table {t.qualified_name} has more than one lpm key", t.pos)
        gname = self.gname(t, "T", t.qualified_name)
        kfn = f"K_{gname}"
        sc = Scope(vars=dict(fvars), frame="F")
        pre: list[str] = []
        keys = self.ex_all([k.expr for k in t.keys], sc, pre)
        w = Writer()
        w(f"def {kfn}(F):")
        w.indent()
        for line in pre:
            w(line)
        if len(keys) == 1:
            w(f"return {keys[0]}")
        else:
            w(f"return ({''.join(k + ', ' for k in keys)})")
        w.dedent()
        self.w.lines += w.lines
        self.w("")
        infos = []
        refs = list(t.actions)
        for extra in ([t.default_action] if t.default_action else []) + [e.action for e in t.const_entries]:
            if not any(r.action is extra.action for r in refs):
                refs.append(extra)
        for ref in refs:
            infos.append(self.action_ref(ref, c, fvars))
        self.tables[id(t)] = TableInfo(t, c, kfn, gname, infos)

    def action_ref(self, ref: ir.ActionRef, c: ir.ControlDecl, fvars: dict[int, str]) -> ActionInfo:
        a = ref.action
        fn = self.action_name(a, c)
        cp = [(p.name, scalar_width(p.type)) for p in a.params if p.direction is None]
        bound = [(p, arg) for p, arg in zip(a.params, ref.args) if p.direction is not None]
        if bound:  # directional arguments bound in the actions list: a wrapper evaluates them
            wname = f"W{next(self.ids)}_{fn}"
            sc = Scope(vars=dict(fvars), frame="F")
            cp_names = [f"cp{i}" for i in range(len(cp))]
            pre: list[str] = []
            args_it = iter(cp_names)
            call_args: list[Optional[ir.Expr]] = []
            dirs = []
            # build the call through call_with_copy_out with placeholder literals for cp params
            placeholders = {}
            for p, arg in zip(a.params, ref.args):
                if p.direction is None:
                    v = ir.Var(next(args_it), p.type, "local")
                    placeholders[id(v)] = v.name
                    call_args.append(ir.VarRef(p.type, None, v))
                else:
                    call_args.append(arg)
                dirs.append(p.direction)
            sc.vars.update(placeholders)
            res = self.call_with_copy_out(f"{fn}(F, ", a.params, call_args, dirs, sc, pre, has_value=False,
                                          may_exit=self.may_exit(a))
            w = Writer()
            w(f"def {wname}(F, {', '.join(cp_names)}):" if cp_names else f"def {wname}(F):")
            w.indent()
            for line in pre:
                w(line)
            if res != "None":
                w(res)
            w.dedent()
            self.w.lines += w.lines
            self.w("")
            fn = wname
        return ActionInfo(a, ref, self.action_id(a), fn, cp)

    def may_exit(self, a: ir.ActionDecl) -> bool:
        """Whether action ``a`` can end with ``exit`` (directly or through an action it calls)."""
        memo = self.__dict__.setdefault("_may_exit", {})
        if id(a) not in memo:
            memo[id(a)] = False  # recursion guard (P4 has no recursion; be safe anyway)
            memo[id(a)] = self._stmt_may_exit(a.body)
        return memo[id(a)]

    def _stmt_may_exit(self, s: Any) -> bool:
        if isinstance(s, ir.Exit):
            return True
        if isinstance(s, ir.Block):
            return any(self._stmt_may_exit(x) for x in s.stmts)
        if isinstance(s, ir.If):
            return self._stmt_may_exit(s.then) or (s.other is not None and self._stmt_may_exit(s.other))
        if isinstance(s, ir.SwitchStmt):
            return any(c.body is not None and self._stmt_may_exit(c.body) for c in s.cases)
        if isinstance(s, ir.For):
            return self._stmt_may_exit(s.body)
        if isinstance(s, ir.CallStmt):
            return isinstance(s.call, ir.ActionCall) and self.may_exit(s.call.action)
        return False

    def drain_actions(self, fvars: dict[int, str]) -> None:
        while self.pending_actions:
            a, c = self.pending_actions.pop(0)
            self.compile_action(a, fvars if c is not None else {}, c)

    def compile_action(self, a: ir.ActionDecl, fvars: dict[int, str], control: Optional[ir.ControlDecl] = None) -> None:
        fn = self.action_fn[id(a)]
        avars, binds = self.aliased(control, fvars)
        sc = Scope(vars=avars, frame="F", kind="action", roots={alias for alias, _ in binds})
        params = []
        for p in a.params:
            nm = f"a_{pyattr(p.name)}"
            sc.vars[id(p)] = nm
            params.append(nm)
        outs = [sc.vars[id(p)] for p in a.params if p.direction in ("out", "inout") and not is_composite(p.type)]
        sc.returns = (lambda v: f"return ({', '.join(outs)},)") if outs else (lambda v: "return")
        w = Writer()
        w(f"def {fn}(F{''.join(', ' + p for p in params)}):")
        w.indent()
        body = Writer()
        body.depth = w.depth
        if outs and self.may_exit(a):
            # exit still copies back: hand the caller the current out values with the exception
            body("try:")
            body.indent()
            self.stmts([a.body], sc, body)
            body.dedent()
            body("except _ExitBlock as _xb:")
            body(f"    _xb.vals = ({', '.join(outs)},)")
            body("    raise")
        else:
            self.stmts([a.body], sc, body)
        if outs:
            body(sc.returns(None))
        self.bind_used(w, body.lines, binds, w.depth, sc)
        w.dedent()
        self.w.lines += w.lines
        self.w("")

    def compile_function(self, f: ir.FunctionDecl) -> None:
        fn = self.gname(f, "FN", f.name)
        sc = Scope(vars={}, kind="function")
        params = []
        for p in f.params:
            nm = f"a_{pyattr(p.name)}"
            sc.vars[id(p)] = nm
            params.append(nm)
        outs = [sc.vars[id(p)] for p in f.params if p.direction in ("out", "inout") and not is_composite(p.type)]
        has_value = not isinstance(f.return_type, ir.VoidT)
        if outs:
            sc.returns = lambda v: f"return ({v + ', ' if has_value else ''}{', '.join(outs)},)"
        else:
            sc.returns = lambda v: f"return {v}" if v is not None else "return"
        w = Writer()
        w(f"def {fn}({', '.join(params)}):")
        w.indent()
        self.stmts([f.body], sc, w)
        if outs:
            w(sc.returns("0" if has_value else None))
        w.dedent()
        self.w.lines += w.lines
        self.w("")

    # ------------------------------------------------------------------ whole program
    def compile(self) -> "CompiledCode":
        prog = self.prog
        roles = ir.roles_of(prog.arch)
        missing = [r for r in roles if r not in prog.blocks]
        if missing:
            raise CompileError(f"the package {prog.package!r} lacks {prog.arch} blocks: {', '.join(missing)}")
        for f in prog.functions.values():
            self.compile_function(f)
        for a in prog.actions.values():
            self.action_name(a, None)
        self.drain_actions({})
        role_fn = {}
        done: dict[int, str] = {}
        for c in prog.controls.values():  # every control (sub-controls too), once
            role = next((r for r, b in prog.blocks.items() if b is c), None)
            done[id(c)] = self.compile_control(c, role)
        for role in roles:
            b = prog.blocks[role]
            if isinstance(b, ir.ParserDecl):
                self.cur_role = role
                role_fn[role] = self.compile_parser(b)
                self.cur_role = None
            elif id(b) in done:
                role_fn[role] = done[id(b)]
            else:
                role_fn[role] = self.compile_control(b, role)
        for r in ("parser", "ingress_parser", "egress_parser", "ingress", "egress", "ingress_deparser",
                  "egress_deparser"):
            for v in prog.blocks[r].params if r in prog.blocks else ():
                if is_composite(v.type):  # the pipeline instantiates these per packet
                    self.classes.name(v.type)
        if prog.arch != "v1model":  # the TNA switch builds every intrinsic struct
            for t in prog.types.values():
                if isinstance(t, (ir.StructT, ir.HeaderT)) and "__intrinsic_metadata" in t.annotations:
                    self.classes.name(t)
        src = "\n".join(self.classes.src) + "\n" + self.w.text()
        return CompiledCode(self, src, role_fn)


@dataclass
class CompiledCode:
    compiler: ProgramCompiler
    source: str
    role_fn: dict[str, str]

    def namespace(self, base: dict[str, Any]) -> dict[str, Any]:
        """Execute the generated source in a fresh namespace seeded with ``base`` (each switch
        gets its own classes and functions bound to its own tables and extern state)."""
        code = self.__dict__.get("_code_obj")
        if code is None:
            code = self.__dict__["_code_obj"] = compile(self.source, "<p4sim generated>", "exec")
        ns = dict(base)
        exec(code, ns)
        return ns


def base_namespace(err: dict[str, int]) -> dict[str, Any]:
    """Names every generated module may use."""
    from p4sim.runtime import hashing

    short = err.get("PacketTooShort", 1)
    soob = err.get("StackOutOfBounds", 3)

    def stk_next(s: Any) -> Any:
        if s.n >= s.SIZE:
            raise support.ParserError(soob)
        return s.e[s.n]

    def stk_last(s: Any) -> Any:
        if s.n <= 0:
            raise support.ParserError(soob)
        return s.e[s.n - 1]

    def look(data: bytes, pos: int, nbits: int, w: int) -> int:
        e = pos + w
        if e > nbits:
            raise support.ParserError(short)
        return (int.from_bytes(data[pos >> 3:(e + 7) >> 3], "big") >> ((-e) & 7)) & ((1 << w) - 1)

    return {
        "_new": object.__new__,
        "_ParserError": support.ParserError,
        "_ExitBlock": support.ExitBlock,
        "_AssertFailed": support.AssertFailed,
        "_stk_next": stk_next,
        "_stk_last": stk_last,
        "_look": look,
        "_shl": support.shl,
        "_udiv": support.udiv,
        "_umod": support.umod,
        "_sdiv": support.sdiv,
        "_smod": support.smod,
        "_sat_add_s": support.sat_add_signed,
        "_sat_sub_s": support.sat_sub_signed,
        **{f"_HB_{k}": f for k, f in hashing.ALGORITHMS.items()},
        **{f"_HI_{k}": f for k, f in hashing.ALGORITHMS_INT.items()},
        "_pack_bits": hashing.pack_bits,
        "_tna_colour": lambda c: 3 if c == 2 else c,  # TNA's MeterColor_t: RED is 3
    }
