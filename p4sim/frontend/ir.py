"""The typed, resolved IR: the one contract between p4sim's front end and its runtime.

The front end (``p4sim.frontend``) turns P4 source into these objects; the runtime
(``p4sim.runtime``) compiles them once into Python closures.  Everything the runtime needs is
decided here at compile time so the per-packet path never looks a name up or infers a type:

* every name is resolved to the object it denotes (a ``Var``, an ``ActionDecl``, a ``TableDecl``,
  an ``ExternInstance`` ...);
* every expression carries its ``type``; integer literals already have their inferred width;
  compile-time constants are folded into ``Literal`` nodes;
* calls name their callee kind (``HeaderCall``, ``ExternCall``, ``BuiltinCall`` ...) and list their
  arguments in parameter order with directions, defaults filled in;
* every node carries ``pos`` so that even a runtime can report where a construct came from.

Value conventions the runtime relies on:

* ``bit<W>`` and ``int<W>`` values are Python ints holding the W-bit pattern (0 .. 2**W-1); signed
  interpretation is the operator's job.  ``bool`` values are Python bools.
* enum and ``error`` values are the member's index in the type's member list (serializable enums:
  the declared value); ``match_kind`` never reaches the runtime.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Optional, Union

from p4sim.errors import Pos

# --------------------------------------------------------------------------------------------
# Types


class Type:
    """Base of all P4 types.  Types compare by identity except the scalar ones."""


@dataclass(frozen=True)
class BitT(Type):
    """``bit<W>`` (signed=False) or ``int<W>`` (signed=True)."""

    width: int
    signed: bool = False


@dataclass(frozen=True)
class BoolT(Type):
    pass


@dataclass(frozen=True)
class VarbitT(Type):
    """``varbit<max_width>``: a header field whose length is set when it is extracted.  Its run-time
    value is the pair (current length in bits, value)."""

    max_width: int


@dataclass(frozen=True)
class IntT(Type):
    """Infinite-precision compile-time ``int``.  Only appears on folded constants that stay
    untyped (e.g. a shift amount, an extern constructor argument); never on a runtime value."""


@dataclass(frozen=True)
class VoidT(Type):
    pass


@dataclass(frozen=True)
class StringT(Type):
    """String literals: only as ``log_msg`` format / annotation bodies."""


@dataclass(frozen=True)
class ErrorT(Type):
    """The single ``error`` type; members live in ``Program.errors`` (value = index)."""


@dataclass(frozen=True)
class MatchKindT(Type):
    pass


@dataclass(eq=False)
class EnumT(Type):
    name: str
    members: list[str]
    underlying: Optional[BitT] = None  # serializable enum ``enum bit<8> E {...}``
    values: Optional[list[int]] = None  # declared values of a serializable enum, else None

    def value_of(self, member: str) -> int:
        i = self.members.index(member)
        return self.values[i] if self.values is not None else i


@dataclass(frozen=True)
class Field:
    name: str
    type: Type
    # e.g. {"field_list": "1"} for v1model's *_preserving_field_list; not part of equality.
    annotations: dict[str, str] = field(default_factory=dict, compare=False, hash=False)


@dataclass(eq=False)
class HeaderT(Type):
    name: str
    fields: list[Field]
    annotations: dict[str, str] = field(default_factory=dict)

    @property
    def width(self) -> int:
        """Width in bits of the fixed-size fields (``BitT``; ``BoolT`` 1 bit; a serializable enum
        its underlying width; a struct field the sum of its leaves; a varbit counts 0)."""
        return sum(0 if isinstance(f.type, VarbitT) else fixed_width(f.type) for f in self.fields)

    @property
    def has_structs(self) -> bool:
        """True when a field is a struct (P4_16 allows structs of bit/int/bool/serializable-enum
        fields, nested, inside headers; on the wire they are their leaves in order)."""
        return any(isinstance(f.type, StructT) for f in self.fields)

    @property
    def varbit(self) -> Optional[Field]:
        """The header's varbit field, if it has one (P4 allows at most one)."""
        return next((f for f in self.fields if isinstance(f.type, VarbitT)), None)


