"""Match-action tables: entry validation (P4Runtime's rules) and fast lookup.

Lookup structure is chosen per table from its match kinds, because it dominates per-packet cost:

* all ``exact``            -> one dict from the key to the entry;
* one ``lpm`` + ``exact``  -> one dict per prefix length, tried longest first;
* anything else            -> entries sorted by priority (higher wins, then insertion order),
                              scanned with precomputed (mask, value) / (lo, hi) checks.
"""
from __future__ import annotations

import ipaddress
import itertools
import re
from dataclasses import dataclass
from typing import Any, Callable, Optional

from p4sim.errors import RuntimeApiError
from p4sim.frontend import ir
from p4sim.runtime.codegen import ActionInfo, TableInfo
from p4sim.runtime.externs import MeterConfig, TwoRateMeter, validate_meter_config
from p4sim.runtime.objects import scalar_width

_MAC = re.compile(r"^[0-9a-fA-F]{1,2}([:-][0-9a-fA-F]{1,2}){5}$")


def to_int(value: Any, width: int, what: str) -> int:
    """A control-plane value as an int that fits ``width`` bits.

    Accepts ints, big-endian bytes (P4Runtime's encoding, zero padding allowed), and strings:
    IPv4, IPv6, MAC (``aa:bb:cc:dd:ee:ff``), or a decimal/``0x`` number."""
    if isinstance(value, bool):
        v = int(value)
    elif isinstance(value, int):
        v = value
    elif isinstance(value, (bytes, bytearray)):
        if len(value) == 0:
            raise RuntimeApiError("INVALID_ARGUMENT", f"{what}: empty byte string")
        v = int.from_bytes(value, "big")
    elif isinstance(value, str):
        s = value.strip()
        try:
            if _MAC.match(s):
                v = int(s.replace("-", "").replace(":", "") if len(s) == 17 else
                        "".join(p.zfill(2) for p in re.split("[:-]", s)), 16)
            elif ":" in s:
                v = int(ipaddress.IPv6Address(s))
            elif s.count(".") == 3:
                v = int(ipaddress.IPv4Address(s))
            else:
                v = int(s, 0)
        except ValueError:
            raise RuntimeApiError("INVALID_ARGUMENT", f"{what}: cannot read {value!r} as a value") from None
    else:
        raise RuntimeApiError("INVALID_ARGUMENT", f"{what}: unsupported value type {type(value).__name__}")
    if v < 0:
        raise RuntimeApiError("OUT_OF_RANGE", f"{what}: negative value {v}")
    if v >> width:
        raise RuntimeApiError("OUT_OF_RANGE", f"{what}: value {v:#x} does not fit in {width} bits")
    return v


@dataclass
class TableEntry:
    """One entry as the control plane sees it (``Switch.table_entries``)."""

    match: dict[str, Any]
    action: str
    params: dict[str, int]
    priority: Optional[int]
    counter: Optional[tuple[int, int]]
    meter_config: Optional[MeterConfig]


class _Entry:
    __slots__ = ("ident", "norm", "priority", "info", "params", "fn", "args", "result", "counter", "meter",
                 "checks", "seq", "const", "dreg")


def _noop(F: Any, *args: Any) -> None:
    return None


