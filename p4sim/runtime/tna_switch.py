"""``TnaSwitch``: one Tofino pipe (TNA or T2NA program) run in-process.

Packet walk::

    send(port, bytes)
      -> ingress parser   sees ingress_intrinsic_metadata_t (8 B) + PORT_METADATA_SIZE bits of
                          port metadata (or resubmit data) + the packet
      -> ingress control  -> ingress deparser (Digest/Resubmit/Mirror, Checksum.update)
      -> drop_ctl[0]? resubmit? -> multicast (mcast_grp_a) | unicast (ucast_egress_port, if set)
      -> traffic manager  queue (port, qid); depth counted in cells
      -> at departure: egress parser sees egress_intrinsic_metadata_t + the ingress deparser's
                          bytes (bridged headers first) -> egress control -> egress deparser
      -> drop_ctl[0]? -> output;  bypass_egress skips the egress blocks.

Units: timestamps are nanoseconds (``ingress_mac_tstamp``/``global_tstamp`` 48 bits,
``enq_tstamp``/``deq_timedelta`` 18 bits with tna.p4's Tofino layout, 32 with t2na.p4); queue
depths are cells of 80 B (Tofino) or 176 B (Tofino2).  The virtual clock stays in microseconds.

Rules modelled from the TNA documentation; p4sim's own choices are marked:

* a packet whose ingress control leaves ``ucast_egress_port`` unwritten and sets no multicast
  group has no destination and is dropped (counted ``no_destination``);
* a parser error drops the packet (counted) unless the program reads ``parser_err`` in that
  gress, in which case the control runs with the error flag set;
* ``qid`` picks one of the port's ``queues`` (p4sim: strict priority, higher qid first; a real
  Tofino's queue scheduling is configured by the control plane); a qid at or above ``queues`` is
  dropped (counted ``qid_invalid``);
* mirror sessions are the clone sessions of the base switch (session id -> ports); a mirrored
  copy is the mirror header followed by the bytes the deparser produced (p4sim's choice),
  truncated to the session's ``truncate_bytes`` (P4Runtime: CloneSessionEntry
  packet_length_bytes, Tofino's ``$max_pkt_len``).  Over P4Runtime a session takes what Stratum
  on Tofino takes: ids 1..1015, one replica with instance 0, up to 65535 bytes;
* ``copy_to_cpu`` sends a copy to ``cpu_port``; ``mcast_grp_a`` and ``mcast_grp_b`` each
  replicate through their multicast group.  Fields for cut-through, deflection, PFC/iCoS, the
  multicast exclusion ids/hashes, ``rid`` pruning, PTP and mirror coalescing have no effect.
"""
from __future__ import annotations

import logging
from typing import Any, Optional

from p4sim.errors import RuntimeApiError
from p4sim.runtime import support
from p4sim.runtime.limits import M9, M16, M19, M32, M48, MAX_REINJECT
from p4sim.runtime.tna import TnaContext, TnaRuleError, make_tna_pipeline
from p4sim.switch import Switch

log = logging.getLogger("p4sim.tna")

RECIRC_PORT = 68  # Tofino-1 pipe 0's packet-generator / recirculation port


class _TnaInFlight:
    """A packet between the ingress deparser and the output port."""

    __slots__ = ("data", "orig_len", "rid", "qid", "bypass", "enq_cells", "passes", "mirrored")

    def __init__(self, data: bytes, orig_len: int, rid: int, qid: int, bypass: bool,
                 passes: int, mirrored: bool = False) -> None:
        self.data, self.orig_len, self.rid, self.qid = data, orig_len, rid, qid
        self.bypass, self.passes, self.mirrored = bypass, passes, mirrored
        self.enq_cells = 0


def _pack_header(obj: Any) -> int:
    return obj._pack()


