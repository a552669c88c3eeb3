"""Mutations of the shipped fabric files, for the rule "every bad fabric ends in a
file:line:key error, never a traceback" (tests/control_plane/test_yaml_fuzz.py and
``bench/fuzz_yaml.py``).

Structure-aware mutations work on the parsed document and dump it back to YAML: a value of the
wrong type (string, number, list, map, null, bool, huge or negative number, NaN, long text), a
missing key, a duplicated list item (same name, same address), a dangling reference (peer,
host's leaf, job's host, tenant subnet), an absurd size.  Text mutations work on the file as
written: a duplicated line (a duplicate key), a truncated file, a stray tab or colon, bytes
that are not UTF-8.  Each case is loaded with ``control_plane.model.load_fabric``; the outcome
is "ok" (the mutant is a valid fabric: it then also plans and renders), "problems" (a
FabricError whose every problem names this file, a line inside it and a key), or a failure
with the traceback text.
"""
from __future__ import annotations

import copy
import random
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
SHIPPED = ("lab", "pod", "cluster512")


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path (tuple of keys / indexes) to a node of the document."""
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, prefix + (i,))
    return out


def _get(doc: Any, path: tuple) -> Any:
    for k in path:
        doc = doc[k]
    return doc


WRONG_VALUES = ["text", 7, -1, 0, 10**30, 3.5, float("nan"), float("inf"), True, None, [], [1, 2],
                {}, {"x": 1}, "", "x" * 5000, "10.0.0.0/33", "300.1.2.3", "zz:zz", "leaf1:9:9"]


def mutate_document(doc: Any, rng: random.Random) -> tuple[Any, str]:
    doc = copy.deepcopy(doc)
    paths = [p for p in _paths(doc) if p]
    op = rng.choice(["type", "type", "missing", "duplicate", "dangling", "absurd", "rename"])
    if op == "dangling":
        refs = [p for p in paths if isinstance(_get(doc, p), str)
                and p[-1] in ("peer", "leaf", "tenant", "job", "switch")
                or (len(p) >= 2 and p[-2] in ("hosts", "subnets") and isinstance(_get(doc, p), str))]
        if refs:
            p = rng.choice(refs)
            old = _get(doc, p)
            new = rng.choice(["nosuch", "nosuch:1", old.split(":")[0] + ":999" if ":" in old else old + "x",
                              "10.99.0.0/16", "h999"])
            _get(doc, p[:-1])[p[-1]] = new
            return doc, f"dangling {'.'.join(map(str, p))} = {new!r}"
        op = "type"
    if op == "duplicate":
        lists = [p for p in paths if isinstance(_get(doc, p), list) and _get(doc, p)]
        if lists:
            p = rng.choice(lists)
            items = _get(doc, p)
            i = rng.randrange(len(items))
            items.insert(rng.randrange(len(items) + 1), copy.deepcopy(items[i]))
            return doc, f"duplicate {'.'.join(map(str, p))}[{i}]"
        op = "type"
    if op == "missing":
        keyed = [p for p in paths if isinstance(_get(doc, p[:-1]), dict)]
        p = rng.choice(keyed)
        del _get(doc, p[:-1])[p[-1]]
        return doc, f"missing {'.'.join(map(str, p))}"
    if op == "rename":
        keyed = [p for p in paths if isinstance(_get(doc, p[:-1]), dict) and isinstance(p[-1], str)]
        p = rng.choice(keyed)
        parent = _get(doc, p[:-1])
        parent[p[-1] + rng.choice(["_", "s", "X"])] = parent.pop(p[-1])
        return doc, f"unknown key {'.'.join(map(str, p))}+"
    if op == "absurd":
        nums = [p for p in paths if isinstance(_get(doc, p), (int, float)) and not isinstance(_get(doc, p), bool)]
        lists = [p for p in paths if isinstance(_get(doc, p), list) and _get(doc, p)]
        if lists and (not nums or rng.random() < 0.3):
            p = rng.choice(lists)
            items = _get(doc, p)
            items.extend(copy.deepcopy(items[:1]) * rng.choice([100, 1000]))
            return doc, f"absurd size {'.'.join(map(str, p))} x{len(items)}"
        if nums:
            p = rng.choice(nums)
            new = rng.choice([10**12, -(10**9), 2**64, 1e308, 0, 65536, 512, 1 << 24])
            _get(doc, p[:-1])[p[-1]] = new
            return doc, f"absurd {'.'.join(map(str, p))} = {new!r}"
    p = rng.choice(paths)
    new = rng.choice(WRONG_VALUES)
    _get(doc, p[:-1])[p[-1]] = copy.deepcopy(new)
    shown = new if not isinstance(new, str) or len(new) < 20 else f"{new[:10]}...({len(new)})"
    return doc, f"type {'.'.join(map(str, p))} = {shown!r}"


def mutate_text(text: str, rng: random.Random) -> tuple[bytes, str]:
    lines = text.splitlines(keepends=True)
    op = rng.choice(["dup-line", "dup-line", "truncate", "tab", "colon", "bytes", "indent"])
    i = rng.randrange(len(lines))
    if op == "dup-line":
        lines.insert(i, lines[i])
    elif op == "truncate":
        lines = lines[:i] + ([lines[i][: len(lines[i]) // 2]] if i < len(lines) else [])
    elif op == "tab":
        lines[i] = "\t" + lines[i]
    elif op == "colon":
        lines[i] = lines[i].rstrip("\n") + ": :\n"
    elif op == "indent":
        lines[i] = "   " + lines[i]
    else:
        data = "".join(lines).encode()
        cut = rng.randrange(len(data))
        return data[:cut] + b"\xff\xfe\x00" + data[cut:], f"non-UTF-8 bytes at offset {cut}"
    return "".join(lines).encode(), f"text {op} at line {i + 1}"


@dataclass
class YamlCampaign:
    cases: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (f"{self.cases} mutants: {dict(sorted(self.outcomes.items()))}, "
                f"{len(self.failures)} tracebacks or unlocated errors")


def check_one(path: Path, data: bytes, what: str, render_valid: bool) -> tuple[str, str | None]:
    """(outcome, failure text or None) for one mutant written to ``path``."""
    from control_plane.errors import FabricError
    from control_plane.model import load_fabric

    path.write_bytes(data)
    nlines = data.count(b"\n") + 1
    try:
        fabric = load_fabric(path)
    except FabricError as err:
        bad = [p for p in err.problems
               if p.file != str(path) or not 1 <= p.line <= nlines or not p.key or not p.reason]
        if not err.problems or bad:
            return "unlocated", f"{what}: problems without file:line:key: {bad or err}"
        return "problems", None
    except Exception:  # noqa: BLE001 - the campaign looks for exactly this
        return "traceback", f"{what}:\n{traceback.format_exc(limit=6)}"
    if render_valid:
        try:
            from control_plane.render import render_fabric

            render_fabric(fabric)
        except Exception as err:  # noqa: BLE001
            from control_plane.render import RenderError

            if not isinstance(err, RenderError):
                return "traceback", f"{what} (valid; render):\n{traceback.format_exc(limit=6)}"
            return "render-error", None
    return "ok", None


def run(count: int, seed: int, work: Path, fabrics=SHIPPED, render_valid: bool = True) -> YamlCampaign:
    rng = random.Random(seed)
    res = YamlCampaign()
    sources = {name: (REPO / "fabrics" / f"{name}.yaml").read_text() for name in fabrics}
    docs = {name: yaml.safe_load(text) for name, text in sources.items()}
    work.mkdir(parents=True, exist_ok=True)
    for k in range(count):
        name = rng.choice(list(fabrics))
        if rng.random() < 0.7:
            doc, what = mutate_document(docs[name], rng)
            try:
                data = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True).encode()
            except (ValueError, OverflowError):  # e.g. a NaN key: not representable, skip
                continue
        else:
            data, what = mutate_text(sources[name], rng)
        what = f"{name}: {what}"
        outcome, failure = check_one(work / f"{name}-mutant.yaml", data, what,
                                     render_valid and name != "cluster512")
        res.cases += 1
        res.outcomes[outcome] = res.outcomes.get(outcome, 0) + 1
        if failure:
            res.failures.append(failure)
    return res


__all__ = ["run", "check_one", "mutate_document", "mutate_text"]