@dataclass(eq=False)
class StructT(Type):
    name: str
    fields: list[Field]
    annotations: dict[str, str] = field(default_factory=dict)


def fixed_width(t: Type) -> int:
    """Bits of a fixed-width value as it is laid out in a header: ``bit``/``int`` their width,
    ``bool`` 1, a serializable enum its underlying width, a struct (or header) its fields'."""
    if isinstance(t, BitT):
        return t.width
    if isinstance(t, BoolT):
        return 1
    if isinstance(t, EnumT) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, (StructT, HeaderT)):
        return sum(fixed_width(f.type) for f in t.fields)
    raise TypeError(f"type {t} has no fixed width")


def only_bits(t: Type) -> bool:
    """p4c's onlyBitsOrBitStructs: bit<W>/int<W>, bool, serializable enums, and structs of
    those (nested) -- what a struct must hold to be a header field."""
    if isinstance(t, (BitT, BoolT)):
        return True
    if isinstance(t, EnumT):
        return t.underlying is not None
    if isinstance(t, StructT):
        return all(only_bits(f.type) for f in t.fields)
    return False


def leaf_fields(t: Union["HeaderT", "StructT"], path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Type]]:
    """Every scalar field of ``t`` with its path of field names, struct fields expanded in
    place, first field first: the wire order of a header with struct fields (p4c's
    FlattenHeaders lays them out the same way)."""
    out: list[tuple[tuple[str, ...], Type]] = []
    for f in t.fields:
        if isinstance(f.type, StructT):
            out += leaf_fields(f.type, path + (f.name,))
        else:
            out.append((path + (f.name,), f.type))
    return out


@dataclass(eq=False)
class HeaderUnionT(Type):
    """``header_union``: header-typed members of which at most one is valid at a time."""

    name: str
    fields: list[Field]
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass(eq=False)
class StackT(Type):
    """A header stack ``H[size]`` (or a stack of header unions)."""

    elem: Union[HeaderT, "HeaderUnionT"]
    size: int


@dataclass(eq=False)
class TupleT(Type):
    """Type of a list/tuple expression ``{a, b}`` used as hash / checksum / digest data."""

    elems: list[Type]


@dataclass(eq=False)
class ExternT(Type):
    """An extern object type (``register``, ``packet_in`` ...) with its type arguments."""

    name: str
    type_args: list[Type] = field(default_factory=list)


@dataclass(eq=False)
class ApplyResultT(Type):
    """Result of ``table.apply()``: has ``hit``, ``miss`` and ``action_run``."""

    table: "TableDecl"


# --------------------------------------------------------------------------------------------
# Declarations that expressions refer to


@dataclass(eq=False)
class Var:
    """A variable slot: a parameter of a parser/control/action/function, or a local variable.

    ``direction`` is ``in``/``out``/``inout`` for directional parameters and ``None`` for locals
    and for action parameters bound by the control plane.  Identity matters: the runtime maps each
    ``Var`` object to a slot.
    """

    name: str
    type: Type
    kind: str  # "param" | "local"
    direction: Optional[str] = None
    pos: Optional[Pos] = None
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass(eq=False)
class ExternInstance:
    """An instantiated extern object (top level or control/parser local).

    ``extern`` is the extern type name (``register``, ``counter``, ``direct_counter``, ``meter``,
    ``direct_meter``); ``ctor_args`` are the folded constructor arguments: ints for sizes, and for
    enum arguments the member name (``"packets_and_bytes"``, ``"bytes"``).
    """

    name: str
    qualified_name: str  # the P4Info name (``MyIngress.c`` or ``my_reg`` at top level)
    extern: str
    type_args: list[Type]
    ctor_args: list[Union[int, str]]
    annotations: dict[str, str] = field(default_factory=dict)
    pos: Optional[Pos] = None
    # TNA: the implementations of the extern's abstract methods (a RegisterAction's ``apply``),
    # checked as actions of the enclosing control so their bodies may read its variables.
    methods: dict[str, "ActionDecl"] = field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# Expressions


