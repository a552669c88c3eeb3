"""The one per-architecture place of the stellar PTF suite: P4Info names and the entries that
configure the test leaf, for the v1model program (p4src/CONTRACT.md sections 1-8) and the TNA
program (section 9, p4src/tna/README.md).

The tests speak the leaf's vocabulary (route a prefix to a path set, mark a port down, make a
member dear, switch ECN on for a port, read the drop counter) and never name a table; a
``Leaf`` turns each request into its program's writes.  Where the TNA program has no
equivalent of a request, the leaf raises ``NotOnArch`` with the reason, and the test skips
with that reason printed (``StellarTest.on_arch``).

Why the TNA leaf differs (p4src/tna/README.md, block by block):
  - a path set is a *group* (8-bit id): LPM -> (group, member count); one member_port row per
    member; eight hash_member rows (flow CRC[2:0] -> member, round robin); DRE level rows from
    the render (control_plane.render_tna.dre_rows at 100 Gbps); the controller's member levels
    in dre_base.levels (written x16: v1model's levels are clamped to 127);
  - every test gets fresh group ids, so the per-group registers (best member, liveness bitmap,
    DRE cells, departures) start empty in each test, as the v1model suite gives each test its
    own flows;
  - congestion reaches ingress in feedback packets: the uplinks report (feedback.ports), mirror
    session 1 sends the copies to the recirculation port 68 truncated to 64 bytes, and
    path_choice.port_member maps a reporting port to its (group, member);
  - liveness is the data plane's: the packet generator's port-down app sends a packet into
    ingress when a port goes down (enabled through p4sim's side channel, as BfRt would on a
    switch); a port coming back is the controller's register write of the group's bitmap;
  - ECMP mode is not per path set: it is the DRE choice off and the group's ports not
    reporting, so every flow takes its hash member;
  - times are nanoseconds; ECN marking is the render's quantised probability ramp.
"""
from __future__ import annotations

import itertools
import zlib
from typing import TYPE_CHECKING, Sequence

from p4.v1 import p4runtime_pb2

from control_plane.contract import TNA_DRE_SCORE_SCALE
from control_plane.render_tna import TNA_DRE_DELAY_PENALTY, dre_rows, ecn_ramp
from p4sim.p4rt.client import update
from ptf_tests.stellar import packets
from ptf_tests.stellar.packets import ip_int

if TYPE_CHECKING:  # pragma: no cover
    from ptf_tests.base import P4RuntimeTest as StellarTest  # a stellar_base.StellarTest

ARCHES = ("v1model", "tna")
# The CPU port each program is built with (-DCPU_PORT, p4sim run --cpu-port): BMv2's
# conventional 255; on Tofino-1 pipe 0 the CPU Ethernet port is 64 (ports 0..63 are the
# front panel, 68 the packet generator / recirculation port).
CPU_PORT = {"v1model": 255, "tna": 64}
RECIRC_PORT = 68
MIRROR_SESSION_FEEDBACK = 1
PKTGEN_APP_PORT_DOWN = 1
FULL32 = 0xFFFFFFFF


class NotOnArch(Exception):
    """The program of this architecture has no equivalent of what the test asks."""


def flow_key(src: str, dst: str, qp: int) -> bytes:
    """A RoCE flow's hash key in both programs: (src, dst, protocol 17, dest QP as 32 bits)."""
    return ip_int(src).to_bytes(4, "big") + ip_int(dst).to_bytes(4, "big") + bytes([17]) + qp.to_bytes(4, "big")


