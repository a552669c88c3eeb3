"""P4Runtime server behaviour (arbitration, pipeline, writes, reads, errors, packets, digests),
checked over real gRPC against the fake switch so that the server's rules are tested on their
own.  The same server on the real p4sim core is covered by test_server_p4sim.py."""
from __future__ import annotations

import queue

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4sim.p4rt.client import WriteFailed, update
from testkit.fake_switch import fake_p4info
from testkit.p4rt_harness import CPU_PORT, FAKE_CONFIG

SetAction = p4runtime_pb2.SetForwardingPipelineConfigRequest


def rpc_code(excinfo) -> grpc.StatusCode:
    return excinfo.value.code()


# -- arbitration ---------------------------------------------------------------------------

def test_capabilities_reports_1_4_1(harness):
    c = harness.client(connect=False)
    assert c.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()).p4runtime_api_version == "1.4.1"


def test_first_client_is_primary_and_lower_election_is_backup(harness):
    a = harness.client(election_id=(0, 10), connect=False)
    assert a.connect().status.code == code_pb2.OK
    b = harness.client(election_id=(0, 5), connect=False)
    reply = b.connect()
    assert reply.status.code == code_pb2.ALREADY_EXISTS
    assert (reply.election_id.high, reply.election_id.low) == (0, 10)


def test_higher_election_takes_over_and_everyone_is_told(harness):
    a = harness.client(election_id=(0, 10))
    b = harness.client(election_id=(1, 0), connect=False)
    assert b.connect().status.code == code_pb2.OK
    assert a.next_arbitration().status.code == code_pb2.ALREADY_EXISTS


def test_backup_is_promoted_when_primary_leaves(harness):
    a = harness.client(election_id=(0, 10))
    b = harness.client(election_id=(0, 5))
    a.close()
    assert b.next_arbitration().status.code == code_pb2.OK


def test_duplicate_election_id_closes_the_stream(harness):
    harness.client(election_id=(0, 7))
    b = harness.client(election_id=(0, 7), connect=False)
    with pytest.raises(ConnectionError):
        b.connect()
    assert b.stream_status.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_arbitration_for_unknown_device_is_not_found(harness):
    c = harness.client(device_id=99, connect=False)
    with pytest.raises(ConnectionError):
        c.connect()
    assert c.stream_status.code() == grpc.StatusCode.NOT_FOUND


# -- pipeline ------------------------------------------------------------------------------

def test_write_and_read_before_pipeline_are_failed_precondition(harness):
    c = harness.client()
    entry = c.table_entry("MyIngress.t_lpm", {"hdr.ipv4.dst": (0x0A000000, 8)}, "MyIngress.drop")
    with pytest.raises(grpc.RpcError) as e:
        c.write(update("INSERT", table_entry=entry))
    assert rpc_code(e) == grpc.StatusCode.FAILED_PRECONDITION
    with pytest.raises(grpc.RpcError) as e:
        c.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))
    assert rpc_code(e) == grpc.StatusCode.FAILED_PRECONDITION


def test_backup_cannot_set_pipeline_or_write(harness):
    primary = harness.primary_with_pipeline()
    backup = harness.client(election_id=(0, 0x0))
    with pytest.raises(grpc.RpcError) as e:
        backup.set_pipeline(fake_p4info(), FAKE_CONFIG)
    assert rpc_code(e) == grpc.StatusCode.PERMISSION_DENIED
    entry = backup.table_entry("MyIngress.t_lpm", {"hdr.ipv4.dst": (0x0A000000, 8)}, "MyIngress.drop")
    with pytest.raises(grpc.RpcError) as e:
        backup.write(update("INSERT", table_entry=entry))
    assert rpc_code(e) == grpc.StatusCode.PERMISSION_DENIED
    assert harness.switch.table_entries("MyIngress.t_lpm") == []
    primary.write(update("INSERT", table_entry=entry))  # control: the primary may
    assert len(backup.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))) == 1


def test_write_with_stale_election_id_is_permission_denied(harness):
    c = harness.primary_with_pipeline()
    c.election_id = (0, 2)  # not the id this client arbitrated with
    entry = c.table_entry("MyIngress.t_lpm", {"hdr.ipv4.dst": (0x0A000000, 8)}, "MyIngress.drop")
    with pytest.raises(grpc.RpcError) as e:
        c.write(update("INSERT", table_entry=entry))
    assert rpc_code(e) == grpc.StatusCode.PERMISSION_DENIED


def test_write_to_unknown_device_is_not_found(harness):
    c = harness.primary_with_pipeline()
    c.device_id = 5
    with pytest.raises(grpc.RpcError) as e:
        c.write()
    assert rpc_code(e) == grpc.StatusCode.NOT_FOUND


