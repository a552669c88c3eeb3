"""Id-keyed views of a P4Info, built once per pipeline so request handling never scans lists.

The server speaks ids on the wire and the p4sim core speaks P4Info *names*; this index is the
only place that knows how the two relate (and which widths and match kinds the ids imply).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from p4.config.v1 import p4info_pb2

from p4sim.p4rt.errors import P4RTError

MatchType = p4info_pb2.MatchField.MatchType


@dataclass
class MatchFieldInfo:
    id: int
    name: str
    bitwidth: int
    match_type: int  # p4info MatchField.MatchType value


@dataclass
class ParamInfo:
    id: int
    name: str
    bitwidth: int


@dataclass
class ActionInfo:
    id: int
    name: str
    params: dict[int, ParamInfo]


@dataclass
class TableInfo:
    id: int
    name: str
    fields: dict[int, MatchFieldInfo]
    action_scopes: dict[int, int]  # action id -> ActionRef.Scope
    const_default_action_id: int
    is_const: bool
    size: int
    direct_counter_id: int = 0
    direct_meter_id: int = 0

    @property
    def needs_priority(self) -> bool:
        """Ternary, range and optional matches make entries overlap, so they carry a priority."""
        return any(
            f.match_type in (MatchType.TERNARY, MatchType.RANGE, MatchType.OPTIONAL)
            for f in self.fields.values()
        )


@dataclass
class SizedInfo:
    """A counter, meter or register array (or a direct one, then ``size`` is 0)."""

    id: int
    name: str
    size: int = 0
    bitwidth: int = 0  # registers: element width
    unit: int = 0  # counters/meters: CounterSpec/MeterSpec unit
    direct_table_id: int = 0


@dataclass
class DigestInfo:
    id: int
    name: str
    widths: list[int]


@dataclass
class PacketHeaderInfo:
    """A ``@controller_header`` header: its metadata fields in P4Info (= wire) order."""

    id: int
    name: str
    fields: list[ParamInfo] = field(default_factory=list)

    @property
    def widths(self) -> list[int]:
        return [f.bitwidth for f in self.fields]


class P4InfoIndex:
    """Look-ups by id for one P4Info; unknown ids raise the spec's NOT_FOUND."""

    def __init__(self, p4info: p4info_pb2.P4Info) -> None:
        self.p4info = p4info
        self.actions = {
            a.preamble.id: ActionInfo(
                a.preamble.id,
                a.preamble.name,
                {p.id: ParamInfo(p.id, p.name, p.bitwidth) for p in a.params},
            )
            for a in p4info.actions
        }
        self.action_by_name = {a.name: a for a in self.actions.values()}
        self.tables: dict[int, TableInfo] = {}
        for t in p4info.tables:
            self.tables[t.preamble.id] = TableInfo(
                id=t.preamble.id,
                name=t.preamble.name,
                fields={
                    m.id: MatchFieldInfo(m.id, m.name, m.bitwidth, m.match_type)
                    for m in t.match_fields
                },
                action_scopes={r.id: r.scope for r in t.action_refs},
                const_default_action_id=t.const_default_action_id,
                is_const=t.is_const_table,
                size=t.size,
            )
        self.counters = {
            c.preamble.id: SizedInfo(c.preamble.id, c.preamble.name, size=c.size, unit=c.spec.unit)
            for c in p4info.counters
        }
        self.meters = {
            m.preamble.id: SizedInfo(m.preamble.id, m.preamble.name, size=m.size, unit=m.spec.unit)
            for m in p4info.meters
        }
        self.direct_counters = {
            c.preamble.id: SizedInfo(
                c.preamble.id, c.preamble.name, unit=c.spec.unit, direct_table_id=c.direct_table_id
            )
            for c in p4info.direct_counters
        }
        self.direct_meters = {
            m.preamble.id: SizedInfo(
                m.preamble.id, m.preamble.name, unit=m.spec.unit, direct_table_id=m.direct_table_id
            )
            for m in p4info.direct_meters
        }
        for dc in self.direct_counters.values():
            if dc.direct_table_id in self.tables:
                self.tables[dc.direct_table_id].direct_counter_id = dc.id
        for dm in self.direct_meters.values():
            if dm.direct_table_id in self.tables:
                self.tables[dm.direct_table_id].direct_meter_id = dm.id
        self.registers = {
            r.preamble.id: SizedInfo(
                r.preamble.id,
                r.preamble.name,
                size=r.size,
                bitwidth=r.type_spec.bitstring.bit.bitwidth
                or r.type_spec.bitstring.int.bitwidth
                or r.type_spec.bitstring.varbit.max_bitwidth,
            )
            for r in p4info.registers
        }
        self.digests = {
            d.preamble.id: DigestInfo(d.preamble.id, d.preamble.name, self._digest_widths(d))
            for d in p4info.digests
        }
        self.digest_by_name = {d.name: d for d in self.digests.values()}
        self.controller_headers = {
            c.preamble.name: PacketHeaderInfo(
                c.preamble.id,
                c.preamble.name,
                [ParamInfo(m.id, m.name, m.bitwidth) for m in c.metadata],
            )
            for c in p4info.controller_packet_metadata
        }

    def _digest_widths(self, digest: p4info_pb2.Digest) -> list[int]:
        """Field widths of a digest's struct (empty if P4Info lacks its type info)."""
        spec = digest.type_spec
        if spec.HasField("struct"):
            struct = self.p4info.type_info.structs.get(spec.struct.name)
            if struct is not None:
                return [m.type_spec.bitstring.bit.bitwidth for m in struct.members]
        if spec.HasField("bitstring"):
            return [spec.bitstring.bit.bitwidth]
        return []

    # -- look-ups raising the spec's error codes -------------------------------------------
    @staticmethod
    def _get(table: dict, key: int, kind: str):
        try:
            return table[key]
        except KeyError:
            raise P4RTError("NOT_FOUND", f"unknown {kind} id {key}") from None

    def table(self, table_id: int) -> TableInfo:
        return self._get(self.tables, table_id, "table")

    def action(self, action_id: int) -> ActionInfo:
        return self._get(self.actions, action_id, "action")

    def counter(self, counter_id: int) -> SizedInfo:
        return self._get(self.counters, counter_id, "counter")

    def meter(self, meter_id: int) -> SizedInfo:
        return self._get(self.meters, meter_id, "meter")

    def register(self, register_id: int) -> SizedInfo:
        return self._get(self.registers, register_id, "register")

    def digest(self, digest_id: int) -> DigestInfo:
        return self._get(self.digests, digest_id, "digest")
