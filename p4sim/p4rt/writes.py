"""Apply one P4Runtime ``Update`` to a pipeline.

Each update is validated completely (ids, widths, match rules, action scope) before the first
call into the switch, and an update that needs two core calls undoes the first when the second
fails, so an update either happens entirely or not at all (the CONTINUE_ON_ERROR contract).
"""
from __future__ import annotations

from p4.v1 import p4runtime_pb2

from p4sim.p4rt.codec import decode
from p4sim.p4rt.errors import P4RTError
from p4sim.p4rt.pipeline import Pipeline
from p4sim.p4rt.translate import action_to_core, match_to_core

Update = p4runtime_pb2.Update
INSERT, MODIFY, DELETE = Update.INSERT, Update.MODIFY, Update.DELETE


def apply_update(pipe: Pipeline, update: p4runtime_pb2.Update) -> None:
    if update.type not in (INSERT, MODIFY, DELETE):
        raise P4RTError("INVALID_ARGUMENT", "update type must be INSERT, MODIFY or DELETE")
    kind = update.entity.WhichOneof("entity")
    handler = _HANDLERS.get(kind)
    if handler is None:
        raise P4RTError("UNIMPLEMENTED", f"writing {kind or 'an empty entity'} is not supported")
    handler(pipe, update.type, getattr(update.entity, kind))


def _only_modify(utype: int, what: str) -> None:
    if utype != MODIFY:
        raise P4RTError("INVALID_ARGUMENT", f"{what} can only be modified (not inserted/deleted)")


def _write_table_entry(pipe: Pipeline, utype: int, entry: p4runtime_pb2.TableEntry) -> None:
    index = pipe.index
    table = index.table(entry.table_id)
    if entry.is_default_action:
        _write_default_entry(pipe, utype, entry)
        return
    if table.is_const:
        raise P4RTError("PERMISSION_DENIED", f"table {table.name} is const")
    key = match_to_core(index, entry)
    if entry.idle_timeout_ns:
        raise P4RTError("INVALID_ARGUMENT", f"table {table.name} does not support idle timeout")
    if entry.HasField("meter_config") and not table.direct_meter_id:
        raise P4RTError("INVALID_ARGUMENT", f"table {table.name} has no direct meter")
    if entry.HasField("counter_data") and not table.direct_counter_id:
        raise P4RTError("INVALID_ARGUMENT", f"table {table.name} has no direct counter")
    what = f"table {table.name}"
    mkey = pipe.entry_key(table.name, key.match, key.priority)
    if utype == DELETE:
        with pipe.core(what) as sw:
            sw.delete_entry(table.name, key.match, priority=key.priority)
        pipe.entry_metadata.pop(mkey, None)
        return
    call = action_to_core(index, table, entry, default=False)
    with pipe.core(what) as sw:
        if utype == INSERT:
            sw.insert_entry(table.name, key.match, call.action.name, call.params, priority=key.priority)
            try:
                _set_direct_resources(sw, table.name, key, entry)
            except Exception:
                sw.delete_entry(table.name, key.match, priority=key.priority)
                raise
        else:
            sw.modify_entry(table.name, key.match, call.action.name, call.params, priority=key.priority)
            _set_direct_resources(sw, table.name, key, entry)
    if entry.controller_metadata or entry.metadata:
        pipe.entry_metadata[mkey] = (entry.controller_metadata, entry.metadata)
    else:
        pipe.entry_metadata.pop(mkey, None)


def _set_direct_resources(sw, table: str, key, entry: p4runtime_pb2.TableEntry) -> None:
    if entry.HasField("counter_data"):
        d = entry.counter_data
        sw.direct_counter_write(table, key.match, d.packet_count, d.byte_count, priority=key.priority)
    if entry.HasField("meter_config"):
        c = entry.meter_config
        sw.direct_meter_set_config(
            table, key.match, c.cir, c.cburst, c.pir, c.pburst, priority=key.priority
        )


