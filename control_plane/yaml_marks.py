"""Load YAML into plain Python values while remembering where each value came from.

`yaml.safe_load` throws the source positions away, but every validation error must name the line
of the offending key.  PyYAML's composer keeps `start_mark` on every node, so we compose the node
graph ourselves and convert it, recording for each key path the line of its key (or, for list
items, of the item) and the raw scalar text.  The raw text matters because YAML 1.1 reads an
unquoted MAC such as ``10:20:30:40:50:01`` as a base-60 integer; fields that are really strings
(MACs, addresses) are parsed from the text the user typed instead.

Duplicate mapping keys are an error here (PyYAML silently keeps the last one), because a
duplicated switch port or parameter is almost always a copy-paste mistake.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .errors import FabricError, Problem

PathPart = Union[str, int]
KeyPath = tuple[PathPart, ...]


def format_path(path: KeyPath) -> str:
    """Render a key path as users write it: mapping keys dotted, list indices in brackets."""
    text = ""
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool) and text and _is_index(part):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "<document>"


class _Index(int):
    """An int that marks a list position (so `format_path` writes it as ``[i]``)."""


def _is_index(part: PathPart) -> bool:
    return isinstance(part, _Index)


@dataclass
class MarkedDocument:
    """A loaded YAML document plus, per key path, its source line and raw scalar text."""

    file: str
    data: Any
    lines: dict[KeyPath, int] = field(default_factory=dict)
    raw: dict[KeyPath, str] = field(default_factory=dict)

    def line_of(self, path: KeyPath) -> int:
        """Line of `path`, or of its nearest recorded ancestor (a missing key's parent)."""
        probe = tuple(path)
        while probe:
            if probe in self.lines:
                return self.lines[probe]
            probe = probe[:-1]
        return self.lines.get((), 1)

    def problem(self, path: KeyPath, reason: str) -> Problem:
        return Problem(self.file, self.line_of(path), format_path(path), reason)


def index(i: int) -> _Index:
    """A list index path component."""
    return _Index(i)


def load_marked(text: str, file: str) -> MarkedDocument:
    """Parse `text`; raise FabricError (with line) on YAML syntax errors or duplicate keys."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise FabricError([Problem(file, line, "<document>", f"YAML syntax error: {exc.problem}")]) from None
    doc = MarkedDocument(file=file, data=None)
    if root is None:
        doc.lines[()] = 1
        return doc
    problems: list[Problem] = []
    converter = _Converter(doc, problems)
    doc.data = converter.convert(root, ())
    if problems:
        raise FabricError(problems)
    return doc


class _Converter:
    """Walks a composed node graph into dicts/lists/scalars, recording marks on the way."""

    def __init__(self, doc: MarkedDocument, problems: list[Problem]):
        self.doc = doc
        self.problems = problems
        self.constructor = SafeConstructor()
        self.active: set[int] = set()

    def convert(self, node: Node, path: KeyPath) -> Any:
        self.doc.lines.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, ScalarNode):
            self.doc.raw[path] = node.value
            return self.constructor.construct_object(node, deep=True)
        if id(node) in self.active:  # a recursive alias (&a ... *a inside itself)
            self.problems.append(self.doc.problem(path, "recursive YAML alias is not allowed"))
            return None
        self.active.add(id(node))
        try:
            if isinstance(node, SequenceNode):
                return [self.convert(item, path + (index(i),)) for i, item in enumerate(node.value)]
            if isinstance(node, MappingNode):
                return self._mapping(node, path)
        finally:
            self.active.discard(id(node))
        raise AssertionError(f"unknown YAML node {node!r}")

    def _mapping(self, node: MappingNode, path: KeyPath) -> dict[Any, Any]:
        self.constructor.flatten_mapping(node)  # resolve `<<: *anchor` merge keys
        result: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode):
                line = key_node.start_mark.line + 1
                self.problems.append(Problem(self.doc.file, line, format_path(path), "mapping keys must be scalars"))
                continue
            key = self.constructor.construct_object(key_node, deep=True)
            child = path + (key,)
            if key in result:
                line = key_node.start_mark.line + 1
                first = self.doc.lines.get(child, "?")
                self.problems.append(
                    Problem(self.doc.file, line, format_path(child), f"duplicate key (first defined on line {first})")
                )
                continue
            self.doc.lines[child] = key_node.start_mark.line + 1
            result[key] = self.convert(value_node, child)
        return result
