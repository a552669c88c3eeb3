"""The Stellar program's control-plane contract (p4src/CONTRACT.md) as data, to check entries.

The Jinja2 templates spell table/action/field names as text; a typo there would only surface when
a switch rejects the write.  Every rendered entry is therefore checked here: table, action, match
fields and kinds, parameter names, value widths, priority rules, and table sizes.  A size is a
number or the name of its constant in p4src/include/size.p4 (TNA: also p4src/tna/include/define.p4),
read by ``p4consts`` (an unreadable constant is an error, never a guess).  tests/control_plane
checks these tables against the P4Info that p4sim generates from each program.
"""
from __future__ import annotations

import functools
import ipaddress
import re
from dataclasses import dataclass, replace
from typing import Any, Optional, Union

from . import p4consts, params
from .p4consts import SIZE_P4, TNA_DEFINE_P4

# A table's, meter's or register's size: a number, or the name of its P4 constant.
Size = Union[int, str]


@dataclass(frozen=True)
class KeyField:
    name: str
    kind: str  # exact | lpm | ternary
    width: int


@dataclass(frozen=True)
class Table:
    name: str
    keys: tuple[KeyField, ...]
    actions: dict[str, tuple[tuple[str, int], ...]]  # action -> ((param, width), ...)
    size: Size

    @property
    def size_constant(self) -> Optional[str]:
        """The P4 constant the size is defined by (None: a number of the program's own)."""
        return self.size if isinstance(self.size, str) else None

    @property
    def needs_priority(self) -> bool:
        return any(k.kind in ("ternary", "range", "optional") for k in self.keys)


def _params(*pairs: tuple[str, int]) -> tuple[tuple[str, int], ...]:
    return tuple(pairs)


_MEMBERS = _params(("count", 4), ("ecmp", 1), *[(f"port{i}", 9) for i in range(8)],
                   *[(f"level{i}", 16) for i in range(8)], ("measured", 8))