@dataclass(eq=False)
class Expr:
    type: Type
    pos: Optional[Pos]


@dataclass(eq=False)
class Literal(Expr):
    value: Union[int, bool, str]  # str only for StringT


@dataclass(eq=False)
class VarRef(Expr):
    var: Var


@dataclass(eq=False)
class DontCare(Expr):
    """``_`` passed for an ``out`` parameter: the callee's value is thrown away."""


@dataclass(eq=False)
class Member(Expr):
    """Field of a header or struct value."""

    base: Expr
    name: str


@dataclass(eq=False)
class StackIndex(Expr):
    """``stack[i]``; ``index`` is usually a Literal (runtime indices allowed, bounds-checked)."""

    base: Expr
    index: Expr


@dataclass(eq=False)
class TupleIndex(Expr):
    """``t[i]`` of a tuple value with a constant ``i`` (read only)."""

    base: Expr
    index: int


@dataclass(eq=False)
class StackProp(Expr):
    """``stack.next`` / ``stack.last`` (header-typed, parser only), ``stack.lastIndex`` (bit<32>),
    ``stack.size`` is folded to a Literal by the front end."""

    base: Expr
    prop: str


@dataclass(eq=False)
class Slice(Expr):
    base: Expr
    hi: int
    lo: int


@dataclass(eq=False)
class Unary(Expr):
    op: str  # "-" | "~" | "!"
    operand: Expr


@dataclass(eq=False)
class Binary(Expr):
    """Binary operator with operands already unified by the front end.

    Arithmetic, bitwise and comparison operands have the same ``BitT`` (or both ``BoolT`` for
    ``==``/``!=``/``&&``/``||``); ``<<``/``>>`` take any unsigned right operand; ``++`` takes any
    two ``BitT`` and yields ``bit<l+r>`` (signedness of the left).  ``==``/``!=`` may also compare
    enums, errors, headers and structs.  ops: + - * / % << >> & | ^ && || == != < <= > >= |+| |-| ++
    """

    op: str
    left: Expr
    right: Expr


@dataclass(eq=False)
class Cast(Expr):
    """``(T) e``; ``type`` is the target type (BitT, BoolT or an EnumT with underlying type)."""

    operand: Expr


@dataclass(eq=False)
class Mux(Expr):
    cond: Expr
    then: Expr
    other: Expr


@dataclass(eq=False)
class ListExpr(Expr):
    """``{a, b, c}`` used as data for hash/checksum/digest/clone field lists or a select key."""

    items: list[Expr]


@dataclass(eq=False)
class StructExpr(Expr):
    """A struct/header-typed initializer: ``{f1 = e1, ...}`` or a positional list assigned to a
    struct/header.  Headers built this way are valid."""

    fields: dict[str, Expr]


@dataclass(eq=False)
class Call(Expr):
    """Base of calls.  ``args`` are in the callee's parameter order, defaults filled in;
    ``directions[i]`` is "in"/"out"/"inout"/None (None = plain value, e.g. action data)."""

    args: list[Expr]
    directions: list[Optional[str]]


@dataclass(eq=False)
class HeaderCall(Call):
    """``h.isValid()`` / ``h.setValid()`` / ``h.setInvalid()`` on a header-typed lvalue."""

    target: Expr
    method: str


@dataclass(eq=False)
class StackCall(Call):
    """``s.push_front(n)`` / ``s.pop_front(n)``; ``args[0]`` is a Literal count."""

    target: Expr
    method: str


@dataclass(eq=False)
class PacketCall(Call):
    """A ``packet_in``/``packet_out`` method: ``extract`` (1 arg: header lvalue),
    ``lookahead`` (no args, ``type`` = the looked-ahead type), ``advance`` (bit<32> bits),
    ``length`` (bit<32>), ``emit`` (1 arg: header, stack or struct of headers)."""

    target: Expr  # VarRef to the packet_in / packet_out parameter
    method: str


