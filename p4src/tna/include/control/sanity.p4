/*
 * sanity.p4 (TNA) -- malformed input (ingress, data packets).
 *
 * A parser error, a packet that is not IPv4 and an expired TTL are flagged
 * for a drop (meta.drop) with their reason; `finish` (stellar.p4) drops the
 * packet and counts the reason, telemetry counts meta.malformed.  Each path
 * writes each field once: a second write of the reason takes a second stage
 * on Tofino-1.  The parser has already marked a bad IPv4 version
 * (meta.malformed); the TTL itself is decremented in `finish`, so this test
 * does not wait for a writer of it.
 */
#ifndef _STELLAR_TNA_CONTROL_SANITY_P4_
#define _STELLAR_TNA_CONTROL_SANITY_P4_

control Sanity(inout tna_headers_t hdr, inout tna_ingress_metadata_t meta,
               in ingress_intrinsic_metadata_from_parser_t ig_prsr_md) {
    apply {
        if (meta.kind == KIND_DATA) {
            if (ig_prsr_md.parser_err != 0) {
                meta.malformed = MALFORMED_OTHER;
                meta.drop = 1;
                meta.drop_reason = DROP_MALFORMED;
            } else if (!hdr.ipv4.isValid()) {
                meta.drop = 1;
                if (meta.malformed == MALFORMED_BAD_VERSION) {
                    meta.drop_reason = DROP_MALFORMED;
                } else {
                    meta.drop_reason = DROP_NOT_IPV4;
                }
            } else if (hdr.ipv4.ttl <= 1) {
                meta.drop = 1;
                meta.drop_reason = DROP_TTL_EXPIRED;
            }
        }
    }
}

#endif
