"""Every data-plane parameter, declared once.

A parameter is one ``Param``: its name (the fabric-YAML key, or a bare name for the few the
control plane sets without a key), unit, default, allowed range, and per architecture how it is
implemented:

* ``P4(field, define, scale)``: the program takes it.  ``field`` is the action parameter the
  render writes (``action.param``, contract.py's names); ``define`` is the ``#define`` in that
  architecture's define.p4 that holds the program's default; the P4 value is the YAML value
  times ``scale`` (a number, or a function for a value the P4 encodes otherwise).
* ``Fixed(value, reason, define, scale)``: the program behaves as this one value, compiled in;
  a fabric file may state that value and no other.
* ``Refused(reason)``: the program has no such mechanism; a fabric file that sets the key is
  refused when it is rendered for that architecture (file:line:key and the reason).
* ``ControlPlane(note)``: the control plane implements it (plan, tables' contents, the
  controller, the traffic manager); no P4 constant of its own.

What derives from these declarations: the fabric model's defaults and range checks (model.py),
the render-time refusal of unimplemented keys (``refusals``), the path-choice defaults the
v1model render writes (contract.PLACEMENT_DEFAULTS), docs/parameters.md (``markdown``; a test
keeps the committed file current) and a test that every P4 ``#define`` default equals its
declaration on both architectures (tests/control_plane/test_params.py).

Adding a parameter: see ``HOW_TO_ADD`` (also printed in docs/parameters.md).
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

from .errors import Problem

HOW_TO_ADD = """\
1. `#define` its default in the program's define.p4 (v1model: `DEFAULT_<NAME>` in
   p4src/include/define.p4; TNA: `TNA_<NAME>` in p4src/tna/include/define.p4) and add the
   action parameter to the P4 table and to control_plane/contract.py.
2. Append one `Param` to `PARAMS` in control_plane/params.py: name (the fabric key, e.g.
   `dataplane.flowlet.<key>`, or a bare name with `yaml=False`), kind, unit, default, meaning,
   range, and for every architecture `P4(field="<action>.<param>", define="<NAME>", scale=...)`,
   `Fixed(value, reason)`, `Refused(reason)` or `ControlPlane(note)`.
3. A fabric key: add the field to its section's dataclass in control_plane/model.py (the
   section is read field by field through the declarations) and pass it in the template
   (`templates/common.j2`, `templates/tna/common.j2`); a parameter of config.params /
   ecn.config / the TNA set_params reaches the template through `params.action_values`.