class TnaSwitch(Switch):
    """A Tofino pipe.  ``queues``: queues per port (``qid`` 0..queues-1); ``target`` comes from
    the program (``__TARGET_TOFINO__``).  Everything else as :class:`p4sim.Switch`."""

    # P4Runtime CloneSessionEntry rules of Stratum on Tofino (mirror sessions, $mirror.cfg):
    # session ids 1..1015, exactly one replica with instance 0, truncation (max_pkt_len) up to
    # 65535 bytes; class of service up to 7 there, but p4sim models none but 0.
    CLONE_MAX_SESSION_ID = 1015
    CLONE_TRUNCATION = True
    CLONE_ONE_REPLICA = True
    CLONE_MAX_CLASS_OF_SERVICE = 0

    def __init__(self, program: Any, clock: Any = "virtual", queues: int = 1, seed: int = 0,
                 cpu_port: Optional[int] = None, recirculation_ports: tuple = (RECIRC_PORT,),
                 **kw: Any) -> None:
        if kw.get("priority_queues") is not None:
            queues = kw.pop("priority_queues")
        kw.pop("drop_port", None)
        backend = kw.pop("backend", None)
        self.port_metadata: dict[int, int] = {}
        # what leaves on these ports re-enters ingress (Tofino-1 pipe 0: port 68)
        self.recirculation_ports = set(recirculation_ports)
        self.pktgen_port_down_app: Optional[int] = None
        super().__init__(program, clock=clock, priority_queues=queues, drop_port=511,
                         cpu_port=cpu_port, seed=seed, backend=backend)

    # ---------------------------------------------------------------- program
    def load(self, program: Any) -> None:
        from p4sim.program import Program

        with self.lock:
            if not isinstance(program, Program):
                program = Program(program)
            ir_prog = program.ir
            if ir_prog.arch not in ("tna", "t2na"):
                raise RuntimeApiError("INVALID_ARGUMENT", f"TnaSwitch runs TNA programs, not {ir_prog.arch}")
            md_bits = 192 if (ir_prog.tofino_target or 1) == 2 else 64
            ctx = TnaContext(self.drop_port, self.seed, md_bits)
            pipeline = make_tna_pipeline(program, ctx, self.backend)
            if self.pipeline is not None:
                for port in list(self.tm.busy):
                    self.stats["pipeline_reload"] += self.tm.flush_port(port)
            self.pipeline = pipeline
            self.program = program
            self.ctx = ctx
            self.port_md_bits = md_bits

    def set_port_metadata(self, port: int, value: int) -> None:
        """The port metadata the ingress parser sees for ``port`` (PORT_METADATA_SIZE bits)."""
        with self.lock:
            if not 0 <= value < (1 << self.port_md_bits):
                raise RuntimeApiError("OUT_OF_RANGE", f"port metadata must fit {self.port_md_bits} bits")
            self.port_metadata[port] = value

    # ---------------------------------------------------------------- ingress
    def _arrive(self, data: bytes, port: int, now: float) -> None:
        """Switch.send's hand-over: a TNA packet starts at the ingress parser with port metadata."""
        self._tna_ingress(data, port, now, None, 0)

    def _tna_ingress(self, data: bytes, port: int, now: float, resubmit: Optional[tuple[int, int]],
                     passes: int) -> None:
        p, X = self.pipeline, self.ctx
        mdb = self.port_md_bits
        if resubmit is not None:
            val, nb = resubmit
            if nb > mdb:
                raise TnaRuleError(f"a resubmit header of {nb} bits does not fit the "
                                   f"{mdb} bits of port metadata it replaces")
            md = (val << (mdb - nb)) if nb else 0
        else:
            md = self.port_metadata.get(port, 0)
        fast = p.ingress_pass  # the native backend: the pass's three blocks in one C call
        if fast is not None:
            done = fast(self, data, port, now, resubmit is not None, md)
        else:
            done = self._ingress_blocks(data, port, now, resubmit is not None, md)
        if done is None:
            return
        out, drop_ctl, tm = done
        drop = drop_ctl & 1
        mirror, resub = X.mirror, X.resubmit_req
        if mirror is not None and not (drop_ctl & 4):
            self._mirror(mirror, out, len(data), now, passes)
        if drop:
            self.stats["dropped"] += 1
            return
        if resub is not None:
            if passes >= MAX_REINJECT:
                self.stats["resubmit_limit"] += 1
                return
            self.stats["resubmitted"] += 1
            self._tna_ingress(data, port, now, resub, passes + 1)
            return
        bypass = bool(tm.bypass_egress)
        if tm.copy_to_cpu:
            if self.cpu_port is None:
                self.stats["copy_to_cpu_no_cpu_port"] += 1
            else:
                self.stats["copied_to_cpu"] += 1
                self._tna_enqueue(_TnaInFlight(out, len(data), 0, 0, bypass, passes), self.cpu_port, now,
                                  port)
        groups = [g for g in (tm.mcast_grp_a, tm.mcast_grp_b) if g]
        if groups:
            # each group's replicas (a port in both gets two copies, as two trees would)
            for grp in groups:
                replicas = self._mcast.get(grp)
                if replicas is None:
                    self.stats["unknown_mcast_group"] += 1
                    continue
                for eport, rid in replicas:
                    self._tna_enqueue(_TnaInFlight(out, len(data), rid, tm.qid, bypass, passes),
                                      eport, now, port)
            return
        if not p.ucast_set(tm):
            self.stats["no_destination"] += 1
            self.stats["dropped"] += 1
            return
        self._tna_enqueue(_TnaInFlight(out, len(data), 0, tm.qid, bypass, passes),
                          tm.ucast_egress_port, now, port)

    def _ingress_blocks(self, data: bytes, port: int, now: float, resubmitted: bool,
                        md: int) -> Optional[tuple[bytes, int, Any]]:
        """The ingress parser, control and deparser of one pass (the reference backend's path;
        ``md``: the port metadata or resubmit data the parser sees): the deparsed packet,
        drop_ctl and the TM metadata, or None when the packet is gone (counted).  Leaves the
        mirror/resubmit requests in the context."""
        p, X = self.pipeline, self.ctx
        ns_now = int(round(now * 1000))
        ig_intr = p.IG_INTR()
        ig_intr.resubmit_flag = 1 if resubmitted else 0
        ig_intr.ingress_port = port
        ig_intr.ingress_mac_tstamp = ns_now & M48
        ig_intr._v = True
        mdb = self.port_md_bits
        prefix = ((ig_intr._pack() << mdb) | md).to_bytes((64 + mdb) >> 3, "big")
        buf = prefix + data
        hdr, meta = p.IH(), p.fresh_metadata(p.IM(), p.meta_type)
        tm, prsr, dprsr = p.IG_TM(), p.IG_PRSR(), p.IG_DPRSR()
        prsr.global_tstamp = ns_now & M48
        X.begin_pass(now, len(data))
        X.payload = b""

        def blocks() -> Optional[tuple[bytes, int, Any]]:
            n = p.n_params["ingress_parser"]
            pos, err = p.ingress_parser(buf, len(buf) << 3, *([hdr, meta, ig_intr, tm, prsr][:n]))
            if err is not None:
                if not self.ingress_parser_error(err):
                    return None
                prsr.parser_err = p.parser_error_flags(err)
            if pos < len(prefix) << 3:
                return self.metadata_not_skipped()
            payload = buf[pos >> 3:]
            X.payload = payload
            n = p.n_params["ingress"]
            p.ingress(*([hdr, meta, ig_intr, prsr, dprsr, tm][:n]))
            n = p.n_params["ingress_deparser"]
            acc, nb = p.ingress_deparser(*([hdr, meta, dprsr, ig_intr][:n]))
            return self._bytes(acc, nb) + payload, dprsr.drop_ctl, tm

        return self._guarded(blocks, "ingress")

    def ingress_parser_error(self, err: int) -> bool:
        """Count an ingress parser error (-1: reject); whether the packet goes on (the ingress
        control reads ``parser_err``) or is dropped (counted)."""
        p = self.pipeline
        if err >= 0 and err == p.too_short:
            self.stats["malformed"] += 1
        self.stats["parser_error"] += 1
        if err >= 0:
            self.stats["parser_error." + p.error_name(err)] += 1
        if "ingress" not in p.reads_parser_err:
            self.stats["dropped"] += 1
            return False
        return True

    def metadata_not_skipped(self) -> None:
        """An ingress parser that did not skip the metadata in front of the packet: dropped."""
        self.stats["runtime_error"] += 1
        log.warning("the ingress parser did not skip the intrinsic and port metadata "
                    "(extract(ig_intr_md); advance(PORT_METADATA_SIZE)): packet dropped")
        return None

    def assert_failed(self, where: str) -> None:
        """A failed assert/assume: the packet is dropped (counted, logged)."""
        self.stats["assert_failed"] += 1
        log.warning("assert/assume failed at %s: packet dropped", where)
        return None

    def _guarded(self, blocks: Any, gress: str) -> Any:
        """``blocks()``, a pass's blocks: a TnaRuleError goes to the caller (a program that breaks
        a Tofino rule does not exist), a failed assert or any other error drops the packet."""
        try:
            return blocks()
        except TnaRuleError:
            raise
        except support.AssertFailed as e:
            return self.assert_failed(e.where)
        except Exception:
            self.stats["runtime_error"] += 1
            log.exception("%s failed: packet dropped", gress)
            return None

    @staticmethod
    def _bytes(acc: int, nb: int) -> bytes:
        if not nb:
            return b""
        pad = (-nb) & 7
        return (acc << pad).to_bytes((nb + pad) >> 3, "big")

    def _mirror(self, mirror: tuple, body: bytes, orig_len: int, now: float, passes: int) -> None:
        session, val, nb = mirror
        s = self._clone_session(session)
        if s is None:
            return
        data = self._bytes(val, nb) + body
        if s.truncate_bytes:
            data = data[:s.truncate_bytes]
        self.stats["mirrored"] += 1
        for eport, rid in s.replicas:
            self._tna_enqueue(_TnaInFlight(data, orig_len, rid, 0, False, passes, mirrored=True),
                              eport, now)

    # ---------------------------------------------------------------- traffic manager
    def _cells(self, port: int, qid: int) -> int:
        ps = self.tm.ports.get(port)
        if ps is None:
            return 0
        cb = self.pipeline.cell_bytes
        return sum((size + cb - 1) // cb for _, _, size in ps.queues[qid].items)

    def _tna_enqueue(self, pkt: _TnaInFlight, port: int, now: float, ingress: int = -1) -> None:
        """Queue ``pkt`` for ``port``; ``ingress``: the port it came in on, which a lossless shared
        buffer charges and pauses with PFC (-1: a mirrored copy, which no port sent)."""
        if port in self._down:
            self.stats["port_down"] += 1
            return
        if pkt.qid >= self.priority_queues:
            self.stats["qid_invalid"] += 1
            return
        tm = self.tm
        if tm.idle_unlimited(port, pkt.qid, now):
            pkt.enq_cells = 0
            self._tna_depart(now, port, pkt.qid, now, pkt)
            return
        cells = self._cells(port, pkt.qid)
        if tm.enqueue(pkt, port, pkt.qid, now, len(pkt.data), ingress) < 0:
            self.stats["queue_full"] += 1
            return
        pkt.enq_cells = cells

    def _depart(self, t: float, port: int, prio: int, enq_t: float, left: int, pkt: Any) -> None:
        self._tna_depart(t, port, prio, enq_t, pkt)

    # ---------------------------------------------------------------- egress
    def _tna_depart(self, t: float, port: int, qid: int, enq_t: float, pkt: _TnaInFlight) -> None:
        p, X = self.pipeline, self.ctx
        if port in self._down:
            self.stats["port_down"] += 1
            return
        if pkt.bypass:
            self._send_out(port, pkt.data, t, pkt.passes)
            return
        ns_t, ns_enq = int(round(t * 1000)), int(round(enq_t * 1000))
        tsw = M32 if p.arch == "t2na" else (1 << 18) - 1
        # egress_intrinsic_metadata_t: egress_port, enq_qdepth, deq_qdepth, enq_tstamp,
        # deq_timedelta, egress_rid, egress_qid, pkt_length
        intr = (port, pkt.enq_cells & M19, self._cells(port, qid) & M19, ns_enq & tsw, (ns_t - ns_enq) & tsw,
                pkt.rid & M16, qid, pkt.orig_len & M16)
        fast = p.egress_pass  # the native backend: the pass's three blocks in one C call
        done = fast(self, t, ns_t, intr, pkt) if fast is not None else self._egress_blocks(t, ns_t, intr, pkt)
        if done is None:
            return
        out, drop_ctl = done
        mirror = X.mirror
        if mirror is not None and not (drop_ctl & 4) and pkt.passes < MAX_REINJECT:
            self._mirror(mirror, out, pkt.orig_len, t, pkt.passes + 1)
        if drop_ctl & 1:
            self.stats["dropped"] += 1
            return
        self._send_out(port, out, t, pkt.passes)

    def _egress_blocks(self, t: float, ns_t: int, intr: tuple, pkt: _TnaInFlight) -> Optional[tuple[bytes, int]]:
        """The egress parser, control and deparser of one pass (the reference backend's path):
        the deparsed packet and drop_ctl, or None when the packet is gone (counted).  Leaves the
        mirror request in the context."""
        p, X = self.pipeline, self.ctx
        eg = p.EG_INTR()
        (eg.egress_port, eg.enq_qdepth, eg.deq_qdepth, eg.enq_tstamp, eg.deq_timedelta, eg.egress_rid,
         eg.egress_qid, eg.pkt_length) = intr
        eg._v = True
        buf = eg._pack().to_bytes(p.EG_INTR._WIDTH >> 3, "big") + pkt.data
        hdr, meta = p.EH(), p.fresh_metadata(p.EM(), p.egress_meta_type)
        prsr, dprsr, oport = p.EG_PRSR(), p.EG_DPRSR(), p.EG_OPORT()
        prsr.global_tstamp = ns_t & M48
        X.begin_pass(t, pkt.orig_len)

        def blocks() -> Optional[tuple[bytes, int]]:
            n = p.n_params["egress_parser"]
            pos, err = p.egress_parser(buf, len(buf) << 3, *([hdr, meta, eg, prsr, dprsr][:n]))
            if err is not None:
                if not self.egress_parser_error():
                    return None
                prsr.parser_err = p.parser_error_flags(err)
            payload = buf[pos >> 3:]
            X.payload = payload
            n = p.n_params["egress"]
            p.egress(*([hdr, meta, eg, prsr, dprsr, oport][:n]))
            n = p.n_params["egress_deparser"]
            acc, nb = p.egress_deparser(*([hdr, meta, dprsr, eg, prsr][:n]))
            return self._bytes(acc, nb) + payload, dprsr.drop_ctl

        return self._guarded(blocks, "egress")

    def egress_parser_error(self) -> bool:
        """Count an egress parser error; whether the packet goes on (as ``ingress_parser_error``)."""
        self.stats["egress_parser_error"] += 1
        if "egress" not in self.pipeline.reads_parser_err:
            self.stats["dropped"] += 1
            return False
        return True

    def _send_out(self, port: int, data: bytes, t: float, passes: int) -> None:
        if port in self.recirculation_ports:
            if passes >= MAX_REINJECT:
                self.stats["recirculate_limit"] += 1
                return
            self.stats["recirculated"] += 1
            self._tna_ingress(data, port, t, None, passes + 1)
            return
        self._emit(port, data)

    # ---------------------------------------------------------------- packet generator
    def enable_pktgen_port_down(self, app_id: int = 1) -> None:
        """Tofino's packet-generator port-down application: when a port goes down, a packet
        with ``pktgen_port_down_header_t`` (pipe 0, ``app_id``, the port) enters ingress on the
        pktgen port (68), padded to 64 bytes."""
        top = 15 if self.pipeline.arch == "t2na" else 7
        if not 0 <= app_id <= top:
            raise RuntimeApiError("OUT_OF_RANGE", f"pktgen app ids are 0..{top} here")
        self.pktgen_port_down_app = app_id

    def set_port_up(self, port: int, up: bool) -> None:
        with self.lock:
            was_up = port not in self._down
            super().set_port_up(port, up)
            if was_up and not up and self.pktgen_port_down_app is not None:
                # pktgen_port_down_header_t: pad 3, pipe 2, app 3, pad 15, port 9, packet id 16
                hdr = (self.pktgen_port_down_app << 40) | ((port & M9) << 16)  # app: low bits of byte 0
                self.stats["pktgen_port_down"] += 1
                self._tna_ingress(hdr.to_bytes(6, "big") + bytes(58), RECIRC_PORT,
                                  self.clock.now_us, None, 0)
                self._run_until(self.clock.now_us)
