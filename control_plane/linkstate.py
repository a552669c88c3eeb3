"""Which links are down, kept across commands, and what a change of that set does to the entries.

Why: the fabric YAML describes the intact fabric.  A controller (or ``stellarctl fail-link``)
that recomputes "the fabric without link X" from the YAML each time forgets the failures it
handled before, so a second failure would re-add routes over the first failed link.  The
entries a switch must hold are a function of the YAML *and* the set of failed links; this
module keeps that set:

* ``FailedLinks``: the set, as (leaf, spine) pairs, saved as JSON: ``stellarctl``'s state file,
  by default ``build/state/<fabric stem>.failed-links.json`` under the working directory
  (``--state-dir`` or ``$STELLAR_STATE_DIR`` name another directory, ``--state`` another file),
  never beside the YAML: the fabric files are sources, the failures are run-time state.  The file
  names the fabric it belongs to, so two fabrics with one file name cannot mix their failures.
  ``apply(fabric)`` is the fabric as it is now.
* ``legacy_state_path``: where older versions wrote the file (beside the YAML); found there, it
  is reported and ignored.
* ``reachability``: which leaves each leaf still reaches with the set applied, so a leaf cut off
  by its failures is reported as partitioned, not crashed on.
* ``entry_delta``: for two renders (before/after a change of the set), per switch the entries
  to insert, modify and delete in the tables that follow the topology -- what the controller
  writes on a failure or a link's return when it has no delta of its own (the TNA program,
  where groups can be renumbered), and on any restore.
"""
from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

from .model import Fabric

STATE_SUFFIX = ".failed-links.json"
STATE_FORMAT = "stellar-failed-links/1"
STATE_DIR_ENV = "STELLAR_STATE_DIR"
DEFAULT_STATE_DIR = Path("build") / "state"


def state_dir(given: Optional[str | Path] = None) -> Path:
    """The directory of run-time state: ``given``, else ``$STELLAR_STATE_DIR``, else
    ``build/state`` under the working directory."""
    if given:
        return Path(given)
    return Path(os.environ.get(STATE_DIR_ENV) or DEFAULT_STATE_DIR)


def default_state_path(fabric_path: str | Path, directory: Optional[str | Path] = None) -> Path:
    """Where ``stellarctl`` keeps a fabric's failed links unless ``--state`` names a file."""
    return state_dir(directory) / (Path(fabric_path).stem + STATE_SUFFIX)


def legacy_state_path(fabric_path: str | Path) -> Path:
    """Where older versions kept the failed links: beside the fabric YAML."""
    path = Path(fabric_path)
    return path.with_name(path.name + STATE_SUFFIX)


def reachability(fabric: Fabric, failed: "FailedLinks") -> dict[str, list[str]]:
    """For each leaf that the failed links cut off from some other leaf, the leaves it still
    reaches (through a spine); leaves that reach every other leaf are left out."""
    from .paths import equal_cost_paths

    paths = equal_cost_paths(failed.apply(fabric))
    leaves = sorted(s.name for s in fabric.leaves)
    out = {}
    for leaf in leaves:
        reached = [other for other in leaves if other != leaf and paths.get((leaf, other))]
        if len(reached) < len(leaves) - 1:
            out[leaf] = reached
    return out


