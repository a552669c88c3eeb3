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


# Status messages travel in gRPC *headers* (grpc-message, grpc-status-details-bin), and gRPC
# clients start refusing responses whose metadata exceeds 8 KiB by default (the "soft" limit):
# a long message (say a core error quoting generated code) or the details of a big failing batch
# would turn a clear refusal into RESOURCE_EXHAUSTED.
MAX_MESSAGE = 1000
MAX_UPDATE_MESSAGE = 200
MAX_DETAILS_BYTES = 6500


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 15] + " ...[truncated]"


class P4RTError(Exception):
    """A P4Runtime request the server refuses; ``code`` is a google.rpc.Code name."""

    def __init__(self, code: str, message: str) -> None:
        if code not in code_pb2.Code.keys():
            raise ValueError(f"not a google.rpc code: {code}")
        self.code = code
        message = _clip(message, MAX_MESSAGE)
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
    failed = [(i, r) for i, r in enumerate(results) if r is not None]
    summary = f"{len(failed)} of {len(results)} updates failed"
    if failed:
        i, first = failed[0]
        summary += f" (first: #{i} {first.code}: {_clip(first.message, MAX_UPDATE_MESSAGE)})"

    def build(with_messages: bool) -> bytes:
        status = status_pb2.Status(code=code_pb2.UNKNOWN, message=summary)
        for res in results:
            err = p4runtime_pb2.Error(canonical_code=code_pb2.OK if res is None else res.rpc_code)
            if res is not None and with_messages:
                err.message = _clip(res.message, MAX_UPDATE_MESSAGE)
            packed = any_pb2.Any()
            packed.Pack(err)
            status.details.append(packed)
        return status.SerializeToString()

    details = build(with_messages=True)
    if len(details) > MAX_DETAILS_BYTES:
        # Big batches: keep the per-update codes (the contract) and drop the texts.
        details = build(with_messages=False)
    # Beyond ~190 updates even bare codes (~40 bytes each) exceed the 8 KiB that a default gRPC
    # client accepts; they are still sent, as BMv2 does, because the spec promises one status
    # per update: such clients must raise grpc.max_metadata_size (p4sim's own client does).
    return summary, details
