"""Python classes generated for P4 headers, structs and header stacks.

Each P4 composite type becomes a class with generated ``_copy`` / ``_set`` / ``_eq`` methods, so copying a packet's headers for a
clone or assigning ``hdr.a = hdr.b`` is straight-line code instead of a reflective walk.
"""
from __future__ import annotations

import keyword

from p4sim.frontend import ir


def pyattr(name: str) -> str:
    """The Python attribute for a P4 field name (P4 allows names that are Python keywords)."""
    if name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_"):
        return name
    return "p4_" + "".join(c if c.isalnum() else "_" for c in name) + "_"


def is_composite(t: ir.Type) -> bool:
    return isinstance(t, (ir.HeaderT, ir.StructT, ir.StackT, ir.HeaderUnionT))


def scalar_width(t: ir.Type) -> int:
    """Bit width of a scalar type as it appears in packets, hashes and digests."""
    if isinstance(t, ir.BitT):
        return t.width
    if isinstance(t, ir.BoolT):
        return 1
    if isinstance(t, ir.EnumT) and t.underlying is not None:
        return t.underlying.width
    if isinstance(t, ir.EnumT):  # p4c's BMv2 mid end turns user enums into bit<32> (EnumOn32Bits)
        return 32
    if isinstance(t, ir.ErrorT):
        return 32  # BMv2 carries an error as a 32-bit integer (p4c's errorWidth)
    raise TypeError(f"type {t} has no bit width")


def default_scalar(t: ir.Type, error_default: int = 0) -> str:
    if isinstance(t, ir.BoolT):
        return "False"
    if isinstance(t, ir.ErrorT):
        return str(error_default)
    return "0"


def header_layout(t: ir.HeaderT) -> list[tuple[str, int, int, bool]]:
    """(python attribute path, width, shift from the header's LSB, is_bool) per scalar field,
    first field first (fixed-size headers).  A struct field contributes its leaves in order,
    with a dotted path (``s.a``): the runtime keeps the struct as an object inside the header,
    the wire sees its fields back to back (as p4c's FlattenHeaders makes them for BMv2)."""
    leaves = ir.leaf_fields(t)
    out = []
    off = sum(scalar_width(ft) for _, ft in leaves)
    for path, ft in leaves:
        w = scalar_width(ft)
        off -= w
        out.append((".".join(pyattr(n) for n in path), w, off, isinstance(ft, ir.BoolT)))
    return out


def varbit_split(t: ir.HeaderT) -> tuple[ir.HeaderT, str, ir.HeaderT]:
    """A header with a varbit field as (fixed fields before it, its attribute, fixed fields
    after it); each part is a fixed-size pseudo-header for ``header_layout``."""
    fields = t.fields
    i = next(k for k, f in enumerate(fields) if isinstance(f.type, ir.VarbitT))
    return (ir.HeaderT(t.name, fields[:i]), pyattr(fields[i].name), ir.HeaderT(t.name, fields[i + 1:]))


