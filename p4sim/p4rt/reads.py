"""Answer P4Runtime Read requests, wildcards included.

A zero id reads every object of that kind; an entry with no match fields reads every entry of its
table; an unset index reads the whole array.  Values go back in canonical (shortest) bytes.
"""
from __future__ import annotations

from typing import Callable, Iterator

from p4.v1 import p4runtime_pb2

from p4sim.p4rt.codec import encode
from p4sim.p4rt.errors import P4RTError
from p4sim.p4rt.p4info_index import TableInfo
from p4sim.p4rt.pipeline import Pipeline
from p4sim.p4rt.translate import action_from_core, match_from_core, match_to_core

Entity = p4runtime_pb2.Entity


NewEntity = Callable[[], p4runtime_pb2.Entity]


def read_entity(pipe: Pipeline, entity: p4runtime_pb2.Entity,
                new: NewEntity = p4runtime_pb2.Entity) -> Iterator[p4runtime_pb2.Entity]:
    """The entities ``entity`` selects.  Each answer is made by ``new()`` -- pass
    ``response.entities.add`` to build straight into a ReadResponse (no per-entity copy, which
    matters with the pure-Python protobuf runtime that p4runtime 1.4.1 pins)."""
    kind = entity.WhichOneof("entity")
    reader = _READERS.get(kind)
    if reader is None:
        raise P4RTError("UNIMPLEMENTED", f"reading {kind or 'an empty entity'} is not supported")
    return reader(pipe, getattr(entity, kind), new)


def _tables(pipe: Pipeline, table_id: int) -> list[TableInfo]:
    if table_id == 0:
        return list(pipe.index.tables.values())
    return [pipe.index.table(table_id)]


def _core_entry_to_p4rt(pipe: Pipeline, table: TableInfo, e, want: p4runtime_pb2.TableEntry,
                        out: p4runtime_pb2.TableEntry) -> None:
    """Fill ``out`` (in place, see match_from_core) with the core entry ``e``."""
    out.table_id = table.id
    match_from_core(table, e.match, out.match)
    action_from_core(pipe.index, e.action, e.params, out.action.action)
    if e.priority:
        out.priority = e.priority
    if table.is_const:
        out.is_const = True
    stored = pipe.entry_metadata.get(pipe.entry_key(table.name, e.match, e.priority))
    if stored is not None:
        out.controller_metadata, out.metadata = stored
    if want.HasField("counter_data") and table.direct_counter_id and e.counter is not None:
        out.counter_data.packet_count, out.counter_data.byte_count = e.counter
    if want.HasField("meter_config") and table.direct_meter_id and e.meter_config:
        _set_meter_config(out.meter_config, e.meter_config)


def _entries(pipe: Pipeline, table: TableInfo, want: p4runtime_pb2.TableEntry):
    """Core entries of ``table`` that ``want`` selects (all, or the one its match names)."""
    with pipe.core(f"table {table.name}") as sw:
        entries = list(sw.table_entries(table.name))
    if len(want.match) == 0 and want.priority == 0:
        return entries
    probe = p4runtime_pb2.TableEntry()
    probe.CopyFrom(want)
    probe.table_id = table.id
    key = match_to_core(pipe.index, probe)
    return [e for e in entries if e.match == key.match and (e.priority or None) == key.priority]


def meter_tuple(config) -> tuple[int, int, int, int]:
    """A core meter config (dataclass with cir/cburst/pir/pburst, or a 4-tuple) as a tuple."""
    if hasattr(config, "cir"):
        return config.cir, config.cburst, config.pir, config.pburst
    cir, cburst, pir, pburst = tuple(config)[:4]
    return cir, cburst, pir, pburst


def _set_meter_config(msg: p4runtime_pb2.MeterConfig, config) -> None:
    msg.cir, msg.cburst, msg.pir, msg.pburst = meter_tuple(config)


def _read_table_entry(pipe: Pipeline, want: p4runtime_pb2.TableEntry, new: NewEntity) -> Iterator[Entity]:
    tables = _tables(pipe, want.table_id)
    for table in tables:
        if want.is_default_action:
            with pipe.core(f"table {table.name} default action") as sw:
                action, params = sw.get_default_action(table.name)
            entity = new()
            out = entity.table_entry
            out.table_id, out.is_default_action = table.id, True
            if action is not None:
                action_from_core(pipe.index, action, params, out.action.action)
            yield entity
            continue
        for e in _entries(pipe, table, want):
            entity = new()
            _core_entry_to_p4rt(pipe, table, e, want, entity.table_entry)
            yield entity


def _read_direct_counter(pipe: Pipeline, want: p4runtime_pb2.DirectCounterEntry, new: NewEntity) -> Iterator[Entity]:
    for table in _tables(pipe, want.table_entry.table_id):
        if not table.direct_counter_id:
            if want.table_entry.table_id:
                raise P4RTError("INVALID_ARGUMENT", f"table {table.name} has no direct counter")
            continue
        for e in _entries(pipe, table, want.table_entry):
            entity = new()
            out = entity.direct_counter_entry
            out.table_entry.table_id, out.table_entry.priority = table.id, e.priority or 0
            match_from_core(table, e.match, out.table_entry.match)
            packets, nbytes = e.counter or (0, 0)
            out.data.packet_count, out.data.byte_count = packets, nbytes
            yield entity


