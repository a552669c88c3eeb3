"""``p4sim.Program``: a checked P4 program, ready to load into any number of switches.

The expensive work (front end, code generation) happens once per Program; each Switch then only
executes the generated module in its own namespace.
"""
from __future__ import annotations

import builtins
from typing import Any, Optional

from p4sim.frontend import ir


class Program:
    """Wraps an ``ir.Program``; ``p4info`` and the generated code are built on first use."""

    def __init__(self, ir_program: ir.Program, path: Optional[str] = None) -> None:
        self.ir = ir_program
        self.path = path
        self._p4info: Any = None
        self._code: Any = None

    @property
    def p4info(self) -> Any:
        if self._p4info is None:
            from p4sim.p4info import build_p4info

            self._p4info = build_p4info(self.ir)
        return self._p4info

    def code(self) -> Any:
        """The generated Python for this program (``runtime.codegen.CompiledCode``), cached."""
        if self._code is None:
            from p4sim.errors import CompileError
            from p4sim.runtime.codegen import ProgramCompiler

            try:
                code = ProgramCompiler(self.ir).compile()
                builtins.compile(code.source, "<p4sim generated>", "exec")  # fail here, not in a switch
            except CompileError:
                raise
            except Exception as exc:  # a p4sim bug: still say clearly which program and why
                raise CompileError(f"p4sim's runtime cannot compile {self.path or self.ir.source}: internal error "
                                   f"{type(exc).__name__}: {exc}") from exc
            self._code = code
        return self._code

    @property
    def generated_source(self) -> str:
        """The Python the runtime runs, for debugging."""
        return self.code().source

    @classmethod
    def from_device_config(cls, data: bytes) -> "Program":
        """The program inside a device config written by ``p4sim compile`` (what
        SetForwardingPipelineConfig carries)."""
        from p4sim import compiler

        loaded = compiler.load_device_config(data)
        p = loaded if isinstance(loaded, Program) else cls(loaded)
        p.code()  # runtime-unsupported constructs fail here, not when a switch loads it
        return p


def compile(path: str, include_dirs: "tuple[str, ...] | list[str]" = (), defines: Optional[dict] = None) -> Program:
    """Front end + checks for the P4 file at ``path``; raises ``p4sim.CompileError``."""
    from p4sim.frontend import load

    prog = load(path, include_dirs=tuple(include_dirs), defines=defines)
    p = Program(prog, path)
    p.code()  # runtime-unsupported constructs are compile errors too, reported now
    return p
