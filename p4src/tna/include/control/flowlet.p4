/*
 * flowlet.p4 (TNA) -- per-flow state and flowlet switching in one
 * RegisterAction.
 *
 * v1model: seven registers per flow slot (signature, port, last arrival,
 * sequence numbers, departure stamp, state), read and written separately.
 * Tofino: one paired register {signature|member, last arrival} updated by
 * one RegisterAction, which decides in the stateful ALU:
 *   same flow, gap < flowlet timeout  -> keep its member
 *   same flow, gap >= timeout         -> keep it for now; a gap (below)
 *   empty or stale slot               -> take the best member  (new)
 *   another flow active in the slot   -> hash member, slot untouched
 * A new flow with the DRE on, and a gap, are settled by a second pass
 * (Resubmit, resubmit_h.kind = RESUB_CHOOSE) whose `assign` writes the
 * member the first pass chose (dre.p4).  A gap moves only once the flow's
 * last packet has left the old member's queue (`departed`, read in the first
 * pass), so a flow never changes (port, queue) while a packet of it is queued
 * here, even when the queue is longer than the timeout.
 * The flow CRC-32 is computed once (stellar.p4) and sliced: [12:0] is the
 * slot, [31:16] the signature, [2:0] the hash member; v1model computes CRC-32
 * and CRC-16 separately over the same key.
 * Drain (b): an elephant kept on a member that is no longer the best gets a
 * second pass (Resubmit, with its member and its previous packet's
 * arrival): that pass reads the (group, member)'s last departure stamp -- the
 * arrival time of the last packet that left that port, which egress bridges
 * through and reports in the feedback packets -- and moves the flow if it
 * is later than the flow's previous packet and the downstream skew margin
 * has passed since that packet.  One access per register per pass: the first
 * pass touches `flows` (and `departed` at a gap), the second `departed` and
 * `flows`.
 */
struct flow_pair_t {
    bit<32> tag;      /* signature (31:16) | member (2:0) */
    bit<32> ts;       /* last arrival, low 32 bits of ns */
}