def _read_direct_meter(pipe: Pipeline, want: p4runtime_pb2.DirectMeterEntry, new: NewEntity) -> Iterator[Entity]:
    for table in _tables(pipe, want.table_entry.table_id):
        if not table.direct_meter_id:
            if want.table_entry.table_id:
                raise P4RTError("INVALID_ARGUMENT", f"table {table.name} has no direct meter")
            continue
        for e in _entries(pipe, table, want.table_entry):
            entity = new()
            out = entity.direct_meter_entry
            out.table_entry.table_id, out.table_entry.priority = table.id, e.priority or 0
            match_from_core(table, e.match, out.table_entry.match)
            if e.meter_config:
                _set_meter_config(out.config, e.meter_config)
            yield entity


def _indices(entity, size: int, what: str) -> range:
    if entity.HasField("index"):
        idx = entity.index.index
        if idx < 0 or idx >= size:
            raise P4RTError("OUT_OF_RANGE", f"{what}: index {idx} not in 0..{size - 1}")
        return range(idx, idx + 1)
    return range(size)


def _read_counter(pipe: Pipeline, want: p4runtime_pb2.CounterEntry, new: NewEntity) -> Iterator[Entity]:
    infos = list(pipe.index.counters.values()) if want.counter_id == 0 else [pipe.index.counter(want.counter_id)]
    for info in infos:
        for i in _indices(want, info.size, f"counter {info.name}"):
            with pipe.core(f"counter {info.name}") as sw:
                packets, nbytes = sw.counter_read(info.name, i)
            entity = new()
            out = entity.counter_entry
            out.counter_id = info.id
            out.index.index = i
            out.data.packet_count, out.data.byte_count = packets, nbytes
            yield entity


def _read_meter(pipe: Pipeline, want: p4runtime_pb2.MeterEntry, new: NewEntity) -> Iterator[Entity]:
    infos = list(pipe.index.meters.values()) if want.meter_id == 0 else [pipe.index.meter(want.meter_id)]
    for info in infos:
        for i in _indices(want, info.size, f"meter {info.name}"):
            with pipe.core(f"meter {info.name}") as sw:
                config = sw.meter_get_config(info.name, i)
            entity = new()
            out = entity.meter_entry
            out.meter_id = info.id
            out.index.index = i
            if config:
                _set_meter_config(out.config, config)
            yield entity


def _read_register(pipe: Pipeline, want: p4runtime_pb2.RegisterEntry, new: NewEntity) -> Iterator[Entity]:
    infos = list(pipe.index.registers.values()) if want.register_id == 0 else [pipe.index.register(want.register_id)]
    for info in infos:
        for i in _indices(want, info.size, f"register {info.name}"):
            with pipe.core(f"register {info.name}") as sw:
                value = sw.register_read(info.name, i)
            entity = new()
            out = entity.register_entry
            out.register_id = info.id
            out.index.index = i
            out.data.bitstring = encode(value, info.bitwidth)
            yield entity


def _read_pre(pipe: Pipeline, want: p4runtime_pb2.PacketReplicationEngineEntry, new: NewEntity) -> Iterator[Entity]:
    kind = want.WhichOneof("type")
    if kind == "multicast_group_entry":
        gid = want.multicast_group_entry.multicast_group_id
        ids = sorted(pipe.mcast_groups) if gid == 0 else [gid]
        for g in ids:
            if g not in pipe.mcast_groups:
                raise P4RTError("NOT_FOUND", f"multicast group {g} does not exist")
            entity = new()
            out = entity.packet_replication_engine_entry
            out.multicast_group_entry.multicast_group_id = g
            for port, rid in pipe.mcast_groups[g]:
                out.multicast_group_entry.replicas.add(egress_port=port, instance=rid)
            yield entity
    elif kind == "clone_session_entry":
        sid = want.clone_session_entry.session_id
        ids = sorted(pipe.clone_sessions) if sid == 0 else [sid]
        for s in ids:
            if s not in pipe.clone_sessions:
                raise P4RTError("NOT_FOUND", f"clone session {s} does not exist")
            replicas, cos, trunc = pipe.clone_sessions[s]
            entity = new()
            c = entity.packet_replication_engine_entry.clone_session_entry
            c.session_id, c.class_of_service, c.packet_length_bytes = s, cos, trunc
            for port, rid in replicas:
                c.replicas.add(egress_port=port, instance=rid)
            yield entity
    else:
        raise P4RTError("INVALID_ARGUMENT", "empty packet replication engine entry")


def _read_digest(pipe: Pipeline, want: p4runtime_pb2.DigestEntry, new: NewEntity) -> Iterator[Entity]:
    ids = sorted(pipe.digest_configs) if want.digest_id == 0 else [want.digest_id]
    for d in ids:
        pipe.index.digest(d)
        if d not in pipe.digest_configs:
            continue
        entity = new()
        entity.digest_entry.digest_id = d
        entity.digest_entry.config.CopyFrom(pipe.digest_configs[d])
        yield entity


_READERS = {
    "table_entry": _read_table_entry,
    "direct_counter_entry": _read_direct_counter,
    "direct_meter_entry": _read_direct_meter,
    "counter_entry": _read_counter,
    "meter_entry": _read_meter,
    "register_entry": _read_register,
    "packet_replication_engine_entry": _read_pre,
    "digest_entry": _read_digest,
}
