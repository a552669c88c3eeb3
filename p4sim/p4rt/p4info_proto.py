"""A program's P4Info as the protobuf message P4Runtime serves.

``p4sim.Program.p4info`` may already be a ``P4Info`` message, its binary encoding or its text
format (what a P4Info file holds); the server, ``p4sim run`` and the embedded switch all install a
pipeline from the message, so they share this one conversion.
"""
from __future__ import annotations

from typing import Any

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2


def p4info_message(p4info: Any) -> p4info_pb2.P4Info:
    """``p4info`` as a ``P4Info`` message (returned as is when it is one already)."""
    if isinstance(p4info, p4info_pb2.P4Info):
        return p4info
    msg = p4info_pb2.P4Info()
    if isinstance(p4info, bytes):
        msg.ParseFromString(p4info)
    elif isinstance(p4info, str):
        text_format.Merge(p4info, msg)
    else:
        msg.ParseFromString(p4info.SerializeToString())
    return msg
