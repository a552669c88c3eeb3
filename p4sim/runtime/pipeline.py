"""One loaded v1model program: generated code bound to this switch's tables and extern state,
plus the per-packet context the generated code reaches through ``X``.
"""
from __future__ import annotations

import importlib
import logging
import os
import random
from dataclasses import dataclass
from typing import Any, Optional

from p4sim.errors import CompileError, RuntimeApiError
from p4sim.frontend import ir
from p4sim.runtime import codegen
from p4sim.runtime.externs import Counter, Meter, Register
from p4sim.runtime.objects import pyattr, scalar_width
from p4sim.runtime.tables import Table

log_msg_logger = logging.getLogger("p4sim.log_msg")

SM_FIELDS = ("ingress_port", "egress_spec", "egress_port", "instance_type", "packet_length",
             "enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth", "ingress_global_timestamp",
             "egress_global_timestamp", "mcast_grp", "egress_rid", "checksum_error", "parser_error", "priority")


@dataclass
class Digest:
    """One ``digest<T>()`` message: T's type name and its fields (name, bit width, value)."""

    name: str
    fields: list[tuple[str, int, int]]
    timestamp_us: int


class PacketContext:
    """State the generated code shares with the switch while one packet is processed."""

    def __init__(self, drop_port: int, seed: int) -> None:
        self.sm: Any = None
        self.now: float = 0.0
        self.payload: bytes = b""
        self.drop_port = drop_port
        self.rng = random.Random(seed)
        self.dmeter: dict[int, int] = {}
        self.clone: Optional[tuple[str, int, Optional[int]]] = None
        self.resubmit: Optional[tuple] = None
        self.recirculate: Optional[tuple] = None
        self.truncate: Optional[int] = None
        self.digests: list[Digest] = []

    def begin(self, sm: Any, now: float, payload: bytes = b"") -> None:
        self.sm, self.now, self.payload = sm, now, payload
        self.clone = self.resubmit = self.recirculate = self.truncate = None
        if self.dmeter:
            self.dmeter.clear()

    # services called from generated code
    def request_clone(self, kind: str, session: int, field_list: Optional[int]) -> None:
        self.clone = (kind, session, field_list)

    def digest(self, name: str, fields: tuple) -> None:
        self.digests.append(Digest(name, [(n, w, v) for n, w, v in fields], int(self.now)))

    def random(self, lo: int, hi: int) -> int:
        if hi < lo:
            return lo
        return self.rng.randint(lo, hi)

    def log(self, msg: str, values: tuple) -> None:
        for v in values:
            msg = msg.replace("{}", str(v), 1)
        log_msg_logger.info("%s", msg)


