"""P4_16 tokenizer that knows which identifiers name types.

Hand-written rather than lark's built-in lexer because P4's lexer needs context lark's lexer cannot
consult: like p4c's, it must emit TYPE_IDENTIFIER for names of types (so ``(T) x`` is a cast and
``T x;`` a declaration), split ``>>`` so ``register<bit<32>>`` closes two lists, and recognise the
``<`` that opens explicit type arguments of a call (``digest<T>(...)``).  Doing this over a full
token list is simple: a first pass collects every declared type name in the program, a second
re-tags tokens.  Type names form one program-wide table (P4 programs do not shadow type names in
practice; the built-in library's type parameters have distinctive names for that reason).
"""
from __future__ import annotations

import re
from typing import Callable

from lark import Token

from p4sim.errors import CompileError, Pos

_TOKEN_RE = re.compile(r"""
  (?P<ws>[ \t\r\f\v]+|\n)
| (?P<linecomment>//[^\n]*)
| (?P<blockcomment>/\*.*?\*/)
| (?P<directive>\#[^\n]*)
| (?P<annotation>@[A-Za-z_]\w*)
| (?P<integer>(?:\d+[ws])?(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|\d[\d_]*))
| (?P<word>[A-Za-z_]\w*)
| (?P<string>"(?:[^"\\\n]|\\.)*")
| (?P<punct>>>=|&&&|\|\+\||\|-\||\.\.|\+\+|<<|<=|>=|==|!=|&&|\|\||[-+*/%&|^~!<>=?:;,.(){}\[\]])
""", re.VERBOSE | re.DOTALL)

# Tokens that may appear inside explicit type arguments ``f<...>(``.
_TYPEISH = {"TYPE_IDENTIFIER", "INTEGER"}


class Lexer:
    """Turns preprocessed text into lark tokens using the terminal names of the grammar.

    ``literal_terminals`` maps each literal string of the grammar ("header", "{", "&&&" ...) to
    the lark terminal name the LALR parser expects.
    """

    def __init__(self, literal_terminals: dict[str, str]) -> None:
        self.literals = literal_terminals
        self.keywords = {k for k in literal_terminals if re.fullmatch(r"[A-Za-z_]\w*", k)}

    def tokenize(self, text: str, pos_of: Callable[[int, int], Pos]) -> list[Token]:
        raw = self._scan(text, pos_of)
        type_names = collect_type_names(raw, self.keywords)
        return self._retag(raw, type_names)

    # ---------------------------------------------------------------- pass 1: raw tokens
    def _scan(self, text: str, pos_of) -> list[Token]:
        out: list[Token] = []
        i, line, col, n = 0, 1, 1, len(text)
        lits = self.literals
        match = _TOKEN_RE.match
        while i < n:
            m = match(text, i)
            if m is None:
                raise CompileError(f"unexpected character {text[i]!r}", pos_of(line, col))
            kind = m.lastgroup
            value = m.group()
            end = m.end()
            if kind == "annotation":
                end, value = _annotation_extent(text, end, value, pos_of(line, col))
            if kind in ("ws", "linecomment", "blockcomment", "directive"):
                pass
            else:
                if kind == "word":
                    ttype = lits[value] if value in self.keywords else "IDENTIFIER"
                elif kind == "integer":
                    ttype = "INTEGER"
                elif kind == "string":
                    ttype = "STRING_LITERAL"
                elif kind == "annotation":
                    ttype = "ANNOTATION"
                elif value == ">>=":  # compound shift assignment: '>' '>' '=' like p4c's lexer
                    for k, ch in enumerate(value):
                        out.append(Token(lits[ch], ch, start_pos=i + k, line=line, column=col + k,
                                         end_pos=i + k + 1))
                    ttype = None
                else:
                    ttype = lits.get(value)
                    if ttype is None:
                        raise CompileError(f"unexpected '{value}'", pos_of(line, col))
                if ttype is not None:
                    tok = Token(ttype, value, start_pos=i, line=line, column=col, end_pos=end)
                    out.append(tok)
            # advance line/column over the consumed text
            chunk = text[i:end]
            nl = chunk.count("\n")
            if nl:
                line += nl
                col = len(chunk) - chunk.rfind("\n")
            else:
                col += len(chunk)
            i = end
        return out

    # ---------------------------------------------------------------- pass 2: re-tagging
    def _retag(self, toks: list[Token], type_names: set[str]) -> list[Token]:
        gt = self.literals[">"]
        lt = self.literals["<"]
        lparen = self.literals["("]
        for t in toks:
            if t.type == "IDENTIFIER" and t.value in type_names:
                t.type = "TYPE_IDENTIFIER"
        n = len(toks)
        for k, t in enumerate(toks):
            if t.type == gt and k + 1 < n and toks[k + 1].type == gt \
                    and toks[k + 1].start_pos == t.end_pos:
                t.type = "SHR_FIRST"
        bit_kw = {self.literals.get(w) for w in ("bit", "int", "bool", "varbit", "error", "tuple")}
        comma = self.literals[","]
        typeish = _TYPEISH | bit_kw | {comma, "_" and self.literals.get("_")}
        for k, t in enumerate(toks):
            if t.type != lt or k == 0 or toks[k - 1].type != "IDENTIFIER":
                continue
            depth, j = 0, k
            while j < n:
                tt = toks[j].type
                if tt == lt:
                    depth += 1
                elif tt == gt or tt == "SHR_FIRST":
                    depth -= 1
                    if depth == 0:
                        break
                elif tt not in typeish:
                    break
                j += 1
            if j < n and depth == 0 and j + 1 < n and toks[j + 1].type == lparen:
                t.type = "TARGS_LT"
        return toks


