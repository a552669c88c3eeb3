/*
 * stellar.p4 (TNA) -- the Stellar data plane for Tofino (TNA; Tofino-1 by
 * default, __TARGET_TOFINO__=2 for Tofino2 with the same layout).
 *
 * The same mechanisms and block names as ../v1model/stellar.p4, rebuilt for
 * the target (README.md says, block by block, what v1model does, what this
 * program does instead and why):
 *   - one control per mechanism in include/control/<block>.p4, instantiated
 *     and applied in order by StellarIngress / StellarEgress;
 *   - each per-flow state update is one RegisterAction on a paired register;
 *   - a register belongs to ingress or to egress; queue delay reaches
 *     ingress in feedback packets (egress mirror -> recirculation);
 *   - egress learns what it needs from ingress in a bridged header;
 *   - no run-time multiply or modulo: quantised tables instead;
 *   - the flow key is hashed once (CRC-32) and sliced.
 * Times are nanoseconds.  Shares ../include/ (headers, constants, sizes).
 */
#include <core.p4>
#if __TARGET_TOFINO__ == 2
/* Tofino2: its own architecture file (32-bit enq_tstamp/deq_timedelta, 7-bit
 * queue ids, 192 bits of port metadata); the program is the same (README.md). */
#include <t2na.p4>
#else
#include <tna.p4>
#endif

#include "../include/define.p4"
#include "../include/size.p4"
#include "../include/header.p4"
#include "include/define.p4"
#include "include/header.p4"
#include "include/metadata.p4"
#include "include/parser.p4"
#include "include/control/sanity.p4"
#include "include/control/flow_key.p4"
#include "include/control/routing.p4"
#include "include/control/path_choice.p4"
#include "include/control/pressure.p4"
#include "include/control/failover.p4"
#include "include/control/flowlet.p4"
#include "include/control/dre.p4"
#include "include/control/qos.p4"
#include "include/control/elephant.p4"
#include "include/control/telemetry.p4"
#include "include/control/drop_reason.p4"
#include "include/control/feedback.p4"
#include "include/control/feedback_packet.p4"
#include "include/control/path_feedback.p4"
#include "include/control/queue_delay.p4"
#include "include/control/ecn.p4"
#include "include/control/reorder.p4"
#include "include/control/path_loss.p4"   /* (after reorder.p4: its cell type) */
#include "include/control/restart.p4"
#include "include/control/rewrite.p4"
#include "include/control/clock.p4"
#include "include/control/params.p4"
#include "include/control/finish.p4"

