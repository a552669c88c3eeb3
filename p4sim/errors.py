"""Errors p4sim raises to its users.

Compile errors always carry a source position so that a user can jump to the offending construct;
a construct p4sim does not support is a compile error, never a silent mis-run.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Pos:
    """A position in the *original* source file (after mapping back through the preprocessor)."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class CompileError(Exception):
    """A P4 program p4sim cannot accept: a syntax error, a type error, or an unsupported construct.

    ``str(err)`` is ``file:line:col: error: message`` like a C compiler, so editors and CI logs can
    link to it.
    """

    def __init__(self, message: str, pos: Pos | None = None) -> None:
        self.message = message
        self.pos = pos
        super().__init__(f"{pos}: error: {message}" if pos else f"error: {message}")


class Unsupported(CompileError):
    """Valid P4_16 that p4sim deliberately does not run (see docs/p4sim-subset.md)."""

    def __init__(self, what: str, pos: Pos | None = None) -> None:
        super().__init__(f"unsupported by p4sim: {what}", pos)


class RuntimeApiError(Exception):
    """A bad request through the in-process API (unknown table, bad match value, ...).

    ``code`` is the name of the matching google.rpc code (e.g. ``NOT_FOUND``, ``INVALID_ARGUMENT``,
    ``ALREADY_EXISTS``, ``OUT_OF_RANGE``) so the P4Runtime server can map it without guessing.
    """

    def __init__(self, code: str, message: str) -> None:
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")
