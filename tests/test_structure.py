"""The repository's import structure, read from the source (``ast``), not by importing it.

Three rules keep the layers one-directional and each module's private names private:

* no import circles between files of ``control_plane/``, ``p4sim/`` and ``ptf_tests/`` (every
  import counts: module level, inside functions and under ``TYPE_CHECKING``, since each of them
  ties the two files together; an architecture plugs in through a registry instead);
* no private name (one leading underscore) imported from, or read off, another module of those
  packages: a helper two modules share is a public function in a module of its own;
* ``bench/`` and ``tests/`` do not import each other: harness code both use lives in ``testkit/``;
* ``control_plane/`` imports nothing from ``p4sim/``: the simulator uses the control plane, never
  the reverse (a compile goes through ``p4build``, the one compile step per target).

"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("control_plane", "p4sim", "ptf_tests")


@dataclass
class ModuleImports:
    """What one file imports: modules of the analysed packages, and names taken from modules."""

    name: str
    path: Path
    modules: set[str] = field(default_factory=set)  # analysed modules it depends on
    names: list[tuple[str, str]] = field(default_factory=list)  # (source module, imported name)
    attributes: list[tuple[str, str]] = field(default_factory=list)  # (module, attr) of ``mod.attr``
    dynamic: list[str] = field(default_factory=list)  # string arguments of dynamic imports


def module_files(root: Path, packages: Iterable[str]) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of ``packages`` under ``root``."""
    out = {}
    for pkg in packages:
        for f in sorted((root / pkg).rglob("*.py")):
            parts = list(f.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = f
    return out


def _absolute(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _longest(name: str, known: dict[str, Path]) -> str | None:
    """The analysed module ``name`` lives in (``a.b.c`` -> ``a.b`` when c is an attribute)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


_DYNAMIC = {"import_module", "spec_from_file_location", "run_path", "__import__"}


def read_imports(name: str, path: Path, known: dict[str, Path]) -> ModuleImports:
    tree = ast.parse(path.read_text(), str(path))
    mi = ModuleImports(name, path)
    bound: dict[str, str] = {}  # local name -> analysed module it is bound to
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                target = _longest(a.name, known)
                if target:
                    mi.modules.add(target)
                    if a.asname:
                        bound[a.asname] = target
                mi.names.append((a.name, ""))
        elif isinstance(node, ast.ImportFrom):
            src = _absolute(name, is_package, node)
            for a in node.names:
                sub = f"{src}.{a.name}"
                target = sub if sub in known else _longest(src, known)
                if target:
                    mi.modules.add(target)
                if sub in known:
                    bound[a.asname or a.name] = sub
                else:
                    mi.names.append((src, a.name))
        elif isinstance(node, ast.Call):
            fn = node.func
            fname = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
            if fname in _DYNAMIC:
                mi.dynamic += [c.value for a in node.args for c in ast.walk(a)
                               if isinstance(c, ast.Constant) and isinstance(c.value, str)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in bound:
            mi.attributes.append((bound[node.value.id], node.attr))
    mi.modules.discard(name)
    return mi


def read_all(root: Path, packages: Iterable[str]) -> dict[str, ModuleImports]:
    known = module_files(root, packages)
    return {name: read_imports(name, path, known) for name, path in known.items()}


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for start in graph:
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in graph:
                    continue
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    x = stack.pop()
                    on_stack.discard(x)
                    comp.add(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    found.append(frozenset(comp))
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(mods: dict[str, ModuleImports]) -> set[tuple[str, str, str]]:
    """(importer, source module, name) for every private name one module takes from another."""
    out = set()
    for m in mods.values():
        for src, name in m.names + m.attributes:
            if src != m.name and _private(name):
                out.add((m.name, src, name))
    return out


def cross_imports(root: Path, importer: str, forbidden: str) -> set[tuple[str, str]]:
    """(file, module) for every import of ``forbidden``'s modules (static, or a dynamic import
    naming it, e.g. ``spec_from_file_location(.., ROOT / "bench" / "x.py")``) in the files of
    directory ``importer``."""
    out = set()
    for f in sorted((root / importer).rglob("*.py")):
        mi = read_imports(f"{importer}.{f.stem}", f, {})
        rel = str(f.relative_to(root))
        for src, _ in mi.names:
            if src == forbidden or src.startswith(forbidden + "."):
                out.add((rel, src))
        for s in mi.dynamic:
            if s == forbidden or s.startswith(forbidden + ".") or f"{forbidden}/" in s or f"/{forbidden}" in s:
                out.add((rel, s))
    return out


@pytest.fixture(scope="module")
def repo() -> dict[str, ModuleImports]:
    return read_all(ROOT, PACKAGES)


def test_no_import_circles(repo):
    found = set(circles({m: mi.modules for m, mi in repo.items()}))
    assert not found, f"import circles between files: {sorted(sorted(c) for c in found)}"


def test_no_private_names_across_modules(repo):
    found = private_imports(repo)
    assert not found, f"private names imported across modules: {sorted(found)}"


@pytest.mark.parametrize("importer, forbidden", [("bench", "tests"), ("tests", "bench"), ("testkit", "tests"),
                                                ("testkit", "bench")])
def test_bench_and_tests_do_not_import_each_other(importer, forbidden):
    """Neither imports the other, and the harness both share (testkit/) imports neither."""
    found = cross_imports(ROOT, importer, forbidden)
    assert not sorted(found), f"{importer}/ imports {forbidden}/"


def test_control_plane_imports_nothing_from_p4sim():
    found = cross_imports(ROOT, "control_plane", "p4sim")
    assert not sorted(found), f"control_plane/ imports p4sim/: {sorted(found)}"


# ---------------------------------------------------------------- the checks themselves


def _tree(tmp_path: Path, files: dict[str, str]) -> dict[str, ModuleImports]:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return read_all(tmp_path, ["pkg"])


def test_a_new_circle_is_found(tmp_path):
    """Negative control: a circle through a function-level and a TYPE_CHECKING import, and a
    private name, are all seen; the same files without the back edge are clean."""
    base = {"pkg/__init__.py": "", "pkg/c.py": "import os\n",
            "pkg/a.py": "from pkg import b\n\ndef f():\n    return b.g()\n"}
    back = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import f\n"
    clean = _tree(tmp_path / "clean", {**base, "pkg/b.py": "def g():\n    return 1\n"})
    assert circles({m: mi.modules for m, mi in clean.items()}) == []
    bad = _tree(tmp_path / "bad", {**base, "pkg/b.py": back + "def g():\n    from .c import _h\n"})
    assert circles({m: mi.modules for m, mi in bad.items()}) == [frozenset({"pkg.a", "pkg.b"})]
    assert private_imports(bad) == {("pkg.b", "pkg.c", "_h")}


def test_a_private_attribute_read_is_found(tmp_path):
    mods = _tree(tmp_path, {"pkg/__init__.py": "", "pkg/c.py": "_x = 1\n",
                            "pkg/d.py": "from pkg import c\nprint(c._x, c.__name__)\n"})
    assert private_imports(mods) == {("pkg.d", "pkg.c", "_x")}


def test_a_dynamic_import_across_bench_and_tests_is_found(tmp_path):
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text(
        'import importlib.util\nspec = importlib.util.spec_from_file_location("b", ROOT / "bench" / "b.py")\n')
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "b.py").write_text("from tests.x import y\n")
    assert cross_imports(tmp_path, "tests", "bench") == {("tests/t.py", "bench")}
    assert cross_imports(tmp_path, "bench", "tests") == {("bench/b.py", "tests.x")}


def test_a_control_plane_import_of_p4sim_is_found(tmp_path):
    """Negative control: a function-level import of a p4sim module is seen, a module whose
    name only starts with "p4sim" is not."""
    (tmp_path / "control_plane" / "p4rt").mkdir(parents=True)
    (tmp_path / "control_plane" / "p4rt" / "f.py").write_text(
        "import p4simple\n\ndef compile():\n    from p4sim.compiler import compile_files\n")
    assert cross_imports(tmp_path, "control_plane", "p4sim") == {("control_plane/p4rt/f.py", "p4sim.compiler")}