TABLES: dict[str, Table] = {t.name: t for t in (
    Table("StellarIngress.config.params", (), {
        "StellarIngress.config.set_params": _params(
            ("flowlet_timeout_us", 32), ("drain_margin_us", 32), ("hysteresis_us", 32), ("gap_moves", 1),
            ("drain_moves", 1), ("qdelay_max_age_us", 32), ("elephant_bytes", 32), ("elephant_window_us", 32),
            ("elephant_idle_us", 32), ("malformed_l4_forward", 1), ("report_path_changes", 1),
            ("order_guards", 4), ("dre_shift", 8), ("util_weight", 16), ("qdelay_weight", 16),
            ("level_weight", 16)),
    }, 1),
    Table("StellarIngress.feedback_lookup.params", (), {
        "StellarIngress.feedback_lookup.set_feedback": _params(
            ("enabled", 1), ("leaf_id", 8), ("max_age_us", 32), ("suspect_silence_us", 32),
            ("retx_threshold", 32), ("retx_window_us", 32), ("suspect_hold_us", 32)),
    }, 1),
    Table("StellarIngress.feedback_lookup.dest_leaf", (KeyField("hdr.ipv4.dst_addr", "lpm", 32),), {
        "StellarIngress.feedback_lookup.set_dest_leaf": _params(("leaf_id", 8)),
        "NoAction": (),
    }, "DEST_LEAF_SIZE"),
    Table("StellarIngress.feedback.port_kind", (KeyField("standard_metadata.egress_spec", "exact", 9),), {
        "StellarIngress.feedback.fabric_port": (),
        "NoAction": (),
    }, "PORT_SLOTS"),
    Table("StellarIngress.config.adapt", (), {
        "StellarIngress.config.set_adapt": _params(
            ("drain_any", 1), ("move_guards", 4), ("explore_signals", 32), ("explore_window_us", 32)),
    }, 1),
    Table("StellarIngress.routing.lpm", (KeyField("hdr.ipv4.dst_addr", "lpm", 32),), {
        "StellarIngress.routing.set_path_set": _params(("path_set_id", 16)),
        "StellarIngress.routing.drop_no_route": (),
    }, "ROUTING_LPM_SIZE"),
    Table("StellarIngress.routing.reservation",
          (KeyField("hdr.ipv4.src_addr", "ternary", 32), KeyField("hdr.ipv4.dst_addr", "ternary", 32)), {
              "StellarIngress.routing.reserve_path_set": _params(("path_set_id", 16)),
              "NoAction": (),
          }, "RESERVATION_SIZE"),
    Table("StellarIngress.routing.path_set", (KeyField("meta.route.path_set_id", "exact", 16),), {
        "StellarIngress.routing.set_members": _MEMBERS,
        "StellarIngress.routing.drop_no_path_set": (),
    }, "PATH_SET_SIZE"),
    Table("StellarIngress.qos.dscp_class", (KeyField("hdr.ipv4.dscp", "exact", 6),), {
        "StellarIngress.qos.set_class": _params(("traffic_class", 2)),
    }, "DSCP_CLASS_SIZE"),
    Table("StellarIngress.qos.tenant", (KeyField("hdr.ipv4.src_addr", "lpm", 32),), {
        "StellarIngress.qos.set_tenant": _params(("tenant_id", 8)),
        "NoAction": (),
    }, "TENANT_SIZE"),
    Table("StellarIngress.elephant.hint",
          (KeyField("hdr.ipv4.src_addr", "ternary", 32), KeyField("hdr.ipv4.dst_addr", "ternary", 32),
           KeyField("meta.flow.l4_id", "ternary", 32)), {
              "StellarIngress.elephant.hint_elephant": (),
              "StellarIngress.elephant.hint_mouse": (),
              "NoAction": (),
          }, "HINT_SIZE"),
    Table("StellarIngress.queueing.queue_map",
          (KeyField("meta.qos.traffic_class", "exact", 2), KeyField("meta.flow.elephant", "exact", 1)), {
              "StellarIngress.queueing.set_queue": _params(("queue", 3)),
          }, "QUEUE_MAP_SIZE"),
    Table("StellarEgress.ecn.config", (KeyField("standard_metadata.egress_port", "exact", 9),), {
        "StellarEgress.ecn.set_ecn_params": _params(
            ("window_us", 32), ("target_us", 32), ("kmin_us", 32), ("kmax_us", 32), ("k_init_us", 32),
            ("step_us", 32), ("pmax", 32), ("idle_bytes", 32), ("adapt", 1)),
        "StellarEgress.ecn.ecn_off": (),
    }, "PORT_SLOTS"),
    Table("StellarEgress.ecn.floor", (), {
        "StellarEgress.ecn.set_floor": _params(("kfloor_bytes", 32)),
    }, 1),
    Table("StellarEgress.rewrite.port_mac", (KeyField("standard_metadata.egress_port", "exact", 9),), {
        "StellarEgress.rewrite.set_macs": _params(("src_mac", 48), ("dst_mac", 48)),
        "NoAction": (),
    }, "PORT_SLOTS"),
    Table("StellarIngress.placement.port_rate", (KeyField("standard_metadata.egress_spec", "exact", 9),), {
        "StellarIngress.placement.set_rate": _params(("ps_per_byte", 32)),
    }, "PORT_SLOTS"),
    Table("StellarIngress.path_choice.prior", (KeyField("meta.route.path_set_id", "exact", 16),), {
        "StellarIngress.path_choice.set_prior": _params(("slot", 32), *[(f"ps{i}", 32) for i in range(8)],
                                                        *[(f"first{i}", 32) for i in range(8)]),
        "StellarIngress.path_choice.no_prior": (),
    }, "PATH_PRIOR_SIZE"),
    *(Table(f"StellarIngress.failover.liveness{i}", (KeyField(f"meta.route.port{i}", "exact", 9),), {
        "StellarIngress.failover.port_up": (),
        "StellarIngress.failover.port_down": (),
    }, "PORT_SLOTS") for i in range(8)),
)}

# Register name -> (size, width).  Only those the controller writes: none.
# Controller-owned state is table action data, which every P4Runtime server accepts (BMv2's PI
# refuses register writes and reads); p4src/README.md, "Controller-owned state".
REGISTERS: dict[str, tuple[Size, int]] = {}

# Port liveness: the same entry in each of the eight member-position tables (failover.p4).
LIVENESS_TABLES = tuple(f"StellarIngress.failover.liveness{i}" for i in range(8))


def liveness_entries(port: int, down: bool, comment: str = "") -> list[dict[str, Any]]:
    """The eight entries that mark `port` up or down (MODIFY them: the render installs them)."""
    action = "StellarIngress.failover.port_down" if down else "StellarIngress.failover.port_up"
    return [dict({"table": t, "match": {f"meta.route.port{i}": port}, "action": action, "params": {}},
                 **({"comment": comment} if comment else {}))
            for i, t in enumerate(LIVENESS_TABLES)]
