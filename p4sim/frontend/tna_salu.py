"""The shape of a Tofino stateful ALU compare, checked on a RegisterAction's ``apply``.

A TNA RegisterAction runs on the stage's stateful ALU, whose condition units each compute one
compare of the form ``[-]memory [+|-] [-]phv  op  constant``: one half of the register cell, one
PHV input, one constant (the assembler's ``CmpOP``: a second operand of either kind is refused,
"Can't have more than one ... operand to an SALU compare").  p4sim runs any expression, so
without this check a program that the Tofino back end refuses would run here, and its tests
would prove nothing about the real target (feedback.p4's rate limit written as `now - v >=
interval`, two PHV inputs, passes every p4sim test and stops the assembler; docs/tna-bring-up.md).

Only this rule is checked, because it is the one whose form is certain from the assembler's
source; the back end's other limits (number of compares, outputs, update forms) are not
modelled and are left to bf-p4c.
"""
from __future__ import annotations

from typing import Callable, Iterator, Optional

from p4sim.errors import CompileError, Pos
from p4sim.frontend import ir

RELATIONS = {"==", "!=", "<", "<=", ">", ">="}
# operators the condition unit folds into its one add/subtract, or applies to one operand
LINEAR = {"+", "-", "|+|", "|-|"}


def _path(e: ir.Expr) -> Optional[str]:
    """A stable name for an lvalue-like expression (``meta.x``, ``v.sum``), None otherwise."""
    if isinstance(e, ir.VarRef):
        return e.var.name
    if isinstance(e, ir.Member):
        base = _path(e.base)
        return None if base is None else f"{base}.{e.name}"
    return None


def _root(e: ir.Expr) -> Optional[ir.Var]:
    while isinstance(e, (ir.Member, ir.Slice, ir.Cast)):
        e = e.operand if isinstance(e, ir.Cast) else e.base
    return e.var if isinstance(e, ir.VarRef) else None


def _leaves(e: ir.Expr) -> Iterator[ir.Expr]:
    """The operands of one compare side, through the linear operators, casts and masks."""
    if isinstance(e, ir.Binary) and e.op in LINEAR:
        yield from _leaves(e.left)
        yield from _leaves(e.right)
    elif isinstance(e, ir.Binary) and e.op == "&" and isinstance(e.right, ir.Literal):
        yield from _leaves(e.left)          # a constant mask is part of the operand
    elif isinstance(e, ir.Unary) and e.op == "-":
        yield from _leaves(e.operand)
    elif isinstance(e, ir.Cast):
        yield from _leaves(e.operand)
    else:
        yield e


def _compares(cond: ir.Expr) -> Iterator[ir.Binary]:
    """The relational compares of a condition (``&&``, ``||`` and ``!`` combine compare units)."""
    if isinstance(cond, ir.Binary) and cond.op in ("&&", "||"):
        yield from _compares(cond.left)
        yield from _compares(cond.right)
    elif isinstance(cond, ir.Unary) and cond.op == "!":
        yield from _compares(cond.operand)
    elif isinstance(cond, ir.Binary) and cond.op in RELATIONS:
        yield cond


def _statements(s: Optional[ir.Stmt]) -> Iterator[ir.Stmt]:
    """Every statement of an apply body, nested blocks and both branches of an ``if`` included."""
    if s is None:
        return
    yield s
    if isinstance(s, ir.Block):
        for t in s.stmts:
            yield from _statements(t)
    elif isinstance(s, ir.If):
        yield from _statements(s.then)
        yield from _statements(s.other)


def check_register_action(act: ir.ActionDecl, value: ir.Var,
                          error: Callable[[str, Optional[Pos]], CompileError]) -> None:
    """Refuse a compare in ``act`` (a RegisterAction's apply, ``value`` its ``inout`` cell) with
    more than one register operand or more than one PHV operand."""
    stmts = list(_statements(act.body))
    inner = {t.var for t in stmts if isinstance(t, ir.VarDecl)}
    for cond in (t.cond for t in stmts if isinstance(t, ir.If)):
        for cmp in _compares(cond):
            leaves = [x for x in (*_leaves(cmp.left), *_leaves(cmp.right))
                      if not isinstance(x, ir.Literal)]
            if any(_root(x) in inner for x in leaves):
                continue            # a local of the apply: its value's form is bf-p4c's to judge
            memory: set[str] = set()
            phv: set[str] = set()
            for leaf in leaves:
                (memory if _root(leaf) is value else phv).add(_path(leaf) or repr(leaf))
            for kind, names in (("register", memory), ("PHV", phv)):
                if len(names) > 1:
                    raise error(
                        f"a Tofino stateful ALU compare takes one {kind} operand, this one has "
                        f"{len(names)} ({', '.join(sorted(names))}); compute the difference "
                        f"outside the RegisterAction (bfas: \"Can't have more than one "
                        f"{'memory' if kind == 'register' else 'phv'} operand to an SALU "
                        f"compare\")", cmp.pos)

