"""Typed, range-checked reading of one YAML mapping, collecting problems instead of raising.

Every `get_*` call both reads a key and declares it known; `finish()` then reports every key that
nobody asked for as unknown.  That keeps the schema in one place (the code that builds the model)
instead of a separate schema file that could drift from it.  A jsonschema library would give
types and ranges but not our line numbers for cross-reference errors, so this is hand-written.
"""
from __future__ import annotations

import ipaddress
import math
import re
from typing import Any, Iterable, Optional

from .errors import Problem
from .yaml_marks import KeyPath, MarkedDocument, index

_MISSING = object()
_MAC_RE = re.compile(r"^[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}$")


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "list", dict: "mapping"}.get(
        type(value), type(value).__name__
    )


class MappingReader:
    """Reads keys of the mapping at `path` in `doc`; problems go to the shared `problems` list."""

    def __init__(self, doc: MarkedDocument, path: KeyPath, data: Any, problems: list[Problem]):
        self.doc = doc
        self.path = path
        self.problems = problems
        self.known: set[Any] = set()
        self.ok = isinstance(data, dict)
        if not self.ok and data is not None:
            self.error((), f"expected a mapping, got {_type_name(data)}")
        self.data: dict[Any, Any] = data if isinstance(data, dict) else {}

    # -- reporting ---------------------------------------------------------------------------
    def error(self, sub: KeyPath, reason: str) -> None:
        self.problems.append(self.doc.problem(self.path + tuple(sub), reason))

    def child_path(self, key: Any) -> KeyPath:
        return self.path + (key,)

    def has(self, key: str) -> bool:
        self.known.add(key)
        return key in self.data

    def finish(self, hint: Iterable[str] = ()) -> None:
        """Report keys that no getter asked for (typos such as `capacity_gpbs`)."""
        for key in self.data:
            if key not in self.known:
                allowed = ", ".join(sorted(str(k) for k in self.known | set(hint)))
                self.error((key,), f"unknown key (allowed: {allowed})")

    # -- raw access --------------------------------------------------------------------------
    def raw(self, key: str, required: bool = False) -> Any:
        self.known.add(key)
        if key not in self.data:
            if required:
                self.error((), f"missing required key '{key}'")
            return _MISSING
        return self.data[key]

    def sub(self, key: str, required: bool = False) -> "MappingReader":
        """A reader for a nested mapping (an empty one when the key is absent)."""
        value = self.raw(key, required)
        return MappingReader(self.doc, self.child_path(key), None if value is _MISSING else value, self.problems)

    def items(self, key: str, required: bool = False) -> list[tuple[KeyPath, Any]]:
        """(path, value) for each element of a list-valued key."""
        value = self.raw(key, required)
        if value is _MISSING or value is None:
            return []
        if not isinstance(value, list):
            self.error((key,), f"expected a list, got {_type_name(value)}")
            return []
        return [(self.child_path(key) + (index(i),), item) for i, item in enumerate(value)]

    # -- typed getters -----------------------------------------------------------------------
    def get_str(self, key: str, required: bool = False, default: Optional[str] = None,
                choices: Optional[Iterable[str]] = None) -> Optional[str]:
        value = self.raw(key, required)
        if value is _MISSING:
            return default
        if not isinstance(value, str):
            self.error((key,), f"expected a string, got {_type_name(value)} {value!r}")
            return default
        if choices is not None:
            options = list(choices)
            if value not in options:
                self.error((key,), f"must be one of {', '.join(options)}; got '{value}'")
                return default
        return value

    def get_text(self, key: str, required: bool = False) -> Optional[str]:
        """The text the user typed for a scalar, whatever YAML made of it (MACs, addresses)."""
        value = self.raw(key, required)
        if value is _MISSING:
            return None
        if isinstance(value, (dict, list)) or value is None:
            self.error((key,), f"expected a string, got {_type_name(value)}")
            return None
        return self.doc.raw.get(self.child_path(key), str(value))

    def get_int(self, key: str, required: bool = False, default: Optional[int] = None,
                minimum: Optional[int] = None, maximum: Optional[int] = None) -> Optional[int]:
        value = self.raw(key, required)
        if value is _MISSING:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            self.error((key,), f"expected an integer, got {_type_name(value)} {value!r}")
            return default
        return self._range(key, value, minimum, maximum, default)

    def get_number(self, key: str, required: bool = False, default: Optional[float] = None,
                   minimum: Optional[float] = None, maximum: Optional[float] = None,
                   exclusive_minimum: bool = False) -> Optional[float]:
        value = self.raw(key, required)
        if value is _MISSING:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            self.error((key,), f"expected a number, got {_type_name(value)} {value!r}")
            return default
        if exclusive_minimum and minimum is not None and value <= minimum:
            self.error((key,), f"must be greater than {minimum}; got {value}")
            return default
        checked = self._range(key, value, minimum, maximum, default)
        return None if checked is None else float(checked)

    def get_bool(self, key: str, default: bool) -> bool:
        value = self.raw(key)
        if value is _MISSING:
            return default
        if not isinstance(value, bool):
            self.error((key,), f"expected true or false, got {_type_name(value)} {value!r}")
            return default
        return value

    def _range(self, key: str, value: Any, minimum: Any, maximum: Any, default: Any) -> Any:
        if minimum is not None and value < minimum:
            self.error((key,), f"out of range: {value} is below the minimum {minimum}")
            return default
        if maximum is not None and value > maximum:
            self.error((key,), f"out of range: {value} is above the maximum {maximum}")
            return default
        return value

    # -- formats -----------------------------------------------------------------------------
    def get_ipv4(self, key: str, required: bool = False) -> Optional[ipaddress.IPv4Address]:
        text = self.get_text(key, required)
        if text is None:
            return None
        try:
            return ipaddress.IPv4Address(text)
        except ValueError:
            self.error((key,), f"not an IPv4 address: '{text}'")
            return None

    def get_mac(self, key: str, required: bool = False) -> Optional[str]:
        text = self.get_text(key, required)
        if text is None:
            return None
        if not _MAC_RE.match(text):
            self.error((key,), f"not a MAC address (want six hex pairs like 02:00:00:00:00:01): '{text}'")
            return None
        return text.lower()


def parse_subnet(reader: MappingReader, sub: KeyPath, text: Any) -> Optional[ipaddress.IPv4Network]:
    """Parse an IPv4 prefix strictly (host bits must be zero, so 10.0.1.5/24 is rejected)."""
    if not isinstance(text, str):
        reader.error(sub, f"expected a subnet string like 10.0.1.0/24, got {_type_name(text)}")
        return None
    try:
        return ipaddress.IPv4Network(text, strict=True)
    except ValueError as exc:
        reader.error(sub, f"not a valid IPv4 subnet: '{text}' ({exc})")
        return None
