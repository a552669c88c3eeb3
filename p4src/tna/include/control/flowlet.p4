/*
 * flowlet.p4 (TNA) -- per-flow state and flowlet switching in one
 * RegisterAction.
 *
 * v1model: seven registers per flow slot (signature, port, last arrival,
 * sequence numbers, departure stamp, state), read and written separately.
 * Tofino: one paired register {signature|member, last arrival} updated by
 * one RegisterAction, which decides in the stateful ALU:
 *   same flow, gap < flowlet timeout  -> keep its member
 *   same flow, gap >= timeout         -> take the best member  (gap move)
 *   empty or stale slot               -> take the best member  (new)
 *   another flow active in the slot   -> hash member, slot untouched
 * The flow CRC-32 is computed once (stellar.p4) and sliced: [12:0] is the
 * slot, [31:16] the signature, [2:0] the hash member; v1model computes CRC-32
 * and CRC-16 separately over the same key.
 * Drain detection (moving an elephant once its packets left this switch) is
 * not in the Tofino program yet: it needs per-flow departures, which only
 * egress sees; see README.md.
 */
struct flow_pair_t {
    bit<32> tag;      /* signature (31:16) | member (2:0) */
    bit<32> ts;       /* last arrival, low 32 bits of ns */
}

control Flowlet(inout tna_headers_t hdr, inout tna_ingress_metadata_t meta,
                in bit<32> timeout_ns) {
    /* Size: FLOW_SLOTS (8192 = 13 bits of the CRC). */
    Register<flow_pair_t, bit<13>>(FLOW_SLOTS, {0, 0}) flows;

    bit<16> sig;
    bit<32> offer;    /* what a new or moved flow takes: sig | best member */

    /* rv: tag of the member to use; bit 8 = moved at a gap, bit 9 = another
     * flow holds the slot, bit 10 = new flow */
    RegisterAction<flow_pair_t, bit<13>, bit<32>>(flows) touch = {
        void apply(inout flow_pair_t v, out bit<32> rv) {
            if (v.tag[31:16] == sig) {
                if (meta.now - v.ts < timeout_ns) {
                    rv = v.tag;
                } else if (v.tag != offer) {
                    rv = offer | 32w0x100;
                    v.tag = offer;
                } else {
                    rv = offer;
                }
                v.ts = meta.now;
            } else if (v.tag[31:31] == 1 && meta.now - v.ts < timeout_ns) {
                rv = 32w0x200;
            } else {
                v.tag = offer;
                v.ts = meta.now;
                rv = offer | 32w0x400;
            }
        }
    };

    apply {
        sig = meta.flow_hash[31:16] | TNA_FLOW_SIG_VALID;
        offer = sig ++ (bit<16>) meta.best;
        bit<32> r = touch.execute(meta.flow_hash[12:0]);
        meta.change_reason = 0xFF;
        if (r[9:9] == 1) {
            meta.chosen = meta.hashed;
        } else {
            meta.chosen = (member_t) r[2:0];
            if (r[8:8] == 1) {
                meta.change_reason = CHANGE_GAP;
            } else if (r[10:10] == 1) {
                meta.change_reason = CHANGE_NEW;
            }
        }
    }
}
