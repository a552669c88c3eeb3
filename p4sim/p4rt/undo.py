"""Inverses of P4Runtime updates, for ROLLBACK_ON_ERROR and DATAPLANE_ATOMIC batches.

Before an update is applied, ``inverse_of`` reads the state it will change and returns a
function that puts that state back.  The server applies a batch under the switch lock (so no
packet sees a half-applied batch: data-plane atomicity comes for free in a switch that processes
packets under the same lock) and, at the first failure, runs the inverses in reverse order.
"""
from __future__ import annotations

import logging
from typing import Callable

from p4.v1 import p4runtime_pb2

from p4sim.p4rt.errors import P4RTError
from p4sim.p4rt.pipeline import Pipeline
from p4sim.p4rt.translate import match_to_core

log = logging.getLogger("p4sim.p4rt")

Undo = Callable[[], None]
Update = p4runtime_pb2.Update


def _nothing() -> None:
    return None


def inverse_of(pipe: Pipeline, update: p4runtime_pb2.Update) -> Undo:
    kind = update.entity.WhichOneof("entity")
    entity = getattr(update.entity, kind) if kind else None
    if kind == "table_entry":
        return _table_inverse(pipe, update.type, entity)
    if kind == "counter_entry":
        info = pipe.index.counter(entity.counter_id)
        return _array_inverse(pipe, entity, info.size, "counter_read",
                              lambda sw, i, v: sw.counter_write(info.name, i, *v), info.name)
    if kind == "register_entry":
        info = pipe.index.register(entity.register_id)
        return _array_inverse(pipe, entity, info.size, "register_read",
                              lambda sw, i, v: sw.register_write(info.name, i, v), info.name)
    if kind == "meter_entry":
        info = pipe.index.meter(entity.meter_id)
        with pipe.core(f"reading {info.name}") as sw:
            can_reset = hasattr(sw, "meter_reset_config")
        if not can_reset:
            # An unconfigured meter could not be put back: refuse before anything changes
            # rather than leave a refused batch half undone.
            raise P4RTError("UNIMPLEMENTED", f"meter {info.name}: this target cannot reset a meter, "
                            "so the write cannot be part of an all-or-none batch")
        return _array_inverse(pipe, entity, info.size, "meter_get_config",
                              lambda sw, i, v: _restore_meter(sw, info.name, i, v), info.name)
    if kind == "direct_counter_entry":
        table, key = _key(pipe, entity.table_entry)
        old = _find(pipe, table, key)
        if old is None:
            return _nothing
        counter = old.counter or (0, 0)
        return lambda: _core(pipe, lambda sw: sw.direct_counter_write(
            table, key.match, counter[0], counter[1], priority=key.priority))
    if kind == "direct_meter_entry":
        table, key = _key(pipe, entity.table_entry)
        old = _find(pipe, table, key)
        if old is None or not old.meter_config:
            return _nothing  # an unconfigured direct meter cannot be restored; rare
        cfg = _meter_tuple(old.meter_config)
        return lambda: _core(pipe, lambda sw: sw.direct_meter_set_config(
            table, key.match, *cfg, priority=key.priority))
    if kind == "packet_replication_engine_entry":
        return _pre_inverse(pipe, entity)
    if kind == "digest_entry":
        old = pipe.digest_configs.get(entity.digest_id)

        def restore_digest() -> None:
            if old is None:
                pipe.digest_configs.pop(entity.digest_id, None)
            else:
                pipe.digest_configs[entity.digest_id] = old
        return restore_digest
    return _nothing  # the update will fail validation; nothing to undo


def _core(pipe: Pipeline, fn) -> None:
    with pipe.core("rollback") as sw:
        fn(sw)


def _meter_tuple(cfg) -> tuple[int, int, int, int]:
    from p4sim.p4rt.reads import meter_tuple

    return meter_tuple(cfg)


def _restore_meter(sw, name: str, index: int, cfg) -> None:
    if cfg:
        sw.meter_set_config(name, index, *_meter_tuple(cfg))
    else:
        sw.meter_reset_config(name, index)


def _array_inverse(pipe: Pipeline, entity, size: int, read: str, write, name: str) -> Undo:
    if entity.HasField("index"):
        idx = entity.index.index
        if not 0 <= idx < size:
            return _nothing  # the update itself is refused
        indices = [idx]
    else:
        indices = list(range(size))
    with pipe.core(f"reading {name}") as sw:
        old = [(i, getattr(sw, read)(name, i)) for i in indices]

    def restore() -> None:
        with pipe.core("rollback") as sw:
            for i, v in old:
                write(sw, i, v)
    return restore