class Leaf:
    """What both programs' leaves offer; see the subclasses for how."""

    arch = "abstract"
    names: dict[str, str] = {}
    # Per-architecture rules the tests state (documented where each is used).
    failover_counts_per_packet = False
    # The path-change reason of a move off a path the destination leaf reported dead.
    dead_report_reason = 6           # CHANGE_SUSPECT: v1model takes the report as silence
    # Time between a flow's packets where a test needs them told apart (0: at one instant).
    arrival_spacing_us = 0
    # Truncations counted under the header that was cut (else as MALFORMED_OTHER).
    truncation_kinds = True

    def __init__(self, test: "StellarTest") -> None:
        self.t = test

    # role -> why this program has no such object (the skip reason)
    missing: dict[str, str] = {}

    def name(self, key: str) -> str:
        try:
            return self.names[key]
        except KeyError:
            why = self.missing.get(key, "")
            raise NotOnArch(f"the {self.arch} program has no {key}" + (f": {why}" if why else "")) from None

    # -- the hash both sides must agree on -------------------------------------------------
    def hash_member(self, src: str, dst: str, qp: int, count: int) -> int:
        raise NotImplementedError

    # -- counters ------------------------------------------------------------------------------
    def reorder_total(self, ports: Sequence[int]) -> int:
        raise NotImplementedError

    def probe(self, port: int) -> None:
        """Make ``port`` report its queue delay (no-op where every packet sees every member)."""

    def path_feedback(self, leaf_id: int, net: str, plen: int, dest_leaf: int, fabric_port: int) -> None:
        """Path feedback on (silence and retransmission detection off): this switch is leaf
        ``leaf_id``, ``net``/``plen`` lies behind leaf ``dest_leaf``, and ``fabric_port`` faces a
        switch (the only uplink: path 0)."""
        raise NotImplementedError

    def dead_uplink_feedback(self, leaf_id: int, net: str, plen: int, dest_leaf: int,
                             fabric_ports: Sequence[int]) -> None:
        """Path feedback with dead-uplink reports on (p4src/README.md, "A dead uplink is reported
        by the leaf that sees it"): as ``path_feedback`` over several fabric ports, with a
        silence far beyond any test (so only a report can make a path suspect)."""
        raise NotImplementedError

    def cleanup(self) -> None:
        """Undo what P4Runtime's autocleanup cannot (target state), after each test."""


