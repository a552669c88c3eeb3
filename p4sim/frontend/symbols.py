"""Names that exist only while checking (type variables, signatures, scopes, inlined
control instances) and type helpers shared by the checker modules."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from lark import Token, Tree

from p4sim.errors import Pos
from p4sim.frontend import ir

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
    abstracts: dict[str, Sig] = field(default_factory=dict)  # TNA: RegisterAction.apply


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
    consts: dict = field(default_factory=dict)  # constructor parameter name -> ir.Literal


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


# An annotation token as the lexer keeps it: @name, optionally with its (...) or [...] body.
ANNOTATION_RE = re.compile(r"@([A-Za-z_]\w*)\s*(?:[(\[](.*)[)\]])?\Z", re.DOTALL)


def type_name(t: ir.Type) -> str:
    """How a type is shown in error messages (P4 syntax)."""
    if isinstance(t, ir.BitT):
        return f"{'int' if t.signed else 'bit'}<{t.width}>"
    if isinstance(t, ir.BoolT):
        return "bool"
    if isinstance(t, ir.IntT):
        return "int"
    if isinstance(t, ir.VarbitT):
        return f"varbit<{t.max_width}>"
    if isinstance(t, ir.VoidT):
        return "void"
    if isinstance(t, ir.StringT):
        return "string"
    if isinstance(t, ir.ErrorT):
        return "error"
    if isinstance(t, ir.MatchKindT):
        return "match_kind"
    if isinstance(t, (ir.EnumT, ir.HeaderT, ir.StructT, ir.HeaderUnionT)):
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
                      ir.MatchKindT, ir.VarbitT)):
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
