"""Tables of a native pipeline: the reference's ``Table`` keeps the entries (validation, P4Runtime
reads, const entries, defaults), and its lookup structure is loaded into C before the next
packet after any change.

Direct counters have one owner at a time: C while the table is unchanged (packets count them
there), Python from the moment the control plane touches the table until it is loaded again.
Touching a table first reads C's counts back into the entries, so nothing is lost either way.
"""
from __future__ import annotations

from typing import Any, Optional

from p4sim.runtime.tables import Table, TableEntry

EXACT, LPM, LIST = 0, 1, 2


class NativeTable(Table):
    """A ``Table`` whose packets are matched in C (``NativeLink`` connects it)."""

    link: Optional["NativeLink"] = None
    dirty = True

    def _touch(self) -> None:
        link = self.link
        if link is not None and not self.dirty:
            link.pull()
            self.dirty = True
            link.owner.dirty_tables.append(self)

    def _set_action(self, e: Any, info: Any, args: tuple, hit: bool) -> None:
        self._touch()
        super()._set_action(e, info, args, hit)

    def _index_add(self, e: Any) -> None:
        self._touch()
        super()._index_add(e)

    def _index_remove(self, e: Any) -> None:
        self._touch()
        super()._index_remove(e)

    def direct_counter(self, match: dict, priority: Optional[int]) -> list[int]:
        self._touch()  # the caller may write the returned list
        return super().direct_counter(match, priority)

    def direct_meter_set(self, match: dict, cfg: Optional[tuple], priority: Optional[int], now_us: float) -> None:
        self._touch()
        super().direct_meter_set(match, cfg, priority, now_us)

    def public_entries(self) -> list[TableEntry]:
        if self.link is not None and not self.dirty:
            self.link.pull()
        return super().public_entries()


class NativeLink:
    """Loads one table's entries into its C ``p4n_tbl_t`` and reads its counters back."""

    def __init__(self, owner: Any, table: NativeTable, spec: Any, ctbl: Any, ffi: Any, lib: Any) -> None:
        self.owner, self.table, self.spec, self.ctbl, self.ffi, self.lib = owner, table, spec, ctbl, ffi, lib
        self.slots: list[Any] = []
        self.aidx = {id(a): i for i, a in enumerate(spec.actions)}

    def pull(self) -> None:
        """C's direct counter values and direct meter buckets into the entries (slot 0 is the
        default entry)."""
        c = self.ctbl
        for s, e in enumerate(self.slots):
            if e.counter is not None:
                e.counter[0], e.counter[1] = int(c.cpk[s]), int(c.cby[s])
            if e.meter is not None:
                m = c.mtr[s]
                e.meter.tc, e.meter.tp, e.meter.last_us = m.tc, m.tp, m.last_us

    def push(self) -> None:
        t, nk, na = self.table, len(self.table.keys), self.spec.nargs
        if t.mode == "list":
            entries = list(t.sorted)
        elif t.mode == "lpm":
            entries = [e for _, _, d in t.levels for e in d.values()]
        else:
            entries = list(t.exact.values())
        slots = [t.default] + entries
        n = len(slots)
        act, args, va, vb, rng, lev, cpk, cby = [], [], [], [], [], [], [], []
        for e in slots:
            act.append(self.aidx[id(e.info.decl)] if e.info is not None else -1)
            args += list(e.args) + [0] * (na - len(e.args))
            c = e.counter or (0, 0)
            cpk.append(c[0])
            cby.append(c[1])
        mtr = []
        for e in slots:
            m, cfg = e.meter, e.meter.config if e.meter is not None else None
            mtr.append({"configured": int(cfg is not None), "tc": m.tc if m else 0.0, "tp": m.tp if m else 0.0,
                        "last_us": m.last_us if m else 0.0,
                        **({"cir": cfg.cir, "cburst": cfg.cburst, "pir": cfg.pir, "pburst": cfg.pburst} if cfg else {})})
        full = [(1 << w) - 1 for _, _, w in t.keys]
        lmask: list[int] = []
        level_of = {}
        if t.mode == "list":
            mode, nlev = LIST, 0
            for e in slots:
                a, b, r = [0] * nk, [0] * nk, [0] * nk
                for i, is_range, x, y in e.checks:
                    a[i], b[i], r[i] = x, y, int(is_range)
                va += a
                vb += b
                rng += r
            lev = [0] * n
        elif t.mode == "lpm":
            mode, nlev, li = LPM, len(t.levels), t.lpm_index
            for L, (_, m, d) in enumerate(t.levels):
                lm = list(full)
                lm[li] = m
                lmask += lm
                for e in d.values():
                    level_of[id(e)] = L
            for e in slots:
                vals = [0 if v is None else (v[0] if i == li else v) for i, v in enumerate(e.norm)] or [0] * nk
                va += vals + [0] * (nk - len(vals))
                lev.append(level_of.get(id(e), -1))
        else:
            mode, nlev = EXACT, 1
            lmask = list(full)
            for e in slots:
                vals = [int(v) for v in e.norm] or [0] * nk
                va += vals + [0] * (nk - len(vals))
                lev.append(0 if e is not t.default else -1)
        if mode != LIST:
            vb, rng = [0] * (n * nk), [0] * (n * nk)
        ffi = self.ffi

        def arr(kind: str, xs: list) -> Any:
            return ffi.new(f"{kind}[]", xs or [0])

        self.lib.p4n_tbl_load(self.ctbl, mode, n, nlev, arr("int32_t", act), arr("uint64_t", args),
                              arr("uint64_t", va), arr("uint64_t", vb), arr("uint8_t", rng), arr("int32_t", lev),
                              arr("uint64_t", lmask), arr("uint64_t", cpk), arr("uint64_t", cby),
                              ffi.new("p4n_meter_t[]", mtr))
        self.slots = slots
        t.dirty = False
