"""p4sim's own tna.p4/t2na.p4 against the tna.p4 of the open-source Tofino back end: the
intrinsic metadata must have the same fields, in the same order, with the same widths, or a
program would compute different things here and on the real compiler.  Needs a p4c source tree
(P4C_SRC, default /opt/p4tools/src/p4c); skipped, saying so, where there is none (CI)."""
from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

P4C = Path(os.environ.get("P4C_SRC", "/opt/p4tools/src/p4c"))
REAL = P4C / "backends" / "tofino" / "bf-p4c" / "p4include"
OURS = Path(__file__).resolve().parents[2] / "p4sim" / "frontend" / "builtin"

pytestmark = pytest.mark.skipif(not (REAL / "tna.p4").exists(),
                                reason=f"no p4c source tree with the Tofino back end at {P4C}")

INTRINSIC = ["ingress_intrinsic_metadata_t", "ingress_intrinsic_metadata_for_tm_t",
             "ingress_intrinsic_metadata_from_parser_t", "ingress_intrinsic_metadata_for_deparser_t",
             "egress_intrinsic_metadata_t", "egress_intrinsic_metadata_from_parser_t",
             "egress_intrinsic_metadata_for_deparser_t", "egress_intrinsic_metadata_for_output_port_t",
             "pktgen_port_down_header_t", "pktgen_timer_header_t"]


def _macros(text: str, target: int) -> dict[str, str]:
    """#define NAME VALUE and typedef bit<...> T of a specs file, for one target."""
    out: dict[str, str] = {}
    for m in re.finditer(r"#define\s+(\w+)\s+(\d+)\s*$", text, re.M):
        out[m.group(1)] = m.group(2)
    for m in re.finditer(r"typedef\s+bit<(\w+)>\s+(\w+);", text):
        out[m.group(2)] = f"bit<{m.group(1)}>"
    return out


def _select(text: str, target: int, t2na: bool) -> str:
    """The lines of p4sim's file that the preprocessor keeps for one target (only the
    conditionals that file uses: #ifdef _P4SIM_T2NA_, #if __TARGET_TOFINO__ == 2, ...)."""
    out, stack, keep = [], [], True
    for line in text.splitlines():
        s = line.strip()
        m = re.match(r"#(ifdef|ifndef|if|else|endif)\b\s*(.*)", s)
        if not m:
            if keep:
                out.append(line)
            continue
        kind, cond = m.groups()
        if kind in ("ifdef", "ifndef", "if"):
            if kind == "ifdef":
                val = cond == "_P4SIM_T2NA_" and t2na
            elif kind == "ifndef":
                val = True  # include guards and defaults
            else:
                val = eval(cond.replace("__TARGET_TOFINO__", str(target)).replace("&&", "and")
                           .replace("||", "or").replace("!=", "!=")) if "__TARGET_TOFINO__" in cond \
                    else True
            stack.append((keep, bool(val)))
            keep = keep and bool(val)
        elif kind == "else":
            outer, val = stack[-1]
            keep = outer and not val
        else:
            keep = stack.pop()[0]
    return "\n".join(out)


def _fields(text: str, name: str, env: dict[str, str]) -> list[tuple[str, int]]:
    m = re.search(r"(?:header|struct)\s+" + name + r"\s*\{(.*?)\n\}", text, re.S)
    assert m, name
    body = re.sub(r"/\*.*?\*/|//[^\n]*", "", m.group(1), flags=re.S)
    out = []
    for decl in body.split(";"):
        decl = re.sub(r"@\w+", "", decl).strip()
        if not decl:
            continue
        typ, fname = decl.rsplit(None, 1)
        for _ in range(2):
            for k, v in env.items():
                typ = re.sub(rf"\b{k}\b", v, typ)
        w = re.fullmatch(r"bit<\(?([^>]*?)\)?>", typ.replace(" ", ""))
        assert w, (name, decl, typ)
        out.append((fname, eval(w.group(1), {}, {})))  # small integer arithmetic only
    return out


def _compare(real: list, mine: list) -> None:
    assert [w for _, w in mine] == [w for _, w in real]
    assert [f for f, _ in mine if not f.startswith("_pad")] == \
        [f for f, _ in real if not f.startswith("_pad")]


@pytest.mark.parametrize("target", [1, 2])
@pytest.mark.parametrize("name", INTRINSIC)
def test_tna_p4_intrinsic_metadata_matches_the_real_tna_p4(name, target):
    # tna.p4 on either target: Tofino-1 layout (tofino1_base.p4) with that target's widths
    env = _macros((REAL / f"tofino{target}_specs.p4").read_text(), target)
    real = _fields((REAL / "tofino1_base.p4").read_text(), name, env)
    mine = _fields(_select((OURS / "tna.p4").read_text(), target, t2na=False), name, env)
    _compare(real, mine)


@pytest.mark.parametrize("name", INTRINSIC)
def test_t2na_p4_intrinsic_metadata_matches_the_real_t2na_p4(name):
    env = _macros((REAL / "tofino2_specs.p4").read_text(), 2)
    real = _fields((REAL / "tofino2_base.p4").read_text(), name, env)
    mine = _fields(_select((OURS / "tna.p4").read_text(), 2, t2na=True), name, env)
    _compare(real, mine)


def _enums(text: str) -> dict[str, str]:
    return {m.group(2): re.sub(r"\s+|/\*.*?\*/|//[^\n]*", "", m.group(3))
            for m in re.finditer(r"enum\s+(bit<\d+>\s+)?(\w+)\s*\{(.*?)\}", text, re.S)}


def _consts(text: str) -> dict[str, str]:
    return {m.group(2): m.group(3).strip()
            for m in re.finditer(r"const\s+(bit<\d+>)\s+(\w+)\s*=\s*([^;]+);", text)}


def _externs(text: str) -> set[str]:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return set(re.findall(r"^extern\s+(\w+)\s*(?:<[^>]*>)?\s*\{", text, re.M))


@pytest.mark.parametrize("target", [1, 2])
def test_enums_constants_and_extern_names_match_the_real_tna_p4(target):
    real_text = (REAL / "tofino1_base.p4").read_text() + (REAL / f"tofino{target}_specs.p4").read_text()
    mine_text = _select((OURS / "tna.p4").read_text(), target, t2na=False)
    real_enums, mine_enums = _enums(real_text), _enums(mine_text)
    for name in ("MeterType_t", "MeterColor_t", "CounterType_t", "SelectorMode_t", "HashAlgorithm_t"):
        assert mine_enums[name] == real_enums[name], name
    real_c, mine_c = _consts(real_text), _consts(mine_text)
    for name, value in real_c.items():
        assert mine_c.get(name) == value, name
    # every extern object p4sim declares is one of the real file's (same name), and the real
    # file's we leave out are listed here on purpose
    left_out = {"SelectorAction", "MathUnit", "Atcam", "Alpm"}
    assert _externs(mine_text) == _externs(real_text) - left_out
