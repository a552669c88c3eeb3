"""Parsers: one Python function per parser, its states selected by binary search, its
transitions and select expressions."""
from __future__ import annotations

from typing import Any

from p4sim.frontend import ir
from p4sim.runtime.codegen.base import CompilerBase
from p4sim.runtime.codegen.common import Scope, Writer
from p4sim.runtime.objects import pyattr


class ParserCompiler(CompilerBase):
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
        self.declare_locals(p.locals, sc, w)
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
        if isinstance(t, str):
            w(self.goto(t, sid))
            return
        pre: list[str] = []
        keys = self.select_keys(t.keys, sc, pre)
        self.flush(pre, w)
        first = True
        for case in t.cases:
            conds = self.select_conds(keys, case.keysets)
            w(f"{'if' if first else 'elif'} {' and '.join(conds) or 'True'}:")
            w(f"    {self.goto(case.next_state, sid)}")
            first = False
        w(f"{'else:' if not first else 'if True:'}")
        w(f"    raise _ParserError({self.error_code('NoMatch')})")