def test_bad_device_config_is_invalid_argument_and_keeps_old_pipeline(harness):
    c = harness.primary_with_pipeline()
    old = harness.switch
    with pytest.raises(grpc.RpcError) as e:
        c.set_pipeline(fake_p4info(), b"garbage")
    assert rpc_code(e) == grpc.StatusCode.INVALID_ARGUMENT
    assert harness.switch is old


def test_verify_does_not_install_and_save_then_commit_does(harness):
    c = harness.client()
    c.set_pipeline(fake_p4info(), FAKE_CONFIG, action=SetAction.VERIFY)
    assert harness.switch is None
    c.set_pipeline(fake_p4info(), FAKE_CONFIG, action=SetAction.VERIFY_AND_SAVE, cookie=42)
    assert harness.switch is None
    req = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=1, action=SetAction.COMMIT)
    req.election_id.low = 1
    c.stub.SetForwardingPipelineConfig(req)
    assert harness.switch is not None
    got = c.stub.GetForwardingPipelineConfig(
        p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=1))
    assert got.config.cookie.cookie == 42
    assert got.config.p4_device_config == FAKE_CONFIG
    assert got.config.p4info == fake_p4info()


def test_commit_without_saved_config_is_failed_precondition(harness):
    c = harness.client()
    req = p4runtime_pb2.SetForwardingPipelineConfigRequest(device_id=1, action=SetAction.COMMIT)
    req.election_id.low = 1
    with pytest.raises(grpc.RpcError) as e:
        c.stub.SetForwardingPipelineConfig(req)
    assert rpc_code(e) == grpc.StatusCode.FAILED_PRECONDITION


# -- table writes --------------------------------------------------------------------------

def lpm_entry(c, value, plen, port=1, mac=0xAABBCCDDEEFF):
    return c.table_entry("MyIngress.t_lpm", {"hdr.ipv4.dst": (value, plen)}, "MyIngress.set_mac",
                         {"mac": mac, "port": port})


def codes(excinfo) -> list[str]:
    return [e.code for e in excinfo.value.errors]


def test_insert_and_read_back_in_canonical_bytes(harness):
    c = harness.primary_with_pipeline()
    c.write(update("INSERT", table_entry=lpm_entry(c, 0x0A000000, 8, port=3)))
    [entry] = harness.switch.table_entries("MyIngress.t_lpm")
    assert entry.match == {"hdr.ipv4.dst": (0x0A000000, 8)}
    assert (entry.action, entry.params) == ("MyIngress.set_mac", {"mac": 0xAABBCCDDEEFF, "port": 3})
    [got] = c.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(
        table_id=c.table_id("MyIngress.t_lpm"))))
    assert got.table_entry.match[0].lpm.value == bytes([0x0A, 0, 0, 0])
    assert got.table_entry.action.action.params[1].value == b"\x03"


def test_zero_padded_values_are_accepted(harness):
    c = harness.primary_with_pipeline()
    e = c.table_entry("MyIngress.t_exact", {"hdr.eth.dst": b"\x00" * 6 + b"\x01", "meta.vrf": b"\x00\x02"},
                      "MyIngress.set_port", {"port": b"\x00\x00\x05"})
    c.write(update("INSERT", table_entry=e))
    [entry] = harness.switch.table_entries("MyIngress.t_exact")
    assert entry.match == {"hdr.eth.dst": 1, "meta.vrf": 2} and entry.params == {"port": 5}


def test_value_wider_than_field_is_out_of_range(harness):
    c = harness.primary_with_pipeline()
    e = c.table_entry("MyIngress.t_exact", {"hdr.eth.dst": 1, "meta.vrf": 16}, "MyIngress.set_port",
                      {"port": 1})
    with pytest.raises(WriteFailed) as ex:
        c.write(update("INSERT", table_entry=e))
    assert codes(ex) == ["OUT_OF_RANGE"]
    e = c.table_entry("MyIngress.t_exact", {"hdr.eth.dst": 1, "meta.vrf": 1}, "MyIngress.set_port",
                      {"port": 512})
    with pytest.raises(WriteFailed) as ex:
        c.write(update("INSERT", table_entry=e))
    assert codes(ex) == ["OUT_OF_RANGE"]
    assert harness.switch.table_entries("MyIngress.t_exact") == []


def test_empty_bytestring_is_invalid_argument(harness):
    c = harness.primary_with_pipeline()
    e = c.table_entry("MyIngress.t_exact", {"hdr.eth.dst": b"", "meta.vrf": 1}, "MyIngress.set_port",
                      {"port": 1})
    with pytest.raises(WriteFailed) as ex:
        c.write(update("INSERT", table_entry=e))
    assert codes(ex) == ["INVALID_ARGUMENT"]


