"""StreamChannel client arbitration: who is primary for each role.

P4Runtime lets several controllers connect; per role the live client with the highest election
id is the primary and is the only one allowed to write, push a pipeline or send packets out.
Backups may read.  Each role also has a policy (``roles.RolePolicy``): the ``role.config`` its
primary sent most recently, remembered per role as the spec asks.  This module only keeps that
bookkeeping; the server decides what to send and what to refuse.
"""
from __future__ import annotations

import itertools
import queue
import threading
from dataclasses import dataclass, field

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from p4sim.p4rt.errors import P4RTError
from p4sim.p4rt.roles import FULL, RolePolicy, check_compatible, parse_role


def election_int(eid: p4runtime_pb2.Uint128) -> int:
    return (eid.high << 64) | eid.low


@dataclass(eq=False)
class StreamClient:
    """One open StreamChannel.  ``outbox`` feeds the response generator; None ends it."""

    id: int
    outbox: "queue.Queue[p4runtime_pb2.StreamMessageResponse | None]" = field(
        default_factory=queue.Queue
    )
    role: str | None = None  # None until the first arbitration message
    device_id: int | None = None
    election_id: int | None = None  # None: no election id given (a permanent backup)

    def send(self, msg: p4runtime_pb2.StreamMessageResponse) -> None:
        self.outbox.put(msg)


class Arbiter:
    """Per-role primary election over the live streams."""

    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self._lock = threading.Lock()
        self._clients: list[StreamClient] = []
        self._ids = itertools.count(1)
        self._policies: dict[str, RolePolicy] = {}
        self._configs: dict[str, p4runtime_pb2.Role] = {}  # the role message, for notifications

    def new_client(self) -> StreamClient:
        client = StreamClient(next(self._ids))
        with self._lock:
            self._clients.append(client)
        return client

    def _primary_locked(self, role: str) -> StreamClient | None:
        candidates = [
            c for c in self._clients if c.role == role and c.election_id is not None
        ]
        return max(candidates, key=lambda c: c.election_id, default=None)

    def primary(self, role: str) -> StreamClient | None:
        with self._lock:
            return self._primary_locked(role)

    def policy(self, role: str) -> RolePolicy:
        """What ``role`` may do: its primary's last role.config (full access without one)."""
        with self._lock:
            return self._policies.get(role, FULL)

    def primaries(self) -> list[tuple[StreamClient, RolePolicy]]:
        """The primary of every role that has one, with the role's policy."""
        with self._lock:
            roles = {c.role for c in self._clients if c.role is not None}
            out = []
            for role in sorted(roles):
                p = self._primary_locked(role)
                if p is not None:
                    out.append((p, self._policies.get(role, FULL)))
            return out

    def is_primary(self, role: str, election: p4runtime_pb2.Uint128 | None) -> bool:
        """Whether a request carrying ``election`` comes from the current primary of ``role``."""
        if election is None:
            return False
        with self._lock:
            primary = self._primary_locked(role)
            return primary is not None and primary.election_id == election_int(election)

    def _status_for(self, client: StreamClient, primary: StreamClient | None) -> int:
        if primary is None:
            return code_pb2.NOT_FOUND
        return code_pb2.OK if primary is client else code_pb2.ALREADY_EXISTS

    def _notify_locked(self, client: StreamClient, role: str) -> None:
        primary = self._primary_locked(role)
        msg = p4runtime_pb2.StreamMessageResponse()
        arb = msg.arbitration
        arb.device_id = self.device_id
        if role:
            if role in self._configs:
                arb.role.CopyFrom(self._configs[role])
            else:
                arb.role.name = role
        if primary is not None:
            arb.election_id.high = primary.election_id >> 64
            arb.election_id.low = primary.election_id & ((1 << 64) - 1)
        code = self._status_for(client, primary)
        arb.status.code = code
        arb.status.message = {
            code_pb2.OK: "primary",
            code_pb2.ALREADY_EXISTS: "backup: a client with a higher election id is primary",
            code_pb2.NOT_FOUND: "backup: no primary for this role",
        }[code]
        client.send(msg)

    def arbitrate(
        self, client: StreamClient, update: p4runtime_pb2.MasterArbitrationUpdate
    ) -> None:
        """Handle a MasterArbitrationUpdate (spec "Rules for Handling MasterArbitrationUpdate");
        raises P4RTError to end the stream with that status."""
        if client.role is None and update.device_id != self.device_id:
            raise P4RTError("NOT_FOUND", f"unknown device id {update.device_id}")
        if client.role is not None and update.device_id != client.device_id:
            raise P4RTError("FAILED_PRECONDITION", f"this stream arbitrated for device "
                            f"{client.device_id}, not {update.device_id}: open another stream")
        role, policy = parse_role(update)  # INVALID_ARGUMENT for a config of another scheme
        election = election_int(update.election_id) if update.HasField("election_id") else None
        with self._lock:
            if client.role is not None and client.role != role:
                raise P4RTError("FAILED_PRECONDITION", f"this stream has role {client.role!r}: "
                                "to change role, close it and open another stream")
            if election is not None and any(
                c is not client and c.role == role and c.election_id == election
                for c in self._clients
            ):
                raise P4RTError(
                    "INVALID_ARGUMENT", f"election id {election} already used by another client"
                )
            others = [c.election_id for c in self._clients
                      if c is not client and c.role == role and c.election_id is not None]
            becomes_primary = election is not None and all(election > e for e in others)
            if becomes_primary:
                # Checked before anything changes: a refused config leaves the role as it was.
                check_compatible(role, policy, self._policies)
            old_primary = self._primary_locked(role)
            client.role = role
            client.device_id = update.device_id
            client.election_id = election
            config_changed = False
            if becomes_primary:
                config_changed = self._policies.get(role, FULL) != policy
                self._policies[role] = policy
                if update.HasField("role") and update.role.HasField("config"):
                    self._configs[role] = p4runtime_pb2.Role()
                    self._configs[role].CopyFrom(update.role)
                else:
                    self._configs.pop(role, None)
            new_primary = self._primary_locked(role)
            if new_primary is not old_primary or config_changed:
                for c in self._clients:
                    if c.role == role:
                        self._notify_locked(c, role)
            else:
                self._notify_locked(client, role)

    def remove(self, client: StreamClient) -> None:
        """A stream closed: drop it and, if it was primary, tell the others who is now."""
        with self._lock:
            if client not in self._clients:
                return
            role = client.role
            was_primary = role is not None and self._primary_locked(role) is client
            self._clients.remove(client)
            if was_primary:
                for c in self._clients:
                    if c.role == role:
                        self._notify_locked(c, role)
