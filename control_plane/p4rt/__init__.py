"""Push rendered entry documents to switches over P4Runtime and keep them in sync.

Modules, one job each (every public name is importable from ``control_plane.p4rt``):

* ``program_files`` -- ``ProgramFiles``: the P4Info and device config a pipeline push carries;
* ``codec``         -- ``EntryCodec``: document entries <-> P4Runtime TableEntry protos;
* ``diff``          -- ``compute_diff``, ``Diff``, ``Change``, ``SwitchState``: what to write, in
  which order;
* ``session``       -- ``SwitchSession`` (one switch), ``Transport`` (TLS, role), the event loop;
* ``push``          -- ``push_fabric``: every switch of a fabric at once;
* ``errors``        -- ``P4RuntimePushError``, ``ReconcileError``, ``WriteError``.

Reconcile = read-diff-write: read what a switch holds (wildcard table reads, the default
actions, meter configs and register cells the document manages, and -- for a document with
``clone_sessions`` -- every clone session by a wildcard PRE read), compare it with the document
by `render.entry_identity`, and write only the difference, in batches: deletes first (entries
whose identity the document no longer has), then modifies (same identity, other action or
params; defaults; meters; registers), then inserts -- except that a path set is inserted
before anything may point at it and deleted only after nothing does (`Diff.phases`).  A second reconcile of the same document
therefore writes nothing, and a restarted controller converges a switch instead of wiping it.

The client is finsy (`finsy.p4client.P4Client` for gRPC and the stream, `P4Schema` for P4Info by
name, finsy's entities for encoding and decoding); this module adds what finsy does not have:
documents, the diff and its write order, per-update error reporting by switch and entry, and a
synchronous face for the CLI and the pusher.  Every session's calls run on one asyncio loop
(`session.EventLoop`), so a fabric push or a controller delta has every switch's Write in flight at once.

Use::

    program = ProgramFiles.load("build/stellar.json", "build/stellar.p4info.txtpb")
    result = push_fabric(fabric, render_fabric(fabric).documents, program)   # all switches at once
    with SwitchSession("127.0.0.1:9501", device_id=1, name="leaf1") as s:    # one switch
        s.reconcile(document, dry_run=True).lines()                           # what would change
        s.modify_entries([path_set_entry_with_new_levels])                    # controller deltas
        s.read_counters(["StellarEgress.ecn.marks"], [9, 10])

Values are sent in canonical (shortest) bytes.  finsy checks them against the P4Info widths, so
a value that is too wide is refused before it is sent, with the code a switch gives it
(OUT_OF_RANGE) and named with switch and entry; the rest of the batch still goes.
"""
from .codec import EntryCodec
from .diff import (GROUP_KEY, REFERENCE_PARAM, REFERENCED_KEY, REFERENCED_TABLE, Change, Diff, SwitchState,
                   compute_diff, describe_clone_session, describe_entry)
from .errors import P4RuntimePushError, ReconcileError, WriteError
from .program_files import ProgramFiles
from .push import FabricPush, SwitchResult, push_fabric
from .session import (DEFAULT_BATCH, RPC_TIMEOUT_S, Entity, EventLoop, SwitchSession, Transport, Update,
                      set_default_transport)

__all__ = ["Change", "DEFAULT_BATCH", "Diff", "Entity", "EntryCodec", "EventLoop", "FabricPush", "GROUP_KEY",
           "P4RuntimePushError", "ProgramFiles", "REFERENCED_KEY", "REFERENCED_TABLE", "REFERENCE_PARAM",
           "RPC_TIMEOUT_S", "ReconcileError", "SwitchResult", "SwitchSession", "SwitchState", "Transport",
           "Update", "WriteError", "compute_diff", "describe_clone_session", "describe_entry", "push_fabric",
           "set_default_transport"]