# Meter name -> size.
METERS: dict[str, Size] = {
    "StellarIngress.qos.tenant_meter": "TENANT_SLOTS",
}

TRAFFIC_CLASS_VALUE = {"background": 0, "elastic": 1, "critical": 2, "control": 3}
ECN_PROB_ONE = params.ECN_PROB_ONE  # pmax is in 1/65536
ORDER_GUARDS_ALL = 0xF  # config.params order_guards: every ORDER_GUARD_* bit of define.p4
ORDER_GUARD_GAP_DRAIN = 0x1  # a gap move also proves the drain (off: plain flowlet switching)
# config.params path-choice parameters (declared in params.py): the DRE's halving shift and the
# weights of utilisation, local queue delay and controller level, 1024 = 1.0.
PLACEMENT_DEFAULTS = {name: params.default(name) for name in ("dre_shift", "util_weight", "qdelay_weight",
                                                              "level_weight")}
# config.adapt, feedback_lookup.params (as rendered for a leaf: enabled) and ecn.floor, from their
# declarations in params.py.
ADAPT_DEFAULTS = params.action_values("v1model", "StellarIngress.config.set_adapt", None)
FEEDBACK_DEFAULTS = {**params.action_values("v1model", "StellarIngress.feedback_lookup.set_feedback", None),
                     "enabled": 1}
ECN_KFLOOR_BYTES = params.default("ecn_kfloor_bytes")
# Path-change reasons in counter-index order (flowlet.path_changes), read from define.p4's
# CHANGE_* constants: the program owns them, so a reason added there reaches stats, watch and
# the study's row keys by itself.
PATH_CHANGE_REASONS = tuple(name[len("CHANGE_"):].lower() for name, _ in sorted(
    ((n, v) for n, v in p4consts.constants(p4consts.V1MODEL_DEFINE_P4).items() if n.startswith("CHANGE_")),
    key=lambda item: item[1]))


# StellarEgress.telemetry.qdelay_hist: index port * 16 + bucket; the buckets' lower edges (us).
QDELAY_HIST = "StellarEgress.telemetry.qdelay_hist"
QDELAY_BUCKET_LOWER_US = (0, 1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 512)


def qdelay_bucket(delay_us: int) -> int:
    """The histogram bucket the data plane counts a packet with this queue delay in."""
    return max(i for i, lower in enumerate(QDELAY_BUCKET_LOWER_US) if delay_us >= lower)


def qdelay_bucket_upper_us(bucket: int) -> int:
    """A bucket's upper edge (the last, open-ended one: twice its lower edge)."""
    edges = QDELAY_BUCKET_LOWER_US
    return edges[bucket + 1] if bucket + 1 < len(edges) else 2 * edges[-1]


def ps_per_byte(capacity_gbps: float) -> int:
    """placement.port_rate's parameter: picoseconds on the wire per byte at the port's rate."""
    return max(1, min(0xFFFFFFFF, int(round(8000.0 / capacity_gbps))))


def sizes() -> dict[str, int]:
    """The number constants of size.p4 and of the TNA define.p4 (the sizes tables name);
    P4ConstantError when a file cannot be read."""
    return {**p4consts.constants(SIZE_P4), **p4consts.constants(TNA_DEFINE_P4)}


def resolve_size(size: Size, known: Optional[dict[str, int]] = None) -> int:
    """A size as a number: itself, or its constant's value (P4ConstantError when undefined)."""
    if isinstance(size, int):
        return size
    known = sizes() if known is None else known
    if size not in known:
        raise p4consts.P4ConstantError(f"size constant {size} is defined in neither {SIZE_P4.name} "
                                       f"nor the TNA define.p4")
    return known[size]


def table_size(table: Table, known: Optional[dict[str, int]] = None) -> int:
    return resolve_size(table.size, known)


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=65536)  # the same addresses recur in thousands of entries
def value_to_int(value: Any) -> int:
    """An entry value as an unsigned int: ints as is, dotted IPv4, colon MAC."""
    if isinstance(value, bool):
        raise ValueError(f"boolean {value!r} is not a field value (use 0/1)")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        if re.fullmatch(r"[0-9a-fA-F]{2}(:[0-9a-fA-F]{2}){5}", value):
            return int(value.replace(":", ""), 16)
        try:
            return int(ipaddress.IPv4Address(value))
        except ValueError:
            pass
    raise ValueError(f"not a field value: {value!r}")


