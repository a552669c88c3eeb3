/*
 * sanity.p4 -- classify malformed input and apply the drop policy (ingress).
 *
 * v1model does not drop a packet whose parse failed: ingress runs with
 * standard_metadata.parser_error set and the headers extracted so far valid.
 * This step turns that into one malformed kind (p4src/CONTRACT.md s.1) and a
 * decision: broken L2/L3 is dropped; a truncated UDP/TCP/BTH is dropped or
 * forwarded as non-RoCE traffic by policy (config.malformed_l4_forward).  It
 * also drops non-IPv4 traffic and IPv4 headers with a bad checksum.  Counting
 * happens in telemetry (meta.malformed, meta.drop_reason).
 */
#ifndef _STELLAR_CONTROL_SANITY_P4_
#define _STELLAR_CONTROL_SANITY_P4_

control Sanity(inout headers_t hdr,
               inout metadata_t meta,
               inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.parser_error != error.NoError) {
            /* Which header was cut short (or rejected)? */
            if (!hdr.ethernet.isValid()) {
                meta.malformed = MALFORMED_TRUNC_ETHERNET;
            } else if (standard_metadata.parser_error == error.Ipv4BadVersion) {
                meta.malformed = MALFORMED_BAD_VERSION;
            } else if (standard_metadata.parser_error == error.Ipv4BadIhl) {
                meta.malformed = MALFORMED_BAD_IHL;
            } else if (standard_metadata.parser_error != error.PacketTooShort) {
                meta.malformed = MALFORMED_OTHER;
            } else if (!hdr.ipv4.isValid()) {
                if (hdr.ethernet.ether_type == ETHERTYPE_VLAN && !hdr.vlan.isValid()) {
                    meta.malformed = MALFORMED_TRUNC_ETHERNET;
                } else {
                    meta.malformed = MALFORMED_TRUNC_IPV4;
                }
            } else if (meta.ipv4_complete == 0) {
                meta.malformed = MALFORMED_TRUNC_IPV4;      /* in the options */
            } else if (hdr.ipv4.protocol == IP_PROTO_UDP && !hdr.udp.isValid()) {
                meta.malformed = MALFORMED_TRUNC_UDP;
            } else if (hdr.ipv4.protocol == IP_PROTO_TCP && !hdr.tcp.isValid()) {
                meta.malformed = MALFORMED_TRUNC_TCP;
            } else if (hdr.udp.isValid() && !hdr.bth.isValid()) {
                meta.malformed = MALFORMED_TRUNC_BTH;
            } else {
                meta.malformed = MALFORMED_OTHER;
            }

            /* Only a cut-short L4 header may still be forwarded (policy); the
             * flow key then lacks the QP or the ports (flowlet.p4). */
            bit<1> l4_only = 0;
            if (meta.malformed == MALFORMED_TRUNC_UDP ||
                meta.malformed == MALFORMED_TRUNC_TCP ||
                meta.malformed == MALFORMED_TRUNC_BTH) {
                l4_only = 1;
            }
            if (l4_only == 0 || meta.cfg.malformed_l4_forward == 0) {
                meta.drop = 1;
                meta.drop_reason = DROP_MALFORMED;
            }
        } else if (!hdr.ipv4.isValid()) {
            meta.drop = 1;
            meta.drop_reason = DROP_NOT_IPV4;
        } else if (standard_metadata.checksum_error == 1) {
            meta.drop = 1;
            meta.drop_reason = DROP_BAD_CHECKSUM;
        } else if (hdr.ipv4.ihl != 5) {
            /* Legal, rare in RoCE fabrics: counted, forwarded intact. */
            meta.malformed = MALFORMED_IPV4_OPTIONS;
        }
    }
}

#endif  /* _STELLAR_CONTROL_SANITY_P4_ */
