/*
 * clock.p4 (TNA) -- the ingress clock and the slices of it the blocks use
 * (the bridged stamp, the DRE window, the sketch window).
 *
 * The slices are taken through identity hashes: copied as slices, bf-p4c
 * must keep every copy bit-aligned with the clock, and those alignments,
 * chained through the other copies, did not fit the PHV.  The three copies
 * sit in two keyless tables: an action takes at most 32 bits from hash units
 * (bf-p4c's "immediate pathway"; the three in one action needed 80).  The
 * sketch window (12 bits of clock) fits in 16.  The tables keep the names
 * the controller knows, StellarIngress.<table> (absolute @name).
 */
#ifndef _STELLAR_TNA_CONTROL_CLOCK_P4_
#define _STELLAR_TNA_CONTROL_CLOCK_P4_

control Clock(inout tna_ingress_metadata_t meta,
              in ingress_intrinsic_metadata_from_parser_t ig_prsr_md) {
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) stamp_of;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) dre_window_of;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) sketch_window_of;

    @name(".StellarIngress.stamps")
    action stamps() {
        meta.stamp16 = stamp_of.get({ig_prsr_md.global_tstamp[21:6]});
        meta.sketch_win = (bit<32>) sketch_window_of.get({ig_prsr_md.global_tstamp[31:20]});
    }
    @name(".StellarIngress.clock_stamps")
    table clock_stamps { actions = { stamps; } const default_action = stamps(); size = 1; }
#ifndef STELLAR_NO_DRE
    @name(".StellarIngress.window")
    action window() {
        meta.dre_win = dre_window_of.get({ig_prsr_md.global_tstamp[31:14]});
    }
    @name(".StellarIngress.clock_dre_window")
    table clock_dre_window { actions = { window; } const default_action = window(); size = 1; }
#endif

    apply {
        meta.now = ig_prsr_md.global_tstamp[31:0];
        meta.stamp = ig_prsr_md.global_tstamp[31:0] | 1;
        clock_stamps.apply();
#ifndef STELLAR_NO_DRE
        clock_dre_window.apply();
#endif
    }
}

#endif
