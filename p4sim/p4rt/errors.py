"""The one error type of the P4Runtime layer and its mapping onto gRPC / google.rpc codes.

Every check in the server raises ``P4RTError(code, message)`` with a *canonical code name*
(``"INVALID_ARGUMENT"``, ``"NOT_FOUND"`` ...).  Keeping the name (rather than a grpc enum) lets the
same exception become either a whole-RPC gRPC status or one ``p4.v1.Error`` inside a Write's
per-update error list, which is exactly the split the P4Runtime spec asks for.
"""
from __future__ import annotations

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

from p4sim.errors import RuntimeApiError


class P4RTError(Exception):
    """A P4Runtime request the server refuses; ``code`` is a google.rpc.Code name."""

    def __init__(self, code: str, message: str) -> None:
        if code not in code_pb2.Code.keys():
            raise ValueError(f"not a google.rpc code: {code}")
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")

    @property
    def grpc_code(self) -> grpc.StatusCode:
        return grpc.StatusCode[self.code]

    @property
    def rpc_code(self) -> int:
        return code_pb2.Code.Value(self.code)


def from_runtime_error(err: RuntimeApiError, context: str = "") -> P4RTError:
    """Turn the p4sim core's in-process API error into a P4Runtime error (same code name)."""
    code = err.code if err.code in code_pb2.Code.keys() else "UNKNOWN"
    msg = f"{context}: {err.message}" if context else err.message
    return P4RTError(code, msg)


def write_error_status(results: list[P4RTError | None]) -> tuple[str, bytes]:
    """Build the ``grpc-status-details-bin`` trailer of a Write with per-update failures.

    The P4Runtime spec: the RPC status is UNKNOWN and its details carry one ``p4.v1.Error`` per
    update of the batch, in order, with ``canonical_code`` OK for the updates that succeeded.
    Returns (summary message, serialized google.rpc.Status).
    """
    status = status_pb2.Status(code=code_pb2.UNKNOWN)
    failed = 0
    for res in results:
        err = p4runtime_pb2.Error()
        if res is None:
            err.canonical_code = code_pb2.OK
        else:
            failed += 1
            err.canonical_code = res.rpc_code
            err.message = res.message
        packed = any_pb2.Any()
        packed.Pack(err)
        status.details.append(packed)
    status.message = f"{failed} of {len(results)} updates failed"
    return status.message, status.SerializeToString()