def test_lpm_bits_past_prefix_are_invalid_argument(harness):
    c = harness.primary_with_pipeline()
    with pytest.raises(WriteFailed) as ex:
        c.write(update("INSERT", table_entry=lpm_entry(c, 0x0A000001, 8)))
    assert codes(ex) == ["INVALID_ARGUMENT"]
    assert "prefix" in ex.value.errors[0].message


def test_ternary_without_priority_is_invalid_and_with_priority_works(harness):
    c = harness.primary_with_pipeline()
    match = {"hdr.ipv4.src": (0x0A000000, 0xFF000000), "hdr.ipv4.proto": 17}
    e = c.table_entry("MyIngress.t_ternary", match, "MyIngress.set_port", {"port": 2})
    with pytest.raises(WriteFailed) as ex:
        c.write(update("INSERT", table_entry=e))
    assert codes(ex) == ["INVALID_ARGUMENT"]
    e.priority = 10
    c.write(update("INSERT", table_entry=e))
    [entry] = harness.switch.table_entries("MyIngress.t_ternary")
    assert entry.priority == 10 and entry.match["hdr.ipv4.src"] == (0x0A000000, 0xFF000000)


def test_ternary_value_outside_mask_and_zero_mask_are_invalid(harness):
    c = harness.primary_with_pipeline()
    for tern in ((0x0A000001, 0xFF000000), (0, 0)):
        e = c.table_entry("MyIngress.t_ternary", {"hdr.ipv4.src": tern, "hdr.ipv4.proto": 6},
                          "MyIngress.set_port", {"port": 2}, priority=1)
        with pytest.raises(WriteFailed) as ex:
            c.write(update("INSERT", table_entry=e))
        assert codes(ex) == ["INVALID_ARGUMENT"]


def test_priority_on_lpm_table_is_invalid(harness):
    c = harness.primary_with_pipeline()
    e = lpm_entry(c, 0x0A000000, 8)
    e.priority = 5
    with pytest.raises(WriteFailed) as ex:
        c.write(update("INSERT", table_entry=e))
    assert codes(ex) == ["INVALID_ARGUMENT"]


def test_range_and_optional_entries(harness):
    c = harness.primary_with_pipeline()
    c.write(update("INSERT", table_entry=c.table_entry(
        "MyIngress.t_range", {"hdr.udp.dport": (4791, 4800)}, "MyIngress.set_port", {"port": 1}, priority=3)))
    c.write(update("INSERT", table_entry=c.table_entry(
        "MyIngress.t_optional", {"hdr.vlan.vid": 100}, "MyIngress.set_port", {"port": 1}, priority=3)))
    bad = c.table_entry("MyIngress.t_range", {"hdr.udp.dport": (10, 5)}, "MyIngress.set_port",
                        {"port": 1}, priority=3)
    with pytest.raises(WriteFailed) as ex:
        c.write(update("INSERT", table_entry=bad))
    assert codes(ex) == ["INVALID_ARGUMENT"]
    assert harness.switch.table_entries("MyIngress.t_range")[0].match == {"hdr.udp.dport": (4791, 4800)}
    assert harness.switch.table_entries("MyIngress.t_optional")[0].match == {"hdr.vlan.vid": 100}


def test_unknown_table_is_not_found(harness):
    c = harness.primary_with_pipeline()
    e = lpm_entry(c, 0x0A000000, 8)
    e.table_id = 0x02FFFFFF
    with pytest.raises(WriteFailed) as ex:
        c.write(update("INSERT", table_entry=e))
    assert codes(ex) == ["NOT_FOUND"]


def test_action_rules(harness):
    c = harness.primary_with_pipeline()
    match = {"hdr.eth.dst": 1, "meta.vrf": 1}
    not_in_table = c.table_entry("MyIngress.t_exact", match, "MyIngress.set_mac", {"mac": 1, "port": 1})
    default_only = c.table_entry("MyIngress.t_exact", match, "NoAction")
    missing_param = c.table_entry("MyIngress.t_exact", match, "MyIngress.set_port")
    with pytest.raises(WriteFailed) as ex:
        c.write(*(update("INSERT", table_entry=e) for e in (not_in_table, default_only, missing_param)))
    assert codes(ex) == ["INVALID_ARGUMENT"] * 3
    assert harness.switch.table_entries("MyIngress.t_exact") == []


def test_duplicate_insert_and_missing_modify_delete(harness):
    c = harness.primary_with_pipeline()
    e = lpm_entry(c, 0x0A000000, 8)
    c.write(update("INSERT", table_entry=e))
    with pytest.raises(WriteFailed) as ex:
        c.write(update("INSERT", table_entry=e))
    assert codes(ex) == ["ALREADY_EXISTS"]
    other = lpm_entry(c, 0x0B000000, 8)
    with pytest.raises(WriteFailed) as ex:
        c.write(update("MODIFY", table_entry=other), update("DELETE", table_entry=other))
    assert codes(ex) == ["NOT_FOUND", "NOT_FOUND"]