def _write_default_entry(pipe: Pipeline, utype: int, entry: p4runtime_pb2.TableEntry) -> None:
    table = pipe.index.table(entry.table_id)
    if utype != MODIFY:
        raise P4RTError("INVALID_ARGUMENT", "the default entry can only be modified")
    if len(entry.match) or entry.priority:
        raise P4RTError("INVALID_ARGUMENT", "the default entry has no match and no priority")
    if table.const_default_action_id:
        raise P4RTError("PERMISSION_DENIED", f"table {table.name} has a const default action")
    if entry.HasField("action"):
        call = action_to_core(pipe.index, table, entry, default=True)
        name, params = call.action.name, call.params
    else:  # spec: a default-entry MODIFY without an action restores the P4 default
        name, params = pipe.initial_defaults[table.name]
        if name is None:
            raise P4RTError("FAILED_PRECONDITION", f"table {table.name} has no P4 default action")
    with pipe.core(f"table {table.name} default action") as sw:
        sw.set_default_action(table.name, name, params)


def _index_range(entity, size: int, what: str) -> range:
    """The indices an indirect-array entity addresses: one, or all when ``index`` is unset."""
    if entity.HasField("index"):
        idx = entity.index.index
        if idx < 0 or idx >= size:
            raise P4RTError("OUT_OF_RANGE", f"{what}: index {idx} not in 0..{size - 1}")
        return range(idx, idx + 1)
    return range(size)


def _write_counter(pipe: Pipeline, utype: int, entry: p4runtime_pb2.CounterEntry) -> None:
    _only_modify(utype, "counter entries")
    info = pipe.index.counter(entry.counter_id)
    indices = _index_range(entry, info.size, f"counter {info.name}")
    with pipe.core(f"counter {info.name}") as sw:
        for i in indices:
            sw.counter_write(info.name, i, entry.data.packet_count, entry.data.byte_count)


def _write_direct_counter(pipe: Pipeline, utype: int, entry: p4runtime_pb2.DirectCounterEntry) -> None:
    _only_modify(utype, "direct counter entries")
    table = pipe.index.table(entry.table_entry.table_id)
    if not table.direct_counter_id:
        raise P4RTError("INVALID_ARGUMENT", f"table {table.name} has no direct counter")
    key = match_to_core(pipe.index, entry.table_entry)
    with pipe.core(f"direct counter of {table.name}") as sw:
        sw.direct_counter_write(
            table.name, key.match, entry.data.packet_count, entry.data.byte_count, priority=key.priority
        )


def _meter_args(config: p4runtime_pb2.MeterConfig, what: str) -> tuple[int, int, int, int]:
    if config.cir > config.pir:
        raise P4RTError("INVALID_ARGUMENT", f"{what}: cir {config.cir} > pir {config.pir}")
    return config.cir, config.cburst, config.pir, config.pburst


def _write_meter(pipe: Pipeline, utype: int, entry: p4runtime_pb2.MeterEntry) -> None:
    _only_modify(utype, "meter entries")
    info = pipe.index.meter(entry.meter_id)
    what = f"meter {info.name}"
    indices = _index_range(entry, info.size, what)
    if not entry.HasField("config"):
        # The spec: a MeterEntry without config resets the meter to "all packets green".
        with pipe.core(what) as sw:
            if not hasattr(sw, "meter_reset_config"):
                raise P4RTError("UNIMPLEMENTED", f"{what}: this target cannot reset a meter")
            for i in indices:
                sw.meter_reset_config(info.name, i)
        return
    args = _meter_args(entry.config, what)
    with pipe.core(what) as sw:
        for i in indices:
            sw.meter_set_config(info.name, i, *args)


