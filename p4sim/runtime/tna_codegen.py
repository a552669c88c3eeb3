"""Code generation for TNA's externs (tna.p4/t2na.p4): the ``archs.ExternCodegen`` of the tna and
t2na architectures, which ``codegen.ProgramCompiler`` calls through the registry.

Kept apart from the v1model code so the v1model path is unchanged.  Two rules of the target are
enforced here, at compile time, because a Tofino compiler enforces them too:

* a ``Register`` belongs to one gress: used by both ingress and egress, it is a compile error at
  the second use;
* stateful externs are used in controls, ``Mirror``/``Resubmit``/``Digest`` in the deparser they
  belong to.

The one-access-per-packet rule is checked per packet (``X.touch``): which accesses run depends on
the control flow, and the runtime sees exactly the ones that do.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from p4sim.errors import CompileError, Unsupported
from p4sim.frontend import ir
from p4sim.runtime.codegen.common import unpack_fields
from p4sim.runtime.objects import header_layout, scalar_width

if TYPE_CHECKING:  # pragma: no cover
    from p4sim.runtime.codegen import ProgramCompiler, Scope

TNA_EXTERNS = frozenset({"Register", "RegisterAction", "DirectRegister", "DirectRegisterAction", "Hash", "Random", "Counter", "DirectCounter",
               "Meter", "DirectMeter", "Checksum", "Mirror", "Resubmit", "Digest", "CRCPolynomial"})
EXTERNS = TNA_EXTERNS  # archs.ExternCodegen
TNA_FUNCS = {"min", "max", "sizeInBits", "sizeInBytes", "port_metadata_unpack"}
CONTROL_ONLY = {"Register", "RegisterAction", "DirectRegister", "DirectRegisterAction", "Counter", "DirectCounter", "Meter", "DirectMeter",
                "Random"}


def struct_layout(t: ir.StructT) -> list[tuple[str, int, int, bool]]:
    """(attr, width, shift, is_bool) of a register's struct value packed first field high."""
    return header_layout(ir.HeaderT(t.name, t.fields))


def value_width(t: ir.Type) -> int:
    if isinstance(t, ir.StructT):
        return sum(w for _, w, _, _ in struct_layout(t))
    return scalar_width(t)


def _own(comp: "ProgramCompiler", reg: ir.ExternInstance, pos: Any) -> None:
    """Registers belong to the gress that first uses them."""
    role = comp.cur_role
    if role is None:
        return
    if role not in ("ingress", "egress"):
        raise CompileError(f"{reg.name}: registers can only be used in the ingress or egress "
                           "control on Tofino", pos)
    owner = comp.reg_gress.setdefault(id(reg), (role, pos))
    if owner[0] != role:
        raise CompileError(f"Register {reg.qualified_name} is used by {owner[0]} (at {owner[1]}) "
                           f"and by {role}: on Tofino a register belongs to one gress (pass the "
                           "value in a bridged header or a feedback packet instead)", pos)


def _touch(comp: "ProgramCompiler", reg: ir.ExternInstance, what: str, pos: Any, pre: list[str]) -> str:
    R = comp.extern_name(reg)
    pre.append(f"if {R}.last == X.pass_id: X.double_access({R}, {what!r}, {str(pos)!r})")
    pre.append(f"{R}.last = X.pass_id")
    pre.append(f"{R}.last_site = {str(pos)!r}")
    return R


