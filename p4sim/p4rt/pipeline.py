"""One committed forwarding pipeline: its P4Info, the switch running it, and the P4Runtime state
the core does not keep itself (replication entries for read-back, digest configs, defaults).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Iterator

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from p4sim.errors import RuntimeApiError
from p4sim.p4rt.errors import P4RTError, from_runtime_error
from p4sim.p4rt.p4info_index import P4InfoIndex


@dataclass
class Pipeline:
    p4info: p4info_pb2.P4Info
    device_config: bytes
    cookie: int
    switch: Any  # p4sim.Switch (or a test double with the same API)
    index: P4InfoIndex = field(init=False)
    # The P4-declared default action of every table, for "MODIFY default entry with no action"
    # (the spec's reset to the original default).
    initial_defaults: dict[str, tuple[str, dict]] = field(default_factory=dict)
    mcast_groups: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    clone_sessions: dict[int, tuple[list[tuple[int, int]], int, int]] = field(default_factory=dict)
    digest_configs: dict[int, p4runtime_pb2.DigestEntry.Config] = field(default_factory=dict)
    # Opaque controller data of table entries (TableEntry.controller_metadata / .metadata),
    # which the spec has the server store and return unchanged; keyed by entry_key().
    entry_metadata: dict[tuple, tuple[int, bytes]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.index = P4InfoIndex(self.p4info)
        with self.core("reading default actions"):
            for table in self.index.tables.values():
                action, params = self.switch.get_default_action(table.name)
                self.initial_defaults[table.name] = (action, dict(params or {}))

    @staticmethod
    def entry_key(table: str, match: dict, priority: int | None) -> tuple:
        return (table, tuple(sorted(match.items())), priority or None)

    @contextlib.contextmanager
    def core(self, context: str = "") -> Iterator[Any]:
        """Run core calls under the switch lock, mapping its errors to P4Runtime codes."""
        try:
            with self.switch.lock:
                yield self.switch
        except RuntimeApiError as err:
            raise from_runtime_error(err, context) from err
        except P4RTError:
            raise
        except Exception as err:  # noqa: BLE001 - a core bug must not kill the server
            raise P4RTError("INTERNAL", f"{context}: {type(err).__name__}: {err}") from err
