"""Name resolution and type checking: lark parse tree -> ``ir.Program``.

One pass over the declarations in source order (P4 requires declaration before use).  Every
expression is checked against an *expected* type when the context knows one, which is how integer
literals get their widths; compile-time constants are folded on the spot.  Anything in the P4_16
language that p4sim does not run raises ``Unsupported`` at the construct's position.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from lark import Token, Tree

from p4sim.errors import CompileError, Pos, Unsupported
from p4sim.frontend import ir
from p4sim.frontend.consteval import (FoldError, fold_binary, fold_cast, mask, parse_int_literal)
from p4sim.frontend.parser import ParsedText
from p4sim.frontend.preprocess import BUILTIN_DIR

Node = Union[Tree, Token]


# --------------------------------------------------------------------------------------------
# Symbols that exist only during checking


class TypeVar(ir.Type):
    """A type parameter of a built-in extern, extern function or block type."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"TypeVar({self.name})"


@dataclass
class Param:
    name: str
    direction: Optional[str]
    type: ir.Type
    default: Optional[Tree] = None


@dataclass
class Sig:
    """Signature of an extern method/function or block type."""

    name: str
    type_params: list[str]
    params: list[Param]
    ret: ir.Type


@dataclass
class ExternType:
    name: str
    type_params: list[str]
    ctors: list[Sig] = field(default_factory=list)
    methods: dict[str, list[Sig]] = field(default_factory=dict)


@dataclass
class BlockType:
    """A parser/control/package *type* declaration (no body), e.g. v1model's ``Ingress``."""

    kind: str  # parser | control | package
    sig: Sig


@dataclass
class ConstSym:
    lit: ir.Literal


@dataclass(eq=False)
class SubControl:
    """A control instantiated inside another control (``MemberRank() member0;``).

    p4sim inlines it: its body is checked once per instance, its tables/actions/externs join the
    enclosing control, and ``member0.apply(args)`` becomes copy-in assignments, the body and
    copy-out assignments (or the body alone when every argument is a distinct whole variable of
    the right type, which cannot be observed to differ from copy-in/copy-out).
    """

    name: str
    control: str
    tree: Tree
    params: list[Param]
    prefix: str
    owner: ir.ControlDecl
    key: str  # prefix of its tables/actions in the enclosing ControlDecl's dicts
    pos: Optional[Pos]
    body: Optional[ir.Block] = None
    param_vars: list = field(default_factory=list)
    alias: bool = False


class Scope:
    def __init__(self, parent: Optional["Scope"] = None) -> None:
        self.parent = parent
        self.names: dict[str, Any] = {}

    def lookup(self, name: str) -> Any:
        s: Optional[Scope] = self
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        return None

    def root(self) -> "Scope":
        s = self
        while s.parent is not None:
            s = s.parent
        return s


_ANNOT_RE = re.compile(r"@([A-Za-z_]\w*)\s*(?:[(\[](.*)[)\]])?\Z", re.DOTALL)


def type_name(t: ir.Type) -> str:
    """How a type is shown in error messages (P4 syntax)."""
    if isinstance(t, ir.BitT):
        return f"{'int' if t.signed else 'bit'}<{t.width}>"
    if isinstance(t, ir.BoolT):
        return "bool"
    if isinstance(t, ir.IntT):
        return "int"
    if isinstance(t, ir.VoidT):
        return "void"
    if isinstance(t, ir.StringT):
        return "string"
    if isinstance(t, ir.ErrorT):
        return "error"
    if isinstance(t, ir.MatchKindT):
        return "match_kind"
    if isinstance(t, (ir.EnumT, ir.HeaderT, ir.StructT)):
        return t.name
    if isinstance(t, ir.StackT):
        return f"{t.elem.name}[{t.size}]"
    if isinstance(t, ir.TupleT):
        return "tuple<" + ", ".join(type_name(e) for e in t.elems) + ">"
    if isinstance(t, ir.ExternT):
        return t.name + ("<" + ", ".join(type_name(a) for a in t.type_args) + ">"
                         if t.type_args else "")
    if isinstance(t, ir.ApplyResultT):
        return f"apply result of {t.table.name}"
    if isinstance(t, TypeVar):
        return t.name
    return type(t).__name__


def same_type(a: ir.Type, b: ir.Type) -> bool:
    if a is b:
        return True
    if isinstance(a, (ir.BitT, ir.BoolT, ir.IntT, ir.VoidT, ir.StringT, ir.ErrorT,
                      ir.MatchKindT)):
        return a == b
    if isinstance(a, ir.StackT) and isinstance(b, ir.StackT):
        return a.elem is b.elem and a.size == b.size
    if isinstance(a, ir.TupleT) and isinstance(b, ir.TupleT):
        return len(a.elems) == len(b.elems) and all(map(same_type, a.elems, b.elems))
    if isinstance(a, ir.ExternT) and isinstance(b, ir.ExternT):
        return a.name == b.name and len(a.type_args) == len(b.type_args) and \
            all(map(same_type, a.type_args, b.type_args))
    return False


