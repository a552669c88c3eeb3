"""BMv2's rule that no path through a control applies the same table twice.

p4c-bm2-ss lays a control out as a graph of tables and conditions in which each table is one
node, so a table applied twice on one path would need an edge from the table back to itself; it
refuses such programs ("Program can not be implemented on this target since it contains a path
from table X back to itself").  p4sim could run them, which would be a program that passes here
and does not compile for the switch, so the same check runs on every v1model control block.

Written by hand because it needs only the structured IR: for each statement, the set of tables
some path may already have applied when it reaches that point.  Branches start from the set
before them and join by union; a path that ends in ``exit`` or ``return`` joins nothing.
"""
from __future__ import annotations

import dataclasses
from typing import Iterator, Optional

from p4sim.errors import CompileError
from p4sim.frontend import ir

Applied = frozenset  # of id(TableDecl)


def check_control(control: ir.ControlDecl) -> None:
    """Raise CompileError at the second apply of a table some path applies twice."""
    _stmt(control.apply, frozenset())


def _applies(e: object) -> Iterator[ir.ApplyResult]:
    """Every ``t.apply()`` in an expression, in evaluation order (left to right)."""
    if isinstance(e, ir.ApplyResult):
        yield e
        return
    if not isinstance(e, ir.Expr) or not dataclasses.is_dataclass(e):
        return
    for f in dataclasses.fields(e):
        v = getattr(e, f.name)
        items = v.values() if isinstance(v, dict) else v if isinstance(v, (list, tuple)) else (v,)
        for item in items:
            if isinstance(item, ir.Expr):
                yield from _applies(item)


def _expr(e: Optional[ir.Expr], before: Applied) -> Applied:
    now = before
    if e is None:
        return now
    for a in _applies(e):
        if id(a.table) in now:
            name = getattr(a.table, "qualified_name", None) or a.table.name
            raise CompileError("Program can not be implemented on this target since it contains a "
                               f"path from table {name} back to itself (BMv2 applies each table "
                               "at most once per path)", a.pos or e.pos)
        now = now | {id(a.table)}
    return now


def _join(*sets: Optional[Applied]) -> Optional[Applied]:
    live = [s for s in sets if s is not None]
    return frozenset().union(*live) if live else None


def _stmt(s: ir.Stmt, before: Applied) -> Optional[Applied]:
    """The tables applied on some path from ``s``'s start to its end (None: no path gets there)."""
    if isinstance(s, ir.Block):
        now: Optional[Applied] = before
        for x in s.stmts:
            if now is None:
                break  # unreachable after exit/return
            now = _stmt(x, now)
        return now
    if isinstance(s, ir.If):
        now = _expr(s.cond, before)
        return _join(_stmt(s.then, now), _stmt(s.other, now) if s.other is not None else now)
    if isinstance(s, ir.SwitchStmt):
        now = _expr(s.subject, before)
        ends = [_stmt(c.body, now) for c in s.cases if c.body is not None]
        return _join(now, *ends)  # `now`: no label matched (or an action without a case)
    if isinstance(s, ir.For):
        now = before
        for x in s.init:
            now = _stmt(x, now) if now is not None else None
        if now is None:
            return None
        once = _stmt(s.body, _expr(s.cond, now))
        if once is not None:
            _stmt(s.body, _expr(s.cond, once))  # the back edge: a second iteration
        return _join(now, once)
    if isinstance(s, (ir.Exit, ir.Return)):
        if isinstance(s, ir.Return):
            _expr(s.value, before)
        return None
    if isinstance(s, ir.Assign):
        return _expr(s.rhs, _expr(s.lhs, before))
    if isinstance(s, ir.CallStmt):
        return _expr(s.call, before)
    if isinstance(s, ir.VarDecl):
        return _expr(s.init, before)
    return before  # Empty, Break, Continue
