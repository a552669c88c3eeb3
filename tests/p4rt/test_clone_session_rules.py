"""CloneSessionEntry writes on p4sim's P4Runtime server, held to what the real servers take.

v1model (p4sim.Switch) stands for simple_switch_grpc: PI refuses session id 0 (INVALID_ARGUMENT)
and ids >= 32768 (INVALID_ARGUMENT, "Clone session id out-of-range"), class of service != 0
(UNIMPLEMENTED, "COS for clone sessions not supported yet"), and BMv2's PI target refuses
truncation (packet_length_bytes != 0; BMv2 answers UNKNOWN, p4sim the spec's UNIMPLEMENTED).
TNA (TnaSwitch) stands for Stratum on Tofino: ids 1..1015, exactly one replica with instance 0,
packet_length_bytes up to 65535 (Tofino's max_pkt_len) -- applied as the TNA mirror session.
The spec's codes for the rest: a replica without a port, a duplicate replica, an instance past
16 bits: INVALID_ARGUMENT; backup replicas (not supported): UNIMPLEMENTED; INSERT of an existing
session ALREADY_EXISTS, MODIFY/DELETE of a missing one NOT_FOUND.  Each refusal leaves the
switch's sessions unchanged (negative controls: the same entry with the one field fixed is taken).
"""
from __future__ import annotations

from pathlib import Path

import pytest

p4sim = pytest.importorskip("p4sim")
from p4.v1 import p4runtime_pb2  # noqa: E402

from p4sim.p4rt.errors import P4RTError  # noqa: E402
from p4sim.p4rt.pipeline import Pipeline  # noqa: E402
from p4sim.p4rt.writes import apply_update  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
U = p4runtime_pb2.Update


@pytest.fixture(scope="module")
def programs():
    return {"v1model": p4sim.compile(str(ROOT / "p4src" / "examples" / "l3.p4")),
            "tna": p4sim.compile(str(ROOT / "p4src" / "tna" / "stellar.p4"), include_dirs=[str(ROOT / "p4src")],
                                 defines={"__TARGET_TOFINO__": "1"})}


def pipe_for(programs, arch: str) -> Pipeline:
    program = programs[arch]
    return Pipeline(program.p4info, b"", 1, p4sim.Switch(program))


def session(sid: int = 1, ports=((68, 0),), cos: int = 0, length: int = 0, backup: bool = False,
            portless: bool = False) -> p4runtime_pb2.PacketReplicationEngineEntry:
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    c = pre.clone_session_entry
    c.session_id, c.class_of_service, c.packet_length_bytes = sid, cos, length
    for port, instance in ports:
        r = c.replicas.add(egress_port=port, instance=instance)
        if backup:
            r.backup_replicas.add(port=bytes([port + 1]), instance=instance)
    if portless:
        c.replicas.add(instance=0)
    return pre


def write(pipe: Pipeline, kind: int, pre) -> str:
    try:
        apply_update(pipe, U(type=kind, entity=p4runtime_pb2.Entity(packet_replication_engine_entry=pre)))
    except P4RTError as err:
        return err.code if isinstance(err.code, str) else getattr(err.code, "name", str(err.code))
    return "OK"


@pytest.mark.parametrize("arch", ["v1model", "tna"])
def test_common_rules(programs, arch) -> None:
    pipe = pipe_for(programs, arch)
    assert write(pipe, U.INSERT, session(0)) == "INVALID_ARGUMENT"         # 0 is the wildcard
    assert write(pipe, U.INSERT, session(portless=True, ports=())) == "INVALID_ARGUMENT"
    assert write(pipe, U.INSERT, session(backup=True)) == "UNIMPLEMENTED"
    assert write(pipe, U.INSERT, session(ports=((68, 1 << 16),))) == "INVALID_ARGUMENT"
    assert write(pipe, U.INSERT, session(cos=1)) == "UNIMPLEMENTED"
    assert write(pipe, U.INSERT, session(cos=8)) == "INVALID_ARGUMENT"
    assert write(pipe, U.MODIFY, session()) == "NOT_FOUND"
    assert write(pipe, U.DELETE, session()) == "NOT_FOUND"
    assert pipe.switch.clone_sessions() == {}                               # nothing half-applied
    assert write(pipe, U.INSERT, session()) == "OK"                         # control: the same, fixed
    assert write(pipe, U.INSERT, session()) == "ALREADY_EXISTS"
    assert pipe.switch.clone_sessions() == {1: ([(68, 0)], 0)}
    assert write(pipe, U.DELETE, session()) == "OK" and pipe.switch.clone_sessions() == {}


def test_v1model_rules_are_simple_switch_grpcs(programs) -> None:
    pipe = pipe_for(programs, "v1model")
    assert write(pipe, U.INSERT, session(length=64)) == "UNIMPLEMENTED"     # BMv2: no truncation
    assert write(pipe, U.INSERT, session(32768)) == "INVALID_ARGUMENT"      # PI: 1..32767
    assert write(pipe, U.INSERT, session(ports=((1, 0), (1, 0)))) == "INVALID_ARGUMENT"  # duplicate
    assert pipe.switch.clone_sessions() == {}
    assert write(pipe, U.INSERT, session(32767, ports=((1, 0), (2, 5)))) == "OK"   # several replicas
    assert pipe.switch.clone_sessions() == {32767: ([(1, 0), (2, 5)], 0)}


def test_tna_rules_are_stratum_on_tofinos_and_truncation_is_the_mirror_sessions(programs) -> None:
    pipe = pipe_for(programs, "tna")
    assert type(pipe.switch).__name__ == "TnaSwitch"
    assert write(pipe, U.INSERT, session(1016, length=64)) == "INVALID_ARGUMENT"   # Tofino: 1..1015
    assert write(pipe, U.INSERT, session(ports=((68, 0), (69, 0)))) == "UNIMPLEMENTED"  # one destination
    assert write(pipe, U.INSERT, session(ports=())) == "INVALID_ARGUMENT"
    assert write(pipe, U.INSERT, session(ports=((68, 3),))) == "UNIMPLEMENTED"      # instance 0 only
    assert write(pipe, U.INSERT, session(length=1 << 16)) == "INVALID_ARGUMENT"    # max_pkt_len 16 bits
    assert pipe.switch.clone_sessions() == {}
    assert write(pipe, U.INSERT, session(length=64)) == "OK"
    assert pipe.switch.clone_sessions() == {1: ([(68, 0)], 64)}
    assert write(pipe, U.MODIFY, session(length=96)) == "OK"
    assert pipe.switch.clone_sessions() == {1: ([(68, 0)], 96)}
