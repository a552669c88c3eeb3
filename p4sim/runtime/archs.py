"""p4sim's architectures as plug-ins: one registry of each architecture's switch class, extern
code generator and what its switch needs from the generated code.

The base modules ask this registry instead of importing an architecture's module:
``p4sim.switch.Switch(program)`` builds the switch class registered for ``program``'s
architecture, and ``codegen.ProgramCompiler`` hands the architecture's extern and builtin calls to
its registered code generator.  Entries name their implementation by import path and are loaded
on first use, so the base never imports an architecture module and an architecture module may
import the base (``TnaSwitch`` subclasses ``Switch``) without forming an import circle.

A new architecture registers here (or through :func:`register`) with its switch class and, when
its externs differ from v1model's, a module that provides :class:`ExternCodegen`.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Protocol

from p4sim.errors import Unsupported

if TYPE_CHECKING:  # pragma: no cover
    from p4sim.frontend import ir


class ExternCodegen(Protocol):
    """What an architecture's code generator gives ``ProgramCompiler``.

    ``EXTERNS``: the extern type names it compiles (others fall back to the base compiler);
    ``extern_call``: Python for one method call on such an extern (its value, or "None");
    ``builtin_call``: Python for an architecture extern function, None when the name is not one
    of them (the base compiler then handles it).  ``comp`` is the calling ``ProgramCompiler``,
    ``sc`` its ``Scope``, ``pre`` the statements that must run before the returned expression.
    """

    EXTERNS: frozenset[str]

    def extern_call(self, comp: Any, e: ir.ExternCall, sc: Any, pre: list[str]) -> str: ...

    def builtin_call(self, comp: Any, e: ir.BuiltinCall, sc: Any, pre: list[str]) -> Optional[str]: ...


@dataclass(frozen=True)
class Architecture:
    """One architecture: its name (``ir.Program.arch``), the switch class that runs its programs
    and the module generating its extern calls, both as ``"module:attribute"`` / ``"module"``
    import paths (None: v1model's externs, compiled by ``codegen`` itself)."""

    name: str
    switch: str
    codegen: Optional[str] = None
    # whether the switch builds every ``@__intrinsic_metadata`` struct/header itself (TNA's
    # intrinsic metadata), so the code generator must emit a class for each, used or not
    builds_intrinsic_types: bool = False

    def switch_class(self) -> type:
        module, _, attr = self.switch.partition(":")
        return getattr(importlib.import_module(module), attr)

    def extern_codegen(self) -> Optional[ExternCodegen]:
        return None if self.codegen is None else importlib.import_module(self.codegen)  # type: ignore[return-value]


_TNA_SWITCH, _TNA_CODEGEN = "p4sim.runtime.tna_switch:TnaSwitch", "p4sim.runtime.tna_codegen"
_REGISTRY: dict[str, Architecture] = {
    "v1model": Architecture("v1model", "p4sim.switch:Switch"),
    "tna": Architecture("tna", _TNA_SWITCH, _TNA_CODEGEN, builds_intrinsic_types=True),
    "t2na": Architecture("t2na", _TNA_SWITCH, _TNA_CODEGEN, builds_intrinsic_types=True),
}


def register(arch: Architecture) -> None:
    """Add (or replace) an architecture."""
    _REGISTRY[arch.name] = arch


def names() -> tuple[str, ...]:
    return tuple(_REGISTRY)


def get(name: str) -> Architecture:
    """The registered architecture ``name``; Unsupported for one p4sim does not run."""
    arch = _REGISTRY.get(name)
    if arch is None:
        raise Unsupported(f"architecture {name!r} (p4sim runs {', '.join(_REGISTRY)})")
    return arch


def arch_of(program: Any) -> str:
    """The architecture of a ``p4sim.Program`` or an ``ir.Program`` (v1model for anything else,
    so a test double without one builds the base switch)."""
    return getattr(getattr(program, "ir", program), "arch", "v1model")