4. `python -m control_plane.params > docs/parameters.md`, then
   `pytest tests/control_plane/test_params.py` (it checks the #define against the declaration,
   the contract's action parameter, the rendered value and the docs).
"""

ARCHES = ("v1model", "tna")
# The define.p4 that holds each architecture's defaults (relative to the repository).
DEFINE_FILES = {"v1model": "p4src/include/define.p4", "tna": "p4src/tna/include/define.p4"}
MAX_US = 10_000_000  # 10 s: anything longer is a unit mistake (ms or ns typed as us)
U32_MAX = 2**32 - 1
ECN_PROB_ONE = 65536  # pmax's P4 unit: 1/65536 (define.p4 ECN_PROB_ONE)
US_TO_NS = 1000

Scale = Union[float, Callable[[Any], int]]


@dataclass(frozen=True)
class P4:
    """The architecture's program takes the parameter (see the module docstring)."""
    field: Optional[str] = None
    define: Optional[str] = None
    scale: Scale = 1
    note: str = ""
    derived: bool = False   # the written value also depends on other inputs (per-port rate, ...)

    def to_p4(self, value: Any) -> int:
        return to_p4(value, self.scale)

    def describe(self) -> str:
        parts = [f"`{self.field}`" if self.field else "", f"`#define {self.define}`" if self.define else ""]
        scale = "" if callable(self.scale) or self.scale == 1 else f" x {self.scale:g}"
        return " ".join(p for p in parts if p) + scale + (f" ({self.note})" if self.note else "")


@dataclass(frozen=True)
class Fixed:
    """The program behaves as ``value`` always (compiled in)."""
    value: Any
    reason: str
    define: Optional[str] = None
    scale: Scale = 1

    def to_p4(self, value: Any) -> int:
        return to_p4(value, self.scale)

    def describe(self) -> str:
        return f"fixed at {_show(self.value)}: {self.reason}"


@dataclass(frozen=True)
class Refused:
    """The program has no such mechanism."""
    reason: str

    def describe(self) -> str:
        return f"**refused**: {self.reason}"


@dataclass(frozen=True)
class ControlPlane:
    """The control plane implements it; no P4 constant."""
    note: str

    def describe(self) -> str:
        return f"control plane{': ' + self.note if self.note else ''}"


Implementation = Union[P4, Fixed, Refused, ControlPlane]


@dataclass(frozen=True)
class Param:
    name: str                    # the fabric-YAML key ("dataplane.ecn.window_us"), or a bare name
    kind: str                    # int | number | bool | choice | section
    unit: str
    default: Any
    doc: str
    arches: dict[str, Implementation]
    minimum: Optional[float] = None
    maximum: Optional[float] = None
    exclusive_minimum: bool = False
    choices: tuple[str, ...] = ()
    why_minimum: str = ""        # said with a value below the minimum
    yaml: bool = True            # False: no fabric key; the control plane writes the default

    @property
    def key(self) -> str:
        """The key inside its YAML section ("window_us")."""
        return self.name.rsplit(".", 1)[-1]

    def implementation(self, arch: str) -> Implementation:
        return self.arches[arch]

    def range_text(self) -> str:
        if self.kind == "choice":
            return " | ".join(self.choices)
        if self.kind in ("bool", "section"):
            return ""
        low = "" if self.minimum is None else (f"> {self.minimum:g}" if self.exclusive_minimum else f">= {self.minimum:g}")
        high = "" if self.maximum is None else f"<= {self.maximum:g}"
        return ", ".join(t for t in (low, high) if t)


def to_p4(value: Any, scale: Scale) -> int:
    """A declared value in the P4's unit."""
    if callable(scale):
        return scale(value)
    return int(round(float(value) * scale))


def _bit(value: Any) -> int:
    return int(bool(value))


_V = "StellarIngress.config.set_params."
_E = "StellarEgress.ecn.set_ecn_params."
_T = "StellarIngress.set_params."
_A = "StellarIngress.config.set_adapt."
_F = "StellarIngress.feedback_lookup.set_feedback."
_P = "StellarIngress.pressure.set_params."
_L = "StellarEgress.path_loss.set_params."
_NO_TNA_ECN_ADAPT = ("the TNA program's ECN is a static per-port ramp from kmin_us to kmax_us up to pmax "
                     "(ecn.prob rows); it has no adaptation window")


def _cp(note: str) -> dict[str, Implementation]:
    return {"v1model": ControlPlane(note), "tna": ControlPlane(note)}


PARAMS: tuple[Param, ...] = (
    # -- dataplane ---------------------------------------------------------------------------
    Param("dataplane.path_mode", "choice", "", "adaptive", "adaptive: congestion-aware choice; ecmp: the hash "
          "member only (the baseline)", {
              "v1model": P4("StellarIngress.routing.set_members.ecmp", scale=lambda m: int(m == "ecmp"),
                            derived=True),
              "tna": P4(_T + "dre_choice", scale=lambda m: int(m != "ecmp"), derived=True,
                        note="dre_choice = 0 with ecmp; no feedback mirror session")},
          choices=("adaptive", "ecmp")),
    Param("dataplane.tna_profile", "choice", "", "full", "which profile of the TNA program the switches run "
          "(contract.TNA_PROFILES): no-dre is the Tofino-1 one", {
              "v1model": Fixed("full", "the v1model program has one profile"),
              "tna": ControlPlane("the program's tables (no-dre: no dre.level<k>) and its P4Info")},
          choices=("full", "no-dre")),
    Param("dataplane.priority_queues", "int", "queues", 8, "priority queues per port", _cp(
        "the queues classes may use"), minimum=1, maximum=8),
    Param("dataplane.default_class", "choice", "", "elastic", "the class of a DSCP no class names", _cp(
        "qos.dscp_class rows"), choices=("background", "elastic", "critical", "control")),
    Param("dataplane.malformed_l4", "choice", "", "drop", "truncated UDP/TCP/BTH: drop, or forward as non-RoCE", {
        "v1model": P4(_V + "malformed_l4_forward", "DEFAULT_MALFORMED_L4_FORWARD", lambda v: int(v == "forward")),
        "tna": Fixed("drop", "the TNA parser's error drops a truncated header (stellar.p4 sanity)")},
          choices=("drop", "forward")),
    Param("dataplane.reservations", "bool", "", True, "install the job placement (reservation and hint entries)",
          _cp("routing.reservation and elephant.hint rows")),
    # -- flowlet -----------------------------------------------------------------------------
    Param("dataplane.flowlet.timeout_us", "int", "us", 200, "idle gap after which a flow may move", {
        "v1model": P4(_V + "flowlet_timeout_us", "DEFAULT_FLOWLET_TIMEOUT_US"),
        "tna": P4(_T + "flowlet_timeout", "TNA_FLOWLET_TIMEOUT_NS", US_TO_NS)}, minimum=1, maximum=MAX_US),
    Param("dataplane.flowlet.gap_moves", "bool", "", True, "move flows at flowlet gaps", {
        "v1model": P4(_V + "gap_moves", "DEFAULT_GAP_MOVES", _bit),
        "tna": Fixed(True, "the TNA program always moves at a gap (a gap move proves the drain first)")}),
    Param("dataplane.flowlet.drain_detection", "bool", "", True, "move a flow once its packets left the old "
          "port's queue (plus the drain margin)", {
              "v1model": P4(_V + "drain_moves", "DEFAULT_DRAIN_MOVES", _bit),
              "tna": P4(_T + "drain", scale=_bit, note="also gap_needs_drain")}),
    Param("dataplane.flowlet.drain_margin_us", "int", "us", 8, "downstream skew margin a drain move waits after "
          "the flow's last packet left this switch (8 us covers a few downstream hops at 100 Gb/s)", {
              "v1model": P4(_V + "drain_margin_us", "DEFAULT_DRAIN_MARGIN_US"),
              "tna": P4(_T + "drain_margin", "TNA_DRAIN_MARGIN_NS", US_TO_NS,
                        note="ns; the program compares it in 64 ns units, plus twice the old path's "
                             "fresh feedback level its last departure's report carried")}, minimum=0, maximum=MAX_US),
    Param("dataplane.flowlet.hysteresis_us", "int", "us", 4, "score a move must gain", {
        "v1model": P4(_V + "hysteresis_us", "DEFAULT_HYSTERESIS_US"),
        "tna": Fixed(4, "feedback's best member changes only for a 4 us better delay (TNA_FEEDBACK_HYSTERESIS, "
                        "250 x 16 ns), compiled in", "TNA_FEEDBACK_HYSTERESIS", US_TO_NS / 16)},
          minimum=0, maximum=MAX_US),
    Param("dataplane.flowlet.qdelay_max_age_us", "int", "us", 200, "a port whose last departure is older is idle", {
        "v1model": P4(_V + "qdelay_max_age_us", "DEFAULT_QDELAY_MAX_AGE_US"),
        "tna": Refused("the TNA program learns queue delays from feedback packets, which carry no age limit")},
          minimum=1, maximum=MAX_US),
    Param("dataplane.flowlet.report_path_changes", "bool", "", False, "digest every path change", {
        "v1model": P4(_V + "report_path_changes", "DEFAULT_REPORT_PATH_CHANGES", _bit),
        "tna": Fixed(False, "the TNA program digests elephants only; path changes are counted "
                            "(telemetry.path_changes)")}),
    # -- ecn ---------------------------------------------------------------------------------
    Param("dataplane.ecn.enabled", "bool", "", True, "mark ECN-capable packets", {
        "v1model": P4("StellarEgress.ecn.set_ecn_params", derived=True, note="ecn_off per port when false"),
        "tna": P4("StellarEgress.ecn.set_prob", derived=True, note="no ecn.prob rows when false")}),
    Param("dataplane.ecn.adaptive", "bool", "", True, "adapt the marking threshold K each window", {
        "v1model": P4(_E + "adapt", "DEFAULT_ECN_ADAPT", _bit), "tna": Refused(_NO_TNA_ECN_ADAPT)}),
    Param("dataplane.ecn.window_us", "int", "us", 8, "adaptation window W", {
        "v1model": P4(_E + "window_us", "DEFAULT_ECN_WINDOW_US"), "tna": Refused(_NO_TNA_ECN_ADAPT)},
          minimum=5, maximum=MAX_US,
          why_minimum="a window that short holds too few packets to tell a standing queue from noise, and the "
                      "adaptation then amplifies the noise (the design's finding)"),
    Param("dataplane.ecn.target_delay_us", "int", "us", 4, "queue delay above which a window's minimum means "
          "a standing queue", {
              "v1model": P4(_E + "target_us", "DEFAULT_ECN_TARGET_US"), "tna": Refused(_NO_TNA_ECN_ADAPT)},
          minimum=0, maximum=MAX_US),
    Param("dataplane.ecn.kmin_us", "int", "us", 4, "queue delay where marking starts", {
        "v1model": P4(_E + "kmin_us", "DEFAULT_ECN_KMIN_US"),
        "tna": P4("StellarEgress.ecn.set_prob", scale=US_TO_NS, derived=True, note="the ramp's first row")},
          minimum=0, maximum=MAX_US),
    Param("dataplane.ecn.kmax_us", "int", "us", 32, "queue delay from which every ECT packet is marked", {
        "v1model": P4(_E + "kmax_us", "DEFAULT_ECN_KMAX_US"),
        "tna": P4("StellarEgress.ecn.set_prob", scale=US_TO_NS, derived=True, note="the ramp's last row")},
          minimum=1, maximum=MAX_US),
    Param("dataplane.ecn.k_init_us", "int", "us", 16, "K at start (and always, when not adaptive)", {
        "v1model": P4(_E + "k_init_us", "DEFAULT_ECN_K_INIT_US"), "tna": Refused(_NO_TNA_ECN_ADAPT)},
          minimum=0, maximum=MAX_US),
    Param("dataplane.ecn.pmax", "number", "probability", 0.2, "marking probability at kmax_us (DCQCN's Pmax)", {
        "v1model": P4(_E + "pmax", "DEFAULT_ECN_PMAX", ECN_PROB_ONE),
        "tna": P4("StellarEgress.ecn.set_prob.prob", scale=ECN_PROB_ONE, derived=True,
                  note="the ramp's top probability")},
          minimum=0.0, maximum=1.0, exclusive_minimum=True),
    Param("dataplane.ecn.step_us", "int", "us", 2, "change of K per window", {
        "v1model": P4(_E + "step_us", "DEFAULT_ECN_STEP_US"), "tna": Refused(_NO_TNA_ECN_ADAPT)},
          minimum=1, maximum=MAX_US),
    Param("dataplane.ecn.idle_fraction", "number", "fraction of line rate", 0.5, "a window that sent less is "
          "light load (K moves up)", {
              "v1model": P4(_E + "idle_bytes", "DEFAULT_ECN_IDLE_BYTES", lambda f: round(100 * 125.0 * 8 * f),
                            derived=True, note="bytes per window at the port's rate (define: 100 Gb/s, 8 us)"),
              "tna": Refused(_NO_TNA_ECN_ADAPT)},
          minimum=0.0, maximum=1.0, exclusive_minimum=True),
    # -- elephant ----------------------------------------------------------------------------
    Param("dataplane.elephant.threshold_bytes", "int", "bytes", 500_000, "bytes per sketch window above which a "
          "flow is an elephant", {
              "v1model": P4(_V + "elephant_bytes", "DEFAULT_ELEPHANT_BYTES"),
              "tna": P4(_T + "elephant_threshold", "TNA_ELEPHANT_BYTES")}, minimum=1, maximum=U32_MAX),
    Param("dataplane.elephant.window_us", "int", "us", 1000, "count-min sketch window", {
        "v1model": P4(_V + "elephant_window_us", "DEFAULT_ELEPHANT_WINDOW_US"),
        "tna": Refused("the TNA sketch window is bits 47:20 of the ns clock (about 1049 us, TNA_EPOCH), "
                       "compiled in")}, minimum=1, maximum=MAX_US),
    Param("dataplane.elephant.idle_timeout_us", "int", "us", 2000, "an elephant idle this long is a mouse again", {
        "v1model": P4(_V + "elephant_idle_us", "DEFAULT_ELEPHANT_IDLE_US"),
        "tna": Refused("the TNA program classifies per sketch window; it keeps no elephant idle timer")},
          minimum=1, maximum=MAX_US),
    # -- classes and scheduler (the traffic manager and the tables' contents) -----------------
    Param("dataplane.classes", "section", "", None, "DSCP -> class -> queues, per class (model.CLASS_DEFAULTS)",
          _cp("qos.dscp_class and queueing.queue_map rows")),
    Param("dataplane.scheduler.weights", "bool", "", True, "push class weights (off: strict priority)",
          _cp("the controller's class weights (scheduler.py)")),
    Param("dataplane.scheduler.priority_decay_factor", "number", "", 0.95, "usage <- d x usage + (1 - d) x "
          "sample, per controller interval", _cp("scheduler.py"), minimum=0.0, maximum=0.999),
    Param("dataplane.scheduler.urgency_horizon_s", "number", "s", 3600.0, "urgency = 1 - remaining / horizon",
          _cp("scheduler.py"), minimum=0.0, maximum=1e9, exclusive_minimum=True),
    Param("dataplane.scheduler.alpha", "number", "", 1.0, "weight gained per unit of deadline urgency (tenants' "
          "default)", _cp("scheduler.py"), minimum=0.0, maximum=1000.0),
    Param("dataplane.scheduler.beta", "number", "", 1.0, "how hard historical usage divides the weight "
          "(tenants' default)", _cp("scheduler.py"), minimum=0.0, maximum=1000.0),
    Param("dataplane.scheduler.quantum_bytes", "int", "bytes", 16384, "DWRR bytes per round of the whole port",
          _cp("scheduler.py"), minimum=64, maximum=1 << 20),
    Param("dataplane.scheduler.rate_packet_bytes", "int", "bytes", 4096, "packet size that turns Gbps into "
          "BMv2 queue rates (pps)", _cp("scheduler.py"), minimum=64, maximum=16384),
    # -- no fabric key: the control plane writes the program's default ------------------------
    Param("order_guards", "int", "bit mask", 15, "ordering guards (define.p4 ORDER_GUARD_*); without drain "
          "detection the gap-drain guard is off", {
              "v1model": P4(_V + "order_guards", "DEFAULT_ORDER_GUARDS", derived=True),
              "tna": P4(_T + "gap_needs_drain", derived=True, note="the gap-drain guard alone")}, yaml=False),
    Param("dre_shift", "int", "log2 us", 5, "utilisation estimate halved every 2^dre_shift us", {
        "v1model": P4(_V + "dre_shift", "DEFAULT_DRE_SHIFT"),
        "tna": Refused("the TNA DRE window is bits 31:14 of the ns clock (contract.TNA_DRE_WINDOW_NS)")},
          yaml=False),
    Param("util_weight", "int", "1/1024", 1024, "path-choice weight of utilisation (1024 = 1.0)", {
        "v1model": P4(_V + "util_weight", "DEFAULT_UTIL_WEIGHT"),
        "tna": Refused("the TNA score adds levels; it has no weights")}, yaml=False),
    Param("qdelay_weight", "int", "1/1024", 128, "path-choice weight of the local queue delay", {
        "v1model": P4(_V + "qdelay_weight", "DEFAULT_QDELAY_WEIGHT"),
        "tna": Refused("the TNA score adds levels; it has no weights")}, yaml=False),
    Param("level_weight", "int", "1/1024", 128, "path-choice weight of the level (fresh feedback, else the controller's)", {
        "v1model": P4(_V + "level_weight", "DEFAULT_LEVEL_WEIGHT"),
        "tna": Refused("the TNA score adds levels; it has no weights")}, yaml=False),
    Param("ps_per_byte", "int", "ps/byte", 80, "a port's wire time per byte where placement.port_rate has no "
          "row (80 = 100 Gb/s); rendered per port from its capacity", {
              "v1model": P4("StellarIngress.placement.set_rate.ps_per_byte", "DEFAULT_PS_PER_BYTE", derived=True),
              "tna": ControlPlane("the dre.level<k> row widths")}, yaml=False),
    Param("dre_delay_penalty", "int", "1/16 level", 256, "DRE levels added to members feedback does not name "
          "best (16 levels, written x 16 like all DRE score data)", {
              "v1model": Refused("the v1model program weighs queue delay directly"),
              "tna": P4(_T + "dre_delay_penalty", "TNA_DRE_DELAY_PENALTY")}, yaml=False),
    Param("feedback_interval_ns", "int", "ns", 2000, "at most one feedback copy per uplink per interval", {
        "v1model": Refused("the v1model program shares queue delay through a register"),
        "tna": P4("StellarEgress.feedback.report.interval_ns")}, yaml=False),
    # -- move points, path feedback and suspect paths (v1model data plane v3) ----------------------
    Param("drain_any", "bool", "", True, "drain moves for every tracked flow, not only elephants", {
        "v1model": P4(_A + "drain_any", "DEFAULT_DRAIN_ANY", _bit),
        "tna": P4(_T + "drain_any_flows", "TNA_DRAIN_ANY", _bit)}, yaml=False),
    Param("move_guards", "int", "bit mask", 15, "move guards and points (define.p4 MOVE_*): bit 0 makes "
          "drain and explore moves wait for the drain proof; bit 1 lets a flow move at a go-back-N resend", {
              "v1model": P4(_A + "move_guards", "DEFAULT_MOVE_GUARDS"),
              "tna": P4(_T + "move_guards", "TNA_MOVE_GUARDS", note="bit 0: a drain move needs the drain proof; "
                        "bit 1: a go-back-N resend (restart.p4) takes a drain pass without the proof")},
          yaml=False),
    Param("explore_signals", "int", "CNPs", 4, "CNPs per host pair within the window that make a flow on a "
          "locally best path try the next best at its next safe point", {
              "v1model": P4(_A + "explore_signals", "DEFAULT_EXPLORE_SIGNALS"),
              "tna": P4(_P + "explore_signals", "TNA_EXPLORE_SIGNALS",
                        note="the pair's packets report their member saturated; its flows leave it at their "
                             "next drain point")},
          yaml=False),
    Param("explore_window_us", "int", "us", 200, "window of the CNP count behind exploration", {
        "v1model": P4(_A + "explore_window_us", "DEFAULT_EXPLORE_WINDOW_US"),
        "tna": P4(_P + "explore_window_ns", "TNA_EXPLORE_WINDOW_NS", US_TO_NS)}, yaml=False),
    Param("feedback_enabled", "bool", "", False, "leaf-to-leaf path feedback (the 0x88B5 shim); off in the "
          "program until the controller names the leaf, rendered on for every leaf", {
              "v1model": P4(_F + "enabled", "DEFAULT_FEEDBACK_ENABLED", _bit, derived=True),
              "tna": P4("StellarEgress.path_feedback.set_params.on", "TNA_FEEDBACK_ENABLED", _bit, derived=True,
                        note="off with ecmp")}, yaml=False),
    Param("feedback_return_interval_ns", "int", "ns", 2000, "at most one copy of a path's congestion another "
          "leaf returned goes to path choice per (leaf, path) and interval", {
              "v1model": Refused("the v1model program stores a returned entry in a register path choice reads"),
              "tna": P4("StellarEgress.path_feedback.set_params.interval_ns", "TNA_FEEDBACK_RETURN_INTERVAL_NS")},
          yaml=False),
    Param("feedback_max_age_us", "int", "us", 500, "feedback younger than this is a measurement", {
        "v1model": P4(_F + "max_age_us", "DEFAULT_FEEDBACK_MAX_AGE_US"),
        "tna": P4("StellarEgress.path_feedback.set_params.max_age_ns", "TNA_FEEDBACK_MAX_AGE_NS", US_TO_NS,
                  note="a returned entry this fresh enters the uplink's own reports")}, yaml=False),
    Param("suspect_silence_us", "int", "us", 300, "no feedback for this long while sending on a path makes it "
          "suspect (v1model: also how long a dead-uplink report from the destination leaf lasts, with the hold; "
          "0: both off)", {
              "v1model": P4(_F + "suspect_silence_us", "DEFAULT_SUSPECT_SILENCE_US"),
              "tna": P4("StellarEgress.path_feedback.set_params.suspect_silence_ns", "TNA_SUSPECT_SILENCE_NS",
                        US_TO_NS, note="a silent path's reports saturate; 0: off")}, yaml=False),
    Param("retx_threshold", "int", "packets", 8, "retransmitted PSNs within the window that make a path suspect", {
        "v1model": P4(_F + "retx_threshold", "DEFAULT_RETX_THRESHOLD"),
        "tna": P4(_L + "retx_threshold", "TNA_RETX_THRESHOLD",
                  note="resends (go-back-N ranges) per (leaf, path); a lossy path's reports saturate")},
          yaml=False),
    Param("retx_window_us", "int", "us", 1000, "window of the retransmission count", {
        "v1model": P4(_F + "retx_window_us", "DEFAULT_RETX_WINDOW_US"),
        "tna": P4(_L + "retx_window_ns", "TNA_RETX_WINDOW_NS", US_TO_NS)}, yaml=False),
    Param("suspect_hold_us", "int", "us", 2000, "a suspect path scores worst this long, then is retried", {
        "v1model": P4(_F + "suspect_hold_us", "DEFAULT_SUSPECT_HOLD_US"),
        "tna": P4(_L + "suspect_hold_ns", "TNA_SUSPECT_HOLD_NS", US_TO_NS,
                  note="also path_feedback.set_params.suspect_hold_ns: a silent path is sent on anew (a new "
                       "period) this long after it went silent, a lossy one stays lossy this long past its window")},
          yaml=False),
    Param("dead_report_hold_us", "int", "us", 2300, "a path the destination leaf reported dead (its own "
          "uplink on it is down) stays suspect this long after the last report", {
              "v1model": Fixed(2300, "suspect_silence_us + suspect_hold_us (the report counts as silence, run time)"),
              "tna": Fixed(2300, "the reported member counts as down this long after the last report "
                                 "(failover.dead), compiled in", "TNA_DEAD_HOLD_NS", US_TO_NS)}, yaml=False),
    Param("ecn_kfloor_bytes", "int", "bytes", 100_000, "adaptive K never falls below this backlog at the "
          "queue's measured rate (DCQCN's static Kmin)", {
              "v1model": P4("StellarEgress.ecn.set_floor.kfloor_bytes", "DEFAULT_ECN_KFLOOR_BYTES"),
              "tna": P4("StellarEgress.ecn.set_prob", derived=True,
                        note="the static ramp starts at the later of kmin_us and these bytes at the port's rate")},
          yaml=False),
)

BY_NAME: dict[str, Param] = {p.name: p for p in PARAMS}


def param(name: str) -> Param:
    """The declaration of ``name`` (KeyError saying where parameters are declared)."""
    if name not in BY_NAME:
        raise KeyError(f"no parameter {name!r} is declared in control_plane/params.py")
    return BY_NAME[name]


def default(name: str) -> Any:
    return param(name).default


def covering(key: str) -> Optional[Param]:
    """The YAML parameter a dotted key belongs to: itself, or the section that holds it
    (``dataplane.classes.critical.queue`` -> ``dataplane.classes``)."""
    probe = key
    while probe:
        found = BY_NAME.get(probe)
        if found is not None and found.yaml:
            return found
        probe = probe.rpartition(".")[0]
    return None


def model_value(dataplane: Any, p: Param) -> Any:
    """``p``'s value in a model's DataplaneParams (the attribute path is the key's)."""
    value = dataplane
    for part in p.name.split(".")[1:]:
        value = getattr(value, part)
    return value


def action_values(arch: str, action: str, dataplane: Any) -> dict[str, int]:
    """The P4 values of every parameter ``arch`` binds to a parameter of ``action`` (those not
    ``derived``): the model's value for a fabric key, the declared default otherwise, x scale."""
    values = {}
    for p in PARAMS:
        impl = p.implementation(arch)
        if isinstance(impl, P4) and not impl.derived and impl.field and impl.field.startswith(action + "."):
            value = model_value(dataplane, p) if p.yaml else p.default
            values[impl.field[len(action) + 1:]] = impl.to_p4(value)
    return values


def out_of_range(dataplane: Any) -> list[str]:
    """Why a model's data-plane values break their declared ranges (a model built in code;
    load_fabric reports the same with file:line:key)."""
    problems = []
    for p in PARAMS:
        if not p.yaml or p.kind not in ("int", "number"):
            continue
        issue = range_problem(p, model_value(dataplane, p))
        if issue:
            problems.append(f"{p.name} = {issue}")
    return problems


def range_problem(p: Param, value: float) -> str:
    """Why ``value`` breaks ``p``'s declared range ("" when it does not), with the reason for
    the minimum where the declaration gives one."""
    unit = f" {p.unit}" if p.unit else ""
    if p.minimum is not None and (value < p.minimum or (p.exclusive_minimum and value == p.minimum)):
        relation = "is not above" if p.exclusive_minimum else "is below the minimum"
        why = f": {p.why_minimum}" if p.why_minimum else ""
        return f"{value} {relation} {p.minimum}{unit}{why}"
    if p.maximum is not None and value > p.maximum:
        return f"{value} is above the maximum {p.maximum}{unit}"
    return ""


def refusals(arch: str, file: str, keys: tuple[tuple[str, int, Any], ...]) -> list[Problem]:
    """What ``arch`` refuses of the data-plane keys a fabric file set, (dotted key, line, value):
    one Problem (file:line: key: reason) each."""
    found = []
    for key, line, value in keys:
        p = covering(key)
        if p is None:
            continue
        impl = p.implementation(arch)
        if isinstance(impl, Refused):
            found.append(Problem(file, line, key, f"not implemented on {arch}: {impl.reason}"))
        elif isinstance(impl, Fixed) and key == p.name and value != impl.value:
            found.append(Problem(file, line, key, f"{arch} implements only {_show(impl.value)}, "
                                                  f"not {_show(value)}: {impl.reason}"))
    return found


def _show(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


# ---------------------------------------------------------------------------------------------
# docs/parameters.md
# ---------------------------------------------------------------------------------------------
def markdown() -> str:
    """docs/parameters.md: the declarations as tables (generated; do not edit by hand)."""
    lines = ["# Data-plane parameters", "",
             "Generated from `control_plane/params.py` by `python -m control_plane.params > docs/parameters.md`;",
             "do not edit by hand (tests/control_plane/test_params.py checks that it is current).", "",
             "Per architecture: the action parameter the render writes and the `#define` holding the P4",
             "program's default (x the scale from the YAML unit), a value the program has compiled in",
             "(`fixed`: a fabric may state that value only), a key the program does not implement",
             "(`refused`: a fabric that sets it is refused at render time with file:line:key), or what the",
             "control plane does with it.", "", "## Adding a parameter", "", HOW_TO_ADD]
    for title, yaml in (("Fabric keys", True), ("Without a fabric key (the control plane writes the default)", False)):
        lines += [f"## {title}", "", "| name | unit | default | range | meaning | " + " | ".join(ARCHES) + " |",
                  "| --- | --- | --- | --- | --- | " + " | ".join("---" for _ in ARCHES) + " |"]
        for p in PARAMS:
            if p.yaml != yaml:
                continue
            cells = [f"`{p.name}`", p.unit, "" if p.default is None else _show(p.default), p.range_text(),
                     p.doc + (f" (minimum: {p.why_minimum})" if p.why_minimum else "")]
            cells += [p.implementation(a).describe() for a in ARCHES]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(markdown())
