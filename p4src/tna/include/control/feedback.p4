/*
 * feedback.p4 (TNA) -- the egress half of path choice: tell ingress each
 * uplink's queue delay.
 *
 * v1model: egress writes the delay into a register that ingress reads.
 * Tofino-1: egress mirrors a copy of the packet whose mirror header carries
 * (port, delay); the mirror session sends it to the recirculation port,
 * truncated, and it re-enters ingress as a feedback packet
 * (path_choice.p4).  A per-port RegisterAction limits the copies to one per
 * `interval` ns per port.  Tofino2's ghost thread would make the queue depth
 * visible to ingress without feedback packets (README.md).
 */
control Feedback(inout tna_egress_headers_t hdr, inout tna_egress_metadata_t meta,
                 in egress_intrinsic_metadata_t eg_intr_md,
                 in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                 inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    /* Last report time per port.  Size: PORT_SLOTS. */
    Register<bit<32>, PortId_t>(PORT_SLOTS, 0) last_report;

    bit<32> now;
    bit<32> limit;     /* now - interval */

    /* Due when at least `interval` ns have passed since the port's last
     * report: (now - v) mod 2^32 >= interval.  The stateful ALU compares one
     * PHV input with the cell (bf-p4c's assembler: "more than one phv_ixb
     * operand to an SALU compare" for now - v >= interval), so the test is
     * two sign tests: (limit - v) < 2^31 covers now - v in [interval,
     * 2^31 + interval), (now - v) >= 2^31 covers [2^31, 2^32) (a port idle
     * that long); together [interval, 2^32), the same answer for every
     * interval up to 2^31 ns (the controller renders microseconds). */
    RegisterAction<bit<32>, PortId_t, bit<1>>(last_report) due = {
        void apply(inout bit<32> v, out bit<1> rv) {
            rv = 0;
            if (limit - v < 32w0x80000000 || now - v >= 32w0x80000000) {
                v = now;
                rv = 1;
            }
        }
    };

    bit<32> interval;
    bit<1> reports;     /* the port is in `ports` */
    bit<1> is_due;
    action report(bit<32> interval_ns) { interval = interval_ns; reports = 1; }
    action no_report() { interval = 0; reports = 0; }
    /* (the subtraction in a keyless table's action: p4c's mid end would fold
     * it into the compare if written in the apply block, and bf-p4c takes no
     * action data as the second operand of a subtraction) */
    action take_limit() { limit = now - interval; }
    table report_limit { actions = { take_limit; } const default_action = take_limit(); size = 1; }
    /* Uplink ports that report, with their interval.  Size: PORT_SLOTS. */
    table ports {
        key = { eg_intr_md.egress_port: exact; }
        actions = { report; no_report; }
        default_action = no_report();
        size = PORT_SLOTS;
    }
    /* Gates of one table each, none nested (README.md, "Tofino-1"); the
     * limit is computed for every packet (a port that does not report has
     * interval 0 and no use for it). */
    apply {
        now = eg_prsr_md.global_tstamp[31:0];
        ports.apply();
        report_limit.apply();
        if (reports == 1) {
            is_due = due.execute(eg_intr_md.egress_port);
        } else {
            is_due = 0;
        }
        if (is_due == 1) {
            /* the copy's port and delay (path_feedback.p4 writes a remote
             * path's instead, at a host port, which never reports) */
            meta.report_port = eg_intr_md.egress_port;
            meta.report_delay_ns = meta.qdelay_ns;
            meta.report_remote = 0;
            meta.report_silent = 0;          /* path_feedback.p4: a tag of a silent path */
            meta.report_downstream_x2 = 0;   /* path_feedback.p4: a tag's fresh path */
        }
        /* a packet of a host pair under pressure (CNPs, pressure.p4): its
         * member's congestion lies beyond this switch, so the report says
         * saturated (path_choice: 2^19 ns and above) */
        if (is_due == 1 && hdr.bridged.hot == 1) {
            meta.report_delay_ns = 32w0x80000;
        }
        if (is_due == 1) {
            eg_dprsr_md.mirror_type = MIRROR_TYPE_FEEDBACK;
            meta.mirror_session = MIRROR_SESSION_FEEDBACK;
            meta.mirror_pkt_type = PKT_FEEDBACK;
        }
    }
}
