"""Which links are down, kept across commands, and what a change of that set does to the entries.

Why: the fabric YAML describes the intact fabric.  A controller (or ``stellarctl fail-link``)
that recomputes "the fabric without link X" from the YAML each time forgets the failures it
handled before, so a second failure would re-add routes over the first failed link.  The
entries a switch must hold are a function of the YAML *and* the set of failed links; this
module keeps that set:

* ``FailedLinks``: the set, as (leaf, spine) pairs, saved as JSON (``stellarctl``'s state file,
  by default ``<fabric>.failed-links.json`` beside the YAML; ``--state`` names another).
  ``apply(fabric)`` is the fabric as it is now.
* ``entry_delta``: for two renders (before/after a change of the set), per switch the entries
  to insert, modify and delete in the tables that follow the topology -- what the controller
  writes on a failure or a link's return when it has no delta of its own (the TNA program,
  where groups can be renumbered), and on any restore.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

from .model import Fabric

STATE_SUFFIX = ".failed-links.json"
STATE_FORMAT = "stellar-failed-links/1"


def default_state_path(fabric_path: str | Path) -> Path:
    """Where ``stellarctl`` keeps a fabric's failed links unless told otherwise."""
    path = Path(fabric_path)
    return path.with_name(path.name + STATE_SUFFIX)


@dataclass
class FailedLinks:
    """The links that are down, each as (leaf, spine), in the order they failed."""

    links: list[tuple[str, str]] = field(default_factory=list)
    path: Optional[Path] = None

    @staticmethod
    def key(fabric: Fabric, a: str, b: str) -> tuple[str, str]:
        """The (leaf, spine) pair of the link between ``a`` and ``b``; ValueError if none."""
        for link in fabric.links:
            if {link.leaf, link.spine} == {a, b}:
                return (link.leaf, link.spine)
        raise ValueError(f"{fabric.source}: no link between {a} and {b}")

    def add(self, fabric: Fabric, a: str, b: str) -> bool:
        """Record the a-b link as failed; False if it already was."""
        key = self.key(fabric, a, b)
        if key in self.links:
            return False
        self.links.append(key)
        return True

    def remove(self, fabric: Fabric, a: str, b: str) -> bool:
        """Record the a-b link as back; False if it was not failed."""
        key = self.key(fabric, a, b)
        if key not in self.links:
            return False
        self.links.remove(key)
        return True

    def apply(self, fabric: Fabric) -> Fabric:
        """``fabric`` (the intact one, from the YAML) without every failed link."""
        return fabric.without_links(self.links) if self.links else fabric

    # ------------------------------------------------------------------ the state file
    @classmethod
    def load(cls, path: str | Path, fabric: Optional[Fabric] = None) -> "FailedLinks":
        """The set saved at ``path`` (empty when there is no file).  With ``fabric``, links the
        fabric does not have are an error (a state file from another fabric)."""
        path = Path(path)
        if not path.exists():
            return cls([], path)
        try:
            data = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path}: not a failed-links state file: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != STATE_FORMAT:
            raise ValueError(f"{path}: not a failed-links state file (format {STATE_FORMAT} expected)")
        links = []
        for item in data.get("links", []):
            if not (isinstance(item, list) and len(item) == 2 and all(isinstance(x, str) for x in item)):
                raise ValueError(f"{path}: link {item!r} is not [leaf, spine]")
            links.append((item[0], item[1]))
        if fabric is not None:
            for leaf, spine in links:
                cls.key(fabric, leaf, spine)
        return cls(links, path)

    def save(self, path: Optional[str | Path] = None) -> Path:
        target = Path(path) if path is not None else self.path
        if target is None:
            raise ValueError("no state file to save to")
        if self.links:
            target.write_text(json.dumps({"format": STATE_FORMAT, "links": [list(k) for k in self.links]},
                                         indent=1) + "\n")
        elif target.exists():
            target.unlink()  # nothing failed: no state to keep
        return target


@dataclass
class EntryDelta:
    """One switch's entry writes for a topology change, in document form."""

    inserts: list[dict[str, Any]] = field(default_factory=list)
    modifies: list[dict[str, Any]] = field(default_factory=list)
    deletes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        return not (self.inserts or self.modifies or self.deletes)

    @property
    def total(self) -> int:
        return len(self.inserts) + len(self.modifies) + len(self.deletes)


def _action_of(entry: Mapping[str, Any]) -> tuple:
    return entry.get("action"), tuple(sorted((entry.get("params") or {}).items()))


def entry_delta(before: Mapping[str, Mapping[str, Any]], after: Mapping[str, Mapping[str, Any]],
                tables: Iterable[str]) -> dict[str, EntryDelta]:
    """Per switch, the writes that turn ``before``'s entries of ``tables`` into ``after``'s
    (documents as the render writes them; default actions are not topology).  Switches with
    nothing to write are left out."""
    from .render import entry_identity

    tables = frozenset(tables)
    out: dict[str, EntryDelta] = {}
    for name in sorted(set(before) | set(after)):
        old = {entry_identity(e): e for e in (before.get(name) or {}).get("entries", [])
               if e["table"] in tables and not e.get("default_action")}
        new = {entry_identity(e): e for e in (after.get(name) or {}).get("entries", [])
               if e["table"] in tables and not e.get("default_action")}
        delta = EntryDelta(
            inserts=[new[k] for k in new if k not in old],
            modifies=[new[k] for k in new if k in old and _action_of(new[k]) != _action_of(old[k])],
            deletes=[old[k] for k in old if k not in new])
        if not delta.empty:
            out[name] = delta
    return out
