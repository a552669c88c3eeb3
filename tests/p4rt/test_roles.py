"""P4Runtime role configs (Stratum's P4RoleConfig scheme) and per-role arbitration on p4sim's
server, over real gRPC against the fake switch.  Every refusal has a negative control: the same
request from a role that is allowed succeeds."""
from __future__ import annotations

import queue

import grpc
import pytest
from google.protobuf import any_pb2, wrappers_pb2
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4sim.p4rt.client import WriteFailed, update
from p4sim.p4rt.roles import role_config_any
from testkit.fake_switch import fake_p4info
from testkit.p4rt_harness import FAKE_CONFIG
from testkit.p4runtime_fuzz import exact, lpm

T_EXACT, T_LPM, T_TERNARY = 0x02000001, 0x02000002, 0x02000003
REGISTER, DIGEST = 0x16000001, 0x17000001
ROLLBACK = p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR


def codes(excinfo) -> list[str]:
    return [e.code for e in excinfo.value.errors]


@pytest.fixture
def two_roles(harness):
    """A pipeline pushed by the default role; role 'routing' owns t_lpm, 'acl' owns t_exact."""
    boss = harness.primary_with_pipeline()
    routing = harness.client(role="routing", connect=False)
    routing.role_config = role_config_any(exclusive=[T_LPM], shared=[REGISTER])
    acl = harness.client(role="acl", connect=False)
    acl.role_config = role_config_any(exclusive=[T_EXACT], shared=[REGISTER])
    assert routing.connect().status.code == code_pb2.OK
    assert acl.connect().status.code == code_pb2.OK  # same election id (0, 1): another role
    return boss, routing, acl


def test_a_role_writes_its_own_tables_only(harness, two_roles):
    boss, routing, acl = two_roles
    routing.write(update("INSERT", table_entry=lpm(routing, 0x0A000000)))
    with pytest.raises(WriteFailed) as ex:
        routing.write(update("INSERT", table_entry=exact(routing, 0x1)))
    assert codes(ex) == ["PERMISSION_DENIED"]
    acl.write(update("INSERT", table_entry=exact(acl, 0x1)))  # negative control: its owner may
    assert len(harness.switch.table_entries("MyIngress.t_exact")) == 1
    assert len(harness.switch.table_entries("MyIngress.t_lpm")) == 1


def test_shared_ids_are_writable_by_every_role_that_lists_them(harness, two_roles):
    _, routing, acl = two_roles
    for c, value in ((routing, b"\x05"), (acl, b"\x06")):
        re = p4runtime_pb2.RegisterEntry(register_id=REGISTER)
        re.index.index, re.data.bitstring = 1, value
        c.write(update("MODIFY", register_entry=re))
    assert harness.switch.register_read("MyIngress.last_seen", 1) == 6


def test_a_role_without_config_has_full_access(harness, two_roles):
    """Negative control for the restriction: the spec's 'unset role.config = full access'."""
    boss, _, _ = two_roles
    boss.write(update("INSERT", table_entry=exact(boss, 0x2)),
               update("INSERT", table_entry=lpm(boss, 0x0B000000)))
    free = harness.client(role="ops", connect=False)
    assert free.connect().status.code == code_pb2.OK
    free.write(update("INSERT", table_entry=c_ternary(free)))


def c_ternary(c):
    return c.table_entry("MyIngress.t_ternary", {"hdr.ipv4.src": (0x0A000000, 0xFF000000),
                                                  "hdr.ipv4.proto": 17},
                         "MyIngress.set_port", {"port": 2}, priority=1)


def test_rollback_batch_with_one_forbidden_update_applies_nothing(harness, two_roles):
    _, routing, _ = two_roles
    req = p4runtime_pb2.WriteRequest(device_id=1, role="routing", atomicity=ROLLBACK)
    req.election_id.low = 1
    req.updates.extend([update("INSERT", table_entry=lpm(routing, 0x0A000000)),
                        update("INSERT", table_entry=exact(routing, 0x3))])
    with pytest.raises(grpc.RpcError) as ex:
        routing.stub.Write(req)
    from p4sim.p4rt.client import parse_write_error

    assert [e.code for e in parse_write_error(ex.value)] == ["ABORTED", "PERMISSION_DENIED"]
    assert harness.switch.table_entries("MyIngress.t_lpm") == []


