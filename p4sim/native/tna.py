"""C source for one TNA/T2NA program (a Tofino pipe's six blocks), generated from p4sim's IR.

The statements, expressions, tables, parsers and deparsers are v1model's (``cgen.CGen``): this
module adds what TNA has instead of v1model's externs, each spelled after the reference's
``runtime/tna_codegen.py`` and ``runtime/tna.py`` step for step:

* ``Register`` cells (initial value from the constructor) and ``RegisterAction.execute``: the
  cell is unpacked into the action's value (a struct: first field high), the action runs as an
  action of its control, and the cell is packed back; out of range, it reads 0 and writes
  nothing.  Each register remembers the pass that last touched it: a second access in one pass
  is the reference's ``TnaRuleError`` (raised by the pipeline after the block returns);
* ``Hash`` (the Tofino catalogue's CRC8/16/32, CUSTOM polynomials, IDENTITY, XOR16; RANDOM and
  ``Random`` call back into the switch's seeded generator, as v1model's ``random`` does);
* ``Counter`` (packets and bytes, with the byte adjustment), colour-blind ``Meter``, ``min``/
  ``max``/``sizeInBits``/``sizeInBytes``, ``port_metadata_unpack``;
* ``Checksum`` (a running ones'-complement sum per instance, reset each pass) and
  ``Checksum.update``; ``Mirror``/``Resubmit``/``Digest`` in the deparsers.

Direct externs (``DirectCounter``/``DirectMeter``/``DirectRegister``), colour-aware meters and
the rest raise ``Unsupported``: the whole program then runs on the reference backend.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any, Optional

from p4sim.frontend import ir
from p4sim.native.cgen import (C_TYPES, CALLBACKS, PRELUDE, CGen, ExternSpec, Generated, Scope, Unsupported,
                               callback_decls)
from p4sim.native.cgen import c_literal as _lit
from p4sim.native.cgen import c_name as _cid
from p4sim.runtime.irwalk import bitmask
from p4sim.native.tna_pass import API as PASS_API
from p4sim.native.tna_pass import pass_code
from p4sim.runtime.objects import header_layout, is_composite, scalar_width
from p4sim.runtime.tna import TnaHash
from p4sim.runtime.tna_codegen import struct_layout, value_width

# The reference's TnaHash catalogue: name -> (crc width, polynomial, reflected, init, xor out).
CRC_PREDEF = TnaHash._PREDEF
# RegisterAction values the C side keeps per pass (one access per register per pass).
TM_T = "ingress_intrinsic_metadata_for_tm_t"


@dataclass
class TnaGenerated(Generated):
    """``Generated`` plus what the TNA pipeline needs: each role's C entry and the C struct of
    each of its composite parameters, the register access sites (for TnaRuleError's message)
    and the struct types the switch instantiates."""

    role_params: dict[str, list[tuple[str, ir.Type]]] = field(default_factory=dict)
    reg_sites: list[tuple[str, str, str]] = field(default_factory=list)  # (where, what, register)
    reg_init: list[tuple[int, int]] = field(default_factory=list)  # register index -> initial cell
    passes: bool = False  # p4n_ig_pass/p4n_eg_pass were generated (p4sim/native/tna_pass.py)
    type_structs: dict[int, str] = field(default_factory=dict)  # id(ir type) -> C struct


@dataclass
class _Hash:
    width: int
    algo: str
    crc_width: int = 0
    poly: int = 0
    rev: bool = False
    init: int = 0
    xor: int = 0
    msb: bool = False
    extend: bool = False


def _hash_of(inst: ir.ExternInstance) -> _Hash:
    """The reference TnaHash's parameters for ``inst`` (same catalogue, same CUSTOM reading)."""
    h = _Hash(value_width(inst.type_args[0]), str(inst.ctor_args[0]))
    if h.algo in CRC_PREDEF:
        h.crc_width, h.poly, h.rev, h.init, h.xor = CRC_PREDEF[h.algo]
    elif h.algo == "CUSTOM":
        poly_inst = inst.ctor_args[1]
        if not isinstance(poly_inst, ir.ExternInstance):
            raise Unsupported("Hash with a CUSTOM polynomial that is not a CRCPolynomial", inst.pos)
        cw = value_width(poly_inst.type_args[0])
        coeff, rev, msb, ext, init, xor = (int(x) for x in poly_inst.ctor_args)
        h.crc_width, h.poly, h.rev, h.msb, h.extend, h.init, h.xor = cw, coeff & bitmask(cw), bool(rev), bool(msb), \
            bool(ext), init, xor
    elif h.algo not in ("IDENTITY", "RANDOM", "XOR16"):
        raise Unsupported(f"hash algorithm {h.algo}", inst.pos)
    if h.crc_width and (h.crc_width % 8 or h.crc_width > 64):
        raise Unsupported(f"a CRC of {h.crc_width} bits", inst.pos)
    if h.width > 64:
        raise Unsupported(f"a hash of {h.width} bits", inst.pos)
    return h


class TnaCGen(CGen):
    """``CGen`` for a Tofino pipe: TNA's six blocks and externs (module docstring)."""

    archs = ("tna", "t2na")

    def __init__(self, prog: ir.Program) -> None:
        super().__init__(prog)
        self.md_bits = 192 if (prog.tofino_target or 1) == 2 else 64
        self.hashes: dict[int, _Hash] = {}
        self.cksums: dict[int, int] = {}
        self.reg_sites: list[tuple[str, str, str]] = []
        self.reg_of: dict[int, ExternSpec] = {}
        self.fvars: dict[int, str] = {}
        self.cur_ctl: Optional[ir.ControlDecl] = None
        self.mirror_bits = self.resub_bits = 0
        # every call checks S->exited: exit, a failed assert, and a second access to a register
        # (which the reference raises from wherever it happens) all leave the block
        self.has_exit = True

    # ------------------------------------------------------------------ extern instances
    def extern(self, inst: ir.ExternInstance) -> tuple[str, ExternSpec]:
        if id(inst) in self.externs:
            return self.externs[id(inst)]
        k = inst.extern
        if k == "Register":
            t = inst.type_args[0]
            if value_width(t) > 64:
                raise Unsupported(f"Register {inst.qualified_name} of more than 64 bits", inst.pos)
            spec = ExternSpec(len(self.regs), inst, int(inst.ctor_args[0]), f"R{len(self.regs)}_{_cid(inst.qualified_name)}")
            self.regs.append(spec)
        elif k == "Counter":
            spec = ExternSpec(len(self.ctrs), inst, int(inst.ctor_args[0]), f"C{len(self.ctrs)}_{_cid(inst.qualified_name)}")
            self.ctrs.append(spec)
        elif k == "Meter":
            spec = ExternSpec(len(self.mtrs), inst, int(inst.ctor_args[0]), f"M{len(self.mtrs)}_{_cid(inst.qualified_name)}")
            self.mtrs.append(spec)
        elif k == "Hash":
            self.hashes[id(inst)] = _hash_of(inst)
            spec = ExternSpec(-1, inst, 0, "")
        elif k == "Checksum":
            self.cksums[id(inst)] = len(self.cksums)
            spec = ExternSpec(self.cksums[id(inst)], inst, 0, f"ck[{self.cksums[id(inst)]}]")
        elif k == "RegisterAction":
            reg = inst.ctor_args[0]
            if not isinstance(reg, ir.ExternInstance) or reg.extern != "Register":
                raise Unsupported(f"RegisterAction {inst.qualified_name} on a {getattr(reg, 'extern', reg)}", inst.pos)
            self.extern(reg)
            if self.cur_ctl is None:
                raise Unsupported(f"RegisterAction {inst.qualified_name} outside a control", inst.pos)
            for a in inst.methods.values():
                self.declare_action(a, self.cur_ctl)
                self.compile_action(a, self.fvars, self.cur_ctl)
            spec = ExternSpec(-1, inst, 0, "")
        elif k in ("Random", "Mirror", "Resubmit", "Digest", "CRCPolynomial"):
            spec = ExternSpec(-1, inst, 0, "")
        else:
            raise Unsupported(f"extern {k} {inst.qualified_name}", inst.pos)
        self.externs[id(inst)] = (spec.cname, spec)
        return self.externs[id(inst)]

    # ------------------------------------------------------------------ calls with a value
    def ex_ExternCall(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> str:
        r = self.extern_call(e, sc, pre)
        return r if r is not None else "0"

    def ex_BuiltinCall(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> str:
        n, a = e.name, e.args
        if n in ("min", "max"):
            if isinstance(a[0].type, ir.BitT) and a[0].type.signed:
                raise Unsupported(f"{n}() of signed values", e.pos)
            x, y = self.ex_all([a[0], a[1]], sc, pre)
            tx, ty = self.tmp(), self.tmp()
            pre.append(f"uint64_t {tx} = {x}; uint64_t {ty} = {y};")
            return f"({tx} {'<' if n == 'min' else '>'} {ty} ? {tx} : {ty})"
        if n in ("sizeInBits", "sizeInBytes"):
            w = a[0].type.width if isinstance(a[0].type, ir.HeaderT) else value_width(a[0].type)
            return _lit(w if n == "sizeInBits" else (w + 7) >> 3)
        if n == "port_metadata_unpack":
            return self.port_metadata_unpack(e, sc, pre)
        return super().ex_BuiltinCall(e, sc, pre)

    def port_metadata_unpack(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> str:
        t = e.type
        if not sc.in_parser or not isinstance(t, (ir.StructT, ir.HeaderT)) or not all(
                isinstance(f.type, (ir.BitT, ir.BoolT)) for f in t.fields):
            raise Unsupported("port_metadata_unpack here", e.pos)
        lay = header_layout(ir.HeaderT(t.name, t.fields))
        total = sum(w for _, w, _, _ in lay)
        if total > 64:
            raise Unsupported("port metadata of more than 64 bits", e.pos)
        md, x, tmp = self.md_bits, self.tmp(), self.tmp()
        pre.append(f"if (pos + {md} > nbits) {{ *err = {self.err['PacketTooShort']}; return pos; }}")
        pre.append(f"uint64_t {x} = p4n_rd(d, pos, {total}); pos += {md};")
        pre.append(f"struct {self.sname(t)} {tmp}; memset(&{tmp}, 0, sizeof {tmp});")
        for f, (_, w, s, _) in zip(t.fields, lay):
            pre.append(f"{tmp}.f_{_cid(f.name)} = ({x} >> {s}) & {_lit(bitmask(w))};")
        if isinstance(t, ir.HeaderT):
            pre.append(f"{tmp}._v = 1;")
        return tmp

    # ------------------------------------------------------------------ registers
    def touch(self, reg: ir.ExternInstance, what: str, pos: Any, sc: Scope, pre: list[str]) -> str:
        """The one-access-per-pass rule: a second access stops the block (the pipeline raises
        TnaRuleError naming both sites, as the reference's ``X.double_access``)."""
        name, spec = self.extern(reg)
        self.reg_sites.append((str(pos), what, reg.qualified_name))
        k = len(self.reg_sites)
        pre.append(f"if (S->reg_last[{spec.index}] == S->pass_id) {{ S->rule_at = {k}; S->rule_prev = "
                   f"S->reg_site[{spec.index}]; S->exited = 1; {self.leave(sc)} }}")
        pre.append(f"S->reg_last[{spec.index}] = S->pass_id; S->reg_site[{spec.index}] = {k};")
        return f"S->{name}"

    def extern_RegisterAction_execute(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> str:
        inst = e.instance
        self.extern(inst)  # its apply action (an action may call execute before the control's locals are seen)
        reg = inst.ctor_args[0]
        cells = self.touch(reg, f"{inst.qualified_name}.execute", e.pos, sc, pre)
        act = inst.methods["apply"]
        fn = self.action_fn[id(act)]
        size = int(reg.ctor_args[0])
        T = reg.type_args[0]
        idx = self.pinned_index(e.args[0], sc, pre)
        cur, rv = self.tmp(), self.tmp()
        pre.append(f"uint64_t {cur} = {idx} < {size} ? {cells}[{idx}] : 0; uint64_t {rv} = 0;")
        has_rv = len(act.params) > 1
        rv_arg = f", &{rv}" if has_rv else ""
        if isinstance(T, ir.StructT):
            obj = self.tmp()
            lay = struct_layout(T)
            pre.append(f"struct {self.sname(T)} {obj}; memset(&{obj}, 0, sizeof {obj});")
            for f, (_, w, s, _) in zip(T.fields, lay):
                pre.append(f"{obj}.f_{_cid(f.name)} = ({cur} >> {s}) & {_lit(bitmask(w))};")
            pre.append(f"{fn}(S, F{', &' + obj}{rv_arg});")
            pack = " | ".join(f"({obj}.f_{_cid(f.name)} << {s})" for f, (_, _, s, _) in zip(T.fields, lay))
            pre.append(f"if ({idx} < {size}) {cells}[{idx}] = {pack};")
        else:
            pre.append(f"{fn}(S, F, &{cur}{rv_arg});")
            pre.append(f"if ({idx} < {size}) {cells}[{idx}] = {cur};")
        if self.has_exit:
            pre.append(f"if (S->exited) {self.leave(sc)}")
        return rv

    def extern_Register_read(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> str:
        return self.register_rw(e, sc, pre, write=False)

    def extern_Register_write(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> str:
        return self.register_rw(e, sc, pre, write=True)

    def register_rw(self, e: ir.ExternCall, sc: Scope, pre: list[str], write: bool) -> str:
        inst = e.instance
        if isinstance(inst.type_args[0], ir.StructT):
            raise Unsupported("Register.read/write of a struct-valued register", e.pos)
        cells = self.touch(inst, f"{inst.qualified_name}.{e.method}", e.pos, sc, pre)
        size = int(inst.ctor_args[0])
        idx = self.pinned_index(e.args[0], sc, pre)
        if not write:
            return f"({idx} < {size} ? {cells}[{idx}] : 0)"
        v = self.tmp()
        pre.append(f"uint64_t {v} = {self.ex(e.args[1], sc, pre)};")
        pre.append(f"if ({idx} < {size}) {cells}[{idx}] = {v};")
        return v

    # ------------------------------------------------------------------ hashes, random, counters, meters
    def extern_Hash_get(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> str:
        h = self.hashes[id(self.extern(e.instance)[1].inst)]
        items = self.flatten(e.args[0], sc, pre)
        total = sum(w for _, w, _ in items)
        w = h.width
        if h.algo == "RANDOM":
            t = self.tmp()
            pre.append(f"uint64_t {t} = p4n_py_getrandbits(S->handle, {w});")
            return t
        buf, nbytes = self.packed(items, pre)
        if h.algo == "IDENTITY":
            k = min(w, total)
            return f"p4n_rd({buf}, {total - k}, {k})" if k else "UINT64_C(0)"
        if h.algo == "XOR16":
            hv, cw = f"p4n_xor16({buf}, {nbytes})", 16
        else:
            hv, cw = (f"p4n_crc_any({buf}, {nbytes}, {h.crc_width}, {_lit(h.poly)}, {int(h.rev)}, {_lit(h.init)}, "
                      f"{_lit(h.xor)})"), h.crc_width
        t = self.tmp()
        pre.append(f"uint64_t {t} = {hv};")
        if w <= cw:
            return f"({t} >> {cw - w})" if h.msb else f"({t} & {_lit(bitmask(w))})"
        if h.extend:
            parts, filled = [], 0
            while filled < w:
                parts.append(filled)
                filled += cw
            acc = " | ".join(f"({t} << {s})" for s in parts if s < 64)
            return f"(({acc}) & {_lit(bitmask(w))})"
        return t

    def extern_Random_get(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> str:
        t = self.tmp()
        pre.append(f"uint64_t {t} = p4n_py_getrandbits(S->handle, {scalar_width(e.type)});")
        return t

    def extern_Counter_count(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> None:
        name, spec = self.extern(e.instance)
        idx = self.pinned_index(e.args[0], sc, pre)
        adj = f" + ({self.ex(e.args[1], sc, pre)})" if len(e.args) > 1 else ""
        pre.append(f"if ({idx} < {spec.size}) {{ S->{name}_p[{idx}] += 1; S->{name}_b[{idx}] += S->pkt_len{adj}; }}")

    def extern_Meter_execute(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> str:
        if len(e.args) > 1:
            raise Unsupported("colour-aware Meter.execute", e.pos)
        name, spec = self.extern(e.instance)
        idx = self.pinned_index(e.args[0], sc, pre)
        size = "S->pkt_len" if str(e.instance.ctor_args[1]) == "BYTES" else "1"
        t = self.tmp()
        pre.append(f"uint64_t {t} = {idx} < {spec.size} ? p4n_meter_exec(&S->{name}[{idx}], {size}, S->now) : 0;")
        return f"({t} == 2 ? UINT64_C(3) : {t})"  # TNA's MeterColor_t: RED is 3

    # ------------------------------------------------------------------ checksums
    def checksum_data(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> tuple[str, str]:
        return self.packed(self.flatten(e.args[0], sc, pre), pre)

    def extern_Checksum_add(self, e: ir.ExternCall, sc: Scope, pre: list[str], sub: int = 0) -> None:
        name, _ = self.extern(e.instance)
        buf, nbytes = self.checksum_data(e, sc, pre)
        pre.append(f"S->{name} += p4n_words16({buf}, {nbytes}, {sub});")

    def extern_Checksum_subtract(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> None:
        self.extern_Checksum_add(e, sc, pre, 1)

    def extern_Checksum_verify(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> str:
        return f"((uint64_t)(p4n_fold16(S->{self.extern(e.instance)[0]}) == 0xFFFF))"

    def extern_Checksum_get(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> str:
        return f"(p4n_fold16(S->{self.extern(e.instance)[0]}) & 0xFFFF)"

    def extern_Checksum_update(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> str:
        if len(e.args) > 1:
            raise Unsupported("Checksum.update with zeros_as_ones", e.pos)
        buf, nbytes = self.checksum_data(e, sc, pre)
        return f"p4n_csum16({buf}, {nbytes})"

    # ------------------------------------------------------------------ deparser externs
    def request(self, what: str, items: list[tuple[str, Any, str]], pre: list[str]) -> int:
        """Pack ``items`` into the mirror/resubmit buffer of inst_t; its width in bits."""
        total = sum(w for _, w, _ in items)
        pre.append(f"memset(S->{what}, 0, sizeof S->{what}); S->{what}_nb = 0; S->{what}_set = 1;")
        for c, w, _ in items:
            pre.append(f"p4n_wr(S->{what}, &S->{what}_nb, {c}, {w});")
        return total

    def extern_Mirror_emit(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> None:
        session = self.ex(e.args[0], sc, pre)
        t = self.tmp()
        pre.append(f"uint64_t {t} = {session};")
        items = self.flatten(e.args[1], sc, pre) if len(e.args) > 1 else []
        self.mirror_bits = max(self.mirror_bits, self.request("mirror", items, pre))
        pre.append(f"S->mirror_session = {t};")

    def extern_Resubmit_emit(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> None:
        items = self.flatten(e.args[0], sc, pre) if e.args else []
        self.resub_bits = max(self.resub_bits, self.request("resub", items, pre))

    def extern_Digest_pack(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> None:
        inst = e.instance
        t = inst.type_args[0]
        items = self.flatten(e.args[0], sc, pre)
        names = [f.name for f in t.fields] if isinstance(t, ir.StructT) and len(t.fields) == len(items) else \
            [x[2] for x in items]
        idx = len(self.digests)
        self.digests.append((inst.qualified_name, [(nm, w) for (_, w, _), nm in zip(items, names)]))
        arr = self.tmp()
        pre.append(f"uint64_t {arr}[{max(1, len(items))}] = {{{', '.join(c for c, _, _ in items) or '0'}}};")
        pre.append(f"p4n_py_digest(S->handle, {idx}, {arr});")

    # ------------------------------------------------------------------ the TM's unicast port
    def sname(self, t: ir.Type) -> str:
        """As CGen's; the TM struct gets a ``_w`` byte: set once ``ucast_egress_port`` is written."""
        known = id(t) in self.struct_names
        name = super().sname(t)
        if not known and getattr(t, "name", None) == TM_T:
            i = next(k for k, d in enumerate(self.struct_defs) if d.startswith(f"struct {name} {{"))
            self.struct_defs[i] = self.struct_defs[i].replace("{\n", "{\n    uint8_t _w;\n", 1)
        return name

    def assign_whole(self, lhs: ir.Expr, value: str, sc: Scope, out: list[str]) -> None:
        """As CGen's, and a write of ``ucast_egress_port`` is remembered: the reference's
        switch tells a packet with no unicast destination by the field never being set."""
        super().assign_whole(lhs, value, sc, out)
        if isinstance(lhs, ir.Member) and lhs.name == "ucast_egress_port" and \
                getattr(lhs.base.type, "name", None) == TM_T:
            out.append(f"({self.ex(lhs.base, sc, out)})._w = 1;")

    def assign(self, lhs: ir.Expr, value: str, sc: Scope, out: list[str]) -> None:
        super().assign(lhs, value, sc, out)
        if isinstance(lhs, ir.VarRef) and getattr(lhs.type, "name", None) == TM_T:
            raise Unsupported("assignment of a whole ingress_intrinsic_metadata_for_tm_t", lhs.pos)

    # ------------------------------------------------------------------ blocks
    def frame(self, c: ir.ControlDecl) -> tuple[str, dict[int, str]]:
        name, fvars = super().frame(c)
        self.fvars, self.cur_ctl = fvars, c
        return name, fvars

    def compile_table(self, t: ir.TableDecl, c: ir.ControlDecl, fvars: dict[int, str]) -> None:
        if t.direct_counter is not None or t.direct_meter is not None or t.direct_register is not None:
            raise Unsupported(f"direct counter/meter/register of table {t.qualified_name}", t.pos)
        super().compile_table(t, c, fvars)

    def compile_parser(self, p: ir.ParserDecl) -> str:
        for loc in p.locals:
            if isinstance(loc, ir.ExternInstance):
                self.extern(loc)
        q = copy.copy(p)
        q.locals = [loc for loc in p.locals if not isinstance(loc, ir.ExternInstance)]
        return super().compile_parser(q)

    def compile_control(self, c: ir.ControlDecl, role: str) -> str:
        fn = super().compile_control(c, role)
        self.cur_ctl = None  # (a RegisterAction belongs to the control being compiled)
        return fn

    @staticmethod
    def control_kind(role: str) -> str:
        return "deparser" if role.endswith("deparser") else role

    def generate(self) -> TnaGenerated:
        prog = self.prog
        roles = self.compile_blocks(ir.TNA_ROLES, "TNA pipeline")
        params = {role: [(self.sname(v.type), v.type) for v in prog.blocks[role].params if is_composite(v.type)]
                  for role in ir.TNA_ROLES}
        for t in prog.types.values():  # the switch builds every intrinsic metadata struct
            if isinstance(t, (ir.StructT, ir.HeaderT)) and "__intrinsic_metadata" in t.annotations:
                self.sname(t)
        return self.assemble_tna(roles, params)

    # ------------------------------------------------------------------ the C module
    def assemble_tna(self, roles: dict[str, str], params: dict[str, list[tuple[str, ir.Type]]]) -> TnaGenerated:
        nreg = max(1, len(self.regs))
        state = self.state_fields()
        out_bytes = (self.out_bits + 7) // 8 + 8
        mb, rb = (self.mirror_bits + 7) // 8 + 8, (self.resub_bits + 7) // 8 + 8
        inst = ("struct inst {\n    void *handle;\n    double now;\n    uint64_t pkt_len;\n    uint64_t pass_id;\n"
                "    int exited;\n    int assert_at;\n    int rule_at;\n    int rule_prev;\n"
                f"    uint64_t dm[1];\n    uint8_t dm_set[1];\n    uint64_t nb;\n    uint8_t out[{out_bytes}];\n"
                f"    uint64_t ck[{max(1, len(self.cksums))}];\n"
                f"    uint64_t reg_last[{nreg}];\n    int reg_site[{nreg}];\n"
                f"    int mirror_set;\n    uint64_t mirror_session;\n    uint64_t mirror_nb;\n    uint8_t mirror[{mb}];\n"
                f"    int resub_set;\n    uint64_t resub_nb;\n    uint8_t resub[{rb}];\n"
                + "\n".join(state) + "\n};")
        passes = pass_code(self, roles, params, _has_auto_init(self.prog))
        if passes is not None:
            inst = inst[:-3] + "\n" + "\n".join(passes[0]) + "\n};"
        structs = "\n".join(self.struct_defs)
        ctl_t = "typedef struct { int clone_set; } p4n_ctl_t;"
        api, defs = ["typedef struct inst inst_t;"], []
        for role in ir.TNA_ROLES:
            ps = ", ".join(f"struct {s} *p{i}" for i, (s, _) in enumerate(params[role]))
            args = ", ".join(f"p{i}" for i in range(len(params[role])))
            if role.endswith("_parser"):
                sig = f"int64_t p4n_{role}(inst_t *S, const char *d, int64_t nbits, {ps}, int32_t *err)"
                body = f"return {roles[role]}(S, (const uint8_t *)d, nbits, {args}, err);"
            elif role.endswith("deparser"):
                sig = f"uint64_t p4n_{role}(inst_t *S, {ps})"
                body = (f"memset(S->out, 0, sizeof S->out); S->nb = 0; S->exited = 0; {roles[role]}(S, {args}); "
                        "return S->nb;")
            else:
                sig = f"void p4n_{role}(inst_t *S, {ps})"
                body = f"S->exited = 0; {roles[role]}(S, {args});"
            api.append(sig + ";")
            defs.append(sig + " {\n    " + body + "\n}")
        api += ["inst_t *p4n_new(void *handle);", "void p4n_free(inst_t *S);",
                "uint64_t *p4n_reg(inst_t *S, int i);", "uint64_t *p4n_ctr(inst_t *S, int i, int bytes);",
                "p4n_meter_t *p4n_mtr(inst_t *S, int i);", "p4n_tbl_t *p4n_table(inst_t *S, int i);",
                "int p4n_tbl_load(p4n_tbl_t *t, int mode, int n, int nlev, const int32_t *act, const uint64_t *args,"
                " const uint64_t *va, const uint64_t *vb, const uint8_t *rng, const int32_t *lev,"
                " const uint64_t *lmask, const uint64_t *cpk, const uint64_t *cby, const p4n_meter_t *mtr);",
                "uint8_t *p4n_out(inst_t *S);",
                "void p4n_begin(inst_t *S, double now, uint64_t pkt_len, uint64_t pass_id);",
                "int p4n_status(inst_t *S, int32_t *r);", "uint8_t *p4n_mirror(inst_t *S);",
                "uint8_t *p4n_resub(inst_t *S);",
                "uint64_t p4n_crc_bytes(const char *d, size_t n, int w, uint64_t poly, int rev, uint64_t init,"
                " uint64_t xorout);"]
        callbacks, callback_protos = callback_decls(CALLBACKS + (("uint64_t", "p4n_py_getrandbits", "void *, int"),))
        cdef = "\n".join([C_TYPES, structs, *api, PASS_API if passes else "", callbacks])
        reg_init = [(r.index, int(r.inst.ctor_args[1]) if len(r.inst.ctor_args) > 1 else 0) for r in self.regs]
        init_regs = "\n".join(f"    for (int i = 0; i < {self.regs[i].size}; i++) S->{self.regs[i].cname}[i] = {_lit(v)};"
                              for i, v in reg_init if v)
        nl = "\n"
        src = f"""
#include "p4n_runtime.h"
{callback_protos}
{PRELUDE}
{TNA_RUNTIME}
{ctl_t}
{structs}
typedef struct inst inst_t;
{inst}
{nl.join(self.protos)}
{nl.join(self.bodies)}

{self.state_c(new_init=init_regs, free_extra=chr(10) + "    free(S->pbuf);" if passes else "")}
uint8_t *p4n_mirror(inst_t *S) {{ return S->mirror; }}
uint8_t *p4n_resub(inst_t *S) {{ return S->resub; }}
/* TnaContext.begin_pass: the pass's time, length and id; checksums and requests cleared. */
void p4n_begin(inst_t *S, double now, uint64_t pkt_len, uint64_t pass_id) {{
    S->now = now; S->pkt_len = pkt_len; S->pass_id = pass_id;
    memset(S->ck, 0, sizeof S->ck); S->mirror_set = S->resub_set = 0;
}}
/* What the last block left for the switch: r = [assert site, rule site, earlier rule site,
 * (unused), mirror set, mirror session, mirror bits, resubmit set, resubmit bits]. */
int p4n_status(inst_t *S, int32_t *r) {{
    r[0] = S->assert_at; r[1] = S->rule_at; r[2] = S->rule_prev; r[3] = 0;
    r[4] = S->mirror_set; r[5] = (int32_t)S->mirror_session; r[6] = (int32_t)S->mirror_nb;
    r[7] = S->resub_set; r[8] = (int32_t)S->resub_nb;
    int bad = S->assert_at || S->rule_at;
    S->assert_at = 0; S->rule_at = 0;
    return bad;
}}
uint64_t p4n_crc_bytes(const char *d, size_t n, int w, uint64_t poly, int rev, uint64_t init, uint64_t xorout) {{
    return p4n_crc_any((const uint8_t *)d, n, w, poly, rev, init, xorout);
}}
{nl.join(defs)}
{passes[1] if passes else ""}
"""
        gen = TnaGenerated(src, cdef, {}, self.struct_scalars, list(self.tables.values()), self.regs, self.ctrs,
                           self.mtrs, self.digests, dict(self.action_ids), out_bytes, False, self.logs, self.asserts)
        gen.role_params = params
        gen.reg_sites = self.reg_sites
        gen.reg_init = reg_init
        gen.type_structs = {k: v for k, v in self.struct_names.items()}
        gen.passes = passes is not None
        return gen


# What TNA adds to the C runtime: any Tofino CRC (crcmod's algorithm, which the reference's
# TnaHash uses: the register starts at ``init``, reflected CRCs shift right with the reflected
# polynomial, the result is xored with ``xorout``) and the ones'-complement sums of Checksum.
TNA_RUNTIME = """
static inline uint64_t p4n_reflect(uint64_t v, int w) {
    uint64_t r = 0;
    for (int i = 0; i < w; i++) if (v >> i & 1) r |= UINT64_C(1) << (w - 1 - i);
    return r;
}
static uint64_t p4n_crc_any(const uint8_t *d, size_t n, int w, uint64_t poly, int rev, uint64_t init, uint64_t xorout) {
    uint64_t m = p4n_mask(w), reg = init & m;
    if (rev) {
        uint64_t rp = p4n_reflect(poly, w);
        for (size_t i = 0; i < n; i++) {
            reg ^= d[i];
            for (int k = 0; k < 8; k++) reg = (reg & 1) ? (reg >> 1) ^ rp : reg >> 1;
        }
    } else {
        uint64_t top = UINT64_C(1) << (w - 1);
        for (size_t i = 0; i < n; i++) {
            reg ^= (uint64_t)d[i] << (w - 8);
            for (int k = 0; k < 8; k++) reg = ((reg & top) ? (reg << 1) ^ poly : reg << 1) & m;
        }
    }
    return (reg ^ xorout) & m;
}
/* The 16-bit words of d (an odd byte padded with zero) summed, or their complements summed. */
static inline uint64_t p4n_words16(const uint8_t *d, size_t n, int sub) {
    uint64_t s = 0;
    for (size_t i = 0; i < n; i += 2) {
        uint64_t wd = ((uint64_t)d[i] << 8) | (i + 1 < n ? d[i + 1] : 0);
        s += sub ? 0xFFFF ^ wd : wd;
    }
    return s;
}
static inline uint64_t p4n_fold16(uint64_t s) {
    while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
    return s;
}
"""


def _has_auto_init(prog: ir.Program) -> bool:
    from p4sim.runtime.tna import has_annotation

    return has_annotation(prog, "pa_auto_init_metadata")


def generate_tna(prog: ir.Program) -> TnaGenerated:
    """C for a TNA ``prog``; raises ``Unsupported`` for a construct outside the native subset."""
    return TnaCGen(prog).generate()
