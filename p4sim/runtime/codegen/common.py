"""What every part of the code generator shares: the ``Writer`` of indented source lines, the
``Scope`` of the function being generated, what tables learn about their actions, and small
helpers on P4 types and generated code."""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from p4sim.errors import CompileError
from p4sim.frontend import ir
from p4sim.runtime.irwalk import bitmask


def gress_of(role: Optional[str]) -> str:
    return "egress" if role and role.startswith("egress") else "ingress"


@dataclass(eq=False)
class Pinned(ir.Expr):
    """A value already computed into a Python temporary: an lvalue's run-time stack index
    evaluated before the right-hand side of its assignment (P4_16: lvalues are evaluated first)."""

    code: str = ""


# Python expressions whose value cannot change when other code runs in between: literals and
# temporaries assigned once.  Anything else read before a later operand's statements must be
# captured into a temporary first, so side effects of later operands cannot change it.
STABLE_CODE = re.compile(r"^(?:_t\d+(?:\[\d+\])?|-?\d+|True|False|None|'[^'\\]*')$")


def indented(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


def unpack_fields(obj: str, layout: list[tuple[str, int, int, bool]], shifted: Callable[[int], str]) -> list[str]:
    """Lines setting every field of ``obj`` from one packed value: ``layout`` is
    ``objects.header_layout``'s (attr, width, shift, is_bool) and ``shifted(shift)`` the packed
    value shifted so that the field is in the low bits."""
    lines = []
    for attr, width, s, is_bool in layout:
        v = f"{shifted(s)} & {bitmask(width)}"
        lines.append(f"{obj}.{attr} = {'bool(' + v + ')' if is_bool else v}")
    return lines


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
