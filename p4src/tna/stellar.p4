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
#include "include/control/failover.p4"
#include "include/control/flowlet.p4"
#include "include/control/dre.p4"
#include "include/control/qos.p4"
#include "include/control/elephant.p4"
#include "include/control/telemetry.p4"
#include "include/control/drop_reason.p4"
#include "include/control/feedback.p4"
#include "include/control/feedback_packet.p4"
#include "include/control/queue_delay.p4"
#include "include/control/ecn.p4"
#include "include/control/reorder.p4"
#include "include/control/rewrite.p4"

@pa_auto_init_metadata
control StellarIngress(inout tna_headers_t hdr,
                       inout tna_ingress_metadata_t meta,
                       in ingress_intrinsic_metadata_t ig_intr_md,
                       in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                       inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                       inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    /* The clock, the tunables (`params`) and the end of ingress (`finish`,
     * with the drop counter) are StellarIngress's own objects, not controls of
     * their own like the blocks below: the controller knows them as
     * StellarIngress.<name>, which a control would give only through absolute
     * @name annotations, and p4sim also compiles each control declaration on
     * its own, whose copy of such an object then takes that name too.
     *
     * The clock's slices that the blocks use (the bridged stamp, the DRE
     * window, the sketch window), taken through identity hashes: copied as
     * slices, bf-p4c must keep every copy bit-aligned with the clock, and
     * those alignments, chained through the other copies, did not fit the PHV. */
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) stamp_of;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) dre_window_of;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) sketch_window_of;
    /* The three copies in two keyless tables: an action takes at most 32
     * bits from hash units (bf-p4c's "immediate pathway"; the three in one
     * action needed 80).  The sketch window (12 bits of clock) fits in 16. */
    action stamps() {
        meta.stamp16 = stamp_of.get({ig_prsr_md.global_tstamp[21:6]});
        meta.sketch_win = (bit<32>) sketch_window_of.get({ig_prsr_md.global_tstamp[31:20]});
    }
    table clock_stamps { actions = { stamps; } const default_action = stamps(); size = 1; }
#ifndef STELLAR_NO_DRE
    action window() {
        meta.dre_win = dre_window_of.get({ig_prsr_md.global_tstamp[31:14]});
    }
    table clock_dre_window { actions = { window; } const default_action = window(); size = 1; }
