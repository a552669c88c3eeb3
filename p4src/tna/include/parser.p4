/*
 * parser.p4 (TNA) -- the four parser/deparser blocks of the Tofino program.
 *
 * Ingress parser: the intrinsic metadata and port metadata first (the TNA
 * pattern), then either a packet-generator port-down packet (on the pktgen
 * port, app PKTGEN_APP_PORT_DOWN) or Ethernet, which may be a recirculated
 * congestion-feedback packet or [path-feedback shim | 802.1Q] IPv4 / UDP /
 * TCP / RoCEv2 BTH (the shim, 0x88B5, is what a leaf adds between leaves:
 * path_feedback.p4).  IPv4
 * options are not parsed on Tofino: such packets are counted and forwarded by
 * address only, with the checksum updated incrementally from the parser's
 * residual (see README.md).
 *
 * Egress parser: the egress intrinsic metadata, then the first byte says
 * whether a bridged header (a normal packet) or a feedback mirror header (the
 * copy egress made for ingress) follows.
 */
#ifndef _STELLAR_TNA_PARSER_P4_
#define _STELLAR_TNA_PARSER_P4_

parser StellarIngressParser(packet_in pkt,
                            out tna_headers_t hdr,
                            out tna_ingress_metadata_t meta,
                            out ingress_intrinsic_metadata_t ig_intr_md) {
    Checksum() ipv4_residual;
    state start {
        pkt.extract(ig_intr_md);
        transition select(ig_intr_md.resubmit_flag) {
            1: parse_resubmit;
            default: parse_port_metadata;
        }
    }
    state parse_resubmit {
        pkt.extract(meta.resub);
        meta.resub_pass = 1;
#if __TARGET_TOFINO__ == 2
        pkt.advance(PORT_METADATA_SIZE - 64);
#endif
        transition parse_ethernet;
    }
    state parse_port_metadata {
        pkt.advance(PORT_METADATA_SIZE);
        transition select(ig_intr_md.ingress_port) {
            PKTGEN_PORT: parse_pktgen;
            default: parse_ethernet;
        }
    }
    state parse_pktgen {
        /* app_id is the low 3 bits of a pktgen header's first byte */
        transition select(pkt.lookahead<bit<8>>()) {
            8w1 &&& 8w7: parse_port_down;
            default: parse_ethernet;
        }
    }
    state parse_port_down {
        pkt.extract(hdr.port_down);
        meta.kind = KIND_PORT_DOWN;
        transition accept;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_VLAN: parse_vlan;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_STELLAR_FB: parse_fb;
            ETHERTYPE_STELLAR_FEEDBACK: feedback_port;
            default: accept;
        }
    }
    state parse_fb {
        pkt.extract(hdr.fb);
        transition select(hdr.fb.next_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_vlan {
        pkt.extract(hdr.vlan);
        transition select(hdr.vlan.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    /* Feedback is taken only from the recirculation port: the same EtherType
     * from a front port is data with no IPv4 header (dropped, NOT_IPV4). */
    state feedback_port {
        transition select(ig_intr_md.ingress_port) {
            PKTGEN_PORT: parse_feedback;
            default: accept;
        }
    }
    /* The packet's kind is the parser's (KIND_DATA, 0, unless a state below
     * says otherwise): every ingress gate on it then reads a parser field,
     * which bf-p4c can evaluate in any stage (README.md, "Tofino-1"). */
    state parse_feedback {
        pkt.extract(hdr.feedback);
        meta.kind = KIND_FEEDBACK;
        meta.fb_remote = hdr.feedback.remote;
        transition accept;
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        /* bf-p4c: a parser checksum takes fields in the state that extracts
         * them, and one that computes a residual subtracts (one that adds can
         * only verify); the residual is read (get) only in `options` */
        ipv4_residual.subtract({hdr.ipv4.hdr_checksum, hdr.ipv4.ttl, hdr.ipv4.protocol});
        transition select(hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.protocol) {
            (4, 5, IP_PROTO_UDP): parse_udp;
            (4, 5, IP_PROTO_TCP): parse_tcp;
            (4, 5, _): accept;
            (4, _, _): options;
            default: bad_version;
        }
    }
    /* Options stay in the payload, unparsed (no L4 key); ingress changes
     * only the TTL, so the deparser updates the checksum incrementally from
     * the residual of everything else, options included. */
    state options {
        meta.malformed = MALFORMED_IPV4_OPTIONS;
        meta.ipv4_options = 1;
        /* -(checksum + the TTL/protocol word) = the ones'-complement sum of
         * every other word of the header, options included */
        meta.ipv4_residual = ipv4_residual.get();
        transition accept;
    }
    state bad_version {
        meta.malformed = MALFORMED_BAD_VERSION;
        transition accept;
    }
    /* The flow key's L4 part for UDP and TCP, the ports (the first 32 bits
     * of either header), taken by the parser so that ingress hashes the key
     * in its first stage; RoCEv2's (the dest QP) is ingress's (stellar.p4). */
    state parse_udp {
        meta.l4 = pkt.lookahead<bit<32>>();
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            UDP_PORT_ROCEV2: parse_bth;
            default: accept;
        }
    }
    state parse_tcp {
        meta.l4 = pkt.lookahead<bit<32>>();
        pkt.extract(hdr.tcp);
        transition accept;
    }
    state parse_bth {
        pkt.extract(hdr.bth);
        transition accept;
    }
}

control StellarIngressDeparser(packet_out pkt,
                               inout tna_headers_t hdr,
                               in tna_ingress_metadata_t meta,
                               in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Checksum() ipv4_csum;
    Checksum() ipv4_csum_options;
    Resubmit() second_pass;   /* drain test or DRE choice (resubmit_h.kind) */
    /* Elephants found by the sketch, to the controller. */
    Digest<elephant_digest_t>() elephant_digest;
    apply {
        if (ig_dprsr_md.digest_type == DIGEST_TYPE_ELEPHANT) {
            elephant_digest.pack({hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
                                  meta.l4, meta.eleph_bytes});
        }
        if (ig_dprsr_md.resubmit_type == RESUBMIT_TYPE_SECOND_PASS) {
            second_pass.emit<resubmit_h>(meta.resub);
        }
        if (meta.ipv4_options == 1) {
            hdr.ipv4.hdr_checksum = ipv4_csum_options.update({
                hdr.ipv4.ttl, hdr.ipv4.protocol, meta.ipv4_residual});
        } else if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdr_checksum = ipv4_csum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
                hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
                hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
                hdr.ipv4.src_addr, hdr.ipv4.dst_addr});
        }
        /* The headers a packet can leave ingress with: a feedback or
         * port-down packet is consumed here (drop_ctl), so neither header is
         * emitted (a deparser that names port_down gets a CLOT that its
         * parser does not define, which bf-p4c's assembler refuses). */
        pkt.emit(hdr.bridged);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.fb);
        pkt.emit(hdr.vlan);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.tcp);
        pkt.emit(hdr.bth);
    }
}

