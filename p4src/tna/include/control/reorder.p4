/*
 * reorder.p4 (TNA) -- receiver-side PSN regression per QP (egress leaf).
 *
 * As v1model, as one RegisterAction on a paired cell {valid|max PSN}: a
 * PSN below the highest seen (modulo 2^24, half window) is a regression.
 */
control Reorder(inout tna_egress_headers_t hdr, inout tna_egress_metadata_t meta) {
    /* Per QP slot (the dest QP's low 13 bits): the highest PSN seen, in
     * bits 31:8, and bit 0 set once a PSN was recorded (0 = empty).  The
     * PSN sits in the top 24 bits so that the 24-bit modular comparison is
     * the 32-bit one the stateful ALU does (bf-p4c: no slices of the
     * register value in a condition).  Size: REORDER_SLOTS. */
    Register<bit<32>, bit<13>>(REORDER_SLOTS, 0) max_psn;
    /* Regressions seen.  Size: 1. */
    Counter<bit<32>, bit<1>>(1, CounterType_t.PACKETS) regressions;

    bit<32> psn;

    RegisterAction<bit<32>, bit<13>, bit<1>>(max_psn) check = {
        void apply(inout bit<32> v, out bit<1> rv) {
            rv = 0;
            if (v == 0 || psn - v < 32w0x80000000) {
                v = psn;
            } else {
                rv = 1;
            }
        }
    };
    /* Gates of one table each, none nested (README.md, "Tofino-1"). */
    apply {
        psn = hdr.bth.psn ++ 8w1;
        if (hdr.bth.isValid()) {
            meta.regressed = check.execute(hdr.bth.dest_qp[12:0]);
        }
        if (meta.regressed == 1) {
            regressions.count(0);
        }
    }
}