def test_batch_reports_each_update_and_applies_only_good_ones(harness):
    c = harness.primary_with_pipeline()
    good1, bad, good2 = lpm_entry(c, 0x0A000000, 8), lpm_entry(c, 0x0A000001, 8), lpm_entry(c, 0x0C000000, 8)
    with pytest.raises(WriteFailed) as ex:
        c.write(*(update("INSERT", table_entry=e) for e in (good1, bad, good2)))
    assert codes(ex) == ["OK", "INVALID_ARGUMENT", "OK"]
    got = {e.match["hdr.ipv4.dst"] for e in harness.switch.table_entries("MyIngress.t_lpm")}
    assert got == {(0x0A000000, 8), (0x0C000000, 8)}


def test_modify_and_delete(harness):
    c = harness.primary_with_pipeline()
    c.write(update("INSERT", table_entry=lpm_entry(c, 0x0A000000, 8, port=1)))
    c.write(update("MODIFY", table_entry=lpm_entry(c, 0x0A000000, 8, port=7)))
    assert harness.switch.table_entries("MyIngress.t_lpm")[0].params["port"] == 7
    c.write(update("DELETE", table_entry=lpm_entry(c, 0x0A000000, 8)))
    assert harness.switch.table_entries("MyIngress.t_lpm") == []


def test_default_entry_modify_read_and_reset(harness):
    c = harness.primary_with_pipeline()
    d = c.table_entry("MyIngress.t_lpm", action="MyIngress.drop", default=True)
    c.write(update("MODIFY", table_entry=d))
    assert harness.switch.get_default_action("MyIngress.t_lpm") == ("MyIngress.drop", {})
    [got] = c.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(
        table_id=c.table_id("MyIngress.t_lpm"), is_default_action=True)))
    assert got.table_entry.action.action.action_id == c.action_id("MyIngress.drop")
    with pytest.raises(WriteFailed) as ex:
        c.write(update("INSERT", table_entry=d))
    assert codes(ex) == ["INVALID_ARGUMENT"]
    c.write(update("MODIFY", table_entry=c.table_entry("MyIngress.t_lpm", default=True)))
    assert harness.switch.get_default_action("MyIngress.t_lpm") == ("NoAction", {})


def test_const_default_and_const_table_are_permission_denied(harness):
    c = harness.primary_with_pipeline()
    d = c.table_entry("MyIngress.t_const", action="MyIngress.set_port", params={"port": 1}, default=True)
    e = c.table_entry("MyIngress.t_const", {"meta.x": 1}, "MyIngress.set_port", {"port": 1})
    with pytest.raises(WriteFailed) as ex:
        c.write(update("MODIFY", table_entry=d), update("INSERT", table_entry=e))
    assert codes(ex) == ["PERMISSION_DENIED", "PERMISSION_DENIED"]


# -- reads ---------------------------------------------------------------------------------

def test_wildcard_read_of_all_tables_and_one_entry(harness):
    c = harness.primary_with_pipeline()
    c.write(update("INSERT", table_entry=lpm_entry(c, 0x0A000000, 8)),
            update("INSERT", table_entry=lpm_entry(c, 0x0B000000, 16)),
            update("INSERT", table_entry=c.table_entry(
                "MyIngress.t_exact", {"hdr.eth.dst": 1, "meta.vrf": 1}, "MyIngress.set_port", {"port": 1})))
    everything = c.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))
    assert len(everything) == 3
    one = c.read(p4runtime_pb2.Entity(table_entry=lpm_entry(c, 0x0B000000, 16)))
    assert len(one) == 1 and one[0].table_entry.match[0].lpm.prefix_len == 16


def test_read_unknown_table_is_not_found(harness):
    c = harness.primary_with_pipeline()
    with pytest.raises(grpc.RpcError) as e:
        c.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry(table_id=0x02ABCDEF)))
    assert rpc_code(e) == grpc.StatusCode.NOT_FOUND


# -- externs -------------------------------------------------------------------------------

def test_counters_write_and_read(harness):
    c = harness.primary_with_pipeline()
    cid = c.object_id("counters", "MyIngress.port_counter")
    ce = p4runtime_pb2.CounterEntry(counter_id=cid)
    ce.index.index = 3
    ce.data.packet_count, ce.data.byte_count = 5, 500
    c.write(update("MODIFY", counter_entry=ce))
    assert harness.switch.counter_read("MyIngress.port_counter", 3) == (5, 500)
    all_idx = c.read(p4runtime_pb2.Entity(counter_entry=p4runtime_pb2.CounterEntry(counter_id=cid)))
    assert [e.counter_entry.data.packet_count for e in all_idx] == [0, 0, 0, 5, 0, 0, 0, 0]
    with pytest.raises(WriteFailed) as ex:
        c.write(update("INSERT", counter_entry=ce))
    assert codes(ex) == ["INVALID_ARGUMENT"]
    ce.index.index = 8
    with pytest.raises(WriteFailed) as ex:
        c.write(update("MODIFY", counter_entry=ce))
    assert codes(ex) == ["OUT_OF_RANGE"]