def _write_direct_meter(pipe: Pipeline, utype: int, entry: p4runtime_pb2.DirectMeterEntry) -> None:
    _only_modify(utype, "direct meter entries")
    table = pipe.index.table(entry.table_entry.table_id)
    what = f"direct meter of {table.name}"
    if not table.direct_meter_id:
        raise P4RTError("INVALID_ARGUMENT", f"table {table.name} has no direct meter")
    if not entry.HasField("config"):
        raise P4RTError("UNIMPLEMENTED", f"{what}: resetting a meter to its unconfigured state")
    key = match_to_core(pipe.index, entry.table_entry)
    args = _meter_args(entry.config, what)
    with pipe.core(what) as sw:
        sw.direct_meter_set_config(table.name, key.match, *args, priority=key.priority)


def _write_register(pipe: Pipeline, utype: int, entry: p4runtime_pb2.RegisterEntry) -> None:
    _only_modify(utype, "register entries")
    info = pipe.index.register(entry.register_id)
    what = f"register {info.name}"
    if entry.data.WhichOneof("data") != "bitstring":
        raise P4RTError("INVALID_ARGUMENT", f"{what}: data must be a bitstring")
    value = decode(entry.data.bitstring, info.bitwidth, what)
    indices = _index_range(entry, info.size, what)
    with pipe.core(what) as sw:
        for i in indices:
            sw.register_write(info.name, i, value)


def _replicas(replicas, what: str) -> list[tuple[int, int]]:
    out = []
    for r in replicas:
        kind = r.WhichOneof("port_kind")
        if kind == "port":
            port = decode(r.port, 32, f"{what} replica port")
        elif kind == "egress_port":
            port = r.egress_port
        else:  # PI: "Missing port in multicast group replica"
            raise P4RTError("INVALID_ARGUMENT", f"{what}: a replica without a port")
        if len(r.backup_replicas):
            # the spec: a target without backup replicas answers UNIMPLEMENTED (PI ignores them)
            raise P4RTError("UNIMPLEMENTED", f"{what}: backup replicas are not supported")
        if r.instance > 0xFFFF:  # EgressInstance_t is 16 bits (PI casts to 16 bits; the spec refuses)
            raise P4RTError("INVALID_ARGUMENT", f"{what}: replica instance {r.instance} exceeds 65535")
        out.append((port, r.instance))
    if len(set(out)) != len(out):
        raise P4RTError("INVALID_ARGUMENT", f"{what}: duplicate replica")
    return out


def _clone_rules(sw) -> tuple[int, bool, bool, int]:
    """(highest session id, truncation supported, exactly one replica, highest class of service)
    of the target the switch stands for: p4sim.Switch = simple_switch_grpc, TnaSwitch = Stratum
    on Tofino (switch.py / tna_switch.py ``CLONE_*``); a test double without them takes any."""
    return (getattr(sw, "CLONE_MAX_SESSION_ID", (1 << 32) - 1), getattr(sw, "CLONE_TRUNCATION", True),
            getattr(sw, "CLONE_ONE_REPLICA", False), getattr(sw, "CLONE_MAX_CLASS_OF_SERVICE", 0))


def _check_clone_session(sw, c: p4runtime_pb2.CloneSessionEntry, what: str) -> list[tuple[int, int]]:
    """The session's replicas once every field is one the target takes; else the P4Runtime
    code a bad request gets (the spec's where it names one, else the real server's)."""
    _, truncation, one_replica, max_cos = _clone_rules(sw)
    replicas = _replicas(c.replicas, what)
    if one_replica:
        if not replicas:
            raise P4RTError("INVALID_ARGUMENT", f"{what}: a mirror session needs its one replica")
        if len(replicas) > 1:
            raise P4RTError("UNIMPLEMENTED", f"{what}: a Tofino mirror session has one destination "
                                             f"({len(replicas)} replicas given)")
        if replicas[0][1] != 0:
            raise P4RTError("UNIMPLEMENTED", f"{what}: replica instances are not supported on mirror sessions")
    if c.class_of_service > max(7, max_cos):
        raise P4RTError("INVALID_ARGUMENT", f"{what}: class of service {c.class_of_service} is not a ClassOfService_t")
    if c.class_of_service > max_cos:  # PI: "COS for clone sessions not supported yet"
        raise P4RTError("UNIMPLEMENTED", f"{what}: class of service {c.class_of_service} is not supported")
    if c.packet_length_bytes < 0 or c.packet_length_bytes > 0xFFFF:
        raise P4RTError("INVALID_ARGUMENT", f"{what}: packet_length_bytes {c.packet_length_bytes} outside 0..65535")
    if c.packet_length_bytes and not truncation:
        # simple_switch_grpc's PI target refuses truncation (its answer is UNKNOWN, "Error when
        # creating clone session in target"); the spec's code for an unsupported feature is used
        raise P4RTError("UNIMPLEMENTED", f"{what}: this target does not truncate clones "
                                         "(packet_length_bytes must be 0)")
    return replicas


