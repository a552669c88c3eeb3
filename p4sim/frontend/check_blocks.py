"""Parsers, controls (including controls inlined into controls) and statements."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Optional, Union

from lark import Tree

from p4sim.errors import CompileError, Unsupported
from p4sim.frontend import ir, tna_salu
from p4sim.frontend.check_tables import TableChecker
from p4sim.frontend.symbols import (V1MODEL_BLOCK_KINDS, ConstSym, Node, Scope, Sig, SubControl,
                                    TypeVar, same_type, type_name)

# TNA externs declared by p4sim's tna.p4 that p4sim does not run: refused where instantiated.
TNA_UNMODELLED = {
    "ParserCounter": "parser counters", "ParserPriority": "parser priorities",
    "Lpf": "low-pass filters", "DirectLpf": "low-pass filters", "Wred": "WRED",
    "DirectWred": "WRED", "RegisterParam": "register parameters",
    "ActionProfile": "action profiles", "ActionSelector": "action selectors",
}


def tna_check_register_type(chk: Any, t: Any, node: Any) -> None:
    """A Tofino stateful ALU works on bit<1>, 8/16/32-bit cells or a pair of equal 8/16/32-bit
    halves (the "paired" register), nothing wider."""
    if isinstance(t, TypeVar) or t is None:
        return
    if isinstance(t, ir.BitT) and t.width in (1, 8, 16, 32):
        return
    if isinstance(t, ir.StructT) and len(t.fields) == 2 and all(
            isinstance(f.type, ir.BitT) and f.type.width in (8, 16, 32) for f in t.fields) \
            and t.fields[0].type == t.fields[1].type:
        return
    raise chk.err(f"a Tofino Register holds bit<1>, bit<8>, bit<16>, bit<32> or a struct of "
                  f"two equal 8/16/32-bit fields, not {type_name(t)}", node)


class BlockChecker(TableChecker):
    """Checks parsers, controls, actions, functions and statements."""

    def decl_instantiation(self, d: Tree, scope: Optional[Scope] = None,
                           locals_out: Optional[list] = None) -> None:
        scope = scope or self.global_scope
        annots, tref, args, name_node = d.children
        a = self.annotations(annots)
        tname = self.type_head(tref)
        if tname is not None and tname in self.block_types \
                and self.block_types[tname].kind == "package":
            if scope is not self.global_scope:
                raise self.err("a package can only be instantiated at the top level", d)
            if tname in ("Pipeline", "Switch") and self.arch_is_tna():
                self.tna_package_instance(tname, args, name_node, d)
                return
            self.package_instance(tname, args, name_node, d)
            return
        if tname is not None and tname in self.controls and locals_out is not None \
                and self.cur_control is not None:
            self.declare_subcontrol(d, tname, scope)
            return
        if tname is not None and tname in self.parsers and locals_out is not None \
                and getattr(self, "cur_parser", None) is not None:
            self.declare_subparser(d, tname, scope)
            return
        if tname is not None and (tname in self.parsers or tname in self.controls):
            raise self.unsupported(f"instantiating parser/control '{tname}' here (controls "
                                   "may be instantiated inside controls only)", d)
        t = self.resolve_type(tref)
        if not isinstance(t, ir.ExternT):
            raise self.err(f"cannot instantiate {type_name(t)}", tref)
        if t.name in ("action_profile", "action_selector"):
            raise self.unsupported(f"{t.name} (action profiles and selectors)", d)
        if t.name in ("packet_in", "packet_out"):
            raise self.err(f"cannot instantiate {t.name}", d)
        if t.name == "register" and t.type_args and not isinstance(t.type_args[0], ir.BitT):
            # p4c-bm2-ss (simpleSwitch.cpp) refuses these too
            raise self.err("only registers with bit or int types are supported by BMv2", tref)
        if t.name in TNA_UNMODELLED and self.arch_is_tna():
            raise self.unsupported(f"the TNA extern {t.name} ({TNA_UNMODELLED[t.name]})", d)
        if t.name in ("Register", "DirectRegister") and self.arch_is_tna():
            tna_check_register_type(self, t.type_args[0] if t.type_args else None, tref)
        et = self.extern_types[t.name]
        name = self.ident(name_node)
        arg_trees = [c for c in args.children]
        sig = next((s for s in et.ctors if len(s.params) == len(arg_trees)), None)
        if sig is None:
            raise self.err(f"wrong number of constructor arguments for {t.name}", args)
        bindings = {n: ta for n, ta in zip(et.type_params, t.type_args)}
        ctor_args: list[Union[int, str]] = []
        for prm, at in zip(sig.params, arg_trees):
            if isinstance(at, Tree) and at.data == "named_arg":
                raise self.unsupported("named constructor arguments", at)
            pt = self.subst(prm.type, bindings)
            if isinstance(pt, ir.ExternT):  # TNA: an extern instance (RegisterAction(reg))
                ctor_args.append(self.extern_ctor_arg(at, scope, pt))
                continue
            if isinstance(pt, ir.StructT):  # TNA: a paired register's initial value
                ctor_args.append(self.struct_ctor_arg(at, scope, pt))
                continue
            e = self.coerce(self.expr(at, scope, pt), pt, at)
            if not isinstance(e, ir.Literal):
                raise self.err("constructor arguments must be compile-time constants", at)
            if isinstance(e.type, ir.EnumT):
                ctor_args.append(e.type.members[e.type.values.index(e.value)
                                                if e.type.values else e.value])
            else:
                ctor_args.append(int(e.value))
        inst = ir.ExternInstance(name, self.qualify(name, a), t.name, list(t.type_args),
                                 ctor_args, a, self.pos(d))
        self.declare(scope, name, inst, name_node)
        if locals_out is not None:
            locals_out.append(inst)
        else:
            self.externs.append(inst)

    def package_instance(self, pkg: str, args: Tree, name_node: Node, d: Tree) -> None:
        if pkg != "V1Switch":
            raise self.unsupported(f"package '{pkg}' (p4sim runs V1Switch)", d)
        if self.package is not None:
            raise self.err("a second package instance", d)
        arg_trees = list(args.children)
        if len(arg_trees) != len(ir.V1MODEL_ROLES):
            raise self.err(f"V1Switch takes {len(ir.V1MODEL_ROLES)} blocks, "
                           f"not {len(arg_trees)}", args)
        sig = self.block_types[pkg].sig
        for role, kind, at, prm in zip(ir.V1MODEL_ROLES, V1MODEL_BLOCK_KINDS, arg_trees,
                                       sig.params):
            if not (isinstance(at, Tree) and at.data == "ctor_expr"):
                raise self.unsupported("package arguments other than block instantiations "
                                       "like MyIngress()", at)
            tref, cargs = at.children
            bname = self.type_head(tref)
            block = self.parsers.get(bname) if kind == "parser" else self.controls.get(bname)
            if kind == "control" and bname in getattr(self, "templates", ()):
                # a control with constructor parameters: checked now with these arguments
                block = self.check_control(self.control_trees[bname],
                                           self.ctor_consts(self.control_trees[bname], cargs,
                                                            self.global_scope))
                self.controls[bname] = block
            elif kind == "parser" and bname in getattr(self, "parser_trees", {}) \
                    and self.ctor_params(self.parser_trees[bname]):
                raise self.unsupported("a V1Switch parser block with constructor parameters", at)
            elif cargs.children:
                raise self.err(f"'{bname}' has no constructor parameters", cargs)
            if block is None:
                other = self.controls.get(bname) or self.parsers.get(bname)
                if other is not None:
                    raise self.err(f"the {role} block of V1Switch must be a {kind}, "
                                   f"'{bname}' is not", at)
                raise self.err(f"unknown {kind} '{bname}'", at)
            expected = self.block_types[prm.type.name].sig if isinstance(prm.type, ir.ExternT) \
                and prm.type.name in self.block_types else None
            if expected is not None and len(expected.params) != len(block.params):
                raise self.err(f"'{bname}' has {len(block.params)} parameters; the V1Switch "
                               f"{role} block needs {len(expected.params)}", at)
            if expected is not None:
                for ep, bp in zip(expected.params, block.params):
                    if (ep.direction or None) != (bp.direction or None):
                        raise self.err(f"parameter '{bp.name}' of '{bname}' must be "
                                       f"'{ep.direction or 'directionless'}' for the V1Switch "
                                       f"{role} block", at)
            self.blocks[role] = block
        self.package = pkg

    # ------------------------------------------------------------------ TNA
    def arch_is_tna(self) -> bool:
        """True once <tna.p4>/<t2na.p4> has been included (its Pipeline package is declared)."""
        bt = self.block_types.get("Pipeline")
        return bt is not None and "TnaIH" in bt.sig.type_params

    def extern_ctor_arg(self, at: Tree, scope: Scope, pt: ir.ExternT) -> ir.ExternInstance:
        node = self.value_view(at, scope) if isinstance(at, Tree) else at
        sym = self.expr_symbol(node, scope) if isinstance(node, Tree) and \
            node.data in ("name_ref", "top_name_ref") else None
        if not isinstance(sym, ir.ExternInstance) or sym.extern != pt.name:
            raise self.err(f"expected a {pt.name} instance here", at)
        for want, have in zip(pt.type_args, sym.type_args):
            if not isinstance(want, TypeVar) and not same_type(want, have):
                raise self.err(f"{sym.name} is a {pt.name} of {type_name(have)}, "
                               f"not {type_name(want)}", at)
        return sym

    def struct_ctor_arg(self, at: Tree, scope: Scope, pt: ir.StructT) -> int:
        """A struct-typed constant (``{0, 0}``) as one int, first field in the high bits."""
        e = self.coerce(self.expr(at, scope, pt), pt, at)
        items = e.fields if isinstance(e, ir.StructExpr) else None
        if items is None or not all(isinstance(x, ir.Literal) for x in items.values()):
            raise self.err("constructor arguments must be compile-time constants", at)
        acc = 0
        for f in pt.fields:
            w = f.type.width if isinstance(f.type, ir.BitT) else 1
            acc = (acc << w) | (int(items[f.name].value) & ((1 << w) - 1))
        return acc

    def abstract_instance(self, c: Tree, scope: Scope, target: ir.ControlDecl,
                          key_prefix: str) -> None:
        """``RegisterAction<T, I, U>(reg) name = { void apply(inout T value, out U rv) {...} };``

        The instance is declared like any extern instance; ``apply`` is checked as an action of
        the enclosing control (its body may read the control's variables and constants, as the
        stateful ALU reads PHV fields), with ``value``/``rv`` as directional parameters."""
        annots, tref, args, name_node, *decls = c.children
        inst_tree = Tree("instantiation", [annots, tref, args, name_node], c.meta)
        t = self.resolve_type(tref)
        if not isinstance(t, ir.ExternT) or t.name not in self.extern_types:
            raise self.err("only extern instances can implement abstract methods", tref)
        et = self.extern_types[t.name]
        if not et.abstracts:
            raise self.err(f"{t.name} has no abstract methods to implement", c)
        if t.name not in ("RegisterAction", "DirectRegisterAction"):
            raise self.unsupported(f"{t.name} instances", c)
        self.decl_instantiation(inst_tree, scope, target.locals)
        inst = target.locals[-1]
        assert isinstance(inst, ir.ExternInstance)
        bindings = dict(zip(et.type_params, t.type_args))
        reg = inst.ctor_args[0]
        if isinstance(reg, ir.ExternInstance) and reg.type_args and t.type_args and \
                not same_type(reg.type_args[0], t.type_args[0]):
            raise self.err(f"RegisterAction<{type_name(t.type_args[0])}, ...> on "
                           f"{reg.name}, a Register of {type_name(reg.type_args[0])}", tref)
        for d in decls:
            if not (isinstance(d, Tree) and d.data == "function_decl"):
                raise self.err("only the abstract methods may be declared here", d)
            mname = self.ident(d.children[2])
            sig = et.abstracts.get(mname)
            if sig is None:
                raise self.err(f"{t.name} has no abstract method '{mname}'", d.children[2])
            if mname in inst.methods:
                raise self.err(f"'{mname}' is implemented twice", d.children[2])
            params = self.params(self.child(d, "params"))
            want = [self.subst(p.type, bindings) for p in sig.params]
            if not 1 <= len(params) <= len(sig.params):
                raise self.err(f"{mname} takes {len(sig.params)} parameters "
                               f"({', '.join(p.direction + ' ' + p.name for p in sig.params)})", d)
            for p, sp, wt in zip(params, sig.params, want):
                if (p.direction or None) != sp.direction:
                    raise self.err(f"parameter '{p.name}' of {mname} must be '{sp.direction}'", d)
                if not same_type(p.type, wt):
                    raise self.err(f"parameter '{p.name}' of {mname} must have type "
                                   f"{type_name(wt)}, not {type_name(p.type)}", d)
            ptrees = self.children(self.child(d, "params"), "param")
            vars_ = self.make_vars(params, ptrees)
            act = ir.ActionDecl(f"{inst.name}.{mname}", f"{inst.qualified_name}.{mname}", vars_,
                                ir.Block(self.pos(d), []), {}, self.pos(d))
            inner = Scope(scope)
            for v in vars_:
                self.declare(inner, v.name, v, d)
            saved = self.cur_action
            self.cur_action = True
            try:
                act.body = self.block(d.children[-1], inner)
            finally:
                self.cur_action = saved
            if mname == "apply" and vars_:
                tna_salu.check_register_action(act, vars_[0], CompileError)
            inst.methods[mname] = act
        if "apply" not in inst.methods:
            raise self.err(f"{inst.name} must implement apply(inout value, out rv)", c)

    def tna_package_instance(self, pkg: str, args: Tree, name_node: Node, d: Tree) -> None:
        """``Pipeline(ip(), ig(), id(), ep(), eg(), ed()) pipe;`` and ``Switch(pipe) main;``."""
        arg_trees = list(args.children)
        if pkg == "Pipeline":
            if len(arg_trees) == len(ir.TNA_ROLES) + 1:
                raise self.unsupported("a ghost thread (Pipeline's 7th block): p4sim does not "
                                       "run Tofino2's ghost threads", arg_trees[-1])
            if len(arg_trees) != len(ir.TNA_ROLES):
                raise self.err(f"Pipeline takes {len(ir.TNA_ROLES)} blocks, not "
                               f"{len(arg_trees)}", args)
            sig = self.block_types[pkg].sig
            blocks: dict = {}
            for role, kind, at, prm in zip(ir.TNA_ROLES, ir.TNA_ROLE_KINDS, arg_trees, sig.params):
                blocks[role] = self._package_block(at, role, kind, prm, "Pipeline", optional=True)
            name = self.ident(name_node)
            if name in self.pipelines:
                raise self.err(f"'{name}' is already declared", name_node)
            self.pipelines[name] = blocks
            self.declare(self.global_scope, name, ("pipeline", name), name_node)
            return
        # Switch
        if self.package is not None:
            raise self.err("a second package instance", d)
        if len(arg_trees) != 1:
            raise self.unsupported("a Switch of more than one pipe (p4sim runs one pipe; give "
                                   "Switch a single Pipeline)", args)
        at = arg_trees[0]
        node = at
        if isinstance(at, Tree) and at.data in ("name_ref", "top_name_ref"):
            sym = self.expr_symbol(at, self.global_scope)
            if not (isinstance(sym, tuple) and sym[0] == "pipeline"):
                raise self.err("Switch takes a Pipeline instance", at)
            blocks = self.pipelines[sym[1]]
        elif isinstance(at, Tree) and at.data == "ctor_expr" and \
                self.type_head(at.children[0]) == "Pipeline":
            raise self.unsupported("a Pipeline constructed inside Switch(...) (declare it: "
                                   "Pipeline(...) pipe; Switch(pipe) main;)", node)
        else:
            raise self.err("Switch takes a Pipeline instance", at)
        self.blocks.update(blocks)
        self.package = pkg
        self._prefix_pipe_names(sym[1], blocks)
        t2 = self.global_scope.lookup("__p4sim_t2na")
        tgt = self.global_scope.lookup("__p4sim_tofino_target")
        self.arch = "t2na" if isinstance(t2, ConstSym) and t2.lit.value else "tna"
        self.tofino_target = int(tgt.lit.value) if isinstance(tgt, ConstSym) else 1

    def _prefix_pipe_names(self, pipe: str, blocks: dict) -> None:
        """bf-p4c names a TNA program's tables and extern instances after the Pipeline instance
        they belong to (its P4Runtime arch handler prefixes them: ``pipe.Ingress.t``), while
        actions keep their control-qualified names; p4sim's names follow, so P4Info names and
        ids are the ones bf-p4c writes."""
        seen: set[int] = set()

        def rename(obj: Any) -> None:
            if id(obj) not in seen:
                seen.add(id(obj))
                obj.qualified_name = f"{pipe}.{obj.qualified_name}"

        for block in blocks.values():
            for t in getattr(block, "tables", {}).values():
                rename(t)
            for loc in block.locals:
                if isinstance(loc, ir.ExternInstance):
                    rename(loc)
        for x in self.externs:
            rename(x)

    def _package_block(self, at: Tree, role: str, kind: str, prm: Any, pkg: str,
                       optional: bool) -> Any:
        """One block argument of a package: checked against the block type's parameters (with
        ``optional``: trailing @optional parameters may be left out, as p4c allows)."""
        if not (isinstance(at, Tree) and at.data == "ctor_expr"):
            raise self.unsupported("package arguments other than block instantiations "
                                   "like MyIngress()", at)
        tref, cargs = at.children
        bname = self.type_head(tref)
        block = self.parsers.get(bname) if kind == "parser" else self.controls.get(bname)
        if kind == "control" and bname in getattr(self, "templates", ()):
            block = self.check_control(self.control_trees[bname],
                                       self.ctor_consts(self.control_trees[bname], cargs,
                                                        self.global_scope))
            self.controls[bname] = block
        elif cargs.children:
            raise self.unsupported(f"constructor arguments of a {pkg} block", cargs)
        if block is None:
            other = self.controls.get(bname) or self.parsers.get(bname)
            if other is not None:
                raise self.err(f"the {role} block of {pkg} must be a {kind}, '{bname}' is not", at)
            raise self.err(f"unknown {kind} '{bname}'", at)
        if any(block is b for p in self.pipelines.values() for b in p.values()):
            raise self.unsupported(f"'{bname}' used by two pipes or roles", at)
        expected = self.block_types[prm.type.name].sig if isinstance(prm.type, ir.ExternT) \
            and prm.type.name in self.block_types else None
        if expected is None:
            return block
        n_req = len(expected.params) if not optional else \
            sum(1 for i, p in enumerate(self._block_param_annots(prm.type.name))
                if "optional" not in p)
        if not n_req <= len(block.params) <= len(expected.params):
            raise self.err(f"'{bname}' has {len(block.params)} parameters; the {pkg} {role} "
                           f"block takes {n_req}..{len(expected.params)}", at)
        for ep, bp in zip(expected.params, block.params):
            if (ep.direction or None) != (bp.direction or None):
                raise self.err(f"parameter '{bp.name}' of '{bname}' must be "
                               f"'{ep.direction or 'directionless'}' for the {pkg} {role} "
                               "block", at)
            et = ep.type
            if isinstance(et, (ir.StructT, ir.HeaderT)) and et is not bp.type:
                raise self.err(f"parameter '{bp.name}' of '{bname}' must have type {et.name} "
                               f"(the {pkg} {role} block's '{ep.name}')", at)
            if isinstance(et, ir.ExternT) and (not isinstance(bp.type, ir.ExternT)
                                               or bp.type.name != et.name):
                raise self.err(f"parameter '{bp.name}' of '{bname}' must be a {et.name}", at)
        return block

    def _block_param_annots(self, name: str) -> list:
        return self.__dict__.setdefault("block_param_annots", {}).get(name, [])

    def decl_action_decl(self, d: Tree, scope: Optional[Scope] = None) -> ir.ActionDecl:
        scope = scope or self.global_scope
        annots, name_node, params, body = d.children
        a = self.annotations(annots)
        name = self.ident(name_node)
        ptrees = self.children(params, "param")
        prms = self.params(params)
        seen_data = False
        for prm, pt in zip(prms, ptrees):
            if prm.direction is None:
                seen_data = True
            elif seen_data:
                raise self.err("directional action parameters must come before action data "
                               "parameters", pt)
            if prm.direction is None and not isinstance(prm.type, (ir.BitT, ir.BoolT, ir.EnumT)):
                raise self.unsupported(f"action data of type {type_name(prm.type)}", pt)
        vars_ = self.make_vars(prms, ptrees)
        act = ir.ActionDecl(name, self.qualify(name, a), vars_, ir.Block(self.pos(body), []), a,
                            self.pos(d))
        self.declare(scope, name, act, name_node)
        inner = Scope(scope)
        for v in vars_:
            self.declare(inner, v.name, v, d)
        saved = self.cur_action
        self.cur_action = True
        try:
            act.body = self.block(body, inner)
        finally:
            self.cur_action = saved
        if scope is self.global_scope:
            self.actions[name] = act
        return act

    def decl_function_decl(self, d: Tree, scope: Optional[Scope] = None) -> ir.FunctionDecl:
        scope = scope or self.global_scope
        if self.child(d, "type_params") is not None:
            raise self.unsupported("generic functions", self.child(d, "type_params"))
        annots, tref, name_node = d.children[:3]
        params = self.child(d, "params")
        body = d.children[-1]
        ret = self.resolve_type(tref, allow_void=True)
        name = self.ident(name_node)
        ptrees = self.children(params, "param")
        prms = self.params(params)
        vars_ = self.make_vars(prms, ptrees)
        for v in vars_:
            if v.direction is None:
                v.direction = "in"
        fn = ir.FunctionDecl(name, vars_, ret, ir.Block(self.pos(body), []), self.pos(d))
        self.declare(scope, name, fn, name_node)
        inner = Scope(scope)
        for v in vars_:
            self.declare(inner, v.name, v, d)
        saved = self.cur_function
        self.cur_function = fn
        try:
            fn.body = self.block(body, inner)
        finally:
            self.cur_function = saved
        if not isinstance(ret, ir.VoidT) and not _always_returns(fn.body):
            raise self.err(f"function '{name}' does not return a value on every path", d)
        self.functions[name] = fn
        return fn

    def decl_parser_decl(self, d: Tree) -> None:
        annots = d.children[0]
        name_node = self.child(d, "decl_name")
        name = self.ident(name_node)
        if self.child(d, "type_params") is not None:
            raise self.unsupported("generic parsers", self.child(d, "type_params"))
        if name in self.parsers or name in self.controls or name in self.types:
            raise self.err(f"'{name}' is already declared", name_node)
        self.__dict__.setdefault("parser_trees", {})[name] = d
        params = self.child(d, "params")
        ptrees = self.children(params, "param")
        vars_ = self.make_vars(self.params(params), ptrees)
        pd = ir.ParserDecl(name, vars_, [], {}, self.annotations(annots), self.pos(d))
        if self.ctor_params(d):
            # only instantiated inside other parsers, where it is checked with its arguments
            self.parsers[name] = pd
            return
        scope = Scope(self.global_scope)
        for v in vars_:
            self.declare(scope, v.name, v, d)
        saved = (self.prefix, self.in_parser, getattr(self, "cur_parser", None))
        self.prefix, self.in_parser, self.cur_parser = self.qualify(name, pd.annotations) + ".", True, pd
        try:
            states = []
            for c in d.children:
                if not isinstance(c, Tree):
                    continue
                if c.data == "const_decl":
                    self.decl_const_decl(c, scope)
                elif c.data == "var_decl":
                    pd.locals.append(self.var_decl(c, scope))
                elif c.data == "instantiation":
                    self.decl_instantiation(c, scope, pd.locals)
                elif c.data == "value_set_decl":
                    raise self.unsupported("parser value sets (value_set)", c)
                elif c.data == "parser_state":
                    states.append(c)
            state_names = {self.ident(s.children[1]) for s in states}
            for s in states:
                pieces = self.parser_state(s, scope, state_names)
                if pieces[0].name in pd.states:
                    raise self.err(f"duplicate state '{pieces[0].name}'", s)
                for st in pieces:
                    pd.states[st.name] = st
        finally:
            self.prefix, self.in_parser, self.cur_parser = saved
        if "start" not in pd.states:
            raise self.err(f"parser '{name}' has no 'start' state", d)
        self.parsers[name] = pd

    def parser_state(self, s: Tree, scope: Scope, state_names: set[str]) -> list[ir.ParserState]:
        """The state, split where it applies a sub-parser: the part before the call goes to the
        sub-parser's (inlined, renamed) start state, whose accept goes on to the rest."""
        name_node = s.children[1]
        name = self.ident(name_node)
        if name in ("accept", "reject"):
            raise self.err(f"state '{name}' is predefined", name_node)
        inner = Scope(scope)
        stmts: list[ir.Stmt] = []
        pieces: list[ir.ParserState] = []
        cur = name
        transition: Union[str, ir.Select] = "reject"
        for c in s.children[2:]:
            if isinstance(c, Tree) and c.data == "goto_state":
                transition = self._state_ref(c.children[0], state_names)
            elif isinstance(c, Tree) and c.data == "goto_select":
                transition = self.select(c.children[0], inner, state_names)
            elif isinstance(c, Tree):
                sub = self._subparser_apply(c, inner)
                if sub is not None:
                    inst, arg_nodes = sub
                    k = len(pieces)
                    after = f"{cur}${inst.name}${k}$after"
                    states, copy_in, copy_out = self.inline_subparser(inst, arg_nodes, inner, c,
                                                                      f"{cur}${inst.name}${k}$", after)
                    pieces.append(ir.ParserState(cur, stmts + copy_in, states[0].name, self.pos(s)))
                    pieces += states
                    cur, stmts = after, list(copy_out)
                    continue
                st = self.stmt(c, inner)
                if st is not None:
                    stmts.append(st)
        pieces.append(ir.ParserState(cur, stmts, transition, self.pos(s)))
        return pieces

    def _direct_apply(self, callee: Tree, kind: str) -> Optional[tuple[str, list]]:
        """(type name, argument nodes) if ``callee`` is ``Type.apply(...)`` of a control
        (``kind`` "control") or parser type."""
        if callee.data != "call" or callee.children[0].data != "type_member":
            return None
        tn, member = callee.children[0].children
        tname = self.ident(tn)
        if self.ident(member) != "apply":
            return None
        if tname not in (self.control_trees if kind == "control" else getattr(self, "parser_trees", {})):
            return None
        return tname, list(callee.children[1].children)

    def _fresh_name(self, base: str) -> str:
        used = self.__dict__.setdefault("fresh_names", set())
        name, k = base, 0
        while name in used:
            name, k = f"{base}_{k}", k + 1
        used.add(name)
        return name

    def _subparser_apply(self, c: Tree, scope: Scope) -> Optional[tuple[Any, list]]:
        """(instance, argument nodes) if statement ``c`` is ``inst.apply(...)`` of a sub-parser
        (or ``Parser.apply(...)``, which p4c turns into an instance there)."""
        if c.data != "call_stmt" or c.children[1].data != "call":
            return None
        direct = self._direct_apply(c.children[1], "parser")
        if direct is not None:
            tname, arg_nodes = direct
            tree = self.parser_trees[tname]
            if self.ctor_params(tree):
                raise self.err(f"'{tname}' has constructor parameters: instantiate it", c)
            return SubParser(self._fresh_name(tname + "_inst"), tree,
                             self.params(self.child(tree, "params")), {}, self.pos(c)), arg_nodes
        head = self.value_view(c.children[1].children[0], scope)
        if head.data != "member" or head.children[0].data not in ("name_ref", "top_name_ref"):
            return None
        sym = self.expr_symbol(head.children[0], scope)
        if not isinstance(sym, SubParser):
            return None
        if self.ident(head.children[1]) != "apply":
            raise self.err("parsers only have 'apply'", head.children[1])
        return sym, list(c.children[1].children[1].children)

    def declare_subparser(self, d: Tree, tname: str, scope: Scope) -> None:
        annots, _tref, args, name_node = d.children
        tree = self.parser_trees[tname]
        inst = SubParser(self.ident(name_node), tree, self.params(self.child(tree, "params")),
                         self.ctor_consts(tree, args, scope), self.pos(d))
        self.declare(scope, inst.name, inst, name_node)

    def inline_subparser(self, inst: "SubParser", arg_nodes: list, scope: Scope, n: Tree,
                         prefix: str, after: str) -> tuple[list[ir.ParserState], list[ir.Stmt], list[ir.Stmt]]:
        """One apply of a sub-parser, inlined as p4c does: copy-in assignments, its states
        (renamed with ``prefix``; accept goes to ``after``, reject stays reject) and the
        copy-out assignments that ``after`` starts with.  Checked again for every apply, so
        each apply site has its own states and variables."""
        pd = self.cur_parser
        sig = Sig(inst.name, [], inst.params, ir.VoidT())
        args, dirs, _ = self.bind_args([sig], arg_nodes, [], {}, scope, n, f"{inst.name}.apply")
        pos = self.pos(n)
        sub_scope = Scope(self.global_scope)
        for cname, lit in inst.consts.items():
            sub_scope.names[cname] = ConstSym(lit)
        copy_in: list[ir.Stmt] = []
        copy_out: list[ir.Stmt] = []
        for prm, a in zip(inst.params, args):
            if isinstance(prm.type, ir.ExternT):  # packet_in: the same packet
                sub_scope.names[prm.name] = a.var if isinstance(a, ir.VarRef) else a
                continue
            v = ir.Var(f"{prefix}{prm.name}", prm.type, "local", None, pos)
            pd.locals.append(ir.VarDecl(pos, v, None))
            sub_scope.names[prm.name] = v
            if prm.direction != "out":
                copy_in.append(ir.Assign(pos, ir.VarRef(v.type, pos, v), a))
            else:
                copy_in.append(ir.Assign(pos, ir.VarRef(v.type, pos, v), _fresh(v.type, pos)))
            if prm.direction in ("out", "inout"):
                copy_out.append(ir.Assign(pos, a, ir.VarRef(v.type, pos, v)))
        tree = inst.tree
        states = []
        for c in tree.children:
            if not isinstance(c, Tree):
                continue
            if c.data == "const_decl":
                self.decl_const_decl(c, sub_scope)
            elif c.data == "var_decl":
                vd = self.var_decl(c, sub_scope)
                pd.locals.append(ir.VarDecl(vd.pos, vd.var, None))
                # a sub-parser's variables start afresh at each apply
                copy_in.append(ir.Assign(vd.pos, ir.VarRef(vd.var.type, vd.pos, vd.var),
                                         vd.init if vd.init is not None else _fresh(vd.var.type, vd.pos)))
            elif c.data == "instantiation":
                self.decl_instantiation(c, sub_scope, pd.locals)
            elif c.data == "value_set_decl":
                raise self.unsupported("parser value sets (value_set)", c)
            elif c.data == "parser_state":
                states.append(c)
        names = {self.ident(s.children[1]) for s in states}
        if "start" not in names:
            raise self.err(f"parser '{self.ident(self.child(tree, 'decl_name'))}' has no 'start' state", tree)

        def rename(t: str) -> str:
            return after if t == "accept" else "reject" if t == "reject" else prefix + t

        out: list[ir.ParserState] = []
        for s in states:
            for st in self.parser_state(s, sub_scope, names):
                st.name = prefix + st.name
                if isinstance(st.transition, ir.Select):
                    for case in st.transition.cases:
                        case.next_state = rename(case.next_state)
                else:
                    st.transition = rename(st.transition)
                out.append(st)
        out.sort(key=lambda st: st.name != prefix + "start")  # the entry state first
        return out, copy_in, copy_out

    def _state_ref(self, node: Node, state_names: set[str]) -> str:
        n = self.ident(node)
        if n not in state_names and n not in ("accept", "reject"):
            raise self.err(f"unknown parser state '{n}'", node)
        return n

    def select(self, sel: Tree, scope: Scope, state_names: set[str]) -> ir.Select:
        key_list = sel.children[0]
        keys = [self.expr(k, scope, None) for k in key_list.children]
        for k, kt in zip(keys, key_list.children):
            if isinstance(k.type, ir.IntT):
                raise self.err("select key needs a type with a width", kt)
            if not isinstance(k.type, (ir.BitT, ir.BoolT, ir.EnumT, ir.ErrorT)):
                raise self.err(f"cannot select on {type_name(k.type)}", kt)
        cases = []
        for c in sel.children[1:]:
            ks, target = c.children
            keysets = self.keysets(ks, keys, scope, None)
            cases.append(ir.KsSelectCase(keysets, self._state_ref(target, state_names),
                                         self.pos(c)))
        return ir.Select(keys, cases, self.pos(sel))

    def decl_control_decl(self, d: Tree) -> None:
        annots = d.children[0]
        name_node = self.child(d, "decl_name")
        name = self.ident(name_node)
        if self.child(d, "type_params") is not None:
            raise self.unsupported("generic controls", self.child(d, "type_params"))
        if name in self.parsers or name in self.controls or name in self.types:
            raise self.err(f"'{name}' is already declared", name_node)
        self.control_trees[name] = d
        if self.ctor_params(d):
            # checked per instantiation, with its constructor arguments as constants
            params = self.child(d, "params")
            vars_ = self.make_vars(self.params(params), self.children(params, "param"))
            self.controls[name] = ir.ControlDecl(name, vars_, [], {}, {}, ir.Block(None, []),
                                                 self.annotations(annots), self.pos(d))
            self.__dict__.setdefault("templates", set()).add(name)
            return
        self.controls[name] = self.check_control(d, {})

    def ctor_params(self, d: Tree) -> list:
        """The constructor parameters of a parser/control declaration (Param objects); only
        compile-time values (bit/int/bool/enum) are supported."""
        cp = self.child(d, "ctor_params")
        if cp is None or not cp.children or not self.child(cp, "params").children:
            return []
        params = self.params(self.child(cp, "params"))
        for prm, pt in zip(params, self.children(self.child(cp, "params"), "param")):
            if not isinstance(prm.type, (ir.BitT, ir.BoolT, ir.EnumT, ir.IntT)):
                raise self.unsupported(f"constructor parameters of type {type_name(prm.type)} "
                                       "(only compile-time values)", pt)
        return params

    def ctor_consts(self, d: Tree, args: Tree, scope: Scope) -> dict:
        """Constructor arguments of an instantiation, as constants by parameter name."""
        params = self.ctor_params(d)
        arg_trees = list(args.children)
        if len(arg_trees) != len(params):
            raise self.err(f"{len(params)} constructor argument(s) expected, not "
                           f"{len(arg_trees)}", args)
        out = {}
        for prm, at in zip(params, arg_trees):
            e = self.coerce(self.expr(at, scope, prm.type), prm.type, at)
            if not isinstance(e, ir.Literal):
                raise self.err("constructor arguments must be compile-time constants", at)
            out[prm.name] = e
        return out

    def check_control(self, d: Tree, consts: dict) -> ir.ControlDecl:
        """A control declaration checked into a ControlDecl (``consts``: its constructor
        parameters' values, for a control with constructor parameters)."""
        annots = d.children[0]
        name = self.ident(self.child(d, "decl_name"))
        params = self.child(d, "params")
        ptrees = self.children(params, "param")
        vars_ = self.make_vars(self.params(params), ptrees)
        cd = ir.ControlDecl(name, vars_, [], {}, {}, ir.Block(None, []),
                            self.annotations(annots), self.pos(d))
        scope = Scope(self.global_scope)
        for cname, lit in consts.items():
            scope.names[cname] = ConstSym(lit)
        for v in vars_:
            self.declare(scope, v.name, v, d)
        saved = self.prefix
        self.prefix = self.qualify(name, cd.annotations) + "."
        try:
            cd.apply = self.control_body(d, scope, cd, "")
        finally:
            self.prefix = saved
        # a table no apply block applies is removed, as p4c's front end does (its P4Info
        # leaves it out, and the actions only it named); the same warning
        applied = _applied_tables(cd.apply)
        for key, t in list(cd.tables.items()):
            if id(t) not in applied:
                _warn_unused(t.pos, f"table '{t.name}' is unused")
                del cd.tables[key]
        return cd

    def control_body(self, d: Tree, scope: Scope, target: ir.ControlDecl,
                     key_prefix: str) -> ir.Block:
        """Check a control's locals and apply block into ``target``.

        For a sub-control instance (see :class:`SubControl`) ``target`` is the *enclosing*
        control: the instance's tables, actions, extern instances and variables become the
        enclosing control's, under ``key_prefix`` (the instance name) and with P4Info names
        ``Outer.instance.table`` as p4c gives them.
        """
        saved = (self.cur_control, self.sub_instances, self.key_prefix)
        self.cur_control, self.sub_instances, self.key_prefix = target, [], key_prefix
        inits: list[ir.Stmt] = []
        try:
            for c in d.children:
                if not isinstance(c, Tree):
                    continue
                if c.data == "const_decl":
                    self.decl_const_decl(c, scope)
                elif c.data == "var_decl":
                    vd = self.var_decl(c, scope)
                    if key_prefix and vd.init is not None:
                        # an inlined control's variables start at each of its applies, after
                        # copy-in: keep the slot in the enclosing control, run the initialiser
                        # at the start of the inlined body
                        inits.append(ir.Assign(vd.pos, ir.VarRef(vd.var.type, vd.pos, vd.var),
                                               vd.init))
                        vd = ir.VarDecl(vd.pos, vd.var, None)
                    target.locals.append(vd)
                elif c.data == "instantiation":
                    self.decl_instantiation(c, scope, target.locals)
                elif c.data == "action_decl":
                    act = self.decl_action_decl(c, scope)
                    target.actions[key_prefix + act.name] = act
                elif c.data == "table_decl":
                    t = self.table(c, scope)
                    target.tables[key_prefix + t.name] = t
                elif c.data == "function_decl":
                    raise self.unsupported("functions declared inside a control", c)
                elif c.data == "abstract_instantiation":
                    self.abstract_instance(c, scope, target, key_prefix)
            body = self.block(d.children[-1], Scope(scope))
            if inits:
                body = ir.Block(body.pos, inits + [body])
            # an instance that is never applied is an unused declaration: p4c's front end
            # (UnusedDeclarations) removes it, so its tables, actions and externs are not in
            # the program or its P4Info
            for inst in self.sub_instances:
                if inst.body is None:
                    _warn_unused(inst.pos, f"'{inst.name}' is unused")
        finally:
            self.cur_control, self.sub_instances, self.key_prefix = saved
        return body

    def declare_subcontrol(self, d: Tree, tname: str, scope: Scope) -> None:
        annots, _tref, args, name_node = d.children
        if self.cur_control is None:
            raise self.unsupported(f"instantiating control '{tname}' outside a control", d)
        name = self.ident(name_node)
        a = self.annotations(annots)
        tree = self.control_trees[tname]
        consts = self.ctor_consts(tree, args, scope)
        params = self.params(self.child(tree, "params"))
        inst = SubControl(name, tname, tree, params, self.qualify(name, a) + ".",
                          self.cur_control, self.key_prefix + name + ".", self.pos(d),
                          consts=consts)
        self.declare(scope, name, inst, name_node)
        self.sub_instances.append(inst)

    def instantiate_subcontrol(self, inst: "SubControl", alias: Optional[list[ir.Var]]) -> None:
        """Check the instance's control body once, with its parameters bound either to the
        caller's variables (``alias``) or to fresh variables of the enclosing control."""
        scope = Scope(self.global_scope)
        for cname, lit in inst.consts.items():
            scope.names[cname] = ConstSym(lit)
        ro: set[int] = set()
        inst.param_vars = []
        for i, prm in enumerate(inst.params):
            if alias is not None:
                v = alias[i]
            else:
                v = ir.Var(f"{inst.name}.{prm.name}", prm.type, "local", None, inst.pos)
                inst.owner.locals.append(ir.VarDecl(inst.pos, v, None))
            if prm.direction == "in" or prm.direction is None:
                ro.add(id(v))
            inst.param_vars.append(v)
            scope.names[prm.name] = v
        inst.alias = alias is not None
        saved = (self.prefix, self.readonly_ids)
        self.prefix, self.readonly_ids = inst.prefix, self.readonly_ids | ro
        try:
            inst.body = self.control_body(inst.tree, scope, inst.owner, inst.key)
        finally:
            self.prefix, self.readonly_ids = saved
        if self.returns_in(inst.body):
            # inlined, `return` must end only this control: p4c-style, it sets a flag and the
            # statements after it run only while the flag is clear
            pos = inst.pos
            flag = ir.Var(f"{inst.name}.returned__", ir.BoolT(), "local", None, pos)
            inst.owner.locals.append(ir.VarDecl(pos, flag, None))
            clear = ir.Assign(pos, ir.VarRef(flag.type, pos, flag),
                              ir.Literal(ir.BoolT(), pos, False))
            inst.body = ir.Block(inst.body.pos,
                                 [clear] + self._without_returns(inst.body.stmts, flag))

    def _without_returns(self, stmts: list[ir.Stmt], flag: ir.Var) -> list[ir.Stmt]:
        out: list[ir.Stmt] = []
        for i, st in enumerate(stmts):
            new, may_return = self._replace_returns(st, flag)
            out.append(new)
            if may_return and i + 1 < len(stmts):
                pos = stmts[i + 1].pos
                still = ir.Unary(ir.BoolT(), pos, "!", ir.VarRef(flag.type, pos, flag))
                out.append(ir.If(pos, still,
                                 ir.Block(pos, self._without_returns(stmts[i + 1:], flag)),
                                 None))
                break
        return out

    def _replace_returns(self, st: ir.Stmt, flag: ir.Var) -> tuple[ir.Stmt, bool]:
        if isinstance(st, ir.Return):
            return ir.Assign(st.pos, ir.VarRef(flag.type, st.pos, flag),
                             ir.Literal(ir.BoolT(), st.pos, True)), True
        if isinstance(st, ir.Block):
            if not self.returns_in(st):
                return st, False
            return ir.Block(st.pos, self._without_returns(st.stmts, flag)), True
        if isinstance(st, ir.If):
            then, r1 = self._replace_returns(st.then, flag)
            other, r2 = self._replace_returns(st.other, flag) if st.other is not None \
                else (None, False)
            return ir.If(st.pos, st.cond, then, other), r1 or r2
        if isinstance(st, ir.SwitchStmt):
            cases, any_r = [], False
            for c in st.cases:
                body, r = self._replace_returns(c.body, flag) if c.body is not None \
                    else (None, False)
                any_r = any_r or r
                cases.append(ir.SwitchCase(c.labels, body, c.pos))
            return ir.SwitchStmt(st.pos, st.subject, cases), any_r
        if isinstance(st, ir.For) and self.returns_in(st.body):
            raise Unsupported("'return' inside a loop of a control applied by another control", st.pos)
        return st, False

    def apply_subcontrol(self, inst: "SubControl", arg_nodes: list, scope: Scope,
                         n: Tree) -> ir.Stmt:
        if self.cur_action or self.cur_function or self.in_parser:
            raise self.err("a control can only be applied from a control's apply block", n)
        sig = Sig(inst.name, [], inst.params, ir.VoidT())
        args, dirs, _ = self.bind_args([sig], arg_nodes, [], {}, scope, n, f"{inst.name}.apply")
        whole = [a.var for a in args if isinstance(a, ir.VarRef)]
        can_alias = len(whole) == len(args) and len({id(v) for v in whole}) == len(whole) \
            and all(same_type(a.type, p.type) for a, p in zip(args, inst.params))
        if inst.body is None:
            self.instantiate_subcontrol(inst, whole if can_alias else None)
        if inst.alias:
            if not (can_alias and all(a is b for a, b in zip(whole, inst.param_vars))):
                raise self.unsupported(f"applying control instance '{inst.name}' again with "
                                       "different argument variables", n)
            return ir.Block(self.pos(n), [inst.body])
        pos = self.pos(n)
        stmts: list[ir.Stmt] = []
        for prm, v, a in zip(inst.params, inst.param_vars, args):
            if prm.direction != "out":
                stmts.append(ir.Assign(pos, ir.VarRef(v.type, pos, v), a))
        stmts.append(inst.body)
        for prm, v, a in zip(inst.params, inst.param_vars, args):
            if prm.direction in ("out", "inout"):
                stmts.append(ir.Assign(pos, a, ir.VarRef(v.type, pos, v)))
        return ir.Block(pos, stmts)

    def returns_in(self, st: Any) -> bool:
        if isinstance(st, ir.Return):
            return True
        if isinstance(st, ir.Block):
            return any(self.returns_in(x) for x in st.stmts)
        if isinstance(st, ir.If):
            return self.returns_in(st.then) or (st.other is not None and
                                                self.returns_in(st.other))
        if isinstance(st, ir.SwitchStmt):
            return any(c.body is not None and self.returns_in(c.body) for c in st.cases)
        if isinstance(st, ir.For):
            return self.returns_in(st.body)
        return False

    def block(self, b: Tree, scope: Scope) -> ir.Block:
        inner = Scope(scope)
        stmts = []
        for c in b.children[1:]:
            st = self.stmt(c, inner)
            if st is not None:
                stmts.append(st)
        return ir.Block(self.pos(b), stmts)

    def var_decl(self, d: Tree, scope: Scope) -> ir.VarDecl:
        annots, tref, name_node = d.children[:3]
        t = self.resolve_type(tref)
        if isinstance(t, (ir.ExternT, ir.IntT, ir.StringT, ir.MatchKindT)):
            raise self.err(f"cannot declare a variable of type {type_name(t)}", tref)
        if isinstance(t, ir.TupleT) and not all(isinstance(x, (ir.BitT, ir.BoolT)) for x in t.elems):
            raise self.unsupported("tuple variables with elements other than bit<W>/int<W>/bool",
                                   tref)
        init = None
        if len(d.children) > 3:
            init = self.coerce(self.expr(d.children[3], scope, t), t, d.children[3])
        v = ir.Var(self.ident(name_node), t, "local", None, self.pos(d), self.annotations(annots))
        self.declare(scope, v.name, v, name_node)
        return ir.VarDecl(self.pos(d), v, init)

    def stmt(self, s: Tree, scope: Scope) -> Optional[ir.Stmt]:
        kind = s.data
        if kind == "var_decl":
            return self.var_decl(s, scope)
        if kind == "const_decl":
            self.decl_const_decl(s, scope)
            return None
        if kind == "instantiation":
            raise self.err("instantiations are not allowed inside a block", s)
        if kind == "block":
            return self.block(s, scope)
        if kind == "assign_stmt":
            _a, lhs_t, rhs_t = s.children
            lhs = self.expr(lhs_t, scope, None)
            self.check_lvalue(lhs, lhs_t)
            rhs = self.coerce(self.expr(rhs_t, scope, lhs.type), lhs.type, rhs_t)
            return ir.Assign(self.pos(s), lhs, rhs)
        if kind == "compound_assign_stmt":
            return self.compound_assign(s, scope)
        if kind == "for_stmt":
            return self.for_stmt(s, scope)
        if kind == "for_in_stmt":
            return self.for_in_stmt(s, scope)
        if kind in ("break_stmt", "continue_stmt"):
            if not getattr(self, "loop_depth", 0):
                raise self.err(f"'{kind[:-5]}' outside a loop", s)
            return ir.Break(self.pos(s)) if kind == "break_stmt" else ir.Continue(self.pos(s))
        if kind == "call_stmt":
            callee = s.children[1]
            direct = self._direct_apply(callee, "control")
            if direct is not None:
                # ``Ctl.apply(args)``: p4c instantiates the control there (InstantiateDirectCalls:
                # an instance @name("Ctl")) and applies it
                if self.cur_control is None or self.cur_action or self.cur_function:
                    raise self.err("a control can only be applied from a control's apply block",
                                   callee)
                tname, arg_nodes = direct
                inst = SubControl(tname, tname, self.control_trees[tname],
                                  self.params(self.child(self.control_trees[tname], "params")),
                                  self.qualify(tname, {}) + ".", self.cur_control,
                                  self.key_prefix + self._fresh_name(tname + "_inst") + ".",
                                  self.pos(s))
                if self.ctor_params(inst.tree):
                    raise self.err(f"'{tname}' has constructor parameters: instantiate it", callee)
                return self.apply_subcontrol(inst, arg_nodes, scope, callee)
            head = self.value_view(callee.children[0], scope) if callee.data == "call" else None
            if head is not None and head.data == "member":
                base_n, mname_n = head.children
                sym = self.expr_symbol(base_n, scope) \
                    if base_n.data in ("name_ref", "top_name_ref") else None
                if isinstance(sym, SubControl):
                    if self.ident(mname_n) != "apply":
                        raise self.err(f"controls only have 'apply'", mname_n)
                    return self.apply_subcontrol(sym, list(callee.children[1].children), scope,
                                                 callee)
            e = self.expr(s.children[1], scope, None)
            if isinstance(e, ir.ApplyResult):
                if e.field is not None:
                    raise self.err("expression statement has no effect", s.children[1])
                return ir.CallStmt(self.pos(s), e)
            if not isinstance(e, ir.Call):
                raise self.err("only calls can be used as statements", s.children[1])
            return ir.CallStmt(self.pos(s), e)
        if kind == "if_stmt":
            cond_t = s.children[1]
            cond = self.coerce(self.expr(cond_t, scope, ir.BoolT()), ir.BoolT(), cond_t)
            then = self._sub_stmt(s.children[2], scope)
            other = self._sub_stmt(s.children[3], scope) if len(s.children) > 3 else None
            return ir.If(self.pos(s), cond, then, other)
        if kind == "switch_stmt":
            return self.switch(s, scope)
        if kind == "exit_stmt":
            if self.in_parser:
                raise self.err("'exit' is not allowed in a parser", s)
            return ir.Exit(self.pos(s))
        if kind == "return_stmt":
            if self.in_parser:
                raise self.err("'return' is not allowed in a parser", s)
            value = None
            if len(s.children) > 1:
                fn = self.cur_function
                if fn is None or isinstance(fn.return_type, ir.VoidT):
                    raise self.err("return with a value outside a non-void function", s)
                value = self.coerce(self.expr(s.children[1], scope, fn.return_type),
                                    fn.return_type, s.children[1])
            elif self.cur_function is not None and \
                    not isinstance(self.cur_function.return_type, ir.VoidT):
                raise self.err("missing return value", s)
            return ir.Return(self.pos(s), value)
        if kind == "empty_stmt":
            return ir.Empty(self.pos(s))
        raise self.err(f"unexpected statement {kind}", s)

    # `a op= b` is `a = a op b` with the lvalue evaluated once (P4_16 1.2.4); the operator is
    # checked exactly as in an expression by building that expression's parse tree.
    _COMPOUND_RULE = {"+": "add", "-": "add", "|+|": "add", "|-|": "add", "*": "mul", "/": "mul",
                      "%": "mul", "&": "band", "|": "bor", "^": "bxor", "<<": "shift"}

    def compound_assign(self, s: Tree, scope: Scope) -> ir.Assign:
        _a, lhs_t, op_t, rhs_t = s.children
        lhs = self.expr(lhs_t, scope, None)
        self.check_lvalue(lhs, lhs_t)
        toks = [t for t in op_t.children]
        if any(a.end_pos != b.start_pos for a, b in zip(toks, toks[1:])):
            raise self.err("syntax error: a compound assignment operator has no spaces inside",
                           op_t)
        toks = toks[:-1]  # without the '='
        if len(toks) == 2:  # SHR_FIRST '>'
            tree = Tree("shift", [lhs_t, toks[0], toks[1], rhs_t], s.meta)
        else:
            tree = Tree(self._COMPOUND_RULE[str(toks[0])], [lhs_t, toks[0], rhs_t], s.meta)
        rhs = self.coerce(self.expr(tree, scope, lhs.type), lhs.type, rhs_t)
        if isinstance(rhs, ir.Binary):
            # the same lvalue object on both sides: the code generator evaluates it once
            rhs.left = lhs
        return ir.Assign(self.pos(s), lhs, rhs)

    def _loop_body(self, body_t: Tree, scope: Scope) -> ir.Stmt:
        self.loop_depth = getattr(self, "loop_depth", 0) + 1
        try:
            return self._sub_stmt(body_t, scope)
        finally:
            self.loop_depth -= 1

    def for_stmt(self, s: Tree, scope: Scope) -> ir.For:
        ch = s.children
        init_t, rest = ch[1], ch[2:]
        cond_t = rest[0] if len(rest) == 3 else None
        update_t, body_t = rest[-2], rest[-1]
        inner = Scope(scope)
        init = [x for x in (self.stmt(c, inner) for c in init_t.children) if x is not None]
        cond = None
        if cond_t is not None:
            cond = self.coerce(self.expr(cond_t, inner, ir.BoolT()), ir.BoolT(), cond_t)
        update = [x for x in (self.stmt(c, inner) for c in update_t.children) if x is not None]
        if any(isinstance(u, ir.VarDecl) for u in update):
            raise self.err("a for loop's update part cannot declare variables", update_t)
        return ir.For(self.pos(s), init, cond, update, self._loop_body(body_t, inner))

    def for_in_stmt(self, s: Tree, scope: Scope) -> ir.Stmt:
        # p4c-bm2-ss refuses them (backends/bmv2/common/check_unsupported.h)
        raise self.err("BMv2 does not support for-in loops (p4c-bm2-ss refuses them)", s)

    def _sub_stmt(self, s: Tree, scope: Scope) -> ir.Stmt:
        st = self.stmt(s, Scope(scope))
        return st if st is not None else ir.Empty(self.pos(s))

    def switch(self, s: Tree, scope: Scope) -> ir.SwitchStmt:
        subj_t = s.children[1]
        subj = self.expr(subj_t, scope, None)
        is_action_run = isinstance(subj, ir.ApplyResult) and subj.field == "action_run"
        if isinstance(subj, ir.ApplyResult) and not is_action_run:
            raise self.err("switch on a table needs '.action_run'", subj_t)
        if not is_action_run and not isinstance(subj.type, (ir.BitT, ir.EnumT, ir.ErrorT)):
            raise self.err(f"cannot switch on {type_name(subj.type)}", subj_t)
        cases: list[ir.SwitchCase] = []
        pending: list = []
        seen_labels: list = []
        pending_pos = None
        for c in s.children[2:]:
            label_t = c.children[0]
            if isinstance(label_t, Tree) and label_t.data == "default_label":
                label: Any = "default"
            elif is_action_run:
                if label_t.data != "name_ref":
                    raise self.err("switch labels on action_run must be action names", label_t)
                aname = self.ident(label_t.children[0])
                ref = next((r for r in subj.table.actions if r.action.name == aname), None)
                if ref is None:
                    raise self.err(f"'{aname}' is not an action of table '{subj.table.name}'",
                                   label_t)
                label = ref.action
            else:
                e = self.coerce(self.expr(label_t, scope, subj.type), subj.type, label_t)
                if not isinstance(e, ir.Literal):
                    raise self.err("switch labels must be compile-time constants", label_t)
                label = e
            key = label if not isinstance(label, ir.Literal) else ("lit", label.value)
            if any(key is k or key == k for k in seen_labels):
                raise self.err("duplicate switch label", label_t)
            seen_labels.append(key)
            if pending_pos is None:
                pending_pos = self.pos(c)
            pending.append(label)
            if c.data == "switch_case":
                body = self.block(c.children[1], scope)
                cases.append(ir.SwitchCase(pending, body, pending_pos))
                pending, pending_pos = [], None
        if pending:
            cases.append(ir.SwitchCase(pending, None, pending_pos))
        for i, case in enumerate(cases):
            if "default" in case.labels and i != len(cases) - 1:
                raise self.err("'default' must be the last switch label", s)
        return ir.SwitchStmt(self.pos(s), subj, cases)