def _fits(value: Any, width: int, what: str) -> Optional[str]:
    try:
        number = value_to_int(value)
    except ValueError as exc:
        return f"{what}: {exc}"
    if not 0 <= number < (1 << width):
        return f"{what}: {value!r} does not fit in {width} bits"
    return None


def check_entry(entry: dict[str, Any], tables: Optional[dict[str, Table]] = None) -> list[str]:
    """Why `entry` would be rejected by the program (empty list = it matches the contract).

    `tables` is the program's table set (default: the v1model program's; ARCHES[arch].tables).
    """
    table = (TABLES if tables is None else tables).get(entry.get("table", ""))
    if table is None:
        return [f"unknown table {entry.get('table')!r}"]
    problems: list[str] = []
    action = entry.get("action")
    if action not in table.actions:
        return [f"{table.name}: unknown action {action!r} (allowed: {', '.join(sorted(table.actions))})"]
    params = entry.get("params", {})
    expected = dict(table.actions[action])
    if set(params) != set(expected):
        missing = sorted(set(expected) - set(params))
        extra = sorted(set(params) - set(expected))
        problems.append(f"{action}: params differ from the contract (missing {missing}, unknown {extra})")
    for name, width in expected.items():
        if name in params:
            issue = _fits(params[name], width, f"{action}.{name}")
            if issue:
                problems.append(issue)
            elif f"{action}.{name}" in SCALED_PARAMS and int(params[name]) % SCALED_PARAMS[f"{action}.{name}"]:
                problems.append(f"{action}.{name}: {params[name]!r} is not a multiple of "
                                f"{SCALED_PARAMS[f'{action}.{name}']} (the score's low bits are its tie bit and member)")
    match = entry.get("match", {})
    if entry.get("default_action"):
        if match:
            problems.append(f"{table.name}: a default action has no match")
        return problems
    if not table.keys:
        problems.append(f"{table.name} has no key: set it as the default action")
        return problems
    names = {k.name for k in table.keys}
    for name in match:
        if name not in names:
            problems.append(f"{table.name}: unknown match field {name!r}")
    for key in table.keys:
        if key.name not in match:
            if key.kind == "exact" or key.kind == "lpm":
                problems.append(f"{table.name}: {key.kind} field {key.name} must be given")
            continue
        problems.extend(_check_match(table.name, key, match[key.name]))
    has_priority = "priority" in entry
    if table.needs_priority and (not has_priority or not isinstance(entry["priority"], int) or entry["priority"] <= 0):
        problems.append(f"{table.name}: ternary tables need a priority > 0")
    if not table.needs_priority and has_priority:
        problems.append(f"{table.name}: no priority for exact/lpm tables")
    return problems


def _check_match(table: str, key: KeyField, value: Any) -> list[str]:
    where = f"{table}.{key.name}"
    if key.kind == "exact":
        issue = _fits(value, key.width, where)
        return [issue] if issue else []
    if not isinstance(value, dict):
        return [f"{where}: a {key.kind} match is an object, got {value!r}"]
    if key.kind == "lpm":
        if set(value) != {"value", "prefix_len"}:
            return [f"{where}: lpm match needs exactly value and prefix_len"]
        issue = _fits(value["value"], key.width, where)
        if issue:
            return [issue]
        plen = value["prefix_len"]
        if not isinstance(plen, int) or not 0 < plen <= key.width:
            return [f"{where}: prefix_len {plen!r} outside 1..{key.width} (omit the field for a wildcard)"]
        host_bits = value_to_int(value["value"]) & ((1 << (key.width - plen)) - 1)
        return [f"{where}: bits past the prefix must be zero"] if host_bits else []
    if key.kind == "ternary":
        if set(value) != {"value", "mask"}:
            return [f"{where}: ternary match needs exactly value and mask"]
        issues = [i for i in (_fits(value["value"], key.width, where), _fits(value["mask"], key.width, where)) if i]
        if issues:
            return issues
        if value_to_int(value["value"]) & ~value_to_int(value["mask"]):
            return [f"{where}: value has bits outside the mask"]
        if value_to_int(value["mask"]) == 0:
            return [f"{where}: an all-zero mask is a wildcard; omit the field"]
        return []
    if key.kind == "range":
        if set(value) != {"low", "high"}:
            return [f"{where}: range match needs exactly low and high"]
        issues = [i for i in (_fits(value["low"], key.width, where), _fits(value["high"], key.width, where)) if i]
        if issues:
            return issues
        if value_to_int(value["low"]) > value_to_int(value["high"]):
            return [f"{where}: low above high"]
        return []
    return [f"{where}: unsupported match kind {key.kind}"]