@dataclass(eq=False)
class ExternCall(Call):
    """A method of an extern instance: ``register.read/write``, ``counter.count``,
    ``direct_counter.count``, ``meter.execute_meter``, ``direct_meter.read``."""

    instance: ExternInstance
    method: str


@dataclass(eq=False)
class BuiltinCall(Call):
    """A core/v1model free function: ``mark_to_drop``, ``hash``, ``random``, ``digest``,
    ``clone``, ``clone_preserving_field_list`` (and ``clone3``), ``resubmit``/``recirculate``
    (and ``*_preserving_field_list``), ``verify_checksum``, ``update_checksum``,
    ``verify_checksum_with_payload``, ``update_checksum_with_payload``, ``truncate``, ``log_msg``,
    ``assert``, ``assume``, ``verify`` (parser).

    Enum arguments (HashAlgorithm, CloneType ...) are Literals of their EnumT, so the runtime picks
    the implementation at compile time.  ``type_args`` are the explicit or inferred type
    arguments (e.g. ``digest<T>`` records T)."""

    name: str
    type_args: list[Type] = field(default_factory=list)


@dataclass(eq=False)
class ActionCall(Call):
    """Direct invocation of an action from a control body or another action."""

    action: "ActionDecl"


@dataclass(eq=False)
class FunctionCall(Call):
    function: "FunctionDecl"


@dataclass(eq=False)
class ApplyResult(Expr):
    """``t.apply()`` (field None, type ApplyResultT), ``t.apply().hit`` / ``.miss`` (BoolT),
    ``t.apply().action_run`` (subject of a switch; type ApplyResultT)."""

    table: "TableDecl"
    field: Optional[str]


# --------------------------------------------------------------------------------------------
# Statements


@dataclass(eq=False)
class Stmt:
    pos: Optional[Pos]


@dataclass(eq=False)
class Assign(Stmt):
    lhs: Expr  # lvalue: VarRef, Member, StackIndex, StackProp(next/last), Slice of these
    rhs: Expr


@dataclass(eq=False)
class CallStmt(Stmt):
    call: Expr  # a Call subclass or ApplyResult(field=None)


@dataclass(eq=False)
class Block(Stmt):
    stmts: list[Stmt]


@dataclass(eq=False)
class If(Stmt):
    cond: Expr
    then: Stmt
    other: Optional[Stmt]


@dataclass(eq=False)
class SwitchCase:
    """``labels``: for an ``action_run`` switch, ActionDecl objects; for a value switch, Literal
    expressions; the string "default" for the default label.  ``body`` None = falls through to
    the next case's body (P4_16 label lists)."""

    labels: list[Union["ActionDecl", Expr, str]]
    body: Optional[Block]
    pos: Optional[Pos] = None


@dataclass(eq=False)
class SwitchStmt(Stmt):
    subject: Expr  # ApplyResult(field="action_run") or a bit/enum expression
    cases: list[SwitchCase]


@dataclass(eq=False)
class For(Stmt):
    """``for (init; cond; update) body`` (P4_16 1.2.4); ``cond`` None = no condition."""

    init: list[Stmt]
    cond: Optional[Expr]
    update: list[Stmt]
    body: Stmt


@dataclass(eq=False)
class Break(Stmt):
    pass


@dataclass(eq=False)
class Continue(Stmt):
    pass


@dataclass(eq=False)
class Exit(Stmt):
    pass


@dataclass(eq=False)
class Return(Stmt):
    value: Optional[Expr]


@dataclass(eq=False)
class VarDecl(Stmt):
    """A local variable; ``init`` None means uninitialised (the runtime zero-fills, as BMv2 does,
    and headers start invalid)."""

    var: Var
    init: Optional[Expr]


@dataclass(eq=False)
class Empty(Stmt):
    pass


