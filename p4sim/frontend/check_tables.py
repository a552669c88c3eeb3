"""Tables (keys, action lists, default actions, const entries) and keysets, which parser
`select` cases share."""
from __future__ import annotations

from typing import Optional

from lark import Tree

from p4sim.frontend import ir
from p4sim.frontend.check_exprs import ExprChecker
from p4sim.frontend.consteval import mask
from p4sim.frontend.symbols import Scope, type_name


class TableChecker(ExprChecker):
    """Builds TableDecls and keysets from table declarations and select cases."""

    def table(self, d: Tree, scope: Scope) -> ir.TableDecl:
        annots, name_node = d.children[:2]
        a = self.annotations(annots)
        name = self.ident(name_node)
        t = ir.TableDecl(name, self.qualify(name, a), [], [], None, False, [], False, None,
                         annotations=a, pos=self.pos(d))
        self.declare(scope, name, t, name_node)
        props = d.children[2:]
        seen: set[str] = set()
        entries_prop = None
        default_prop = None
        largest_wins, priority_delta = True, 1

        def once(pname: str, node: Tree) -> None:
            if pname in seen:
                raise self.err(f"duplicate table property '{pname}'", node)
            seen.add(pname)

        for p in props:
            if p.data == "key_prop":
                once("key", p)
                for k in self.children(p, "key_elem"):
                    t.keys.append(self.table_key(k, scope))
            elif p.data == "actions_prop":
                once("actions", p)
                for item in self.children(p, "action_item"):
                    ref = self.action_ref(item.children[1], scope, listed=None)
                    ref.annotations = self.annotations(item.children[0])
                    ref.pos = self.pos(item)
                    if any(r.action is ref.action for r in t.actions):
                        raise self.err(f"action '{ref.action.name}' listed twice", item)
                    t.actions.append(ref)
            elif p.data == "entries_prop":
                once("entries", p)
                entries_prop = p
            elif p.data == "simple_prop":
                pname = self.ident(self.child(p, "decl_name"))
                once(pname, p)
                is_const = self.child(p, "const_kw") is not None
                value = p.children[-1]
                if pname == "default_action":
                    default_prop = (value, is_const, p)
                elif pname == "size":
                    t.size = self.const_int(value, scope)
                    if t.size < 0:
                        raise self.err("table size must not be negative", value)
                elif pname in ("counters", "meters"):
                    inst = self.expr_symbol(value, scope)
                    want = "direct_counter" if pname == "counters" else "direct_meter"
                    tna = "DirectCounter" if pname == "counters" else "DirectMeter"
                    if isinstance(inst, ir.ExternInstance) and inst.extern == tna:
                        want = tna  # TNA: counted/metered when an action calls count()/execute()
                    if not isinstance(inst, ir.ExternInstance) or inst.extern != want:
                        raise self.err(f"'{pname}' must name a {want} instance", value)
                    if pname == "counters":
                        t.direct_counter = inst
                    else:
                        t.direct_meter = inst
                elif pname == "registers":
                    inst = self.expr_symbol(value, scope)
                    if not isinstance(inst, ir.ExternInstance) or inst.extern != "DirectRegister":
                        raise self.err("'registers' must name a DirectRegister instance", value)
                    t.direct_register = inst
                elif pname == "largest_priority_wins":
                    e = self.expr(value, scope, ir.BoolT())
                    if not isinstance(e, ir.Literal) or not isinstance(e.value, bool):
                        raise self.err("largest_priority_wins must be a constant bool", value)
                    largest_wins = e.value
                elif pname == "priority_delta":
                    priority_delta = self.const_int(value, scope)
                    if priority_delta < 0:
                        raise self.err("priority_delta must be a positive value", value)
                elif pname == "implementation":
                    raise self.unsupported("table implementations (action profiles/selectors)",
                                           p)
                elif pname == "support_timeout":
                    raise self.unsupported("idle timeouts (support_timeout)", p)
                else:
                    raise self.unsupported(f"table property '{pname}'", p)
        if default_prop is not None:
            value, is_const, p = default_prop
            t.default_action = self.default_action(value, t, scope)
            t.default_is_const = is_const
        if entries_prop is not None:
            t.entries_are_const = self.child(entries_prop, "const_kw") is not None
            rows = self.children(entries_prop, "entry")
            given = [self.const_entry(e, t, scope) for e in rows]
            t.const_entries = self.entry_priorities(t, given, rows, largest_wins, priority_delta)
        if "actions" not in seen:  # an empty list is fine (p4c): the table runs its default
            raise self.err(f"table '{name}' has no 'actions' property", d)
        return t

    def table_key(self, k: Tree, scope: Scope) -> ir.TableKey:
        expr_tree, mk_node, annots = k.children
        e = self.expr(expr_tree, scope, None)
        # p4c's key types: bit/int, bool, serializable and plain enums (32-bit values in BMv2,
        # p4c's EnumOn32Bits), error
        if not isinstance(e.type, (ir.BitT, ir.BoolT, ir.EnumT, ir.ErrorT)):
            if isinstance(e.type, ir.IntT):
                raise self.err("table key needs a type with a width", expr_tree)
            raise self.err(f"cannot match on {type_name(e.type)}", expr_tree)
        mk = self.ident(mk_node)
        if mk not in self.match_kinds:
            raise self.err(f"unknown match kind '{mk}'", mk_node)
        if mk == "selector":
            raise self.unsupported("selector match kind (action selectors)", mk_node)
        a = self.annotations(annots)
        name = a.get("name") or self.source_text(expr_tree)
        return ir.TableKey(e, mk, name, a, self.pos(k))

    def action_ref(self, node: Tree, scope: Scope, listed: Optional[ir.TableDecl],
                   const_args: bool = False) -> ir.ActionRef:
        """An action in a table's action list (``listed`` None) or a default/const entry."""
        if node.data == "action_ref":
            pn = node.children[0]
            arg_tree = node.children[1] if len(node.children) > 1 else None
        else:
            pn, arg_tree = node, None
        sym = self.global_scope.lookup(self.ident(pn)) if pn.data == "top_prefixed_name" \
            else scope.lookup(self.ident(pn))
        if not isinstance(sym, ir.ActionDecl):
            raise self.err(f"'{self.ident(pn)}' is not an action", pn)
        args_nodes = list(arg_tree.children) if arg_tree is not None else []
        directional = [v for v in sym.params if v.direction is not None]
        if listed is None:
            if args_nodes and len(args_nodes) != len(directional):
                raise self.err(f"action '{sym.name}' in an actions list binds its "
                               f"{len(directional)} directional parameter(s)", node)
            if not args_nodes and directional:
                raise self.err(f"action '{sym.name}' needs its directional argument(s) "
                               "bound in the actions list", node)
            args: list[Optional[ir.Expr]] = []
            for v, an in zip(directional, args_nodes):
                args.append(self.arg_for(v.direction, v.type, an, scope))
            args += [None] * (len(sym.params) - len(directional))
            return ir.ActionRef(sym, args, pos=self.pos(node))
        ref = next((r for r in listed.actions if r.action is sym), None)
        if ref is None:
            raise self.err(f"action '{sym.name}' is not in the actions of table "
                           f"'{listed.name}'", pn)
        data = [v for v in sym.params if v.direction is None]
        if len(args_nodes) < len(data) and self.param_default(data[len(args_nodes)]) is not None:
            # p4c (1.2.5.16) does not fill action data from declared default values in a table's
            # default_action or entries: "parameter should be assigned in call".  Direct calls of
            # the action do take the defaults (check_exprs).
            v = data[len(args_nodes)]
            raise self.err(f"{v.name}: parameter should be assigned in call {sym.name}: a table's "
                           "default action and entries give every action-data argument", node)
        if len(args_nodes) == len(data) and directional:
            # only the action data given: directional arguments are the listed ones
            it = iter(args_nodes)
            args_nodes = [None if v.direction is not None else next(it) for v in sym.params]
        elif len(args_nodes) != len(sym.params):
            raise self.err(f"action '{sym.name}' takes {len(sym.params)} argument(s), "
                           f"{len(args_nodes)} given", node)
        args = []
        for i, (v, an) in enumerate(zip(sym.params, args_nodes)):
            if v.direction is not None:
                args.append(ref.args[i] if an is None else
                            self.arg_for(v.direction, v.type, an, scope))
            else:
                e = self.coerce(self.expr(an, scope, v.type), v.type, an)
                if not isinstance(e, ir.Literal):
                    raise self.err("action data here must be a compile-time constant", an)
                args.append(e)
        return ir.ActionRef(sym, args, dict(ref.annotations), self.pos(node))

    def arg_for(self, direction: Optional[str], t: ir.Type, node: Tree,
                scope: Scope) -> ir.Expr:
        e = self.coerce(self.expr(node, scope, t), t, node)
        if direction in ("out", "inout"):
            self.check_lvalue(e, node)
        return e

    def default_action(self, value: Tree, t: ir.TableDecl, scope: Scope) -> ir.ActionRef:
        if value.data == "call":
            callee, args = value.children
            if callee.data not in ("name_ref", "top_name_ref"):
                raise self.err("default_action must be an action call", value)
            node = Tree("action_ref", [Tree("prefixed_name" if callee.data == "name_ref"
                                            else "top_prefixed_name", callee.children,
                                            callee.meta), args], value.meta)
        elif value.data in ("name_ref", "top_name_ref"):
            node = Tree("prefixed_name" if value.data == "name_ref" else "top_prefixed_name",
                        value.children, value.meta)
        else:
            raise self.err("default_action must be an action call", value)
        ref = self.action_ref(node, scope, t)
        if "tableonly" in ref.annotations:
            raise self.err(f"action '{ref.action.name}' is @tableonly and cannot be the default",
                           value)
        return ref

    def entry_priorities(self, t: ir.TableDecl, entries: list[tuple[ir.ConstEntry, Optional[int], Optional[int]]],
                         rows: list[Tree], largest_wins: bool, delta: int) -> list[ir.ConstEntry]:
        """Each entry's run-time priority (larger wins), by the convention that decides it.

        * ``@priority(N)`` (the old annotation; p4c's BMv2 back end copies it into the JSON, other
          entries get their position 1, 2, ...): BMv2 gives precedence to the smallest number,
          ties to the earlier entry.
        * ``const entries`` without it: the earlier entry wins (p4c rejects ``priority = N:``
          there: "Table with 'const' entries cannot have priorities").
        * ``entries`` (P4_16 1.2.4): p4c's front end (frontends/p4/entryPriorities.cpp) numbers
          the entries: with no ``priority = N:`` at all, 1, 1 + delta, ... from the last entry up
          (``largest_priority_wins``, the default) or from the first entry down; otherwise the
          first entry must have one and an entry without one gets the previous one's minus
          (largest wins) or plus ``priority_delta``.  Precedence then goes to the largest (or,
          with ``largest_priority_wins = false``, the smallest) number.
        Only tables with a ternary/range/optional key use priorities at run time."""
        needs = any(k.match_kind in ("ternary", "range", "optional") for k in t.keys)
        explicit = [(ce, prio, legacy) for ce, prio, legacy in entries]
        if t.entries_are_const:
            for (ce, prio, _), row in zip(explicit, rows):
                if prio is not None:
                    raise self.err("a table with 'const entries' cannot give entries a priority "
                                   "(p4c: use 'entries' or the @priority annotation)", row)
        if any(legacy is not None for _, _, legacy in explicit) or t.entries_are_const:
            ranks = [(legacy if legacy is not None else i + 1, i) for i, (_, _, legacy) in enumerate(explicit)]
            order = sorted(range(len(explicit)), key=lambda i: ranks[i])  # smallest first = wins
            return self._ranked([e[0] for e in explicit], order, needs)
        n = len(explicit)
        if all(prio is None for _, prio, _ in explicit):
            prios = [0] * n
            cur = 1
            for k in range(n):
                prios[n - 1 - k if largest_wins else k] = cur
                cur += delta
        else:
            if not needs:
                raise self.err(f"table '{t.name}': its key's match kinds do not use priorities, "
                               "but some entries give one", rows[0])
            if explicit[0][1] is None:
                raise self.err("the first entry must have a priority (others do)", rows[0])
            prios, cur = [], 0
            for ce, prio, _ in explicit:
                cur = prio if prio is not None else cur
                prios.append(cur)
                cur = cur - delta if largest_wins else cur + delta
                if cur < 0:
                    raise self.err(f"table '{t.name}': overflow in priority computation", rows[0])
        if largest_wins:
            for (ce, _, _), p in zip(explicit, prios):
                ce.priority = p if needs else None
            return [e[0] for e in explicit]
        order = sorted(range(n), key=lambda i: (prios[i], i))
        return self._ranked([e[0] for e in explicit], order, needs)

    @staticmethod
    def _ranked(entries: list[ir.ConstEntry], order: list[int], needs: bool) -> list[ir.ConstEntry]:
        """Priorities n, n-1, ... 1 (larger wins) following ``order`` (the winner first)."""
        n = len(entries)
        for rank, i in enumerate(order):
            entries[i].priority = n - rank if needs else None
        return entries

    def const_entry(self, e: Tree, t: ir.TableDecl, scope: Scope) -> tuple[ir.ConstEntry, Optional[int], Optional[int]]:
        """The entry, its ``priority = N:`` value and its ``@priority(N)`` value (or None)."""
        a = self.annotations(e.children[-1])  # ``keys : action(...) @priority(1);``
        prio_node = self.child(e, "entry_priority")
        rest = [c for c in e.children if not (isinstance(c, Tree) and c.data in
                                              ("const_kw", "entry_priority", "annots"))]
        ks, aref = rest[0], rest[1]
        for k in t.keys:
            if isinstance(k.expr.type, ir.ErrorT):  # p4c-bm2-ss: "invalid exact key expression"
                raise self.err("entries on a table keyed by an 'error' value are not accepted "
                               "for BMv2 (p4c-bm2-ss rejects them)", ks)
        keysets = self.keysets(ks, [k.expr for k in t.keys], scope,
                               [k.match_kind for k in t.keys])
        ref = self.action_ref(aref, scope, t)
        if "defaultonly" in ref.annotations:
            raise self.err(f"action '{ref.action.name}' is @defaultonly", aref)
        priority = legacy = None
        if prio_node is not None:
            priority = self.const_int(prio_node.children[0], scope)
            if priority < 0:
                raise self.err("an entry priority must not be negative", prio_node)
        if "priority" in a:
            try:
                legacy = int(a["priority"], 0)
            except ValueError:
                raise self.err("@priority needs an integer", e) from None
        is_const = t.entries_are_const or self.child(e, "const_kw") is not None
        return ir.ConstEntry(keysets, ref, None, self.pos(e), is_const), priority, legacy

    def keysets(self, ks: Tree, keys: list[ir.Expr], scope: Scope,
                match_kinds: Optional[list[str]]) -> list[ir.KeySet]:
        if ks.data == "tuple_keyset":
            items = list(ks.children)
        elif ks.data == "ks_default" and len(keys) != 1:
            return [ir.KsDefault() for _ in keys]
        else:
            items = [ks]
        if len(items) != len(keys):
            raise self.err(f"keyset has {len(items)} element(s) but there are {len(keys)} "
                           "key(s)", ks)
        out = []
        for i, (item, key) in enumerate(zip(items, keys)):
            mk = match_kinds[i] if match_kinds else None
            out.append(self.keyset(item, key.type, scope, mk))
        return out

    def _ks_value(self, node: Tree, t: ir.Type, scope: Scope) -> int:
        e = self.coerce(self.expr(node, scope, t), t, node)
        if not isinstance(e, ir.Literal):
            raise self.err("keyset values must be compile-time constants", node)
        return int(e.value)

    def keyset(self, item: Tree, t: ir.Type, scope: Scope, mk: Optional[str]) -> ir.KeySet:
        if isinstance(item, Tree) and item.data == "ks_default":
            return ir.KsDefault()
        if isinstance(item, Tree) and item.data == "ks_mask":
            if mk in ("exact", "range", "optional"):
                raise self.err(f"a mask ('&&&') is not allowed for a {mk} key", item)
            v = self._ks_value(item.children[0], t, scope)
            m = self._ks_value(item.children[1], t, scope)
            if mk == "lpm":
                w = t.width if isinstance(t, ir.BitT) else 1
                if (m | (m - 1)) & mask(w) != mask(w) and m != 0:
                    raise self.err("an lpm mask must be a prefix (ones followed by zeros)", item)
            return ir.KsMask(v & m, m)
        if isinstance(item, Tree) and item.data == "ks_range":
            if mk in ("exact", "lpm", "ternary", "optional"):
                raise self.err(f"a range ('..') is not allowed for a {mk} key", item)
            return ir.KsRange(self._ks_value(item.children[0], t, scope),
                              self._ks_value(item.children[1], t, scope))
        v = self._ks_value(item, t, scope)
        if mk == "lpm":
            w = t.width if isinstance(t, ir.BitT) else 1
            return ir.KsMask(v, mask(w))
        return ir.KsValue(v)