def test_write_from_unknown_role_or_backup_is_permission_denied(harness, two_roles):
    _, routing, _ = two_roles
    ghost = harness.client(role="nobody", connect=False)  # never arbitrated
    with pytest.raises(grpc.RpcError) as ex:
        ghost.write(update("INSERT", table_entry=lpm(routing, 0x0A000000)))
    assert ex.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "no primary" in ex.value.details()
    backup = harness.client(role="routing", election_id=(0, 0), connect=False)
    backup.role_config = routing.role_config
    assert backup.connect().status.code == code_pb2.ALREADY_EXISTS
    with pytest.raises(grpc.RpcError) as ex:
        backup.write(update("INSERT", table_entry=lpm(routing, 0x0A000000)))
    assert ex.value.code() == grpc.StatusCode.PERMISSION_DENIED
    routing.write(update("INSERT", table_entry=lpm(routing, 0x0A000000)))  # the primary may


def test_election_is_per_role(harness, two_roles):
    """A higher election id in role 'acl' does not demote role 'routing''s primary."""
    _, routing, acl = two_roles
    acl2 = harness.client(role="acl", election_id=(0, 9), connect=False)
    acl2.role_config = acl.role_config
    assert acl2.connect().status.code == code_pb2.OK
    assert acl.next_arbitration().status.code == code_pb2.ALREADY_EXISTS
    routing.write(update("INSERT", table_entry=lpm(routing, 0x0A000000)))
    with pytest.raises(grpc.RpcError) as ex:
        acl.write(update("INSERT", table_entry=exact(acl, 0x1)))
    assert ex.value.code() == grpc.StatusCode.PERMISSION_DENIED
    acl2.write(update("INSERT", table_entry=exact(acl2, 0x1)))
    with pytest.raises(queue.Empty):
        routing.arbitrations.get(timeout=0.2)  # routing's stream heard nothing of acl's election


def test_pipeline_push_needs_can_push_pipeline(harness, two_roles):
    _, routing, _ = two_roles
    with pytest.raises(grpc.RpcError) as ex:
        routing.set_pipeline(fake_p4info(), FAKE_CONFIG)
    assert ex.value.code() == grpc.StatusCode.PERMISSION_DENIED
    ops = harness.client(role="ops", connect=False)
    ops.role_config = role_config_any(shared=[T_TERNARY], can_push_pipeline=True)
    assert ops.connect().status.code == code_pb2.OK
    ops.set_pipeline(fake_p4info(), FAKE_CONFIG)


def test_reads_show_a_restricted_role_only_its_entities(harness, two_roles):
    boss, routing, _ = two_roles
    boss.write(update("INSERT", table_entry=exact(boss, 0x2)),
               update("INSERT", table_entry=lpm(boss, 0x0B000000)))
    seen = routing.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))
    assert {e.table_entry.table_id for e in seen} == {T_LPM}
    assert len(boss.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))) == 2
    with pytest.raises(grpc.RpcError) as ex:
        routing.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=T_EXACT)))
    assert ex.value.code() == grpc.StatusCode.PERMISSION_DENIED


def test_packet_in_goes_to_roles_that_take_it(harness, two_roles):
    boss, routing, acl = two_roles  # neither restricted role asked for packet-ins
    snoop = harness.client(role="snoop", connect=False)
    snoop.role_config = role_config_any(receives_packet_ins=True, packet_in_filter=(1, b"\x07"))
    assert snoop.connect().status.code == code_pb2.OK
    harness.device.inject(7, b"from7")
    harness.device.inject(3, b"from3")
    assert boss.packets.get(timeout=5).packet.payload == b"from7"
    assert boss.packets.get(timeout=5).packet.payload == b"from3"
    assert snoop.packets.get(timeout=5).packet.payload == b"from7"  # the filter: port 7 only
    for c in (snoop, routing, acl):
        with pytest.raises(queue.Empty):
            c.packets.get(timeout=0.2)


def test_digests_go_to_roles_that_list_them(harness, two_roles):
    boss, routing, _ = two_roles
    learner = harness.client(role="learn", connect=False)
    learner.role_config = role_config_any(exclusive=[DIGEST])
    assert learner.connect().status.code == code_pb2.OK
    de = p4runtime_pb2.DigestEntry(digest_id=DIGEST)
    de.config.max_list_size, de.config.ack_timeout_ns = 1, 10**9
    learner.write(update("INSERT", digest_entry=de))
    harness.switch.digest_on_send = True
    harness.device.inject(2, b"\x09")
    assert learner.digests.get(timeout=5).digest.digest_id == DIGEST
    assert boss.digests.get(timeout=5).digest.digest_id == DIGEST
    with pytest.raises(queue.Empty):
        routing.digests.get(timeout=0.2)