# --------------------------------------------------------------------------------------------
# Callables, tables, blocks


@dataclass(eq=False)
class ActionDecl:
    """An action.  Parameters with direction None are action data set by the control plane."""

    name: str
    qualified_name: str  # P4Info name: "MyIngress.drop", top-level "NoAction"
    params: list[Var]
    body: Block
    annotations: dict[str, str] = field(default_factory=dict)
    pos: Optional[Pos] = None


@dataclass(eq=False)
class FunctionDecl:
    name: str
    params: list[Var]
    return_type: Type
    body: Block
    pos: Optional[Pos] = None


@dataclass(eq=False)
class ActionRef:
    """An action as listed in a table (or its default/const entries) with its bound arguments.

    ``args`` has one entry per action parameter: the expression for directional params bound in
    the ``actions`` list, and for control-plane params a Literal in default_action/const entries
    or None in the ``actions`` list."""

    action: ActionDecl
    args: list[Optional[Expr]]
    annotations: dict[str, str] = field(default_factory=dict)  # @tableonly, @defaultonly
    pos: Optional[Pos] = None


@dataclass(eq=False)
class TableKey:
    expr: Expr
    match_kind: str  # exact | lpm | ternary | range | optional | selector (unsupported)
    name: str  # P4Info match-field name: @name if given, else the source text ("hdr.ipv4.dstAddr")
    annotations: dict[str, str] = field(default_factory=dict)
    pos: Optional[Pos] = None


@dataclass(eq=False)
class KsDefault:
    """``default`` or ``_`` in a keyset."""


@dataclass(eq=False)
class KsValue:
    value: int


@dataclass(eq=False)
class KsMask:
    value: int
    mask: int


@dataclass(eq=False)
class KsRange:
    lo: int
    hi: int


KeySet = Union[KsDefault, KsValue, KsMask, KsRange]


@dataclass(eq=False)
class ConstEntry:
    """A ``const entries`` row: one keyset per key (LPM given as KsMask with a prefix mask)."""

    keysets: list[KeySet]
    action: ActionRef
    # The entry's priority as the runtime uses it (larger wins, as in P4Runtime), decided by the
    # front end from the table's conventions (check_tables.entry_priorities); None for tables
    # whose match kinds need no priority (exact/lpm).
    priority: Optional[int]
    pos: Optional[Pos] = None
    is_const: bool = True  # a ``const entries`` row or an ``entries`` row marked ``const``


@dataclass(eq=False)
class TableDecl:
    name: str
    qualified_name: str
    keys: list[TableKey]
    actions: list[ActionRef]
    default_action: Optional[ActionRef]  # None = NoAction-like "no action" default
    default_is_const: bool
    const_entries: list[ConstEntry]
    entries_are_const: bool  # ``const entries`` (else ``entries``: initial, control plane may change)
    size: Optional[int]
    direct_counter: Optional[ExternInstance] = None
    direct_meter: Optional[ExternInstance] = None
    annotations: dict[str, str] = field(default_factory=dict)
    pos: Optional[Pos] = None
    direct_register: Optional[ExternInstance] = None  # TNA ``registers = DirectRegister``


@dataclass(eq=False)
class KsSelectCase:
    """One ``select`` case: a keyset per select key (a single key -> one keyset)."""

    keysets: list[KeySet]
    next_state: str  # state name, "accept" or "reject"
    pos: Optional[Pos] = None


@dataclass(eq=False)
class Select:
    keys: list[Expr]
    cases: list[KsSelectCase]  # in source order; first match wins; no match -> error.NoMatch
    pos: Optional[Pos] = None


@dataclass(eq=False)
class ParserState:
    name: str
    stmts: list[Stmt]
    transition: Union[str, Select]  # a state name (incl. "accept"/"reject") or a Select
    pos: Optional[Pos] = None


