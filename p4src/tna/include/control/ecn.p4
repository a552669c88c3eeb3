/*
 * ecn.p4 (TNA) -- ECN marking from a quantised probability table.
 *
 * v1model: per port and window, the egress pipeline adapts the threshold K
 * itself and marks with probability pmax * (d - K) / (Kmax - K) computed by
 * cross-multiplying.  Tofino has no run-time multiply: the marking
 * probability is a table on the queue delay (range match), whose rows the
 * controller renders once per port as the quantised ramp between the
 * fabric's Kmin and Kmax (render_tna.ecn_rows).  The ramp is static: K does
 * not adapt per window on this program, and nothing rewrites the rows while
 * traffic runs (the window and adaptation keys of the fabric YAML are
 * v1model's).  An ECT packet
 * is marked CE when a 16-bit random number is below the row's probability
 * (a row of 0xFFFF marks every packet); not-ECT packets are never marked.
 * "rand < prob" is computed as the saturating difference prob |-| rand,
 * non-zero exactly when rand < prob, because bf-p4c's gateways compare a
 * field with a constant, not two fields, and not an `||` of two fields.
 */
control Ecn(inout tna_egress_headers_t hdr, inout tna_egress_metadata_t meta, in PortId_t port) {
    Random<bit<16>>() rnd;
    /* CE marks per port.  Size: PORT_SLOTS. */
    Counter<bit<32>, PortId_t>(PORT_SLOTS, CounterType_t.PACKETS) marks;

    action set_prob(bit<16> prob) { meta.mark_prob = prob; }
    action no_mark() { meta.mark_prob = 0; }
    /* (port, queue delay range in 8 ns units) -> P(mark) in 1/65536.  Size: 16 rows
     * per port for the uplinks. */
    table prob {
        key = { port: exact; meta.qdelay_8ns: range; }
        actions = { set_prob; no_mark; }
        default_action = no_mark();
        size = 4096;
    }
    /* prob |-| rand in a keyless one-action table: written in the apply
     * block, p4c's mid end folds the difference back into the condition. */
    action gap() { meta.mark_gap = meta.mark_prob |-| meta.rand; }
    table mark_gap_of { actions = { gap; } const default_action = gap(); size = 1; }
    /* The mark, one const table on the flags: ECN-capable and not yet CE,
     * and the draw below the probability or a row of 0xFFFF (always).
     * (a row of 0xFFFF: a gateway's `a || b` over two fields is "too
     * complex" for bf-p4c, and nested gates took a stage each on Tofino-1).
     * Size: 2 const rows. */
    bit<1> ect;
    action mark() {
        hdr.ipv4.ecn = ECN_CE;
        marks.count(port);
    }
    table decide_mark {
        key = { ect: exact; meta.mark_gap: ternary; meta.mark_prob: ternary; }
        actions = { mark; NoAction; }
        const default_action = NoAction();
        const entries = {
            (1, 0, 0xFFFF): mark();
            (1, 0, _): NoAction();
            (1, _, _): mark();
        }
        size = 3;
    }
    apply {
        if (hdr.ipv4.isValid() && hdr.ipv4.ecn != ECN_NOT_ECT && hdr.ipv4.ecn != ECN_CE) {
            ect = 1;
        } else {
            ect = 0;
        }
        prob.apply();
        if (ect == 1) {
            /* only ECN-capable packets draw, so the seeded random stream (and
             * the demo's figures) does not depend on the other traffic */
            meta.rand = rnd.get();
        }
        mark_gap_of.apply();
        decide_mark.apply();
    }
}