control Flowlet(inout tna_headers_t hdr, inout tna_ingress_metadata_t meta,
                in bit<32> timeout_ns, in bit<1> drain_moves, in bit<1> dre_on,
                in bit<16> margin_units, in bit<1> gap_drain) {
    /* Size: FLOW_SLOTS (8192 = 13 bits of the CRC). */
    Register<flow_pair_t, bit<13>>(FLOW_SLOTS, {0, 0}) flows;
    /* Per (group, member, queue): the arrival stamp (ns >> 6, 16 bits) of
     * the last packet that left that queue of the member's port, from the
     * feedback packets (per queue: only one queue is FIFO).
     * Size: 256 groups x 8 members x 32 queues. */
    Register<bit<32>, bit<16>>(65536, 0) departed;   /* bit 16: some departure recorded */

    bit<16> sig;
    bit<32> offer;    /* what a new or moved flow takes: sig | best member */
    bit<32> fb_departed;
    bit<1>  drained;

    /* rv: [31:16] the flow's previous arrival (ns >> 6), [2:0] its member;
     * bit 12 = a gap (the slot keeps its member), bit 9 = another flow holds the slot, bit 10 = new flow */
    RegisterAction<flow_pair_t, bit<13>, bit<32>>(flows) touch = {
        void apply(inout flow_pair_t v, out bit<32> rv) {
            if (v.tag[31:16] == sig) {
                if (meta.now - v.ts < timeout_ns) {
                    rv = v.ts[21:6] ++ v.tag[15:0];
                } else {
                    /* a gap: the move (if any) is written by the second pass,
                     * once the old member is known to have drained */
                    rv = (v.ts[21:6] ++ v.tag[15:0]) | 32w0x1000;
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
    /* The DRE choice's second pass: the slot takes the member chosen (if
     * the flow still holds it). */
    RegisterAction<flow_pair_t, bit<13>, bit<32>>(flows) assign = {
        void apply(inout flow_pair_t v, out bit<32> rv) {
            if (v.tag[31:16] != sig) {
                rv = 32w0x200;
            } else {
                v.tag = offer;
                rv = offer;
            }
        }
    };
    /* The drain-test pass: move to the best member if the flow drained. */
    RegisterAction<flow_pair_t, bit<13>, bit<32>>(flows) move_if_drained = {
        void apply(inout flow_pair_t v, out bit<32> rv) {
            if (v.tag[31:16] != sig) {
                rv = 32w0x200;
            } else if (drained == 1) {
                v.tag = offer;
                rv = offer | 32w0x800;
            } else {
                rv = v.tag;
            }
        }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(departed) record_departure = {
        void apply(inout bit<32> v, out bit<32> rv) {
            v = fb_departed;
            rv = v;
        }
    };
    RegisterAction<bit<32>, bit<16>, bit<32>>(departed) read_departure = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = v;
        }
    };

    apply {
        if (meta.kind == KIND_FEEDBACK) {
            /* path_choice's port_member told which member this port is */
            fb_departed = 32w0x10000 | (bit<32>) hdr.feedback.departed_ts;
            record_departure.execute(meta.group ++ meta.chosen ++ hdr.feedback.qid[4:0]);
            return;
        }
        if (meta.kind != KIND_DATA) {
            return;
        }
        sig = meta.flow_hash[31:16] | TNA_FLOW_SIG_VALID;
        offer = sig ++ (bit<16>) meta.best;
        bit<32> r;
        meta.change_reason = 0xFF;
        if (meta.resub.isValid() && meta.resub.kind == RESUB_CHOOSE) {
            /* The DRE's choice (dre.p4), made in the first pass. */
            offer = sig ++ (bit<16>) meta.resub.cur;
            r = assign.execute(meta.flow_hash[12:0]);
            if (r[9:9] == 1) {
                meta.chosen = meta.hashed;
            } else {
                meta.chosen = meta.resub.cur;
                if (meta.resub.is_new == 1) {
                    meta.change_reason = CHANGE_NEW;
                } else if (meta.resub.old != meta.resub.cur) {
                    meta.change_reason = CHANGE_GAP;
                }
            }
            return;
        }
        if (meta.resub.isValid()) {
            /* Drained: the last packet that left the old member's port arrived
             * no earlier than this flow's previous packet (FIFO: then all of
             * the flow's packets have left), and the downstream skew margin
             * has passed since that packet (it may still be queued in the next
             * switch: a later packet on a shorter path must not overtake it).
             * Stamps are 64 ns units, so a
             * packet that arrived up to 64 ns before the flow's previous one
             * can stand for it, and a flow that paused over 2 ms is not tested (the stamps wrap in 4.2 ms; its flowlet gap moves it anyway when the timeout is below that) (README.md: drain). */
            bit<32> d = read_departure.execute(meta.group ++ meta.resub.cur ++ meta.qid);
            bit<16> since = d[15:0] - meta.resub.prev_ts;
            bit<16> waited = meta.now[21:6] - meta.resub.prev_ts;
            drained = 0;
            if (d[16:16] == 1 && since < 16w0x8000 && waited >= margin_units) {
                drained = 1;
            }
            r = move_if_drained.execute(meta.flow_hash[12:0]);
        } else {
            r = touch.execute(meta.flow_hash[12:0]);
        }
        if (r[9:9] == 1) {
            meta.chosen = meta.hashed;
        } else if (r[10:10] == 1) {
            /* a new flow: the slot took the best member (offer); with the
             * DRE on, its choice is written by a second pass */
            meta.chosen = meta.best;
            meta.is_new = 1;
            if (dre_on == 1) {
                meta.choose = 1;
            } else {
                meta.change_reason = CHANGE_NEW;
            }
        } else if (r[12:12] == 1) {
            /* a gap: the flow may move only if its packets have left the old
             * member's queue (a gap longer than the timeout is not proof when
             * the queue is longer still): the same departure test as a drain
             * move, in this pass (`departed` is not touched otherwise) */
            meta.old = (member_t) r[2:0];
            meta.chosen = meta.old;
            bit<1> gap_ok = 1;
            if (gap_drain == 1) {
                bit<32> d = read_departure.execute(meta.group ++ meta.old ++ meta.qid);
                bit<16> since = d[15:0] - r[31:16];
                if (d[16:16] == 0 || since >= 16w0x8000) {   /* never reported: not proven */
                    gap_ok = 0;
                }
            }
            if (gap_ok == 1 && (dre_on == 1 || meta.best != meta.old)) {
                meta.choose = 1;    /* the second pass writes the move */
            }
        } else {
            meta.chosen = (member_t) r[2:0];
            if (r[11:11] == 1) {
                meta.change_reason = CHANGE_DRAIN;
            } else if (drain_moves == 1 && meta.elephant == 1 && !meta.resub.isValid() &&
                       meta.chosen != meta.best) {
                /* an elephant kept on a worse member: test for drain in a
                 * second pass (its register accesses are that pass's;
                 * stellar.p4 sets the resubmit unless dre.p4 refuses the
                 * move: its member's level was never measured) */
                meta.drain_test = 1;
                meta.resub.setValid();
                meta.resub.kind = RESUB_DRAIN;
                meta.resub.elephant = 1;
                meta.resub.is_new = 0;
                meta.resub.prev_ts = r[31:16];
                meta.resub.cur = meta.chosen;
                meta.resub.old = 0;
                meta.resub._pad0 = 0;
                meta.resub._pad1 = 0;
                meta.resub._pad2 = 0;
            }
        }
    }
}