def test_role_config_of_another_scheme_is_invalid_argument(harness):
    c = harness.client(role="x", connect=False)
    other = any_pb2.Any()
    other.Pack(wrappers_pb2.StringValue(value="all tables please"))
    c.role_config = other
    c.open_stream()
    c.send_arbitration((0, 1))
    with pytest.raises(ConnectionError):
        c.next_arbitration()
    assert c.stream_status.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_an_id_exclusive_to_another_role_is_invalid_argument(harness, two_roles):
    greedy = harness.client(role="greedy", connect=False)
    greedy.role_config = role_config_any(shared=[T_LPM])
    greedy.open_stream()
    greedy.send_arbitration((0, 1))
    with pytest.raises(ConnectionError):
        greedy.next_arbitration()
    assert greedy.stream_status.code() == grpc.StatusCode.INVALID_ARGUMENT
    fine = harness.client(role="fine", connect=False)  # negative control: a free id is fine
    fine.role_config = role_config_any(shared=[T_TERNARY])
    assert fine.connect().status.code == code_pb2.OK


def test_a_stream_cannot_change_role_or_device(harness):
    c = harness.client(role="a")
    c.role = "b"
    c.send_arbitration((0, 1))
    with pytest.raises(ConnectionError):
        c.next_arbitration()
    assert c.stream_status.code() == grpc.StatusCode.FAILED_PRECONDITION
    d = harness.client()
    d.device_id = 5
    d.send_arbitration((0, 1))
    with pytest.raises(ConnectionError):
        d.next_arbitration()
    assert d.stream_status.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_notifications_carry_the_primary_role_config(harness, two_roles):
    _, routing, _ = two_roles
    backup = harness.client(role="routing", election_id=(0, 0), connect=False)
    answer = backup.connect()
    assert answer.status.code == code_pb2.ALREADY_EXISTS
    assert answer.role.name == "routing" and answer.role.config == routing.role_config


def test_controller_session_speaks_for_its_role(harness, two_roles):
    """control_plane's finsy session with a Transport role: arbitrates in that role, its Writes
    carry it (allowed in its table, refused elsewhere by name)."""
    from control_plane.p4rt import SwitchSession, Transport

    from control_plane.p4rt import Change

    info = fake_p4info()  # finsy's P4Schema wants aliases, as p4c writes them
    for kind in ("tables", "actions", "counters", "direct_counters", "meters", "direct_meters",
                 "registers", "digests", "controller_packet_metadata"):
        for obj in getattr(info, kind):
            obj.preamble.alias = obj.preamble.name
    t = Transport(role="routing", role_config=role_config_any(exclusive=[T_LPM]))
    with SwitchSession(harness.address, 1, info, election_id=(0, 5), transport=t) as s:
        assert s.primary
        entry = {"table": "MyIngress.t_lpm", "match": {"hdr.ipv4.dst": {"value": 0x0A000000, "prefix_len": 8}},
                 "action": "MyIngress.drop", "params": {}}

        assert s.apply([Change("insert", "entry", entry)]) == []
        bad = {"table": "MyIngress.t_exact", "match": {"hdr.eth.dst": 1, "meta.vrf": 1},
               "action": "MyIngress.drop", "params": {}}
        [err] = s.apply([Change("insert", "entry", bad)])
        assert err.code == "PERMISSION_DENIED"
    assert len(harness.switch.table_entries("MyIngress.t_lpm")) == 1
    assert harness.switch.table_entries("MyIngress.t_exact") == []


def test_deprecated_numeric_role_id_is_refused(harness, two_roles):
    _, routing, _ = two_roles
    req = p4runtime_pb2.WriteRequest(device_id=1, role_id=7)
    req.election_id.low = 1
    req.updates.append(update("INSERT", table_entry=lpm(routing, 0x0A000000)))
    with pytest.raises(grpc.RpcError) as ex:
        routing.stub.Write(req)
    assert ex.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert harness.switch.table_entries("MyIngress.t_lpm") == []
