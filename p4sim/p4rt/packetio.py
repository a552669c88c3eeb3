"""Packet-in / packet-out through the program's ``@controller_header`` headers.

The switch sees the controller as one more port (the CPU port).  A packet the pipeline sends
there starts with the ``packet_in`` header, whose fields become PacketIn metadata; a PacketOut's
metadata is packed into the ``packet_out`` header in front of its payload and injected on the
CPU port -- the same wire contract simple_switch_grpc implements.
"""
from __future__ import annotations

from p4.v1 import p4runtime_pb2

from p4sim.p4rt.codec import decode, encode, pack_fields, unpack_fields
from p4sim.p4rt.errors import P4RTError
from p4sim.p4rt.p4info_index import P4InfoIndex


def packet_in_message(index: P4InfoIndex, data: bytes) -> p4runtime_pb2.PacketIn:
    """Split a CPU-port packet into PacketIn metadata and payload."""
    msg = p4runtime_pb2.PacketIn()
    header = index.controller_headers.get("packet_in")
    if header is None or not header.fields:
        msg.payload = data
        return msg
    try:
        values, rest = unpack_fields(data, header.widths)
    except ValueError:
        # Too short to hold the header: hand it up whole rather than drop it silently.
        msg.payload = data
        return msg
    for f, v in zip(header.fields, values):
        msg.metadata.add(metadata_id=f.id, value=encode(v, f.bitwidth))
    msg.payload = rest
    return msg


def packet_out_bytes(index: P4InfoIndex, msg: p4runtime_pb2.PacketOut) -> bytes:
    """The bytes to inject on the CPU port for a PacketOut (header + payload)."""
    header = index.controller_headers.get("packet_out")
    if header is None or not header.fields:
        if len(msg.metadata):
            raise P4RTError("INVALID_ARGUMENT", "program has no packet_out header for metadata")
        return msg.payload
    by_id = {f.id: f for f in header.fields}
    values: dict[int, int] = {}
    for md in msg.metadata:
        f = by_id.get(md.metadata_id)
        if f is None:
            raise P4RTError("INVALID_ARGUMENT", f"packet_out has no metadata id {md.metadata_id}")
        if md.metadata_id in values:
            raise P4RTError("INVALID_ARGUMENT", f"packet_out metadata {f.name} given twice")
        values[md.metadata_id] = decode(md.value, f.bitwidth, f"packet_out metadata {f.name}")
    missing = [f.name for f in header.fields if f.id not in values]
    if missing:
        raise P4RTError("INVALID_ARGUMENT", f"packet_out metadata missing: {missing}")
    return pack_fields([(f.bitwidth, values[f.id]) for f in header.fields]) + msg.payload
