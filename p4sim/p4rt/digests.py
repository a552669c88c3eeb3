"""Digest delivery: DigestLists for configured digests, with list ids, acks and de-duplication.

Following the P4Runtime spec (and BMv2): digests of a digest id are only sent once the
controller configured it with a DigestEntry; a digest whose data equals one in a not yet
acknowledged list is suppressed until that list is acked or its ack timeout passes, so a
learning program does not flood the controller with the same MAC while it is being installed.
Lists are sent as soon as the switch produces digests (that is within any ``max_timeout_ns``).
Ack timeouts use the wall clock: acks are a control-plane conversation, not data-plane time.
"""
from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field

from p4.v1 import p4data_pb2, p4runtime_pb2

from p4sim.p4rt.codec import encode
from p4sim.p4rt.pipeline import Pipeline


@dataclass
class _Pending:
    digest_id: int
    keys: list[tuple]
    deadline: float  # monotonic seconds; inf when the config has no ack timeout


@dataclass
class DigestEngine:
    pipe: Pipeline
    _list_ids: itertools.count = field(default_factory=lambda: itertools.count(1))
    _pending: dict[tuple[int, int], _Pending] = field(default_factory=dict)
    unconfigured_dropped: int = 0
    duplicates_suppressed: int = 0
    # The switch thread offers digests while stream threads ack them.
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _outstanding(self, digest_id: int) -> set[tuple]:
        now = time.monotonic()
        for k in [k for k, p in self._pending.items() if p.deadline <= now]:
            del self._pending[k]
        out: set[tuple] = set()
        for p in self._pending.values():
            if p.digest_id == digest_id:
                out.update(p.keys)
        return out

    def lists_for(self, digests) -> list[p4runtime_pb2.DigestList]:
        """Turn core ``Digest`` records into DigestLists ready to send (maybe none)."""
        with self._lock:
            return self._lists_for_locked(digests)

    def _lists_for_locked(self, digests) -> list[p4runtime_pb2.DigestList]:
        by_id: dict[int, list] = {}
        for d in digests:
            info = self.pipe.index.digest_by_name.get(d.name)
            if info is None or info.id not in self.pipe.digest_configs:
                self.unconfigured_dropped += 1
                continue
            by_id.setdefault(info.id, []).append(d)
        out = []
        for digest_id, items in by_id.items():
            config = self.pipe.digest_configs[digest_id]
            seen = self._outstanding(digest_id)
            fresh = []
            for d in items:
                key = tuple(v for _, _, v in d.fields)
                if key in seen:
                    self.duplicates_suppressed += 1
                    continue
                seen.add(key)
                fresh.append((key, d))
            size = config.max_list_size if config.max_list_size > 0 else max(1, len(fresh))
            for start in range(0, len(fresh), size):
                chunk = fresh[start:start + size]
                list_id = next(self._list_ids)
                msg = p4runtime_pb2.DigestList(digest_id=digest_id, list_id=list_id)
                msg.timestamp = time.time_ns()
                for _, d in chunk:
                    data = p4data_pb2.P4Data()
                    for _, width, value in d.fields:
                        data.struct.members.add(bitstring=encode(value, width))
                    msg.data.append(data)
                timeout = config.ack_timeout_ns / 1e9 if config.ack_timeout_ns else float("inf")
                self._pending[(digest_id, list_id)] = _Pending(
                    digest_id, [k for k, _ in chunk], time.monotonic() + timeout
                )
                out.append(msg)
        return out

    def ack(self, digest_id: int, list_id: int) -> bool:
        """Acknowledge a list; returns False if no such list is pending."""
        with self._lock:
            return self._pending.pop((digest_id, list_id), None) is not None
