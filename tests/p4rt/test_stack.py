"""The P4Runtime stack the project pins (issue 11): compiled protobuf, one set of message classes.

Why these checks: with pure-Python protobuf every P4Runtime message on both sides is encoded in
Python (the old stack's cost); and a second copy of the P4Runtime protos in the descriptor pool
would either fail to import or give the server and the controller different classes.
"""
from __future__ import annotations

from google.protobuf.internal import api_implementation


def test_protobuf_runs_on_the_compiled_upb_backend() -> None:
    assert api_implementation.Type() == "upb"


def test_canonical_modules_are_finsys_modules() -> None:
    from finsy.proto import p4i, p4r, p4r_grpc, rpc_status
    from google.rpc import status_pb2
    from p4.config.v1 import p4info_pb2
    from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

    assert p4runtime_pb2.WriteRequest is p4r.WriteRequest
    assert p4info_pb2.P4Info is p4i.P4Info
    assert p4runtime_pb2_grpc.P4RuntimeStub is p4r_grpc.P4RuntimeStub
    # googleapis-common-protos' google.rpc.Status and finsy's are one class (same descriptor)
    assert status_pb2.Status is rpc_status.Status


def test_a_different_status_proto_would_be_refused() -> None:
    """Negative control for the pin on googleapis-common-protos: the pool refuses a second,
    different google/rpc/status.proto, which is what a mismatched version would do on import."""
    import pytest
    from google.protobuf import descriptor_pb2, descriptor_pool
    from google.rpc import status_pb2

    proto = descriptor_pb2.FileDescriptorProto()
    status_pb2.DESCRIPTOR.CopyToProto(proto)
    proto.options.cc_enable_arenas = not proto.options.cc_enable_arenas
    with pytest.raises(TypeError, match="duplicate file name"):
        descriptor_pool.Default().AddSerializedFile(proto.SerializeToString())