def extern_call(comp: "ProgramCompiler", e: ir.ExternCall, sc: "Scope", pre: list[str]) -> str:
    """Python for a TNA extern method call; its value (or "None")."""
    inst, m, a = e.instance, e.method, e.args
    k = inst.extern
    role = comp.cur_role
    if k in CONTROL_ONLY and role is not None and role not in ("ingress", "egress"):
        raise CompileError(f"{k}.{m} can only be used in the ingress or egress control", e.pos)
    E = comp.extern_name(inst)
    if k == "RegisterAction" and m == "execute":
        reg = inst.ctor_args[0]
        assert isinstance(reg, ir.ExternInstance)
        _own(comp, reg, e.pos)
        R = _touch(comp, reg, f"{inst.qualified_name}.execute", e.pos, pre)
        act = inst.methods["apply"]
        fn = comp.action_name(act, comp.cur_control)
        size = int(reg.ctor_args[0])
        T = reg.type_args[0]
        idx, cur, res = sc.new_tmp(), sc.new_tmp(), sc.new_tmp()
        pre.append(f"{idx} = {comp.ex(a[0], sc, pre)}")
        pre.append(f"{cur} = {R}.cells[{idx}] if {idx} < {size} else 0")
        has_rv = len(act.params) > 1
        U = inst.type_args[2] if len(inst.type_args) > 2 else None
        if isinstance(T, ir.StructT):
            obj = sc.new_tmp()
            pre.append(f"{obj} = {comp.classes.name(T)}()")
            pre += unpack_fields(obj, struct_layout(T), lambda s: f"({cur} >> {s})" if s else cur)
            args = obj + (", 0" if has_rv else "")
            pre.append(f"{res} = {fn}({sc.frame or 'None'}, {args})")
            pack = " | ".join((f"(int({obj}.{attr}) << {s})" if s else f"int({obj}.{attr})")
                              for attr, _, s, _ in struct_layout(T))
            pre.append(f"if {idx} < {size}: {R}.cells[{idx}] = {pack}")
            return f"{res}[0]" if has_rv else "0"
        args = cur + (", 0" if has_rv else "")
        pre.append(f"{res} = {fn}({sc.frame or 'None'}, {args})")
        pre.append(f"if {idx} < {size}: {R}.cells[{idx}] = {res}[0]")
        if U is not None and isinstance(U, ir.BoolT):
            return f"bool({res}[1])" if has_rv else "False"
        return f"{res}[1]" if has_rv else "0"
    if k == "RegisterAction":
        raise Unsupported(f"RegisterAction.{m} (p4sim runs execute(index))", e.pos)
    if k == "DirectRegisterAction" and m == "execute":
        return _direct_execute(comp, e, sc, pre)
    if k == "DirectRegisterAction":
        raise Unsupported(f"DirectRegisterAction.{m} (p4sim runs execute())", e.pos)
    if k == "DirectRegister" and m in ("read", "write"):
        _own(comp, inst, e.pos)
        if isinstance(inst.type_args[0], ir.StructT):
            raise Unsupported("DirectRegister.read/write of a struct-valued register (use a "
                              "DirectRegisterAction)", e.pos)
        _touch(comp, inst, f"{inst.qualified_name}.{m}", e.pos, pre)
        pre.append("if X.dentry is None or X.dentry.dreg is None: "
                   f"X.no_direct_entry({inst.qualified_name!r}, {str(e.pos)!r})")
        if m == "read":
            return "X.dentry.dreg"
        val = sc.new_tmp()
        pre.append(f"{val} = {comp.ex(a[0], sc, pre)}")
        pre.append(f"X.dentry.dreg = {val}")
        return val
    if k == "Register" and m in ("read", "write"):
        _own(comp, inst, e.pos)
        if isinstance(inst.type_args[0], ir.StructT):
            raise Unsupported("Register.read/write of a struct-valued register (use a "
                              "RegisterAction)", e.pos)
        R = _touch(comp, inst, f"{inst.qualified_name}.{m}", e.pos, pre)
        size = int(inst.ctor_args[0])
        idx = sc.new_tmp()
        pre.append(f"{idx} = {comp.ex(a[0], sc, pre)}")
        if m == "read":
            return f"({R}.cells[{idx}] if {idx} < {size} else 0)"
        val = sc.new_tmp()
        pre.append(f"{val} = {comp.ex(a[1], sc, pre)}")
        pre.append(f"if {idx} < {size}: {R}.cells[{idx}] = {val}")
        return val
    if k == "Hash" and m == "get":
        items = comp.flatten(a[0], sc, pre)
        data, width = comp.packed(items)
        if not isinstance(width, int):
            raise Unsupported("hashing a varbit field on Tofino", e.pos)
        return f"{E}.get({data}, {width})"
    if k == "Random" and m == "get":
        return f"X.rng.getrandbits({scalar_width(e.type)})"
    if k == "Counter" and m == "count":
        size = int(inst.ctor_args[0])
        idx = sc.new_tmp()
        pre.append(f"{idx} = {comp.ex(a[0], sc, pre)}")
        adj = f" + ({comp.ex(a[1], sc, pre)})" if len(a) > 1 else ""
        pre.append(f"if {idx} < {size}:")
        pre.append(f"    {E}_p[{idx}] += 1")
        pre.append(f"    {E}_b[{idx}] += X.sm.packet_length{adj}")
        return "None"
    if k == "DirectCounter" and m == "count":
        adj = f" + ({comp.ex(a[0], sc, pre)})" if a else ""
        pre.append("if X.dentry is not None:")
        pre.append("    X.dentry.counter[0] += 1")
        pre.append(f"    X.dentry.counter[1] += X.sm.packet_length{adj}")
        return "None"
    if k == "Meter" and m == "execute":
        if len(a) > 1:
            raise Unsupported("colour-aware Meter.execute (p4sim's meters are colour-blind)", e.pos)
        return f"_tna_colour({E}.execute({comp.ex(a[0], sc, pre)}, X.sm.packet_length, X.now))"
    if k == "DirectMeter" and m == "execute":
        if a:
            raise Unsupported("colour-aware DirectMeter.execute (p4sim's meters are colour-blind)",
                              e.pos)
        kind = str(inst.ctor_args[0]) if inst.ctor_args else "PACKETS"
        size = "X.sm.packet_length" if kind == "BYTES" else "1"
        return (f"(_tna_colour(X.dentry.meter.execute({size}, X.now)) "
                "if X.dentry is not None and X.dentry.meter is not None else 0)")
    if k == "Checksum":
        if m in ("add", "subtract", "verify", "get"):
            # bf-p4c: a parser checksum is used to verify (add, verify) or to compute a
            # residual (subtract, get), never both ("Inconsistent use of checksum declaration")
            mode = "verify" if m in ("add", "verify") else "residual"
            modes = comp.__dict__.setdefault("_tna_checksum_modes", {})
            seen = modes.setdefault(inst.qualified_name, (mode, m))
            if seen[0] != mode:
                raise CompileError(
                    f"Checksum '{inst.name}': {m}() after {seen[1]}(): a parser checksum either "
                    "verifies (add, verify) or computes a residual (subtract, get), not both "
                    "(bf-p4c)", e.pos)
        if m in ("add", "subtract"):
            data, width = comp.packed(comp.flatten(a[0], sc, pre))
            pre.append(f"X.cksum({E}).{m}({data}, {width})")
            return "None"
        if m == "verify":
            return f"X.cksum({E}).verify()"
        if m == "get":
            return f"X.cksum({E}).get()"
        if m == "update":
            if role is not None and role not in ("ingress_deparser", "egress_deparser"):
                raise CompileError("Checksum.update can only be used in a deparser", e.pos)
            if len(a) > 1:
                raise Unsupported("Checksum.update with zeros_as_ones", e.pos)
            data, width = comp.packed(comp.flatten(a[0], sc, pre))
            return f"_HI_csum16({data}, {width})"
        raise Unsupported(f"Checksum.{m}", e.pos)
    if k in ("Mirror", "Resubmit", "Digest"):
        want = ("ingress_deparser", "egress_deparser") if k == "Mirror" else ("ingress_deparser",)
        if role is not None and role not in want:
            raise CompileError(f"{k}.{m} can only be used in the "
                               f"{' or '.join(w.replace('_', ' ') for w in want)}", e.pos)
        if k == "Digest" and m == "pack":
            t = inst.type_args[0]
            items = comp.flatten(a[0], sc, pre)
            names = [f.name for f in t.fields] if isinstance(t, ir.StructT) and \
                len(t.fields) == len(items) else [x[2] for x in items]
            tup = "(" + "".join(f"({nm!r}, {w}, {c}), " for (c, w, _), nm in zip(items, names)) + ")"
            # named like the instance, as its P4Info digest (bf-p4c's TNA convention)
            pre.append(f"X.digest({inst.qualified_name!r}, {tup})")
            return "None"
        if k == "Resubmit" and m == "emit":
            if a:
                data, width = comp.packed(comp.flatten(a[0], sc, pre))
                pre.append(f"X.request_resubmit({data}, {width})")
            else:
                pre.append("X.request_resubmit(0, 0)")
            return "None"
        if k == "Mirror" and m == "emit":
            session = comp.ex(a[0], sc, pre)
            if len(a) > 1:
                data, width = comp.packed(comp.flatten(a[1], sc, pre))
            else:
                data, width = "0", 0
            pre.append(f"X.request_mirror({session}, {data}, {width})")
            return "None"
    raise Unsupported(f"extern method {k}.{m}", e.pos)


