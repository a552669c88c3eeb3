/*
 * params.p4 (TNA) -- the controller's tunables, one keyless row (the
 * default is define.p4's): flowlet timeout, elephant bytes per window, drain
 * moves on/off, the DRE choice on/off and its penalty for members feedback
 * does not name best, the downstream skew margin of a drain move (ns, 64 ns
 * units), whether a gap move must also prove drain, drain moves for every
 * tracked flow or elephants only (drain_any), and the move guards
 * (MOVE_GUARD_*: bit 0, a drain move needs the drain proof; MOVE_POINT_RESTART,
 * bit 1: a flow may move at a go-back-N resend, restart.p4).  Out to StellarIngress,
 * which hands each to the blocks that use it; the table and action keep the
 * names the controller knows, StellarIngress.<name> (absolute @name).
 */
#ifndef _STELLAR_TNA_CONTROL_PARAMS_P4_
#define _STELLAR_TNA_CONTROL_PARAMS_P4_

control Params(inout tna_ingress_metadata_t meta,
               out bit<32> flowlet_timeout_ns,
               out bit<32> elephant_bytes,
               out bit<1>  drain_moves,
               out bit<1>  dre_on,
               out bit<32> drain_margin_ns,
               out bit<1>  gap_drain,
               out bit<1>  drain_any,
               out bit<1>  drain_proof,
               out bit<1>  restart_point) {
    @name(".StellarIngress.set_params")
    action set_params(bit<32> flowlet_timeout, bit<32> elephant_threshold, bit<1> drain,
                      bit<1> dre_choice, bit<16> dre_delay_penalty, bit<32> drain_margin,
                      bit<1> gap_needs_drain, bit<1> drain_any_flows, bit<4> move_guards) {
        flowlet_timeout_ns = flowlet_timeout;
        elephant_bytes = elephant_threshold;
        drain_moves = drain;
#ifdef STELLAR_NO_DRE
        dre_on = 0;             /* no estimate in this profile (define.p4) */
#else
        dre_on = dre_choice;
#endif
        /* written times DRE_SCORE_SCALE, as the DRE levels; the low four bits
         * are the score's tie bit and member (dre.p4), so they are cleared */
        meta.dre_penalty = dre_delay_penalty & 0xFFF0;
        drain_margin_ns = drain_margin;
        gap_drain = gap_needs_drain;
        drain_any = drain_any_flows;
        drain_proof = move_guards[0:0];   /* MOVE_GUARD_DRAIN_PROOF */
        restart_point = move_guards[1:1]; /* MOVE_POINT_RESTART */
    }
    @name(".StellarIngress.params")
    table params {
        actions = { set_params; }
        default_action = set_params(TNA_FLOWLET_TIMEOUT_NS, TNA_ELEPHANT_BYTES, 1, 1,
                                    TNA_DRE_DELAY_PENALTY, TNA_DRAIN_MARGIN_NS, 1,
                                    TNA_DRAIN_ANY, TNA_MOVE_GUARDS);
        size = 1;
    }

    apply {
        params.apply();
    }
}

#endif
