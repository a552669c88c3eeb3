"""What every part of the checker shares: its state, positions and errors, annotations,
qualified names, scopes and type resolution."""
from __future__ import annotations

import re
from typing import Any, Optional, Union

from lark import Token, Tree

from p4sim.errors import CompileError, Pos, Unsupported
from p4sim.frontend import ir
from p4sim.frontend.consteval import parse_int_literal
from p4sim.frontend.parser import ParsedText
from p4sim.frontend.preprocess import is_builtin_source
from p4sim.frontend.symbols import (ANNOTATION_RE, TYPE_NODES, BlockType, ExternType, Node, Param, Scope,
                                    Sig, SubControl, TypeVar, type_name)


class CompileWarning(UserWarning):
    """Something p4c accepts with a warning (e.g. a literal truncated to its width); the message
    starts with file:line:col like p4c's."""


class CheckerBase:
    """State of one check run; the subclasses add expressions, tables, blocks, declarations."""

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
            if prm.default is not None and prm.direction not in (None, "in"):
                raise self.err("only in and directionless parameters can have a default value",
                               tree)
            v = ir.Var(prm.name, prm.type, "param", prm.direction, self.pos(tree),
                       self.annotations(tree.children[0]))
            if prm.default is not None:  # used by calls and entries that leave the argument out
                self.__dict__.setdefault("param_defaults", {})[id(v)] = prm.default
            out.append(v)
        return out

    def param_default(self, v: ir.Var) -> Optional[Tree]:
        """The default value (a parse tree) declared for parameter ``v``, if any."""
        return getattr(self, "param_defaults", {}).get(id(v))

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
        self.arch = "v1model"
        self.tofino_target = 0
        self.pipelines: dict[str, dict] = {}  # TNA: Pipeline instances by name -> blocks by role
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
        return is_builtin_source(p.file)

    def source_text(self, node: Tree) -> str:
        meta = node.meta
        return re.sub(r"\s+", "", self.text[meta.start_pos:meta.end_pos])

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
            m = ANNOTATION_RE.match(str(tok))
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

    @staticmethod
    def type_head(tref: Tree) -> Optional[str]:
        """The type name a type_ref/specialized_type starts with (None for bit<8> etc.)."""
        if tref.data == "type_ref":
            tref = tref.children[0]
        if tref.data == "specialized_type":
            tref = tref.children[0]
        if tref.data == "type_name":
            return CheckerBase.ident(tref.children[-1])
        return None

    def expr_symbol(self, node: Tree, scope: Scope) -> Any:
        if node.data == "name_ref":
            return scope.lookup(self.ident(node.children[0]))
        if node.data == "top_name_ref":
            return self.global_scope.lookup(self.ident(node.children[0]))
        return None

    def const_int(self, node: Tree, scope: Scope) -> int:
        e = self.expr(node, scope, None)
        if not isinstance(e, ir.Literal) or isinstance(e.value, (bool, str)):
            raise self.err("expected a compile-time integer constant", node)
        return int(e.value)

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
            w = self.width(t.children[0])
            if w <= 0:
                raise self.err(f"width must be positive, not {w}", t)
            return ir.VarbitT(w)
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
            args = [self.resolve_type(a) for a in targs.children
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
            return ir.TupleT([self.resolve_type(a) for a in targs.children
                              if isinstance(a, Tree) and a.data != "rangle"])
        if kind == "stack_type":
            elem = self.resolve_type(t.children[0])
            size = self.const_int(t.children[1], self.global_scope)
            if not isinstance(elem, (ir.HeaderT, ir.HeaderUnionT)):
                # P4_16 <= 1.2.4 allows header stacks only; newer p4c front ends also take
                # arrays of other types (Type_Array), which no BMv2 test program uses
                raise self.unsupported(f"arrays of {type_name(elem)} (only header stacks: "
                                       "arrays of headers or header unions)", t)
            if size <= 0:
                raise self.err("header stack size must be positive", t.children[1])
            return ir.StackT(elem, size)
        if kind == "dontcare_type":
            if self.is_builtin(t):  # TNA's ``Register<_, _> reg``: any type arguments
                return TypeVar("_")
            raise self.unsupported("'_' as a type argument", t)
        raise self.err(f"unexpected type syntax {kind}", t)

    def width(self, w: Tree) -> int:
        c = w.children[0]
        if isinstance(c, Token):
            value, fixed = parse_int_literal(str(c))
            if fixed is not None:
                raise self.err("a width must be a plain integer", c)
            return value
        return self.const_int(c, self.global_scope)

    @staticmethod
    def _tparam_names(tp: Optional[Tree]) -> list[str]:
        if tp is None:
            return []
        return [CheckerBase.ident(c) for c in tp.children
                if isinstance(c, Tree) and c.data == "decl_name"]

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
