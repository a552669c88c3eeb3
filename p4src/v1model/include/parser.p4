/*
 * parser.p4 -- Stellar's v1model parser and deparser.
 *
 * Ethernet -> [Stellar feedback shim | 802.1Q] -> IPv4 [options] -> UDP [-> BTH] | TCP.
 * Non-first fragments and other protocols stop after IPv4.  A packet that is
 * too short for a header stops with error.PacketTooShort; v1model still runs
 * ingress, where StellarIngress.sanity classifies and counts it.  IPv4
 * version and IHL are checked with verify() so that bad values surface as
 * their own parser errors instead of steering the parse.
 */
#ifndef _STELLAR_PARSER_P4_
#define _STELLAR_PARSER_P4_

error {
    Ipv4BadVersion,
    Ipv4BadIhl
}

parser StellarParser(packet_in packet,
                     out headers_t hdr,
                     inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_STELLAR_FB: parse_fb;
            ETHERTYPE_VLAN: parse_vlan;
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    /* The path-feedback shim between leaves; IPv4 follows it. */
    state parse_fb {
        packet.extract(hdr.fb);
        transition select(hdr.fb.next_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_vlan {
        packet.extract(hdr.vlan);
        transition select(hdr.vlan.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        verify(hdr.ipv4.version == 4, error.Ipv4BadVersion);
        verify(hdr.ipv4.ihl >= 5, error.Ipv4BadIhl);
        transition select(hdr.ipv4.ihl) {
            5: parse_l4;
            default: parse_option0;
        }
    }

    /* IPv4 options: one 32-bit word per state, fixed stack indices, until
     * IHL words have been read (IHL 6 -> 1 word ... IHL 15 -> 10 words). */
    state parse_option0 {
        packet.extract(hdr.ipv4_options[0]);
        transition select(hdr.ipv4.ihl) {
            6: parse_l4;
            default: parse_option1;
        }
    }
    state parse_option1 {
        packet.extract(hdr.ipv4_options[1]);
        transition select(hdr.ipv4.ihl) {
            7: parse_l4;
            default: parse_option2;
        }
    }
    state parse_option2 {
        packet.extract(hdr.ipv4_options[2]);
        transition select(hdr.ipv4.ihl) {
            8: parse_l4;
            default: parse_option3;
        }
    }
    state parse_option3 {
        packet.extract(hdr.ipv4_options[3]);
        transition select(hdr.ipv4.ihl) {
            9: parse_l4;
            default: parse_option4;
        }
    }
    state parse_option4 {
        packet.extract(hdr.ipv4_options[4]);
        transition select(hdr.ipv4.ihl) {
            10: parse_l4;
            default: parse_option5;
        }
    }
    state parse_option5 {
        packet.extract(hdr.ipv4_options[5]);
        transition select(hdr.ipv4.ihl) {
            11: parse_l4;
            default: parse_option6;
        }
    }
    state parse_option6 {
        packet.extract(hdr.ipv4_options[6]);
        transition select(hdr.ipv4.ihl) {
            12: parse_l4;
            default: parse_option7;
        }
    }
    state parse_option7 {
        packet.extract(hdr.ipv4_options[7]);
        transition select(hdr.ipv4.ihl) {
            13: parse_l4;
            default: parse_option8;
        }
    }
    state parse_option8 {
        packet.extract(hdr.ipv4_options[8]);
        transition select(hdr.ipv4.ihl) {
            14: parse_l4;
            default: parse_option9;
        }
    }
    state parse_option9 {
        packet.extract(hdr.ipv4_options[9]);
        transition parse_l4;
    }

    /* All of the IPv4 header is in: tells sanity that a later truncation was
     * in L4, not in the options.  Only first fragments carry the L4 header. */
    state parse_l4 {
        meta.ipv4_complete = 1;
        transition select(hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (0, IP_PROTO_UDP): parse_udp;
            (0, IP_PROTO_TCP): parse_tcp;
            default: accept;
        }
    }

    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            UDP_PORT_ROCEV2: parse_bth;
            default: accept;
        }
    }

    state parse_bth {
        packet.extract(hdr.bth);
        transition accept;
    }

    state parse_tcp {
        packet.extract(hdr.tcp);
        transition accept;
    }
}

control StellarDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.fb);
        packet.emit(hdr.vlan);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ipv4_options[0]);
        packet.emit(hdr.ipv4_options[1]);
        packet.emit(hdr.ipv4_options[2]);
        packet.emit(hdr.ipv4_options[3]);
        packet.emit(hdr.ipv4_options[4]);
        packet.emit(hdr.ipv4_options[5]);
        packet.emit(hdr.ipv4_options[6]);
        packet.emit(hdr.ipv4_options[7]);
        packet.emit(hdr.ipv4_options[8]);
        packet.emit(hdr.ipv4_options[9]);
        packet.emit(hdr.udp);
        packet.emit(hdr.tcp);
        packet.emit(hdr.bth);
    }
}

/* Only 20-byte headers are verified: a field list cannot cover a variable
 * number of option words.  Headers with options are forwarded with their
 * checksum updated incrementally (see functions.p4), never recomputed. */
control StellarVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(
            hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version,
              hdr.ipv4.ihl,
              hdr.ipv4.dscp,
              hdr.ipv4.ecn,
              hdr.ipv4.total_len,
              hdr.ipv4.identification,
              hdr.ipv4.flags,
              hdr.ipv4.frag_offset,
              hdr.ipv4.ttl,
              hdr.ipv4.protocol,
              hdr.ipv4.src_addr,
              hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum,
            HashAlgorithm.csum16);
    }
}

/* Nothing to do: ingress and egress update the IPv4 checksum incrementally
 * where they change a covered field (TTL, ECN). */
control StellarComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

#endif  /* _STELLAR_PARSER_P4_ */