def _annotation_extent(text: str, end: int, value: str, pos: Pos) -> tuple[int, str]:
    """An annotation's body is any balanced ``(...)`` or ``[...]`` following its name."""
    j = end
    while j < len(text) and text[j] in " \t":
        j += 1
    if j >= len(text) or text[j] not in "([":
        return end, value
    opener = text[j]
    closer = ")" if opener == "(" else "]"
    depth, k, in_str = 0, j, False
    while k < len(text):
        c = text[k]
        if in_str:
            if c == "\\":
                k += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c == opener:
            depth += 1
        elif c == closer:
            depth -= 1
            if depth == 0:
                return k + 1, text[end - len(value):k + 1]
        k += 1
    raise CompileError(f"unterminated annotation {value}", pos)


def collect_type_names(toks: list[Token], keywords: set[str]) -> set[str]:
    """Every name the program declares as a type (or type parameter)."""
    names: set[str] = set()
    n = len(toks)

    def val(k: int) -> str:
        return toks[k].value if 0 <= k < n else ""

    def is_name(k: int) -> bool:
        return 0 <= k < n and toks[k].type == "IDENTIFIER"

    def type_params_at(k: int) -> None:
        # k points at '<'; collect IDENTIFIERs up to the matching '>'
        if val(k) != "<":
            return
        j = k + 1
        while j < n and val(j) not in (">", ";", "{", "("):
            if toks[j].type == "IDENTIFIER":
                names.add(toks[j].value)
            j += 1

    for k, t in enumerate(toks):
        v = t.value
        if t.type == "IDENTIFIER" or t.type == "ANNOTATION":
            # generic function/method declaration or call: NAME < A, B > (
            if t.type == "IDENTIFIER" and val(k + 1) == "<":
                j = k + 2
                ok = True
                idents = []
                while j < n and val(j) != ">":
                    if toks[j].type == "IDENTIFIER":
                        idents.append(toks[j].value)
                    elif val(j) != ",":
                        ok = False
                        break
                    j += 1
                if ok and idents and val(j + 1) == "(" and _is_declaration_context(toks, k):
                    names.update(idents)
            continue
        if v in keywords and v in ("header", "struct", "header_union", "extern", "parser",
                                   "control", "package"):
            j = k + 1
            if v == "extern":
                # extern Name {  |  extern Name<...> {   (object)  vs  extern Type fname(...)
                if is_name(j) and val(j + 1) in ("{", "<"):
                    names.add(val(j))
                    type_params_at(j + 1)
                continue
            if is_name(j):
                names.add(val(j))
                type_params_at(j + 1)
        elif v == "enum" and t.type != "IDENTIFIER":
            j = k + 1
            while j < n and val(j) != "{":
                j += 1
            if is_name(j - 1):
                names.add(val(j - 1))
        elif v in ("typedef", "type") and t.type != "IDENTIFIER":
            j = k + 1
            while j < n and val(j) != ";":
                j += 1
            if is_name(j - 1):
                names.add(val(j - 1))
    return names


def _is_declaration_context(toks: list[Token], k: int) -> bool:
    """``NAME<...>(`` declares type parameters when preceded by a return type (a type name,
    ``void``, ``bit<..>``) rather than an operator, '.', '=' or '('."""
    if k == 0:
        return False
    prev = toks[k - 1]
    if prev.type in ("IDENTIFIER", "TYPE_IDENTIFIER"):
        return True
    return prev.value in ("void", ">", "bool") and prev.type not in ("STRING",)