@pa_auto_init_metadata
control StellarIngress(inout tna_headers_t hdr,
                       inout tna_ingress_metadata_t meta,
                       in ingress_intrinsic_metadata_t ig_intr_md,
                       in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                       inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                       inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Clock() clock;
    Params() params;
    Sanity() sanity;
    FlowKey() flow_key;
    Routing() routing;
    PathChoice() path_choice;
    Pressure() pressure;
    Restart() restart;
    Liveness() failover;   /* (the name of its tables and register: failover.*) */
    DreBase() dre_base;
    Flowlet() flowlet;
    Fallback() fallback;
    Dre() dre;
    MemberPort() member_port;
    Qos() qos;
    Elephant() elephant;
    Queueing() queueing;
    DropReason() drop_reason;
    IngressTelemetry() telemetry;
    Finish() finish;

    /* the tunables (params.p4), handed to the blocks that use them */
    bit<32> flowlet_timeout_ns;
    bit<32> elephant_bytes;
    bit<1>  drain_moves;
    bit<1>  dre_on;
    bit<32> drain_margin_ns;
    bit<1>  gap_drain;
    bit<1>  drain_any;
    bit<1>  drain_proof;
    bit<1>  restart_point;

    /* Tofino-1's rule shapes this apply block (README.md, "Tofino-1"): it
     * has no long branches, so bf-p4c makes a condition wait for every
     * input of every table under it; a block of tables under one condition
     * therefore started only when its latest table's inputs were ready, and
     * the blocks ran one after another (26 stages).  So: the packet's kind
     * comes from the parser; every gate holds one table (or assignments)
     * and reads parser fields or flags; conditions on several flags are
     * const tables (the elephant verdict, the flowlet decision, `finish`);
     * the drop causes found beside each other have flags of their own
     * (sanity: drop, routing: no_route, the meter: red), merged in
     * `finish`.  Each block is applied once and looks at the kind itself. */
    apply {
        clock.apply(meta, ig_prsr_md);
        meta.change_reason = 0xFF;
        params.apply(meta, flowlet_timeout_ns, elephant_bytes, drain_moves, dre_on,
                     drain_margin_ns, gap_drain, drain_any, drain_proof, restart_point);
#ifndef STELLAR_NO_DRE
        meta.dre_penalty_tie = meta.dre_penalty | DRE_TIE;   /* (its own instruction: bf-p4c) */
#endif
        /* Three kinds of packet reach ingress (the parser says which): a
         * port-down packet from the packet generator, a feedback packet
         * recirculated from egress (both on port 68, consumed here) and
         * data.  Data: the bridged header, whose other fields are written
         * where their values are made, one per action (header.p4 says why);
         * then sanity: truncated or non-IPv4 input and an expired TTL are
         * flagged for a drop (`finish` drops and counts them). */
        if (meta.kind == KIND_DATA) {
            hdr.bridged.setValid();
            hdr.bridged.pkt_type = PKT_BRIDGED;
            hdr.bridged._pad2 = 0;
            hdr.bridged._pad6 = 0;
            hdr.bridged.ingress_port = ig_intr_md.ingress_port;
        }
        sanity.apply(hdr, meta, ig_prsr_md);
        flow_key.apply(hdr, meta);
        routing.apply(hdr, meta);
        /* The class and the policer run beside routing, not behind it:
         * the meter's verdict (meta.red) is applied at the end of
         * ingress, so the flow state below does not wait for it (a
         * shorter chain for bf-p4c's placement).  A policed packet
         * still restamps its flow slot (and a new flow's first packet
         * takes the slot with the best member), but its bytes count in
         * neither the sketch nor the DRE (README.md: "policing").  A
         * packet that routing drops (TTL, no route) still passes its
         * tenant's meter. */
        qos.apply(hdr, meta, ig_prsr_md.parser_err);
        elephant.apply(hdr, meta, elephant_bytes);   /* sketch rows: slices of the CRC */
        drop_reason.apply(meta);           /* the reason of a drop `finish` makes */
        path_choice.apply(hdr, meta);      /* feedback: update; data: read the best */
        pressure.apply(hdr, meta);         /* CNPs per host pair: is this packet's pair hot */
        restart.apply(hdr, meta);          /* data: a resend (not ahead of the flow's PSNs) */
        failover.apply(hdr, meta);         /* port down: mark; data: the candidates' liveness */
        dre_base.apply(hdr, meta, meta.feedback_known);   /* data: the scores' bases, levels */
        /* data: flow state (and the drain test); feedback: departures */
        flowlet.apply(hdr, meta, flowlet_timeout_ns, drain_moves, dre_on,
                      (bit<16>) (drain_margin_ns >> 6), gap_drain, drain_any, drain_proof,
                      restart_point);
        /* the queue, after the decision (it writes the resubmit header's
         * queue, which the decision validates) */
        queueing.apply(meta, ig_tm_md);
        /* data: the packet's bytes into its member's estimate; a new or
         * gap flow: the estimate's choice, taken in a second pass (the
         * header filled by flowlet.p4, the choice by dre.p4).  Before the
         * fallback: the byte add keys on the decision's member and does
         * the fallback's choice itself, beside it, not after it. */
        dre.apply(hdr, meta, dre_on);
        fallback.apply(hdr, meta);         /* data: a member that is down: fall back */
        if (meta.kind == KIND_DATA && meta.drop == 0 && meta.no_route == 0) {
            member_port.apply(meta, ig_tm_md);
        }
        finish.apply(hdr, meta, ig_dprsr_md);
        if (meta.kind == KIND_DATA && ig_dprsr_md.resubmit_type == 0) {
            telemetry.apply(meta, ig_intr_md.ingress_port);   /* once per packet, not per pass */
        }
    }
}

/* The queue delay's range key in a 16-bit container of its own: 16 bits
 * placed anywhere else in a 32-bit container can span five nibbles, and
 * bf-p4c's range match takes four (ecn.prob, telemetry.qdelay_bucket). */
@pa_container_size("egress", "meta.qdelay_8ns", 16)
control StellarEgress(inout tna_egress_headers_t hdr,
                      inout tna_egress_metadata_t meta,
                      in egress_intrinsic_metadata_t eg_intr_md,
                      in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                      inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                      inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    FeedbackPacket() feedback_packet;
    QueueDelay() queue_delay;
    Feedback() feedback;
    PathFeedback() path_feedback;
    Ecn() ecn;
    Reorder() reorder;
    PathLoss() path_loss;
    EgressTelemetry() telemetry;
    Rewrite() rewrite;

    apply {
        feedback_packet.apply(hdr, meta);  /* the mirrored copy: rewritten, then exit */
        queue_delay.apply(meta, eg_intr_md);
        meta.ingress_ts = hdr.bridged.ingress_ts;
        feedback.apply(hdr, meta, eg_intr_md, eg_prsr_md, eg_dprsr_md);
        /* a data PSN behind its flow's last: a resend (path_feedback's
         * silence proof, path_loss's count) */
        reorder.apply(hdr, meta);
        /* the leaf-to-leaf shim: tag, raise, or strip and store; a returned
         * entry becomes a feedback copy (after feedback: it overrides) */
        path_feedback.apply(hdr, meta, eg_intr_md, eg_prsr_md, eg_dprsr_md);
        ecn.apply(hdr, meta, eg_intr_md.egress_port);
        /* resends per (leaf, path): a lossy path's tags report saturated */
        path_loss.apply(hdr, meta, eg_prsr_md, eg_dprsr_md);
        telemetry.apply(meta, eg_intr_md.egress_port);
        rewrite.apply(hdr, eg_intr_md.egress_port);
        hdr.bridged.setInvalid();
    }
}

Pipeline(StellarIngressParser(),
         StellarIngress(),
         StellarIngressDeparser(),
         StellarEgressParser(),
         StellarEgress(),
         StellarEgressDeparser()) pipe;

Switch(pipe) main;