parser StellarEgressParser(packet_in pkt,
                           out tna_egress_headers_t hdr,
                           out tna_egress_metadata_t meta,
                           out egress_intrinsic_metadata_t eg_intr_md) {
    Checksum() ipv4_residual;
    state start {
        pkt.extract(eg_intr_md);
        transition select(pkt.lookahead<bit<8>>()) {
            PKT_BRIDGED: parse_bridged;
            PKT_FEEDBACK: parse_feedback_copy;
            default: accept;
        }
    }
    state parse_feedback_copy {
        pkt.extract(hdr.fb_mirror);
        meta.feedback_copy = 1;
        transition accept;
    }
    state parse_bridged {
        pkt.extract(hdr.bridged);
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_VLAN: parse_vlan;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_STELLAR_FB: parse_fb;
            default: accept;
        }
    }
    state parse_fb {
        pkt.extract(hdr.fb);
        transition select(hdr.fb.next_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_vlan {
        pkt.extract(hdr.vlan);
        transition select(hdr.vlan.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        /* (subtracted where extracted, as in ingress) */
        ipv4_residual.subtract({hdr.ipv4.hdr_checksum, hdr.ipv4.version, hdr.ipv4.ihl,
                                hdr.ipv4.dscp, hdr.ipv4.ecn});
        transition select(hdr.ipv4.ihl, hdr.ipv4.protocol) {
            (5, IP_PROTO_UDP): parse_udp;
            (5, _): accept;
            default: options;
        }
    }
    /* As in ingress: egress may rewrite only the ECN bits (the first word),
     * the rest, options included, is the residual. */
    state options {
        meta.ipv4_options = 1;
        meta.ipv4_residual = ipv4_residual.get();
        transition accept;
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            UDP_PORT_ROCEV2: parse_bth;
            default: accept;
        }
    }
    state parse_bth {
        pkt.extract(hdr.bth);
        transition accept;
    }
}

control StellarEgressDeparser(packet_out pkt,
                              inout tna_egress_headers_t hdr,
                              in tna_egress_metadata_t meta,
                              in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                              in egress_intrinsic_metadata_t eg_intr_md) {
    Checksum() ipv4_csum;
    Checksum() ipv4_csum_options;
    Mirror() feedback;
    apply {
        /* the copy for ingress: the port and its queue delay */
        if (eg_dprsr_md.mirror_type == MIRROR_TYPE_FEEDBACK) {
            /* session and type from metadata: bf-p4c takes no non-zero
             * constants in a mirror field list */
            feedback.emit<feedback_mirror_h>(meta.mirror_session,
                {meta.mirror_pkt_type, 5w0, meta.report_silent, meta.report_remote, meta.report_port, meta.report_delay_ns,
                 meta.ingress_ts, (bit<8>) eg_intr_md.egress_qid, meta.report_downstream_x2});
        }
        if (meta.ipv4_options == 1) {
            hdr.ipv4.hdr_checksum = ipv4_csum_options.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
                meta.ipv4_residual});
        } else if (hdr.ipv4.isValid()) {
            hdr.ipv4.hdr_checksum = ipv4_csum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
                hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
                hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
                hdr.ipv4.src_addr, hdr.ipv4.dst_addr});
        }
        /* The headers a packet can leave egress with: the bridged header
         * and the mirrored copy's header are made invalid in egress (stellar.p4),
         * so neither is emitted (a deparser that names fb_mirror gets, on
         * tofino2, a CLOT that the data packets' parser paths do not define,
         * which bf-p4c's assembler refuses). */
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.fb);
        pkt.emit(hdr.vlan);
        pkt.emit(hdr.feedback);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.bth);
    }
}

#endif  /* _STELLAR_TNA_PARSER_P4_ */