class Table:
    """Runtime state of one table."""

    def __init__(self, info: TableInfo, key_fn: Callable, ctx: Any, action_fns: dict[str, Callable]) -> None:
        d = info.decl
        self.decl = d
        self.name = d.qualified_name
        self.ctx = ctx
        self.key_fn = key_fn
        self.keys = [(k.name, k.match_kind, scalar_width(k.expr.type)) for k in d.keys]
        for k in d.keys:
            if k.match_kind not in ("exact", "lpm", "ternary", "range", "optional"):
                raise RuntimeApiError("UNIMPLEMENTED", f"table {self.name}: match kind {k.match_kind} unsupported")
        kinds = [k for _, k, _ in self.keys]
        self.needs_priority = any(k in ("ternary", "range", "optional") for k in kinds)
        if all(k == "exact" for k in kinds):
            self.mode = "exact"
        elif kinds.count("lpm") == 1 and all(k in ("exact", "lpm") for k in kinds):
            self.mode = "lpm"
            self.lpm_index = kinds.index("lpm")
        else:
            self.mode = "list"
        self.capacity = d.size
        # TNA's DirectCounter/DirectMeter act only when the action calls them
        self.on_call = any(x is not None and x.extern in ("DirectCounter", "DirectMeter")
                           for x in (d.direct_counter, d.direct_meter)) or d.direct_register is not None
        dr = d.direct_register
        self.dreg_init = (int(dr.ctor_args[0]) if dr.ctor_args else 0) if dr is not None else None
        self.has_counter = d.direct_counter is not None
        self.has_meter = d.direct_meter is not None
        self.meter_kind = d.direct_meter.ctor_args[0] if self.has_meter and d.direct_meter.ctor_args else "packets"
        self.meter_key = id(d.direct_meter) if self.has_meter else None
        self.actions: dict[str, ActionInfo] = {}
        self.action_fns = action_fns  # this switch's generated functions (ActionInfo is shared)
        for a in info.actions:
            self.actions[a.decl.qualified_name] = a
            self.actions.setdefault(a.decl.name, a)
        self.in_list = {id(r.action) for r in d.actions}
        self.seq = itertools.count()
        self.entries: dict[Any, _Entry] = {}
        self.exact: dict[Any, _Entry] = {}
        self.levels: list[tuple[int, int, dict]] = []  # (prefix_len, mask, dict), longest first
        self.sorted: list[_Entry] = []
        self.default = self._make_default()
        self.initial_default = (self.default.info, self.default.args)
        self._install_const_entries()
        self.apply = self._build_apply()

    # ---------------------------------------------------------------- the per-packet path
    def _build_apply(self) -> Callable[[Any], tuple]:
        """The per-packet ``apply(F)``: one closure per lookup structure, each finding the entry
        (or the default), counting/metering it, running its action and returning its
        (hit, action id) result."""
        key_fn, X, table = self.key_fn, self.ctx, self
        counted, metered, meter_key = self.has_counter, self.has_meter, self.meter_key
        by_bytes = self.meter_kind == "bytes"

        def find_exact(F: Any) -> _Entry:
            return exact.get(key_fn(F)) or table.default

        def find_lpm1(F: Any) -> _Entry:
            k = key_fn(F)
            for _, m, d in levels:
                e = d.get(k & m)
                if e is not None:
                    return e
            return table.default

        def find_lpm(F: Any) -> _Entry:
            k = key_fn(F)
            for _, m, d in levels:
                e = d.get(k[:li] + (k[li] & m,) + k[li + 1:])
                if e is not None:
                    return e
            return table.default

        def find_list(F: Any) -> _Entry:
            k = key_fn(F)
            if single:
                k = (k,)
            for e in entries:
                for i, is_range, a, b in e.checks:
                    x = k[i]
                    if is_range:
                        if not a <= x <= b:
                            break
                    elif (x & a) != b:
                        break
                else:
                    return e
            return table.default

        exact, levels, entries = self.exact, self.levels, self.sorted
        li = getattr(self, "lpm_index", 0)
        single = len(self.keys) == 1
        if self.mode == "exact":
            find = find_exact
        elif self.mode == "lpm":
            find = find_lpm1 if single else find_lpm
        else:
            find = find_list

        if self.on_call:
            # TNA: DirectCounter.count()/DirectMeter.execute() in the action use this entry
            def apply(F: Any) -> tuple:
                e = find(F)
                X.dentry = e
                try:
                    e.fn(F, *e.args)
                finally:
                    X.dentry = None
                return e.result
        elif not counted and not metered:
            def apply(F: Any) -> tuple:
                e = find(F)
                e.fn(F, *e.args)
                return e.result
        else:
            def apply(F: Any) -> tuple:
                e = find(F)
                if counted:
                    c = e.counter
                    c[0] += 1
                    c[1] += X.sm.packet_length
                if metered:
                    X.dmeter[meter_key] = e.meter.execute(X.sm.packet_length if by_bytes else 1, X.now)
                e.fn(F, *e.args)
                return e.result
        return apply

    # ---------------------------------------------------------------- validation
    def _norm_match(self, match: dict[str, Any]) -> list[Any]:
        """Per key: exact v | lpm (v, plen) | ternary (v, mask) | range (lo, hi) | optional v, or
        None for a wildcard; raises RuntimeApiError on bad input (P4Runtime's rules)."""
        if not isinstance(match, dict):
            raise RuntimeApiError("INVALID_ARGUMENT", f"table {self.name}: match must be a dict")
        known = {n for n, _, _ in self.keys}
        for n in match:
            if n not in known:
                raise RuntimeApiError("INVALID_ARGUMENT", f"table {self.name}: no match field {n!r} (fields: {sorted(known)})")
        out = []
        for name, kind, w in self.keys:
            what = f"{self.name} field {name}"
            full = (1 << w) - 1
            v = match.get(name)
            if v is None:
                if kind == "exact":
                    raise RuntimeApiError("INVALID_ARGUMENT", f"{what}: exact field must be given")
                out.append(None)
                continue
            if kind == "exact":
                out.append(to_int(v, w, what))
            elif kind == "lpm":
                if not isinstance(v, (tuple, list)) or len(v) != 2:
                    raise RuntimeApiError("INVALID_ARGUMENT", f"{what}: lpm wants (value, prefix_len)")
                val, plen = to_int(v[0], w, what), v[1]
                if not isinstance(plen, int) or not 0 <= plen <= w:
                    raise RuntimeApiError("INVALID_ARGUMENT", f"{what}: prefix length {plen!r} outside 0..{w}")
                m = full ^ ((1 << (w - plen)) - 1)
                if val & ~m:
                    raise RuntimeApiError("INVALID_ARGUMENT", f"{what}: value {val:#x} has bits set past the /{plen} prefix")
                out.append(None if plen == 0 else (val, plen))
            elif kind == "ternary":
                if not isinstance(v, (tuple, list)) or len(v) != 2:
                    raise RuntimeApiError("INVALID_ARGUMENT", f"{what}: ternary wants (value, mask)")
                val, m = to_int(v[0], w, what), to_int(v[1], w, what + " mask")
                if val & ~m:
                    raise RuntimeApiError("INVALID_ARGUMENT", f"{what}: value {val:#x} has bits outside mask {m:#x}")
                out.append(None if m == 0 else (val, m))
            elif kind == "range":
                if not isinstance(v, (tuple, list)) or len(v) != 2:
                    raise RuntimeApiError("INVALID_ARGUMENT", f"{what}: range wants (low, high)")
                lo, hi = to_int(v[0], w, what), to_int(v[1], w, what)
                if lo > hi:
                    raise RuntimeApiError("INVALID_ARGUMENT", f"{what}: low {lo} > high {hi}")
                out.append(None if (lo, hi) == (0, full) else (lo, hi))
            elif kind == "optional":
                out.append(to_int(v, w, what))
        return out

    def _ident(self, norm: list[Any], priority: Optional[int]) -> tuple:
        if self.needs_priority:
            if priority is None or not isinstance(priority, int) or priority <= 0:
                raise RuntimeApiError("INVALID_ARGUMENT", f"table {self.name}: ternary/range/optional tables need a priority > 0")
            if priority >> 31:
                raise RuntimeApiError("OUT_OF_RANGE", f"table {self.name}: priority {priority} too large")
        elif priority not in (None, 0):
            raise RuntimeApiError("INVALID_ARGUMENT", f"table {self.name}: exact/lpm tables take no priority")
        return (tuple(norm), priority if self.needs_priority else None)

    def _resolve_action(self, action: str, params: Optional[dict], for_default: bool) -> tuple[ActionInfo, tuple]:
        info = self.actions.get(action) if isinstance(action, str) else None
        if info is None:
            raise RuntimeApiError("NOT_FOUND" if isinstance(action, str) else "INVALID_ARGUMENT",
                                  f"table {self.name}: no action {action!r} (actions: {sorted({a.decl.qualified_name for a in self.actions.values()})})")
        if id(info.decl) not in self.in_list:
            raise RuntimeApiError("INVALID_ARGUMENT", f"table {self.name}: action {action} is not in its actions list")
        ann = info.ref.annotations
        if for_default and "tableonly" in ann:
            raise RuntimeApiError("INVALID_ARGUMENT", f"table {self.name}: action {action} is @tableonly")
        if not for_default and "defaultonly" in ann:
            raise RuntimeApiError("INVALID_ARGUMENT", f"table {self.name}: action {action} is @defaultonly")
        params = dict(params or {})
        names = [n for n, _ in info.cp_params]
        extra = set(params) - set(names)
        if extra:
            raise RuntimeApiError("INVALID_ARGUMENT", f"action {action}: unknown parameter(s) {sorted(extra)} (has {names})")
        missing = [n for n in names if n not in params]
        if missing:
            raise RuntimeApiError("INVALID_ARGUMENT", f"action {action}: missing parameter(s) {missing}")
        args = tuple(to_int(params[n], w, f"action {action} param {n}") for n, w in info.cp_params)
        return info, args

    # ---------------------------------------------------------------- entries
    def _new_entry(self, ident: tuple, norm: list, priority: Optional[int], info: ActionInfo, args: tuple) -> _Entry:
        e = _Entry()
        e.ident, e.norm, e.priority = ident, norm, priority
        e.seq = next(self.seq)
        e.counter = [0, 0] if self.has_counter else None
        e.meter = TwoRateMeter() if self.has_meter else None
        e.dreg = self.dreg_init  # TNA DirectRegister cell (None without one)
        e.const = False
        self._set_action(e, info, args, hit=True)
        e.checks = []
        for i, ((_, kind, w), v) in enumerate(zip(self.keys, norm)):
            if v is None:
                continue
            full = (1 << w) - 1
            if kind in ("exact", "optional"):
                e.checks.append((i, False, full, v))
            elif kind == "lpm":
                m = full ^ ((1 << (w - v[1])) - 1)
                e.checks.append((i, False, m, v[0]))
            elif kind == "ternary":
                e.checks.append((i, False, v[1], v[0]))
            else:
                e.checks.append((i, True, v[0], v[1]))
        return e

    def _set_action(self, e: _Entry, info: Optional[ActionInfo], args: tuple, hit: bool) -> None:
        e.info, e.args = info, args
        e.fn = self.action_fns[info.fn_name] if info is not None else _noop
        e.result = (hit, info.action_id if info is not None else 0)

    def _index_add(self, e: _Entry) -> None:
        if self.mode == "exact":
            k = e.norm[0] if len(self.keys) == 1 else tuple(e.norm)
            self.exact[k] = e
        elif self.mode == "lpm":
            li = self.lpm_index
            v = e.norm[li]
            plen = 0 if v is None else v[1]
            w = self.keys[li][2]
            m = ((1 << w) - 1) ^ ((1 << (w - plen)) - 1)
            level = next((lv for lv in self.levels if lv[0] == plen), None)
            if level is None:
                level = (plen, m, {})
                self.levels.append(level)
                self.levels.sort(key=lambda lv: -lv[0])
            val = 0 if v is None else v[0]
            k = val if len(self.keys) == 1 else tuple(e.norm[:li]) + (val,) + tuple(e.norm[li + 1:])
            level[2][k] = e
        else:
            self.sorted.append(e)
            self.sorted.sort(key=lambda x: (-x.priority, x.seq))

    def _index_remove(self, e: _Entry) -> None:
        if self.mode == "exact":
            k = e.norm[0] if len(self.keys) == 1 else tuple(e.norm)
            del self.exact[k]
        elif self.mode == "lpm":
            li = self.lpm_index
            v = e.norm[li]
            plen = 0 if v is None else v[1]
            val = 0 if v is None else v[0]
            k = val if len(self.keys) == 1 else tuple(e.norm[:li]) + (val,) + tuple(e.norm[li + 1:])
            for i, lv in enumerate(self.levels):
                if lv[0] == plen:
                    del lv[2][k]
                    if not lv[2]:
                        del self.levels[i]
                    break
        else:
            self.sorted.remove(e)

    def _check_writable(self) -> None:
        if self.decl.entries_are_const:
            raise RuntimeApiError("INVALID_ARGUMENT", f"table {self.name} has const entries and cannot be written")

    def _check_not_const(self, e: _Entry) -> None:
        if e.const:
            raise RuntimeApiError("INVALID_ARGUMENT", f"table {self.name}: entry {e.norm} is const and cannot be changed")

    def insert(self, match: dict, action: str, params: Optional[dict] = None, priority: Optional[int] = None) -> None:
        self._check_writable()
        norm = self._norm_match(match)
        ident = self._ident(norm, priority)
        info, args = self._resolve_action(action, params, for_default=False)
        if ident in self.entries:
            raise RuntimeApiError("ALREADY_EXISTS", f"table {self.name}: entry {match} already exists")
        if self.capacity is not None and len(self.entries) >= self.capacity:
            raise RuntimeApiError("RESOURCE_EXHAUSTED", f"table {self.name} is full ({self.capacity} entries)")
        e = self._new_entry(ident, norm, priority if self.needs_priority else None, info, args)
        self.entries[ident] = e
        self._index_add(e)

    def find(self, match: dict, priority: Optional[int] = None) -> _Entry:
        norm = self._norm_match(match)
        ident = self._ident(norm, priority)
        e = self.entries.get(ident)
        if e is None:
            raise RuntimeApiError("NOT_FOUND", f"table {self.name}: no entry {match}" + (f" priority {priority}" if priority else ""))
        return e

    def modify(self, match: dict, action: str, params: Optional[dict] = None, priority: Optional[int] = None) -> None:
        self._check_writable()
        e = self.find(match, priority)
        self._check_not_const(e)
        info, args = self._resolve_action(action, params, for_default=False)
        self._set_action(e, info, args, hit=True)

    def delete(self, match: dict, priority: Optional[int] = None) -> None:
        self._check_writable()
        e = self.find(match, priority)
        self._check_not_const(e)
        del self.entries[e.ident]
        self._index_remove(e)

    def clear(self) -> None:
        """Remove every non-const entry and restore the program's default action."""
        for e in [e for e in self.entries.values() if not e.const]:
            del self.entries[e.ident]
            self._index_remove(e)
        info, args = self.initial_default
        self._set_action(self.default, info, args, hit=False)

    def _make_default(self) -> _Entry:
        e = _Entry()
        e.ident, e.norm, e.priority, e.seq, e.checks, e.const = None, [], None, -1, [], False
        e.counter = [0, 0] if self.has_counter else None
        e.meter = TwoRateMeter() if self.has_meter else None
        e.dreg = self.dreg_init  # TNA DirectRegister cell (None without one)
        ref = self.decl.default_action
        info, args = None, ()
        if ref is None:  # no default_action: P4 says NoAction, so action_run can match it
            info = self.actions.get("NoAction")
        else:
            info = next(a for a in self.actions.values() if a.decl is ref.action)
            args = tuple(self._literal(x) for p, x in zip(ref.action.params, ref.args) if p.direction is None)
        self._set_action(e, info, args, hit=False)
        return e

    @staticmethod
    def _literal(x: Optional[ir.Expr]) -> int:
        if isinstance(x, ir.Literal):
            return int(x.value)
        raise RuntimeApiError("INVALID_ARGUMENT", "a default/const action argument is not a constant")

    def set_default(self, action: str, params: Optional[dict] = None) -> None:
        if self.decl.default_is_const:
            raise RuntimeApiError("INVALID_ARGUMENT", f"table {self.name}: the default action is const")
        info, args = self._resolve_action(action, params, for_default=True)
        self._set_action(self.default, info, args, hit=False)

    def get_default(self) -> tuple[Optional[str], dict[str, int]]:
        e = self.default
        if e.info is None:
            return None, {}
        return e.info.decl.qualified_name, {n: v for (n, _), v in zip(e.info.cp_params, e.args)}

    def _install_const_entries(self) -> None:
        n = len(self.decl.const_entries)
        for i, ce in enumerate(self.decl.const_entries):
            match: dict[str, Any] = {}
            for (name, kind, w), ks in zip(self.keys, ce.keysets):
                full = (1 << w) - 1
                if isinstance(ks, ir.KsDefault):
                    continue
                if kind in ("exact", "optional"):
                    match[name] = ks.value
                elif kind == "lpm":
                    if isinstance(ks, ir.KsMask):
                        plen = bin(ks.mask).count("1")
                        match[name] = (ks.value & ks.mask, plen)
                    else:
                        match[name] = (ks.value, w)
                elif kind == "ternary":
                    match[name] = (ks.value & ks.mask, ks.mask) if isinstance(ks, ir.KsMask) else (ks.value, full)
                elif kind == "range":
                    match[name] = (ks.lo, ks.hi) if isinstance(ks, ir.KsRange) else (ks.value, ks.value)
            # decided by the front end (check_tables.entry_priorities); hand-built IR without
            # one: the earlier entry wins
            prio = ce.priority if ce.priority is not None else (n - i if self.needs_priority else None)
            norm = self._norm_match(match)
            ident = self._ident(norm, prio if self.needs_priority else None)
            info = next(a for a in self.actions.values() if a.decl is ce.action.action)
            args = tuple(self._literal(x) for p, x in zip(ce.action.action.params, ce.action.args) if p.direction is None)
            if ident in self.entries:
                continue  # a duplicate const entry: the first one wins, as in a first-match list
            e = self._new_entry(ident, norm, prio if self.needs_priority else None, info, args)
            e.const = ce.is_const
            self.entries[ident] = e
            self._index_add(e)

    # ---------------------------------------------------------------- read back
    def public_entries(self) -> list[TableEntry]:
        out = []
        for e in sorted(self.entries.values(), key=lambda x: x.seq):
            match = {name: v for (name, _, _), v in zip(self.keys, e.norm) if v is not None}
            out.append(TableEntry(match, e.info.decl.qualified_name,
                                  {n: v for (n, _), v in zip(e.info.cp_params, e.args)}, e.priority,
                                  tuple(e.counter) if e.counter is not None else None,
                                  e.meter.config if e.meter is not None else None))
        return out

    def direct_counter(self, match: dict, priority: Optional[int]) -> list[int]:
        if not self.has_counter:
            raise RuntimeApiError("NOT_FOUND", f"table {self.name} has no direct counter")
        return self.find(match, priority).counter

    def direct_meter_set(self, match: dict, cfg: Optional[tuple], priority: Optional[int], now_us: float) -> None:
        if not self.has_meter:
            raise RuntimeApiError("NOT_FOUND", f"table {self.name} has no direct meter")
        e = self.find(match, priority)
        e.meter.configure(validate_meter_config(self.name, *cfg) if cfg is not None else None, now_us)
