"""Error types of the control plane.

A fabric file is usually wrong in more than one place; reporting only the first mistake makes the
user fix-and-rerun once per mistake.  So validation collects `Problem`s and raises one
`FabricError` that lists all of them, each with file, line, key path and reason.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Problem:
    """One mistake in a fabric file: where it is (file, 1-based line, key path) and why."""

    file: str
    line: int
    key: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.key}: {self.reason}"


class FabricError(Exception):
    """A fabric description is invalid; `problems` lists every mistake found, in file order."""

    def __init__(self, problems: list[Problem]):
        self.problems = sorted(set(problems))
        count = len(self.problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{count} problem{'s' if count != 1 else ''} in fabric:\n{lines}")
