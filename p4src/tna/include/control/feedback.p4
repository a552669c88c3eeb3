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
    bit<32> interval;

    RegisterAction<bit<32>, PortId_t, bit<1>>(last_report) due = {
        void apply(inout bit<32> v, out bit<1> rv) {
            rv = 0;
            if (now - v >= interval) {
                v = now;
                rv = 1;
            }
        }
    };

    action report(bit<32> interval_ns) { interval = interval_ns; }
    /* Uplink ports that report, with their interval.  Size: PORT_SLOTS. */
    table ports {
        key = { eg_intr_md.egress_port: exact; }
        actions = { report; NoAction; }
        default_action = NoAction();
        size = PORT_SLOTS;
    }
    apply {
        if (ports.apply().hit) {
            now = eg_prsr_md.global_tstamp[31:0];
            if (due.execute(eg_intr_md.egress_port) == 1) {
                eg_dprsr_md.mirror_type = MIRROR_TYPE_FEEDBACK;
                meta.mirror_session = MIRROR_SESSION_FEEDBACK;
                meta.mirror_pkt_type = PKT_FEEDBACK;
            }
        }
    }
}
