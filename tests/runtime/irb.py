"""A tiny builder for hand-made IR programs, so runtime rules can be tested one at a time with
exactly the construct under test (independent of the front end)."""
from __future__ import annotations

from typing import Callable, Optional

from p4sim.frontend import ir

ERRORS = ["NoError", "PacketTooShort", "NoMatch", "StackOutOfBounds", "HeaderTooShort", "ParserTimeout",
          "ParserInvalidArgument"]
BOOL = ir.BoolT()


def bit(w: int) -> ir.BitT:
    return ir.BitT(w)


def sbit(w: int) -> ir.BitT:
    return ir.BitT(w, True)


def std_meta() -> ir.StructT:
    f = [("ingress_port", 9), ("egress_spec", 9), ("egress_port", 9), ("instance_type", 32), ("packet_length", 32),
         ("enq_timestamp", 32), ("enq_qdepth", 19), ("deq_timedelta", 32), ("deq_qdepth", 19),
         ("ingress_global_timestamp", 48), ("egress_global_timestamp", 48), ("mcast_grp", 16), ("egress_rid", 16),
         ("checksum_error", 1)]
    fields = [ir.Field(n, bit(w)) for n, w in f]
    fields.append(ir.Field("parser_error", ir.ErrorT()))
    fields.append(ir.Field("priority", bit(3)))
    return ir.StructT("standard_metadata_t", fields)


def header(name: str, *fields: tuple[str, int]) -> ir.HeaderT:
    return ir.HeaderT(name, [ir.Field(n, bit(w)) for n, w in fields])


def struct(name: str, *fields: tuple[str, ir.Type]) -> ir.StructT:
    return ir.StructT(name, [ir.Field(n, t) for n, t in fields])


def enum(name: str, *members: str) -> ir.EnumT:
    return ir.EnumT(name, list(members))


HASH_ALGO = enum("HashAlgorithm", "crc32", "crc32_custom", "crc16", "crc16_custom", "random", "identity", "csum16",
                 "xor16")
CLONE_TYPE = enum("CloneType", "I2E", "E2E")


def lit(v, w: Optional[int] = None, signed: bool = False) -> ir.Literal:
    if isinstance(v, bool):
        return ir.Literal(BOOL, None, v)
    if isinstance(v, str):
        return ir.Literal(ir.StringT(), None, v)
    if w is None:
        return ir.Literal(ir.IntT(), None, v)
    return ir.Literal(ir.BitT(w, signed), None, v & ((1 << w) - 1))


def elit(t: ir.EnumT, member: str) -> ir.Literal:
    return ir.Literal(t, None, t.members.index(member))


def err(name: str) -> ir.Literal:
    return ir.Literal(ir.ErrorT(), None, ERRORS.index(name))


def ref(v: ir.Var) -> ir.VarRef:
    return ir.VarRef(v.type, None, v)


def mem(base: ir.Expr, name: str) -> ir.Member:
    t = base.type
    if isinstance(t, (ir.HeaderT, ir.StructT)):
        ft = next(f.type for f in t.fields if f.name == name)
    else:
        raise TypeError(t)
    return ir.Member(ft, None, base, name)


def path(base: ir.Expr, dotted: str) -> ir.Expr:
    for part in dotted.split("."):
        base = mem(base, part)
    return base


_CMP = {"==", "!=", "<", "<=", ">", ">=", "&&", "||"}


def binop(op: str, a: ir.Expr, b: ir.Expr) -> ir.Binary:
    if op in _CMP:
        t = BOOL
    elif op == "++":
        t = ir.BitT(a.type.width + b.type.width, a.type.signed)
    else:
        t = a.type
    return ir.Binary(t, None, op, a, b)


def un(op: str, a: ir.Expr) -> ir.Unary:
    return ir.Unary(a.type, None, op, a)


def cast(t: ir.Type, a: ir.Expr) -> ir.Cast:
    return ir.Cast(t, None, a)


def slice_(a: ir.Expr, hi: int, lo: int) -> ir.Slice:
    return ir.Slice(bit(hi - lo + 1), None, a, hi, lo)


def assign(lhs: ir.Expr, rhs: ir.Expr) -> ir.Assign:
    return ir.Assign(None, lhs, rhs)


