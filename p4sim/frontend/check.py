"""Name resolution and type checking: lark parse tree -> ``ir.Program``.

One pass over the declarations in source order (P4 requires declaration before use).  Every
expression is checked against an *expected* type when the context knows one, which is how integer
literals get their widths; compile-time constants are folded on the spot.  Anything in the P4_16
language that p4sim does not run raises ``Unsupported`` at the construct's position.
"""
from __future__ import annotations

from typing import Optional

from lark import Tree

from p4sim.errors import CompileError, Pos
from p4sim.frontend import ir
from p4sim.frontend.check_blocks import BlockChecker
from p4sim.frontend.parser import ParsedText
from p4sim.frontend.symbols import (TYPE_NODES, BlockType, ConstSym, ExternType, Node, Param,
                                    Scope, Sig, type_name)


class Checker(BlockChecker):
    """Top-level declarations and the program; the base classes check the rest."""

    def run(self) -> ir.Program:
        for decl in self.parsed.tree.children:
            self.declaration(decl)
        if self.package is None:
            raise CompileError("program has no package instance 'main' (e.g. V1Switch(...) main;)",
                               Pos(self.source, 1, 1))
        if self.arch == "v1model":
            from p4sim.frontend.table_paths import check_control

            for block in self.blocks.values():
                if isinstance(block, ir.ControlDecl):
                    check_control(block)
        controller_headers = [t for t in self.types.values()
                              if isinstance(t, ir.HeaderT) and "controller_header" in t.annotations]
        seen: set[int] = set()
        uniq_ch = []
        for h in controller_headers:
            if id(h) not in seen:
                seen.add(id(h))
                uniq_ch.append(h)
        # the program is its package's instances: a declaration no block instantiates is
        # dropped (p4c's front end), with its tables, externs and digests; a control applied
        # inside another is inlined into it, so the blocks hold every instance
        controls = {b.name: b for b in self.blocks.values() if isinstance(b, ir.ControlDecl)}
        parsers = {b.name: b for b in self.blocks.values() if isinstance(b, ir.ParserDecl)}
        return ir.Program(source=self.source, errors=list(self.errors), types=dict(self.types),
                          externs=self.externs, actions=self.actions, functions=self.functions,
                          parsers=parsers, controls=controls, package=self.package,
                          blocks=self.blocks, digests=_sent_digests(self.digests, self.blocks),
                          controller_headers=uniq_ch,
                          arch=self.arch, tofino_target=self.tofino_target)

    def declaration(self, d: Tree) -> None:
        kind = d.data
        handler = getattr(self, "decl_" + kind, None)
        if handler is None:
            raise self.err(f"unexpected declaration {kind}", d)
        handler(d)

    def decl_empty_decl(self, d: Tree) -> None:
        pass

    def decl_const_decl(self, d: Tree, scope: Optional[Scope] = None) -> None:
        scope = scope or self.global_scope
        _annots, tref, name, value = d.children
        t = self.resolve_type(tref)
        e = self.expr(value, scope, t)
        e = self.coerce(e, t, value)
        if not isinstance(e, ir.Literal):
            raise self.err(f"initializer of constant '{self.ident(name)}' is not a compile-time "
                           "constant", value)
        self.declare(scope, self.ident(name), ConstSym(e), name)

    def _check_no_type_params(self, d: Tree, what: str) -> None:
        if self.child(d, "type_params") is not None:
            raise self.unsupported(f"generic {what} declarations", self.child(d, "type_params"))

    def _fields(self, d: Tree, is_header: bool) -> list[ir.Field]:
        fields = []
        names = set()
        for f in self.children(d, "struct_field"):
            fannots, tref, fname = f.children
            t = self.resolve_type(tref)
            n = self.ident(fname)
            if n in names:
                raise self.err(f"duplicate field '{n}'", fname)
            names.add(n)
            if isinstance(t, ir.VarbitT):
                if not is_header:
                    raise self.unsupported("varbit fields outside headers", tref)
                if any(isinstance(x.type, ir.VarbitT) for x in fields):
                    raise self.err("a header may have only one varbit field", tref)
            elif is_header and not isinstance(t, (ir.BitT, ir.BoolT)):
                if isinstance(t, ir.EnumT) and t.underlying is not None:
                    t = t.underlying
                elif not (isinstance(t, ir.StructT) and ir.only_bits(t)):
                    # p4c's TypeInference for Type_Header: bit/int/varbit, bool, serializable
                    # enums, and structs whose fields are those (nested), nothing else
                    raise self.err(f"header field '{n}' must be bit<W>, int<W>, bool, a "
                                   f"serializable enum or a struct of those, not {type_name(t)}",
                                   tref)
            if isinstance(t, (ir.TupleT, ir.IntT, ir.StringT, ir.MatchKindT, ir.ExternT)):
                raise self.unsupported(f"fields of type {type_name(t)}", tref)
            fields.append(ir.Field(n, t, self.annotations(fannots)))
        return fields

    def _declare_type(self, name_node: Node, t: ir.Type) -> None:
        name = self.ident(name_node)
        if name in self.types or name in self.extern_types or name in self.block_types:
            raise self.err(f"type '{name}' is already declared", name_node)
        self.types[name] = t

    def decl_header_decl(self, d: Tree) -> None:
        self._check_no_type_params(d, "header")
        name = self.child(d, "decl_name")
        t = ir.HeaderT(self.ident(name), [], self.annotations(d.children[0]))
        t.fields = self._fields(d, True)
        self._declare_type(name, t)

    def decl_struct_decl(self, d: Tree) -> None:
        self._check_no_type_params(d, "struct")
        name = self.child(d, "decl_name")
        t = ir.StructT(self.ident(name), [], self.annotations(d.children[0]))
        t.fields = self._fields(d, False)
        self._declare_type(name, t)

    def decl_header_union_decl(self, d: Tree) -> None:
        self._check_no_type_params(d, "header_union")
        name = self.child(d, "decl_name")
        t = ir.HeaderUnionT(self.ident(name), [], self.annotations(d.children[0]))
        t.fields = self._fields(d, False)
        for f, node in zip(t.fields, self.children(d, "struct_field")):
            if not isinstance(f.type, ir.HeaderT):
                raise self.err(f"header_union member '{f.name}' must be a header, not "
                               f"{type_name(f.type)}", node)
        self._declare_type(name, t)

    def decl_enum_decl(self, d: Tree) -> None:
        name = self.child(d, "decl_name")
        members = [self.ident(c) for c in self.child(d, "id_list").children]
        if len(set(members)) != len(members):
            raise self.err("duplicate enum member", d)
        self._declare_type(name, ir.EnumT(self.ident(name), members))

    def decl_ser_enum_decl(self, d: Tree) -> None:
        under = self.resolve_type(d.children[1])
        if not isinstance(under, ir.BitT):
            raise self.err("the underlying type of an enum must be bit<W> or int<W>", d.children[1])
        name = d.children[2]
        members, values = [], []
        for m in self.children(d, "ser_member"):
            _a, fname, value = m.children
            e = self.coerce(self.expr(value, self.global_scope, under), under, value)
            if not isinstance(e, ir.Literal):
                raise self.err("enum member value must be a compile-time constant", value)
            members.append(self.ident(fname))
            values.append(int(e.value))
        self._declare_type(name, ir.EnumT(self.ident(name), members, under, values))

    def decl_typedef_decl(self, d: Tree) -> None:
        _a, tref, name = d.children
        self._declare_type(name, self.resolve_type(tref))

    def decl_newtype_decl(self, d: Tree) -> None:
        # ``type T X;`` is treated like a typedef: p4sim does not keep the distinct type.
        annots, tref, name = d.children
        if "p4runtime_translation" in self.annotations(annots):
            raise self.unsupported("@p4runtime_translation (P4Runtime type translation)", d)
        self._declare_type(name, self.resolve_type(tref))

    def decl_error_decl(self, d: Tree) -> None:
        for c in self.child(d, "id_list").children:
            n = self.ident(c)
            if n not in self.errors:
                self.errors.append(n)

    def decl_match_kind_decl(self, d: Tree) -> None:
        for c in self.child(d, "id_list").children:
            n = self.ident(c)
            if n not in self.match_kinds:
                self.match_kinds.append(n)

    def _sig(self, name: str, tparams: Optional[Tree], params: Tree, ret: ir.Type) -> Sig:
        return Sig(name, self._tparam_names(tparams), self.params(params), ret)

    def decl_extern_obj_decl(self, d: Tree) -> None:
        if not self.is_builtin(d):
            raise self.unsupported("extern declarations in user programs", d)
        name_node = self.child(d, "decl_name")
        name = self.ident(name_node)
        tps = self._tparam_names(self.child(d, "type_params"))
        et = ExternType(name, tps)
        self.extern_types[name] = et
        with self._with_type_vars(tps):
            for m in d.children:
                if not isinstance(m, Tree):
                    continue
                if m.data == "ctor_proto":
                    et.ctors.append(self._sig(name, None, self.child(m, "params"), ir.VoidT()))
                elif m.data == "method_proto":
                    mt = self.child(m, "type_params")
                    mtps = self._tparam_names(mt)
                    with self._with_type_vars(mtps):
                        ret = self.resolve_type(m.children[1], allow_void=True)
                        mname = self.ident(m.children[2])
                        et.methods.setdefault(mname, []).append(
                            self._sig(mname, mt, self.child(m, "params"), ret))
                elif m.data == "abstract_proto":
                    mt = self.child(m, "type_params")
                    with self._with_type_vars(self._tparam_names(mt)):
                        ret = self.resolve_type(m.children[1], allow_void=True)
                        mname = self.ident(m.children[2])
                        et.abstracts[mname] = self._sig(mname, mt, self.child(m, "params"), ret)

    def decl_extern_func_decl(self, d: Tree) -> None:
        if not self.is_builtin(d):
            raise self.unsupported("extern declarations in user programs", d)
        tp = self.child(d, "type_params")
        tps = self._tparam_names(tp)
        with self._with_type_vars(tps):
            ret = self.resolve_type(self.child(d, "extern_ret_type").children[0], allow_void=True)
            name = self.ident(self.child(d, "decl_name"))
            self.extern_funcs.setdefault(name, []).append(
                self._sig(name, tp, self.child(d, "params"), ret))

    def _decl_block_type(self, d: Tree, kind: str) -> None:
        name_node = self.child(d, "decl_name")
        name = self.ident(name_node)
        tp = self.child(d, "type_params")
        tps = self._tparam_names(tp)
        with self._with_type_vars(tps):
            params = []
            annots = []
            for p in self.children(self.child(d, "params"), "param"):
                params.append(self._block_param(p))
                annots.append(self.annotations(self.child(p, "annots")))
            self.block_types[name] = BlockType(kind, Sig(name, tps, params, ir.VoidT()))
            self.__dict__.setdefault("block_param_annots", {})[name] = annots

    def _block_param(self, p: Tree) -> Param:
        """Package parameters have block types (``Parser<H, M> p``); others resolve normally."""
        tref = next(c for c in p.children if isinstance(c, Tree) and c.data in TYPE_NODES)
        n = self.type_head(tref)
        if n is not None:
            if n in self.block_types:
                return Param(self.ident(self.child(p, "field_name")), None, ir.ExternT(n))
        return self.params_one(p)

    def decl_parser_type_decl(self, d: Tree) -> None:
        self._decl_block_type(d, "parser")

    def decl_control_type_decl(self, d: Tree) -> None:
        self._decl_block_type(d, "control")

    def decl_package_decl(self, d: Tree) -> None:
        self._decl_block_type(d, "package")

    def decl_abstract_instantiation(self, d: Tree) -> None:
        raise self.unsupported("instantiations with abstract method implementations outside a "
                               "control (declare a TNA RegisterAction inside its control)", d)


def _sent_digests(declared: list[ir.StructT], blocks: dict) -> list[ir.StructT]:
    """The digest types of ``declared`` (first-use order) that a ``digest<T>()`` call reachable
    from the package's blocks sends."""
    sent = {id(n.type_args[0]) for n in ir.walk(list(blocks.values()))
            if isinstance(n, ir.BuiltinCall) and n.name == "digest" and n.type_args}
    return [d for d in declared if id(d) in sent]


def check(parsed: ParsedText, source: str) -> ir.Program:
    return Checker(parsed, source).run()
