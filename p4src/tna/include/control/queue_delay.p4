/*
 * queue_delay.p4 (TNA) -- the packet's queue delay in the units egress's
 * blocks match on.
 *
 * meta.qdelay_ns is the TM's dequeue delta (ns); meta.qdelay_8ns the same in
 * 8 ns units, saturated at 0xFFFF: every histogram edge (whole us) and every
 * rendered ECN row (whole-us thresholds) falls on a unit; Tofino-1's 18-bit
 * delta never saturates, Tofino2's 32-bit one does above 524 us.  The units
 * come from an identity hash, not a slice copy: the copy would have to stay
 * bit-aligned with its source, so the range key (ecn.prob,
 * telemetry.qdelay_bucket) would sit at bit 3 of its container and span five
 * nibbles, and bf-p4c's range match takes four.  StellarEgress pins the
 * field to a 16-bit container of its own (@pa_container_size) for the same
 * reason.
 */
#ifndef _STELLAR_TNA_CONTROL_QUEUE_DELAY_P4_
#define _STELLAR_TNA_CONTROL_QUEUE_DELAY_P4_

control QueueDelay(inout tna_egress_metadata_t meta, in egress_intrinsic_metadata_t eg_intr_md) {
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) qdelay_units_of;

    apply {
        meta.qdelay_ns = (bit<32>) eg_intr_md.deq_timedelta;
        if (meta.qdelay_ns[31:19] != 0) {
            meta.qdelay_8ns = 0xFFFF;
        } else {
            meta.qdelay_8ns = qdelay_units_of.get({meta.qdelay_ns[18:3]});
        }
    }
}

#endif