class Pipeline:
    """A program loaded into one switch: its compiled blocks, tables and extern instances."""

    table_class = Table
    backend = "python"
    fast_arrive = None  # the native backend runs a whole NORMAL arrival in one call
    fast_depart = None  # ... and a queued packet's whole departure (egress to output bytes)
    batch = None  # ... and a list of arrivals in a few calls (p4sim.native.batch.Batch)

    def __init__(self, code: codegen.CompiledCode, ctx: PacketContext) -> None:
        comp, prog, ns, rf = self._load(code, ctx)
        self.parser = ns[rf["parser"]]
        self.verify = ns[rf["verify_checksum"]]
        self.ingress = ns[rf["ingress"]]
        self.egress = ns[rf["egress"]]
        self.compute = ns[rf["compute_checksum"]]
        self.deparser = ns[rf["deparser"]]
        pparams = [v for v in prog.blocks["parser"].params
                   if not (isinstance(v.type, ir.ExternT) and v.type.name == "packet_in")]
        if len(pparams) != 3:
            raise CompileError("the v1model parser must take (packet_in, out H, inout M, inout standard_metadata_t)")
        cls = comp.classes.names
        self.H = ns[cls[id(pparams[0].type)]]
        self.M = ns[cls[id(pparams[1].type)]]
        self.SM = ns[cls[id(pparams[2].type)]]
        self.meta_type: ir.StructT = pparams[1].type
        missing = [f for f in SM_FIELDS if f not in self.SM._FIELDS]
        if missing:
            raise CompileError(f"standard_metadata_t lacks fields the runtime needs: {missing}")
        self.no_error = comp.err.get("NoError", 0)
        self.too_short = comp.err.get("PacketTooShort", -99)
        self.uses_clone = comp.uses_clone
        self.source = code.source

    def _load(self, code: codegen.CompiledCode, ctx: PacketContext) -> tuple:
        """What every architecture shares: extern state, the generated namespace, tables."""
        comp = code.compiler
        prog: ir.Program = comp.prog
        self.prog = prog
        self.ctx = ctx
        self.errors = prog.errors
        base = codegen.base_namespace(comp.err)
        base["X"] = ctx
        # extern instances: created before the code runs, referenced by global name
        self.registers: dict[str, Register] = {}
        self.counters: dict[str, Counter] = {}
        self.meters: dict[str, Meter] = {}
        insts = {id(i): i for i in prog.externs}
        for gname, inst in comp.externs.values():
            insts.setdefault(id(inst), inst)
        for inst in insts.values():
            obj = self._make_extern(inst)
            gname = comp.extern_name(inst)
            base[gname] = obj
            if isinstance(obj, Register):  # generated code indexes these lists directly
                base[gname + "_c"] = obj.cells
            elif isinstance(obj, Counter):
                base[gname + "_p"], base[gname + "_b"] = obj.packets, obj.bytes
        ns = code.namespace(base)
        self.ns = ns
        self.tables: dict[str, Table] = {}
        for info in comp.tables.values():
            t = self.table_class(info, ns[info.key_fn_name], ctx, ns)
            ns[info.global_name] = t
            self.tables[t.name] = t
        return comp, prog, ns, code.role_fn

    def _make_extern(self, inst: ir.ExternInstance) -> Any:
        k, a = inst.extern, inst.ctor_args
        name = inst.qualified_name
        if k == "register":
            t = inst.type_args[0] if inst.type_args else ir.BitT(32)
            obj = Register(name, int(a[0]), scalar_width(t))
            self.registers[name] = obj
        elif k == "counter":
            obj = Counter(name, int(a[0]), str(a[1]) if len(a) > 1 else "packets_and_bytes")
            self.counters[name] = obj
        elif k == "meter":
            obj = Meter(name, int(a[0]), str(a[1]) if len(a) > 1 else "packets")
            self.meters[name] = obj
        else:
            # direct_counter/direct_meter: state lives on each table entry.  Any other extern has
            # no runtime state here; calling one of its methods is a compile error (codegen).
            obj = None
        return obj

    # ---------------------------------------------------------------- per-packet stages
    def field_list_fields(self, index: Optional[int]) -> Optional[list[str]]:
        """User-metadata fields a ``*_preserving_field_list(index)`` call keeps: those annotated
        ``@field_list(..., index, ...)`` (none if no field is).  None = keep all of them, for the
        deprecated ``resubmit(data)``/``recirculate(data)``/``clone3`` forms."""
        if index is None:
            return None
        chosen = []
        for f in self.meta_type.fields:
            ann = getattr(f, "annotations", None) or {}
            if "field_list" in ann:
                idx = [int(x, 0) for x in str(ann["field_list"]).replace(" ", "").split(",") if x]
                if index in idx:
                    chosen.append(pyattr(f.name))
        return chosen

    def preserved_meta(self, meta: Any, index: Optional[int]) -> Any:
        fields = self.field_list_fields(index)
        if fields is None:
            return meta._copy()
        m = self.M()
        for a in fields:
            v = getattr(meta, a)
            setattr(m, a, v._copy() if hasattr(v, "_copy") else v)
        return m

    def error_name(self, code: int) -> str:
        return self.errors[code] if 0 <= code < len(self.errors) else str(code)

    def table(self, name: str) -> Table:
        t = self.tables.get(name)
        if t is None:
            return self._named("table", self.tables, name)
        return t

    def _named(self, kind: str, d: dict, name: str) -> Any:
        """The object whose full name is ``name``, else the one object whose name ends with
        ``.name`` ("telemetry.drops" for "pipe.StellarIngress.telemetry.drops"); a short name
        that several objects end with is an error that lists them, never a pick."""
        o = d.get(name)
        if o is not None:
            return o
        short = sorted(k for k in d if k.endswith("." + name))
        if len(short) == 1:
            return d[short[0]]
        if short:
            raise RuntimeApiError("INVALID_ARGUMENT", f"{kind} name {name!r} is ambiguous: it ends "
                                  f"{', '.join(short)}; give a longer name")
        raise RuntimeApiError("NOT_FOUND", f"no {kind} {name!r} (have: {sorted(d)})")

    def register(self, name: str) -> Register:
        return self._named("register", self.registers, name)

    def counter(self, name: str) -> Counter:
        return self._named("counter", self.counters, name)

    def meter(self, name: str) -> Meter:
        return self._named("meter", self.meters, name)


BACKENDS = ("python", "native")


def backend_choice(backend: Optional[str] = None) -> str:
    """The backend asked for: the argument, else ``$P4SIM_BACKEND``, else the reference."""
    choice = backend or os.environ.get("P4SIM_BACKEND") or "python"
    if choice not in BACKENDS:
        raise ValueError(f"unknown p4sim backend {choice!r} (choose from {', '.join(BACKENDS)})")
    return choice


def make_pipeline(program: Any, ctx: PacketContext, backend: Optional[str] = None) -> Pipeline:
    """The pipeline of a v1model ``p4sim.Program`` on the chosen backend.  "native" runs the
    program compiled to C when it can (p4sim.native, a plug-in found by name so this base module
    never imports it), else the reference after one warning."""
    if backend_choice(backend) == "native":
        native = importlib.import_module("p4sim.native").native_pipeline(program, ctx)
        if native is not None:
            return native
    return Pipeline(program.code(), ctx)