def block(*stmts: ir.Stmt) -> ir.Block:
    return ir.Block(None, list(stmts))


def if_(c: ir.Expr, then: ir.Stmt, other: Optional[ir.Stmt] = None) -> ir.If:
    return ir.If(None, c, then, other)


def call(c: ir.Expr) -> ir.CallStmt:
    return ir.CallStmt(None, c)


def is_valid(h: ir.Expr) -> ir.HeaderCall:
    return ir.HeaderCall(BOOL, None, [], [], h, "isValid")


def set_valid(h: ir.Expr, valid: bool = True) -> ir.CallStmt:
    return call(ir.HeaderCall(ir.VoidT(), None, [], [], h, "setValid" if valid else "setInvalid"))


def builtin(name: str, args: list, dirs: Optional[list] = None, type_args: Optional[list] = None,
            t: ir.Type = ir.VoidT()) -> ir.CallStmt:
    return call(ir.BuiltinCall(t, None, list(args), dirs or [None] * len(args), name, type_args or []))


def listexpr(*items: ir.Expr) -> ir.ListExpr:
    return ir.ListExpr(ir.TupleT([i.type for i in items]), None, list(items))


def extern(kind: str, name: str, ctor: list, type_args: Optional[list] = None) -> ir.ExternInstance:
    return ir.ExternInstance(name.split(".")[-1], name, kind, type_args or [], ctor)


def ecall(inst: ir.ExternInstance, method: str, args: list, dirs: Optional[list] = None) -> ir.CallStmt:
    return call(ir.ExternCall(ir.VoidT(), None, list(args), dirs or [None] * len(args), inst, method))


class Block:
    """Parameters of one v1model block plus the things declared in it."""

    def __init__(self, name: str, kind: str, hdr_t: ir.StructT, meta_t: ir.StructT, sm_t: ir.StructT) -> None:
        self.name = name
        self.kind = kind
        self.params: list[ir.Var] = []
        if kind == "parser":
            self.pkt = ir.Var("packet", ir.ExternT("packet_in"), "param", None)
            self.params.append(self.pkt)
        if kind == "deparser":
            self.pkt = ir.Var("packet", ir.ExternT("packet_out"), "param", None)
            self.params.append(self.pkt)
        hv = ir.Var("hdr", hdr_t, "param", "out" if kind == "parser" else ("in" if kind == "deparser" else "inout"))
        self.params.append(hv)
        self.hdr = ref(hv)
        if kind != "deparser":
            mv = ir.Var("meta", meta_t, "param", "inout")
            self.params.append(mv)
            self.meta = ref(mv)
        if kind in ("parser", "control"):
            sv = ir.Var("standard_metadata", sm_t, "param", "inout")
            self.params.append(sv)
            self.sm = ref(sv)
        self.actions: dict[str, ir.ActionDecl] = {}
        self.tables: dict[str, ir.TableDecl] = {}
        self.locals: list = []

    def action(self, name: str, params: list[tuple[str, ir.Type]], body: Callable[..., list]) -> ir.ActionDecl:
        vs = [ir.Var(n, t, "param", None) for n, t in params]
        a = ir.ActionDecl(name, f"{self.name}.{name}", vs, block(*body(*[ref(v) for v in vs])))
        self.actions[name] = a
        return a

    def table(self, name: str, keys: list[tuple[ir.Expr, str, str]], actions: list[ir.ActionDecl],
              default: Optional[ir.ActionDecl] = None, default_args: Optional[list] = None,
              const_entries: Optional[list] = None, size: Optional[int] = None,
              direct_counter: Optional[ir.ExternInstance] = None,
              direct_meter: Optional[ir.ExternInstance] = None, default_is_const: bool = False) -> ir.TableDecl:
        refs = [ir.ActionRef(a, [None] * len(a.params)) for a in actions]
        dref = None
        if default is not None:
            dref = ir.ActionRef(default, [lit(v, p.type.width) for v, p in zip(default_args or [], default.params)])
        t = ir.TableDecl(name, f"{self.name}.{name}", [ir.TableKey(e, k, n) for e, k, n in keys], refs, dref,
                         default_is_const, const_entries or [], False, size, direct_counter, direct_meter)
        self.tables[name] = t
        return t

    def local(self, name: str, t: ir.Type, init: Optional[ir.Expr] = None) -> ir.VarRef:
        v = ir.Var(name, t, "local")
        self.locals.append(ir.VarDecl(None, v, init))
        return ref(v)