@dataclass(eq=False)
class ParserDecl:
    name: str
    params: list[Var]
    locals: list[Union[VarDecl, ExternInstance]]
    states: dict[str, ParserState]  # always contains "start"
    annotations: dict[str, str] = field(default_factory=dict)
    pos: Optional[Pos] = None


@dataclass(eq=False)
class ControlDecl:
    """A control.  ``locals`` are the control-level variable declarations (re-initialised at each
    apply, in order) and local extern instances; ``actions``/``tables`` by local name."""

    name: str
    params: list[Var]
    locals: list[Union[VarDecl, ExternInstance]]
    actions: dict[str, ActionDecl]
    tables: dict[str, TableDecl]
    apply: Block
    annotations: dict[str, str] = field(default_factory=dict)
    pos: Optional[Pos] = None


V1MODEL_ROLES = ("parser", "verify_checksum", "ingress", "egress", "compute_checksum", "deparser")
# TNA's Pipeline(...) blocks, in the package's parameter order.
TNA_ROLES = ("ingress_parser", "ingress", "ingress_deparser", "egress_parser", "egress", "egress_deparser")
TNA_ROLE_KINDS = ("parser", "control", "control", "parser", "control", "control")


def roles_of(arch: str) -> tuple[str, ...]:
    return TNA_ROLES if arch in ("tna", "t2na") else V1MODEL_ROLES


@dataclass(eq=False)
class Program:
    """A whole checked program ready for the runtime and for P4Info generation."""

    source: str
    errors: list[str]  # error members in declaration order; value of error.X = index
    types: dict[str, Type]  # named types (headers, structs, enums, typedefs resolved)
    externs: list[ExternInstance]  # top-level extern instances (shared by controls)
    actions: dict[str, ActionDecl]  # top-level actions (NoAction ...)
    functions: dict[str, FunctionDecl]
    parsers: dict[str, ParserDecl]
    controls: dict[str, ControlDecl]
    # The package instance ``main``: V1Switch's six blocks by role (see V1MODEL_ROLES).
    package: str
    blocks: dict[str, Union[ParserDecl, ControlDecl]]
    # Struct types passed to digest<T>(...) and header types annotated @controller_header.
    digests: list[StructT] = field(default_factory=list)
    controller_headers: list[HeaderT] = field(default_factory=list)
    # "v1model" (V1Switch), "tna" (tna.p4's Switch) or "t2na" (t2na.p4's Switch)
    arch: str = "v1model"
    # TNA: the target the declarations were preprocessed for (__TARGET_TOFINO__: 1 or 2)
    tofino_target: int = 0


def sub_statements(s: object) -> list[Stmt]:
    """The statements directly inside ``s``: a block's, an if's branches, a switch's bodies, a
    for loop's body (what a search for ``exit`` or ``return`` descends into)."""
    if isinstance(s, Block):
        return list(s.stmts)
    if isinstance(s, If):
        return [s.then] + ([s.other] if s.other is not None else [])
    if isinstance(s, SwitchStmt):
        return [c.body for c in s.cases if c.body is not None]
    if isinstance(s, For):
        return [s.body]
    return []


def walk(roots: list[object], stop: tuple[type, ...] = ()) -> "Iterator[object]":
    """Every IR node reachable from ``roots`` once, depth first off a stack (the last root
    first, a node's fields last to first), through lists, tuples and dict values; not into types,
    positions, annotations or a reference's variable, nor below a node of a ``stop`` type (which
    is still yielded).  Written by hand: the IR is plain dataclasses, with no visitor of its own."""
    seen: set[int] = set()
    stack: list[object] = list(roots)
    while stack:
        node = stack.pop()
        if node is None or isinstance(node, (str, int, bool, float, Type)) or id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, (list, tuple)):
            stack.extend(node)
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif hasattr(node, "__dataclass_fields__"):
            yield node
            if not isinstance(node, stop):
                stack.extend(getattr(node, n) for n in node.__dataclass_fields__
                             if n not in _WALK_SKIP)


_WALK_SKIP = frozenset({"type", "pos", "annotations", "var"})
