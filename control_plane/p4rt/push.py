"""A whole fabric: every switch reconciled at once, with one progress line and a result per switch."""
from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional, TextIO

from .diff import Diff, SwitchState, compute_diff
from .errors import P4RuntimePushError, ReconcileError, WriteError
from .program_files import ProgramFiles
from .session import DEFAULT_BATCH, SwitchSession

@dataclass
class SwitchResult:
    """One switch's outcome in a fabric push."""

    switch: str
    address: str
    diff: Optional[Diff] = None
    seconds: float = 0.0
    pipeline_pushed: bool = False
    error: Optional[str] = None
    write_errors: list[WriteError] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class FabricPush:
    results: dict[str, SwitchResult]
    seconds: float
    dry_run: bool = False

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.results.values())

    @property
    def written(self) -> int:
        return sum(r.diff.written for r in self.results.values() if r.diff is not None)

    @property
    def in_sync(self) -> bool:
        return self.ok and all(r.diff is not None and r.diff.empty for r in self.results.values())


class _Progress:
    """`push lab: 3/6 switches, 120 writes, 1 failed, 0.8s` on one rewritten stderr line."""

    def __init__(self, label: str, total: int, stream: Optional[TextIO]) -> None:
        self.label, self.total, self.stream = label, total, stream
        self.done = self.writes = self.failed = 0
        self.started = time.perf_counter()
        self.lock = threading.Lock()
        self.tty = bool(stream is not None and getattr(stream, "isatty", lambda: False)())

    def update(self, result: SwitchResult) -> None:
        with self.lock:
            self.done += 1
            self.writes += result.diff.written if result.diff else 0
            self.failed += 0 if result.ok else 1
            self._show(last=result.switch)

    def _show(self, last: str = "") -> None:
        if self.stream is None:
            return
        bar = "#" * self.done + "." * (self.total - self.done)
        text = (f"{self.label}: [{bar}] {self.done}/{self.total} switches, {self.writes} writes"
                + (f", {self.failed} failed" if self.failed else "")
                + f", {time.perf_counter() - self.started:.1f}s" + (f" (last: {last})" if last else ""))
        self.stream.write(("\r\x1b[K" + text) if self.tty else text + "\n")
        if self.tty and self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


def push_fabric(fabric: Any, documents: Mapping[str, Mapping[str, Any]], program: Optional[ProgramFiles] = None,
                addresses: Optional[Mapping[str, str]] = None, concurrency: int = 16, dry_run: bool = False,
                election_id: tuple[int, int] = (0, 1), switches: Optional[Iterable[str]] = None,
                progress: Optional[TextIO] | str = "stderr", batch_size: int = DEFAULT_BATCH,
                label: str = "push", timeout: float = 10.0,
                managed_tables: Optional[Iterable[str]] = None,
                sessions: Optional[Mapping[str, "SwitchSession"]] = None) -> FabricPush:
    """Reconcile every switch (a thread each, up to `concurrency` at once).

    `program` given: the pipeline is pushed where the switch does not already run it; None: the
    switch's own P4Info is used (it must have a pipeline).  `addresses` overrides the fabric's
    `p4runtime` addresses per switch.  A failing switch does not stop the others; its
    `SwitchResult.error` says why.  `sessions`: already connected sessions to use (and leave
    open) for some switches -- a second primary connection with the same election id would be
    refused.
    `managed_tables` limits deletes to those tables (see `compute_diff`), for partial documents.
    `progress`: a stream for the progress line ("stderr" = sys.stderr at call time, None = quiet).
    """
    managed = list(managed_tables) if managed_tables is not None else None
    if progress == "stderr":  # resolved per call, so a replaced sys.stderr (tests, the demo) is honoured
        progress = sys.stderr
    names = list(switches) if switches is not None else list(documents)
    for name in names:
        if name not in documents:
            raise KeyError(f"no document for switch {name!r}")
    bar = _Progress(f"{label} {getattr(fabric, 'name', '')}".strip(), len(names), progress)
    started = time.perf_counter()

    def one(name: str) -> SwitchResult:
        model = fabric.switches[name]
        address = (addresses or {}).get(name, model.p4runtime)
        result = SwitchResult(name, address)
        t0 = time.perf_counter()
        given = (sessions or {}).get(name)
        session = given or SwitchSession(address, model.device_id, election_id=election_id, name=name,
                                         batch_size=batch_size, timeout=timeout)
        try:
            if given is None:
                session.connect()
            if program is not None and not dry_run:
                result.pipeline_pushed = session.ensure_pipeline(program.p4info, program.device_config)
            elif program is not None:
                have, cookie = session.current_pipeline()
                if have is None or cookie != program.cookie:
                    result.pipeline_pushed = True  # would push: diff against an empty switch
                    session.use_p4info(program.p4info)
            if dry_run and result.pipeline_pushed:
                result.diff = compute_diff(name, documents[name], SwitchState(), managed)
                result.diff.dry_run = True
            else:
                result.diff = session.reconcile(documents[name], dry_run=dry_run, managed_tables=managed)
        except ReconcileError as exc:
            result.diff, result.write_errors, result.error = exc.diff, exc.errors, str(exc)
        except P4RuntimePushError as exc:
            result.error = str(exc)
        except Exception as exc:  # noqa: BLE001 - one switch's bug must not hide the others' results
            result.error = f"switch {name}: {type(exc).__name__}: {exc}"
        finally:
            result.seconds = time.perf_counter() - t0  # before the close: that only tears down gRPC
            if given is None:
                session.close()
        bar.update(result)
        return result

    with ThreadPoolExecutor(max_workers=max(1, min(concurrency, len(names) or 1)),
                            thread_name_prefix="stellar-push") as pool:
        results = list(pool.map(one, names))
    return FabricPush({r.switch: r for r in results}, time.perf_counter() - started, dry_run)
