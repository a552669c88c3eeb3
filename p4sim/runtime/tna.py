"""One loaded TNA program: the six blocks of a Tofino pipe bound to this switch's state.

What differs from v1model (see ``pipeline.Pipeline``):

* the blocks are ingress parser / control / deparser and egress parser / control / deparser;
  the hardware's intrinsic metadata reaches the parsers *in the packet* (the ingress parser sees
  8 bytes of ``ingress_intrinsic_metadata_t`` then ``PORT_METADATA_SIZE`` bits of port metadata
  or resubmit data; the egress parser sees ``egress_intrinsic_metadata_t``) and ingress talks to
  the traffic manager through ``ingress_intrinsic_metadata_for_tm_t``;
* externs are TNA's (Register + RegisterAction, Hash, Random, Counter, Meter, Checksum, Mirror,
  Resubmit, Digest); each register may be touched once per packet per pass
  (``TnaContext.double_access`` raises :class:`TnaRuleError`).
"""
from __future__ import annotations

import importlib
from typing import Any, Optional

import crcmod

from p4sim.errors import CompileError
from p4sim.frontend import ir
from p4sim.runtime import codegen
from p4sim.runtime.externs import Counter, Meter, Register
from p4sim.runtime.hashing import pack_bits
from p4sim.runtime.objects import pyattr
from p4sim.runtime.pipeline import PacketContext, Pipeline, backend_choice
from p4sim.runtime.tna_codegen import struct_layout, value_width

# Bytes per queue cell, the unit of enq_qdepth/deq_qdepth (Tofino: 80 B, Tofino2: 176 B).
CELL_BYTES = {1: 80, 2: 176}


class TnaRuleError(RuntimeError):
    """The program broke a Tofino rule a compiler could not see statically (two accesses to one
    register in one pass).  Raised out of ``Switch.send``: a Tofino program that does this does
    not exist (bf-p4c rejects it), so a test must see it, not a drop counter."""


class _Shim:
    """What shared runtime code (tables, counters) reads as ``X.sm``."""

    __slots__ = ("packet_length",)

    def __init__(self) -> None:
        self.packet_length = 0


class TnaChecksum:
    """``Checksum``: a running ones'-complement sum over 16-bit words, reset per packet.  In a
    parser it either verifies (add, verify) or computes a residual (subtract, get), not both
    (bf-p4c's rule; tna_codegen refuses a mix)."""

    __slots__ = ("acc",)

    def __init__(self) -> None:
        self.acc = 0

    @staticmethod
    def _words(value: int, nbits: int) -> int:
        data = pack_bits(value, nbits)
        if len(data) & 1:
            data += b"\x00"
        return sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))

    def add(self, value: int, nbits: int) -> None:
        self.acc += self._words(value, nbits)

    def subtract(self, value: int, nbits: int) -> None:
        # ones'-complement subtraction = adding the complement of each word
        data = pack_bits(value, nbits)
        if len(data) & 1:
            data += b"\x00"
        for i in range(0, len(data), 2):
            self.acc += 0xFFFF ^ int.from_bytes(data[i:i + 2], "big")

    def _fold(self) -> int:
        s = self.acc
        while s >> 16:
            s = (s & 0xFFFF) + (s >> 16)
        return s

    def verify(self) -> bool:
        return self._fold() == 0xFFFF

    def get(self) -> int:
        # A parser checksum that subtracts is bf-p4c's residual mode (get() deposits the
        # residual): the ones'-complement sum of the subtracted words' negations, i.e. what a
        # deparser's update() adds to the new fields to checksum them with everything it did
        # not subtract.  (A checksum that adds can only verify: the front end refuses get().)
        return self._fold() & 0xFFFF