def test_direct_counter_via_entry_and_direct_counter_entry(harness):
    c = harness.primary_with_pipeline()
    e = lpm_entry(c, 0x0A000000, 8)
    c.write(update("INSERT", table_entry=e))
    harness.switch.direct_counter_write("MyIngress.t_lpm", {"hdr.ipv4.dst": (0x0A000000, 8)}, 7, 700)
    want = p4runtime_pb2.TableEntry(table_id=e.table_id)
    want.counter_data.SetInParent()
    [got] = c.read(p4runtime_pb2.Entity(table_entry=want))
    assert (got.table_entry.counter_data.packet_count, got.table_entry.counter_data.byte_count) == (7, 700)
    dce = p4runtime_pb2.DirectCounterEntry(table_entry=lpm_entry(c, 0x0A000000, 8))
    dce.table_entry.ClearField("action")
    dce.data.packet_count = 1
    c.write(update("MODIFY", direct_counter_entry=dce))
    [got] = c.read(p4runtime_pb2.Entity(direct_counter_entry=p4runtime_pb2.DirectCounterEntry(
        table_entry=p4runtime_pb2.TableEntry(table_id=e.table_id))))
    assert got.direct_counter_entry.data.packet_count == 1


def test_registers_write_read_and_width(harness):
    c = harness.primary_with_pipeline()
    rid = c.object_id("registers", "MyIngress.last_seen")
    re = p4runtime_pb2.RegisterEntry(register_id=rid)
    re.index.index = 2
    re.data.bitstring = b"\x00\x00\x12\x34"
    c.write(update("MODIFY", register_entry=re))
    assert harness.switch.register_read("MyIngress.last_seen", 2) == 0x1234
    want = p4runtime_pb2.RegisterEntry(register_id=rid)
    want.index.index = 2
    [got] = c.read(p4runtime_pb2.Entity(register_entry=want))
    assert got.register_entry.data.bitstring == b"\x12\x34"
    re.data.bitstring = b"\x01" + b"\x00" * 4
    with pytest.raises(WriteFailed) as ex:
        c.write(update("MODIFY", register_entry=re))
    assert codes(ex) == ["OUT_OF_RANGE"]


def test_meters_and_direct_meters(harness):
    c = harness.primary_with_pipeline()
    me = p4runtime_pb2.MeterEntry(meter_id=c.object_id("meters", "MyIngress.port_meter"))
    me.index.index = 1
    me.config.cir, me.config.cburst, me.config.pir, me.config.pburst = 10, 5, 20, 10
    c.write(update("MODIFY", meter_entry=me))
    assert harness.switch.meter_get_config("MyIngress.port_meter", 1) == (10, 5, 20, 10)
    me.config.cir = 30  # cir > pir
    with pytest.raises(WriteFailed) as ex:
        c.write(update("MODIFY", meter_entry=me))
    assert codes(ex) == ["INVALID_ARGUMENT"]
    ex_entry = c.table_entry("MyIngress.t_exact", {"hdr.eth.dst": 1, "meta.vrf": 1}, "MyIngress.set_port",
                             {"port": 1})
    c.write(update("INSERT", table_entry=ex_entry))
    dme = p4runtime_pb2.DirectMeterEntry(table_entry=c.table_entry(
        "MyIngress.t_exact", {"hdr.eth.dst": 1, "meta.vrf": 1}))
    dme.config.cir, dme.config.cburst, dme.config.pir, dme.config.pburst = 1, 2, 3, 4
    c.write(update("MODIFY", direct_meter_entry=dme))
    assert harness.switch.table_entries("MyIngress.t_exact")[0].meter_config == (1, 2, 3, 4)


