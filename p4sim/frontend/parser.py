"""Parse preprocessed P4 text into a lark parse tree (LALR(1) over p4sim's own tokenizer)."""
from __future__ import annotations

import functools
import threading
from pathlib import Path

from lark import Lark, Tree
from lark.exceptions import UnexpectedInput, UnexpectedToken
from lark.lexer import Lexer as _LarkLexer, PatternStr

from p4sim.errors import CompileError
from p4sim.frontend.lexer import Lexer
from p4sim.frontend.preprocess import LineMap

_GRAMMAR = Path(__file__).with_name("grammar.lark")
_lock = threading.Lock()


class _TokenListLexer(_LarkLexer):
    """lark accepts a custom lexer; ours just replays the token list built by lexer.Lexer."""

    def __init__(self, lexer_conf) -> None:  # noqa: D401 - lark's interface
        pass

    def lex(self, data, parser_state=None):  # type: ignore[override]
        return iter(data)


@functools.lru_cache(maxsize=1)
def _build() -> tuple[Lark, Lexer]:
    lark = Lark(_GRAMMAR.read_text(), parser="lalr", lexer=_TokenListLexer,
                propagate_positions=True, maybe_placeholders=False, cache=True)
    literals: dict[str, str] = {}
    for term in lark.terminals:
        if isinstance(term.pattern, PatternStr):
            literals[term.pattern.value] = term.name
    return lark, Lexer(literals)


_FRIENDLY = {"IDENTIFIER": "a name", "TYPE_IDENTIFIER": "a type name", "INTEGER": "an integer",
             "STRING_LITERAL": "a string", "ANNOTATION": "an annotation", "TARGS_LT": "'<'",
             "SHR_FIRST": "'>'"}


def _expected_hint(expected, lexer: Lexer) -> str:
    """" (expected ';' or ')')" when the parser expected only a few kinds of token."""
    if not expected or len(expected) > 4:
        return ""
    by_name = {v: k for k, v in lexer.literals.items()}
    shown = sorted({_FRIENDLY.get(e) or (f"'{by_name[e]}'" if e in by_name else e)
                    for e in expected})
    return " (expected " + " or ".join(shown) + ")"


class ParsedText:
    """A parse tree plus what is needed to report positions in the original files."""

    def __init__(self, tree: Tree, text: str, linemap: LineMap) -> None:
        self.tree = tree
        self.text = text
        self.linemap = linemap


def parse_text(text: str, filename: str) -> ParsedText:
    lark, lexer = _build()
    linemap = LineMap(text, filename)
    tokens = lexer.tokenize(text, linemap.pos)
    with _lock:
        try:
            tree = lark.parse(tokens)
        except UnexpectedToken as exc:
            tok = exc.token
            if tok.type == "$END":
                last = tokens[-1] if tokens else None
                pos = linemap.pos(last.line, last.column) if last else linemap.pos(1, 1)
                raise CompileError("syntax error: unexpected end of input", pos) from None
            raise CompileError(f"syntax error: unexpected '{tok.value}'"
                               + _expected_hint(exc.expected, lexer),
                               linemap.pos(tok.line, tok.column)) from None
        except UnexpectedInput as exc:  # pragma: no cover - other lark failures
            raise CompileError(f"syntax error: {exc}",
                               linemap.pos(getattr(exc, 'line', 1), getattr(exc, 'column', 1))) from None
    return ParsedText(tree, text, linemap)
