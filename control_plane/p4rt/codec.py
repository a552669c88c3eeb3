"""Document entries <-> P4Runtime table entries, by the P4Info's names (finsy's P4Schema)."""
from __future__ import annotations

from typing import Any, Mapping

import finsy as fy
from finsy.p4schema import P4MatchType
from p4.v1 import p4runtime_pb2

from .. import contract
from .errors import P4RuntimePushError


class EntryCodec:
    """Document entries <-> P4Runtime TableEntry protos, by the ids and widths of finsy's P4Schema.

    finsy's own entity codec (P4TableEntry.encode/decode) is the reference and gives the same
    protos (tests/control_plane/test_entry_codec.py checks every entry of the 512-GPU fabric
    both ways), but it resolves every name through the schema per value: measured on the 512-GPU
    fabric's 8,595 entries, 55 µs to encode and 75 µs to decode an entry, against 25-32 and 16 µs
    for this codec, whose look-ups are made once per P4Info.  The controller's failover delta
    and every reconcile read-back go through here.
    """

    def __init__(self, schema: fy.P4Schema) -> None:
        self.schema = schema
        self.tables: dict[str, tuple] = {}
        self.tables_by_id: dict[int, tuple] = {}
        for t in schema.tables:
            fields = {f.name: (f.id, f.match_type, f.bitwidth) for f in t.match_fields}
            by_id = {f.id: (f.name, f.match_type) for f in t.match_fields}
            info = (t.id, t.name, fields, by_id)
            self.tables_by_id[t.id] = info
            self.tables[t.name] = self.tables[t.alias] = info
        self.actions: dict[str, tuple] = {}
        self.actions_by_id: dict[int, tuple] = {}
        for act in schema.actions:
            params = {p.name: (p.id, p.bitwidth) for p in act.params}
            info = (act.id, act.name, params, {p.id: p.name for p in act.params})
            self.actions_by_id[act.id] = info
            self.actions[act.name] = self.actions[act.alias] = info

    @staticmethod
    def _bytes(value: int, width: int, what: str) -> bytes:
        if value < 0 or (width and value.bit_length() > width):
            raise ValueError(f"{what}: value {value} does not fit in {width} bits")
        return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")

    def encode(self, entry: Mapping[str, Any], with_action: bool = True) -> p4runtime_pb2.TableEntry:
        """KeyError: an unknown name; ValueError: a value too wide for its field (OUT_OF_RANGE)."""
        table = self.tables.get(entry["table"])
        if table is None:
            raise KeyError(f"no table named {entry['table']!r} in the switch's P4Info")
        tid, tname, fields, _ = table
        out = p4runtime_pb2.TableEntry(table_id=tid)
        b = self._bytes
        if entry.get("default_action"):
            out.is_default_action = True
        else:
            for fname, value in (entry.get("match") or {}).items():
                f = fields.get(fname)
                if f is None:
                    raise KeyError(f"table {tname} has no match field {fname!r}")
                fid, kind, width = f
                if kind == P4MatchType.LPM:
                    plen = int(value["prefix_len"])
                    if plen == 0:
                        continue  # don't care: omitted, as the spec asks
                    fm = out.match.add(field_id=fid)
                    fm.lpm.value = b(contract.value_to_int(value["value"]), width, fname)
                    fm.lpm.prefix_len = plen
                elif kind == P4MatchType.TERNARY:
                    mask = contract.value_to_int(value["mask"])
                    if mask == 0:
                        continue
                    fm = out.match.add(field_id=fid)
                    fm.ternary.value = b(contract.value_to_int(value["value"]), width, fname)
                    fm.ternary.mask = b(mask, width, fname)
                elif kind == P4MatchType.RANGE:
                    fm = out.match.add(field_id=fid)
                    fm.range.low = b(contract.value_to_int(value["low"]), width, fname)
                    fm.range.high = b(contract.value_to_int(value["high"]), width, fname)
                elif kind == P4MatchType.OPTIONAL:
                    if value is None:
                        continue
                    out.match.add(field_id=fid).optional.value = b(contract.value_to_int(value), width, fname)
                else:
                    out.match.add(field_id=fid).exact.value = b(contract.value_to_int(value), width, fname)
            out.priority = int(entry.get("priority") or 0)
        if with_action and entry.get("action"):
            action = self.actions.get(entry["action"])
            if action is None:
                raise KeyError(f"no action named {entry['action']!r} in the switch's P4Info")
            aid, aname, params, _ = action
            out.action.action.action_id = aid
            add = out.action.action.params.add
            for pname, value in (entry.get("params") or {}).items():
                p = params.get(pname)
                if p is None:
                    raise KeyError(f"action {aname} has no param {pname!r}")
                add(param_id=p[0], value=b(contract.value_to_int(value), p[1], pname))
        return out

    def decode(self, te: p4runtime_pb2.TableEntry) -> dict[str, Any]:
        """A TableEntry read from a switch in document form (full names, ints for every value)."""
        table = self.tables_by_id.get(te.table_id)
        if table is None:
            raise P4RuntimePushError(f"switch returned an entry of unknown table id {te.table_id}")
        _, tname, _, by_id = table
        out: dict[str, Any] = {"table": tname}
        frombytes = int.from_bytes
        if te.is_default_action:
            out["default_action"] = True
        else:
            match: dict[str, Any] = {}
            for fm in te.match:
                fname = by_id[fm.field_id][0]
                kind = fm.WhichOneof("field_match_type")
                if kind == "exact":
                    match[fname] = frombytes(fm.exact.value, "big")
                elif kind == "lpm":
                    match[fname] = {"value": frombytes(fm.lpm.value, "big"), "prefix_len": fm.lpm.prefix_len}
                elif kind == "ternary":
                    match[fname] = {"value": frombytes(fm.ternary.value, "big"), "mask": frombytes(fm.ternary.mask, "big")}
                elif kind == "range":
                    match[fname] = {"low": frombytes(fm.range.low, "big"), "high": frombytes(fm.range.high, "big")}
                else:
                    match[fname] = frombytes(fm.optional.value, "big")
            out["match"] = match
        if te.action.WhichOneof("type") == "action":
            _, aname, _, pnames = self.actions_by_id[te.action.action.action_id]
            out["action"] = aname
            out["params"] = {pnames[p.param_id]: frombytes(p.value, "big") for p in te.action.action.params}
        else:
            out["action"] = None
            out["params"] = {}
        if te.priority:
            out["priority"] = te.priority
        return out