# ---------------------------------------------------------------------------------------------
# The Tofino program (p4src/tna/stellar.p4): its P4Info names, as bf-p4c spells them
# ---------------------------------------------------------------------------------------------
# bf-p4c prefixes tables and externs with the pipe's instance name (`Pipeline(...) pipe;`);
# actions keep the control path.  The TNA program has different tables (groups of member
# positions instead of eight-port path sets, a liveness bitmap the data plane writes, range
# tables for the DRE levels and the ECN ramp), so it has its own table set, checked the same way.
TNA_PIPE = "pipe."
_TI, _TE = "StellarIngress", "StellarEgress"
TNA_GROUP_WIDTH = 8   # group_t: at most 255 groups (0 unused) per switch
TNA_PRIOR_WIDTH = 4   # prior_t: capacity priors per group (routing's prior, dre.level<k>'s key)
TNA_MEMBERS = 8       # member positions per group
TNA_DRE_P4 = TNA_DEFINE_P4.parent / "control" / "dre.p4"
# dre.p4: q<k> is member k's 16-bit lane of a pair cell, in units of 2^DRE_UNIT_SHIFT bytes
TNA_DRE_UNIT_BYTES = 1 << p4consts.constant(TNA_DRE_P4, "DRE_UNIT_SHIFT")
TNA_DRE_LEVELS = 64            # rows per member position and group
TNA_DRE_REFERENCE_GBPS = 100.0
TNA_DRE_WINDOW_NS = 1 << 14    # dre.p4: a group's window is bits 31:14 of the ns clock (16.4 us)
# dre.p4: a member's score is 16 x (levels + penalty) + 8 x tie + member, the form its min()
# tournament compares, so every score datum (dre.set_level<k>'s level, dre_base.set_levels'
# l<k>, params' dre_delay_penalty) is written times this; check_entry refuses other values
# (a low bit set would change the member the tournament returns).
TNA_DRE_SCORE_SCALE = p4consts.constant(TNA_DRE_P4, "DRE_SCORE_SCALE")
# A level's width: the 64 levels span what the estimate (bytes of this and the previous window)
# holds for a port at line rate, 2 windows x rate = 409.6 KB at 100 Gbps, so a 100 Gbps port's
# level is 100 units (6.4 KB) wide.  Narrower levels (1 KiB) top out at 64 KiB, 16 % of that
# span: every member of a loaded group then reads the same capped level and the feedback
# penalty alone chooses (bench/tna_congestion_probe.py, p4src/tna/README.md).
TNA_DRE_UNITS_PER_LEVEL = round(2 * TNA_DRE_WINDOW_NS * TNA_DRE_REFERENCE_GBPS / 8
                                / TNA_DRE_UNIT_BYTES / TNA_DRE_LEVELS)
# ecn.p4/telemetry.p4: the range key is the queue delay in 8 ns units, 16 bits (0xFFFF at and
# above 524 us): bf-p4c's range match takes at most four nibbles of key.
TNA_QDELAY_UNIT_NS = 8
TNA_QDELAY_KEY_MAX = (1 << 16) - 1
TNA_ECN_STEPS = 8              # rows of the ECN ramp between Kmin and Kmax per port

# Action parameters written pre-scaled (the TNA DRE score data): "action.param" -> the factor.
SCALED_PARAMS: dict[str, int] = {
    f"{_TI}.set_params.dre_delay_penalty": TNA_DRE_SCORE_SCALE,
    **{f"{_TI}.dre.set_level{k}.level": TNA_DRE_SCORE_SCALE for k in range(TNA_MEMBERS)},
    **{f"{_TI}.dre_base.set_levels.l{k}": TNA_DRE_SCORE_SCALE for k in range(TNA_MEMBERS)},
}


def _tna(name: str) -> str:
    return TNA_PIPE + name


