"""P4Info generation from a checked program, with p4c's names and ids.

Controllers (p4runtime-shell, PTF tests, our control plane) address tables, actions and externs
by P4Info id, so p4sim must produce exactly the ids p4c would: ``id = (prefix << 24) |
(jenkins_one_at_a_time(name) & 0xFFFFFF)``; objects with an ``@id`` annotation keep it (gaining
the prefix byte when it has none), the others are assigned in sorted name order and a collision
probes the next hash value.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from p4.config.v1 import p4info_pb2

from p4sim.errors import CompileError
from p4sim.frontend import ir

PREFIX_ACTION = 0x01
PREFIX_TABLE = 0x02
PREFIX_VALUE_SET = 0x03
PREFIX_CONTROLLER_HEADER = 0x04
PREFIX_ACTION_PROFILE = 0x11
PREFIX_COUNTER = 0x12
PREFIX_DIRECT_COUNTER = 0x13
PREFIX_METER = 0x14
PREFIX_DIRECT_METER = 0x15
PREFIX_REGISTER = 0x16
PREFIX_DIGEST = 0x17

DEFAULT_TABLE_SIZE = 1024  # what p4c reports when a table has no `size`

# Annotations p4c consumes itself and does not copy into P4Info preambles.
_INTERNAL_ANNOTATIONS = {"name", "id", "tableonly", "defaultonly", "priority", "hidden",
                         "metadata", "field_list", "atomic", "controller_header", "alias"}

_MATCH_TYPES = {
    "exact": p4info_pb2.MatchField.EXACT,
    "lpm": p4info_pb2.MatchField.LPM,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
}


def jenkins_one_at_a_time(name: str) -> int:
    """Bob Jenkins' one-at-a-time hash (32 bit), the hash p4c uses for P4Info ids."""
    h = 0
    for byte in name.encode():
        h = (h + byte) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    h = (h + (h << 15)) & 0xFFFFFFFF
    return h


@dataclass
class _Symbol:
    prefix: int
    name: str          # the name hashed for the id
    explicit_id: Optional[int]
    key: object        # the IR object (or name) the id is looked up by


class IdAllocator:
    """Assigns ids to all symbols of one program at once (explicit ones first)."""

    def __init__(self) -> None:
        self._symbols: list[_Symbol] = []
        self.ids: dict[tuple[int, int], int] = {}

    def add(self, prefix: int, name: str, annotations: dict[str, str], key: object) -> None:
        explicit = None
        if "id" in annotations:
            try:
                explicit = int(annotations["id"], 0)
            except ValueError:
                raise CompileError(f"@id of '{name}' must be an integer") from None
        self._symbols.append(_Symbol(prefix, name, explicit, key))

    def assign(self) -> None:
        used: set[int] = set()
        for s in self._symbols:
            if s.explicit_id is None:
                continue
            pid = s.explicit_id if s.explicit_id >> 24 else (s.prefix << 24) | s.explicit_id
            if pid >> 24 != s.prefix:
                raise CompileError(f"@id {s.explicit_id:#x} of '{s.name}' has the wrong prefix")
            if pid in used:
                raise CompileError(f"@id {s.explicit_id:#x} of '{s.name}' is used twice")
            used.add(pid)
            self.ids[(s.prefix, id(s.key))] = pid
        for s in sorted((s for s in self._symbols if s.explicit_id is None),
                        key=lambda s: (s.prefix, s.name)):
            if (s.prefix, id(s.key)) in self.ids:
                continue
            h = jenkins_one_at_a_time(s.name)
            while True:
                pid = (s.prefix << 24) | (h & 0xFFFFFF)
                if pid not in used:
                    break
                h = (h + 1) & 0xFFFFFFFF
            used.add(pid)
            self.ids[(s.prefix, id(s.key))] = pid

    def get(self, prefix: int, key: object) -> int:
        return self.ids[(prefix, id(key))]


