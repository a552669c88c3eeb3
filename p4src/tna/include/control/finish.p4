/*
 * finish.p4 (TNA) -- the end of ingress: one const table on the flags (a
 * chain of conditions takes three steps on Tofino-1) says what leaves, what
 * is dropped and counted (no route and red are dropped here, the other
 * reasons where they were found), a second pass, the elephant digest.  Rows
 * in priority order (the first match wins).  Size: 10 const rows.
 *
 * Drops by reason (DROP_*) are counted here, where the last reason is known
 * (drop_reason.p4); the counter's P4Info name is the telemetry block's, as on
 * v1model (the other counters are telemetry.p4's).  Size: REASON_SLOTS.  The
 * table, its actions and the counter keep the names the controller knows,
 * StellarIngress.<name> (absolute @name).
 */
#ifndef _STELLAR_TNA_CONTROL_FINISH_P4_
#define _STELLAR_TNA_CONTROL_FINISH_P4_

control Finish(inout tna_headers_t hdr,
               inout tna_ingress_metadata_t meta,
               inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    @name(".StellarIngress.telemetry.drops")
    Counter<bit<32>, bit<8>>(REASON_SLOTS, CounterType_t.PACKETS) drops;
    @name(".StellarIngress.consumed")
    action consumed() {                 /* feedback, port down */
        hdr.bridged.setInvalid();
        ig_dprsr_md.drop_ctl = 1;
    }
    @name(".StellarIngress.dropped")
    action dropped() {
        /* a packet dropped in a pass that asked for a second one (e.g. a new
         * flow whose every member is down) ends here: no resubmit, and this
         * pass counts it */
        ig_dprsr_md.drop_ctl = 1;
        drops.count(meta.drop_reason);
    }
    @name(".StellarIngress.drop_no_route")
    action drop_no_route() {
        meta.drop = 1;
        ig_dprsr_md.drop_ctl = 1;
        drops.count(meta.drop_reason);  /* DROP_NO_ROUTE (set after the policer) */
    }
    @name(".StellarIngress.drop_red")
    action drop_red() {
        meta.drop = 1;                  /* the policer's verdict (qos.p4) */
        ig_dprsr_md.drop_ctl = 1;
        drops.count(meta.drop_reason);  /* DROP_TENANT_RED, likewise */
    }
    /* the digest in the first pass (the one that ran the sketch), also when
     * it is resubmitted: the digest is the deparser's, not the TM's */
    @name(".StellarIngress.forward")
    action forward(bit<3> resubmit, bit<3> digest) {
        hdr.bridged.member = meta.chosen;
        /* here, not in routing: the sanity checks' TTL gate would wait for
         * a writer of the TTL (the deparser recomputes the checksum) */
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        hdr.bridged.ingress_ts = meta.stamp16;
        ig_dprsr_md.resubmit_type = resubmit;
        ig_dprsr_md.digest_type = digest;
    }
    @name(".StellarIngress.finish")
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

    apply {
        finish.apply();
    }
}

#endif
