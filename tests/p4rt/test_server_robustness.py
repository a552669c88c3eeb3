"""Randomised malformed Writes: every one is answered with a proper code, never INTERNAL, and the
server keeps serving.  Seeded, so a failure is reproducible."""
from __future__ import annotations

import random

import grpc
from p4.v1 import p4runtime_pb2

from p4sim.p4rt.client import WriteFailed, load_p4info
from testkit.fake_switch import fake_p4info
from testkit.p4runtime_fuzz import ALLOWED, random_update
from testkit.p4sim_process import REPO, compile_program

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
