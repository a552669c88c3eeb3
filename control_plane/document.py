"""The per-switch entries document ("stellar-entries/1"): built from a template's output,
checked against the program's contract, identified, formatted and read back.

Every architecture's renderer produces its document here, so the format, the checks and the
reconcile key are one code path whatever the program.

Document format:
    {"format", "fabric", "switch": {name, role, device_id, p4runtime, mac},
     "path_sets": [{id, purpose, ecmp, members: [{slot, port, via}]}],   # for the controller
     "entries":   [{table, match, action, params, priority?, default_action?, comment}],
     "meters":    [{name, index, cir, cburst, pir, pburst, comment}],      # bytes/s and bytes
     "registers": [{name, index, value, comment}],
     "clone_sessions": [{session_id, replicas: [{egress_port, instance}], class_of_service,
                         packet_length_bytes, comment}]}                 # TNA documents only
A document with "clone_sessions" (a TNA document: its program mirrors feedback copies) says
which clone (mirror) sessions the switch holds, all of them: the push reconciles them like
tables (P4Runtime CloneSessionEntry, read back by a wildcard PRE read).  A document without the
key (v1model: the program clones nothing) leaves the switch's sessions alone.
Match values: exact -> the value; lpm -> {value, prefix_len}; ternary -> {value, mask}; range -> {low, high}; a
wildcard field is omitted.  Values are ints, dotted IPv4 strings or colon MAC strings
(`contract.value_to_int` converts).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import jinja2

from . import contract
from .model import Fabric
from .plan import SwitchPlan

FORMAT = "stellar-entries/1"
ENTRY_KEYS = ("table", "default_action", "match", "action", "params", "priority", "comment")


class RenderError(Exception):
    """A rendered entry breaks the program's contract, a table would overflow, or the fabric
    sets a key the architecture does not implement."""


def build_document(env: jinja2.Environment, fabric: Fabric, plan: SwitchPlan, known_sizes: dict[str, int],
                   context: dict[str, Any], arch: str,
                   path_sets: Optional[list[dict[str, Any]]] = None) -> dict[str, Any]:
    """Render ``<role>.j2`` with ``context``, check every line against ``arch``'s contract and
    return the switch's document (``path_sets``: the controller's view; default the plan's)."""
    switch = plan.switch
    template_name = f"{switch.role}.j2"
    text = env.get_template(template_name).render(**context)
    entries: list[dict[str, Any]] = []
    meters: list[dict[str, Any]] = []
    registers: list[dict[str, Any]] = []
    clone_sessions: list[dict[str, Any]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RenderError(f"{switch.name}: template {template_name} output line {lineno} is not JSON "
                              f"({exc.msg}): {line[:120]}") from None
        kind = item.pop("kind", None)
        if kind == "entry":
            entries.append(_ordered(item))
        elif kind == "default":
            item["default_action"] = True
            entries.append(_ordered(item))
        elif kind == "meter":
            meters.append(item)
        elif kind == "register":
            registers.append(item)
        elif kind == "clone_session":
            clone_sessions.append(item)
        else:
            raise RenderError(f"{switch.name}: template {template_name} output line {lineno} has kind {kind!r}")
    program = contract.program_contract(arch, fabric.dataplane.tna_profile)
    check(switch.name, entries, meters, registers, known_sizes, program, clone_sessions)
    document = {
        "format": FORMAT,
        "fabric": fabric.name,
        "switch": {"name": switch.name, "role": switch.role, "device_id": switch.device_id,
                   "p4runtime": switch.p4runtime, "mac": switch.mac},
        "path_sets": path_sets if path_sets is not None else
        [{"id": p.id, "purpose": p.purpose, "ecmp": p.ecmp,
          "members": [{"slot": i, "port": m.port, "via": m.via} for i, m in enumerate(p.slots)]}
         for p in plan.path_sets],
        "entries": entries,
        "meters": meters,
        "registers": registers,
    }
    if program.clone_sessions is not None:
        document["clone_sessions"] = clone_sessions
    return document


def _ordered(entry: dict[str, Any]) -> dict[str, Any]:
    unknown = set(entry) - set(ENTRY_KEYS)
    if unknown:
        raise RenderError(f"entry has unknown keys {sorted(unknown)}: {entry}")
    return {k: entry[k] for k in ENTRY_KEYS if k in entry}


def check(switch: str, entries: list[dict[str, Any]], meters: list[dict[str, Any]],
           registers: list[dict[str, Any]], known_sizes: dict[str, int],
           program: Optional[contract.ArchContract] = None,
           clone_sessions: Optional[list[dict[str, Any]]] = None) -> None:
    program = program or contract.ARCHES["v1model"]
    problems: list[str] = []
    sessions_seen: set[int] = set()
    for session in clone_sessions or []:
        problems += contract.check_clone_session(session, program)
        if session.get("session_id") in sessions_seen:
            problems.append(f"clone session {session.get('session_id')} rendered twice")
        sessions_seen.add(session.get("session_id"))
    seen: dict[tuple, int] = {}
    per_table: dict[str, int] = {}
    for position, entry in enumerate(entries):
        for issue in contract.check_entry(entry, program.tables):
            problems.append(f"entry {position} ({entry.get('comment', '')}): {issue}")
        try:
            key = entry_identity(entry)
        except (KeyError, ValueError):
            continue  # already reported by check_entry
        if key in seen:
            problems.append(f"entry {position} duplicates entry {seen[key]} (same table, match and priority)")
        seen.setdefault(key, position)
        if not entry.get("default_action") and entry.get("table") in program.tables:  # else: reported
            per_table[entry["table"]] = per_table.get(entry["table"], 0) + 1
    for table_name, count in sorted(per_table.items()):
        size = contract.table_size(program.tables[table_name], known_sizes)
        if count > size:
            problems.append(f"{table_name}: {count} entries exceed the table size {size}")
    for meter in meters:
        size = contract.resolve_size(program.meters.get(meter["name"], 0), known_sizes)
        if not 0 <= meter["index"] < size:
            problems.append(f"meter {meter['name']}[{meter['index']}] outside 0..{size - 1}")
        if meter["cir"] > meter["pir"]:
            problems.append(f"meter {meter['name']}[{meter['index']}]: CIR above PIR")
    for register in registers:
        declared, width = program.registers.get(register["name"], (0, 0))
        size = contract.resolve_size(declared, known_sizes)
        if not 0 <= register["index"] < size:
            problems.append(f"register {register['name']}[{register['index']}] outside 0..{size - 1}")
        elif not 0 <= register["value"] < (1 << width):
            problems.append(f"register {register['name']} value {register['value']} does not fit {width} bits")
    if problems:
        raise RenderError(f"{switch}: {len(problems)} rendered entr{'y breaks' if len(problems) == 1 else 'ies break'} "
                          "the program contract:\n  " + "\n  ".join(problems))


def format_document(doc: dict[str, Any]) -> str:
    """JSON with one list element per line: stable, diff-friendly, still valid JSON."""
    def dump(value: Any) -> str:
        return json.dumps(value, separators=(", ", ": "), ensure_ascii=False)

    lines = ["{"]
    keys = list(doc)
    for i, key in enumerate(keys):
        value = doc[key]
        comma = "," if i < len(keys) - 1 else ""
        if isinstance(value, list) and value:
            lines.append(f"  {dump(key)}: [")
            for j, item in enumerate(value):
                lines.append(f"    {dump(item)}{',' if j < len(value) - 1 else ''}")
            lines.append(f"  ]{comma}")
        else:
            lines.append(f"  {dump(key)}: {dump(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def entry_identity(entry: dict[str, Any]) -> tuple:
    """What identifies an entry on the switch (table, match as ints, priority): the reconcile key.

    Matches are normalised to ints so a document entry and one read back from a switch compare
    equal whatever text form (IP, MAC, number) each used.
    """
    if entry.get("default_action"):
        return (entry["table"], "default")
    match = []
    for field, value in sorted(entry.get("match", {}).items()):
        if isinstance(value, dict) and "prefix_len" in value:
            match.append((field, contract.value_to_int(value["value"]), value["prefix_len"]))
        elif isinstance(value, dict) and "low" in value:
            match.append((field, "range", contract.value_to_int(value["low"]), contract.value_to_int(value["high"])))
        elif isinstance(value, dict):
            match.append((field, contract.value_to_int(value["value"]), contract.value_to_int(value["mask"])))
        else:
            match.append((field, contract.value_to_int(value)))
    return (entry["table"], tuple(match), entry.get("priority"))


def read_documents(out_dir: Path) -> dict[str, dict[str, Any]]:
    """Read back what `write_fabric` wrote: switch name -> document, in index order."""
    index = json.loads((Path(out_dir) / "index.json").read_text())
    if index.get("format") != FORMAT:
        raise RenderError(f"{out_dir}/index.json: format {index.get('format')!r}, expected {FORMAT}")
    documents = {}
    for item in index["switches"]:
        doc = json.loads((Path(out_dir) / item["file"]).read_text())
        if doc.get("format") != FORMAT:
            raise RenderError(f"{out_dir}/{item['file']}: format {doc.get('format')!r}, expected {FORMAT}")
        documents[item["name"]] = doc
    return documents