def test_multicast_and_clone_sessions(harness):
    c = harness.primary_with_pipeline()
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    pre.multicast_group_entry.multicast_group_id = 10
    pre.multicast_group_entry.replicas.add(egress_port=1, instance=1)
    pre.multicast_group_entry.replicas.add(egress_port=2, instance=1)
    c.write(update("INSERT", packet_replication_engine_entry=pre))
    assert harness.switch.mcast[10] == [(1, 1), (2, 1)]
    with pytest.raises(WriteFailed) as ex:
        c.write(update("INSERT", packet_replication_engine_entry=pre))
    assert codes(ex) == ["ALREADY_EXISTS"]
    want = p4runtime_pb2.PacketReplicationEngineEntry()
    want.multicast_group_entry.SetInParent()
    [got] = c.read(p4runtime_pb2.Entity(packet_replication_engine_entry=want))
    assert [r.egress_port for r in got.packet_replication_engine_entry.multicast_group_entry.replicas] == [1, 2]
    c.write(update("DELETE", packet_replication_engine_entry=pre))
    assert 10 not in harness.switch.mcast
    cs = p4runtime_pb2.PacketReplicationEngineEntry()
    cs.clone_session_entry.session_id = 5
    cs.clone_session_entry.replicas.add(egress_port=CPU_PORT, instance=0)
    cs.clone_session_entry.packet_length_bytes = 64
    c.write(update("INSERT", packet_replication_engine_entry=cs))
    assert harness.switch.clone[5] == ([(CPU_PORT, 0)], 64)
    with pytest.raises(WriteFailed) as ex:
        c.write(update("MODIFY", packet_replication_engine_entry=p4runtime_pb2.PacketReplicationEngineEntry(
            clone_session_entry=p4runtime_pb2.CloneSessionEntry(session_id=6))))
    assert codes(ex) == ["NOT_FOUND"]


def test_unsupported_entity_is_reported_and_server_keeps_serving(harness):
    c = harness.primary_with_pipeline()
    with pytest.raises(WriteFailed) as ex:
        c.write(p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT),
                update("INSERT", table_entry=lpm_entry(c, 0x0A000000, 8)))
    assert codes(ex) == ["UNIMPLEMENTED", "OK"]
    assert len(c.read(p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry()))) == 1


# -- packet I/O and digests ----------------------------------------------------------------

def test_packet_out_leaves_on_the_port_named_in_metadata(harness):
    c = harness.primary_with_pipeline()
    c.packet_out(b"\xde\xad\xbe\xef", {"egress_port": 3, "_pad": 0})
    assert harness.wait_sent(1) == [(3, b"\xde\xad\xbe\xef")]


def test_packet_in_carries_ingress_port_metadata(harness):
    c = harness.primary_with_pipeline()
    harness.device.inject(5, b"hello")
    payload, md = c.packet_in()
    assert payload == b"hello" and md["ingress_port"] == 5


def test_packet_out_from_backup_is_refused_with_stream_error(harness):
    harness.primary_with_pipeline()
    backup = harness.client(election_id=(0, 0))
    backup.packet_out(b"x", {"egress_port": 1, "_pad": 0})
    err = backup.errors.get(timeout=5).error
    assert err.canonical_code == code_pb2.PERMISSION_DENIED
    assert err.packet_out.packet_out.payload == b"x"
    assert harness.sent == []


def test_packet_out_missing_metadata_is_invalid_argument(harness):
    c = harness.primary_with_pipeline()
    c.packet_out(b"x", {"egress_port": 1})
    assert c.errors.get(timeout=5).error.canonical_code == code_pb2.INVALID_ARGUMENT


def configure_digest(c, ack_timeout_ns=0, max_list_size=1):
    de = p4runtime_pb2.DigestEntry(digest_id=c.object_id("digests", "learn_t"))
    de.config.max_list_size = max_list_size
    de.config.ack_timeout_ns = ack_timeout_ns
    c.write(update("INSERT", digest_entry=de))


def test_digests_need_a_digest_entry(harness):
    c = harness.primary_with_pipeline()
    harness.switch.digest_on_send = True
    harness.device.inject(1, b"\x01")
    c.packet_in()  # the packet itself arrived...
    with pytest.raises(queue.Empty):
        c.digests.get(timeout=0.2)  # ...but no digest without configuration (negative control)
    configure_digest(c)
    harness.device.inject(2, b"\x07")
    dl = c.digests.get(timeout=5).digest
    assert dl.digest_id == c.object_id("digests", "learn_t")
    assert [m.bitstring for m in dl.data[0].struct.members] == [b"\x02", b"\x07"]


def test_duplicate_digest_suppressed_until_acked(harness):
    c = harness.primary_with_pipeline()
    configure_digest(c)
    harness.switch.digest_on_send = True
    harness.device.inject(2, b"\x07")
    first = c.digests.get(timeout=5).digest
    harness.device.inject(2, b"\x07")
    with pytest.raises(queue.Empty):
        c.digests.get(timeout=0.2)
    ack = p4runtime_pb2.StreamMessageRequest()
    ack.digest_ack.digest_id, ack.digest_ack.list_id = first.digest_id, first.list_id
    c.stream_send(ack)
    # Once the ack is processed the same data is reported again; poll with a bound.
    for _ in range(50):
        harness.device.inject(2, b"\x07")
        try:
            again = c.digests.get(timeout=0.1).digest
            break
        except queue.Empty:
            continue
    else:
        pytest.fail("digest not re-sent after ack")
    assert again.list_id > first.list_id