# ============================================================================ v1model
class V1modelLeaf(Leaf):
    arch = "v1model"
    ING, EGR = "StellarIngress", "StellarEgress"
    names = {
        "drops": "StellarIngress.telemetry.drops",
        "malformed": "StellarIngress.telemetry.malformed",
        "path_changes": "StellarIngress.flowlet.path_changes",
        "ecn_marks": "StellarEgress.ecn.marks",
        "ecn_k": "StellarEgress.ecn.k_us",
        "qdelay_hist": "StellarEgress.telemetry.qdelay_hist",
        "elephant_detections": "StellarIngress.elephant.detections",
        "elephant_digest": "elephant_digest_t",
        "tenant_meter": "StellarIngress.qos.tenant_meter",
        "tenant_yellow": "StellarIngress.qos.tenant_yellow",
        "tenant_red": "StellarIngress.qos.tenant_red",
    }

    def setup(self, base_params: dict[str, int]) -> None:
        t, ING, EGR = self.t, self.ING, self.EGR
        self.params = dict(base_params)
        t.set_default(f"{ING}.config.params", f"{ING}.config.set_params", self.params)
        t.set_default(f"{EGR}.ecn.config", f"{EGR}.ecn.ecn_off")
        # K's rate floor off: the ECN tests study Kmin..Kmax on their own (tests/stellar covers it)
        t.set_default(f"{EGR}.ecn.floor", f"{EGR}.ecn.set_floor", {"kfloor_bytes": 0})

    def port_macs(self, ports: dict[int, tuple[int, int]]) -> None:
        for port, (src, dst) in ports.items():
            self.t.insert(f"{self.EGR}.rewrite.port_mac", {"standard_metadata.egress_port": port},
                          f"{self.EGR}.rewrite.set_macs", {"src_mac": src, "dst_mac": dst})

    def set_params(self, changes: dict[str, int]) -> None:
        unknown = set(changes) - set(self.params)
        if unknown:
            raise KeyError(f"not a config.params parameter: {sorted(unknown)}")
        self.params.update(changes)
        t = self.t
        t.p4rt.write(update("MODIFY", table_entry=t.p4rt.table_entry(
            f"{self.ING}.config.params", action=f"{self.ING}.config.set_params", params=self.params,
            default=True)))

    def route(self, prefix: str, plen: int, path_set: int) -> None:
        self.t.insert(f"{self.ING}.routing.lpm", {"hdr.ipv4.dst_addr": (ip_int(prefix), plen)},
                      f"{self.ING}.routing.set_path_set", {"path_set_id": path_set})

    def path_feedback(self, leaf_id: int, net: str, plen: int, dest_leaf: int, fabric_port: int) -> None:
        self._feedback(leaf_id, net, plen, dest_leaf, [fabric_port], silence_us=0)

    def dead_uplink_feedback(self, leaf_id: int, net: str, plen: int, dest_leaf: int,
                             fabric_ports: Sequence[int]) -> None:
        self._feedback(leaf_id, net, plen, dest_leaf, fabric_ports, silence_us=100_000_000)

    def _feedback(self, leaf_id: int, net: str, plen: int, dest_leaf: int, fabric_ports: Sequence[int],
                  silence_us: int) -> None:
        """feedback.params (retransmission detection off; silence 0 turns off silence and
        dead-uplink reports alike), the destination leaf's prefix, the fabric ports."""
        t, ING = self.t, self.ING
        t.set_default(f"{ING}.feedback_lookup.params", f"{ING}.feedback_lookup.set_feedback",
                      {"enabled": 1, "leaf_id": leaf_id, "max_age_us": 500, "suspect_silence_us": silence_us,
                       "retx_threshold": 0, "retx_window_us": 1000, "suspect_hold_us": 2000})
        t.insert(f"{ING}.feedback_lookup.dest_leaf", {"hdr.ipv4.dst_addr": (ip_int(net), plen)},
                 f"{ING}.feedback_lookup.set_dest_leaf", {"leaf_id": dest_leaf})
        for port in fabric_ports:
            t.insert(f"{ING}.feedback.port_kind", {"standard_metadata.egress_spec": port},
                     f"{ING}.feedback.fabric_port", {})

    @staticmethod
    def _members(ports: Sequence[int], levels: Sequence[int], ecmp: bool) -> dict[str, int]:
        params = {"count": len(ports), "ecmp": int(ecmp)}
        for i in range(8):
            params[f"port{i}"] = ports[i] if i < len(ports) else 0
            params[f"level{i}"] = levels[i] if i < len(levels) else 0
        params["measured"] = (1 << len(ports)) - 1  # every level measured (as after a poll)
        return params

    def path_set(self, ps: int, ports: Sequence[int], levels: Sequence[int], ecmp: bool) -> None:
        self.t.insert(f"{self.ING}.routing.path_set", {"meta.route.path_set_id": ps},
                      f"{self.ING}.routing.set_members", self._members(ports, levels, ecmp))

    def modify_path_set(self, ps: int, ports: Sequence[int], levels: Sequence[int], ecmp: bool) -> None:
        t = self.t
        t.p4rt.write(update("MODIFY", table_entry=t.p4rt.table_entry(
            f"{self.ING}.routing.path_set", {"meta.route.path_set_id": ps},
            f"{self.ING}.routing.set_members", self._members(ports, levels, ecmp))))

    def ecn_port(self, port: int, *, kmin_us: int, kmax_us: int, pmax: int, adapt: int,
                 k_init_us: int, window_us: int, target_us: int, step_us: int, idle_bytes: int) -> None:
        self.t.insert(f"{self.EGR}.ecn.config", {"standard_metadata.egress_port": port},
                      f"{self.EGR}.ecn.set_ecn_params",
                      {"window_us": window_us, "target_us": target_us, "kmin_us": kmin_us,
                       "kmax_us": kmax_us, "k_init_us": k_init_us, "step_us": step_us, "pmax": pmax,
                       "idle_bytes": idle_bytes, "adapt": adapt})

    def hint_elephant(self, src: str, dst: str, qp: int) -> None:
        self.t.insert(f"{self.ING}.elephant.hint",
                      {"hdr.ipv4.src_addr": (ip_int(src), FULL32), "hdr.ipv4.dst_addr": (ip_int(dst), FULL32),
                       "meta.flow.l4_id": (qp, FULL32)},
                      f"{self.ING}.elephant.hint_elephant", priority=10)

    def tenant(self, subnet: str, plen: int, tenant: int) -> None:
        self.t.insert(f"{self.ING}.qos.tenant", {"hdr.ipv4.src_addr": (ip_int(subnet), plen)},
                      f"{self.ING}.qos.set_tenant", {"tenant_id": tenant})

    def port_down(self, port: int) -> None:
        """The controller's liveness write: the port's entry in each of the eight member-position
        liveness tables (table writes, which every target's P4Runtime accepts -- BMv2's PI
        refuses register writes), deleted after the test."""
        for i in range(8):
            self.t.insert(f"{self.ING}.failover.liveness{i}", {f"meta.route.port{i}": port},
                          f"{self.ING}.failover.port_down")

    def port_up(self, port: int) -> None:
        """The port is alive again: MODIFY its entries (the after-test DELETE still applies)."""
        t = self.t
        for i in range(8):
            t.p4rt.write(update("MODIFY", table_entry=t.p4rt.table_entry(
                f"{self.ING}.failover.liveness{i}", {f"meta.route.port{i}": port},
                f"{self.ING}.failover.port_up")))

    def hash_member(self, src: str, dst: str, qp: int, count: int) -> int:
        """crc32 over the flow key, modulo 65521, then modulo the member count (stellar.p4
        flowlet.p4 + member_rank); BMv2's crc32 is IEEE CRC-32 (REFERENCE.md)."""
        return (zlib.crc32(flow_key(src, dst, qp)) % 65521) % count

    def reorder_total(self, ports: Sequence[int]) -> int:
        """The per-port regression counter, which every target's P4Runtime reads."""
        return sum(self.t.packets(f"{self.EGR}.reorder.events", port) for port in ports)


