"""C preprocessing of P4 sources with pcpp.

p4c runs the C preprocessor before parsing; p4sim does the same with ``pcpp`` (a pure-Python
preprocessor) so ``#include``, ``#define`` and ``#if``/``#ifdef`` behave as with p4c.  Two p4sim
rules:

* ``<core.p4>`` and ``<v1model.p4>`` resolve to p4sim's own declaration files in ``builtin/``
  (searched before the user's include directories, as p4c searches its own p4include first);
  their ``#line`` markers name them ``<p4sim>/core.p4`` (``BUILTIN_PREFIX``), not by a path, so
  preprocessed text -- what a device config carries -- is recognised as the builtin library
  whatever directory it was compiled in and whatever directory or checkout loads it;
* the output keeps ``#line N "file"`` markers and comments, so every token can be mapped back to
  the original file, line *and* column (see :class:`LineMap`).
"""
from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import Iterable, Mapping, Optional

from pcpp import Preprocessor

from p4sim.errors import CompileError, Pos

BUILTIN_DIR = str(Path(__file__).with_name("builtin"))
BUILTIN_PREFIX = "<p4sim>/"
BUILTIN_FILES = frozenset(p.name for p in Path(BUILTIN_DIR).glob("*.p4"))
# How device configs written before builtins had a name of their own spell them: a path, relative
# to wherever that compile ran, ending in these components.
_LEGACY_BUILTIN_PARTS = ("p4sim", "frontend", "builtin")


def is_builtin_source(file: str) -> bool:
    """True if ``file`` (a position's file, from a ``#line`` marker) is one of p4sim's builtin
    declaration files: ``<p4sim>/NAME.p4``, this installation's own path, or the
    ``.../p4sim/frontend/builtin/NAME.p4`` an older compile wrote.  Independent of the working
    directory, so a program compiled in one place loads in a switch started in another."""
    if file.startswith(BUILTIN_PREFIX):
        return file[len(BUILTIN_PREFIX):] in BUILTIN_FILES
    parts = Path(file).parts
    if len(parts) >= 4 and tuple(parts[-4:-1]) == _LEGACY_BUILTIN_PARTS and parts[-1] in BUILTIN_FILES:
        return True
    try:
        return os.path.isabs(file) and Path(file).resolve().parent == Path(BUILTIN_DIR).resolve()
    except OSError:
        return False


class _P4Preprocessor(Preprocessor):
    """pcpp with errors turned into CompileError (pcpp's default prints and carries on)."""

    def __init__(self) -> None:
        super().__init__()
        self.line_directive = "#line"
        self.passthru_comments = True

    def _directive_pos(self, needle: str = "") -> Pos:
        directive = self.lastdirective
        source = getattr(directive, "source", None) or "<input>"
        line = getattr(directive, "lineno", 0) or 0
        col = 1
        try:
            text = Path(source).read_text(errors="replace").splitlines()[line - 1]
            idx = text.find(needle) if needle else -1
            col = idx + 1 if idx >= 0 else (len(text) - len(text.lstrip()) + 1)
        except (OSError, IndexError):
            pass
        return Pos(source, line, col)

    def on_include_not_found(self, is_malformed, is_system_include, curdir, includepath):
        if is_malformed:
            raise CompileError(f"malformed #include: {includepath}", self._directive_pos("#"))
        raise CompileError(f"cannot find include file '{includepath}'",
                           self._directive_pos(includepath))

    def on_error(self, file, line, msg):
        raise CompileError(f"preprocessor: {msg}", Pos(file or "<input>", line or 0, 1))

    def on_directive_unknown(self, directive, toks, ifpassthru, precedingtoks):
        if directive.value == "error":
            text = "".join(t.value for t in toks).strip()
            raise CompileError(f"#error {text}", Pos(directive.source or "<input>",
                                                      directive.lineno, 1))
        if directive.value == "warning":
            return True
        return super().on_directive_unknown(directive, toks, ifpassthru, precedingtoks)

    def on_comment(self, tok):
        # Keep comments so that columns in the output equal columns in the source.
        return True


