"""C source for one v1model program, generated from p4sim's IR.

The walk over the IR is the one the reference code generator (p4sim/runtime/codegen) uses,
``runtime.irwalk.IRWalker``: this module only spells it in C (``spelling.toml`` and the
``spell_*``/``st_*``/``extern_*``/``builtin_*`` methods) and adds what only C needs.  One C
function per parser, control (its frame struct holds parameters and locals), action, table and
function.  Every scalar is a ``uint64_t`` holding the value masked to
its width, exactly the Python int the reference holds; composites are C structs (a header has a
``_v`` validity byte; an invalid header reads as zeros, as in the reference).  State that outlives
a packet (registers, counters, meters, tables) lives in one ``inst_t`` per switch.

Anything outside the subset below raises ``Unsupported`` naming the construct and its position;
the caller then runs the whole program on the reference backend (never part of it).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from p4sim.frontend import ir
from p4sim.runtime.codegen import enum_member
from p4sim.runtime.irwalk import MATCH_KINDS, IRWalker, bitmask, load_spelling, table_action_refs
from p4sim.runtime.objects import is_composite, scalar_width

HASHES = {"crc32": "p4n_crc32", "crc32_custom": "p4n_crc32", "crc16": "p4n_crc16", "crc16_custom": "p4n_crc16",
          "identity": "p4n_identity", "csum16": "p4n_csum16", "xor16": "p4n_xor16"}
MAX_KEYS = 16
HASH_ORDER = ("crc32", "crc16", "identity", "csum16", "xor16")  # p4n_hash_bytes's algo numbers


# Arithmetic helpers of every generated module (division by zero is 0, as in BMv2).
PRELUDE = """
static inline uint64_t p4n_udiv(uint64_t a, uint64_t b) { return b ? a / b : 0; }
static inline uint64_t p4n_umod(uint64_t a, uint64_t b) { return b ? a % b : 0; }
static inline uint64_t p4n_shl(uint64_t a, uint64_t b, int w) { return b >= (uint64_t)w ? 0 : (a << b) & p4n_mask(w); }
static inline uint64_t p4n_shr(uint64_t a, uint64_t b) { return b >= 64 ? 0 : a >> b; }
static inline uint64_t p4n_sat_add(uint64_t a, uint64_t b, uint64_t m) { uint64_t s = a + b; return (s < a || s > m) ? m : s; }
static inline uint64_t p4n_sat_sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }
static inline int64_t p4n_sx(uint64_t a, int w) { if (w >= 64) return (int64_t)a; uint64_t h = UINT64_C(1) << (w - 1); return (int64_t)((a ^ h) - h); }
static inline int64_t p4n_sshr(int64_t x, uint64_t b) { return b >= 63 ? (x < 0 ? -1 : 0) : x >> b; }
static inline __int128 p4n_sdiv(int64_t x, int64_t y) { return y ? (__int128)x / y : 0; }
static inline __int128 p4n_smod(int64_t x, int64_t y) { return y ? (__int128)x % y : 0; }
static inline __int128 p4n_ssat(int64_t x, int64_t y, int sub, int w) {
    __int128 r = sub ? (__int128)x - y : (__int128)x + y;
    __int128 h = (__int128)1 << (w - 1);
    return r < -h ? -h : (r > h - 1 ? h - 1 : r);
}
"""


# The C types cffi and the generated module share (the meter and table state of p4n_runtime.h).
C_TYPES = ("typedef struct { int configured; double cir, cburst, pir, pburst; double tc, tp, last_us; } p4n_meter_t;\n"
           "typedef struct { int nk, nargs, mode, n, nlev; uint64_t *va, *vb; uint8_t *rng; int32_t *lev; "
           "uint64_t *lmask; int32_t *act; uint64_t *args; uint64_t *cpk, *cby; int32_t *hs; uint32_t hcap; "
           "p4n_meter_t *mtr; } p4n_tbl_t;")
# What generated C calls back into Python (p4sim.native.program binds them): (result, name, arguments).
CALLBACKS = (("uint64_t", "p4n_py_random", "void *, uint64_t, uint64_t"), ("uint64_t", "p4n_py_getrandbits32", "void *"),
             ("void", "p4n_py_digest", "void *, int, uint64_t *"), ("void", "p4n_py_log", "void *, int, int, uint64_t *"))


def callback_decls(callbacks: tuple[tuple[str, str, str], ...] = CALLBACKS) -> tuple[str, str]:
    """The callbacks' declarations for cffi's cdef and for the C source."""
    return ("\n".join(f'extern "Python" {r} {n}({a});' for r, n, a in callbacks),
            "\n".join(f"static {r} {n}({a});" for r, n, a in callbacks))


class Unsupported(Exception):
    """A construct the native backend does not run (the program falls back to the reference)."""

    def __init__(self, what: str, pos: Any = None) -> None:
        self.what, self.pos = what, pos
        super().__init__(f"{what}" + (f" at {pos}" if pos else ""))


def _lit(v: int) -> str:
    return f"UINT64_C({v})"


def _cid(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


# the C spelling of names and integers, for the TNA generator (p4sim/native/tna.py)
c_name, c_literal = _cid, _lit


@dataclass
class TableSpec:
    """What the Python side needs to load a table into C."""

    index: int
    decl: ir.TableDecl
    actions: list[ir.ActionDecl]  # table-local action index -> decl
    nargs: int
    has_counter: bool
    meter: int = -1  # index of its direct meter's colour slot (S->dm), or -1


@dataclass
class ExternSpec:
    index: int
    inst: ir.ExternInstance
    size: int
    cname: str


@dataclass
class Generated:
    """The C source, the declarations cffi needs, and the maps from P4 objects to C state."""

    source: str
    cdef: str
    structs: dict[str, str]  # role param name (H, M, SM) -> C struct type
    struct_fields: dict[str, list[str]]  # C struct type -> scalar field names (for the SM view)
    tables: list[TableSpec]
    registers: list[ExternSpec]
    counters: list[ExternSpec]
    meters: list[ExternSpec]
    digests: list[tuple[str, list[tuple[str, int]]]]
    action_ids: dict[int, int] = field(default_factory=dict)
    out_bytes: int = 0  # the deparser's largest output (bytes before the payload)
    reinjects: bool = False  # uses clone/resubmit/recirculate/truncate
    logs: list[str] = field(default_factory=list)  # log_msg messages by callback index
    asserts: list[str] = field(default_factory=list)  # where each assert/assume is (AssertFailed)


class Scope:
    def __init__(self, vars: dict[int, str], kind: str = "control", frame: str = "F",
                 in_parser: bool = False) -> None:
        self.vars = vars
        self.kind = kind
        self.frame = frame
        self.in_parser = in_parser
        self.ret: Optional[str] = None  # how ``return`` is written here


class CGen(IRWalker):
    """Generates one program's C source (``generate()``): the shared walk (``IRWalker``)
    spelled in C, plus what only C needs (structs, frames, the table and extern state)."""

    unsupported = Unsupported
    runs_varbit = runs_unions = False
    archs: tuple[str, ...] = ("v1model",)  # p4sim.native.tna.TnaCGen runs TNA's
    spelling = load_spelling(Path(__file__).with_name("spelling.toml"))

    def __init__(self, prog: ir.Program) -> None:
        if prog.arch not in self.archs:
            raise Unsupported(f"architecture {prog.arch} (the native backend runs {', '.join(self.archs)})")
        self.prog = prog
        self.err = {name: i for i, name in enumerate(prog.errors)}
        if self.err.get("NoError", 0) != 0:
            raise Unsupported("error.NoError is not the first error member")
        self.n = 0
        self.struct_names: dict[int, str] = {}
        self.struct_defs: list[str] = []
        self.struct_scalars: dict[str, list[str]] = {}
        self.eq_fns: dict[int, str] = {}
        self.protos: list[str] = []
        self.bodies: list[str] = []
        self.action_ids: dict[int, int] = {}
        self.action_fn: dict[int, str] = {}
        self.action_ctl: dict[int, Optional[ir.ControlDecl]] = {}
        self.frames: dict[int, str] = {}
        self.tables: dict[int, TableSpec] = {}
        self.table_fn: dict[int, str] = {}
        self.externs: dict[int, tuple[str, ExternSpec]] = {}
        self.regs: list[ExternSpec] = []
        self.ctrs: list[ExternSpec] = []
        self.mtrs: list[ExternSpec] = []
        self.digests: list[tuple[str, list[tuple[str, int]]]] = []
        self.functions: dict[int, str] = {}
        self.hash_buf = 8
        self.out_bits = 0
        self.has_exit = _contains_exit(prog)  # (assert/assume leave the block the same way)
        self.logs: list[str] = []
        self.asserts: list[str] = []
        self.reinjects = False  # clone/resubmit/recirculate/truncate: packets take the switch's path

    # ------------------------------------------------------------------ names and types
    def tmp(self) -> str:
        self.n += 1
        return f"_t{self.n}"

    def sname(self, t: ir.Type) -> str:
        key = id(t)
        if key in self.struct_names:
            return self.struct_names[key]
        if isinstance(t, ir.StackT):
            # elements and the next index; constant indices only (the reference's ``.e[i]``)
            if not isinstance(t.elem, ir.HeaderT):
                raise Unsupported("a stack of header unions")
            name = f"s{len(self.struct_names)}_stack_{_cid(t.elem.name)}"
            elem = self.sname(t.elem)
            self.struct_names[key] = name
            self.struct_defs.append(f"struct {name} {{\n    struct {elem} e[{t.size}];\n    uint64_t n;\n}};")
            self.struct_scalars[name] = []
            return name
        if isinstance(t, ir.HeaderUnionT):
            raise Unsupported("header union type")
        if not isinstance(t, (ir.HeaderT, ir.StructT)):
            raise Unsupported(f"composite type {t}")
        if isinstance(t, ir.HeaderT) and t.varbit is not None:
            raise Unsupported(f"varbit field in header {t.name}")
        lines = []
        scalars = []
        for f in t.fields:
            if is_composite(f.type):
                lines.append(f"    struct {self.sname(f.type)} f_{_cid(f.name)};")
            else:
                self.scalar_check(f.type, f"field {t.name}.{f.name}")
                lines.append(f"    uint64_t f_{_cid(f.name)};")
                scalars.append(f.name)
        name = f"s{len(self.struct_names)}_{_cid(t.name)}"
        self.struct_names[key] = name
        body = ["    uint8_t _v;"] if isinstance(t, ir.HeaderT) else []
        body += lines or ["    uint8_t _empty;"]
        self.struct_defs.append(f"struct {name} {{\n" + "\n".join(body) + "\n};")
        self.struct_scalars[name] = scalars
        return name

    def scalar_check(self, t: ir.Type, what: str) -> None:
        if isinstance(t, (ir.BoolT, ir.ErrorT)):
            return
        if isinstance(t, ir.EnumT):
            return
        if isinstance(t, ir.BitT):
            if t.width > 64:
                raise Unsupported(f"{what}: bit<{t.width}> wider than 64 bits")
            return
        raise Unsupported(f"{what}: type {t}")

    def ctype(self, t: ir.Type, what: str = "value") -> str:
        if is_composite(t):
            return f"struct {self.sname(t)}"
        self.scalar_check(t, what)
        return "uint64_t"

    def action_id(self, a: ir.ActionDecl) -> int:
        if id(a) not in self.action_ids:
            self.action_ids[id(a)] = len(self.action_ids) + 1
        return self.action_ids[id(a)]

    # ------------------------------------------------------------------ how C spells what the walk decides
    def fresh(self, sc: Scope) -> str:
        return self.tmp()

    @staticmethod
    def out_of_scope(e: ir.VarRef) -> Exception:
        return Unsupported(f"variable {e.var.name} outside its scope", e.pos)

    @staticmethod
    def is_stable(code: str, comp: Optional[ir.Type]) -> bool:
        return comp is None and code.startswith(("UINT64_C(", "_t"))

    def spell_pin(self, t: str, code: str, comp: Optional[ir.Type]) -> str:
        return f"struct {self.sname(comp)} {t} = {code};" if comp is not None else f"uint64_t {t} = {code};"

    @staticmethod
    def spell_int(v: int, e: ir.Literal) -> str:
        if not 0 <= v < (1 << 64):
            raise Unsupported(f"integer constant {v} outside 64 bits", e.pos)
        return _lit(v)

    @staticmethod
    def spell_short_circuit(op: str, t: str, a: str, rp: list[str], b: str) -> list[str]:
        head = [f"uint64_t {t} = ({a}) != 0;", f"if ({'' if op == '&&' else '!'}{t}) {{"]
        return head + ["    " + x for x in rp] + [f"    {t} = ({b}) != 0;", "}"]

    def spell_composite_eq(self, op: str, a: str, b: str, t: ir.Type) -> str:
        r = f"{self.eq_fn(t)}(&({a}), &({b}))"
        return f"((uint64_t){r})" if op == "==" else f"((uint64_t)!{r})"

    @staticmethod
    def spell_concat(a: str, b: str, e: ir.Binary) -> str:
        rw = scalar_width(e.right.type)
        if scalar_width(e.left.type) + rw > 64:
            raise Unsupported("concatenation wider than 64 bits", e.pos)
        return f"((({a}) << {rw}) | ({b}))"

    def mux_inline(self, t: ir.Type) -> bool:
        self.ctype(t)
        return not is_composite(t)

    def spell_mux_branches(self, ty: ir.Type, t: str, c: str, tp: list[str], a: str, op: list[str], b: str) -> list[str]:
        lines = [f"{self.ctype(ty)} {t};", f"if ({c}) {{", *("    " + x for x in tp), f"    {t} = {a};", "} else {"]
        return lines + ["    " + x for x in op] + [f"    {t} = {b};", "}"]

    def new_object(self, t: ir.Type, sc: Scope, pre: list[str]) -> str:
        tmp = self.tmp()
        pre.append(f"struct {self.sname(t)} {tmp}; memset(&{tmp}, 0, sizeof {tmp});")
        return tmp

    @staticmethod
    def spell_field_init(obj: str, name: str, t: ir.Type, code: str) -> str:
        return f"{obj}.f_{_cid(name)} = {code};"

    def apply_table(self, e: ir.ApplyResult, sc: Scope, pre: list[str]) -> str:
        if id(e.table) not in self.table_fn:
            raise Unsupported(f"table {e.table.qualified_name} applied outside its control", e.pos)
        t = self.tmp()
        pre.append(f"uint64_t {t} = {self.table_fn[id(e.table)]}(S, {sc.frame});")
        if self.has_exit:
            pre.append(f"if (S->exited) {self.leave(sc)}")
        return t

    @staticmethod
    def spell_apply_result(r: str) -> dict[Optional[str], str]:
        return {None: "0", "hit": f"({r} >> 32)", "miss": f"((uint64_t)!({r} >> 32))", "action_run": f"({r} & 0xFFFFFFFFu)"}

    @staticmethod
    def spell_field(code: str, name: str) -> str:
        return f"({code}).f_{_cid(name)}"

    # ------------------------------------------------------------------ expressions
    def ex_Member(self, e: ir.Member, sc: Scope, pre: list[str]) -> str:
        if isinstance(e.base.type, ir.StackT) and e.name == "size":
            return _lit(e.base.type.size)
        if isinstance(e.base.type, (ir.StackT, ir.HeaderUnionT)):
            raise Unsupported(f"header stack / union member .{e.name}", e.pos)
        base = self.ex(e.base, sc, pre)
        if not is_composite(e.base.type):
            raise Unsupported(f"member .{e.name} of {e.base.type}", e.pos)
        return f"({base}).f_{_cid(e.name)}"

    def ex_StackIndex(self, e: ir.StackIndex, sc: Scope, pre: list[str]) -> str:
        if not isinstance(e.index, ir.Literal):
            raise Unsupported("header stack index that is not a constant", e.pos)
        i = e.index.value
        if not 0 <= i < e.base.type.size:
            raise Unsupported(f"stack index {i} out of bounds", e.pos)
        return f"({self.ex(e.base, sc, pre)}).e[{i}]"

    def ex_HeaderCall(self, e: ir.HeaderCall, sc: Scope, pre: list[str]) -> str:
        if not isinstance(e.target.type, ir.HeaderT):
            raise Unsupported(f"{e.method} on {e.target.type}", e.pos)
        obj = self.ex(e.target, sc, pre)
        if e.method == "isValid":
            return f"((uint64_t)({obj})._v)"
        if e.method == "setValid":
            pre.append(f"({obj})._v = 1;")
            return "0"
        if e.method == "setInvalid":
            pre.append(f"memset(&({obj}), 0, sizeof({obj}));")
            return "0"
        raise Unsupported(f"header method {e.method}", e.pos)

    def ex_ActionCall(self, e: ir.ActionCall, sc: Scope, pre: list[str]) -> str:
        fn = self.action_fn.get(id(e.action))
        if fn is None:
            raise Unsupported(f"call of action {e.action.qualified_name} outside its control", e.pos)
        frame = sc.frame if self.action_ctl[id(e.action)] is not None else "0"
        self.call(f"{fn}(S, {frame}", e.action.params, e.args, e.directions, sc, pre, None)
        return "0"

    def ex_FunctionCall(self, e: ir.FunctionCall, sc: Scope, pre: list[str]) -> str:
        fn = self.functions.get(id(e.function))
        if fn is None:
            raise Unsupported(f"function {e.function.name}", e.pos)
        rt = e.function.return_type
        ret = None if isinstance(rt, ir.VoidT) else self.ctype(rt, "function result")
        return self.call(f"{fn}(S", e.function.params, e.args, e.directions, sc, pre, ret) or "0"

    def call(self, head: str, params: list[ir.Var], args: list[Optional[ir.Expr]], dirs: list[Optional[str]],
             sc: Scope, pre: list[str], ret: Optional[str]) -> Optional[str]:
        """P4's copy-in/copy-out (P4_16 6.8), as the reference does it: arguments left to right,
        in values copied in, out/inout written back after the call (scalars first, then
        composites, each in parameter order)."""
        codes: list[str] = []
        outs: list[tuple[ir.Expr, str]] = []
        backs: list[tuple[ir.Expr, str]] = []
        for p, a in zip(params, args):
            if a is None:
                raise Unsupported("omitted argument", None)
        # in-values first as a left-to-right sequence; out/inout lvalues have no side effects here
        ins = [a for p, a, d in zip(params, args, dirs) if (d or p.direction) not in ("out", "inout")]
        vals = iter(self.ex_all(ins, sc, pre))
        for p, a, d in zip(params, args, dirs):
            d = d or p.direction
            comp = p.type if is_composite(p.type) else None  # composites go by pointer to a copy
            if d not in ("out", "inout"):
                val = next(vals)
                if comp is None:
                    codes.append(val)
                    continue
                t = self.tmp()
                pre.append(self.spell_pin(t, val, comp))
            else:  # a temporary the callee writes through, copied back after the call
                self.lvalue_check(a)
                t = self.tmp()
                if d == "out" and comp is not None:
                    pre.append(f"struct {self.sname(comp)} {t}; memset(&{t}, 0, sizeof {t});")
                else:
                    pre.append(self.spell_pin(t, "0" if d == "out" else self.ex(a, sc, pre), comp))
                (outs if comp is None else backs).append((a, t))
            codes.append(f"&{t}")
        call = head + "".join(", " + c for c in codes) + ")"
        r = None
        if ret is not None:
            r = self.tmp()
            pre.append(f"{ret} {r} = {call};")
        else:
            pre.append(f"{call};")
        for lv, t in outs + backs:
            self.assign(lv, t, sc, pre)
        if self.has_exit and head.startswith(("A", "FN")):  # exit, or a failed assert/assume
            pre.append(f"if (S->exited) {self.leave(sc)}")
        return r

    @staticmethod
    def leave(sc: Scope) -> str:
        """How code in scope ``sc`` returns once ``exit`` has run (the top-level block ends)."""
        return sc.ret.replace("@", "0") if sc.ret else "return 0;"

    def lvalue_check(self, a: ir.Expr) -> None:
        while isinstance(a, (ir.Member, ir.Slice, ir.StackIndex)):
            a = a.base
        if not isinstance(a, (ir.VarRef, ir.DontCare)):
            raise Unsupported(f"argument {type(a).__name__} as an out/inout lvalue", a.pos)

    def ex_PacketCall(self, e: ir.PacketCall, sc: Scope, pre: list[str]) -> str:
        if e.method == "lookahead" and sc.in_parser and isinstance(e.type, (ir.HeaderT, ir.StructT)):
            # a header comes back valid; fields first-field-first from the current position
            t = e.type
            leaves = ir.leaf_fields(t)
            total = sum(scalar_width(ft) for _, ft in leaves)
            pre.append(f"if (pos + {total} > nbits) {{ *err = {self.err['PacketTooShort']}; return pos; }}")
            tmp = self.tmp()
            pre.append(f"struct {self.sname(t)} {tmp}; memset(&{tmp}, 0, sizeof {tmp});")
            off = 0
            for path, ft in leaves:
                w = scalar_width(ft)
                v = f"p4n_rd(d, pos + {off}, {w})"
                fld = "".join(f".f_{_cid(p)}" for p in path)
                pre.append(f"{tmp}{fld} = {'(uint64_t)(' + v + ' != 0)' if isinstance(ft, ir.BoolT) else v};")
                off += w
            if isinstance(t, ir.HeaderT):
                pre.append(f"{tmp}._v = 1;")
            return tmp
        if e.method == "lookahead" and sc.in_parser and not is_composite(e.type):
            w = scalar_width(e.type)
            pre.append(f"if (pos + {w} > nbits) {{ *err = {self.err['PacketTooShort']}; return pos; }}")
            v = f"p4n_rd(d, pos, {w})"
            return f"((uint64_t)({v} != 0))" if isinstance(e.type, ir.BoolT) else v
        if e.method == "length":
            return "((uint64_t)nbits >> 3)" if sc.in_parser else "0"
        raise Unsupported(f"packet.{e.method}", e.pos)

    def ex_ExternCall(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> str:
        self.extern_call(e, sc, pre)
        return "0"

    def ex_BuiltinCall(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> str:
        self.builtin_call(e, sc, pre)
        return "0"

    def ex_DontCare(self, e: ir.DontCare, sc: Scope, pre: list[str]) -> str:
        raise Unsupported("_ read as a value", e.pos)

    # ------------------------------------------------------------------ lvalues
    def assign_whole(self, lhs: ir.Expr, value: str, sc: Scope, out: list[str]) -> None:
        """``lhs = value`` for a whole lvalue (``assign`` handles ``_`` and slices)."""
        if not isinstance(lhs, (ir.VarRef, ir.Member, ir.StackIndex)):
            raise Unsupported(f"assignment to {type(lhs).__name__}", lhs.pos)
        out.append(f"{self.ex(lhs, sc, out)} = {value};")

    def eq_fn(self, t: ir.Type) -> str:
        key = id(t)
        if key in self.eq_fns:
            return self.eq_fns[key]
        name = f"eq_{self.sname(t)}"
        self.eq_fns[key] = name
        parts = []
        if isinstance(t, ir.StackT):
            parts = [f"{self.eq_fn(t.elem)}(&a->e[{i}], &b->e[{i}])" for i in range(t.size)]
        for f in (t.fields if not isinstance(t, ir.StackT) else []):
            a = f"f_{_cid(f.name)}"
            parts.append(f"{self.eq_fn(f.type)}(&a->{a}, &b->{a})" if is_composite(f.type) else f"a->{a} == b->{a}")
        cmp = " && ".join(parts) or "1"
        s = self.sname(t)
        if isinstance(t, ir.HeaderT):
            body = f"if (!a->_v && !b->_v) return 1;\n    return a->_v == b->_v && {cmp};"
        else:
            body = f"return {cmp};"
        self.protos.append(f"static int {name}(const struct {s} *a, const struct {s} *b);")
        self.bodies.append(f"static int {name}(const struct {s} *a, const struct {s} *b) {{\n    {body}\n}}")
        return name

    # ------------------------------------------------------------------ data lists
    def packed(self, items: list[tuple[str, int, str]], pre: list[str]) -> tuple[str, str]:
        """A zeroed byte buffer holding the items MSB-first back to back (BMv2's packing), and
        its length in bytes."""
        total = sum(w for _, w, _ in items)
        nbytes = (total + 7) >> 3
        self.hash_buf = max(self.hash_buf, nbytes + 8)
        buf, nb = self.tmp(), self.tmp()
        pre.append(f"uint8_t {buf}[{nbytes + 8}]; memset({buf}, 0, sizeof {buf}); uint64_t {nb} = 0;")
        for c, w, _ in items:
            pre.append(f"p4n_wr({buf}, &{nb}, {c}, {w});")
        return buf, str(nbytes)

    # ------------------------------------------------------------------ externs and builtins
    def extern(self, inst: ir.ExternInstance) -> tuple[str, ExternSpec]:
        if id(inst) not in self.externs:
            k = inst.extern
            if k == "register":
                t = inst.type_args[0] if inst.type_args else ir.BitT(32)
                self.scalar_check(t, f"register {inst.qualified_name}")
                lst, pfx = self.regs, "R"
            elif k == "counter":
                lst, pfx = self.ctrs, "C"
            elif k == "meter":
                lst, pfx = self.mtrs, "M"
            else:
                raise Unsupported(f"extern {k} {inst.qualified_name}", inst.pos)
            spec = ExternSpec(len(lst), inst, int(inst.ctor_args[0]), f"{pfx}{len(lst)}_{_cid(inst.qualified_name)}")
            lst.append(spec)
            self.externs[id(inst)] = (spec.cname, spec)
        return self.externs[id(inst)]

    def dmeter_slot(self, inst: ir.ExternInstance) -> int:
        """The per-block colour slot of a direct meter (the reference's ``X.dmeter[id]``)."""
        slots = self.__dict__.setdefault("dmeters", {})
        return slots.setdefault(id(inst), len(slots))

    def extern_state(self, inst: ir.ExternInstance) -> tuple[str, int]:
        """A register's or counter's state in ``inst_t`` and its size."""
        name, spec = self.extern(inst)
        return f"S->{name}", spec.size

    def extern_meter_execute_meter(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> None:
        inst = e.instance
        name, spec = self.extern(inst)
        i = self.pinned_index(e.args[0], sc, pre)
        kind = str(inst.ctor_args[1]) if len(inst.ctor_args) > 1 else "packets"
        size_expr = "S->sm->f_packet_length" if kind == "bytes" else "1"
        self.assign(e.args[1], f"({i} < {spec.size} ? p4n_meter_exec(&S->{name}[{i}], {size_expr}, S->now) : 0)", sc, pre)

    def extern_direct_meter_read(self, e: ir.ExternCall, sc: Scope, pre: list[str]) -> None:
        k = self.dmeter_slot(e.instance)
        self.assign(e.args[0], f"(S->dm_set[{k}] ? S->dm[{k}] : 0)", sc, pre)

    def builtin_hash(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        a = e.args
        algo = enum_member(a[1])
        ow = scalar_width(a[0].type)
        if algo == "random":
            h = "p4n_py_getrandbits32(S->handle)"
        elif algo in HASHES:
            buf, nbytes = self.packed(self.flatten(a[3], sc, pre), pre)
            h = f"{HASHES[algo]}({buf}, {nbytes})"
        else:
            raise Unsupported(f"hash algorithm {algo}", e.pos)
        base, mx = self.ex_all([a[2], a[4]], sc, pre)
        hv, t = self.tmp(), self.tmp()
        pre.append(f"uint64_t {hv} = {h};")
        pre.append(f"uint64_t {t} = {mx};")
        M = _lit(bitmask(ow))
        self.assign(a[0], f"({t} ? (({base}) + {hv} % {t}) & {M} : ({base}) & {M})", sc, pre)

    def builtin_random(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        lo, hi = self.ex_all([e.args[1], e.args[2]], sc, pre)
        t = self.tmp()
        pre.append(f"uint64_t {t} = p4n_py_random(S->handle, {lo}, {hi});")
        self.assign(e.args[0], t, sc, pre)

    def builtin_verify(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        if not sc.in_parser:
            raise Unsupported(f"{e.name}()", e.pos)
        c = self.ex(e.args[0], sc, pre)
        code = self.ex(e.args[1], sc, pre)
        pre.append(f"if (!({c})) {{ *err = (int32_t)({code}); return pos; }}")

    def builtin_clone(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        # the switch does the cloning (p4sim.switch), as for the reference's X.request_clone
        self.reinjects = True
        kind = enum_member(e.args[0])
        if kind not in ("I2E", "E2E"):
            raise Unsupported(f"clone type {kind}", e.pos)
        fl = self.field_list(e, 2)
        session = self.ex(e.args[1], sc, pre)
        pre.append(f"S->ctl.clone_set = 1; S->ctl.clone_kind = {int(kind == 'E2E')}; "
                   f"S->ctl.clone_session = {session}; S->ctl.clone_fl = {-1 if fl is None else fl};")

    def builtin_resubmit(self, e: ir.BuiltinCall, sc: Scope, pre: list[str], which: str = "resub") -> None:
        self.reinjects = True
        fl = self.field_list(e, 0)
        pre.append(f"S->ctl.{which}_set = 1; S->ctl.{which}_fl = {-1 if fl is None else fl};")

    def builtin_recirculate(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        self.builtin_resubmit(e, sc, pre, "recirc")

    def builtin_truncate(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        self.reinjects = True
        pre.append(f"S->ctl.trunc_set = 1; S->ctl.trunc = {self.ex(e.args[0], sc, pre)};")

    def builtin_log_msg(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        a = e.args
        if not (isinstance(a[0], ir.Literal) and isinstance(a[0].value, str)):
            raise Unsupported("log_msg with a message that is not a string constant", e.pos)
        vals = [c for c, _, _ in self.flatten(a[1], sc, pre)] if len(a) > 1 else []
        self.logs.append(a[0].value)
        arr = self.tmp()
        pre.append(f"uint64_t {arr}[{max(1, len(vals))}] = {{{', '.join(vals) or '0'}}};")
        pre.append(f"p4n_py_log(S->handle, {len(self.logs) - 1}, {len(vals)}, {arr});")

    def builtin_assert(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        if sc.in_parser:
            raise Unsupported(f"{e.name}()", e.pos)
        # the reference raises AssertFailed(where): the packet is dropped and counted
        self.asserts.append(str(e.pos) if e.pos else e.name)
        c = self.ex(e.args[0], sc, pre)
        pre.append(f"if (!({c})) {{ S->assert_at = {len(self.asserts)}; S->exited = 1; {self.leave(sc)} }}")

    def builtin_digest(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        t, items, names = self.digest_items(e, sc, pre)
        idx = len(self.digests)
        self.digests.append((getattr(t, "name", "digest"), [(nm, w) for (_, w, _), nm in zip(items, names)]))
        arr = self.tmp()
        pre.append(f"uint64_t {arr}[{max(1, len(items))}] = {{{', '.join(c for c, _, _ in items) or '0'}}};")
        pre.append(f"p4n_py_digest(S->handle, {idx}, {arr});")

    def builtin_checksum(self, e: ir.BuiltinCall, sc: Scope, pre: list[str]) -> None:
        if e.name.endswith("_with_payload"):
            raise Unsupported(f"{e.name}()", e.pos)
        a = e.args
        algo = enum_member(a[3])
        if algo not in HASHES:
            raise Unsupported(f"checksum algorithm {algo}", e.pos)
        cond = self.ex(a[0], sc, pre)
        inner: list[str] = []
        buf, nbytes = self.packed(self.flatten(a[1], sc, inner), inner)
        cw = scalar_width(a[2].type)
        calc = f"({HASHES[algo]}({buf}, {nbytes}) & {_lit(bitmask(cw))})"
        if e.name == "verify_checksum":
            field = self.ex(a[2], sc, inner)
            inner.append(f"if ({calc} != {field}) S->sm->f_checksum_error = 1;")
        else:
            self.assign(a[2], calc, sc, inner)
        pre.append(f"if ({cond}) {{")
        pre += ["    " + x for x in inner]
        pre.append("}")

    # ------------------------------------------------------------------ statements
    def stmts(self, body: list[ir.Stmt], sc: Scope, out: list[str]) -> None:
        for s in body:
            self.stmt(s, sc, out)

    def st_Block(self, s: ir.Block, sc: Scope, out: list[str]) -> None:
        out.append("{")
        inner: list[str] = []
        self.stmts(s.stmts, sc, inner)
        out += ["    " + x for x in inner]
        out.append("}")

    def compound_assign(self, s: ir.Assign, sc: Scope, out: list[str]) -> None:
        self.lvalue_check(s.lhs)
        self.assign_stmt(s, sc, out)

    def st_Assign(self, s: ir.Assign, sc: Scope, out: list[str]) -> None:
        if not isinstance(s.lhs, ir.DontCare):
            self.lvalue_check(s.lhs)
        self.assign_stmt(s, sc, out)

    def assign_stmt(self, s: ir.Assign, sc: Scope, out: list[str]) -> None:
        pre: list[str] = []
        v = self.ex(s.rhs, sc, pre)
        self.assign(s.lhs, v, sc, pre)
        out += pre

    def st_VarDecl(self, s: ir.VarDecl, sc: Scope, out: list[str]) -> None:
        self.declare(s.var, s.init, sc, out)

    def st_Exit(self, s: ir.Exit, sc: Scope, out: list[str]) -> None:
        if sc.kind not in ("control", "action"):
            raise Unsupported("exit here", s.pos)
        out.append("S->exited = 1;")
        out.append(sc.ret.replace("@", "0") if sc.ret else "return;")

    def st_Return(self, s: ir.Return, sc: Scope, out: list[str]) -> None:
        if sc.ret is None:
            raise Unsupported("return here", s.pos)
        pre: list[str] = []
        v = self.ex(s.value, sc, pre) if s.value is not None else "0"
        out += pre
        out.append(sc.ret.replace("@", v))

    def declare(self, var: ir.Var, init: Optional[ir.Expr], sc: Scope, out: list[str], name: Optional[str] = None) -> None:
        pre: list[str] = []
        if name is None:
            self.n += 1
            name = f"v{self.n}_{_cid(var.name)}"
            sc.vars[id(var)] = name
            decl = f"{self.ctype(var.type, 'variable ' + var.name)} "
        else:
            decl = ""
        if isinstance(var.type, ir.TupleT):
            raise Unsupported("tuple variable", var.pos)
        if is_composite(var.type):
            if init is not None:
                v = self.ex(init, sc, pre)
                out += pre
                out.append(f"{decl}{name} = {v};")
            else:
                out.append(f"{decl}{name}; memset(&{name}, 0, sizeof {name});" if decl else
                           f"memset(&{name}, 0, sizeof {name});")
        else:
            v = self.ex(init, sc, pre) if init is not None else "0"
            out += pre
            out.append(f"{decl}{name} = {v};")

    def call_stmt(self, c: ir.Expr, sc: Scope, out: list[str]) -> None:
        pre: list[str] = []
        if isinstance(c, ir.PacketCall):
            self.packet_stmt(c, sc, out)
            return
        if not isinstance(c, (ir.ApplyResult, ir.ActionCall, ir.FunctionCall, ir.ExternCall, ir.BuiltinCall,
                              ir.HeaderCall)):
            raise Unsupported(f"call {type(c).__name__}", c.pos)
        self.ex(c, sc, pre)
        out += pre

    @staticmethod
    def spell_arm(i: int, conds: list[str]) -> str:
        return f"{'} else if' if i else 'if'} ({' || '.join(conds) or '0'}) {{"

    @staticmethod
    def spell_end_if() -> list[str]:
        return ["}"]

    @staticmethod
    def emit(lines: list[str], out: list[str]) -> None:
        out += lines
        lines.clear()

    def nested(self, body: ir.Stmt, sc: Scope, out: list[str]) -> None:
        inner: list[str] = []
        self.stmt(body, sc, inner)
        out += ["    " + x for x in inner]

    def inline(self, body: ir.Stmt, sc: Scope, out: list[str]) -> None:
        self.stmt(body, sc, out)

    def switch_label(self, lab: ir.Expr, sc: Scope, pre: list[str], pos: Any) -> str:
        lp: list[str] = []
        code = self.ex(lab, sc, lp)
        if lp:
            raise Unsupported("switch label with side effects", pos)
        return code

    # ------------------------------------------------------------------ packets
    def packet_stmt(self, c: ir.PacketCall, sc: Scope, out: list[str]) -> None:
        pre: list[str] = []
        short = self.err.get("PacketTooShort")
        if c.method == "extract" and sc.in_parser and len(c.args) == 1:
            tgt = c.args[0]
            t = tgt.type
            if not isinstance(t, ir.HeaderT) or t.varbit is not None:
                raise Unsupported("extract into a stack, union or varbit header", c.pos)
            if isinstance(tgt, (ir.Member, ir.StackProp)) and isinstance(tgt.base.type, (ir.StackT, ir.HeaderUnionT)):
                raise Unsupported("extract into a stack or union", c.pos)
            obj = self.ex(tgt, sc, pre)
            out += pre
            out.append(f"if (pos + {t.width} > nbits) {{ *err = {short}; return pos; }}")
            off = 0
            for path, ft in ir.leaf_fields(t):
                w = scalar_width(ft)
                fld = "".join(f".f_{_cid(p)}" for p in path)
                v = f"p4n_rd(d, pos + {off}, {w})"
                out.append(f"({obj}){fld} = {'(uint64_t)(' + v + ' != 0)' if isinstance(ft, ir.BoolT) else v};")
                off += w
            out.append(f"({obj})._v = 1;")
            out.append(f"pos += {t.width};")
        elif c.method == "advance" and sc.in_parser:
            n = self.ex(c.args[0], sc, pre)
            out += pre
            out.append(f"pos += (int64_t)({n});")
            out.append(f"if (pos > nbits) {{ *err = {short}; return pos; }}")
        elif c.method == "emit" and sc.kind == "deparser":
            obj = self.ex(c.args[0], sc, pre)
            out += pre
            for code, t in self.emit_headers(obj, c.args[0].type, c.pos):
                out.append(f"if (({code})._v) {{")
                for path, ft in ir.leaf_fields(t):
                    fld = "".join(f".f_{_cid(p)}" for p in path)
                    out.append(f"    p4n_wr(S->out, &S->nb, ({code}){fld}, {scalar_width(ft)});")
                out.append("}")
                self.out_bits += t.width
        elif c.method == "lookahead" and sc.in_parser:
            self.ex_PacketCall(c, sc, pre)
            out += pre
        elif c.method == "length":
            pass
        else:
            raise Unsupported(f"packet.{c.method} here", c.pos)

    # ------------------------------------------------------------------ blocks
    def compile_parser(self, p: ir.ParserDecl) -> str:
        sc = Scope(vars={}, kind="parser", in_parser=True)
        params = []
        for v in p.params:
            if isinstance(v.type, ir.ExternT) and v.type.name == "packet_in":
                continue
            if not is_composite(v.type):
                raise Unsupported("scalar parser parameter", v.pos)
            nm = f"p_{_cid(v.name)}"
            sc.vars[id(v)] = f"(*{nm})"
            params.append(f"struct {self.sname(v.type)} *{nm}")
        out: list[str] = []
        for loc in p.locals:
            if isinstance(loc, ir.VarDecl):
                self.declare(loc.var, loc.init, sc, out)
            else:
                raise Unsupported(f"extern {loc.extern} in a parser", loc.pos)
        labels = {name: f"st_{_cid(name)}" for name in p.states}
        out.append(self.goto("start", labels))
        no_match = self.err.get("NoMatch", 2)
        for st in p.states.values():
            out.append(f"{labels[st.name]}: {{")
            body: list[str] = []
            self.stmts(st.stmts, sc, body)
            t = st.transition
            if isinstance(t, str):
                body.append(self.goto(t, labels))
            else:
                pre: list[str] = []
                keys = self.select_keys(t.keys, sc, pre)
                body += pre
                for case in t.cases:
                    conds = self.select_conds(keys, case.keysets)
                    body.append(f"if ({' && '.join(conds) or '1'}) {self.goto(case.next_state, labels)}")
                body.append(f"{{ *err = {no_match}; return pos; }}")
            out += ["    " + x for x in body]
            out.append("}")
        fn = f"PRS_{_cid(p.name)}"
        sig = (f"static int64_t {fn}(inst_t *S, const uint8_t *d, int64_t nbits, {', '.join(params)}, "
               f"int32_t *err)")
        self.protos.append(sig + ";")
        self.bodies.append(sig + " {\n    int64_t pos = 0;\n" + "\n".join("    " + x for x in out) + "\n}")
        return fn

    def frame(self, c: ir.ControlDecl) -> tuple[str, dict[int, str]]:
        name = f"FR_{_cid(c.name)}"
        fields, vars_ = [], {}
        for v in c.params:
            if isinstance(v.type, ir.ExternT):
                continue
            if not is_composite(v.type):
                raise Unsupported(f"scalar parameter {v.name} of control {c.name}", v.pos)
            fields.append(f"    struct {self.sname(v.type)} *p_{_cid(v.name)};")
            vars_[id(v)] = f"(*F->p_{_cid(v.name)})"
        for loc in c.locals:
            if isinstance(loc, ir.VarDecl):
                self.n += 1
                a = f"l{self.n}_{_cid(loc.var.name)}"
                fields.append(f"    {self.ctype(loc.var.type, 'local ' + loc.var.name)} {a};")
                vars_[id(loc.var)] = f"F->{a}"
        self.struct_defs.append(f"typedef struct {{\n" + ("\n".join(fields) or "    int _empty;") + f"\n}} {name};")
        self.frames[id(c)] = name
        return name, vars_

    def compile_control(self, c: ir.ControlDecl, role: str) -> str:
        fr, fvars = self.frame(c)
        for t in c.tables.values():
            self.compile_table(t, c, fvars)
        actions = list(c.actions.values())
        for a in actions:
            self.declare_action(a, c)
        for a in actions:
            self.compile_action(a, fvars, c)
        for loc in c.locals:
            if isinstance(loc, ir.ExternInstance) and loc.extern not in ("direct_counter", "direct_meter"):
                self.extern(loc)
        is_dep = role == "deparser"
        sc = Scope(vars=dict(fvars), kind="deparser" if is_dep else "control")
        sc.ret = "return;"
        params, binds = [], []
        for v in c.params:
            if isinstance(v.type, ir.ExternT):
                continue
            params.append(f"struct {self.sname(v.type)} *p_{_cid(v.name)}")
            binds.append(f"F->p_{_cid(v.name)} = p_{_cid(v.name)};")
        out: list[str] = [f"{fr} F_; {fr} *F = &F_;", *binds]
        for loc in c.locals:
            if isinstance(loc, ir.VarDecl):
                self.declare(loc.var, loc.init, sc, out, name=fvars[id(loc.var)])
        self.stmt(c.apply, sc, out)
        fn = f"CTL_{_cid(c.name)}"
        sig = f"static void {fn}(inst_t *S, {', '.join(params)})"
        self.protos.append(sig + ";")
        self.bodies.append(sig + " {\n" + "\n".join("    " + x for x in out) + "\n}")
        return fn

    def declare_action(self, a: ir.ActionDecl, c: Optional[ir.ControlDecl]) -> None:
        if id(a) in self.action_fn:
            return
        self.action_fn[id(a)] = f"A{self.action_id(a)}_{_cid(a.qualified_name)}"
        self.action_ctl[id(a)] = c

    def callee_params(self, params: list[ir.Var], sc: Scope) -> list[str]:
        """C parameters of an action or function: composites and out/inout scalars by pointer
        (the caller passes its copy-in temporaries), in scalars by value."""
        out = []
        for p in params:
            nm = f"a_{_cid(p.name)}"
            if is_composite(p.type):
                out.append(f"struct {self.sname(p.type)} *{nm}")
                sc.vars[id(p)] = f"(*{nm})"
                continue
            self.scalar_check(p.type, f"parameter {p.name}")
            by_ptr = p.direction in ("out", "inout")
            out.append(f"uint64_t {'*' if by_ptr else ''}{nm}")
            sc.vars[id(p)] = f"(*{nm})" if by_ptr else nm
        return out

    def compile_action(self, a: ir.ActionDecl, fvars: dict[int, str], c: Optional[ir.ControlDecl]) -> None:
        fn = self.action_fn[id(a)]
        sc = Scope(vars=dict(fvars), kind="action")
        sc.ret = "return;"
        params = self.callee_params(a.params, sc)
        out: list[str] = []
        if c is not None:
            out.append(f"{self.frames[id(c)]} *F = ({self.frames[id(c)]} *)Fv; (void)F;")
        self.stmt(a.body, sc, out)
        sig = f"static void {fn}(inst_t *S, void *Fv{''.join(', ' + p for p in params)})"
        self.protos.append(sig + ";")
        self.bodies.append(sig + " {\n" + "\n".join("    " + x for x in out) + "\n}")

    def compile_function(self, f: ir.FunctionDecl) -> None:
        fn = f"FN{len(self.functions)}_{_cid(f.name)}"
        self.functions[id(f)] = fn
        sc = Scope(vars={}, kind="function")
        has_value = not isinstance(f.return_type, ir.VoidT)
        rt = self.ctype(f.return_type, f"result of {f.name}") if has_value else "void"
        sc.ret = "return @;" if has_value else "return;"
        params = self.callee_params(f.params, sc)
        out: list[str] = []
        self.stmt(f.body, sc, out)
        if has_value:
            if is_composite(f.return_type):
                raise Unsupported(f"function {f.name} returning a composite", f.pos)
            out.append("return 0;")
        sig = f"static {rt} {fn}(inst_t *S{''.join(', ' + p for p in params)})"
        self.protos.append(sig + ";")
        self.bodies.append(sig + " {\n    (void)S;\n" + "\n".join("    " + x for x in out) + "\n}")

    def compile_table(self, t: ir.TableDecl, c: ir.ControlDecl, fvars: dict[int, str]) -> None:
        if len(t.keys) > MAX_KEYS:
            raise Unsupported(f"table {t.qualified_name} with more than {MAX_KEYS} keys", t.pos)
        for k in t.keys:
            if k.match_kind not in MATCH_KINDS:
                raise Unsupported(f"match kind {k.match_kind}", k.pos or t.pos)
        if t.direct_register is not None or (t.direct_meter is not None and t.direct_meter.extern != "direct_meter"):
            raise Unsupported(f"direct register/meter of table {t.qualified_name}", t.pos)
        decls = []
        for r in table_action_refs(t):
            if any(p.direction is not None for p in r.action.params):
                raise Unsupported(f"action {r.action.qualified_name} with directional parameters in a table",
                                  r.pos or t.pos)
            if r.action not in decls:
                decls.append(r.action)
        for a in decls:
            self.declare_action(a, c if a.qualified_name in {x.qualified_name for x in c.actions.values()} else None)
        nargs = max([sum(1 for p in a.params if p.direction is None) for a in decls] + [0])
        idx = len(self.tables)
        spec = TableSpec(idx, t, decls, nargs, t.direct_counter is not None)
        if t.direct_meter is not None:
            spec.meter = self.dmeter_slot(t.direct_meter)
        self.tables[id(t)] = spec
        fn = f"T{idx}_{_cid(t.qualified_name)}"
        self.table_fn[id(t)] = fn
        fr = self.frames[id(c)]
        sc = Scope(vars=dict(fvars))
        pre: list[str] = []
        keys = self.ex_all([k.expr for k in t.keys], sc, pre)
        out = [f"{fr} *F = ({fr} *)Fv;", "(void)F;", *pre]
        out.append(f"uint64_t k[{max(1, len(keys))}] = {{{', '.join(keys) or '0'}}};")
        out.append(f"p4n_tbl_t *t = &S->tbl[{idx}];")
        out.append("int32_t s = p4n_tbl_find(t, k);")
        if spec.has_counter:
            out.append("t->cpk[s] += 1; t->cby[s] += S->sm->f_packet_length;")
        if spec.meter >= 0:
            inst = t.direct_meter
            kind = str(inst.ctor_args[0]) if inst.ctor_args else "packets"
            size = "S->sm->f_packet_length" if kind == "bytes" else "1"
            out.append(f"S->dm[{spec.meter}] = p4n_meter_exec(&t->mtr[s], {size}, S->now); S->dm_set[{spec.meter}] = 1;")
        out.append("const uint64_t *a = t->args + (size_t)s * t->nargs; (void)a;")
        out.append("uint64_t r = (uint64_t)(s != 0) << 32;")
        out.append("switch (t->act[s]) {")
        for i, a in enumerate(decls):
            n = sum(1 for p in a.params if p.direction is None)
            args = "".join(f", a[{j}]" for j in range(n))
            frame = "Fv" if self.action_ctl[id(a)] is not None else "0"
            out.append(f"case {i}: {self.action_fn[id(a)]}(S, {frame}{args}); r |= {self.action_id(a)}; break;")
        out.append("default: break;")
        out.append("}")
        out.append("return r;")
        sig = f"static uint64_t {fn}(inst_t *S, void *Fv)"
        self.protos.append(sig + ";")
        self.bodies.append(sig + " {\n" + "\n".join("    " + x for x in out) + "\n}")

    # ------------------------------------------------------------------ whole program
    def compile_blocks(self, role_names: tuple[str, ...], package: str) -> dict[str, str]:
        """The program's functions and top-level actions, then each role's parser or control
        (``control_kind`` says how a control is compiled); the C function of each role."""
        prog = self.prog
        missing = [r for r in role_names if r not in prog.blocks]
        if missing:
            raise Unsupported(f"a {package} without {', '.join(missing)}")
        for inst in prog.externs:
            if inst.extern not in ("direct_counter", "direct_meter"):
                self.extern(inst)
        for f in prog.functions.values():
            self.compile_function(f)
        for a in prog.actions.values():
            self.declare_action(a, None)
            self.compile_action(a, {}, None)
        roles: dict[str, str] = {}
        for role in role_names:
            b = prog.blocks[role]
            if isinstance(b, ir.ParserDecl):
                roles[role] = self.compile_parser(b)
            elif id(b) in self.frames:
                raise Unsupported(f"control {b.name} used in two roles")
            else:
                roles[role] = self.compile_control(b, self.control_kind(role))
        return roles

    @staticmethod
    def control_kind(role: str) -> str:
        """How a role's control is compiled (``compile_control``'s role): "deparser" or another."""
        return role

    def generate(self) -> Generated:
        prog = self.prog
        roles = self.compile_blocks(ir.V1MODEL_ROLES, "v1model package")
        pparams = [v for v in prog.blocks["parser"].params if is_composite(v.type)]
        H, M, SM = (self.sname(v.type) for v in pparams)
        from p4sim.runtime.pipeline import SM_FIELDS

        for f in SM_FIELDS:
            if f not in self.struct_scalars[SM]:
                raise Unsupported(f"standard_metadata_t without {f}")
        return self.assemble(roles, H, M, SM)

    def state_fields(self) -> list[str]:
        """``inst_t``'s fields for the program's tables, registers, counters and meters."""
        state = [f"    p4n_tbl_t tbl[{max(1, len(self.tables))}];"]
        state += [f"    uint64_t {r.cname}[{r.size}];" for r in self.regs]
        state += [f"    uint64_t {c.cname}_p[{c.size}];\n    uint64_t {c.cname}_b[{c.size}];" for c in self.ctrs]
        return state + [f"    p4n_meter_t {m.cname}[{m.size}];" for m in self.mtrs]

    def state_c(self, new_args: str = "", new_init: str = "", free_extra: str = "") -> str:
        """``p4n_new`` (its extra parameters and initialisation), ``p4n_free``, and the accessors
        of the state in ``inst_t`` (registers, counters, meters, tables, the deparser's output)."""
        init_tbls = "\n".join(f"    S->tbl[{s.index}].nk = {len(s.decl.keys)}; S->tbl[{s.index}].nargs = {s.nargs};"
                              f" {{ int32_t z = -1; p4n_tbl_load(&S->tbl[{s.index}], 0, 1, 0, &z, 0, 0, 0, 0, &z, 0, 0, 0, 0); }}"
                              for s in self.tables.values())
        free_tbls = "\n".join(f"    p4n_tbl_free(&S->tbl[{s.index}]);" for s in self.tables.values())
        reg_cases = "\n".join(f"    case {r.index}: return S->{r.cname};" for r in self.regs)
        ctr_cases = "\n".join(f"    case {c.index}: return bytes ? S->{c.cname}_b : S->{c.cname}_p;" for c in self.ctrs)
        mtr_cases = "\n".join(f"    case {m.index}: return S->{m.cname};" for m in self.mtrs)
        return f"""
inst_t *p4n_new(void *handle{new_args}) {{
    p4n_init_tabs();
    inst_t *S = (inst_t *)calloc(1, sizeof(inst_t));
    S->handle = handle;
{new_init}
{init_tbls}
    return S;
}}
void p4n_free(inst_t *S) {{
{free_tbls}{free_extra}
    free(S);
}}
uint64_t *p4n_reg(inst_t *S, int i) {{ switch (i) {{
{reg_cases}
    default: return 0; }} }}
uint64_t *p4n_ctr(inst_t *S, int i, int bytes) {{ (void)bytes; switch (i) {{
{ctr_cases}
    default: return 0; }} }}
p4n_meter_t *p4n_mtr(inst_t *S, int i) {{ switch (i) {{
{mtr_cases}
    default: return 0; }} }}
p4n_tbl_t *p4n_table(inst_t *S, int i) {{ return &S->tbl[i]; }}
uint8_t *p4n_out(inst_t *S) {{ return S->out; }}"""

    def assemble(self, roles: dict[str, str], H: str, M: str, SM: str) -> Generated:
        state = self.state_fields()
        out_bytes = (self.out_bits + 7) // 8 + 8
        ndm = max(1, len(self.__dict__.get("dmeters", {})))
        inst = ("struct inst {\n    void *handle;\n    uint64_t drop_port;\n    double now;\n    int exited;\n"
                "    p4n_ctl_t ctl;\n    int assert_at;\n"
                f"    uint64_t dm[{ndm}];\n    uint8_t dm_set[{ndm}];\n"
                f"    struct {SM} *sm;\n    uint64_t nb;\n    uint8_t out[{out_bytes}];\n"
                f"    struct {H} h;\n    struct {M} m;\n    struct {SM} s;\n" + "\n".join(state) + "\n};")
        structs = "\n".join(self.struct_defs)
        api = f"""
typedef struct inst inst_t;
inst_t *p4n_new(void *handle, uint64_t drop_port);
void p4n_free(inst_t *S);
uint64_t *p4n_reg(inst_t *S, int i);
uint64_t *p4n_ctr(inst_t *S, int i, int bytes);
p4n_meter_t *p4n_mtr(inst_t *S, int i);
p4n_tbl_t *p4n_table(inst_t *S, int i);
int p4n_tbl_load(p4n_tbl_t *t, int mode, int n, int nlev, const int32_t *act, const uint64_t *args,
                 const uint64_t *va, const uint64_t *vb, const uint8_t *rng, const int32_t *lev,
                 const uint64_t *lmask, const uint64_t *cpk, const uint64_t *cby, const p4n_meter_t *mtr);
int64_t p4n_parser(inst_t *S, const char *d, int64_t nbits, struct {H} *h, struct {M} *m, struct {SM} *sm, int32_t *err);
void p4n_verify(inst_t *S, struct {H} *h, struct {M} *m, struct {SM} *sm);
void p4n_ingress(inst_t *S, struct {H} *h, struct {M} *m, struct {SM} *sm, double now);
void p4n_egress(inst_t *S, struct {H} *h, struct {M} *m, struct {SM} *sm, double now);
void p4n_compute(inst_t *S, struct {H} *h, struct {M} *m, struct {SM} *sm);
uint64_t p4n_deparser(inst_t *S, struct {H} *h, struct {SM} *sm);
uint8_t *p4n_out(inst_t *S);
void p4n_fast_ingress(inst_t *S, const char *d, int64_t len, uint64_t port, double now, int64_t *res);
int64_t p4n_fast_egress(inst_t *S, const char *d, int64_t len, int64_t pos, uint64_t port, double now, char *out);
int64_t p4n_depart(inst_t *S, struct {H} *h, struct {M} *m, struct {SM} *sm, const char *payload, int64_t plen,
                   uint64_t port, uint64_t left, double enq_t, double t, int64_t orig_len, char *out);
struct {H} *p4n_scratch_h(inst_t *S);
uint64_t p4n_hash_bytes(int algo, const char *d, size_t n);
p4n_ctl_t *p4n_ctl(inst_t *S);
int p4n_assert_at(inst_t *S);
struct {M} *p4n_scratch_m(inst_t *S);
struct {SM} *p4n_scratch_sm(inst_t *S);
"""
        callbacks, callback_protos = callback_decls()
        ctl = "typedef struct { int clone_set, clone_kind; uint64_t clone_session; int64_t clone_fl; int resub_set; int64_t resub_fl; int recirc_set; int64_t recirc_fl; int trunc_set; uint64_t trunc; } p4n_ctl_t;"
        cdef = "\n".join([C_TYPES, ctl, structs, api, callbacks])
        src = f"""
#include "p4n_runtime.h"
{callback_protos}
{PRELUDE}
{ctl}
{structs}
typedef struct inst inst_t;
{inst}
{chr(10).join(self.protos)}
{chr(10).join(self.bodies)}

{self.state_c(", uint64_t drop_port", "    S->drop_port = drop_port;")}
int64_t p4n_parser(inst_t *S, const char *d, int64_t nbits, struct {H} *h, struct {M} *m, struct {SM} *sm, int32_t *err) {{
    S->sm = sm; memset(S->dm_set, 0, sizeof S->dm_set); memset(&S->ctl, 0, sizeof S->ctl);
    return {roles['parser']}(S, (const uint8_t *)d, nbits, h, m, sm, err);
}}
void p4n_verify(inst_t *S, struct {H} *h, struct {M} *m, struct {SM} *sm) {{ S->sm = sm; S->exited = 0; {roles['verify_checksum']}(S, h, m); }}
void p4n_ingress(inst_t *S, struct {H} *h, struct {M} *m, struct {SM} *sm, double now) {{
    S->sm = sm; S->now = now; S->exited = 0; {roles['ingress']}(S, h, m, sm);
}}
void p4n_egress(inst_t *S, struct {H} *h, struct {M} *m, struct {SM} *sm, double now) {{
    S->sm = sm; S->now = now; memset(S->dm_set, 0, sizeof S->dm_set); memset(&S->ctl, 0, sizeof S->ctl);
    S->exited = 0; {roles['egress']}(S, h, m, sm);
}}
void p4n_compute(inst_t *S, struct {H} *h, struct {M} *m, struct {SM} *sm) {{ S->sm = sm; memset(S->dm_set, 0, sizeof S->dm_set); S->exited = 0; {roles['compute_checksum']}(S, h, m); }}
uint64_t p4n_deparser(inst_t *S, struct {H} *h, struct {SM} *sm) {{
    S->sm = sm; memset(S->out, 0, sizeof S->out); S->nb = 0; {roles['deparser']}(S, h); return S->nb;
}}
struct {H} *p4n_scratch_h(inst_t *S) {{ return &S->h; }}
p4n_ctl_t *p4n_ctl(inst_t *S) {{ return &S->ctl; }}
int p4n_assert_at(inst_t *S) {{ int k = S->assert_at; S->assert_at = 0; return k; }}
/* The runtime's hash algorithms on bytes, in HASH_ORDER (for tests against p4sim.runtime.hashing). */
uint64_t p4n_hash_bytes(int algo, const char *d, size_t n) {{
    const uint8_t *b = (const uint8_t *)d;
    p4n_init_tabs();
    switch (algo) {{
    case 0: return p4n_crc32(b, n);
    case 1: return p4n_crc16(b, n);
    case 2: return p4n_identity(b, n);
    case 3: return p4n_csum16(b, n);
    default: return p4n_xor16(b, n);
    }}
}}
struct {M} *p4n_scratch_m(inst_t *S) {{ return &S->m; }}
struct {SM} *p4n_scratch_sm(inst_t *S) {{ return &S->s; }}

/* p4sim.switch.Switch._ingress for a NORMAL packet, up to the ingress decision (used for
 * programs without clone, resubmit, recirculate or truncate): res = pos, parser error (-2 none,
 * -1 reject), egress_spec (-1: an assert/assume failed), mcast_grp, priority. */
void p4n_fast_ingress(inst_t *S, const char *d, int64_t len, uint64_t port, double now, int64_t *res) {{
    memset(&S->h, 0, sizeof S->h); memset(&S->m, 0, sizeof S->m); memset(&S->s, 0, sizeof S->s);
    memset(S->dm_set, 0, sizeof S->dm_set);
    struct {SM} *sm = &S->s;
    sm->f_ingress_port = port; sm->f_instance_type = 0; sm->f_packet_length = (uint64_t)len;
    sm->f_ingress_global_timestamp = (uint64_t)now & p4n_mask(48);
    S->sm = sm; S->now = now;
    int32_t err = -2;
    int64_t pos = {roles['parser']}(S, (const uint8_t *)d, len << 3, &S->h, &S->m, sm, &err);
    if (err >= 0) sm->f_parser_error = (uint64_t)err;
    S->exited = 0; {roles['verify_checksum']}(S, &S->h, &S->m);
    if (!S->assert_at) {{ S->exited = 0; {roles['ingress']}(S, &S->h, &S->m, sm); }}
    if (S->assert_at) {{ res[0] = pos; res[1] = err; res[2] = -1; return; }}
    res[0] = pos; res[1] = err; res[2] = (int64_t)sm->f_egress_spec; res[3] = (int64_t)sm->f_mcast_grp;
    res[4] = (int64_t)sm->f_priority;
}}

/* The unlimited-rate idle-queue departure of Switch._enqueue/_depart, then egress, checksum,
 * deparser and the output bytes (headers, zero-padded to a byte, then the payload); -1 when
 * egress drops the packet. */
int64_t p4n_fast_egress(inst_t *S, const char *d, int64_t len, int64_t pos, uint64_t port, double now, char *out) {{
    struct {SM} *sm = &S->s;
    sm->f_enq_qdepth = 0; sm->f_enq_timestamp = (uint64_t)now & p4n_mask(32);
    sm->f_egress_port = port; sm->f_deq_qdepth = 0; sm->f_deq_timedelta = 0;
    sm->f_egress_global_timestamp = (uint64_t)now & p4n_mask(48);
    sm->f_egress_spec = (S->drop_port + 1) & p4n_mask(9);
    sm->f_packet_length = (uint64_t)len;
    S->sm = sm; S->now = now; memset(S->dm_set, 0, sizeof S->dm_set);
    S->exited = 0; {roles['egress']}(S, &S->h, &S->m, sm);
    if (S->assert_at) return -2;
    if (sm->f_egress_spec == S->drop_port) return -1;
    memset(S->dm_set, 0, sizeof S->dm_set);
    S->exited = 0; {roles['compute_checksum']}(S, &S->h, &S->m);
    if (S->assert_at) return -2;
    memset(S->out, 0, sizeof S->out); S->nb = 0;
    {roles['deparser']}(S, &S->h);
    int64_t hb = (int64_t)((S->nb + 7) >> 3);
    memcpy(out, S->out, (size_t)hb);
    int64_t skip = pos >> 3;
    if (skip < len) {{ memcpy(out + hb, d + skip, (size_t)(len - skip)); return hb + len - skip; }}
    return hb;
}}

/* p4sim.switch.Switch._depart of a queued packet (its own h, m, sm), for programs without
 * clone, resubmit, recirculate or truncate: the dequeue metadata, egress, checksum, deparser and
 * the output bytes (headers zero-padded to a byte, then the payload) in one call instead of
 * three plus Python's metadata writes and byte assembly; -1 when egress drops the packet, -2
 * when an assert/assume failed. */
int64_t p4n_depart(inst_t *S, struct {H} *h, struct {M} *m, struct {SM} *sm, const char *payload, int64_t plen,
                   uint64_t port, uint64_t left, double enq_t, double t, int64_t orig_len, char *out) {{
    sm->f_egress_port = port; sm->f_deq_qdepth = left & p4n_mask(19);
    sm->f_deq_timedelta = (uint64_t)((int64_t)t - (int64_t)enq_t) & p4n_mask(32);
    sm->f_egress_global_timestamp = (uint64_t)t & p4n_mask(48);
    sm->f_egress_spec = (S->drop_port + 1) & p4n_mask(9);
    sm->f_packet_length = (uint64_t)orig_len;
    S->sm = sm; S->now = t; memset(S->dm_set, 0, sizeof S->dm_set); memset(&S->ctl, 0, sizeof S->ctl);
    S->exited = 0; {roles['egress']}(S, h, m, sm);
    if (S->assert_at) return -2;
    if (sm->f_egress_spec == S->drop_port) return -1;
    memset(S->dm_set, 0, sizeof S->dm_set);
    S->exited = 0; {roles['compute_checksum']}(S, h, m);
    if (S->assert_at) return -2;
    memset(S->out, 0, sizeof S->out); S->nb = 0;
    {roles['deparser']}(S, h);
    int64_t hb = (int64_t)((S->nb + 7) >> 3);
    memcpy(out, S->out, (size_t)hb);
    memcpy(out + hb, payload, (size_t)plen);
    return hb + plen;
}}
"""
        return Generated(src, cdef, {"H": H, "M": M, "SM": SM}, self.struct_scalars, list(self.tables.values()),
                         self.regs, self.ctrs, self.mtrs, self.digests, dict(self.action_ids), out_bytes, self.reinjects,
                         self.logs, self.asserts)


def _contains_exit(prog: ir.Program) -> bool:
    """Whether any action or control of ``prog`` has an ``exit`` (then calls check for it)."""
    def walk(x: Any) -> bool:
        if isinstance(x, ir.Exit):
            return True
        if isinstance(x, ir.CallStmt) and isinstance(x.call, ir.BuiltinCall) and x.call.name in ("assert", "assume"):
            return True
        return any(walk(y) for y in ir.sub_statements(x))

    bodies = [a.body for a in prog.actions.values()] + [f.body for f in prog.functions.values()]
    for c in prog.controls.values():
        bodies += [c.apply] + [a.body for a in c.actions.values()]
    return any(walk(b) for b in bodies)


def generate(prog: ir.Program) -> Generated:
    """C for ``prog``; raises ``Unsupported`` for a construct outside the native subset."""
    return CGen(prog).generate()