class TnaHash:
    """``Hash<W>(algo[, poly])``: the W low bits (the high bits with ``msb``) of a CRC over the
    field list packed MSB first (zero padded at the end to a whole byte).  Predefined CRCs are
    the Tofino dynamic-hash catalogue's: CRC8 = crc_8 (0x07), CRC16 = crc_16 (0x8005 reflected,
    = CRC-16/ARC), CRC32 = crc_32 (IEEE 802.3)."""

    _PREDEF = {"CRC8": (8, 0x07, False, 0, 0), "CRC16": (16, 0x8005, True, 0, 0),
               "CRC32": (32, 0x04C11DB7, True, 0xFFFFFFFF, 0xFFFFFFFF)}

    def __init__(self, inst: ir.ExternInstance, rng: Any) -> None:
        self.width = value_width(inst.type_args[0])
        algo = str(inst.ctor_args[0])
        self.rng = rng
        self.algo = algo
        self.msb = self.extend = False
        self.fn = None
        if algo in self._PREDEF:
            cw, poly, rev, init, xor = self._PREDEF[algo]
        elif algo == "CUSTOM":
            poly_inst = inst.ctor_args[1]
            assert isinstance(poly_inst, ir.ExternInstance)
            cw = value_width(poly_inst.type_args[0])
            coeff, rev, msb, ext, init, xor = (int(x) for x in poly_inst.ctor_args)
            poly = coeff & ((1 << cw) - 1)
            self.msb, self.extend, rev = bool(msb), bool(ext), bool(rev)
        elif algo in ("IDENTITY", "RANDOM", "XOR16"):
            cw = poly = init = xor = 0
            rev = False
        else:
            raise CompileError(f"unsupported by p4sim: hash algorithm {algo}", inst.pos)
        self.crc_width = cw
        if poly:
            # crcmod takes the polynomial with its top bit, and an initial value that it xors
            # with xorOut before starting (its catalogue lists CRC-32 with init 0), so the
            # register's real initial value is passed as init ^ xor
            self.fn = crcmod.mkCrcFun((1 << cw) | poly, initCrc=init ^ xor, rev=rev, xorOut=xor)

    def get(self, value: int, nbits: int) -> int:
        w = self.width
        if self.algo == "IDENTITY":
            return value & ((1 << w) - 1)
        if self.algo == "RANDOM":
            return self.rng.getrandbits(w)
        if self.algo == "XOR16":
            data = pack_bits(value, nbits)
            if len(data) & 1:
                data += b"\x00"
            h = 0
            for i in range(0, len(data), 2):
                h ^= int.from_bytes(data[i:i + 2], "big")
            cw = 16
        else:
            h = self.fn(pack_bits(value, nbits))
            cw = self.crc_width
        if w <= cw:
            return (h >> (cw - w)) if self.msb else h & ((1 << w) - 1)
        if self.extend:  # repeat the hash to fill the wider output
            out, filled = 0, 0
            while filled < w:
                out = (out << cw) | h
                filled += cw
            return out & ((1 << w) - 1)
        return h


class TnaContext(PacketContext):
    """Per-packet state of a TNA pass (ingress or egress)."""

    def __init__(self, drop_port: int, seed: int, port_md_bits: int) -> None:
        super().__init__(drop_port, seed)
        self.sm = _Shim()
        self.pass_id = 0
        self.port_md_bits = port_md_bits
        self.dentry: Any = None
        self.checksums: dict[int, TnaChecksum] = {}
        self.mirror: Optional[tuple[int, int, int]] = None
        self.resubmit_req: Optional[tuple[int, int]] = None

    def begin_pass(self, now: float, packet_length: int) -> None:
        self.pass_id += 1
        self.now = now
        self.sm.packet_length = packet_length
        self.mirror = self.resubmit_req = None
        self.dentry = None
        if self.dmeter:
            self.dmeter.clear()
        for c in self.checksums.values():
            c.acc = 0

    def cksum(self, obj: TnaChecksum) -> TnaChecksum:
        return obj

    def double_access(self, reg: Register, what: str, where: str) -> None:
        raise TnaRuleError(f"{where}: {what}: register {reg.name} was already accessed in this "
                           f"pass (at {getattr(reg, 'last_site', '?')}); Tofino allows one "
                           "access per register per packet")

    def no_direct_entry(self, reg: str, where: str) -> None:
        raise TnaRuleError(f"{where}: the direct register {reg} is used outside an action of "
                           "the table whose `registers` it is")

    def request_mirror(self, session: int, data: int, nbits: int) -> None:
        self.mirror = (session, data, nbits)

    def request_resubmit(self, data: int, nbits: int) -> None:
        self.resubmit_req = (data, nbits)