def _aliases(names: list[str]) -> dict[str, str]:
    """Shortest dotted suffix of each name that no other name ends with (p4c's ``alias``)."""
    out = {}
    parts = {n: n.split(".") for n in names}
    for n, p in parts.items():
        for k in range(1, len(p) + 1):
            suffix = ".".join(p[-k:])
            clash = any(o != n and (o == suffix or o.endswith("." + suffix)) for o in names)
            if not clash:
                out[n] = suffix
                break
        else:
            out[n] = n
    return out


def _annotation_strings(annotations: dict[str, str]) -> list[str]:
    out = []
    for k, v in annotations.items():
        if k in _INTERNAL_ANNOTATIONS:
            continue
        if v == "":
            out.append(f"@{k}")
        else:
            try:
                int(v, 0)
                out.append(f"@{k}({v})")
            except ValueError:
                out.append(f'@{k}("{v}")')
    return out


def _bitwidth(t: ir.Type) -> int:
    if isinstance(t, ir.BitT):
        return t.width
    if isinstance(t, ir.BoolT):
        return 1
    if isinstance(t, ir.EnumT) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, ir.ErrorT):
        return 32
    raise CompileError(f"no P4Info bit width for {type(t).__name__}")


def _all_controls(prog: ir.Program) -> list[ir.ControlDecl]:
    seen, out = set(), []
    for b in list(prog.blocks.values()) + list(prog.controls.values()):
        if isinstance(b, ir.ControlDecl) and id(b) not in seen:
            seen.add(id(b))
            out.append(b)
    return out


def _all_parsers(prog: ir.Program) -> list[ir.ParserDecl]:
    seen, out = set(), []
    for b in list(prog.blocks.values()) + list(prog.parsers.values()):
        if isinstance(b, ir.ParserDecl) and id(b) not in seen:
            seen.add(id(b))
            out.append(b)
    return out


def _referenced_actions(controls: list[ir.ControlDecl]) -> list[ir.ActionDecl]:
    """Actions referenced from the controls' tables, apply blocks and action bodies, in first
    reference order."""
    roots: list[object] = []
    for c in controls:
        roots += [c.apply, *c.tables.values()]
    return [n for n in ir.walk(roots) if isinstance(n, ir.ActionDecl)]


# TNA extern -> the v1model-style name the P4Info code below handles
_TNA_STD = {"Counter": "counter", "DirectCounter": "direct_counter", "Meter": "meter",
            "DirectMeter": "direct_meter", "Register": "register"}
_TNA_UNITS = {"PACKETS": "packets", "BYTES": "bytes", "PACKETS_AND_BYTES": "packets_and_bytes"}


def _std_view(x: ir.ExternInstance) -> ir.ExternInstance:
    """A TNA extern instance seen as its standard P4Runtime counterpart (same name and id
    inputs; TNA's Counter<W, I>/Register<T, I> type arguments reduced to what P4Info shows)."""
    kind = _TNA_STD[x.extern]
    args = [(_TNA_UNITS.get(str(a), a)) for a in x.ctor_args]
    targs = list(x.type_args)
    if kind == "register":
        targs = targs[:1]
    view = ir.ExternInstance(x.name, x.qualified_name, kind, targs, args, x.annotations, x.pos)
    view.__dict__["origin"] = x
    return view