#endif

    Sanity() sanity;
    FlowKey() flow_key;
    Routing() routing;
    PathChoice() path_choice;
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

    bit<32> flowlet_timeout_ns = TNA_FLOWLET_TIMEOUT_NS;
    bit<32> elephant_bytes = TNA_ELEPHANT_BYTES;
    bit<1>  drain_moves = 1;
    bit<1>  dre_on = 1;
    bit<32> drain_margin_ns = TNA_DRAIN_MARGIN_NS;
    bit<1>  gap_drain = 1;

    action set_params(bit<32> flowlet_timeout, bit<32> elephant_threshold, bit<1> drain,
                      bit<1> dre_choice, bit<16> dre_delay_penalty, bit<32> drain_margin,
                      bit<1> gap_needs_drain) {
        flowlet_timeout_ns = flowlet_timeout;
        elephant_bytes = elephant_threshold;
        drain_moves = drain;
#ifdef STELLAR_NO_DRE
        dre_on = 0;             /* no estimate in this profile (define.p4) */
#else
        dre_on = dre_choice;
#endif
        /* written times DRE_SCORE_SCALE, as the DRE levels; the low four bits
         * are the score's tie bit and member (dre.p4), so they are cleared */
        meta.dre_penalty = dre_delay_penalty & 0xFFF0;
        drain_margin_ns = drain_margin;
        gap_drain = gap_needs_drain;
    }
    /* The controller's tunables (one row; the default is define.p4's):
     * flowlet timeout, elephant bytes per window, drain moves on/off, the
     * DRE choice on/off and its penalty for members feedback does not name
     * best, the downstream skew margin of a drain move (ns, 64 ns units),
     * whether a gap move must also prove drain. */
    table params {
        actions = { set_params; }
        default_action = set_params(TNA_FLOWLET_TIMEOUT_NS, TNA_ELEPHANT_BYTES, 1, 1,
                                    TNA_DRE_DELAY_PENALTY, TNA_DRAIN_MARGIN_NS, 1);
        size = 1;
    }

    /* The end of ingress, one const table on the flags (a chain of
     * conditions takes three steps on Tofino-1): what leaves, what is dropped and
     * counted (no route and red are dropped here, the other reasons where
     * they were found), a second pass, the elephant digest.  Rows in
     * priority order (the first match wins).  Size: 10 const rows. */
    /* Drops by reason (DROP_*), counted where the last reason is known;
     * its P4Info name is the telemetry block's, as on v1model (the other
     * counters are telemetry.p4's).  Size: REASON_SLOTS. */
    @name("telemetry.drops")
    Counter<bit<32>, bit<8>>(REASON_SLOTS, CounterType_t.PACKETS) drops;
    action consumed() {                 /* feedback, port down */
        hdr.bridged.setInvalid();
        ig_dprsr_md.drop_ctl = 1;
    }
    action dropped() {
        /* a packet dropped in a pass that asked for a second one (e.g. a new
         * flow whose every member is down) ends here: no resubmit, and this
         * pass counts it */
        ig_dprsr_md.drop_ctl = 1;
        drops.count(meta.drop_reason);
    }
    action drop_no_route() {
        meta.drop = 1;
        ig_dprsr_md.drop_ctl = 1;
        drops.count(meta.drop_reason);  /* DROP_NO_ROUTE (set after the policer) */
    }
    action drop_red() {
        meta.drop = 1;                  /* the policer's verdict (qos.p4) */
        ig_dprsr_md.drop_ctl = 1;
        drops.count(meta.drop_reason);  /* DROP_TENANT_RED, likewise */
    }
    /* the digest in the first pass (the one that ran the sketch), also when
     * it is resubmitted: the digest is the deparser's, not the TM's */
    action forward(bit<3> resubmit, bit<3> digest) {
        hdr.bridged.member = meta.chosen;
        /* here, not in routing: the sanity checks' TTL gate would wait for
         * a writer of the TTL (the deparser recomputes the checksum) */
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        hdr.bridged.ingress_ts = meta.stamp16;
        ig_dprsr_md.resubmit_type = resubmit;
        ig_dprsr_md.digest_type = digest;
    }
    table finish {
        key = {
            meta.kind: exact; meta.drop: ternary; meta.no_route: ternary; meta.red: ternary;
            meta.choose: ternary; meta.drain_test: ternary; meta.eleph_report: ternary;
        }
        actions = { consumed; dropped; drop_no_route; drop_red; forward; }
        const default_action = consumed();
        const entries = {
            (KIND_DATA, 1, _, _, _, _, _): dropped();
            (KIND_DATA, 0, 1, _, _, _, _): drop_no_route();
            (KIND_DATA, 0, 0, 1, _, _, _): drop_red();
            (KIND_DATA, 0, 0, 0, 1, _, 1): forward(RESUBMIT_TYPE_SECOND_PASS, DIGEST_TYPE_ELEPHANT);
            (KIND_DATA, 0, 0, 0, 1, _, 0): forward(RESUBMIT_TYPE_SECOND_PASS, 0);
            (KIND_DATA, 0, 0, 0, _, 1, 1): forward(RESUBMIT_TYPE_SECOND_PASS, DIGEST_TYPE_ELEPHANT);
            (KIND_DATA, 0, 0, 0, _, 1, 0): forward(RESUBMIT_TYPE_SECOND_PASS, 0);
            (KIND_DATA, 0, 0, 0, 0, 0, 1): forward(0, DIGEST_TYPE_ELEPHANT);
            (KIND_DATA, 0, 0, 0, 0, 0, 0): forward(0, 0);
        }
        size = 10;
    }

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
        meta.now = ig_prsr_md.global_tstamp[31:0];
        meta.stamp = ig_prsr_md.global_tstamp[31:0] | 1;
        clock_stamps.apply();
#ifndef STELLAR_NO_DRE
        clock_dre_window.apply();
#endif
        meta.change_reason = 0xFF;
        params.apply();
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
        failover.apply(hdr, meta);         /* port down: mark; data: the candidates' liveness */
        dre_base.apply(hdr, meta, meta.feedback_known);   /* data: the scores' bases, levels */
        /* data: flow state (and the drain test); feedback: departures */
        flowlet.apply(hdr, meta, flowlet_timeout_ns, drain_moves, dre_on,
                      (bit<16>) (drain_margin_ns >> 6), gap_drain);
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
        finish.apply();
        if (meta.kind == KIND_DATA && ig_dprsr_md.resubmit_type == 0) {
            telemetry.apply(meta);             /* once per packet, not per pass */
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
    Ecn() ecn;
    Reorder() reorder;
    EgressTelemetry() telemetry;
    Rewrite() rewrite;

    apply {
        feedback_packet.apply(hdr, meta);  /* the mirrored copy: rewritten, then exit */
        queue_delay.apply(meta, eg_intr_md);
        meta.ingress_ts = hdr.bridged.ingress_ts;
        feedback.apply(hdr, meta, eg_intr_md, eg_prsr_md, eg_dprsr_md);
        ecn.apply(hdr, meta, eg_intr_md.egress_port);
        reorder.apply(hdr, meta);
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