# What p4c-bm2-ss predefines (backends/bmv2/simple_switch/main.cpp adds -D__TARGET_BMV2__; the
# preprocessor runs with -undef, so no compiler- or system-specific macros; p4c defines no
# __p4c__ either).  _CORE_P4_, _V1_MODEL_P4_ and V1MODEL_VERSION come from the include files.
BMV2_PREDEFINED = ("__TARGET_BMV2__",)


def preprocess(path: str | os.PathLike, include_dirs: Iterable[str] = (),
               defines: Optional[Mapping[str, Optional[str]] | Iterable[str]] = None,
               predefined: Iterable[str] = BMV2_PREDEFINED) -> str:
    """Preprocess ``path`` and return the text with ``#line`` markers.

    ``defines`` maps NAME to a value (None/"" = defined as 1, like ``-DNAME``) or is an iterable
    of ``NAME[=VALUE]`` strings as given on a command line.  ``predefined`` names are defined as
    1 before anything else, as the target's compiler driver does.
    """
    path = str(path)
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise CompileError(f"cannot read {path}: {exc.strerror or exc}") from None
    pp = _P4Preprocessor()
    pp.add_path(BUILTIN_DIR)
    for d in include_dirs:
        pp.add_path(str(d))
    pp.add_path(os.path.dirname(os.path.abspath(path)))
    # pcpp rewrites included paths relative to each include directory ("../../x.p4"); keep only
    # its rule for the working directory so positions read like the paths the user typed.
    # p4sim's builtin files get their position-independent name (checked first: pcpp applies the
    # first rule that matches).
    pp.rewrite_paths = [(re.escape(os.path.abspath(BUILTIN_DIR) + os.sep) + "(.*)", BUILTIN_PREFIX + "\\1"),
                        (re.escape(os.path.abspath("") + os.sep) + "(.*)", "\\1")]
    for name in predefined:
        pp.define(f"{name} 1")
    for name, value in _normalise_defines(defines):
        pp.define(f"{name} {value}")
    pp.parse(text, source=path)
    out = io.StringIO()
    pp.write(out)
    return out.getvalue()


def _normalise_defines(defines) -> list[tuple[str, str]]:
    if not defines:
        return []
    items: list[tuple[str, str]] = []
    if isinstance(defines, Mapping):
        for name, value in defines.items():
            items.append((str(name), "1" if value is None or value == "" else str(value)))
    else:
        for spec in defines:
            name, _, value = str(spec).partition("=")
            items.append((name, value if value else "1"))
    for name, _ in items:
        if not re.fullmatch(r"[A-Za-z_]\w*", name):
            raise CompileError(f"bad macro name in define: {name!r}")
    return items


_LINE_MARKER = re.compile(r'#\s*(?:line\s+)?(\d+)(?:\s+"((?:[^"\\]|\\.)*)")?')


class LineMap:
    """Maps a line of preprocessed text to (file, line) of the original source.

    Understands pcpp's ``#line N "file"`` and GCC-style ``# N "file" flags`` markers, so text
    produced by either can be loaded (a device config carries preprocessed text).
    """

    def __init__(self, text: str, default_file: str) -> None:
        self._map: list[tuple[str, int]] = [(default_file, 0)]  # index 0 unused (lines from 1)
        cur_file, cur_line = default_file, 1
        for raw in text.split("\n"):
            stripped = raw.lstrip()
            m = _LINE_MARKER.match(stripped) if stripped.startswith("#") else None
            if m:
                self._map.append((cur_file, cur_line))
                cur_line = int(m.group(1))
                if m.group(2) is not None:
                    cur_file = m.group(2).replace('\\\\', '\\')
                continue
            self._map.append((cur_file, cur_line))
            cur_line += 1

    def pos(self, line: int, col: int) -> Pos:
        if 0 < line < len(self._map):
            file, orig = self._map[line]
            return Pos(file, orig, col)
        file, orig = self._map[-1]
        return Pos(file, orig, col)