# -- roles, atomicity, who gets packet-ins --------------------------------------------------

def test_roles_elect_their_own_primary(harness):
    default_primary = harness.client(election_id=(0, 9))
    r1 = harness.client(election_id=(0, 1), role="r1", connect=False)
    assert r1.connect().status.code == code_pb2.OK  # primary of role r1 despite a lower id
    assert r1.p4info is not None
    default_primary.set_pipeline(fake_p4info(), FAKE_CONFIG)
    r1.write(update("INSERT", table_entry=r1.table_entry(
        "MyIngress.t_lpm", {"hdr.ipv4.dst": (0x0A000000, 8)}, "MyIngress.drop")))
    r1b = harness.client(election_id=(0, 0), role="r1", connect=False)
    assert r1b.connect().status.code == code_pb2.ALREADY_EXISTS


def atomic_write(c, atomicity, *updates):
    req = p4runtime_pb2.WriteRequest(device_id=1, atomicity=atomicity)
    req.election_id.high, req.election_id.low = c.election_id
    req.updates.extend(updates)
    try:
        c.stub.Write(req)
        return None
    except grpc.RpcError as err:
        from p4sim.p4rt.client import parse_write_error

        return [e.code for e in parse_write_error(err)]


@pytest.mark.parametrize("atomicity", [p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR,
                                       p4runtime_pb2.WriteRequest.DATAPLANE_ATOMIC])
def test_all_or_none_batch_is_rolled_back_on_failure(harness, atomicity):
    c = harness.primary_with_pipeline()
    sw = harness.switch
    # State before: one entry, a counter value, a register value, a multicast group.
    c.write(update("INSERT", table_entry=lpm_entry(c, 0x0B000000, 8, port=1)))
    sw.counter_write("MyIngress.port_counter", 2, 5, 50)
    sw.register_write("MyIngress.last_seen", 3, 9)
    grp = p4runtime_pb2.PacketReplicationEngineEntry()
    grp.multicast_group_entry.multicast_group_id = 4
    grp.multicast_group_entry.replicas.add(egress_port=1, instance=0)
    c.write(update("INSERT", packet_replication_engine_entry=grp))
    before = (list(sw.table_entries("MyIngress.t_lpm")), list(sw.counters["MyIngress.port_counter"]),
              list(sw.registers["MyIngress.last_seen"]), dict(sw.mcast),
              sw.get_default_action("MyIngress.t_lpm"))

    ce = p4runtime_pb2.CounterEntry(counter_id=c.object_id("counters", "MyIngress.port_counter"))
    ce.index.index = 2
    re = p4runtime_pb2.RegisterEntry(register_id=c.object_id("registers", "MyIngress.last_seen"))
    re.index.index = 3
    re.data.bitstring = b"\x07"
    grp2 = p4runtime_pb2.PacketReplicationEngineEntry()
    grp2.CopyFrom(grp)
    grp2.multicast_group_entry.replicas.add(egress_port=2, instance=0)
    result = atomic_write(
        c, atomicity,
        update("INSERT", table_entry=lpm_entry(c, 0x0A000000, 8)),            # new entry
        update("MODIFY", table_entry=lpm_entry(c, 0x0B000000, 8, port=9)),    # changed entry
        update("MODIFY", table_entry=c.table_entry("MyIngress.t_lpm", action="MyIngress.drop",
                                                   default=True)),
        update("MODIFY", counter_entry=ce),
        update("MODIFY", register_entry=re),
        update("MODIFY", packet_replication_engine_entry=grp2),
        update("DELETE", table_entry=lpm_entry(c, 0x0B000000, 8)),
        update("INSERT", table_entry=lpm_entry(c, 0x0C000001, 8)),            # bad: past prefix
        update("INSERT", table_entry=lpm_entry(c, 0x0D000000, 8)),            # never attempted
    )
    assert result == ["ABORTED"] * 7 + ["INVALID_ARGUMENT", "ABORTED"]
    after = (list(sw.table_entries("MyIngress.t_lpm")), list(sw.counters["MyIngress.port_counter"]),
             list(sw.registers["MyIngress.last_seen"]), dict(sw.mcast),
             sw.get_default_action("MyIngress.t_lpm"))
    assert after == before


def test_all_or_none_batch_applies_everything_when_valid(harness):
    c = harness.primary_with_pipeline()
    result = atomic_write(c, p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR,
                          update("INSERT", table_entry=lpm_entry(c, 0x0A000000, 8)),
                          update("INSERT", table_entry=lpm_entry(c, 0x0B000000, 8)))
    assert result is None
    assert len(harness.switch.table_entries("MyIngress.t_lpm")) == 2


