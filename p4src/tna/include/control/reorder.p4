/*
 * reorder.p4 (TNA) -- receiver-side PSN regression per QP (egress leaf).
 *
 * As v1model, as one RegisterAction on a paired cell {valid|max PSN}: a
 * PSN below the highest seen (modulo 2^24, half window) is a regression.
 */
control Reorder(inout tna_egress_headers_t hdr, inout tna_egress_metadata_t meta) {
    /* Per QP slot (the dest QP's low 13 bits): bit 24 valid, 23:0 max PSN.
     * Size: REORDER_SLOTS. */
    Register<bit<32>, bit<13>>(REORDER_SLOTS, 0) max_psn;
    /* Regressions seen.  Size: 1. */
    Counter<bit<32>, bit<1>>(1, CounterType_t.PACKETS) regressions;

    bit<32> psn;

    RegisterAction<bit<32>, bit<13>, bit<1>>(max_psn) check = {
        void apply(inout bit<32> v, out bit<1> rv) {
            rv = 0;
            if (v[24:24] == 0 || psn[23:0] - v[23:0] < 24w0x800000) {
                v = 32w0x01000000 | psn;
            } else {
                rv = 1;
            }
        }
    };
    apply {
        if (hdr.bth.isValid()) {
            psn = (bit<32>) hdr.bth.psn;
            meta.regressed = check.execute(hdr.bth.dest_qp[12:0]);
            if (meta.regressed == 1) {
                regressions.count(0);
            }
        }
    }
}