TNA_TABLES: dict[str, Table] = {t.name: t for t in (
    Table(_tna(f"{_TI}.params"), (), {
        f"{_TI}.set_params": _params(("flowlet_timeout", 32), ("elephant_threshold", 32), ("drain", 1),
                                     ("dre_choice", 1), ("dre_delay_penalty", 16), ("drain_margin", 32),
                                     ("gap_needs_drain", 1), ("drain_any_flows", 1), ("move_guards", 4)),
    }, 1),
    Table(_tna(f"{_TI}.routing.lpm"), (KeyField("hdr.ipv4.dst_addr", "lpm", 32),), {
        f"{_TI}.routing.set_group": _params(("group", 8), ("count", 4), ("prior", 4)),
        f"{_TI}.routing.drop_no_route": (),
    }, "ROUTING_LPM_SIZE"),
    Table(_tna(f"{_TI}.routing.reservation"),
          (KeyField("hdr.ipv4.src_addr", "ternary", 32), KeyField("hdr.ipv4.dst_addr", "ternary", 32)), {
              f"{_TI}.routing.reserve_group": _params(("group", 8), ("count", 4), ("prior", 4)),
              "NoAction": (),
          }, "RESERVATION_SIZE"),
    Table(_tna(f"{_TI}.member_port.members"),
          (KeyField("meta.group", "exact", 8), KeyField("meta.chosen", "exact", 3)), {
              f"{_TI}.member_port.set_port": _params(("port", 9)),
              f"{_TI}.member_port.drop_no_path_set": (),
          }, "PATH_SET_SIZE"),
    Table(_tna(f"{_TI}.path_choice.hash_member"),
          (KeyField("meta.group", "exact", 8), KeyField("meta.flow_hash[2:0]", "exact", 3)), {
              f"{_TI}.path_choice.set_hashed": _params(("member", 3)),
          }, 2048),
    Table(_tna(f"{_TI}.path_choice.port_member"), (KeyField("hdr.feedback.port", "exact", 9),), {
        f"{_TI}.path_choice.set_member": _params(("group", 8), ("member", 3)),
        "NoAction": (),
    }, "PORT_SLOTS"),
    Table(_tna(f"{_TE}.feedback.ports"), (KeyField("eg_intr_md.egress_port", "exact", 9),), {
        f"{_TE}.feedback.report": _params(("interval_ns", 32)),
        f"{_TE}.feedback.no_report": (),
    }, "PORT_SLOTS"),
    Table(_tna(f"{_TI}.failover.port_member"), (KeyField("hdr.port_down.port_num", "exact", 9),), {
        f"{_TI}.failover.set_member": _params(("group", 8), ("member", 3), ("clear_mask", 8)),
        "NoAction": (),
    }, "PORT_SLOTS"),
    *(Table(_tna(f"{_TI}.dre.level{k}"), (KeyField("meta.group", "exact", 8), KeyField("meta.prior", "exact", 4),
                                                   KeyField(f"q{k}", "range", 16)), {
        f"{_TI}.dre.set_level{k}": _params(("level", 16)),
    }, "DRE_LEVEL_SIZE") for k in range(TNA_MEMBERS)),
    Table(_tna(f"{_TI}.dre_base.levels"), (KeyField("meta.group", "exact", 8),), {
        f"{_TI}.dre_base.set_levels": _params(*[(f"l{k}", 16) for k in range(TNA_MEMBERS)], ("measured", 8)),
    }, 256),
    Table(_tna(f"{_TI}.qos.dscp_class"), (KeyField("hdr.ipv4.dscp", "exact", 6),), {
        f"{_TI}.qos.set_class": _params(("traffic_class", 2)),
    }, "DSCP_CLASS_SIZE"),
    Table(_tna(f"{_TI}.qos.tenant"), (KeyField("hdr.ipv4.src_addr", "lpm", 32),), {
        f"{_TI}.qos.set_tenant": _params(("tenant_id", 8)),
        "NoAction": (),
    }, "TENANT_SIZE"),
    Table(_tna(f"{_TI}.elephant.hint"),
          (KeyField("hdr.ipv4.src_addr", "ternary", 32), KeyField("hdr.ipv4.dst_addr", "ternary", 32),
           KeyField("meta.l4", "ternary", 32)), {
              f"{_TI}.elephant.hint_elephant": (),
              f"{_TI}.elephant.hint_mouse": (),
              "NoAction": (),
          }, "HINT_SIZE"),
    Table(_tna(f"{_TI}.queueing.queue_map"),
          (KeyField("meta.traffic_class", "exact", 2), KeyField("meta.elephant", "exact", 1)), {
              f"{_TI}.queueing.set_queue": _params(("qid", 5)),
          }, "QUEUE_MAP_SIZE"),
    Table(_tna(f"{_TE}.ecn.prob"), (KeyField("port", "exact", 9), KeyField("meta.qdelay_8ns", "range", 16)), {
        f"{_TE}.ecn.set_prob": _params(("prob", 16)),
        f"{_TE}.ecn.no_mark": (),
    }, 4096),
    Table(_tna(f"{_TE}.rewrite.port_mac"), (KeyField("port", "exact", 9),), {
        f"{_TE}.rewrite.set_macs": _params(("src_mac", 48), ("dst_mac", 48)),
        "NoAction": (),
    }, "PORT_SLOTS"),
    # exploration under pressure (p4src/tna/include/control/pressure.p4)
    Table(_tna(f"{_TI}.pressure.params"), (), {
        f"{_TI}.pressure.set_params": _params(("explore_signals", 32), ("explore_window_ns", 32)),
    }, 1),
    # suspect paths by retransmissions (p4src/tna/include/control/path_loss.p4)
    Table(_tna(f"{_TE}.path_loss.params"), (), {
        f"{_TE}.path_loss.set_params": _params(("retx_threshold", 32), ("retx_window_ns", 32),
                                               ("suspect_hold_ns", 32)),
    }, 1),
    # path feedback between leaves (p4src/tna/include/control/path_feedback.p4)
    Table(_tna(f"{_TE}.path_feedback.params"), (), {
        f"{_TE}.path_feedback.set_params": _params(("on", 1), ("leaf", 8), ("interval_ns", 32), ("max_age_ns", 32),
                                                         ("suspect_silence_ns", 32), ("suspect_hold_ns", 32)),
    }, 1),
    Table(_tna(f"{_TE}.path_feedback.port_kind"), (KeyField("eg_intr_md.egress_port", "exact", 9),), {
        f"{_TE}.path_feedback.fabric_port": _params(("index", 3)),
        f"{_TE}.path_feedback.host_port": (),
    }, "PORT_SLOTS"),
    Table(_tna(f"{_TE}.path_feedback.dest_leaf"), (KeyField("hdr.ipv4.dst_addr", "lpm", 32),), {
        f"{_TE}.path_feedback.set_dest_leaf": _params(("leaf", 8), ("mask", 8)),
        f"{_TE}.path_feedback.no_dest": (),
    }, "DEST_LEAF_SIZE"),
    Table(_tna(f"{_TE}.path_feedback.uplink_port"), (KeyField("hdr.fb.fb_path", "exact", 3),), {
        f"{_TE}.path_feedback.path_uplink": _params(("port", 9)),
        f"{_TE}.path_feedback.no_uplink": (),
    }, 8),
    Table(_tna(f"{_TE}.path_feedback.arrival"), (KeyField("hdr.bridged.ingress_port", "exact", 9),), {
        f"{_TE}.path_feedback.arrived_on": _params(("group", 8), ("member", 3)),
        f"{_TE}.path_feedback.not_arrived": (),
    }, "PORT_SLOTS"),
)}
TNA_METERS: dict[str, Size] = {_tna(f"{_TI}.qos.tenant_meter"): "TENANT_SLOTS"}
# The liveness bitmap: the data plane clears a member's bit on a port-down packet; the
# controller sets it back (one 8-bit cell per group) when the port comes up.
TNA_ALIVE_REGISTER = _tna(f"{_TI}.failover.alive")
TNA_REGISTERS: dict[str, tuple[Size, int]] = {TNA_ALIVE_REGISTER: (256, 8)}


