"""The session's entry codec against finsy's entity codec, its reference.

`EntryCodec` exists because finsy's codec is measured 2-4x slower per entry (see its docstring);
it must give the same protos and the same documents as finsy on every entry Stellar writes.
"""
from __future__ import annotations

from pathlib import Path

import finsy as fy
import pytest

from control_plane.model import load_fabric
from control_plane.p4rt import EntryCodec, ProgramFiles, decode_entry_finsy, finsy_entry
from control_plane.render import render_fabric

ROOT = Path(__file__).resolve().parents[2]


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
