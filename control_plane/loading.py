"""Loading a fabric file for a command: the one place a bad YAML becomes a printed error.

Every ``stellarctl`` subcommand (``control_plane.cli`` and ``control_plane.ops``) starts here, so a
fabric problem reads the same whichever command found it (``error: file:line: key: reason``).
"""
from __future__ import annotations

from typing import Optional, TextIO

from .errors import FabricError
from .model import Fabric, load_fabric


def load_or_report(path: str, err: TextIO) -> Optional[Fabric]:
    """The fabric at ``path``, or None after printing why it cannot be used to ``err``."""
    try:
        return load_fabric(path)
    except FabricError as exc:
        print(f"error: {exc}", file=err)
        return None
