"""Randomised malformed Writes: every one is answered with a proper code, never INTERNAL, and the
server keeps serving.  Seeded, so a failure is reproducible."""
from __future__ import annotations

import random

import grpc
from p4.v1 import p4runtime_pb2

from p4sim.p4rt.client import WriteFailed, load_p4info
from tests.p4rt.p4sim_process import REPO, compile_program
from tests.p4rt.fake_switch import fake_p4info

ALLOWED = {"OK", "INVALID_ARGUMENT", "OUT_OF_RANGE", "NOT_FOUND", "ALREADY_EXISTS",
           "PERMISSION_DENIED", "UNIMPLEMENTED", "FAILED_PRECONDITION"}


def random_bytes(rng: random.Random) -> bytes:
    return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 9)))


def random_update(rng: random.Random, info) -> p4runtime_pb2.Update:
    upd = p4runtime_pb2.Update(type=rng.randrange(0, 5))
    kind = rng.choice(["table", "table", "table", "counter", "register", "meter", "pre", "digest", "empty"])
    pick = lambda objs: rng.choice([o.preamble.id for o in objs] + [rng.randrange(1 << 32)])  # noqa: E731
    if kind == "table":
        t = upd.entity.table_entry
        t.table_id = pick(info.tables)
        for _ in range(rng.randrange(0, 4)):
            fm = t.match.add(field_id=rng.randrange(0, 4))
            which = rng.choice(["exact", "lpm", "ternary", "range", "optional"])
            if which == "exact":
                fm.exact.value = random_bytes(rng)
            elif which == "lpm":
                fm.lpm.value, fm.lpm.prefix_len = random_bytes(rng), rng.randrange(-2, 70)
            elif which == "ternary":
                fm.ternary.value, fm.ternary.mask = random_bytes(rng), random_bytes(rng)
            elif which == "range":
                fm.range.low, fm.range.high = random_bytes(rng), random_bytes(rng)
            else:
                fm.optional.value = random_bytes(rng)
        if rng.random() < 0.8:
            t.action.action.action_id = pick(info.actions)
            for _ in range(rng.randrange(0, 3)):
                t.action.action.params.add(param_id=rng.randrange(0, 4), value=random_bytes(rng))
        t.priority = rng.choice([0, 0, 1, 5, -3])
        t.is_default_action = rng.random() < 0.2
    elif kind == "counter":
        c = upd.entity.counter_entry
        c.counter_id = pick(info.counters)
        if rng.random() < 0.7:
            c.index.index = rng.randrange(-2, 12)
    elif kind == "register":
        r = upd.entity.register_entry
        r.register_id = pick(info.registers)
        r.index.index = rng.randrange(-1, 20)
        if rng.random() < 0.8:
            r.data.bitstring = random_bytes(rng)
    elif kind == "meter":
        m = upd.entity.meter_entry
        m.meter_id = pick(info.meters)
        m.index.index = rng.randrange(0, 6)
        m.config.cir, m.config.pir = rng.randrange(0, 5), rng.randrange(0, 5)
    elif kind == "pre":
        g = upd.entity.packet_replication_engine_entry.multicast_group_entry
        g.multicast_group_id = rng.randrange(0, 4)
        for _ in range(rng.randrange(0, 3)):
            g.replicas.add(egress_port=rng.randrange(0, 3), instance=rng.randrange(0, 2))
    elif kind == "digest":
        d = upd.entity.digest_entry
        d.digest_id = pick(info.digests)
        if rng.random() < 0.7:
            d.config.max_list_size = 1
    return upd


def fuzz_writes(c, info, rng: random.Random) -> None:
    seen: set[str] = set()
    for _ in range(150):
        updates = [random_update(rng, info) for _ in range(rng.randrange(1, 8))]
        try:
            c.write(*updates)
            seen.add("OK")
        except WriteFailed as err:
            codes = [e.code for e in err.errors]
            assert len(codes) == len(updates)
            assert set(codes) <= ALLOWED, codes
            seen.update(codes)
        except grpc.RpcError as err:
            raise AssertionError(f"whole-batch error {err.code()} for a well-addressed request")
    assert {"INVALID_ARGUMENT", "NOT_FOUND", "OUT_OF_RANGE"} <= seen  # the generator did probe
    assert c.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()).p4runtime_api_version
    c.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))


def fuzz_reads(c, info, rng: random.Random) -> None:
    """Reads of random entities: answers or a proper whole-RPC code, never INTERNAL."""
    for _ in range(100):
        upd = random_update(rng, info)
        try:
            c.read(upd.entity)
        except grpc.RpcError as err:
            assert err.code().name in ALLOWED, (err.code(), err.details())


def test_random_malformed_writes_get_codes_and_server_survives(harness):
    c = harness.primary_with_pipeline()
    fuzz_writes(c, fake_p4info(), random.Random(20261130))
    fuzz_reads(c, fake_p4info(), random.Random(3))


def test_random_malformed_writes_on_the_real_core(real_harness, tmp_path):
    json_path, info_path = compile_program(REPO / "tests/p4rt/p4/match_kinds.p4", tmp_path)
    info = load_p4info(str(info_path))
    c = real_harness.client()
    c.set_pipeline(info, json_path.read_bytes())
    fuzz_writes(c, info, random.Random(7))
    fuzz_reads(c, info, random.Random(8))
