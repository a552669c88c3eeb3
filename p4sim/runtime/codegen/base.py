"""The code generator's state (names given out, tables, externs, actions still to compile) and
the naming every part of it uses."""
from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Optional

from p4sim.errors import CompileError, Unsupported
from p4sim.frontend import ir
from p4sim.runtime import archs
from p4sim.runtime.irwalk import IRWalker, load_spelling
from p4sim.runtime.codegen.common import Scope, TableInfo, Writer
from p4sim.runtime.objects import ClassFactory


class CompilerBase(IRWalker):
    """State shared by the expression, extern, statement, parser and control compilers that
    ``ProgramCompiler`` combines; the walk over the IR itself is ``IRWalker``'s."""

    unsupported = Unsupported
    spelling = load_spelling(Path(__file__).with_name("spelling.toml"))

    def __init__(self, prog: ir.Program) -> None:
        self.prog = prog
        self.err = {name: i for i, name in enumerate(prog.errors)}
        self.classes = ClassFactory(self.err.get("NoError", 0))
        self.w = Writer()
        self.ids = itertools.count(1)
        self.global_names: dict[int, str] = {}
        self.action_ids: dict[int, int] = {}
        self.action_fn: dict[int, str] = {}
        self.tables: dict[int, TableInfo] = {}
        self.externs: dict[int, tuple[str, ir.ExternInstance]] = {}
        self.controls: dict[int, str] = {}
        self.functions: dict[int, str] = {}
        self.pending_actions: list[tuple[ir.ActionDecl, Optional[ir.ControlDecl]]] = []
        self.uses_clone = False
        self.uses_payload = False
        # TNA: the role being compiled (ingress, egress_deparser ...), the control, and which
        # gress owns each register (see the architecture's extern code generator)
        self.cur_role: Optional[str] = None
        self.cur_control: Optional[ir.ControlDecl] = None
        self.reg_gress: dict[int, tuple] = {}
        self.reads_parser_err: set[str] = set()
        # the architecture's own externs and extern functions (None: v1model's, compiled here)
        self.arch_externs = archs.get(prog.arch).extern_codegen()

    # ------------------------------------------------------------------ names
    @staticmethod
    def fresh(sc: Scope) -> str:
        return sc.new_tmp()

    def gname(self, obj: Any, prefix: str, label: str = "") -> str:
        key = id(obj)
        if key not in self.global_names:
            safe = "".join(c if c.isalnum() else "_" for c in label)
            self.global_names[key] = f"{prefix}{next(self.ids)}_{safe}" if safe else f"{prefix}{next(self.ids)}"
        return self.global_names[key]

    def error_code(self, name: str) -> int:
        if name not in self.err:
            raise CompileError(f"the program declares no error.{name} (core.p4 should)")
        return self.err[name]

    def extern_name(self, inst: ir.ExternInstance) -> str:
        if id(inst) not in self.externs:
            self.externs[id(inst)] = (self.gname(inst, "E", inst.qualified_name), inst)
        return self.externs[id(inst)][0]

    def action_id(self, a: ir.ActionDecl) -> int:
        if id(a) not in self.action_ids:
            self.action_ids[id(a)] = len(self.action_ids) + 1
        return self.action_ids[id(a)]

    def action_name(self, a: ir.ActionDecl, control: Optional[ir.ControlDecl]) -> str:
        if id(a) not in self.action_fn:
            self.action_fn[id(a)] = self.gname(a, "A", a.qualified_name)
            self.action_id(a)
            self.pending_actions.append((a, control))
        return self.action_fn[id(a)]
