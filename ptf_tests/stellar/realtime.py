"""Real-time mode of the stellar suite's timing tests: the same scenarios on a wall clock.

On p4sim's virtual clock a timing test moves time itself (``advance_us``), so every queueing
delay is exact.  BMv2 (and ``p4sim run --clock wall``) has no such clock: time passes by
itself and this 2-core machine is shared, so the scheduler adds milliseconds of jitter to
every step.  The real-time mode makes that jitter small against what the test measures:

- **One scale factor.**  Every time the test talks about -- a queue's service time, the
  pushed timeouts, margins, ECN windows and thresholds -- is multiplied by the scale S (real
  µs per test µs; environment ``STELLAR_TIME_SCALE``, else ``DEFAULT_SCALE`` of the target):
  on BMv2 (S = 2000) the 100 kpps test queue becomes 50 pps (20 ms per packet), a 200 µs
  flowlet timeout 400 ms.  p4sim interprets the program in Python, a few ms per packet and
  per P4Runtime read on this shared machine, so its service time is longer (S = 5000, 50 ms)
  for the same margins against its own processing.  The switch's own
  controls slow the queue (``set_queue_rate`` through simple_switch_CLI/Thrift on BMv2, the
  side channel on p4sim), so the delays are real queueing delays of tens of milliseconds.
- **Waiting on what the switch shows, not on time.**  Where a virtual test advances the clock
  until something happened (the burst left, the backlog built), the real-time test polls the
  switch's P4Runtime counters (``telemetry.rx_port`` / ``tx_port``, which BMv2's P4Runtime
  reads -- registers it does not) until it did, bounded by a deadline that fails the test.
- **Margins.**  A verdict that depends on a delay compares it with a threshold at least one
  service time away, so a scheduling stall shorter than that cannot flip it; each test's
  docstring says which margin it relies on.

The one wait that is time itself is the traffic source's schedule (``pace_until``: a flow
that sends a round every 4 service times) and the settling of time-defined state between
tests (``settle``: readings older than the data plane's maximum age no longer count).
"""
from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable, Iterable, Mapping, Protocol, TypeVar

from p4.v1 import p4runtime_pb2



class StellarTest(Protocol):
    """What the real-time mode uses of its test (stellar_base.StellarTest, which imports this
    module: a protocol rather than an import keeps the two files free of a circle)."""
    target: Any
    p4rt: Any

    def fail(self, msg: str) -> None: ...

    def read_register(self, name: str, index: int) -> int: ...

T = TypeVar("T")

DEFAULT_SCALE = {"bmv2": 2000, "p4sim": 5000}
# The parameters (config.params, ecn.config) that are times: scaled with the queue.
TIME_SUFFIX = "_us"
RX, TX = "StellarIngress.telemetry.rx_port", "StellarEgress.telemetry.tx_port"
# How often a wait polls the switch: often against a service time (20 ms at the default
# scale), rarely enough that the reads (each a P4Runtime round trip) do not swamp the switch.
POLL_S = 0.005


class RealTime:
    """The wall-clock side of a StellarTest: scaled units, counter barriers, the source's pace."""

    def __init__(self, test: StellarTest, scale: int | None = None) -> None:
        if scale is None:
            scale = int(os.environ.get("STELLAR_TIME_SCALE", DEFAULT_SCALE.get(test.target.name, 5000)))
        if scale < 1:
            raise ValueError(f"STELLAR_TIME_SCALE={scale}: real µs per test µs, at least 1")
        self.t = test
        self.scale = scale

    # -- units -----------------------------------------------------------------------------------
    def us(self, test_us: int) -> int:
        """A test duration in the switch's real µs."""
        return test_us * self.scale

    def pps(self, test_pps: int) -> int:
        """A test queue rate as the real rate (the service time grows by ``scale``)."""
        return max(1, round(test_pps / self.scale))

    def seconds(self, test_us: float) -> float:
        return test_us * self.scale / 1e6

    def scale_params(self, params: Mapping[str, int]) -> dict[str, int]:
        """Every ``*_us`` parameter times ``scale``; counts and bytes unchanged (a window
        ``scale`` times longer at a rate ``scale`` times lower carries the same bytes)."""
        return {k: v * self.scale if k.endswith(TIME_SUFFIX) else v for k, v in params.items()}

    # -- the switch's counters -----------------------------------------------------------------
    def counts(self, counter: str, indices: Iterable[int]) -> dict[int, int]:
        """Packet counts of ``counter`` at ``indices``, in one P4Runtime read."""
        p4rt = self.t.p4rt
        cid = p4rt.object_id("counters", counter)
        entities = []
        for i in indices:
            ce = p4runtime_pb2.CounterEntry(counter_id=cid)
            ce.index.index = i
            entities.append(p4runtime_pb2.Entity(counter_entry=ce))
        return {e.counter_entry.index.index: e.counter_entry.data.packet_count
                for e in p4rt.read(*entities)}

    def received(self, port: int) -> int:
        """Packets the switch's ingress took in on ``port``."""
        return self.counts(RX, [port])[port]

    def departed(self, ports: Iterable[int]) -> int:
        """Packets the switch's egress sent on ``ports`` (summed)."""
        return sum(self.counts(TX, ports).values())

    def wait_until(self, what: str, probe: Callable[[], T], done: Callable[[T], bool],
                   timeout_s: float) -> T:
        """Poll ``probe()`` until ``done`` holds for its value; fail the test (saying ``what``
        and the last value) if it does not within ``timeout_s`` of wall time."""
        deadline = time.monotonic() + timeout_s
        while True:
            value = probe()
            if done(value):
                return value
            if time.monotonic() > deadline:
                self.t.fail(f"real time: {what} not seen within {timeout_s:.1f} s (last: {value})")
            threading.Event().wait(POLL_S)

    def wait_received(self, port: int, count: int, since: int) -> None:
        """Until the switch took in ``count`` packets on ``port`` since the count was ``since``."""
        self.wait_until(f"{count} packets into port {port}", lambda: self.received(port),
                        lambda n: n >= since + count, timeout_s=10 + 0.05 * count)

    def wait_departed(self, ports: Iterable[int], count: int, since: int, service_us: int = 0) -> None:
        """Until ``count`` packets left on ``ports`` since the sum was ``since``; the bound is
        every one of them one (real) ``service_us`` apart, twice over, plus 10 s."""
        ports = list(ports)
        self.wait_until(f"{count} departures from ports {ports}", lambda: self.departed(ports),
                        lambda n: n >= since + count,
                        timeout_s=10 + 2 * count * service_us / 1e6)

    # -- time itself -----------------------------------------------------------------------------
    @staticmethod
    def pace_until(deadline: float) -> None:
        """The traffic source's schedule: hold the next send until ``deadline`` (monotonic s).
        What the test then asserts never depends on how late this returns -- each test's
        docstring states the margin that covers a late round."""
        remaining = deadline - time.monotonic()
        if remaining > 0:
            threading.Event().wait(remaining)

    def settle(self, test_us: int) -> None:
        """Let ``test_us`` (scaled) of wall time pass so time-defined state of an earlier test
        -- a queue-delay reading within its maximum age, an open ECN window -- has expired:
        the condition is the passing of that age, so it is waited for as such."""
        self.pace_until(time.monotonic() + self.seconds(test_us))

    # -- state BMv2's P4Runtime does not read --------------------------------------------------
    def read_register(self, name: str, index: int) -> int:
        """A register cell: over P4Runtime, or the Thrift CLI on BMv2 (base.read_register)."""
        return self.t.read_register(name, index)