def apply(t: ir.TableDecl, field: Optional[str] = None) -> ir.ApplyResult:
    return ir.ApplyResult(BOOL if field in ("hit", "miss") else ir.ApplyResultT(t), None, t, field)


def act(a: ir.ActionDecl, *args: ir.Expr) -> ir.CallStmt:
    return call(ir.ActionCall(ir.VoidT(), None, list(args), [None] * len(args), a))


NO_ACTION = ir.ActionDecl("NoAction", "NoAction", [], block())


def extract(b: Block, h: ir.Expr) -> ir.CallStmt:
    return call(ir.PacketCall(ir.VoidT(), None, [h], ["out"], ref(b.pkt), "extract"))


def emit(b: Block, h: ir.Expr) -> ir.CallStmt:
    return call(ir.PacketCall(ir.VoidT(), None, [h], ["in"], ref(b.pkt), "emit"))


def state(name: str, stmts: list, transition) -> ir.ParserState:
    return ir.ParserState(name, stmts, transition)


def select(keys: list[ir.Expr], cases: list[tuple[list, str]]) -> ir.Select:
    return ir.Select(keys, [ir.KsSelectCase(ks, nxt) for ks, nxt in cases])


def program(hdr_t: ir.StructT, meta_t: Optional[ir.StructT] = None,
            parser: Optional[Callable[[Block], list[ir.ParserState]]] = None,
            ingress: Optional[Callable[[Block], list]] = None,
            egress: Optional[Callable[[Block], list]] = None,
            verify: Optional[Callable[[Block], list]] = None,
            compute: Optional[Callable[[Block], list]] = None,
            deparser: Optional[Callable[[Block], list]] = None,
            externs: Optional[list[ir.ExternInstance]] = None) -> ir.Program:
    """A v1model program; omitted blocks are empty, the default parser extracts every header of
    ``hdr_t`` in order and the default deparser emits them all."""
    meta_t = meta_t or struct("metadata")
    sm_t = std_meta()
    blocks: dict[str, Block] = {
        "parser": Block("MyParser", "parser", hdr_t, meta_t, sm_t),
        "verify_checksum": Block("MyVerify", "small", hdr_t, meta_t, sm_t),
        "ingress": Block("MyIngress", "control", hdr_t, meta_t, sm_t),
        "egress": Block("MyEgress", "control", hdr_t, meta_t, sm_t),
        "compute_checksum": Block("MyCompute", "small", hdr_t, meta_t, sm_t),
        "deparser": Block("MyDeparser", "deparser", hdr_t, meta_t, sm_t),
    }
    pb = blocks["parser"]
    if parser is None:
        states = [state("start", [extract(pb, mem(pb.hdr, f.name)) for f in hdr_t.fields], "accept")]
    else:
        states = parser(pb)
    bodies = {"verify_checksum": verify, "ingress": ingress, "egress": egress, "compute_checksum": compute}
    decls: dict[str, object] = {
        "parser": ir.ParserDecl(pb.name, pb.params, pb.locals, {s.name: s for s in states})}
    for role, fn in bodies.items():
        b = blocks[role]
        stmts = fn(b) if fn else []
        decls[role] = ir.ControlDecl(b.name, b.params, b.locals, b.actions, b.tables, block(*stmts))
    db = blocks["deparser"]
    dstmts = deparser(db) if deparser else [emit(db, mem(db.hdr, f.name)) for f in hdr_t.fields]
    decls["deparser"] = ir.ControlDecl(db.name, db.params, db.locals, {}, {}, block(*dstmts))
    types = {"standard_metadata_t": sm_t, hdr_t.name: hdr_t, meta_t.name: meta_t}
    return ir.Program(source="<irb>", errors=list(ERRORS), types=types, externs=externs or [],
                      actions={"NoAction": NO_ACTION}, functions={},
                      parsers={"MyParser": decls["parser"]},
                      controls={d.name: d for r, d in decls.items() if r != "parser"},
                      package="V1Switch", blocks=decls)
