"""A small stand-in for ``p4sim.Switch`` with the same by-name API, for P4Runtime server tests.

It keeps tables, defaults, counters, registers, meters and replication state exactly as the core
API describes them (normalized match dicts, RuntimeApiError codes), and has a trivial data plane
that is enough to exercise the server's packet and digest paths:

* a packet from the CPU port carries a 2-byte ``packet_out`` header (9-bit egress port, 7 pad)
  and leaves on that port, header stripped;
* any other packet goes to the CPU port behind a 2-byte ``packet_in`` header (9-bit ingress
  port), and, if ``digest_on_send`` is set, produces a ``learn_t`` digest (port, first byte).

The P4Info used with it is built by ``fake_p4info()`` with p4c-style ids.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

from p4.config.v1 import p4info_pb2

from p4sim.errors import RuntimeApiError

EXACT, LPM, TERNARY, RANGE, OPTIONAL = (p4info_pb2.MatchField.MatchType.Value(k) for k in
                                        ("EXACT", "LPM", "TERNARY", "RANGE", "OPTIONAL"))


def fake_p4info() -> p4info_pb2.P4Info:
    """A P4Info with one table of each match kind and one of each extern the server handles."""
    info = p4info_pb2.P4Info()
    info.pkg_info.arch = "v1model"

    def action(aid, name, params=()):
        a = info.actions.add()
        a.preamble.id, a.preamble.name = aid, name
        for i, (pname, width) in enumerate(params, 1):
            a.params.add(id=i, name=pname, bitwidth=width)

    action(0x01000001, "NoAction")
    action(0x01000002, "MyIngress.set_port", [("port", 9)])
    action(0x01000003, "MyIngress.drop")
    action(0x01000004, "MyIngress.set_mac", [("mac", 48), ("port", 9)])

    def table(tid, name, fields, actions, size=64, const_default=0, is_const=False):
        t = info.tables.add()
        t.preamble.id, t.preamble.name = tid, name
        for i, (fname, width, kind) in enumerate(fields, 1):
            t.match_fields.add(id=i, name=fname, bitwidth=width, match_type=kind)
        for aid, scope in actions:
            t.action_refs.add(id=aid, scope=scope)
        t.size = size
        t.const_default_action_id = const_default
        t.is_const_table = is_const
        return t

    both = p4info_pb2.ActionRef.TABLE_AND_DEFAULT
    table(0x02000001, "MyIngress.t_exact", [("hdr.eth.dst", 48, EXACT), ("meta.vrf", 4, EXACT)],
          [(0x01000002, both), (0x01000003, both), (0x01000001, p4info_pb2.ActionRef.DEFAULT_ONLY)])
    table(0x02000002, "MyIngress.t_lpm", [("hdr.ipv4.dst", 32, LPM)],
          [(0x01000004, both), (0x01000003, both), (0x01000001, both)])
    table(0x02000003, "MyIngress.t_ternary", [("hdr.ipv4.src", 32, TERNARY), ("hdr.ipv4.proto", 8, EXACT)],
          [(0x01000002, both), (0x01000001, both)])
    table(0x02000004, "MyIngress.t_range", [("hdr.udp.dport", 16, RANGE)],
          [(0x01000002, both), (0x01000001, both)])
    table(0x02000005, "MyIngress.t_optional", [("hdr.vlan.vid", 12, OPTIONAL)],
          [(0x01000002, both), (0x01000001, both)])
    table(0x02000006, "MyIngress.t_const", [("meta.x", 8, EXACT)],
          [(0x01000002, both), (0x01000001, both)], const_default=0x01000001, is_const=True)

    c = info.counters.add()
    c.preamble.id, c.preamble.name, c.size = 0x12000001, "MyIngress.port_counter", 8
    c.spec.unit = p4info_pb2.CounterSpec.BOTH
    dc = info.direct_counters.add()
    dc.preamble.id, dc.preamble.name, dc.direct_table_id = 0x13000001, "MyIngress.lpm_counter", 0x02000002
    dc.spec.unit = p4info_pb2.CounterSpec.BOTH
    info.tables[1].direct_resource_ids.append(0x13000001)
    m = info.meters.add()
    m.preamble.id, m.preamble.name, m.size = 0x14000001, "MyIngress.port_meter", 4
    m.spec.unit = p4info_pb2.MeterSpec.PACKETS
    dm = info.direct_meters.add()
    dm.preamble.id, dm.preamble.name, dm.direct_table_id = 0x15000001, "MyIngress.exact_meter", 0x02000001
    r = info.registers.add()
    r.preamble.id, r.preamble.name, r.size = 0x16000001, "MyIngress.last_seen", 16
    r.type_spec.bitstring.bit.bitwidth = 32

    d = info.digests.add()
    d.preamble.id, d.preamble.name = 0x17000001, "learn_t"
    d.type_spec.struct.name = "learn_t"
    st = info.type_info.structs["learn_t"]
    for mname, width in (("port", 9), ("first", 8)):
        mem = st.members.add(name=mname)
        mem.type_spec.bitstring.bit.bitwidth = width

    for cid, name, fname in ((0x04000001, "packet_in", "ingress_port"),
                              (0x04000002, "packet_out", "egress_port")):
        cpm = info.controller_packet_metadata.add()
        cpm.preamble.id, cpm.preamble.name = cid, name
        cpm.metadata.add(id=1, name=fname, bitwidth=9)
        cpm.metadata.add(id=2, name="_pad", bitwidth=7)
    return info


@dataclass
class TableEntry:
    match: dict
    action: str
    params: dict
    priority: int | None
    counter: tuple[int, int] | None = None
    meter_config: tuple | None = None


@dataclass
class Digest:
    name: str
    fields: list
    timestamp_us: int


@dataclass
class FakeProgram:
    p4info: p4info_pb2.P4Info = field(default_factory=fake_p4info)

    @classmethod
    def from_device_config(cls, data: bytes) -> "FakeProgram":
        if data != b"fake-device-config":
            raise ValueError("not a fake device config")
        return cls()


def _err(code: str, msg: str) -> RuntimeApiError:
    return RuntimeApiError(code, msg)


class FakeSwitch:
    def __init__(self, program, clock="virtual", priority_queues=1, drop_port=511,
                 cpu_port=None, seed=0) -> None:
        self.program = program
        self.cpu_port = cpu_port
        self.clock = clock
        self.lock = threading.RLock()
        self.now_us = 0
        self.buffer_output = True
        self.on_output = None
        self._out: list[tuple[int, bytes]] = []
        self._digests: list[Digest] = []
        self.digest_on_send = False
        self.port_up: dict[int, bool] = {}
        self.queue_calls: list[tuple] = []
        info = program.p4info
        self._actions = {a.preamble.name: a for a in info.actions}
        self._action_by_id = {a.preamble.id: a.preamble.name for a in info.actions}
        self._tables = {t.preamble.name: t for t in info.tables}
        self.entries: dict[str, dict[tuple, TableEntry]] = {n: {} for n in self._tables}
        self.defaults = {n: ("NoAction", {}) for n in self._tables}
        self._direct_counter_tables = {
            t.preamble.name for t in info.tables
            if any(dc.direct_table_id == t.preamble.id for dc in info.direct_counters)}
        self.counters = {c.preamble.name: [(0, 0)] * c.size for c in info.counters}
        self.registers = {r.preamble.name: [0] * r.size for r in info.registers}
        self.meters = {m.preamble.name: [None] * m.size for m in info.meters}
        self.mcast: dict[int, list] = {}
        self.clone: dict[int, tuple] = {}

    # -- tables ----------------------------------------------------------------------------
    def _table(self, name):
        if name not in self._tables:
            raise _err("NOT_FOUND", f"no table {name}")
        return self._tables[name]

    def _key(self, match, priority):
        return (tuple(sorted(match.items())), priority)

    def _check_action(self, table, action, params):
        t = self._table(table)
        a = self._actions.get(action)
        if a is None or a.preamble.id not in {r.id for r in t.action_refs}:
            raise _err("INVALID_ARGUMENT", f"{action} not in {table}")
        if set(params or {}) != {p.name for p in a.params}:
            raise _err("INVALID_ARGUMENT", "bad params")

    def insert_entry(self, table, match, action, params=None, priority=None):
        self._check_action(table, action, params)
        k = self._key(match, priority)
        if k in self.entries[table]:
            raise _err("ALREADY_EXISTS", "entry exists")
        counter = (0, 0) if table in self._direct_counter_tables else None
        self.entries[table][k] = TableEntry(dict(match), action, dict(params or {}), priority, counter)

    def modify_entry(self, table, match, action, params=None, priority=None):
        self._check_action(table, action, params)
        k = self._key(match, priority)
        if k not in self.entries[table]:
            raise _err("NOT_FOUND", "no such entry")
        e = self.entries[table][k]
        e.action, e.params = action, dict(params or {})

    def delete_entry(self, table, match, priority=None):
        self._table(table)
        k = self._key(match, priority)
        if k not in self.entries[table]:
            raise _err("NOT_FOUND", "no such entry")
        del self.entries[table][k]

    def set_default_action(self, table, action, params=None):
        self._check_action(table, action, params)
        self.defaults[table] = (action, dict(params or {}))

    def get_default_action(self, table):
        self._table(table)
        return self.defaults[table]

    def table_entries(self, table):
        self._table(table)
        return list(self.entries[table].values())

    def _entry(self, table, match, priority):
        self._table(table)
        e = self.entries[table].get(self._key(match, priority))
        if e is None:
            raise _err("NOT_FOUND", "no such entry")
        return e

    def direct_counter_read(self, table, match, priority=None):
        return self._entry(table, match, priority).counter

    def direct_counter_write(self, table, match, packets, bytes, priority=None):
        self._entry(table, match, priority).counter = (packets, bytes)

    def direct_meter_set_config(self, table, match, cir, cburst, pir, pburst, priority=None):
        self._entry(table, match, priority).meter_config = (cir, cburst, pir, pburst)

    # -- arrays ----------------------------------------------------------------------------
    def _array(self, store, name, index):
        if name not in store:
            raise _err("NOT_FOUND", f"no {name}")
        if not 0 <= index < len(store[name]):
            raise _err("OUT_OF_RANGE", "index")
        return store[name]

    def register_read(self, name, index):
        return self._array(self.registers, name, index)[index]

    def register_write(self, name, index, value):
        self._array(self.registers, name, index)[index] = value

    def register_size(self, name):
        return len(self.registers[name])

    def counter_read(self, name, index):
        return self._array(self.counters, name, index)[index]

    def counter_write(self, name, index, packets, bytes):
        self._array(self.counters, name, index)[index] = (packets, bytes)

    def counter_size(self, name):
        return len(self.counters[name])

    def meter_set_config(self, name, index, cir, cburst, pir, pburst):
        self._array(self.meters, name, index)[index] = (cir, cburst, pir, pburst)

    def meter_get_config(self, name, index):
        return self._array(self.meters, name, index)[index]

    def meter_reset_config(self, name, index):
        self._array(self.meters, name, index)[index] = None

    # -- replication -------------------------------------------------------------------------
    def set_mcast_group(self, group_id, replicas):
        self.mcast[group_id] = list(replicas)

    def delete_mcast_group(self, group_id):
        del self.mcast[group_id]

    def set_clone_session(self, session_id, replicas, truncate_bytes=0):
        self.clone[session_id] = (list(replicas), truncate_bytes)

    def delete_clone_session(self, session_id):
        del self.clone[session_id]

    # -- traffic manager -------------------------------------------------------------------
    def set_queue_rate(self, pps, port=None, priority=None):
        self.queue_calls.append(("rate", pps, port, priority))

    def set_queue_depth(self, pkts, port=None, priority=None):
        self.queue_calls.append(("depth", pkts, port, priority))

    def set_port_up(self, port, up):
        self.port_up[port] = up

    # -- data plane --------------------------------------------------------------------------
    def _emit(self, port, data):
        if self.port_up.get(port, True) is False:
            return
        if self.buffer_output or self.on_output is None:
            self._out.append((port, data))
        else:
            self.on_output(port, data)

    def send(self, port, data):
        with self.lock:
            if self.cpu_port is not None and port == self.cpu_port:
                hdr = int.from_bytes(data[:2], "big")
                self._emit(hdr >> 7, data[2:])
                return
            if self.digest_on_send:
                self._digests.append(Digest("learn_t", [("port", 9, port), ("first", 8, data[0])],
                                            self.now_us))
            if self.cpu_port is not None:
                self._emit(self.cpu_port, (port << 7).to_bytes(2, "big") + data)

    def service(self):
        pass

    def next_departure_us(self):
        return None

    def advance(self, us):
        self.now_us += us

    def take_output(self):
        out, self._out = self._out, []
        return out

    def digests(self):
        out, self._digests = self._digests, []
        return out