def _key(pipe: Pipeline, entry: p4runtime_pb2.TableEntry):
    table = pipe.index.table(entry.table_id)
    return table.name, match_to_core(pipe.index, entry)


def _find(pipe: Pipeline, table: str, key):
    with pipe.core(f"table {table}") as sw:
        for e in sw.table_entries(table):
            if e.match == key.match and (e.priority or None) == key.priority:
                return e
    return None


def _table_inverse(pipe: Pipeline, utype: int, entry: p4runtime_pb2.TableEntry) -> Undo:
    table = pipe.index.table(entry.table_id)
    name = table.name
    if entry.is_default_action:
        with pipe.core(f"table {name}") as sw:
            action, params = sw.get_default_action(name)
        return lambda: _core(pipe, lambda sw: sw.set_default_action(name, action, params))
    key = match_to_core(pipe.index, entry)
    mkey = pipe.entry_key(name, key.match, key.priority)
    old_meta = pipe.entry_metadata.get(mkey)
    old = _find(pipe, name, key)

    def restore_meta() -> None:
        if old_meta is None:
            pipe.entry_metadata.pop(mkey, None)
        else:
            pipe.entry_metadata[mkey] = old_meta

    if utype == Update.INSERT or old is None:
        def undo_insert() -> None:
            _core(pipe, lambda sw: sw.delete_entry(name, key.match, priority=key.priority))
            restore_meta()
        return undo_insert if utype == Update.INSERT else _nothing

    def restore_resources(sw) -> None:
        if old.counter is not None and table.direct_counter_id:
            sw.direct_counter_write(name, key.match, old.counter[0], old.counter[1],
                                    priority=key.priority)
        if old.meter_config and table.direct_meter_id:
            sw.direct_meter_set_config(name, key.match, *_meter_tuple(old.meter_config),
                                       priority=key.priority)

    if utype == Update.MODIFY:
        def undo_modify() -> None:
            def run(sw) -> None:
                sw.modify_entry(name, key.match, old.action, old.params, priority=key.priority)
                restore_resources(sw)
            _core(pipe, run)
            restore_meta()
        return undo_modify

    def undo_delete() -> None:
        def run(sw) -> None:
            sw.insert_entry(name, key.match, old.action, old.params, priority=key.priority)
            restore_resources(sw)
        _core(pipe, run)
        restore_meta()
    return undo_delete


def _pre_inverse(pipe: Pipeline, entry: p4runtime_pb2.PacketReplicationEngineEntry) -> Undo:
    kind = entry.WhichOneof("type")
    if kind == "multicast_group_entry":
        gid = entry.multicast_group_entry.multicast_group_id
        old = pipe.mcast_groups.get(gid)

        def restore_group() -> None:
            with pipe.core("rollback") as sw:
                if old is None:
                    if gid in pipe.mcast_groups:
                        sw.delete_mcast_group(gid)
                        del pipe.mcast_groups[gid]
                else:
                    sw.set_mcast_group(gid, old)
                    pipe.mcast_groups[gid] = old
        return restore_group
    if kind == "clone_session_entry":
        sid = entry.clone_session_entry.session_id
        old_s = pipe.clone_sessions.get(sid)

        def restore_session() -> None:
            with pipe.core("rollback") as sw:
                if old_s is None:
                    if sid in pipe.clone_sessions:
                        sw.delete_clone_session(sid)
                        del pipe.clone_sessions[sid]
                else:
                    sw.set_clone_session(sid, old_s[0], truncate_bytes=old_s[2])
                    pipe.clone_sessions[sid] = old_s
        return restore_session
    return _nothing


def apply_all_or_nothing(pipe: Pipeline, updates, apply) -> list[P4RTError | None]:
    """Apply ``updates`` under the switch lock; on the first failure undo the ones applied.

    Returns per-update results: all None on success; otherwise the failing update's error and
    ABORTED for every other update (rolled back, or never attempted).
    """
    undo: list[Undo] = []
    with pipe.switch.lock:
        for i, upd in enumerate(updates):
            try:
                inverse = inverse_of(pipe, upd)
                apply(pipe, upd)
                undo.append(inverse)
            except P4RTError as err:
                failure = (i, err)
                break
            except Exception as err:  # noqa: BLE001 - never kill the server
                log.exception("write failed unexpectedly")
                failure = (i, P4RTError("INTERNAL", f"{type(err).__name__}: {err}"))
                break
        else:
            return [None] * len(updates)
        for inverse in reversed(undo):
            try:
                inverse()
            except Exception:  # noqa: BLE001 - keep undoing the rest
                log.exception("rollback step failed")
    index, err = failure
    aborted = P4RTError("ABORTED", f"batch rolled back: update #{index} failed")
    return [err if i == index else aborted for i in range(len(updates))]
