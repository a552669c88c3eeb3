"""The shared IR walk (``p4sim.runtime.irwalk``) and the two spellings plugged into it: every
construct the walk spells from a template has one in each backend's table (or a ``spell_*``
method), except the ones the walk refuses where a backend lacks them, read from the walk's
source so that a construct added to the walk without a spelling fails here rather than on the
first program that uses it."""
from __future__ import annotations

import ast
import inspect

from p4sim.native.cgen import CGen
from p4sim.native.cgen import Unsupported as NativeUnsupported
from p4sim.runtime import irwalk
from p4sim.runtime.codegen import ProgramCompiler


def spelled_constructs() -> tuple[set[str], set[str]]:
    """(constructs the walk requires, constructs it refuses when missing), from its calls of
    ``spell`` and ``spell_or_refuse``."""
    required, optional = set(), set()
    for node in ast.walk(ast.parse(inspect.getsource(irwalk))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            arg = node.args[0]  # a name, or a choice between names (``"and" if op == "&&" else "or"``)
            names = {c.value for c in ((arg.body, arg.orelse) if isinstance(arg, ast.IfExp) else (arg,))
                     if isinstance(c, ast.Constant)}
            if node.func.attr == "spell":
                required |= names
            elif node.func.attr == "spell_or_refuse":
                optional |= names
        elif (isinstance(node, ast.Compare) and isinstance(node.ops[0], ast.NotIn)
              and isinstance(node.left, ast.Constant) and ast.unparse(node.comparators[0]) == "self.spelling"):
            optional.add(node.left.value)  # ``if "x" not in self.spelling: raise ...``
    return required - optional, optional


def missing(backend: type, spelling: dict[str, str]) -> set[str]:
    required, _ = spelled_constructs()
    binary = {k for k in irwalk.BINARY_KINDS.values() if not hasattr(backend, "spell_" + k)}
    return (required | binary) - set(spelling)


def test_the_walk_spells_what_it_decides():
    required, optional = spelled_constructs()
    # the reader sees the walk's constructs (else the checks below would pass vacuously)
    assert {"not", "mark_to_drop", "register_read", "goto", "accept", "else"} <= required
    assert {"string", "int_unary", "int_binary", "tuple"} <= optional


def test_each_backend_spells_every_construct_the_walk_requires():
    assert missing(ProgramCompiler, ProgramCompiler.spelling) == set()
    assert missing(CGen, CGen.spelling) == set()


def test_a_construct_missing_from_a_table_is_reported():
    table = {k: v for k, v in CGen.spelling.items() if k not in ("negate", "div")}
    assert missing(CGen, table) == {"negate", "div"}


def test_only_c_refuses_the_constructs_its_table_lacks():
    for construct in spelled_constructs()[1]:
        assert construct in ProgramCompiler.spelling, construct
    assert "int_binary" not in CGen.spelling and CGen.unsupported is NativeUnsupported
