"""Numeric constants of the P4 sources, read strictly: a constant that cannot be read is an error.

The control plane needs a few numbers that the P4 program owns (table sizes in size.p4, the TNA
mirror session and recirculation port, the defaults the parameter declarations are checked
against).  They are read from the source instead of restated, and a missing file, a missing
name or a value that is not a plain number raises ``P4ConstantError``: a silently assumed
number would be a wrong entry on the switch, found only when the switch misbehaves.

Two forms are read, the only two the Stellar sources use for numbers:
    #define NAME <number>                  (comments after it allowed)
    const <type> NAME = <number>;          (type may be generic: bit<16>)
with <number> decimal or 0x-hex.  Anything else under that name (an expression, a macro with
arguments) is refused with the text found.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
V1MODEL_DEFINE_P4 = REPO / "p4src" / "include" / "define.p4"
SIZE_P4 = REPO / "p4src" / "include" / "size.p4"
TNA_DEFINE_P4 = REPO / "p4src" / "tna" / "include" / "define.p4"

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)(\(?)[ \t]*(.*?)[ \t]*$", re.M)
_CONST = re.compile(r"\bconst\s+[\w<>\s]+?\s+(\w+)\s*=\s*([^;]+);")
_NUMBER = re.compile(r"0[xX][0-9a-fA-F]+|\d+")


class P4ConstantError(Exception):
    """A P4 constant the control plane depends on is absent or not a plain number."""


@functools.lru_cache(maxsize=None)
def _read(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    """(#define NAME -> its text, const NAME -> its text) of ``path``."""
    try:
        text = _COMMENT.sub(" ", path.read_text())
    except OSError as exc:
        raise P4ConstantError(f"cannot read {path}: {exc}") from None
    defines = {name: "(macro with arguments)" if paren else value for name, paren, value in _DEFINE.findall(text)}
    return defines, {name: value.strip() for name, value in _CONST.findall(text)}


def _definitions(path: Path) -> dict[str, str]:
    """NAME -> the text it is defined as, for every #define and const of ``path``."""
    defines, consts = _read(path)
    return {**defines, **consts}


def constant(path: Path, name: str) -> int:
    """The number ``name`` is defined as in ``path``; P4ConstantError when it cannot be read."""
    defined = _definitions(Path(path))
    if name not in defined:
        raise P4ConstantError(f"{_show(path)}: no #define or const named {name}")
    text = defined[name]
    if not _NUMBER.fullmatch(text):
        raise P4ConstantError(f"{_show(path)}: {name} is {text!r}, not a plain number")
    return int(text, 0)


def constants(path: Path) -> dict[str, int]:
    """Every name of ``path`` defined as a plain number (the others are left out)."""
    return {name: int(text, 0) for name, text in _definitions(Path(path)).items() if _NUMBER.fullmatch(text)}


def defines(path: Path) -> dict[str, int]:
    """The ``#define``s of ``path`` that are plain numbers (the program's tunable defaults are
    #defines; its encodings are consts)."""
    return {name: int(text, 0) for name, text in _read(Path(path))[0].items() if _NUMBER.fullmatch(text)}


def size(name: str) -> int:
    """A table or register size from p4src/include/size.p4."""
    return constant(SIZE_P4, name)


def _show(path: Path) -> str:
    try:
        return str(Path(path).relative_to(REPO))
    except ValueError:
        return str(path)
