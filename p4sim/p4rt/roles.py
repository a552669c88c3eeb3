"""P4Runtime role configs (spec §"Role Config"), in Stratum's scheme ``stratum.P4RoleConfig``.

The spec leaves the content of ``role.config`` (an ``Any``) to an out-of-band agreement; p4sim
agrees on Stratum's, so the same controller works against both:

    message P4RoleConfig {
      message PacketFilter { uint32 metadata_id = 1; bytes value = 2; }
      repeated uint32 exclusive_p4_ids = 1;   // only this role may write these
      repeated uint32 shared_p4_ids = 2;      // this role and others may write these
      PacketFilter packet_in_filter = 3;      // PacketIns whose metadata matches (unset: all)
      bool receives_packet_ins = 4;
      bool can_push_pipeline = 5;
    }

Rules enforced here (the server applies them):
- no ``role.config`` (and the default role "") = full pipeline access, as the spec says;
- a restricted role may write only entities whose P4 id it lists (a direct counter / meter
  entry by its table's id); others get PERMISSION_DENIED per update; PRE entries (no P4 id)
  need full access;
- its Reads return only its entities (wildcards are filtered, a named other entity is
  PERMISSION_DENIED);
- SetForwardingPipelineConfig needs ``can_push_pipeline``;
- PacketIns go to the primary of every role that takes them (full access, or
  ``receives_packet_ins`` and a matching filter); DigestLists to full-access roles and roles
  listing the digest id;
- an id exclusive to one role may not be listed by another role (INVALID_ARGUMENT when the
  second role's primary arbitrates); any other ``Any`` type is INVALID_ARGUMENT ("does not
  match the out-of-band scheme").

The message class is built from a descriptor at import (no generated code to vendor); its wire
format is Stratum's.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from google.protobuf import any_pb2, descriptor_pb2, descriptor_pool, message_factory
from p4.v1 import p4runtime_pb2

from p4sim.p4rt.errors import P4RTError

ROLE_CONFIG_TYPE = "stratum.P4RoleConfig"


def _build_message_class():
    pool = descriptor_pool.Default()
    try:
        desc = pool.FindMessageTypeByName(ROLE_CONFIG_TYPE)
    except KeyError:
        fdp = descriptor_pb2.FileDescriptorProto(
            name="stratum/public/proto/p4_role_config.proto", package="stratum", syntax="proto3")
        msg = fdp.message_type.add(name="P4RoleConfig")
        flt = msg.nested_type.add(name="PacketFilter")
        F = descriptor_pb2.FieldDescriptorProto
        flt.field.add(name="metadata_id", number=1, type=F.TYPE_UINT32, label=F.LABEL_OPTIONAL)
        flt.field.add(name="value", number=2, type=F.TYPE_BYTES, label=F.LABEL_OPTIONAL)
        msg.field.add(name="exclusive_p4_ids", number=1, type=F.TYPE_UINT32, label=F.LABEL_REPEATED)
        msg.field.add(name="shared_p4_ids", number=2, type=F.TYPE_UINT32, label=F.LABEL_REPEATED)
        msg.field.add(name="packet_in_filter", number=3, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                      type_name=".stratum.P4RoleConfig.PacketFilter")
        msg.field.add(name="receives_packet_ins", number=4, type=F.TYPE_BOOL, label=F.LABEL_OPTIONAL)
        msg.field.add(name="can_push_pipeline", number=5, type=F.TYPE_BOOL, label=F.LABEL_OPTIONAL)
        pool.Add(fdp)
        desc = pool.FindMessageTypeByName(ROLE_CONFIG_TYPE)
    return message_factory.GetMessageClass(desc)


P4RoleConfig = _build_message_class()


@dataclass(frozen=True)
class RolePolicy:
    """What one role may do; ``FULL`` when it sent no config."""

    full: bool
    exclusive: frozenset[int] = frozenset()
    shared: frozenset[int] = frozenset()
    packet_in_filter: Optional[tuple[int, bytes]] = None
    receives_packet_ins: bool = True
    can_push_pipeline: bool = True

    @property
    def ids(self) -> frozenset[int]:
        return self.exclusive | self.shared

    def may_write(self, p4_id: Optional[int]) -> bool:
        return self.full or (p4_id is not None and p4_id in self.ids)

    def takes_packet_in(self, metadata: dict[int, bytes]) -> bool:
        if self.full:
            return True
        if not self.receives_packet_ins:
            return False
        if self.packet_in_filter is None:
            return True
        mid, value = self.packet_in_filter
        return metadata.get(mid, b"").lstrip(b"\0") == value.lstrip(b"\0")


FULL = RolePolicy(full=True)


def role_config_any(exclusive=(), shared=(), packet_in_filter: Optional[tuple[int, bytes]] = None,
                    receives_packet_ins: bool = False, can_push_pipeline: bool = False) -> any_pb2.Any:
    """A packed P4RoleConfig (for clients and tests)."""
    msg = P4RoleConfig(exclusive_p4_ids=list(exclusive), shared_p4_ids=list(shared),
                       receives_packet_ins=receives_packet_ins, can_push_pipeline=can_push_pipeline)
    if packet_in_filter is not None:
        msg.packet_in_filter.metadata_id, msg.packet_in_filter.value = packet_in_filter
    out = any_pb2.Any()
    out.Pack(msg)
    return out


def parse_role(update: p4runtime_pb2.MasterArbitrationUpdate) -> tuple[str, RolePolicy]:
    """(role name, policy) of an arbitration message; INVALID_ARGUMENT for another scheme."""
    if not update.HasField("role"):
        return "", FULL
    role = update.role
    if role.id and not role.name:
        raise P4RTError("INVALID_ARGUMENT", "Role.id is deprecated since P4Runtime 1.4: name the role")
    if not role.HasField("config"):
        return role.name, FULL
    if not role.name:
        raise P4RTError("INVALID_ARGUMENT", "the default role (no name) cannot carry a role.config")
    cfg = role.config
    if cfg.type_url.rpartition("/")[2] != ROLE_CONFIG_TYPE:
        raise P4RTError("INVALID_ARGUMENT", f"role.config of type {cfg.type_url!r}: this server "
                        f"takes {ROLE_CONFIG_TYPE} (Stratum's scheme)")
    msg = P4RoleConfig()
    try:
        msg.ParseFromString(cfg.value)
    except Exception as err:  # noqa: BLE001 - any decode failure is the client's bytes
        raise P4RTError("INVALID_ARGUMENT", f"role.config does not decode: {err}") from None
    excl, shared = frozenset(msg.exclusive_p4_ids), frozenset(msg.shared_p4_ids)
    if excl & shared:
        raise P4RTError("INVALID_ARGUMENT",
                        f"role {role.name!r}: ids both exclusive and shared: {sorted(excl & shared)[:5]}")
    flt = None
    if msg.HasField("packet_in_filter"):
        flt = (msg.packet_in_filter.metadata_id, bytes(msg.packet_in_filter.value))
    return role.name, RolePolicy(False, excl, shared, flt, msg.receives_packet_ins, msg.can_push_pipeline)


def check_compatible(role: str, policy: RolePolicy, others: dict[str, RolePolicy]) -> None:
    """An id exclusive to one role may appear in no other role's lists."""
    for other, theirs in others.items():
        if other == role or theirs.full or policy.full:
            continue
        clash = (policy.exclusive & theirs.ids) | (theirs.exclusive & policy.ids)
        if clash:
            raise P4RTError("INVALID_ARGUMENT", f"role {role!r} claims ids {sorted(clash)[:5]} that "
                            f"are exclusive to role {other!r} (or the reverse)")


def entity_p4_id(entity: p4runtime_pb2.Entity) -> Optional[int]:
    """The P4Info id that a role config lists for this entity (None: PRE, no P4 id)."""
    kind = entity.WhichOneof("entity")
    if kind == "table_entry":
        return entity.table_entry.table_id
    if kind == "counter_entry":
        return entity.counter_entry.counter_id
    if kind == "direct_counter_entry":
        return entity.direct_counter_entry.table_entry.table_id
    if kind == "meter_entry":
        return entity.meter_entry.meter_id
    if kind == "direct_meter_entry":
        return entity.direct_meter_entry.table_entry.table_id
    if kind == "register_entry":
        return entity.register_entry.register_id
    if kind == "digest_entry":
        return entity.digest_entry.digest_id
    if kind == "action_profile_member":
        return entity.action_profile_member.action_profile_id
    if kind == "action_profile_group":
        return entity.action_profile_group.action_profile_id
    if kind == "value_set_entry":
        return entity.value_set_entry.value_set_id
    if kind == "extern_entry":
        return entity.extern_entry.extern_id
    return None
