"""The session's entry codec against finsy's entity codec, its reference.

`EntryCodec` exists because finsy's codec is measured 2-4x slower per entry (see its docstring);
it must give the same protos and the same documents as finsy on every entry Stellar writes.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

import finsy as fy
import pytest



from finsy.p4schema import P4MatchType
from p4.v1 import p4runtime_pb2

from control_plane import contract
from control_plane.model import load_fabric
from control_plane.p4rt import EntryCodec, ProgramFiles
from control_plane.render import render_fabric

ROOT = Path(__file__).resolve().parents[2]


# -- the reference: document entries through finsy's own entities -----------------------------
def _int(value: Any) -> int:
    """A decoded value as an int (finsy may hand back an address object for formatted fields)."""
    return value if isinstance(value, int) else int(value)


def _match_value(kind: P4MatchType, value: Any) -> Any:
    """A document match value in the form finsy encodes: int, (value, plen), (value, mask), (lo, hi)."""
    if kind == P4MatchType.LPM:
        return contract.value_to_int(value["value"]), int(value["prefix_len"])
    if kind == P4MatchType.TERNARY:
        return contract.value_to_int(value["value"]), contract.value_to_int(value["mask"])
    if kind == P4MatchType.RANGE:
        return contract.value_to_int(value["low"]), contract.value_to_int(value["high"])
    return contract.value_to_int(value)


def _document_match(kind: P4MatchType, value: Any) -> Any:
    if kind == P4MatchType.LPM:
        return {"value": _int(value[0]), "prefix_len": int(value[1])}
    if kind == P4MatchType.TERNARY:
        return {"value": _int(value[0]), "mask": _int(value[1])}
    if kind == P4MatchType.RANGE:
        return {"low": _int(value[0]), "high": _int(value[1])}
    return _int(value)


def finsy_entry(schema: fy.P4Schema, entry: Mapping[str, Any], with_action: bool = True) -> fy.P4TableEntry:
    """A document entry (or default action) as a finsy P4TableEntry.

    Names are checked here (KeyError: the entry is refused locally, never sent); values are
    checked against the P4Info widths by finsy's encoder (ValueError = OUT_OF_RANGE).
    """
    table = schema.tables.get(entry["table"])
    if table is None:
        raise KeyError(f"no table named {entry['table']!r} in the switch's P4Info")
    match = None
    if not entry.get("default_action"):
        match = fy.P4TableMatch()
        for fname, value in (entry.get("match") or {}).items():
            f = table.match_fields.get(fname)
            if f is None:
                raise KeyError(f"table {table.name} has no match field {fname!r}")
            match[fname] = _match_value(f.match_type, value)
    action = None
    if with_action and entry.get("action"):
        act = schema.actions.get(entry["action"])
        if act is None:
            raise KeyError(f"no action named {entry['action']!r} in the switch's P4Info")
        args = {}
        for pname, value in (entry.get("params") or {}).items():
            if act.params.get(pname) is None:
                raise KeyError(f"action {act.name} has no param {pname!r}")
            args[pname] = contract.value_to_int(value)
        action = fy.P4TableAction(act.name, **args)
    return fy.P4TableEntry(table.name, match=match, action=action,
                           is_default_action=bool(entry.get("default_action")),
                           priority=0 if entry.get("default_action") else int(entry.get("priority") or 0))




def decode_entry_finsy(schema: fy.P4Schema, te: p4runtime_pb2.TableEntry) -> dict[str, Any]:
    """The reference decoding (finsy's entities) of a TableEntry, in document form."""
    table = schema.tables.get(te.table_id)
    if table is None:
        raise AssertionError(f"switch returned an entry of unknown table id {te.table_id}")
    got = fy.P4TableEntry.decode_entry(te, schema)
    out: dict[str, Any] = {"table": table.name}
    if got.is_default_action:
        out["default_action"] = True
    else:
        out["match"] = {table.match_fields[alias].name: _document_match(table.match_fields[alias].match_type, value)
                        for alias, value in (got.match or {}).items()}
    if isinstance(got.action, fy.P4TableAction):
        out["action"] = schema.actions[got.action.name].name
        out["params"] = {k: _int(v) for k, v in got.action.args.items()}
    else:
        out["action"] = None
        out["params"] = {}
    if got.priority:
        out["priority"] = got.priority
    return out




@pytest.fixture(scope="module")
def schema(tmp_path_factory) -> fy.P4Schema:
    program = ProgramFiles.compile(ROOT / "p4src/v1model/stellar.p4", [ROOT / "p4src"], tmp_path_factory.mktemp("st"))
    return fy.P4Schema(program.p4info)


def normal(entry: dict) -> dict:
    """A document entry as it reads back: ints, no comment."""
    from control_plane import contract

    def num(v):
        if isinstance(v, dict):
            return {k: num(x) for k, x in v.items()}
        return contract.value_to_int(v)

    out = {"table": entry["table"], "action": entry.get("action"),
           "params": {k: num(v) for k, v in (entry.get("params") or {}).items()}}
    if entry.get("default_action"):
        out["default_action"] = True
    else:
        out["match"] = {k: num(v) for k, v in entry["match"].items()}
    if entry.get("priority"):
        out["priority"] = entry["priority"]
    return out


def test_same_protos_and_documents_as_finsy_on_every_entry_of_512_gpus(schema):
    codec = EntryCodec(schema)
    docs = render_fabric(load_fabric(ROOT / "fabrics" / "cluster512.yaml")).documents
    entries = [e for d in docs.values() for e in d["entries"]]
    assert len(entries) > 8000
    for entry in entries:
        mine = codec.encode(entry)
        assert mine == finsy_entry(schema, entry).encode_entry(schema), entry
        assert codec.decode(mine) == decode_entry_finsy(schema, mine) == normal(entry)
        assert not codec.encode(entry, with_action=False).HasField("action")


def test_width_and_name_errors_like_finsy(schema):
    codec = EntryCodec(schema)
    wide = {"table": "StellarIngress.routing.lpm", "match": {"hdr.ipv4.dst_addr": {"value": 1, "prefix_len": 32}},
            "action": "StellarIngress.routing.set_path_set", "params": {"path_set_id": 1 << 16}}
    with pytest.raises(ValueError):
        codec.encode(wide)
    with pytest.raises(ValueError):
        finsy_entry(schema, wide).encode_entry(schema)
    fits = dict(wide, params={"path_set_id": (1 << 16) - 1})
    assert codec.encode(fits) == finsy_entry(schema, fits).encode_entry(schema)  # negative control
    with pytest.raises(KeyError, match="no table"):
        codec.encode(dict(wide, table="nope"))
    with pytest.raises(KeyError, match="no param"):
        codec.encode(dict(fits, params={"nope": 1}))