def build_p4info(prog: ir.Program) -> p4info_pb2.P4Info:
    """The P4Info p4c would write for ``prog`` (v1model)."""
    controls = [c for c in _all_controls(prog) if c in prog.blocks.values()]
    tables = [t for c in controls for t in c.tables.values() if "hidden" not in t.annotations]
    # p4c keeps every action a control uses (in a table or called directly) and drops unused
    # ones before generating P4Info; @hidden ones are left out.
    externs = list(prog.externs)
    for blk in list(controls) + [p for p in _all_parsers(prog) if p in prog.blocks.values()]:
        externs += [x for x in blk.locals if isinstance(x, ir.ExternInstance)]
    # a TNA RegisterAction's apply is part of the register, not a control-plane action
    ra_bodies = {id(a) for x in externs for a in x.methods.values()}
    actions = [a for a in _referenced_actions(controls)
               if "hidden" not in a.annotations and id(a) not in ra_bodies]
    if prog.arch != "v1model":
        # TNA externs in P4Runtime's standard messages: what bf-p4c writes with
        # --p4runtime-force-std-externs (see p4src/tna/README.md; its default instead puts them
        # in `externs` with Tofino extern type ids, which p4sim does not emit)
        externs = [_std_view(x) if x.extern in _TNA_STD else x for x in externs]
    view_of = {id(x.__dict__.get("origin", x)): x for x in externs}

    alloc = IdAllocator()
    for t in tables:
        alloc.add(PREFIX_TABLE, t.qualified_name, t.annotations, t)
    for a in actions:
        alloc.add(PREFIX_ACTION, a.qualified_name, a.annotations, a)
    ext_prefix = {"counter": PREFIX_COUNTER, "direct_counter": PREFIX_DIRECT_COUNTER,
                  "meter": PREFIX_METER, "direct_meter": PREFIX_DIRECT_METER,
                  "register": PREFIX_REGISTER}
    for x in externs:
        if x.extern in ext_prefix:
            alloc.add(ext_prefix[x.extern], x.qualified_name, x.annotations, x)
    for h in prog.controller_headers:
        alloc.add(PREFIX_CONTROLLER_HEADER, h.name, {}, h)
    for d in prog.digests:
        alloc.add(PREFIX_DIGEST, d.name, {}, d)
    # TNA: a digest is a Digest<T> instance, named like it (bf-p4c's arch handler)
    tna_digests = [x for x in externs if x.extern == "Digest"]
    for x in tna_digests:
        alloc.add(PREFIX_DIGEST, x.qualified_name, x.annotations, x)
    alloc.assign()

    # p4c computes aliases over every symbol it knows, controller header and digest type names
    # included
    all_names = [t.qualified_name for t in tables] + [a.qualified_name for a in actions] + \
        [x.qualified_name for x in externs if x.extern in ext_prefix] + \
        [h.name for h in prog.controller_headers] + [d.name for d in prog.digests] + \
        [x.qualified_name for x in tna_digests]
    alias = _aliases(sorted(set(all_names)))

    info = p4info_pb2.P4Info()
    info.pkg_info.arch = prog.arch

    def preamble(pre, pid: int, name: str, annotations: dict[str, str],
                 alias_name: Optional[str] = None) -> None:
        pre.id = pid
        pre.name = name
        pre.alias = alias_name or alias.get(name, name)
        pre.annotations.extend(_annotation_strings(annotations))

    direct_owner: dict[int, ir.TableDecl] = {}
    for t in sorted(tables, key=lambda t: t.qualified_name):
        pt = info.tables.add()
        preamble(pt.preamble, alloc.get(PREFIX_TABLE, t), t.qualified_name, t.annotations)
        for i, k in enumerate(t.keys, 1):
            mf = pt.match_fields.add()
            mf.id = i
            mf.name = k.name
            # p4c treats an error-typed match field as a string: bitwidth 0
            if isinstance(k.expr.type, ir.EnumT) and k.expr.type.underlying is None:
                # p4c's serializer (getTypeWidth): an error, so no P4Info, as with p4c-bm2-ss
                # --p4runtime-files; the program itself runs (const entries, the Python API)
                raise CompileError(f"{k.name}: width not well-defined for values of type "
                                   f"{k.expr.type.name} (a table key of a plain enum has no "
                                   "P4Runtime encoding)", k.pos)
            mf.bitwidth = 0 if isinstance(k.expr.type, ir.ErrorT) else _bitwidth(k.expr.type)
            mf.match_type = _MATCH_TYPES[k.match_kind]
            mf.annotations.extend(_annotation_strings(k.annotations))
        for ref in t.actions:
            if "hidden" in ref.action.annotations:
                continue
            ar = pt.action_refs.add()
            ar.id = alloc.get(PREFIX_ACTION, ref.action)
            if "tableonly" in ref.annotations:
                ar.scope = p4info_pb2.ActionRef.TABLE_ONLY
            elif "defaultonly" in ref.annotations:
                ar.scope = p4info_pb2.ActionRef.DEFAULT_ONLY
            ar.annotations.extend(f"@{a}" for a in ("tableonly", "defaultonly")
                                  if a in ref.annotations)
        if t.default_action is not None and t.default_is_const:
            pt.const_default_action_id = alloc.get(PREFIX_ACTION, t.default_action.action)
        if t.direct_counter is not None:
            dc = view_of.get(id(t.direct_counter), t.direct_counter)
            pt.direct_resource_ids.append(alloc.get(PREFIX_DIRECT_COUNTER, dc))
            direct_owner[id(dc)] = t
        if t.direct_meter is not None:
            dm = view_of.get(id(t.direct_meter), t.direct_meter)
            pt.direct_resource_ids.append(alloc.get(PREFIX_DIRECT_METER, dm))
            direct_owner[id(dm)] = t
        pt.size = t.size if t.size is not None else DEFAULT_TABLE_SIZE
        if t.entries_are_const:
            pt.is_const_table = True
        if t.const_entries:
            pt.has_initial_entries = True

    for a in sorted(actions, key=lambda a: a.qualified_name):
        pa = info.actions.add()
        preamble(pa.preamble, alloc.get(PREFIX_ACTION, a), a.qualified_name, a.annotations)
        data = [v for v in a.params if v.direction is None]
        for i, v in enumerate(data, 1):
            pp = pa.params.add()
            pp.id = i
            pp.name = v.name
            pp.bitwidth = _bitwidth(v.type)
            pp.annotations.extend(_annotation_strings(v.annotations))

    for x in sorted(externs, key=lambda x: x.qualified_name):
        if x.extern not in ext_prefix:
            continue
        pid = alloc.get(ext_prefix[x.extern], x)
        if x.extern == "counter":
            pc = info.counters.add()
            preamble(pc.preamble, pid, x.qualified_name, x.annotations)
            pc.spec.unit = _counter_unit(x.ctor_args[1])
            pc.size = int(x.ctor_args[0])
        elif x.extern == "direct_counter":
            pc = info.direct_counters.add()
            preamble(pc.preamble, pid, x.qualified_name, x.annotations)
            pc.spec.unit = _counter_unit(x.ctor_args[0])
            owner = direct_owner.get(id(x))
            if owner is not None:
                pc.direct_table_id = alloc.get(PREFIX_TABLE, owner)
        elif x.extern == "meter":
            pm = info.meters.add()
            preamble(pm.preamble, pid, x.qualified_name, x.annotations)
            pm.spec.unit = _meter_unit(x.ctor_args[1])
            pm.size = int(x.ctor_args[0])
        elif x.extern == "direct_meter":
            pm = info.direct_meters.add()
            preamble(pm.preamble, pid, x.qualified_name, x.annotations)
            pm.spec.unit = _meter_unit(x.ctor_args[0])
            owner = direct_owner.get(id(x))
            if owner is not None:
                pm.direct_table_id = alloc.get(PREFIX_TABLE, owner)
        elif x.extern == "register":
            pr = info.registers.add()
            preamble(pr.preamble, pid, x.qualified_name, x.annotations)
            _set_type_spec(pr.type_spec, x.type_args[0], info)
            pr.size = int(x.ctor_args[0])

    for h in sorted(prog.controller_headers, key=lambda h: h.name):
        cm = info.controller_packet_metadata.add()
        cname = h.annotations.get("controller_header", h.name)
        cm.preamble.id = alloc.get(PREFIX_CONTROLLER_HEADER, h)
        cm.preamble.name = cname
        cm.preamble.alias = cname
        cm.preamble.annotations.append(f'@controller_header("{cname}")')
        for i, (path, ft) in enumerate(ir.leaf_fields(h), 1):
            md = cm.metadata.add()  # struct fields flattened, named "s.a" (p4c's FlattenHeader)
            md.id = i
            md.name = ".".join(path)
            md.bitwidth = _bitwidth(ft)

    for d in sorted(prog.digests, key=lambda d: d.name):
        pd = info.digests.add()
        pd.preamble.id = alloc.get(PREFIX_DIGEST, d)
        pd.preamble.name = d.name
        pd.preamble.alias = d.name
        _set_type_spec(pd.type_spec, d, info)
    for x in sorted(tna_digests, key=lambda x: x.qualified_name):
        pd = info.digests.add()
        preamble(pd.preamble, alloc.get(PREFIX_DIGEST, x), x.qualified_name, x.annotations)
        _set_type_spec(pd.type_spec, x.type_args[0], info)
    return info


