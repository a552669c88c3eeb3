"""Per-switch table entries from the fabric model, through per-role Jinja2 templates.

Flow: model + placement -> plan (plan.py) -> a plain-value context per switch -> `<role>.j2`
emits one JSON object per line -> every entry is checked against the program's contract
(contract.py) and the table sizes -> one JSON document per switch, written deterministically
(fixed key order, one entry per line) so golden files and code review diffs stay readable.

Why templates: the mapping from fabric concepts to P4 tables is the part operators tune and
review (and what changes when the P4 program changes); keeping it in `templates/*.j2` keeps it
out of the Python that computes values.

Two programs: `arch="v1model"` (p4src/v1model/stellar.p4, templates/*.j2, the default) and
`arch="tna"` (p4src/tna/stellar.p4, templates/tna/*.j2, context from render_tna.py, checked
against contract.TNA_TABLES with bf-p4c's `pipe.`-prefixed names).  Same document format.

Document format ("stellar-entries/1"):
    {"format", "fabric", "switch": {name, role, device_id, p4runtime, mac},
     "path_sets": [{id, purpose, ecmp, members: [{slot, port, via}]}],   # for the controller
     "entries":   [{table, match, action, params, priority?, default_action?, comment}],
     "meters":    [{name, index, cir, cburst, pir, pburst, comment}],      # bytes/s and bytes
     "registers": [{name, index, value, comment}],
     "clone_sessions": [{session_id, replicas: [{egress_port, instance}], class_of_service,
                         packet_length_bytes, comment}]}                 # TNA documents only
A document with "clone_sessions" (a TNA document: its program mirrors feedback copies) says
which clone (mirror) sessions the switch holds, all of them: the push reconciles them like
tables (P4Runtime CloneSessionEntry, read back by a wildcard PRE read).  A document without the
key (v1model: the program clones nothing) leaves the switch's sessions alone.
Match values: exact -> the value; lpm -> {value, prefix_len}; ternary -> {value, mask}; range -> {low, high}; a
wildcard field is omitted.  Values are ints, dotted IPv4 strings or colon MAC strings
(`contract.value_to_int` converts).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import jinja2

from . import contract, feedback, prior
from .model import CLASSES, ECN_WINDOW_MIN_US, Fabric, Switch
from .paths import Assignment, assign_jobs
from .plan import SwitchPlan, known_downstream_mask, plan_fabric

FORMAT = "stellar-entries/1"
TEMPLATES = Path(__file__).resolve().parent / "templates"
GBPS_TO_BYTES_PER_S = 125_000_000
ENTRY_KEYS = ("table", "default_action", "match", "action", "params", "priority", "comment")


class RenderError(Exception):
    """A rendered entry breaks the program's contract, or a table would overflow."""


@dataclass
class RenderResult:
    documents: dict[str, dict[str, Any]]  # switch name -> document
    plans: dict[str, SwitchPlan]
    assignment: Optional[Assignment]
    seconds: float

    def text(self, switch: str) -> str:
        return format_document(self.documents[switch])


ARCHES = tuple(contract.ARCHES)  # v1model (p4src/v1model/stellar.p4), tna (p4src/tna/stellar.p4)


def _environment(arch: str = "v1model") -> jinja2.Environment:
    folder = TEMPLATES if arch == "v1model" else TEMPLATES / arch
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(folder)), undefined=jinja2.StrictUndefined,
                              autoescape=False, keep_trailing_newline=True)


