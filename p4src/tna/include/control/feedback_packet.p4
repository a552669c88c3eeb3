/*
 * feedback_packet.p4 (TNA) -- the mirrored feedback copy becomes a feedback
 * packet (egress).
 *
 * Feedback (feedback.p4) mirrors a copy of a data packet whose mirror
 * header carries (port, delay, departure, queue); the mirror session sends
 * it to the recirculation port, where it passes egress once more.  This
 * block rewrites it as the Ethernet + feedback header that ingress parses
 * (path_choice.p4, flowlet.p4) and ends egress for it: `exit` leaves
 * StellarEgress, so no other block sees the copy.
 */
#ifndef _STELLAR_TNA_CONTROL_FEEDBACK_PACKET_P4_
#define _STELLAR_TNA_CONTROL_FEEDBACK_PACKET_P4_

control FeedbackPacket(inout tna_egress_headers_t hdr, inout tna_egress_metadata_t meta) {
    apply {
        if (meta.feedback_copy == 1) {
            hdr.ethernet.setValid();
            hdr.ethernet.dst_addr = 0;
            hdr.ethernet.src_addr = 0;
            hdr.ethernet.ether_type = ETHERTYPE_STELLAR_FEEDBACK;
            hdr.feedback.setValid();
            hdr.feedback._pad0 = 0;
            hdr.feedback.silent = hdr.fb_mirror.silent;
            hdr.feedback.remote = hdr.fb_mirror.remote;
            hdr.feedback.port = hdr.fb_mirror.port;
            hdr.feedback.qdelay_ns = hdr.fb_mirror.qdelay_ns;
            hdr.feedback.departed_ts = hdr.fb_mirror.departed_ts;
            hdr.feedback.qid = hdr.fb_mirror.qid;
            hdr.feedback.downstream_x2 = hdr.fb_mirror.downstream_x2;
            hdr.fb_mirror.setInvalid();
            exit;
        }
    }
}

#endif