TYPE_NODES = {"type_ref", "specialized_type", "tuple_type", "stack_type"}
V1MODEL_BLOCK_KINDS = ("parser", "control", "control", "control", "control", "control")

_TABLE_PROPS = {"key", "actions", "default_action", "size", "entries", "counters", "meters"}


class Checker:
    def __init__(self, parsed: ParsedText, source: str) -> None:
        self.parsed = parsed
        self.text = parsed.text
        self.source = source
        self.global_scope = Scope()
        self.types: dict[str, ir.Type] = {}
        self.block_types: dict[str, BlockType] = {}
        self.extern_types: dict[str, ExternType] = {}
        self.extern_funcs: dict[str, list[Sig]] = {}
        self.errors: list[str] = []
        self.match_kinds: list[str] = []
        self.externs: list[ir.ExternInstance] = []
        self.actions: dict[str, ir.ActionDecl] = {}
        self.functions: dict[str, ir.FunctionDecl] = {}
        self.parsers: dict[str, ir.ParserDecl] = {}
        self.controls: dict[str, ir.ControlDecl] = {}
        self.digests: list[ir.StructT] = []
        self.package: Optional[str] = None
        self.blocks: dict[str, Union[ir.ParserDecl, ir.ControlDecl]] = {}
        # context while checking bodies
        self.type_vars: dict[str, TypeVar] = {}
        self.prefix = ""  # qualified-name prefix ("MyIngress.")
        self.in_parser = False
        self.cur_function: Optional[ir.FunctionDecl] = None
        self.cur_action = False
        self.cur_control: Optional[ir.ControlDecl] = None
        self.sub_instances: list[SubControl] = []
        self.control_trees: dict[str, Tree] = {}
        self.readonly_ids: frozenset[int] = frozenset()
        self.key_prefix = ""

    # ------------------------------------------------------------------ positions & errors
    def pos(self, node: Any) -> Optional[Pos]:
        if isinstance(node, Token):
            if node.line is None:
                return None
            return self.parsed.linemap.pos(node.line, node.column)
        if isinstance(node, Tree):
            meta = node.meta
            if not getattr(meta, "empty", True):
                return self.parsed.linemap.pos(meta.line, meta.column)
            for c in node.children:
                p = self.pos(c)
                if p is not None:
                    return p
        return None

    def err(self, msg: str, node: Any) -> CompileError:
        return CompileError(msg, self.pos(node))

    def unsupported(self, what: str, node: Any) -> Unsupported:
        return Unsupported(what, self.pos(node))

    def is_builtin(self, node: Any) -> bool:
        p = self.pos(node)
        if p is None:
            return False
        try:
            return str(Path(p.file).resolve().parent) == str(Path(BUILTIN_DIR).resolve())
        except OSError:
            return False

    def source_text(self, node: Tree) -> str:
        meta = node.meta
        return re.sub(r"\s+", "", self.text[meta.start_pos:meta.end_pos])

    # ------------------------------------------------------------------ small tree helpers
    @staticmethod
    def ident(node: Node) -> str:
        """Text of a decl_name / field_name / prefixed_name / raw token."""
        if isinstance(node, Token):
            return str(node)
        while isinstance(node, Tree):
            node = node.children[0]
        return str(node)

    def annotations(self, node: Optional[Tree]) -> dict[str, str]:
        out: dict[str, str] = {}
        if node is None:
            return out
        for tok in node.children:
            m = _ANNOT_RE.match(str(tok))
            if not m:
                raise self.err(f"malformed annotation {tok}", tok)
            name, body = m.group(1), (m.group(2) or "").strip()
            if len(body) >= 2 and body[0] == '"' and body[-1] == '"' and body.count('"') == 2:
                body = body[1:-1]
            out[name] = body
        return out

    @staticmethod
    def child(tree: Tree, data: str) -> Optional[Tree]:
        for c in tree.children:
            if isinstance(c, Tree) and c.data == data:
                return c
        return None

    @staticmethod
    def children(tree: Tree, data: str) -> list[Tree]:
        return [c for c in tree.children if isinstance(c, Tree) and c.data == data]

    def qualify(self, name: str, annotations: dict[str, str]) -> str:
        """P4Info name: ``@name`` overrides the local name; a leading '.' makes it global."""
        local = annotations.get("name", name)
        if local.startswith("."):
            return local[1:]
        return self.prefix + local

    def declare(self, scope: Scope, name: str, sym: Any, node: Any) -> None:
        if name in scope.names:
            raise self.err(f"'{name}' is already declared in this scope", node)
        scope.names[name] = sym

    # ------------------------------------------------------------------ program
    def run(self) -> ir.Program:
        for decl in self.parsed.tree.children:
            self.declaration(decl)
        if self.package is None:
            raise CompileError("program has no package instance 'main' (e.g. V1Switch(...) main;)",
                               Pos(self.source, 1, 1))
        controller_headers = [t for t in self.types.values()
                              if isinstance(t, ir.HeaderT) and "controller_header" in t.annotations]
        seen: set[int] = set()
        uniq_ch = []
        for h in controller_headers:
            if id(h) not in seen:
                seen.add(id(h))
                uniq_ch.append(h)
        return ir.Program(source=self.source, errors=list(self.errors), types=dict(self.types),
                          externs=self.externs, actions=self.actions, functions=self.functions,
                          parsers=self.parsers, controls=self.controls, package=self.package,
                          blocks=self.blocks, digests=self.digests, controller_headers=uniq_ch)

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

    # ---- types
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
            if is_header and not isinstance(t, (ir.BitT, ir.BoolT)):
                if isinstance(t, ir.EnumT) and t.underlying is not None:
                    t = t.underlying
                else:
                    raise self.err(f"header field '{n}' must be bit<W>, int<W> or bool, "
                                   f"not {type_name(t)}", tref)
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
        raise self.unsupported("header unions", d)

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

    def resolve_type(self, t: Tree, allow_void: bool = False) -> ir.Type:
        kind = t.data
        if kind == "type_ref":
            return self.resolve_type(t.children[0], allow_void)
        if kind == "bool_type":
            return ir.BoolT()
        if kind == "error_type":
            return ir.ErrorT()
        if kind == "string_type":
            return ir.StringT()
        if kind == "match_kind_type":
            return ir.MatchKindT()
        if kind == "void_type":
            if not allow_void:
                raise self.err("'void' is not allowed here", t)
            return ir.VoidT()
        if kind == "bit1_type":
            return ir.BitT(1)
        if kind == "int_inf_type":
            return ir.IntT()
        if kind in ("bit_type", "int_type"):
            w = self.width(t.children[0])
            if w <= 0 or (kind == "int_type" and w < 1):
                raise self.err(f"width must be positive, not {w}", t)
            return ir.BitT(w, kind == "int_type")
        if kind == "varbit_type":
            raise self.unsupported("varbit types", t)
        if kind == "type_name":
            name = self.ident(t.children[-1])
            if name in self.type_vars:
                return self.type_vars[name]
            if name in self.types:
                return self.types[name]
            if name in self.extern_types:
                et = self.extern_types[name]
                if et.type_params:
                    raise self.err(f"extern type '{name}' needs type arguments", t)
                return ir.ExternT(name)
            if name in self.block_types:
                raise self.unsupported(f"using the parser/control/package type '{name}' here", t)
            if name in self.parsers or name in self.controls:
                raise self.unsupported(f"using '{name}' as a type (nested parser/control "
                                       "instantiation)", t)
            raise self.err(f"unknown type '{name}'", t)
        if kind == "specialized_type":
            tn, targs = t.children
            name = self.ident(tn.children[-1])
            args = [self.resolve_type_arg(a) for a in targs.children
                    if isinstance(a, Tree) and a.data != "rangle"]
            if name in self.extern_types:
                et = self.extern_types[name]
                if len(args) != len(et.type_params):
                    raise self.err(f"extern '{name}' takes {len(et.type_params)} type "
                                   f"argument(s), not {len(args)}", targs)
                return ir.ExternT(name, args)
            if name in self.block_types:
                raise self.unsupported(f"using the parser/control/package type '{name}' here", t)
            raise self.unsupported(f"generic type '{name}<...>'", t)
        if kind == "tuple_type":
            targs = t.children[0]
            return ir.TupleT([self.resolve_type_arg(a) for a in targs.children
                              if isinstance(a, Tree) and a.data != "rangle"])
        if kind == "stack_type":
            elem = self.resolve_type(t.children[0])
            size = self.const_int(t.children[1], self.global_scope)
            if not isinstance(elem, ir.HeaderT):
                raise self.unsupported(f"stacks of {type_name(elem)} (only header stacks)", t)
            if size <= 0:
                raise self.err("header stack size must be positive", t.children[1])
            return ir.StackT(elem, size)
        if kind == "dontcare_type":
            raise self.unsupported("'_' as a type argument", t)
        raise self.err(f"unexpected type syntax {kind}", t)

    def resolve_type_arg(self, a: Tree) -> ir.Type:
        if a.data in ("type_ref",) or a.data.endswith("_type") or a.data == "type_name":
            return self.resolve_type(a)
        return self.resolve_type(a)

    def width(self, w: Tree) -> int:
        c = w.children[0]
        if isinstance(c, Token):
            value, fixed = parse_int_literal(str(c))
            if fixed is not None:
                raise self.err("a width must be a plain integer", c)
            return value
        return self.const_int(c, self.global_scope)

    def const_int(self, node: Tree, scope: Scope) -> int:
        e = self.expr(node, scope, None)
        if not isinstance(e, ir.Literal) or isinstance(e.value, (bool, str)):
            raise self.err("expected a compile-time integer constant", node)
        return int(e.value)

    # ---- externs and block types
    def _sig(self, name: str, tparams: Optional[Tree], params: Tree, ret: ir.Type) -> Sig:
        return Sig(name, self._tparam_names(tparams), self.params(params), ret)

    def _with_type_vars(self, names: list[str]):
        outer = self.type_vars

        class _Ctx:
            def __enter__(ctx):
                self.type_vars = dict(outer)
                for n in names:
                    self.type_vars[n] = TypeVar(n)

            def __exit__(ctx, *exc):
                self.type_vars = outer
        return _Ctx()

    @staticmethod
    def _tparam_names(tp: Optional[Tree]) -> list[str]:
        if tp is None:
            return []
        return [Checker.ident(c) for c in tp.children
                if isinstance(c, Tree) and c.data == "decl_name"]

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
                    raise self.unsupported("abstract methods", m)

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
            for p in self.children(self.child(d, "params"), "param"):
                params.append(self._block_param(p))
            self.block_types[name] = BlockType(kind, Sig(name, tps, params, ir.VoidT()))

    @staticmethod
    def type_head(tref: Tree) -> Optional[str]:
        """The type name a type_ref/specialized_type starts with (None for bit<8> etc.)."""
        if tref.data == "type_ref":
            tref = tref.children[0]
        if tref.data == "specialized_type":
            tref = tref.children[0]
        if tref.data == "type_name":
            return Checker.ident(tref.children[-1])
        return None

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

    # ---- parameters
    def params(self, params: Tree) -> list[Param]:
        out = []
        names = set()
        for p in self.children(params, "param"):
            prm = self.params_one(p)
            if prm.name in names:
                raise self.err(f"duplicate parameter '{prm.name}'", p)
            names.add(prm.name)
            out.append(prm)
        return out

    def params_one(self, p: Tree) -> Param:
        direction = None
        tref = None
        pname = None
        default = None
        for c in p.children:
            if isinstance(c, Tree):
                if c.data == "direction":
                    direction = str(c.children[0])
                elif c.data in TYPE_NODES and tref is None:
                    tref = c
                elif c.data == "field_name":
                    pname = self.ident(c)
                elif c.data == "annots":
                    pass
                else:
                    default = c
            else:
                default = c
        assert tref is not None and pname is not None
        return Param(pname, direction, self.resolve_type(tref), default)

    def make_vars(self, params: list[Param], p_trees: list[Tree]) -> list[ir.Var]:
        out = []
        for prm, tree in zip(params, p_trees):
            if isinstance(prm.type, (ir.IntT, ir.StringT, ir.TupleT, ir.MatchKindT)):
                raise self.unsupported(f"parameters of type {type_name(prm.type)}", tree)
            if prm.default is not None:
                raise self.unsupported("default parameter values", tree)
            out.append(ir.Var(prm.name, prm.type, "param", prm.direction, self.pos(tree),
                              self.annotations(tree.children[0])))
        return out

    # ---- instantiation
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
            self.package_instance(tname, args, name_node, d)
            return
        if tname is not None and tname in self.controls and locals_out is not None \
                and self.cur_control is not None:
            self.declare_subcontrol(d, tname, scope)
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
            if cargs.children:
                raise self.unsupported("parser/control constructor arguments", cargs)
            bname = self.type_head(tref)
            block = self.parsers.get(bname) if kind == "parser" else self.controls.get(bname)
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

    def decl_abstract_instantiation(self, d: Tree) -> None:
        raise self.unsupported("instantiations with abstract method implementations", d)

    # ---- actions and functions
    def decl_action_decl(self, d: Tree, scope: Optional[Scope] = None) -> ir.ActionDecl:
        scope = scope or self.global_scope
        annots, name_node, params, body = d.children
        a = self.annotations(annots)
        name = self.ident(name_node)
        ptrees = self.children(params, "param")
        prms = self.params(params)
        for prm, pt in zip(prms, ptrees):
            if prm.default is not None:
                raise self.unsupported("default values of action parameters", pt)
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

    # ---- parsers
    def decl_parser_decl(self, d: Tree) -> None:
        annots = d.children[0]
        name_node = self.child(d, "decl_name")
        name = self.ident(name_node)
        if self.child(d, "type_params") is not None:
            raise self.unsupported("generic parsers", self.child(d, "type_params"))
        cp = self.child(d, "ctor_params")
        if cp is not None and cp.children and self.child(cp, "params").children:
            raise self.unsupported("parser constructor parameters", cp)
        params = self.child(d, "params")
        ptrees = self.children(params, "param")
        vars_ = self.make_vars(self.params(params), ptrees)
        pd = ir.ParserDecl(name, vars_, [], {}, self.annotations(annots), self.pos(d))
        if name in self.parsers or name in self.controls or name in self.types:
            raise self.err(f"'{name}' is already declared", name_node)
        scope = Scope(self.global_scope)
        for v in vars_:
            self.declare(scope, v.name, v, d)
        saved = (self.prefix, self.in_parser)
        self.prefix, self.in_parser = self.qualify(name, pd.annotations) + ".", True
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
                st = self.parser_state(s, scope, state_names)
                if st.name in pd.states:
                    raise self.err(f"duplicate state '{st.name}'", s)
                pd.states[st.name] = st
        finally:
            self.prefix, self.in_parser = saved
        if "start" not in pd.states:
            raise self.err(f"parser '{name}' has no 'start' state", d)
        self.parsers[name] = pd

    def parser_state(self, s: Tree, scope: Scope, state_names: set[str]) -> ir.ParserState:
        name_node = s.children[1]
        name = self.ident(name_node)
        if name in ("accept", "reject"):
            raise self.err(f"state '{name}' is predefined", name_node)
        inner = Scope(scope)
        stmts: list[ir.Stmt] = []
        transition: Union[str, ir.Select] = "reject"
        for c in s.children[2:]:
            if isinstance(c, Tree) and c.data == "goto_state":
                transition = self._state_ref(c.children[0], state_names)
            elif isinstance(c, Tree) and c.data == "goto_select":
                transition = self.select(c.children[0], inner, state_names)
            elif isinstance(c, Tree):
                st = self.stmt(c, inner)
                if st is not None:
                    stmts.append(st)
        return ir.ParserState(name, stmts, transition, self.pos(s))

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

    def keysets(self, ks: Tree, keys: list[ir.Expr], scope: Scope,
                match_kinds: Optional[list[str]]) -> list[ir.KeySet]:
        if ks.data == "tuple_keyset":
            items = list(ks.children)
        elif ks.data == "ks_default" and len(keys) != 1:
            return [ir.KsDefault() for _ in keys]
        else:
            items = [ks]
        if len(items) != len(keys):
            raise self.err(f"keyset has {len(items)} element(s) but there are {len(keys)} "
                           "key(s)", ks)
        out = []
        for i, (item, key) in enumerate(zip(items, keys)):
            mk = match_kinds[i] if match_kinds else None
            out.append(self.keyset(item, key.type, scope, mk))
        return out

    def _ks_value(self, node: Tree, t: ir.Type, scope: Scope) -> int:
        e = self.coerce(self.expr(node, scope, t), t, node)
        if not isinstance(e, ir.Literal):
            raise self.err("keyset values must be compile-time constants", node)
        return int(e.value)

    def keyset(self, item: Tree, t: ir.Type, scope: Scope, mk: Optional[str]) -> ir.KeySet:
        if isinstance(item, Tree) and item.data == "ks_default":
            return ir.KsDefault()
        if isinstance(item, Tree) and item.data == "ks_mask":
            if mk in ("exact", "range", "optional"):
                raise self.err(f"a mask ('&&&') is not allowed for a {mk} key", item)
            v = self._ks_value(item.children[0], t, scope)
            m = self._ks_value(item.children[1], t, scope)
            if mk == "lpm":
                w = t.width if isinstance(t, ir.BitT) else 1
                if (m | (m - 1)) & mask(w) != mask(w) and m != 0:
                    raise self.err("an lpm mask must be a prefix (ones followed by zeros)", item)
            return ir.KsMask(v & m, m)
        if isinstance(item, Tree) and item.data == "ks_range":
            if mk in ("exact", "lpm", "ternary", "optional"):
                raise self.err(f"a range ('..') is not allowed for a {mk} key", item)
            return ir.KsRange(self._ks_value(item.children[0], t, scope),
                              self._ks_value(item.children[1], t, scope))
        v = self._ks_value(item, t, scope)
        if mk == "lpm":
            w = t.width if isinstance(t, ir.BitT) else 1
            return ir.KsMask(v, mask(w))
        return ir.KsValue(v)

    # ---- controls
    def decl_control_decl(self, d: Tree) -> None:
        annots = d.children[0]
        name_node = self.child(d, "decl_name")
        name = self.ident(name_node)
        if self.child(d, "type_params") is not None:
            raise self.unsupported("generic controls", self.child(d, "type_params"))
        cp = self.child(d, "ctor_params")
        if cp is not None and cp.children and self.child(cp, "params").children:
            raise self.unsupported("control constructor parameters", cp)
        if name in self.parsers or name in self.controls or name in self.types:
            raise self.err(f"'{name}' is already declared", name_node)
        params = self.child(d, "params")
        ptrees = self.children(params, "param")
        vars_ = self.make_vars(self.params(params), ptrees)
        cd = ir.ControlDecl(name, vars_, [], {}, {}, ir.Block(None, []),
                            self.annotations(annots), self.pos(d))
        scope = Scope(self.global_scope)
        for v in vars_:
            self.declare(scope, v.name, v, d)
        saved = self.prefix
        self.prefix = self.qualify(name, cd.annotations) + "."
        try:
            cd.apply = self.control_body(d, scope, cd, "")
        finally:
            self.prefix = saved
        self.control_trees[name] = d
        self.controls[name] = cd

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
                    raise self.unsupported("instantiations with abstract method "
                                           "implementations", c)
            body = self.block(d.children[-1], Scope(scope))
            if inits:
                body = ir.Block(body.pos, inits + [body])
            # an instance that is never applied still owns its tables (as with p4c)
            for inst in self.sub_instances:
                if inst.body is None:
                    self.instantiate_subcontrol(inst, None)
        finally:
            self.cur_control, self.sub_instances, self.key_prefix = saved
        return body

    def declare_subcontrol(self, d: Tree, tname: str, scope: Scope) -> None:
        annots, _tref, args, name_node = d.children
        if self.cur_control is None:
            raise self.unsupported(f"instantiating control '{tname}' outside a control", d)
        if args.children:
            raise self.unsupported("control constructor arguments", args)
        name = self.ident(name_node)
        a = self.annotations(annots)
        tree = self.control_trees[tname]
        params = self.params(self.child(tree, "params"))
        inst = SubControl(name, tname, tree, params, self.qualify(name, a) + ".",
                          self.cur_control, self.key_prefix + name + ".", self.pos(d))
        self.declare(scope, name, inst, name_node)
        self.sub_instances.append(inst)

    def instantiate_subcontrol(self, inst: "SubControl", alias: Optional[list[ir.Var]]) -> None:
        """Check the instance's control body once, with its parameters bound either to the
        caller's variables (``alias``) or to fresh variables of the enclosing control."""
        scope = Scope(self.global_scope)
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
            raise self.unsupported("'return' in the apply block of a control that is "
                                   "instantiated inside another control", inst.tree)

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
        return False

    def table(self, d: Tree, scope: Scope) -> ir.TableDecl:
        annots, name_node = d.children[:2]
        a = self.annotations(annots)
        name = self.ident(name_node)
        t = ir.TableDecl(name, self.qualify(name, a), [], [], None, False, [], False, None,
                         annotations=a, pos=self.pos(d))
        self.declare(scope, name, t, name_node)
        props = d.children[2:]
        seen: set[str] = set()
        entries_prop = None
        default_prop = None

        def once(pname: str, node: Tree) -> None:
            if pname in seen:
                raise self.err(f"duplicate table property '{pname}'", node)
            seen.add(pname)

        for p in props:
            if p.data == "key_prop":
                once("key", p)
                for k in self.children(p, "key_elem"):
                    t.keys.append(self.table_key(k, scope))
            elif p.data == "actions_prop":
                once("actions", p)
                for item in self.children(p, "action_item"):
                    ref = self.action_ref(item.children[1], scope, listed=None)
                    ref.annotations = self.annotations(item.children[0])
                    ref.pos = self.pos(item)
                    if any(r.action is ref.action for r in t.actions):
                        raise self.err(f"action '{ref.action.name}' listed twice", item)
                    t.actions.append(ref)
            elif p.data == "entries_prop":
                once("entries", p)
                entries_prop = p
            elif p.data == "simple_prop":
                pname = self.ident(self.child(p, "decl_name"))
                once(pname, p)
                is_const = self.child(p, "const_kw") is not None
                value = p.children[-1]
                if pname == "default_action":
                    default_prop = (value, is_const, p)
                elif pname == "size":
                    t.size = self.const_int(value, scope)
                    if t.size < 0:
                        raise self.err("table size must not be negative", value)
                elif pname in ("counters", "meters"):
                    inst = self.expr_symbol(value, scope)
                    want = "direct_counter" if pname == "counters" else "direct_meter"
                    if not isinstance(inst, ir.ExternInstance) or inst.extern != want:
                        raise self.err(f"'{pname}' must name a {want} instance", value)
                    if pname == "counters":
                        t.direct_counter = inst
                    else:
                        t.direct_meter = inst
                elif pname == "implementation":
                    raise self.unsupported("table implementations (action profiles/selectors)",
                                           p)
                elif pname == "support_timeout":
                    raise self.unsupported("idle timeouts (support_timeout)", p)
                else:
                    raise self.unsupported(f"table property '{pname}'", p)
        if default_prop is not None:
            value, is_const, p = default_prop
            t.default_action = self.default_action(value, t, scope)
            t.default_is_const = is_const
        if entries_prop is not None:
            t.entries_are_const = self.child(entries_prop, "const_kw") is not None
            if not t.entries_are_const:
                raise self.unsupported("non-const table 'entries' (use 'const entries')",
                                       entries_prop)
            for e in self.children(entries_prop, "entry"):
                t.const_entries.append(self.const_entry(e, t, scope))
        if not t.actions:
            raise self.err(f"table '{name}' has no 'actions' property", d)
        return t

    def expr_symbol(self, node: Tree, scope: Scope) -> Any:
        if node.data == "name_ref":
            return scope.lookup(self.ident(node.children[0]))
        if node.data == "top_name_ref":
            return self.global_scope.lookup(self.ident(node.children[0]))
        return None

    def table_key(self, k: Tree, scope: Scope) -> ir.TableKey:
        expr_tree, mk_node, annots = k.children
        e = self.expr(expr_tree, scope, None)
        if not isinstance(e.type, (ir.BitT, ir.BoolT, ir.EnumT, ir.ErrorT)) \
                or isinstance(e.type, ir.EnumT) and e.type.underlying is None:
            if isinstance(e.type, ir.IntT):
                raise self.err("table key needs a type with a width", expr_tree)
            raise self.err(f"cannot match on {type_name(e.type)}", expr_tree)
        mk = self.ident(mk_node)
        if mk not in self.match_kinds:
            raise self.err(f"unknown match kind '{mk}'", mk_node)
        if mk == "selector":
            raise self.unsupported("selector match kind (action selectors)", mk_node)
        a = self.annotations(annots)
        name = a.get("name") or self.source_text(expr_tree)
        return ir.TableKey(e, mk, name, a, self.pos(k))

    def action_ref(self, node: Tree, scope: Scope, listed: Optional[ir.TableDecl],
                   const_args: bool = False) -> ir.ActionRef:
        """An action in a table's action list (``listed`` None) or a default/const entry."""
        if node.data == "action_ref":
            pn = node.children[0]
            arg_tree = node.children[1] if len(node.children) > 1 else None
        else:
            pn, arg_tree = node, None
        sym = self.global_scope.lookup(self.ident(pn)) if pn.data == "top_prefixed_name" \
            else scope.lookup(self.ident(pn))
        if not isinstance(sym, ir.ActionDecl):
            raise self.err(f"'{self.ident(pn)}' is not an action", pn)
        args_nodes = list(arg_tree.children) if arg_tree is not None else []
        directional = [v for v in sym.params if v.direction is not None]
        if listed is None:
            if args_nodes and len(args_nodes) != len(directional):
                raise self.err(f"action '{sym.name}' in an actions list binds its "
                               f"{len(directional)} directional parameter(s)", node)
            if not args_nodes and directional:
                raise self.err(f"action '{sym.name}' needs its directional argument(s) "
                               "bound in the actions list", node)
            args: list[Optional[ir.Expr]] = []
            for v, an in zip(directional, args_nodes):
                args.append(self.arg_for(v.direction, v.type, an, scope))
            args += [None] * (len(sym.params) - len(directional))
            return ir.ActionRef(sym, args, pos=self.pos(node))
        ref = next((r for r in listed.actions if r.action is sym), None)
        if ref is None:
            raise self.err(f"action '{sym.name}' is not in the actions of table "
                           f"'{listed.name}'", pn)
        data = [v for v in sym.params if v.direction is None]
        if len(args_nodes) == len(data) and directional:
            # only the action data given: directional arguments are the listed ones
            it = iter(args_nodes)
            args_nodes = [None if v.direction is not None else next(it) for v in sym.params]
        elif len(args_nodes) != len(sym.params):
            raise self.err(f"action '{sym.name}' takes {len(sym.params)} argument(s), "
                           f"{len(args_nodes)} given", node)
        args = []
        for i, (v, an) in enumerate(zip(sym.params, args_nodes)):
            if v.direction is not None:
                args.append(ref.args[i] if an is None else
                            self.arg_for(v.direction, v.type, an, scope))
            else:
                e = self.coerce(self.expr(an, scope, v.type), v.type, an)
                if not isinstance(e, ir.Literal):
                    raise self.err("action data here must be a compile-time constant", an)
                args.append(e)
        return ir.ActionRef(sym, args, dict(ref.annotations), self.pos(node))

    def arg_for(self, direction: Optional[str], t: ir.Type, node: Tree,
                scope: Scope) -> ir.Expr:
        e = self.coerce(self.expr(node, scope, t), t, node)
        if direction in ("out", "inout"):
            self.check_lvalue(e, node)
        return e

    def default_action(self, value: Tree, t: ir.TableDecl, scope: Scope) -> ir.ActionRef:
        if value.data == "call":
            callee, args = value.children
            if callee.data not in ("name_ref", "top_name_ref"):
                raise self.err("default_action must be an action call", value)
            node = Tree("action_ref", [Tree("prefixed_name" if callee.data == "name_ref"
                                            else "top_prefixed_name", callee.children,
                                            callee.meta), args], value.meta)
        elif value.data in ("name_ref", "top_name_ref"):
            node = Tree("prefixed_name" if value.data == "name_ref" else "top_prefixed_name",
                        value.children, value.meta)
        else:
            raise self.err("default_action must be an action call", value)
        ref = self.action_ref(node, scope, t)
        if "tableonly" in ref.annotations:
            raise self.err(f"action '{ref.action.name}' is @tableonly and cannot be the default",
                           value)
        return ref

    def const_entry(self, e: Tree, t: ir.TableDecl, scope: Scope) -> ir.ConstEntry:
        a = self.annotations(e.children[0])
        prio_node = self.child(e, "entry_priority")
        rest = [c for c in e.children[1:] if not (isinstance(c, Tree) and c.data in
                                                   ("const_kw", "entry_priority", "annots"))]
        ks, aref = rest[0], rest[1]
        keysets = self.keysets(ks, [k.expr for k in t.keys], scope,
                               [k.match_kind for k in t.keys])
        ref = self.action_ref(aref, scope, t)
        if "defaultonly" in ref.annotations:
            raise self.err(f"action '{ref.action.name}' is @defaultonly", aref)
        priority = None
        if prio_node is not None:
            priority = self.const_int(prio_node.children[0], scope)
        elif "priority" in a:
            try:
                priority = int(a["priority"], 0)
            except ValueError:
                raise self.err("@priority needs an integer", e) from None
        return ir.ConstEntry(keysets, ref, priority, self.pos(e))

    # ------------------------------------------------------------------ statements
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
        if isinstance(t, ir.TupleT):
            raise self.unsupported("variables of tuple type", tref)
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
        if kind == "call_stmt":
            callee = s.children[1]
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

    # ------------------------------------------------------------------ lvalues
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

    # ------------------------------------------------------------------ coercion
    def coerce(self, e: ir.Expr, t: ir.Type, node: Any) -> ir.Expr:
        """Implicit conversions P4_16 allows: int literal -> bit/int<W>, list -> struct/header/
        tuple, serializable enum -> its underlying type."""
        if same_type(e.type, t):
            return e
        if isinstance(t, TypeVar):
            return e
        if isinstance(e.type, ir.IntT) and isinstance(t, ir.BitT) and isinstance(e, ir.Literal):
            v = int(e.value)
            lo = -(1 << (t.width - 1)) if t.signed else -(1 << t.width)
            if v >= (1 << t.width) or v < lo:
                raise self.err(f"value {v} does not fit in {type_name(t)}", node)
            return ir.Literal(t, e.pos, v & mask(t.width))
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

    # ------------------------------------------------------------------ expressions
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
        if value >= (1 << t.width):
            raise self.err(f"value {value} does not fit in {type_name(t)}", n)
        return ir.Literal(t, self.pos(n), value)

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

    # ---- operators
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
        if isinstance(left.type, (ir.ExternT, ir.StackT, ir.TupleT, ir.StringT)):
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
            raise self.unsupported(f"operator {op} on signed values", n)
        return self._fold(ir.Binary(t, self.pos(n), op, left, right), t)

    x_bor = x_bxor = x_band = x_add = x_mul = _arith

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

    # ---- postfix
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
        if isinstance(bt, (ir.HeaderT, ir.StructT)):
            for f in bt.fields:
                if f.name == fname:
                    return ir.Member(f.type, self.pos(n), base, fname)
            raise self.err(f"{type_name(bt)} has no field '{fname}'", fname_n)
        if isinstance(bt, ir.StackT):
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
        if not isinstance(base.type, ir.StackT):
            raise self.err(f"cannot index a value of type {type_name(base.type)}", n)
        idx = self.expr(n.children[1], scope, None)
        if isinstance(idx.type, ir.IntT):
            if not 0 <= int(idx.value) < base.type.size:
                raise self.err(f"index {idx.value} out of bounds for a stack of "
                               f"{base.type.size}", n.children[1])
            idx = ir.Literal(ir.BitT(32), idx.pos, int(idx.value))
        elif not (isinstance(idx.type, ir.BitT) and not idx.type.signed):
            raise self.err("a stack index must be unsigned", n.children[1])
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
                if mname == "extract" and len(arg_nodes) == 2:
                    raise self.unsupported("extract with a variable size (varbit)", n)
                args_e, dirs, (bind, sig) = self.bind_args(sigs, arg_nodes, targs, {}, scope, n,
                                                           mname)
                ret = self.subst(sig.ret, bind)
                if isinstance(ret, TypeVar):
                    raise self.err(f"{mname} needs an explicit type argument", n)
                if mname == "extract":
                    at = args_e[0].type
                    if not isinstance(at, ir.HeaderT):
                        raise self.err(f"extract needs a header, not {type_name(at)}", n)
                if mname == "lookahead" and not isinstance(ret, (ir.BitT, ir.HeaderT, ir.BoolT)):
                    raise self.unsupported(f"lookahead of {type_name(ret)}", n)
                if mname == "emit" and not isinstance(args_e[0].type,
                                                      (ir.HeaderT, ir.StackT, ir.StructT)):
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
                params = [Param(v.name, v.direction, v.type) for v in sym.params]
                sig = Sig(name, [], params, ir.VoidT())
                args_e, dirs, _ = self.bind_args([sig], arg_nodes, [], {}, scope, n, name)
                return ir.ActionCall(ir.VoidT(), pos, args_e, [v.direction for v in sym.params],
                                     sym)
            if isinstance(sym, ir.FunctionDecl):
                params = [Param(v.name, v.direction, v.type) for v in sym.params]
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
            if isinstance(a, Tree) and a.data == "dontcare_arg":
                raise self.unsupported("'_' (don't-care) arguments", a)
            pt = self.subst(p.type, bind)
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


def _always_returns(st: ir.Stmt) -> bool:
    if isinstance(st, (ir.Return, ir.Exit)):
        return True
    if isinstance(st, ir.Block):
        return any(_always_returns(s) for s in st.stmts)
    if isinstance(st, ir.If):
        return st.other is not None and _always_returns(st.then) and _always_returns(st.other)
    return False


def check(parsed: ParsedText, source: str) -> ir.Program:
    return Checker(parsed, source).run()