def render_fabric(fabric: Fabric, assignment: Optional[Assignment] = None, arch: str = "v1model",
                  group_ids: Optional[dict[str, dict[tuple[int, ...], int]]] = None) -> RenderResult:
    """Render every switch for `arch`'s program.  The placement is computed unless given (None = compute).
    ``group_ids`` (TNA): per switch, the group-id history a re-plan keeps ids stable with
    (render_tna.groups_of; extended in place); None numbers groups afresh."""
    if arch not in contract.ARCHES:
        raise RenderError(f"unknown architecture {arch!r} (known: {', '.join(contract.ARCHES)})")
    started = time.perf_counter()
    if assignment is None and fabric.jobs and fabric.dataplane.reservations:
        assignment = assign_jobs(fabric)
    plans = plan_fabric(fabric, assignment)
    env = _environment(arch)
    known_sizes = contract.sizes()
    if arch == "v1model":
        documents = {name: _render_switch(env, fabric, plan, known_sizes) for name, plan in plans.items()}
    else:
        from . import render_tna  # the Tofino program's context (its tables differ)
        documents = {name: render_tna.render_switch(env, fabric, plan, known_sizes,
                                                    None if group_ids is None else group_ids.setdefault(name, {}))
                     for name, plan in plans.items()}
    return RenderResult(documents, plans, assignment, time.perf_counter() - started)