def test_continue_on_error_control_keeps_the_good_updates(harness):
    """Negative control for the rollback test: the default mode applies what it can."""
    c = harness.primary_with_pipeline()
    result = atomic_write(c, p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR,
                          update("INSERT", table_entry=lpm_entry(c, 0x0A000000, 8)),
                          update("INSERT", table_entry=lpm_entry(c, 0x0C000001, 8)))
    assert result == ["OK", "INVALID_ARGUMENT"]
    assert len(harness.switch.table_entries("MyIngress.t_lpm")) == 1


def test_packet_in_goes_to_the_primary_only(harness):
    primary = harness.primary_with_pipeline()
    backup = harness.client(election_id=(0, 0))
    harness.device.inject(7, b"pkt")
    assert primary.packet_in()[0] == b"pkt"
    with pytest.raises(queue.Empty):
        backup.packets.get(timeout=0.2)


def test_stream_message_before_arbitration_closes_the_stream(harness):
    c = harness.client(connect=False)
    c.open_stream()
    req = p4runtime_pb2.StreamMessageRequest()
    req.packet.payload = b"x"
    c.stream_send(req)
    with pytest.raises(ConnectionError):
        c.next_arbitration()
    assert c.stream_status.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_entry_metadata_is_stored_and_returned(harness):
    c = harness.primary_with_pipeline()
    e = lpm_entry(c, 0x0A000000, 8)
    e.controller_metadata, e.metadata = 77, b"owner=stellar"
    c.write(update("INSERT", table_entry=e))
    [got] = c.read(p4runtime_pb2.Entity(table_entry=lpm_entry(c, 0x0A000000, 8)))
    assert (got.table_entry.controller_metadata, got.table_entry.metadata) == (77, b"owner=stellar")
    e.controller_metadata, e.metadata = 0, b""
    c.write(update("MODIFY", table_entry=e))
    [got] = c.read(p4runtime_pb2.Entity(table_entry=lpm_entry(c, 0x0A000000, 8)))
    assert (got.table_entry.controller_metadata, got.table_entry.metadata) == (0, b"")


def test_big_failing_batch_reports_every_update_within_metadata_limit(harness):
    """The per-update details travel in a header; they must fit gRPC's 8 KiB metadata limit."""
    c = harness.primary_with_pipeline()
    bad = [lpm_entry(c, 0x0A000000 | k, 8) for k in range(1, 121)]  # bits past the prefix
    with pytest.raises(WriteFailed) as ex:
        c.write(*(update("INSERT", table_entry=e) for e in bad))
    assert codes(ex) == ["INVALID_ARGUMENT"] * 120


def test_huge_failing_batch_reports_every_update_to_our_client(harness):
    """1000 updates: the status list exceeds gRPC's default 8 KiB metadata limit; p4sim's client
    raises its limit, so it still gets one status per update."""
    c = harness.primary_with_pipeline()
    entries = [lpm_entry(c, (k << 8), 24) for k in range(1, 1001)]
    entries[3] = lpm_entry(c, 0x0A000001, 8)  # one bad update among 1000
    with pytest.raises(WriteFailed) as ex:
        c.write(*(update("INSERT", table_entry=x) for x in entries))
    got = codes(ex)
    assert len(got) == 1000 and got[3] == "INVALID_ARGUMENT" and got.count("OK") == 999
    assert len(harness.switch.table_entries("MyIngress.t_lpm")) == 999  # the good ones applied


def test_long_core_error_messages_are_clipped():
    from p4sim.p4rt.errors import MAX_MESSAGE, P4RTError

    err = P4RTError("INVALID_ARGUMENT", "x" * 100_000)
    assert len(err.message) <= MAX_MESSAGE and err.message.endswith("[truncated]")


def test_pipeline_actions_unspecified_and_reconcile(harness):
    c = harness.client()
    with pytest.raises(grpc.RpcError) as e:
        c.set_pipeline(fake_p4info(), FAKE_CONFIG, action=SetAction.UNSPECIFIED)
    assert rpc_code(e) == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(grpc.RpcError) as e:
        c.set_pipeline(fake_p4info(), FAKE_CONFIG, action=SetAction.RECONCILE_AND_COMMIT)
    assert rpc_code(e) == grpc.StatusCode.UNIMPLEMENTED
    assert harness.switch is None


def test_primary_vanishing_without_closing_its_stream_promotes_the_backup(harness):
    a = harness.client(election_id=(0, 10))
    b = harness.client(election_id=(0, 5))
    a.channel.close()  # abrupt: no half-close of the stream, like a killed controller
    assert b.next_arbitration(timeout=10).status.code == code_pb2.OK
    b.set_pipeline(fake_p4info(), FAKE_CONFIG)  # and the new primary may write