class ClassFactory:
    """Generates (as source text) and names one class per composite type, by identity."""

    def __init__(self, error_default: int) -> None:
        self.names: dict[int, str] = {}
        self.types: dict[str, ir.Type] = {}
        self.src: list[str] = []
        self.error_default = error_default

    def name(self, t: ir.Type) -> str:
        key = id(t)
        if key in self.names:
            return self.names[key]
        if isinstance(t, ir.StackT):
            self.name(t.elem)
        elif isinstance(t, (ir.StructT, ir.HeaderT, ir.HeaderUnionT)):
            for f in t.fields:
                if is_composite(f.type):
                    self.name(f.type)
        n = f"C{len(self.names)}_{pyattr(getattr(t, 'name', 'stack'))}"
        self.names[key] = n
        self.types[n] = t
        if isinstance(t, ir.HeaderT):
            self._header(n, t)
        elif isinstance(t, ir.StructT):
            self._struct(n, t)
        elif isinstance(t, ir.StackT):
            self._stack(n, t)
        elif isinstance(t, ir.HeaderUnionT):
            self._union(n, t)
        else:
            raise TypeError(f"not a composite type: {t}")
        return n

    # Scalar fields are class attributes holding the zero value, so creating a header or
    # struct does not touch its scalar fields at all (a packet's parsed representation is built
    # for every packet; with dozens of headers and metadata fields that matters), and a write
    # shadows the default in the instance dict.  ``_set`` therefore clears the dict before copying
    # so a field the source never wrote reads as the default again.

    def _header(self, n: str, t: ir.HeaderT) -> None:
        if t.has_structs:
            return self._struct_header(n, t)
        if t.varbit is not None:
            return self._varbit_header(n, t)
        lay = header_layout(t)
        attrs = [a for a, _, _, _ in lay]
        L = [f"class {n}:", f"    _FIELDS = {tuple(attrs)!r}", f"    _WIDTH = {t.width}", "    _v = False"]
        L += [f"    {a} = {'False' if b else '0'}" for a, _, _, b in lay]
        L += ["    def _copy(self):", f"        n = _new({n})", "        n.__dict__.update(self.__dict__)",
              "        return n",
              "    def _set(self, o):", "        if o is self: return  # x = x keeps x",
              "        d = self.__dict__", "        d.clear()", "        d.update(o.__dict__)"]
        L += ["    def _inv(self):", "        self.__dict__.clear()  # invalid, fields read as 0"]
        L += ["    def _eq(self, o):", "        if not self._v and not o._v: return True",
              "        return self._v == o._v" + "".join(f" and self.{a} == o.{a}" for a in attrs)]
        L += self._pack_unpack(lay)
        self.src.append("\n".join(L))

    @staticmethod
    def _pack_unpack(lay: list[tuple[str, int, int, bool]]) -> list[str]:
        # _pack/_unpack: the header as one integer, first field in the most significant bits
        pack = " | ".join((f"(int(self.{a}) << {s})" if b else f"(self.{a} << {s})") if s else
                          (f"int(self.{a})" if b else f"self.{a}") for a, _, s, b in lay) or "0"
        L = ["    def _pack(self):", f"        return {pack}", "    def _unpack(self, x):"]
        for a, w, s, b in lay:
            v = f"(x >> {s}) & {(1 << w) - 1}" if s else f"x & {(1 << w) - 1}"
            L.append(f"        self.{a} = {'bool(' + v + ')' if b else v}")
        L += ["        self._v = True", "        return self", ""]
        return L

    def _struct_header(self, n: str, t: ir.HeaderT) -> None:
        """A header with struct-typed fields: each struct is an object owned by the header for
        its whole life (member aliases in generated code may hold it), so copying, assignment
        and invalidation update it in place; its leaves are packed in order on the wire."""
        top = [(pyattr(f.name), f.type) for f in t.fields]
        comp = [(a, self.names[id(ft)]) for a, ft in top if isinstance(ft, ir.StructT)]
        L = [f"class {n}:", f"    _FIELDS = {tuple(a for a, _ in top)!r}", f"    _WIDTH = {t.width}", "    _v = False"]
        L += [f"    {a} = {'False' if isinstance(ft, ir.BoolT) else '(0, 0)' if isinstance(ft, ir.VarbitT) else '0'}"
              for a, ft in top if not isinstance(ft, ir.StructT)]
        L.append("    def __init__(self):")
        L += [f"        self.{a} = {c}()" for a, c in comp]
        L += ["    def _copy(self):", f"        n = _new({n})", "        n.__dict__.update(self.__dict__)"]
        L += [f"        n.{a} = self.{a}._copy()" for a, _ in comp]
        L += ["        return n", "    def _set(self, o):", "        if o is self: return  # x = x keeps x",
              "        keep = (" + "".join(f"self.{a}, " for a, _ in comp) + ")",
              "        d = self.__dict__", "        d.clear()", "        d.update(o.__dict__)"]
        L += [f"        self.{a} = keep[{i}]" for i, (a, _) in enumerate(comp)]
        L += [f"        keep[{i}]._set(o.{a})" for i, (a, _) in enumerate(comp)]
        L += ["    def _inv(self):  # invalid, fields read as 0; the struct objects stay",
              "        keep = (" + "".join(f"self.{a}, " for a, _ in comp) + ")",
              "        self.__dict__.clear()"]
        L += [f"        self.{a} = keep[{i}]" for i, (a, _) in enumerate(comp)]
        L += [f"        keep[{i}]._set({c}())" for i, (_, c) in enumerate(comp)]
        L += ["    def _eq(self, o):", "        if not self._v and not o._v: return True",
              "        return self._v == o._v" + "".join(
                  f" and self.{a}._eq(o.{a})" if isinstance(ft, ir.StructT) else f" and self.{a} == o.{a}"
                  for a, ft in top)]
        L += self._pack_unpack(header_layout(t)) if t.varbit is None else [""]
        self.src.append("\n".join(L))

    def _varbit_header(self, n: str, t: ir.HeaderT) -> None:
        """A header with a varbit field: that field holds (length in bits, value), so equality
        and assignment see both; extract and emit are generated by the code generator."""
        attrs = [pyattr(f.name) for f in t.fields]
        L = [f"class {n}:", f"    _FIELDS = {tuple(attrs)!r}", "    _v = False"]
        L += [f"    {pyattr(f.name)} = {'(0, 0)' if isinstance(f.type, ir.VarbitT) else 'False' if isinstance(f.type, ir.BoolT) else '0'}"
              for f in t.fields]
        L += ["    def _copy(self):", f"        n = _new({n})", "        n.__dict__.update(self.__dict__)",
              "        return n",
              "    def _set(self, o):", "        if o is self: return",
              "        d = self.__dict__", "        d.clear()", "        d.update(o.__dict__)",
              "    def _inv(self):", "        self.__dict__.clear()",
              "    def _eq(self, o):", "        if not self._v and not o._v: return True",
              "        return self._v == o._v" + "".join(f" and self.{a} == o.{a}" for a in attrs), ""]
        self.src.append("\n".join(L))

    def _struct(self, n: str, t: ir.StructT) -> None:
        attrs = [(pyattr(f.name), f.type) for f in t.fields]
        comp = [(a, ft) for a, ft in attrs if is_composite(ft)]
        L = [f"class {n}:", f"    _FIELDS = {tuple(a for a, _ in attrs)!r}"]
        L += [f"    {a} = {default_scalar(ft, self.error_default)}" for a, ft in attrs if not is_composite(ft)]
        if comp:
            L.append("    def __init__(self):")
            L += [f"        self.{a} = {self.names[id(ft)]}()" for a, ft in comp]
        L += ["    def _copy(self):", f"        n = _new({n})", "        n.__dict__.update(self.__dict__)"]
        L += [f"        n.{a} = self.{a}._copy()" for a, _ in comp]
        L += ["        return n", "    def _set(self, o):", "        if o is self: return  # x = x keeps x"]
        if comp:
            L += ["        keep = (" + "".join(f"self.{a}, " for a, _ in comp) + ")",
                  "        d = self.__dict__", "        d.clear()", "        d.update(o.__dict__)"]
            L += [f"        self.{a} = keep[{i}]" for i, (a, _) in enumerate(comp)]
            L += [f"        keep[{i}]._set(o.{a})" for i, (a, _) in enumerate(comp)]
        else:
            L += ["        d = self.__dict__", "        d.clear()", "        d.update(o.__dict__)"]
        cmp = " and ".join(f"self.{a}._eq(o.{a})" if is_composite(ft) else f"self.{a} == o.{a}" for a, ft in attrs)
        L += ["    def _eq(self, o):", f"        return {cmp or 'True'}", ""]
        self.src.append("\n".join(L))

    def _union(self, n: str, t: ir.HeaderUnionT) -> None:
        """A header union: its member headers, at most one of them valid (``_only`` keeps that
        so: setValid, extract and assignment of a valid header invalidate the others)."""
        ms = [(pyattr(f.name), self.names[id(f.type)]) for f in t.fields]
        L = [f"class {n}:", f"    _FIELDS = {tuple(a for a, _ in ms)!r}", "    def __init__(self):"]
        L += [f"        self.{a} = {c}()" for a, c in ms] or ["        pass"]
        L += ["    def _copy(self):", f"        n = _new({n})"]
        L += [f"        n.{a} = self.{a}._copy()" for a, _ in ms]
        L += ["        return n", "    def _set(self, o):", "        if o is self: return"]
        L += [f"        self.{a}._set(o.{a})" for a, _ in ms]
        L += ["    def _eq(self, o):", "        return " + (" and ".join(f"self.{a}._eq(o.{a})" for a, _ in ms) or "True")]
        L += ["    def _valid(self):", "        return " + (" or ".join(f"self.{a}._v" for a, _ in ms) or "False")]
        L += ["    def _only(self, keep):"]
        inv = {f.name: "._inv()" if f.type.has_structs else ".__dict__.clear()" for f in t.fields}
        L += [f"        if self.{a} is not keep: self.{a}{inv[f.name]}" for (a, _), f in zip(ms, t.fields)] or ["        pass"]
        L += ["    def _inv(self):"]
        L += [f"        self.{a}{inv[f.name]}" for (a, _), f in zip(ms, t.fields)] or ["        pass"]
        L.append("")
        self.src.append("\n".join(L))

    def _stack(self, n: str, t: ir.StackT) -> None:
        e = self.names[id(t.elem)]
        L = [f"class {n}:", "    __slots__ = ('e', 'n')", f"    SIZE = {t.size}",
             "    def __init__(self):", f"        self.e = [{', '.join([e + '()'] * t.size)}]", "        self.n = 0",
             "    def _copy(self):", f"        c = _new({n})", "        c.e = [h._copy() for h in self.e]",
             "        c.n = self.n", "        return c",
             "    def _set(self, o):", "        for a, b in zip(self.e, o.e): a._set(b)", "        self.n = o.n",
             "    def _eq(self, o):", "        return all(a._eq(b) for a, b in zip(self.e, o.e))",
             "    def _at(self, i):",
             f"        return self.e[i] if i < {t.size} else {e}()  # out of range: a scratch header",
             "    def _push(self, k):",
             f"        for i in range({t.size} - 1, -1, -1):",
             "            if i >= k: self.e[i]._set(self.e[i - k])",
             "            else: self.e[i]._inv()  # invalid, fields read as 0",
             f"        self.n = min(self.n + k, {t.size})",
             "    def _pop(self, k):",
             f"        for i in range({t.size}):",
             f"            if i + k < {t.size}: self.e[i]._set(self.e[i + k])",
             "            else: self.e[i]._inv()",
             "        self.n = max(self.n - k, 0)", ""]
        self.src.append("\n".join(L))
