"""``Switch.send_many`` on the native backend: a list of frames through the pipeline in a few C
calls (p4n_batch.c), with exactly the outputs, order, counters, registers and digests of one
``Switch.send`` per frame.

Why: one ``send`` costs about 2.7 us on the L3 example, of which the C pipeline is about a
quarter; the rest is the Python of the call chain (send, the switch's checks, two cffi calls,
the output bytes and tuple).  Here C runs frame after frame while each takes the path that needs
nothing of Python (``NativePipeline.fast_arrive``'s idle unlimited-rate queue), and writes the
outputs into one buffer; Python turns them into (port, bytes) once per C call.  The first frame
that needs Python (a parser error, an assert, multicast, a queue that is not idle with an
unlimited rate, a port down, an invalid priority) stops the loop after its ingress; the switch's
own code finishes it (``NativePipeline.ingress_done``, as ``fast_arrive`` would), then C resumes
at the next frame.  So order and state are those of the per-frame path by construction.

Which (egress port, priority) pairs take the fast path is known only to the traffic manager:
C reads a 512 x 8 table that starts empty and is filled after a frame to that pair stopped and
``TrafficManager.idle_unlimited`` said yes.  Only Python changes the traffic manager, and only at
a stop, so after each stop every pair in the table is checked again.
"""
from __future__ import annotations

from itertools import accumulate
from pathlib import Path
from typing import Any, Sequence

SOURCE = (Path(__file__).resolve().parent / "p4n_batch.c").read_text()
CDEF = """
int64_t p4n_batch(inst_t *S, const char *buf, const int64_t *ends, int64_t first, int64_t n, uint64_t port,
                  double now, double wall_t0, const uint8_t *fast, char *out, int64_t cap, int64_t room,
                  int64_t *oend, int64_t *oport, int64_t *res, double *tnow);
"""

CHUNK = 256  # frames per joined input buffer (and at most outputs per C call)
OUT_BYTES = 1 << 18  # the output buffer; a C call stops when the next frame might not fit

# res[5]: why p4n_batch stopped
DONE, INGRESS_DONE, ASSERTED, OUT_FULL = 0, 1, 2, 3


def with_batch(arch: str, cdef: str, source: str) -> tuple[str, str, bool]:
    """The generated program's cdef and source with p4n_batch added, and whether it was: it
    loops the v1model whole-packet functions (p4n_fast_ingress/p4n_fast_egress), so only a
    v1model program that has them gets it."""
    if arch != "v1model" or "p4n_fast_ingress(" not in source or "p4n_fast_egress(" not in source:
        return cdef, source, False
    return cdef + CDEF, source + SOURCE, True


class Batch:
    """One pipeline's batch runner: its buffers and its table of fast (port, priority) pairs."""

    def __init__(self, pipe: Any) -> None:
        ffi = pipe._ffi
        self.pipe, self.ffi = pipe, ffi
        self.call = pipe._lib.p4n_batch
        self.room = pipe._hdr_room
        self.out = ffi.new("char[]", OUT_BYTES)
        self.chunk = CHUNK  # frames per C call: at most this many outputs, the size of oend/oport
        self.oend = ffi.new("int64_t[]", CHUNK)
        self.oport = ffi.new("int64_t[]", CHUNK)
        self.res = ffi.new("int64_t[8]")
        self.tnow = ffi.new("double *")
        self.fast = ffi.new("uint8_t[]", 512 * 8)
        self.learned: set[int] = set()

    def run(self, sw: Any, frames: Sequence[bytes], port: int, now: float, wall_t0: float) -> int:
        """Frames through the pipeline, arriving on ``port`` at ``now`` (or, with ``wall_t0`` >= 0,
        at the wall clock read per frame).  Returns how many ran: fewer than all only on the wall
        clock once a queue holds a packet, when the caller's per-frame ``send`` (which serves the
        queues between arrivals) must run the rest."""
        pipe, ffi, res, tnow = self.pipe, self.ffi, self.res, self.tnow
        stats, S, wall = sw.stats, pipe.S, wall_t0 >= 0
        self._forget()
        pipe.ctx.now = now
        pipe._cb.live_now = tnow if wall else None  # digests from C take the frame's time
        try:
            step = self.chunk
            for base in range(0, len(frames), step):
                chunk = frames[base:base + step]
                buf = b"".join(chunk)
                ends = ffi.new("int64_t[]", list(accumulate(map(len, chunk))))
                i, m = 0, len(chunk)
                while i < m:
                    if pipe.dirty_tables:
                        pipe._sync()
                    j = self.call(S, buf, ends, i, m, port, now, wall_t0, self.fast, self.out, len(self.out),
                                  self.room, self.oend, self.oport, res, tnow)
                    why, nout, drops = res[5], res[6], res[7]
                    if nout:
                        self._emit(sw, nout)
                    stats["received"] += j - i
                    if drops:
                        stats["dropped"] += drops
                    if why == DONE:
                        break
                    if why == OUT_FULL:
                        if j == i:  # one frame larger than the whole buffer
                            self.out = ffi.new("char[]", 2 * (len(chunk[j]) + self.room))
                        i = j
                        continue
                    stats["received"] += 1
                    self._finish(sw, why, bytes(chunk[j]), tnow[0])
                    i = j + 1
                    if wall and sw.tm.busy:
                        return base + i
        finally:
            pipe._cb.live_now = None
        return len(frames)

    def _finish(self, sw: Any, why: int, data: bytes, t: float) -> None:
        """The stopped frame, by the switch's own code; then the traffic manager as ``send``
        leaves it, and the fast pairs checked again against it."""
        pipe = self.pipe
        if why == ASSERTED:
            pipe._assert_failed(sw)
        else:
            pipe.ctx.now = t
            pos, err, espec, grp, prio = self.ffi.unpack(self.res, 5)
            pipe.ingress_done(sw, data, t, pos, err, espec, grp, prio)
            if err == -2 and 0 <= espec < 512 and not grp and 0 <= prio < 8:
                self.learned.add(espec * 8 + prio)
        sw._run_until(t)
        for key in list(self.learned):
            espec, prio = divmod(key, 8)
            ok = (espec != sw.drop_port and espec not in sw._down and prio < sw.priority_queues
                  and sw.tm.idle_unlimited(espec, prio, t))
            self.fast[key] = ok
            if not ok:
                self.learned.discard(key)

    def _forget(self) -> None:
        """Every pair back to 'ask Python' (the traffic manager may have changed since)."""
        for key in self.learned:
            self.fast[key] = 0
        self.learned.clear()

    def _emit(self, sw: Any, k: int) -> None:
        """The ``k`` outputs C wrote, as ``Switch._emit`` records them (no ``on_output`` here)."""
        ffi = self.ffi
        ends = ffi.unpack(self.oend, k)
        sw.stats["transmitted"] += k
        if sw.buffer_output:  # a slice of a cffi buffer is one bytes copy of just those bytes
            starts = [0, *ends[:-1]]
            out = ffi.buffer(self.out, ends[-1])
            sw._out.extend(zip(ffi.unpack(self.oport, k), map(out.__getitem__, map(slice, starts, ends))))