# Congestion feedback (p4src/tna/include/control/feedback.p4): egress mirrors a copy of each
# reporting uplink's packet to this session, which must send it to the recirculation port
# (Tofino-1 pipe 0: 68), truncated: the feedback packet is built from the mirror header alone.
TNA_MIRROR_SESSION_FEEDBACK = p4consts.constant(TNA_DEFINE_P4, "MIRROR_SESSION_FEEDBACK")
TNA_RECIRC_PORT = p4consts.constant(TNA_DEFINE_P4, "PKTGEN_PORT")
TNA_FEEDBACK_TRUNCATE_BYTES = 64


@dataclass(frozen=True)
class CloneSessionRules:
    """What a target's P4Runtime server takes in a CloneSessionEntry (the render checks its
    sessions against these; p4sim's server enforces the same, p4sim/p4rt/writes.py).

    v1model = simple_switch_grpc (PI): ids 1..32767, class of service 0 only (PI:
    UNIMPLEMENTED), no truncation (BMv2's PI target refuses packet_length_bytes != 0).
    tna = Stratum on Tofino: ids 1..1015, exactly one replica with instance 0, class of
    service 0..7 (p4sim models none but 0), truncation up to 65535 bytes."""
    max_session_id: int
    truncation: bool
    one_replica: bool
    max_class_of_service: int = 0