class TnaPipeline(Pipeline):
    """A TNA program loaded into one switch."""

    # the native backend runs a pass's three blocks in one call (TnaSwitch._ingress_blocks and
    # _egress_blocks are the reference's)
    ingress_pass = None
    egress_pass = None

    def __init__(self, code: codegen.CompiledCode, ctx: TnaContext) -> None:
        self.checksums: list[TnaChecksum] = []
        comp, prog, ns, rf = self._load(code, ctx)
        self.arch = prog.arch
        self.target = prog.tofino_target or 1
        self.cell_bytes = CELL_BYTES[self.target]
        self.ingress_parser = ns[rf["ingress_parser"]]
        self.ingress = ns[rf["ingress"]]
        self.ingress_deparser = ns[rf["ingress_deparser"]]
        self.egress_parser = ns[rf["egress_parser"]]
        self.egress = ns[rf["egress"]]
        self.egress_deparser = ns[rf["egress_deparser"]]
        for c in self.checksums:
            ctx.checksums[id(c)] = c
        cls = comp.classes.names
        types = prog.types

        def klass(name: str) -> Any:
            t = types.get(name)
            if t is None or id(t) not in cls:
                raise CompileError(f"tna.p4 lacks {name}")
            return ns[cls[id(t)]]

        self.IG_INTR = klass("ingress_intrinsic_metadata_t")
        self.IG_TM = klass("ingress_intrinsic_metadata_for_tm_t")
        self.IG_PRSR = klass("ingress_intrinsic_metadata_from_parser_t")
        self.IG_DPRSR = klass("ingress_intrinsic_metadata_for_deparser_t")
        self.EG_INTR = klass("egress_intrinsic_metadata_t")
        self.EG_PRSR = klass("egress_intrinsic_metadata_from_parser_t")
        self.EG_DPRSR = klass("egress_intrinsic_metadata_for_deparser_t")
        self.EG_OPORT = klass("egress_intrinsic_metadata_for_output_port_t")
        self.blocks = prog.blocks

        def user_types(role: str) -> tuple[Any, Any, Any]:
            ps = [v for v in prog.blocks[role].params
                  if not (isinstance(v.type, ir.ExternT) and v.type.name in ("packet_in", "packet_out"))]
            return ns[cls[id(ps[0].type)]], ns[cls[id(ps[1].type)]], ps[1].type

        self.IH, self.IM, self.meta_type = user_types("ingress_parser")
        self.EH, self.EM, self.egress_meta_type = user_types("egress_parser")
        self.M = self.IM
        self.n_params = {r: len([v for v in prog.blocks[r].params
                                 if not (isinstance(v.type, ir.ExternT)
                                         and v.type.name in ("packet_in", "packet_out"))])
                         for r in ir.TNA_ROLES}
        self.reads_parser_err = set(comp.reads_parser_err)
        self.no_error = comp.err.get("NoError", 0)
        self.too_short = comp.err.get("PacketTooShort", -99)
        self.no_match = comp.err.get("NoMatch", -98)
        self.source = code.source
        self.uses_clone = False
        # bf-p4c initialises user metadata only under @pa_auto_init_metadata (anywhere in the
        # program: it collects it as a global pragma); without it, a field read before it is
        # written holds whatever its PHV container held (the back end marks it pa_no_init)
        self.auto_init_metadata = has_annotation(prog, "pa_auto_init_metadata")
        # without it, the all-ones start of each gress's metadata, worked out once here (the
        # per-packet path only assigns): (path of nested struct attributes, attribute, value)
        self._ones: dict[int, list[tuple[tuple[str, ...], str, Any]]] = {
            id(t): ([] if self.auto_init_metadata else _ones_of(t))
            for t in (self.meta_type, self.egress_meta_type)}

    def fresh_metadata(self, obj: Any, t: ir.StructT) -> Any:
        """A new user-metadata struct as the parser starts: zeros under @pa_auto_init_metadata,
        otherwise every field set to all ones, so that a program that reads a field it never
        wrote gets a wrong answer here as it would on the switch, not a silent zero."""
        for path, attr, value in self._ones[id(t)]:
            target = obj
            for step in path:
                target = getattr(target, step)
            setattr(target, attr, value)
        return obj

    def _make_extern(self, inst: ir.ExternInstance) -> Any:
        k, a = inst.extern, inst.ctor_args
        name = inst.qualified_name
        if k == "Register":
            t = inst.type_args[0]
            obj = Register(name, int(a[0]), value_width(t))
            if len(a) > 1:
                obj.cells = [int(a[1])] * obj.size
            obj.last = -1  # pass id of the last access (one access per pass)
            obj.last_site = ""
            obj.fields = [f.name for f in t.fields] if isinstance(t, ir.StructT) else None
            obj.layout = struct_layout(t) if isinstance(t, ir.StructT) else None
            self.registers[name] = obj
            return obj
        if k == "Counter":
            kind = {"PACKETS": "packets", "BYTES": "bytes"}.get(str(a[1]), "packets_and_bytes")
            obj = Counter(name, int(a[0]), kind)
            self.counters[name] = obj
            return obj
        if k == "Meter":
            obj = Meter(name, int(a[0]), "bytes" if str(a[1]) == "BYTES" else "packets")
            self.meters[name] = obj
            return obj
        if k == "Hash":
            return TnaHash(inst, self.ctx.rng)
        if k == "DirectRegister":
            obj = Register(name, 0, value_width(inst.type_args[0]))  # cells live on the entries
            obj.last = -1
            obj.last_site = ""
            return obj
        if k == "Checksum":
            c = TnaChecksum()
            self.checksums.append(c)
            return c
        return None

    @staticmethod
    def ucast_set(tm: Any) -> bool:
        """Whether ingress wrote ``ucast_egress_port`` (unwritten: the packet has no destination)."""
        return "ucast_egress_port" in tm.__dict__

    def parser_error_flags(self, err: int) -> int:
        """parser_err bits for a p4sim parser error (PARSER_ERROR_* of tna.p4)."""
        if err == self.too_short:
            return 0x0002  # PARTIAL_HDR
        if err == self.no_match:
            return 0x0001  # NO_MATCH
        return 0x0001


