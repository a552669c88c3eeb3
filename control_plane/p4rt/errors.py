"""What a push can fail with: an unreachable or refusing switch, and the updates it refused."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from .diff import Change, Diff


class P4RuntimePushError(Exception):
    """A switch could not be reached, arbitrated, configured or read.  Names the switch."""


@dataclass
class WriteError:
    """One refused update: which change, the switch's canonical code and message."""

    change: "Change"
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.change.op.upper()} {self.change.describe()}: {self.code}: {self.message}"


class ReconcileError(P4RuntimePushError):
    """Some updates were refused; the others were applied (CONTINUE_ON_ERROR).  `diff` says
    what was attempted and `errors` which updates failed."""

    def __init__(self, switch: str, errors: list[WriteError], diff: "Diff") -> None:
        self.switch = switch
        self.errors = errors
        self.diff = diff
        lines = "\n  ".join(str(e) for e in errors[:20])
        more = f"\n  ... and {len(errors) - 20} more" if len(errors) > 20 else ""
        super().__init__(f"switch {switch}: {len(errors)} of {diff.total} writes refused:\n  {lines}{more}")