def _fresh(t: ir.Type, pos: Any) -> ir.Expr:
    """An uninitialised value of type ``t`` (headers invalid, fields zero) for a copy-in."""
    if isinstance(t, ir.BoolT):
        return ir.Literal(t, pos, False)
    if isinstance(t, (ir.BitT, ir.EnumT, ir.ErrorT)):
        return ir.Literal(t, pos, 0)
    return ir.DontCare(t, pos)  # the code generator makes a fresh object


@dataclass(eq=False)
class SubParser:
    """A parser instantiated inside a parser; inlined at each ``apply`` (see inline_subparser)."""

    name: str
    tree: Tree
    params: list
    consts: dict
    pos: Any


def _always_returns(st: ir.Stmt) -> bool:
    if isinstance(st, (ir.Return, ir.Exit)):
        return True
    if isinstance(st, ir.Block):
        return any(_always_returns(s) for s in st.stmts)
    if isinstance(st, ir.If):
        return st.other is not None and _always_returns(st.then) and _always_returns(st.other)
    return False


def _warn_unused(pos: Optional[ir.Pos], what: str) -> None:
    warnings.warn(f"{pos}: warning: {what}; removed (as p4c does)", stacklevel=3)


def _applied_tables(body: ir.Stmt) -> set[int]:
    """ids of the tables ``body`` applies (``t.apply()`` anywhere in it, conditions and
    switch subjects included; a table's or action's own fields apply no table)."""
    return {id(n.table) for n in ir.walk([body], stop=(ir.TableDecl, ir.ActionDecl))
            if isinstance(n, ir.ApplyResult)}