def _direct_execute(comp: "ProgramCompiler", e: ir.ExternCall, sc: "Scope", pre: list[str]) -> str:
    """DirectRegisterAction.execute(): the read-modify-write of the cell of the table entry
    whose action is running (the action of a table whose ``registers`` is the register)."""
    inst = e.instance
    reg = inst.ctor_args[0]
    assert isinstance(reg, ir.ExternInstance)
    _own(comp, reg, e.pos)
    _touch(comp, reg, f"{inst.qualified_name}.execute", e.pos, pre)
    pre.append("if X.dentry is None or X.dentry.dreg is None: "
               f"X.no_direct_entry({reg.qualified_name!r}, {str(e.pos)!r})")
    act = inst.methods["apply"]
    fn = comp.action_name(act, comp.cur_control)
    T = reg.type_args[0]
    cur, res = sc.new_tmp(), sc.new_tmp()
    pre.append(f"{cur} = X.dentry.dreg")
    has_rv = len(act.params) > 1
    if isinstance(T, ir.StructT):
        obj = sc.new_tmp()
        pre.append(f"{obj} = {comp.classes.name(T)}()")
        pre += unpack_fields(obj, struct_layout(T), lambda s: f"({cur} >> {s})" if s else cur)
        pre.append(f"{res} = {fn}({sc.frame or 'None'}, {obj}{', 0' if has_rv else ''})")
        pack = " | ".join((f"(int({obj}.{attr}) << {s})" if s else f"int({obj}.{attr})")
                          for attr, _, s, _ in struct_layout(T))
        pre.append(f"X.dentry.dreg = {pack}")
        return f"{res}[0]" if has_rv else "0"
    pre.append(f"{res} = {fn}({sc.frame or 'None'}, {cur}{', 0' if has_rv else ''})")
    pre.append(f"X.dentry.dreg = {res}[0]")
    return f"{res}[1]" if has_rv else "0"


