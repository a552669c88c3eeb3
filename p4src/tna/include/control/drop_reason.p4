/*
 * drop_reason.p4 (TNA) -- the reason of a drop that `finish` makes (ingress).
 *
 * Drop causes found beside each other keep flags of their own (sanity:
 * meta.drop, routing: meta.no_route, the policer: meta.red), merged at the
 * end of ingress in one const table (`finish`, stellar.p4), because a chain
 * of conditions takes three steps on Tofino-1.  The drop counter there is
 * indexed by the reason field alone (bf-p4c: one addressing mode per counter
 * and table), so the reason of a no-route or red drop is written here,
 * before path choice: a later cause that sets meta.drop (no live member, no
 * path set) overwrites it, as a test at the end would.
 */
#ifndef _STELLAR_TNA_CONTROL_DROP_REASON_P4_
#define _STELLAR_TNA_CONTROL_DROP_REASON_P4_

control DropReason(inout tna_ingress_metadata_t meta) {
    apply {
        if (meta.drop == 0 && meta.no_route == 1) {
            meta.drop_reason = DROP_NO_ROUTE;
        } else if (meta.drop == 0 && meta.red == 1) {
            meta.drop_reason = DROP_TENANT_RED;
        }
    }
}

#endif