def make_tna_pipeline(program: Any, ctx: TnaContext, backend: Optional[str] = None) -> TnaPipeline:
    """The pipeline of a TNA ``p4sim.Program`` on the chosen backend (as ``pipeline.make_pipeline``
    for v1model): "native" runs the six blocks compiled to C when it can, else the reference
    after one warning."""
    if backend_choice(backend) == "native":
        native = importlib.import_module("p4sim.native").native_tna_pipeline(program, ctx)
        if native is not None:
            return native
    return TnaPipeline(program.code(), ctx)


def has_annotation(prog: ir.Program, name: str) -> bool:
    """Whether any control, parser or struct/header type of ``prog`` carries ``@name``."""
    decls = [*prog.controls.values(), *prog.parsers.values(), *prog.types.values()]
    return any(name in (getattr(d, "annotations", None) or {}) for d in decls)


def _ones_of(t: ir.StructT, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str, Any]]:
    """Every unsigned bit and bool field of a struct (nested structs included) with its
    all-ones value; headers keep their validity (bf-p4c initialises validity bits), enums and
    signed fields their defaults."""
    out: list[tuple[tuple[str, ...], str, Any]] = []
    for f in t.fields:
        ft, a = f.type, pyattr(f.name)
        if isinstance(ft, ir.BitT) and not ft.signed:
            out.append((path, a, (1 << ft.width) - 1))
        elif isinstance(ft, ir.BoolT):
            out.append((path, a, True))
        elif isinstance(ft, ir.StructT):
            out += _ones_of(ft, path + (a,))
    return out