def _write_pre(pipe: Pipeline, utype: int, entry: p4runtime_pb2.PacketReplicationEngineEntry) -> None:
    kind = entry.WhichOneof("type")
    if kind == "multicast_group_entry":
        g = entry.multicast_group_entry
        gid = g.multicast_group_id
        what = f"multicast group {gid}"
        if gid == 0:
            raise P4RTError("INVALID_ARGUMENT", "multicast group id 0 is reserved")
        exists = gid in pipe.mcast_groups
        _check_existence(utype, exists, what)
        with pipe.core(what) as sw:
            if utype == DELETE:
                sw.delete_mcast_group(gid)
                del pipe.mcast_groups[gid]
            else:
                replicas = _replicas(g.replicas, what)
                sw.set_mcast_group(gid, replicas)
                pipe.mcast_groups[gid] = replicas
    elif kind == "clone_session_entry":
        c = entry.clone_session_entry
        sid = c.session_id
        what = f"clone session {sid}"
        if sid == 0:
            raise P4RTError("INVALID_ARGUMENT", "clone session id 0 is reserved")
        highest = _clone_rules(pipe.switch)[0]
        if sid > highest:  # PI: ids 1..32767 ("Clone session id out-of-range"); Tofino: 1..1015
            raise P4RTError("INVALID_ARGUMENT", f"{what}: session ids are 1..{highest} on this target")
        exists = sid in pipe.clone_sessions
        _check_existence(utype, exists, what)
        with pipe.core(what) as sw:
            if utype == DELETE:
                sw.delete_clone_session(sid)
                del pipe.clone_sessions[sid]
            else:
                replicas = _check_clone_session(sw, c, what)
                sw.set_clone_session(sid, replicas, truncate_bytes=c.packet_length_bytes)
                pipe.clone_sessions[sid] = (replicas, c.class_of_service, c.packet_length_bytes)
    else:
        raise P4RTError("INVALID_ARGUMENT", "empty packet replication engine entry")


def _check_existence(utype: int, exists: bool, what: str) -> None:
    if utype == INSERT and exists:
        raise P4RTError("ALREADY_EXISTS", f"{what} already exists")
    if utype in (MODIFY, DELETE) and not exists:
        raise P4RTError("NOT_FOUND", f"{what} does not exist")


def _write_digest(pipe: Pipeline, utype: int, entry: p4runtime_pb2.DigestEntry) -> None:
    info = pipe.index.digest(entry.digest_id)
    what = f"digest {info.name}"
    _check_existence(utype, entry.digest_id in pipe.digest_configs, what)
    if utype == DELETE:
        del pipe.digest_configs[entry.digest_id]
        return
    if not entry.HasField("config"):
        raise P4RTError("INVALID_ARGUMENT", f"{what}: config missing")
    config = p4runtime_pb2.DigestEntry.Config()
    config.CopyFrom(entry.config)
    pipe.digest_configs[entry.digest_id] = config


_HANDLERS = {
    "table_entry": _write_table_entry,
    "counter_entry": _write_counter,
    "direct_counter_entry": _write_direct_counter,
    "meter_entry": _write_meter,
    "direct_meter_entry": _write_direct_meter,
    "register_entry": _write_register,
    "packet_replication_engine_entry": _write_pre,
    "digest_entry": _write_digest,
}