def describe_partition(fabric: Fabric, failed: "FailedLinks") -> list[str]:
    """One line per leaf the failed links cut off: what it can no longer reach, what it still
    can.  A leaf that only misses leaves already reported is not repeated (when leaf1 loses its
    last uplink, that the others cannot reach leaf1 is the same fact)."""
    reach = reachability(fabric, failed)
    leaves = [s.name for s in fabric.leaves]
    lost = {leaf: [o for o in leaves if o != leaf and o not in reached] for leaf, reached in reach.items()}
    reported: set[str] = set()
    lines = []
    for leaf in sorted(lost, key=lambda name: (-len(lost[name]), name)):
        if not set(lost[leaf]) - reported:
            continue
        reported.add(leaf)
        reached = reach[leaf]
        uplinks = [l.spine for l in failed.apply(fabric).links if l.leaf == leaf]
        hosts = sorted(h.name for h in fabric.hosts.values() if h.leaf == leaf)
        what = "is PARTITIONED" if not reached else "is CUT OFF from " + ", ".join(lost[leaf])
        lines.append(f"{leaf} {what}: "
                     + (f"uplinks left to {', '.join(uplinks)}" if uplinks else "no uplink left")
                     + f"; cannot reach {', '.join(lost[leaf])}; still reaches "
                     + (", ".join(reached) if reached else "no other leaf")
                     + (f" and its own hosts ({', '.join(hosts)})" if hosts else ""))
    return lines


@dataclass
class FailedLinks:
    """The links that are down, each as (leaf, spine), in the order they failed."""

    links: list[tuple[str, str]] = field(default_factory=list)
    path: Optional[Path] = None
    fabric: Optional[str] = None  # the fabric file (absolute path) the record belongs to
    since: dict[str, str] = field(default_factory=dict)  # "leaf-spine" -> UTC time it was recorded

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
        self.since[f"{key[0]}-{key[1]}"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        return True

    def remove(self, fabric: Fabric, a: str, b: str) -> bool:
        """Record the a-b link as back; False if it was not failed."""
        key = self.key(fabric, a, b)
        if key not in self.links:
            return False
        self.links.remove(key)
        self.since.pop(f"{key[0]}-{key[1]}", None)
        return True

    def apply(self, fabric: Fabric) -> Fabric:
        """``fabric`` (the intact one, from the YAML) without every failed link."""
        return fabric.without_links(self.links) if self.links else fabric

    # ------------------------------------------------------------------ the state file
    @classmethod
    def load(cls, path: str | Path, fabric: Optional[Fabric] = None) -> "FailedLinks":
        """The set saved at ``path`` (empty when there is no file).  With ``fabric``, links the
        fabric does not have are an error (a state file from another fabric), and so is a file
        that names another fabric file."""
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
        owner = data.get("fabric")
        if fabric is not None:
            source = _resolved(fabric.source)
            if isinstance(owner, str) and source and owner != source:
                raise ValueError(f"{path}: records the failed links of {owner}, not of {source} "
                                 "(give this fabric its own --state-dir or --state FILE)")
            for leaf, spine in links:
                cls.key(fabric, leaf, spine)
        since = data.get("since") if isinstance(data.get("since"), dict) else {}
        return cls(links, path, owner if isinstance(owner, str) else None,
                   {f"{a}-{b}": str(since.get(f"{a}-{b}", "")) for a, b in links})

    def save(self, path: Optional[str | Path] = None, fabric: Optional[Fabric] = None) -> Path:
        """Write the set (creating the directory); with no link failed the file is removed."""
        target = Path(path) if path is not None else self.path
        if target is None:
            raise ValueError("no state file to save to")
        if fabric is not None:
            self.fabric = _resolved(fabric.source) or self.fabric
        if self.links:
            now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            since = {f"{a}-{b}": self.since.get(f"{a}-{b}") or now for a, b in self.links}
            target.parent.mkdir(parents=True, exist_ok=True)
            doc = {"format": STATE_FORMAT, "fabric": self.fabric, "links": [list(k) for k in self.links],
                   "since": since}
            tmp = target.with_name(target.name + ".tmp")
            tmp.write_text(json.dumps(doc, indent=1) + "\n")
            os.replace(tmp, target)
        elif target.exists():
            target.unlink()  # nothing failed: no state to keep
        return target


def _resolved(source: Optional[str]) -> Optional[str]:
    """The fabric file's absolute path (None for a fabric that did not come from a file)."""
    if not source or source.startswith("<"):
        return None
    return str(Path(source).resolve())


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