def write_fabric(result: RenderResult, fabric: Fabric, out_dir: Path) -> list[Path]:
    """Write `<switch>.json` per switch and `index.json` (which file configures which device)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name in result.documents:
        target = out_dir / f"{name}.json"
        target.write_text(result.text(name))
        written.append(target)
    index = {"format": FORMAT, "fabric": fabric.name, "switches": [
        {"name": s.name, "role": s.role, "device_id": s.device_id, "p4runtime": s.p4runtime, "file": f"{s.name}.json"}
        for s in fabric.switches.values()]}
    (out_dir / "index.json").write_text(json.dumps(index, indent=2) + "\n")
    written.append(out_dir / "index.json")
    return written


def read_documents(out_dir: Path) -> dict[str, dict[str, Any]]:
    """Read back what `write_fabric` wrote: switch name -> document, in index order."""
    index = json.loads((Path(out_dir) / "index.json").read_text())
    if index.get("format") != FORMAT:
        raise RenderError(f"{out_dir}/index.json: format {index.get('format')!r}, expected {FORMAT}")
    documents = {}
    for item in index["switches"]:
        doc = json.loads((Path(out_dir) / item["file"]).read_text())
        if doc.get("format") != FORMAT:
            raise RenderError(f"{out_dir}/{item['file']}: format {doc.get('format')!r}, expected {FORMAT}")
        documents[item["name"]] = doc
    return documents


def entry_identity(entry: dict[str, Any]) -> tuple:
    """What identifies an entry on the switch (table, match as ints, priority): the reconcile key.

    Matches are normalised to ints so a document entry and one read back from a switch compare
    equal whatever text form (IP, MAC, number) each used.
    """
    if entry.get("default_action"):
        return (entry["table"], "default")
    match = []
    for field, value in sorted(entry.get("match", {}).items()):
        if isinstance(value, dict) and "prefix_len" in value:
            match.append((field, contract.value_to_int(value["value"]), value["prefix_len"]))
        elif isinstance(value, dict) and "low" in value:
            match.append((field, "range", contract.value_to_int(value["low"]), contract.value_to_int(value["high"])))
        elif isinstance(value, dict):
            match.append((field, contract.value_to_int(value["value"]), contract.value_to_int(value["mask"])))
        else:
            match.append((field, contract.value_to_int(value)))
    return (entry["table"], tuple(match), entry.get("priority"))


# ---------------------------------------------------------------------------------------------
# Context: plain values for the templates
# ---------------------------------------------------------------------------------------------
def class_context(dp: Any) -> dict[str, Any]:
    """DSCP -> class, the default class and (class, elephant) -> queue: the same tables on every
    architecture, so the v1model and TNA renders share them."""
    return {
        "dscp_classes": [{"dscp": d, "name": c.name, "value": contract.TRAFFIC_CLASS_VALUE[c.name]}
                         for c in dp.classes for d in sorted(c.dscp)],
        "default_class": {"name": dp.default_class, "value": contract.TRAFFIC_CLASS_VALUE[dp.default_class]},
        "queue_map": [{"name": c.name, "value": contract.TRAFFIC_CLASS_VALUE[c.name], "elephant": e,
                       "queue": c.elephant_queue if e else c.queue}
                      for c in sorted(dp.classes, key=lambda c: CLASSES.index(c.name)) for e in (0, 1)],
    }


def _context(fabric: Fabric, plan: SwitchPlan) -> dict[str, Any]:
    switch = plan.switch
    dp = fabric.dataplane
    return {
        "params": _switch_params(fabric),
        "adapt": dict(contract.ADAPT_DEFAULTS),
        "kfloor_bytes": contract.ECN_KFLOOR_BYTES,
        **class_context(dp),
        "tenants": _tenants(fabric, switch),
        "ports": _ports(fabric, switch),
        "path_sets": [{"id": p.id, "count": len(p.slots), "ecmp": int(p.ecmp),
                       "ports": [m.port for m in p.slots] + [0] * (8 - len(p.slots)),
                       "levels": [0] * 8, "measured": known_downstream_mask(fabric, p.slots),
                       "purpose": p.purpose} for p in plan.path_sets],
        "routes": [{"address": str(r.prefix.network_address), "prefix_len": r.prefix.prefixlen,
                    "path_set": r.path_set, "purpose": r.purpose} for r in plan.routes],
        "priors": prior.prior_entries(fabric, plan),
        "feedback": feedback.feedback_entries(fabric, switch),
        "reservations": [{"job": r.job, "src": str(r.src), "dst": str(r.dst.network_address),
                          "dst_mask": str(r.dst.netmask), "prefix_len": r.dst.prefixlen, "path_set": r.path_set,
                          "priority": r.priority, "gbps": r.reserved_gbps} for r in plan.reservations],
    }


def _switch_params(fabric: Fabric) -> dict[str, int]:
    dp = fabric.dataplane
    return {
        "flowlet_timeout_us": dp.flowlet.timeout_us,
        "drain_margin_us": dp.flowlet.drain_margin_us,
        "hysteresis_us": dp.flowlet.hysteresis_us,
        "gap_moves": int(dp.flowlet.gap_moves),
        "drain_moves": int(dp.flowlet.drain_detection),
        "qdelay_max_age_us": dp.flowlet.qdelay_max_age_us,
        "elephant_bytes": dp.elephant.threshold_bytes,
        "elephant_window_us": dp.elephant.window_us,
        "elephant_idle_us": dp.elephant.idle_timeout_us,
        "malformed_l4_forward": int(dp.malformed_l4 == "forward"),
        "report_path_changes": int(dp.flowlet.report_path_changes),
        # every ordering guard on (p4src/README.md "Ordering rule"); a fabric without drain
        # detection is plain flowlet switching (the baseline): its gap moves trust the timeout alone
        "order_guards": contract.ORDER_GUARDS_ALL if dp.flowlet.drain_detection
        else contract.ORDER_GUARDS_ALL & ~contract.ORDER_GUARD_GAP_DRAIN,
        **contract.PLACEMENT_DEFAULTS,
    }


def _ports(fabric: Fabric, switch: Switch) -> list[dict[str, Any]]:
    ecn = fabric.dataplane.ecn
    if ecn.enabled and ecn.window_us < ECN_WINDOW_MIN_US:
        # load_fabric refuses it with file:line:key; a model built in code must not slip through
        raise RenderError(f"{switch.name}: ECN window_us {ecn.window_us} is below {ECN_WINDOW_MIN_US} us "
                          "(too few packets per window: the adaptation amplifies noise)")
    result = []
    for number, port in sorted(switch.ports.items()):
        if port.host is not None:
            host = fabric.hosts[port.host]
            peer, dst_mac = host.name, host.mac
        else:
            peer, dst_mac = f"{port.peer_switch}:{port.peer_port}", fabric.switches[port.peer_switch].mac
        params = None
        if ecn.enabled:
            params = {"window_us": ecn.window_us, "target_us": ecn.target_delay_us, "kmin_us": ecn.kmin_us,
                      "kmax_us": ecn.kmax_us, "k_init_us": ecn.k_init_us, "step_us": ecn.step_us,
                      "pmax": int(round(ecn.pmax * contract.ECN_PROB_ONE)),
                      "idle_bytes": ecn.idle_bytes(port.capacity_gbps), "adapt": int(ecn.adaptive)}
        result.append({"port": number, "peer": peer, "capacity_gbps": port.capacity_gbps, "ecn": params,
                       "src_mac": switch.mac, "dst_mac": dst_mac,
                       "ps_per_byte": contract.ps_per_byte(port.capacity_gbps)})
    return result


def _tenants(fabric: Fabric, switch: Switch) -> list[dict[str, Any]]:
    """Tenant ids 1.. in file order; meters sized on this switch's fabric capacity.

    A tenant is promised `guaranteed_share` of the switch's fabric links (CIR, green) and may
    borrow the share nobody reserved (PIR, yellow -> background); beyond that it is dropped (red).
    """
    basis = sum(p.capacity_gbps for p in switch.uplinks)
    unreserved = max(0.0, 1.0 - sum(t.guaranteed_share for t in fabric.tenants.values()))
    result = []
    for ident, tenant in enumerate(fabric.tenants.values(), start=1):
        burst = int(tenant.burst_kbytes * 1024)
        peak_share = tenant.guaranteed_share + unreserved
        result.append({
            "id": ident, "name": tenant.name, "share": tenant.guaranteed_share, "peak_share": peak_share,
            "basis_gbps": basis,
            "subnets": [{"address": str(s.network_address), "prefix_len": s.prefixlen} for s in tenant.subnets],
            "cir": int(round(tenant.guaranteed_share * basis * GBPS_TO_BYTES_PER_S)), "cburst": burst,
            "pir": int(round(peak_share * basis * GBPS_TO_BYTES_PER_S)), "pburst": burst,
        })
    return result


# ---------------------------------------------------------------------------------------------
# Rendering and checking
# ---------------------------------------------------------------------------------------------
def _render_switch(env: jinja2.Environment, fabric: Fabric, plan: SwitchPlan, known_sizes: dict[str, int],
                   context: Optional[dict[str, Any]] = None, arch: str = "v1model",
                   path_sets: Optional[list[dict[str, Any]]] = None) -> dict[str, Any]:
    switch = plan.switch
    template_name = f"{switch.role}.j2"
    text = env.get_template(template_name).render(**(context if context is not None else _context(fabric, plan)))
    entries: list[dict[str, Any]] = []
    meters: list[dict[str, Any]] = []
    registers: list[dict[str, Any]] = []
    clone_sessions: list[dict[str, Any]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RenderError(f"{switch.name}: template {template_name} output line {lineno} is not JSON "
                              f"({exc.msg}): {line[:120]}") from None
        kind = item.pop("kind", None)
        if kind == "entry":
            entries.append(_ordered(item))
        elif kind == "default":
            item["default_action"] = True
            entries.append(_ordered(item))
        elif kind == "meter":
            meters.append(item)
        elif kind == "register":
            registers.append(item)
        elif kind == "clone_session":
            clone_sessions.append(item)
        else:
            raise RenderError(f"{switch.name}: template {template_name} output line {lineno} has kind {kind!r}")
    program = contract.program_contract(arch, fabric.dataplane.tna_profile)
    _check(switch.name, entries, meters, registers, known_sizes, program, clone_sessions)
    document = {
        "format": FORMAT,
        "fabric": fabric.name,
        "switch": {"name": switch.name, "role": switch.role, "device_id": switch.device_id,
                   "p4runtime": switch.p4runtime, "mac": switch.mac},
        "path_sets": path_sets if path_sets is not None else
        [{"id": p.id, "purpose": p.purpose, "ecmp": p.ecmp,
          "members": [{"slot": i, "port": m.port, "via": m.via} for i, m in enumerate(p.slots)]}
         for p in plan.path_sets],
        "entries": entries,
        "meters": meters,
        "registers": registers,
    }
    if program.clone_sessions is not None:
        document["clone_sessions"] = clone_sessions
    return document


def _ordered(entry: dict[str, Any]) -> dict[str, Any]:
    unknown = set(entry) - set(ENTRY_KEYS)
    if unknown:
        raise RenderError(f"entry has unknown keys {sorted(unknown)}: {entry}")
    return {k: entry[k] for k in ENTRY_KEYS if k in entry}


def _check(switch: str, entries: list[dict[str, Any]], meters: list[dict[str, Any]],
           registers: list[dict[str, Any]], known_sizes: dict[str, int],
           program: Optional[contract.ArchContract] = None,
           clone_sessions: Optional[list[dict[str, Any]]] = None) -> None:
    program = program or contract.ARCHES["v1model"]
    problems: list[str] = []
    sessions_seen: set[int] = set()
    for session in clone_sessions or []:
        problems += contract.check_clone_session(session, program)
        if session.get("session_id") in sessions_seen:
            problems.append(f"clone session {session.get('session_id')} rendered twice")
        sessions_seen.add(session.get("session_id"))
    seen: dict[tuple, int] = {}
    per_table: dict[str, int] = {}
    for position, entry in enumerate(entries):
        for issue in contract.check_entry(entry, program.tables):
            problems.append(f"entry {position} ({entry.get('comment', '')}): {issue}")
        try:
            key = entry_identity(entry)
        except (KeyError, ValueError):
            continue  # already reported by check_entry
        if key in seen:
            problems.append(f"entry {position} duplicates entry {seen[key]} (same table, match and priority)")
        seen.setdefault(key, position)
        if not entry.get("default_action") and entry.get("table") in program.tables:  # else: reported
            per_table[entry["table"]] = per_table.get(entry["table"], 0) + 1
    for table_name, count in sorted(per_table.items()):
        size = contract.table_size(program.tables[table_name], known_sizes)
        if count > size:
            problems.append(f"{table_name}: {count} entries exceed the table size {size}")
    for meter in meters:
        constant, fallback = program.meters.get(meter["name"], (None, 0))
        size = known_sizes.get(constant, fallback) if constant else 0
        if not 0 <= meter["index"] < size:
            problems.append(f"meter {meter['name']}[{meter['index']}] outside 0..{size - 1}")
        if meter["cir"] > meter["pir"]:
            problems.append(f"meter {meter['name']}[{meter['index']}]: CIR above PIR")
    for register in registers:
        constant, fallback, width = program.registers.get(register["name"], (None, 0, 0))
        size = known_sizes.get(constant, fallback) if constant else fallback
        if not 0 <= register["index"] < size:
            problems.append(f"register {register['name']}[{register['index']}] outside 0..{size - 1}")
        elif not 0 <= register["value"] < (1 << width):
            problems.append(f"register {register['name']} value {register['value']} does not fit {width} bits")
    if problems:
        raise RenderError(f"{switch}: {len(problems)} rendered entr{'y breaks' if len(problems) == 1 else 'ies break'} "
                          "the program contract:\n  " + "\n  ".join(problems))


def format_document(doc: dict[str, Any]) -> str:
    """JSON with one list element per line: stable, diff-friendly, still valid JSON."""
    def dump(value: Any) -> str:
        return json.dumps(value, separators=(", ", ": "), ensure_ascii=False)

    lines = ["{"]
    keys = list(doc)
    for i, key in enumerate(keys):
        value = doc[key]
        comma = "," if i < len(keys) - 1 else ""
        if isinstance(value, list) and value:
            lines.append(f"  {dump(key)}: [")
            for j, item in enumerate(value):
                lines.append(f"    {dump(item)}{',' if j < len(value) - 1 else ''}")
            lines.append(f"  ]{comma}")
        else:
            lines.append(f"  {dump(key)}: {dump(value)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"
