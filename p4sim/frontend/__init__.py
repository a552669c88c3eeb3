"""p4sim's P4_16 front end: preprocess (pcpp) -> parse (lark) -> resolve/type-check -> ``ir``.

``load(path)`` compiles a P4 file; ``load_text(text, filename)`` compiles already-preprocessed
text (what a p4sim device config carries).  Both raise ``p4sim.errors.CompileError`` with
``file:line:col`` for anything they cannot accept.
"""
from __future__ import annotations

import os
from typing import Iterable, Mapping, Optional

from p4sim.frontend import ir
from p4sim.frontend.preprocess import preprocess

__all__ = ["load", "load_text", "preprocess", "ir"]


def load_text(text: str, filename: str = "<program>") -> ir.Program:
    """Check preprocessed P4 text.  ``filename`` names the source for positions before the
    first ``#line`` marker and becomes ``Program.source``."""
    from p4sim.frontend.check import check
    from p4sim.frontend.parser import parse_text

    return check(parse_text(text, filename), filename)


def load(path: str | os.PathLike, include_dirs: Iterable[str] = (),
         defines: Optional[Mapping[str, Optional[str]] | Iterable[str]] = None) -> ir.Program:
    """Preprocess, parse and check the P4 program in ``path``."""
    text = preprocess(path, include_dirs, defines)
    return load_text(text, str(path))
