"""Controls, tables, actions and functions: a frame class and an apply function per control,
a key function per table, a function per action and per P4 function."""
from __future__ import annotations

import re
from typing import Any, Optional

from p4sim.errors import CompileError, Unsupported
from p4sim.frontend import ir
from p4sim.runtime.codegen.base import CompilerBase
from p4sim.runtime.codegen.common import ActionInfo, Scope, TableInfo, Writer
from p4sim.runtime.irwalk import MATCH_KINDS, table_action_refs
from p4sim.runtime.objects import is_composite, pyattr, scalar_width


class ControlCompiler(CompilerBase):
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
        self.declare_locals(c.locals, sc, w)
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
            if k.match_kind not in MATCH_KINDS:
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
        for ref in table_action_refs(t):
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
        if isinstance(s, ir.CallStmt):
            return isinstance(s.call, ir.ActionCall) and self.may_exit(s.call.action)
        return any(self._stmt_may_exit(x) for x in ir.sub_statements(s))

    def drain_actions(self, fvars: dict[int, str]) -> None:
        while self.pending_actions:
            a, c = self.pending_actions.pop(0)
            self.compile_action(a, fvars if c is not None else {}, c)

    @staticmethod
    def bind_params(params: list[ir.Var], sc: Scope) -> tuple[list[str], list[str]]:
        """The Python names of an action's or function's parameters (bound in ``sc``), and those
        of its scalar out/inout parameters, which it returns for the caller to copy out."""
        names = []
        for p in params:
            nm = f"a_{pyattr(p.name)}"
            sc.vars[id(p)] = nm
            names.append(nm)
        outs = [sc.vars[id(p)] for p in params if p.direction in ("out", "inout") and not is_composite(p.type)]
        return names, outs

    def compile_action(self, a: ir.ActionDecl, fvars: dict[int, str], control: Optional[ir.ControlDecl] = None) -> None:
        fn = self.action_fn[id(a)]
        avars, binds = self.aliased(control, fvars)
        sc = Scope(vars=avars, frame="F", kind="action", roots={alias for alias, _ in binds})
        params, outs = self.bind_params(a.params, sc)
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
        params, outs = self.bind_params(f.params, sc)
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
