"""Compile the IR once into Python code: one Python function per parser, control, action and
function, built as source text and ``exec``-ed into a private namespace.

WHY source text rather than a tree of nested closures: a nested-closure interpreter pays one
Python call per IR node per packet; generating straight-line Python lets CPython run the
per-packet path at its own speed (the L3 benchmark's >= 20 kpps target needs that).  Either way
the IR is walked exactly once, at load time; the per-packet path never looks at the IR.

Conventions of the generated code (see objects.py for the composite-type classes):

* scalar values are ints holding the W-bit pattern; every arithmetic result is masked;
* composite values (headers, structs, stacks) are objects updated *in place* (``_set``), so a
  reference held by a caller always sees an assignment made by a callee;
* a control's parameters and control-level locals live on a per-apply frame object ``F`` that its
  actions and table key functions receive; other locals are Python locals;
* an action/function returns a tuple of its scalar ``out``/``inout`` parameters (copy-out); the
  caller writes them back;
* runtime services (the current packet's standard metadata, clone/resubmit requests, digests ...)
  go through the context object ``X`` (see ``pipeline.PacketContext``).

The compiler is one class, ``ProgramCompiler``, on the IR walk it shares with the native
backend (``runtime.irwalk``: what each node means), assembled from one part per kind of
construct, each in a module of its own, that spells the walk in Python (with the templates of
``spelling.toml``):

* ``common``      -- ``Writer``, ``Scope``, ``ActionInfo``/``TableInfo`` and helpers;
* ``base``        -- the state every part shares, and naming;
* ``expressions`` -- expressions, lvalues, calls with copy-in/copy-out;
* ``externs``     -- v1model externs and extern functions, data lists (hash/checksum/digest);
* ``statements``  -- statements and the packet_in/packet_out methods;
* ``parsers``     -- parsers, states, transitions;
* ``controls``    -- controls, tables, actions, functions.

An architecture's own externs (TNA's) are compiled by the module the ``archs`` registry names.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from p4sim.errors import CompileError
from p4sim.frontend import ir
from p4sim.runtime import archs, support
from p4sim.runtime.codegen.common import ActionInfo, Pinned, Scope, TableInfo, Writer, enum_member
from p4sim.runtime.codegen.controls import ControlCompiler
from p4sim.runtime.codegen.expressions import ExpressionCompiler
from p4sim.runtime.codegen.externs import ExternCompiler
from p4sim.runtime.codegen.parsers import ParserCompiler
from p4sim.runtime.codegen.statements import StatementCompiler
from p4sim.runtime.objects import is_composite

__all__ = ["ActionInfo", "CompiledCode", "Pinned", "ProgramCompiler", "Scope", "TableInfo", "Writer",
           "base_namespace", "enum_member"]


class ProgramCompiler(ExpressionCompiler, ExternCompiler, StatementCompiler, ParserCompiler, ControlCompiler):
    """Turns an ``ir.Program`` into Python source plus the tables it needs."""

    # ------------------------------------------------------------------ whole program
    def compile(self) -> "CompiledCode":
        prog = self.prog
        roles = ir.roles_of(prog.arch)
        missing = [r for r in roles if r not in prog.blocks]
        if missing:
            raise CompileError(f"the package {prog.package!r} lacks {prog.arch} blocks: {', '.join(missing)}")
        for f in prog.functions.values():
            self.compile_function(f)
        for a in prog.actions.values():
            self.action_name(a, None)
        self.drain_actions({})
        role_fn = {}
        for role in roles:  # the package's instances only (sub-controls are inlined in them)
            b = prog.blocks[role]
            if isinstance(b, ir.ParserDecl):
                self.cur_role = role
                role_fn[role] = self.compile_parser(b)
                self.cur_role = None
            else:
                role_fn[role] = self.compile_control(b, role)
        for r in ("parser", "ingress_parser", "egress_parser", "ingress", "egress", "ingress_deparser",
                  "egress_deparser"):
            for v in prog.blocks[r].params if r in prog.blocks else ():
                if is_composite(v.type):  # the pipeline instantiates these per packet
                    self.classes.name(v.type)
        if archs.get(prog.arch).builds_intrinsic_types:
            for t in prog.types.values():
                if isinstance(t, (ir.StructT, ir.HeaderT)) and "__intrinsic_metadata" in t.annotations:
                    self.classes.name(t)
        src = "\n".join(self.classes.src) + "\n" + self.w.text()
        return CompiledCode(self, src, role_fn)


@dataclass
class CompiledCode:
    compiler: ProgramCompiler
    source: str
    role_fn: dict[str, str]

    def namespace(self, base: dict[str, Any]) -> dict[str, Any]:
        """Execute the generated source in a fresh namespace seeded with ``base`` (each switch
        gets its own classes and functions bound to its own tables and extern state)."""
        code = self.__dict__.get("_code_obj")
        if code is None:
            code = self.__dict__["_code_obj"] = compile(self.source, "<p4sim generated>", "exec")
        ns = dict(base)
        exec(code, ns)
        return ns


def base_namespace(err: dict[str, int]) -> dict[str, Any]:
    """Names every generated module may use."""
    from p4sim.runtime import hashing

    short = err.get("PacketTooShort", 1)
    soob = err.get("StackOutOfBounds", 3)

    def stk_next(s: Any) -> Any:
        if s.n >= s.SIZE:
            raise support.ParserError(soob)
        return s.e[s.n]

    def stk_last(s: Any) -> Any:
        if s.n <= 0:
            raise support.ParserError(soob)
        return s.e[s.n - 1]

    def look(data: bytes, pos: int, nbits: int, w: int) -> int:
        e = pos + w
        if e > nbits:
            raise support.ParserError(short)
        return (int.from_bytes(data[pos >> 3:(e + 7) >> 3], "big") >> ((-e) & 7)) & ((1 << w) - 1)

    return {
        "_new": object.__new__,
        "_ParserError": support.ParserError,
        "_ExitBlock": support.ExitBlock,
        "_AssertFailed": support.AssertFailed,
        "_stk_next": stk_next,
        "_stk_last": stk_last,
        "_look": look,
        "_shl": support.shl,
        "_udiv": support.udiv,
        "_umod": support.umod,
        "_sdiv": support.sdiv,
        "_smod": support.smod,
        "_sat_add_s": support.sat_add_signed,
        "_sat_sub_s": support.sat_sub_signed,
        **{f"_HB_{k}": f for k, f in hashing.ALGORITHMS.items()},
        **{f"_HI_{k}": f for k, f in hashing.ALGORITHMS_INT.items()},
        "_pack_bits": hashing.pack_bits,
        "_tna_colour": lambda c: 3 if c == 2 else c,  # TNA's MeterColor_t: RED is 3
    }