def _counter_unit(kind) -> int:
    return {"packets": p4info_pb2.CounterSpec.PACKETS, "bytes": p4info_pb2.CounterSpec.BYTES,
            "packets_and_bytes": p4info_pb2.CounterSpec.BOTH}[str(kind)]


def _meter_unit(kind) -> int:
    return {"packets": p4info_pb2.MeterSpec.PACKETS,
            "bytes": p4info_pb2.MeterSpec.BYTES}[str(kind)]


def _set_type_spec(spec, t: ir.Type, info: p4info_pb2.P4Info) -> None:
    """P4DataTypeSpec for a register cell or digest: bitstrings, bool, structs/headers (which
    are registered in ``type_info``), serializable enums."""
    if isinstance(t, ir.BitT):
        if t.signed:
            spec.bitstring.int.bitwidth = t.width
        else:
            spec.bitstring.bit.bitwidth = t.width
    elif isinstance(t, ir.BoolT):
        spec.bool.SetInParent()
    elif isinstance(t, ir.StructT):
        spec.struct.name = t.name
        if t.name not in info.type_info.structs:
            st = info.type_info.structs[t.name]
            for f in t.fields:
                m = st.members.add()
                m.name = f.name
                _set_type_spec(m.type_spec, f.type, info)
    elif isinstance(t, ir.HeaderT):
        spec.header.name = t.name
        if t.name not in info.type_info.headers:
            ht = info.type_info.headers[t.name]
            for path, ft in ir.leaf_fields(t):  # struct fields flattened as p4c does
                m = ht.members.add()
                m.name = ".".join(path)
                if isinstance(ft, ir.VarbitT):
                    m.type_spec.varbit.max_bitwidth = ft.max_width
                elif isinstance(ft, ir.BitT) and ft.signed:
                    m.type_spec.int.bitwidth = ft.width
                else:
                    m.type_spec.bit.bitwidth = _bitwidth(ft)
    elif isinstance(t, ir.EnumT) and t.underlying is not None:
        spec.serializable_enum.name = t.name
        if t.name not in info.type_info.serializable_enums:
            se = info.type_info.serializable_enums[t.name]
            se.underlying_type.bitwidth = t.underlying.width
            for m, v in zip(t.members, t.values or []):
                mm = se.members.add()
                mm.name = m
                mm.value = v.to_bytes(max(1, (t.underlying.width + 7) // 8), "big")
    elif isinstance(t, ir.EnumT):  # a plain enum: its member names (P4EnumTypeSpec)
        spec.enum.name = t.name
        if t.name not in info.type_info.enums:
            en = info.type_info.enums[t.name]
            for m in t.members:
                en.members.add().name = m
    elif isinstance(t, ir.ErrorT):
        spec.error.SetInParent()
    else:
        raise CompileError(f"no P4Info type for {type(t).__name__}")