@dataclass(frozen=True)
class ArchContract:
    """One program's contract: the tables, meters and registers the control plane writes, and
    the clone (mirror) sessions it uses (None: the program clones nothing, its documents carry
    no clone sessions and the push leaves the switch's alone)."""
    arch: str
    tables: dict[str, Table]
    meters: dict[str, Size]
    registers: dict[str, tuple[Size, int]]   # name -> (size, width)
    clone_sessions: Optional[tuple[int, ...]] = None
    clone_rules: CloneSessionRules = CloneSessionRules(32767, truncation=False, one_replica=False)


CLONE_RULES = {"v1model": CloneSessionRules(32767, truncation=False, one_replica=False),
               "tna": CloneSessionRules(1015, truncation=True, one_replica=True)}

# The TNA program's profiles (p4src/tna/include/define.p4; as fabric-tna's, each its own
# P4Info): the preprocessor defines each is compiled with.  "no-dre" leaves out the per-packet
# DRE (the profile sized for Tofino-1's 12 stages); the fabric says which one its switches run
# (dataplane.tna_profile).
TNA_PROFILES: dict[str, dict[str, str]] = {"full": {}, "no-dre": {"STELLAR_NO_DRE": "1"}}
# The tables "no-dre" does not have: the estimate's level rows (the controller's
# dre_base.levels stays, for its `measured` bitmap).
TNA_DRE_TABLE_PREFIX = "pipe.StellarIngress.dre."

ARCHES: dict[str, ArchContract] = {
    "v1model": ArchContract("v1model", TABLES, METERS, REGISTERS, None, CLONE_RULES["v1model"]),
    "tna": ArchContract("tna", TNA_TABLES, TNA_METERS, TNA_REGISTERS, (TNA_MIRROR_SESSION_FEEDBACK,),
                        CLONE_RULES["tna"]),
}


def check_clone_session(session: dict[str, Any], program: ArchContract) -> list[str]:
    """Problems of one document clone session against the program and its target's rules."""
    rules, sid = program.clone_rules, session.get("session_id")
    problems = []
    if program.clone_sessions is None:
        return [f"the {program.arch} program uses no clone sessions"]
    if sid not in program.clone_sessions:
        problems.append(f"clone session {sid}: the program uses only {list(program.clone_sessions)}")
    if not isinstance(sid, int) or not 0 < sid <= rules.max_session_id:
        problems.append(f"clone session id {sid!r} outside 1..{rules.max_session_id}")
    replicas = session.get("replicas") or []
    if rules.one_replica and len(replicas) != 1:
        problems.append(f"clone session {sid}: {len(replicas)} replicas; a {program.arch} mirror session has one")
    for r in replicas:
        if not 0 <= r.get("egress_port", -1) < 1 << 9:
            problems.append(f"clone session {sid}: replica port {r.get('egress_port')!r} does not fit 9 bits")
        if not 0 <= r.get("instance", 0) < (1 if rules.one_replica else 1 << 16):
            problems.append(f"clone session {sid}: replica instance {r.get('instance')!r} not supported")
    if len({(r.get("egress_port"), r.get("instance", 0)) for r in replicas}) != len(replicas):
        problems.append(f"clone session {sid}: duplicate replica")
    if not 0 <= session.get("class_of_service", 0) <= rules.max_class_of_service:
        problems.append(f"clone session {sid}: class of service {session.get('class_of_service')} not supported")
    length = session.get("packet_length_bytes", 0)
    if not 0 <= length <= 0xFFFF or (length and not rules.truncation):
        problems.append(f"clone session {sid}: packet_length_bytes {length} not supported on {program.arch}")
    return problems


def program_contract(arch: str, tna_profile: str = "full") -> ArchContract:
    """The contract of the program a fabric's switches run: ``arch``'s, less the tables the TNA
    profile leaves out."""
    program = ARCHES[arch]
    if arch != "tna" or tna_profile == "full":
        return program
    if tna_profile not in TNA_PROFILES:
        raise ValueError(f"unknown TNA profile {tna_profile!r} (known: {', '.join(TNA_PROFILES)})")
    tables = {n: t for n, t in program.tables.items() if not n.startswith(TNA_DRE_TABLE_PREFIX)}
    return replace(program, tables=tables)
