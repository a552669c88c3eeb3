/*
 * restart.p4 (TNA) -- the go-back-N restart as a move point, ingress.
 *
 * A data packet of a flow whose PSN is not ahead of the flow's highest PSN
 * seen here is a resend: its sender went back (go-back-N).  A go-back-N
 * receiver takes nothing but the PSN it expects, so whatever of the flow the
 * old path still holds arrives as a duplicate and is discarded: the flow may
 * take the best member at this packet without the drain proof (define.p4
 * MOVE_POINT_RESTART; flowlet.p4 asks for the move, a drain pass that skips
 * the proof, CHANGE_RESTART).  v1model keeps the highest PSN in
 * FeedbackLookup's flow_max_psn; here it is one register of its own, read
 * beside path choice so that the flowlet decision does not wait for it.
 *
 * Per flow slot (the flowlet slot, flow CRC [12:0]) a pair {signature, PSN}
 * (reorder.p4's shape: the PSN in the top 24 bits, so that the 24-bit modular
 * comparison is the stateful ALU's 32-bit one; the signature the CRC's
 * [30:16] with a valid bit, so an empty cell is nobody's).  A packet of
 * another flow hashed to the slot takes the cell over: the holder then misses
 * a move point, never gains a false one.  First passes only (a second pass
 * carries the PSN its first pass stored).
 */
#ifndef _STELLAR_TNA_CONTROL_RESTART_P4_
#define _STELLAR_TNA_CONTROL_RESTART_P4_

control Restart(inout tna_headers_t hdr, inout tna_ingress_metadata_t meta) {
    /* Per flow slot: {signature, highest data PSN << 8}.  Size: FLOW_SLOTS. */
    Register<reorder_pair_t, bit<13>>(FLOW_SLOTS, {0, 0}) top_psn;

    bit<32> psn;
    bit<32> sig;

    /* Not ahead: the same flow and (top - psn) mod 2^32 <= 2^31 (the PSN
     * equals the top, or is behind it by at most half the range).  Else the
     * cell takes this packet's flow and PSN.  Two conditions: one stateful
     * ALU. */
    RegisterAction<reorder_pair_t, bit<13>, bit<1>>(top_psn) check = {
        void apply(inout reorder_pair_t v, out bit<1> rv) {
            if (v.sig == sig && v.psn - psn < 32w0x80000001) {
                rv = 1;
            } else {
                rv = 0;
                v.sig = sig;
                v.psn = psn;
            }
        }
    };
    action check_resend() { meta.resend = check.execute(meta.flow_hash[12:0]); }
    action not_resend() { meta.resend = 0; }
    /* bth_is_data as ternary rows (reorder.p4's).  Rows: 5 const. */
    table resend_opcode {
        key = { hdr.bth.opcode: ternary; }
        actions = { check_resend; not_resend; }
        const default_action = not_resend();
        const entries = {
            8w0x00 &&& 8w0xD8: check_resend();   /* 0x00-0x07 */
            8w0x08 &&& 8w0xDC: check_resend();   /* 0x08-0x0B */
            8w0x0D &&& 8w0xDF: check_resend();   /* 0x0D */
            8w0x0E &&& 8w0xDE: check_resend();   /* 0x0E-0x0F */
            8w0x10 &&& 8w0xDF: check_resend();   /* 0x10 */
        }
        size = 5;
    }
    /* One gate, one table (README.md, "Tofino-1"). */
    apply {
        psn = hdr.bth.psn ++ 8w0;
        sig = 16w0 ++ 1w1 ++ meta.flow_hash[30:16];
        meta.resend = 0;
        if (meta.kind == KIND_DATA && meta.resub_pass == 0 && hdr.bth.isValid()) {
            resend_opcode.apply();
        }
    }
}

#endif  /* _STELLAR_TNA_CONTROL_RESTART_P4_ */