def builtin_call(comp: "ProgramCompiler", e: ir.BuiltinCall, sc: "Scope", pre: list[str]) -> Optional[str]:
    """TNA's extern functions; None when ``e`` is not one of them."""
    n, a = e.name, e.args
    if n in ("min", "max"):
        x, y = comp.ex(a[0], sc, pre), comp.ex(a[1], sc, pre)
        t = a[0].type
        if isinstance(t, ir.BitT) and t.signed:
            raise Unsupported(f"{n}() of signed values", e.pos)
        return f"{n}({x}, {y})"
    if n in ("sizeInBits", "sizeInBytes"):
        t = a[0].type
        w = t.width if isinstance(t, ir.HeaderT) else value_width(t)
        return str(w if n == "sizeInBits" else (w + 7) >> 3)
    if n == "port_metadata_unpack":
        if not sc.in_parser:
            raise CompileError("port_metadata_unpack can only be used in the ingress parser", e.pos)
        t = e.type
        if not isinstance(t, (ir.StructT, ir.HeaderT)) or not all(
                isinstance(f.type, (ir.BitT, ir.BoolT)) for f in t.fields):
            raise Unsupported("port_metadata_unpack of a type other than a struct/header of bit "
                              "fields", e.pos)
        lay = header_layout(ir.HeaderT(t.name, t.fields))
        total = sum(w for _, w, _, _ in lay)
        x, tmp = sc.new_tmp(), sc.new_tmp()
        pre.append(f"{x} = _look(data, pos, nbits, X.port_md_bits) >> (X.port_md_bits - {total})")
        pre.append("pos += X.port_md_bits")
        pre.append(f"{tmp} = {comp.classes.name(t)}()")
        pre += unpack_fields(tmp, lay, lambda s: f"({x} >> {s})")
        if isinstance(t, ir.HeaderT):
            pre.append(f"{tmp}._v = True")
        return tmp
    return None