# ================================================================================ TNA
class TnaLeaf(Leaf):
    arch = "tna"
    P = "pipe."                      # bf-p4c names tables and externs after the Pipeline instance
    ING, EGR = "StellarIngress", "StellarEgress"
    names = {
        "drops": "pipe.StellarIngress.telemetry.drops",
        "malformed": "pipe.StellarIngress.telemetry.malformed",
        "path_changes": "pipe.StellarIngress.telemetry.path_changes",
        "ecn_marks": "pipe.StellarEgress.ecn.marks",
        "qdelay_hist": "pipe.StellarEgress.telemetry.qdelay_hist",  # index port ++ bucket, as v1model's
        "elephants": "pipe.StellarIngress.telemetry.elephants",
        "elephant_digest": "pipe.StellarIngressDeparser.elephant_digest",
        "tenant_meter": "pipe.StellarIngress.qos.tenant_meter",
    }
    missing = {
        "ecn_k": "K is not adapted on Tofino (no run-time multiply): the TNA ECN is a static "
                 "ramp the controller renders once (p4src/tna/README.md, 'ecn')",
        "elephant_detections": "the TNA program counts packets classified elephant "
                               "(telemetry.elephants), not detections",
        "tenant_yellow": "the TNA program acts on RED only (dropped, counted as a drop reason)",
        "tenant_red": "the TNA program counts red as the drop reason DROP_TENANT_RED",
    }
    # A flow on a dead member is re-steered in every packet until its next gap (its stored
    # member is not rewritten in the same pass: one access per register), and each re-steered
    # packet counts as a failover change (p4src/tna/README.md, "failover").
    failover_counts_per_packet = True
    # A member reported dead counts as down (failover.p4's `dead`): the fallback moves the flow.
    dead_report_reason = 3           # CHANGE_FAILOVER
    # The drain test compares 16-bit arrival stamps in 64 ns units (README.md, drain): packets
    # of a flow that arrive within 64 ns are one to it, so a test spaces them as a link would.
    arrival_spacing_us = 1
    # Ingress sees the parser's error code only, not which header was short.
    truncation_kinds = False
    # v1model vocabulary -> set_params argument, with the unit factor.
    PARAMS = {"flowlet_timeout_us": ("flowlet_timeout", 1000), "drain_moves": ("drain", 1),
              "drain_margin_us": ("drain_margin", 1000), "elephant_bytes": ("elephant_threshold", 1)}
    _groups = itertools.count(1)     # across the run: each test its own groups

    def __init__(self, test: "StellarTest") -> None:
        super().__init__(test)
        self.groups: dict[int, tuple[int, list[int]]] = {}   # path set -> (group, ports)
        self.reporting: set[int] = set()
        self.ecmp = False
        self.params: dict[str, int] = {}
        self.cleanups: list = []

    def t_(self, name: str) -> str:
        return self.P + name

    def setup(self, base_params: dict[str, int]) -> None:
        t = self.t
        self.params = {"flowlet_timeout": base_params["flowlet_timeout_us"] * 1000,
                       "elephant_threshold": base_params["elephant_bytes"],
                       "drain": base_params["drain_moves"], "dre_choice": 1,
                       "dre_delay_penalty": TNA_DRE_DELAY_PENALTY,
                       "drain_margin": base_params["drain_margin_us"] * 1000,
                       "gap_needs_drain": base_params["order_guards"] & 1,
                       "drain_any_flows": base_params.get("drain_any", 1),
                       "move_guards": base_params.get("move_guards", 15)}
        t.set_default(self.t_(f"{self.ING}.params"), f"{self.ING}.set_params", self.params)
        # feedback copies go to the recirculation port, truncated (the mirror header + Ethernet)
        t.add_clone_session(MIRROR_SESSION_FEEDBACK, [RECIRC_PORT], truncate=64)
        t.target_op(t.target.enable_pktgen_port_down, PKTGEN_APP_PORT_DOWN)
        # ECN off: ecn.prob's default is no_mark, so no row means no marking

    def port_macs(self, ports: dict[int, tuple[int, int]]) -> None:
        c = self.t.p4rt
        self._insert_many([c.table_entry(self.t_(f"{self.EGR}.rewrite.port_mac"), {"port": port},
                                         f"{self.EGR}.rewrite.set_macs", {"src_mac": src, "dst_mac": dst})
                           for port, (src, dst) in ports.items()])

    def set_params(self, changes: dict[str, int]) -> None:
        for key, value in changes.items():
            if key in self.PARAMS:
                name, factor = self.PARAMS[key]
                self.params[name] = value * factor
            elif key == "order_guards":
                # bit 0: a gap move must prove the drain (gap_needs_drain); the other guards are
                # v1model's (the TNA program's margin is one tunable)
                self.params["gap_needs_drain"] = value & 1
            elif key == "gap_moves" and value == 1:
                pass                  # gap moves are always on in the TNA program
            elif key in ("elephant_window_us", "elephant_idle_us"):
                pass                  # fixed: the sketch window is bits 31:20 of the ns clock (~1.05 ms)
            elif key == "malformed_l4_forward":
                raise NotOnArch("the TNA program has no malformed_l4_forward policy: every parser "
                                "error (a truncated L4 header too) is dropped and counted")
            else:
                raise NotOnArch(f"the TNA program has no parameter for {key}={value} "
                                "(p4src/CONTRACT.md section 9, pipe.StellarIngress.params)")
        self._write_params()

    def _write_params(self) -> None:
        t = self.t
        t.p4rt.write(update("MODIFY", table_entry=t.p4rt.table_entry(
            self.t_(f"{self.ING}.params"), action=f"{self.ING}.set_params", params=self.params,
            default=True)))

    # -- groups ------------------------------------------------------------------------------
    def group_of(self, ps: int) -> int:
        if ps not in self.groups:
            group = next(self._groups)
            if group > 255:
                raise RuntimeError("more than 255 groups in one PTF run (group_t is 8 bits)")
            self.groups[ps] = (group, [])
        return self.groups[ps][0]

    def route(self, prefix: str, plen: int, path_set: int) -> None:
        """LPM -> (group, member count): the path set must exist first (its count is here)."""
        if path_set not in self.groups:
            raise KeyError(f"route to path set {path_set} before the path set (TNA routes carry its count)")
        group, ports = self.groups[path_set]
        count = len(ports)
        self.t.insert(self.t_(f"{self.ING}.routing.lpm"), {"hdr.ipv4.dst_addr": (ip_int(prefix), plen)},
                      f"{self.ING}.routing.set_group", {"group": group, "count": count, "prior": 0})

    def _insert_many(self, entries: list[p4runtime_pb2.TableEntry]) -> None:
        t = self.t
        t.p4rt.write(*[update("INSERT", table_entry=e) for e in entries])
        t._undo.extend(update("DELETE", table_entry=e) for e in entries)

    def path_set(self, ps: int, ports: Sequence[int], levels: Sequence[int], ecmp: bool) -> None:
        c = self.t.p4rt
        group = self.group_of(ps)
        self.groups[ps] = (group, list(ports))
        entries = []
        for m, port in enumerate(ports):
            entries.append(c.table_entry(self.t_(f"{self.ING}.member_port.members"),
                                         {"meta.group": group, "meta.chosen": m},
                                         f"{self.ING}.member_port.set_port", {"port": port}))
        for i in range(8):
            entries.append(c.table_entry(self.t_(f"{self.ING}.path_choice.hash_member"),
                                         {"meta.group": group, "meta.flow_hash[2:0]": i},
                                         f"{self.ING}.path_choice.set_hashed", {"member": i % len(ports)}))
        if len(ports) > 1:
            for m in range(len(ports)):
                for r in dre_rows(100.0):
                    entries.append(c.table_entry(
                        self.t_(f"{self.ING}.dre.level{m}"), {"meta.group": group, "meta.prior": 0, f"q{m}": (r["low"], r["high"])},
                        f"{self.ING}.dre.set_level{m}", {"level": TNA_DRE_SCORE_SCALE * r["level"]}, priority=1))  # x16, as rendered
            entries.append(c.table_entry(self.t_(f"{self.ING}.dre_base.levels"), {"meta.group": group},
                                         f"{self.ING}.dre_base.set_levels", self._levels(levels, len(ports))))
            for m, port in enumerate(ports):
                # a port reports for (and its port-down packet clears) the largest group holding it
                entries.append(c.table_entry(self.t_(f"{self.ING}.path_choice.port_member"),
                                             {"hdr.feedback.port": port}, f"{self.ING}.path_choice.set_member",
                                             {"group": group, "member": m}))
                entries.append(c.table_entry(self.t_(f"{self.ING}.failover.port_member"),
                                             {"hdr.port_down.port_num": port}, f"{self.ING}.failover.set_member",
                                             {"group": group, "member": m, "clear_mask": 0xFF ^ (1 << m)}))
        self._insert_many(entries)
        if len(ports) > 1:
            self._set_reporting(ports, not ecmp)
        if ecmp:
            self._set_ecmp(ports, True)

    @staticmethod
    def _levels(levels: Sequence[int], count: int) -> dict[str, int]:
        """dre_base.set_levels' data: each level written x16 (the program's encoding, capped at
        127), every member measured (as after a controller poll; v1model's suite does the same)."""
        params = {f"l{i}": TNA_DRE_SCORE_SCALE * min(127, levels[i]) if i < len(levels) else 0 for i in range(8)}
        params["measured"] = (1 << count) - 1
        return params

    def modify_path_set(self, ps: int, ports: Sequence[int], levels: Sequence[int], ecmp: bool) -> None:
        group, known = self.groups[ps]
        if list(ports) != known:
            raise NotOnArch("the TNA leaf changes a group's levels and mode, not its members")
        t = self.t
        if len(ports) > 1:
            t.p4rt.write(update("MODIFY", table_entry=t.p4rt.table_entry(
                self.t_(f"{self.ING}.dre_base.levels"), {"meta.group": group}, f"{self.ING}.dre_base.set_levels",
                self._levels(levels, len(ports)))))
        if ecmp != self.ecmp:
            self._set_ecmp(ports, ecmp)

    def _set_reporting(self, ports: Sequence[int], on: bool) -> None:
        """Whether the ports report their queue delay (feedback.ports rows; a row reports
        whatever its action, so "off" is no row)."""
        t = self.t
        for port in ports:
            if on == (port in self.reporting):
                continue
            entry = t.p4rt.table_entry(self.t_(f"{self.EGR}.feedback.ports"), {"eg_intr_md.egress_port": port},
                                       f"{self.EGR}.feedback.report", {"interval_ns": 0})
            delete = update("DELETE", table_entry=entry)
            if on:
                t.p4rt.write(update("INSERT", table_entry=entry))
                t._undo.append(delete)
                self.reporting.add(port)
            else:
                t.p4rt.write(delete)
                t._undo = [u for u in t._undo if u != delete]
                self.reporting.discard(port)

    def _set_ecmp(self, ports: Sequence[int], on: bool) -> None:
        """ECMP: the DRE choice off and the group's ports not reporting, so a flow's member is
        its hash member (the TNA program has no per-group mode: this is switch-wide)."""
        self.ecmp = on
        self.params["dre_choice"] = 0 if on else 1
        self._write_params()
        self._set_reporting(ports, not on)

    # -- other configuration -----------------------------------------------------------------
    def ecn_port(self, port: int, *, kmin_us: int, kmax_us: int, pmax: int, adapt: int,
                 k_init_us: int, window_us: int, target_us: int, step_us: int, idle_bytes: int) -> None:
        if adapt:
            raise NotOnArch("on TNA adapting K per window is the controller's job (it rewrites the "
                            "port's ecn.prob rows; p4src/tna/README.md 'ecn'): the data plane keeps "
                            "no K to adapt or read")
        c = self.t.p4rt
        self._insert_many([c.table_entry(self.t_(f"{self.EGR}.ecn.prob"),
                                         {"port": port, "meta.qdelay_8ns": (r["low"], r["high"])},
                                         f"{self.EGR}.ecn.set_prob", {"prob": r["prob"]}, priority=1)
                           for r in ecn_ramp(kmin_us * 1000, kmax_us * 1000, pmax / 65536)])

    def hint_elephant(self, src: str, dst: str, qp: int) -> None:
        self.t.insert(self.t_(f"{self.ING}.elephant.hint"),
                      {"hdr.ipv4.src_addr": (ip_int(src), FULL32), "hdr.ipv4.dst_addr": (ip_int(dst), FULL32),
                       "meta.l4": (qp, FULL32)},
                      f"{self.ING}.elephant.hint_elephant", priority=10)

    def path_feedback(self, leaf_id: int, net: str, plen: int, dest_leaf: int, fabric_port: int) -> None:
        """The egress half (path_feedback.p4): its params row, the fabric port as uplink index
        0, the destination leaf with a one-path mask."""
        t, EGR = self.t, self.EGR
        t.set_default(self.t_(f"{EGR}.path_feedback.params"), f"{EGR}.path_feedback.set_params",
                      {"on": 1, "leaf": leaf_id, "interval_ns": 2000, "max_age_ns": 500_000,
                       "suspect_silence_ns": 0, "suspect_hold_ns": 2_000_000})
        t.insert(self.t_(f"{EGR}.path_feedback.port_kind"), {"eg_intr_md.egress_port": fabric_port},
                 f"{EGR}.path_feedback.fabric_port", {"index": 0})
        t.insert(self.t_(f"{EGR}.path_feedback.dest_leaf"), {"hdr.ipv4.dst_addr": (ip_int(net), plen)},
                 f"{EGR}.path_feedback.set_dest_leaf", {"leaf": dest_leaf, "mask": 0})

    def dead_uplink_feedback(self, leaf_id: int, net: str, plen: int, dest_leaf: int,
                             fabric_ports: Sequence[int]) -> None:
        """As ``path_feedback`` over several fabric ports (uplink index i: ``fabric_ports[i]``),
        with each port's (group, member) for the dead report (`arrival`, as failover.port_member)
        and each path's uplink for a returned entry (`uplink_port`)."""
        t, EGR = self.t, self.EGR
        t.set_default(self.t_(f"{EGR}.path_feedback.params"), f"{EGR}.path_feedback.set_params",
                      {"on": 1, "leaf": leaf_id, "interval_ns": 2000, "max_age_ns": 500_000,
                       "suspect_silence_ns": 100_000_000, "suspect_hold_ns": 2_000_000})
        t.insert(self.t_(f"{EGR}.path_feedback.dest_leaf"), {"hdr.ipv4.dst_addr": (ip_int(net), plen)},
                 f"{EGR}.path_feedback.set_dest_leaf",
                 {"leaf": dest_leaf, "mask": (1 << (len(fabric_ports) - 1).bit_length()) - 1})
        for index, port in enumerate(fabric_ports):
            group, member = self._alive_group(port)
            t.insert(self.t_(f"{EGR}.path_feedback.port_kind"), {"eg_intr_md.egress_port": port},
                     f"{EGR}.path_feedback.fabric_port", {"index": index})
            t.insert(self.t_(f"{EGR}.path_feedback.uplink_port"), {"hdr.fb.fb_path": index},
                     f"{EGR}.path_feedback.path_uplink", {"port": port})
            t.insert(self.t_(f"{EGR}.path_feedback.arrival"), {"hdr.bridged.ingress_port": port},
                     f"{EGR}.path_feedback.arrived_on", {"group": group, "member": member})

    def tenant(self, subnet: str, plen: int, tenant: int) -> None:
        self.t.insert(self.t_(f"{self.ING}.qos.tenant"), {"hdr.ipv4.src_addr": (ip_int(subnet), plen)},
                      f"{self.ING}.qos.set_tenant", {"tenant_id": tenant})

    # -- liveness ------------------------------------------------------------------------------
    def port_down(self, port: int) -> None:
        """The link goes down; the packet generator's port-down packet clears the port's bit in
        its group's bitmap (no controller write).  The link comes back after the test."""
        t = self.t
        t.target_op(t.target.set_port_up, port, False)
        self.cleanups.append(lambda: t.target.set_port_up(port, True))

    def _alive_group(self, port: int) -> tuple[int, int]:
        for group, ports in self.groups.values():
            if len(ports) > 1 and port in ports:
                return group, ports.index(port)
        raise KeyError(f"port {port} is in no multi-member group")

    def port_up(self, port: int) -> None:
        """The link is back and the controller sets the port's bit again (a register write:
        the data plane only ever clears bits)."""
        t = self.t
        t.target_op(t.target.set_port_up, port, True)
        group, member = self._alive_group(port)
        name = self.t_(f"{self.ING}.failover.alive")
        alive = t.read_register(name, group)
        re = p4runtime_pb2.RegisterEntry(register_id=t.p4rt.object_id("registers", name))
        re.index.index = group
        re.data.bitstring = bytes([alive | (1 << member)])
        t.p4rt.write(update("MODIFY", register_entry=re))

    def cleanup(self) -> None:
        for fn in reversed(self.cleanups):
            fn()

    # -- hash, counters, probes ------------------------------------------------------------------
    def hash_member(self, src: str, dst: str, qp: int, count: int) -> int:
        """The flow CRC-32's low three bits through hash_member's round robin (i % count)."""
        return (zlib.crc32(flow_key(src, dst, qp)) & 7) % count

    def reorder_total(self, ports: Sequence[int]) -> int:
        """The TNA program counts regressions switch-wide (reorder.regressions[0])."""
        return self.t.packets(self.t_(f"{self.EGR}.reorder.regressions"), 0)

    def probe(self, port: int) -> None:
        """One packet out of ``port`` (a /32 route to a one-port path set), so the port reports
        its queue delay now -- HULA's probe.  The probe is UDP, not RoCE: while the test taps
        the output (``start_tap``) it stays in the stream, which the tests filter by QP;
        otherwise it is taken off ``port`` here."""
        import ptf.testutils as tu

        t = self.t
        ps = 100 + port
        if ps not in self.groups:
            self.path_set(ps, [port], (), False)
            self.route(f"10.0.{200 + port}.1", 32, ps)
        pkt = packets.udp(f"10.0.{200 + port}.1", sport=9000 + port)
        t.send_at_once(packets.HOST_PORT, [pkt])
        if getattr(t, "_tapped", None) is None:
            t.target.sync()
            tu.verify_packet(t, t.routed(pkt, port), port)


LEAVES = {"v1model": V1modelLeaf, "tna": TnaLeaf}


def leaf_for(arch: str, test: "StellarTest") -> Leaf:
    if arch not in LEAVES:
        raise ValueError(f"unknown architecture {arch!r} (one of {', '.join(ARCHES)})")
    return LEAVES[arch](test)
