/*
 * config.p4 -- switch-wide parameters set by the controller (ingress).
 *
 * A keyless table: its default action carries the parameters, so the
 * controller changes them with one default-entry MODIFY and the program has
 * working defaults (define.p4) before the controller has spoken.
 */
#ifndef _STELLAR_CONTROL_CONFIG_P4_
#define _STELLAR_CONTROL_CONFIG_P4_

control Config(inout headers_t hdr,
               inout metadata_t meta,
               inout standard_metadata_t standard_metadata) {

    action set_params(bit<32> flowlet_timeout_us,
                      bit<32> drain_margin_us,
                      bit<32> hysteresis_us,
                      bit<1>  gap_moves,
                      bit<1>  drain_moves,
                      bit<32> qdelay_max_age_us,
                      bit<32> elephant_bytes,
                      bit<32> elephant_window_us,
                      bit<32> elephant_idle_us,
                      bit<1>  malformed_l4_forward,
                      bit<1>  report_path_changes,
                      bit<4>  order_guards,
                      bit<8>  dre_shift,
                      bit<16> util_weight,
                      bit<16> qdelay_weight,
                      bit<16> level_weight) {
        meta.cfg.flowlet_timeout_us = flowlet_timeout_us;
        meta.cfg.drain_margin_us = drain_margin_us;
        meta.cfg.hysteresis_us = hysteresis_us;
        meta.cfg.gap_moves = gap_moves;
        meta.cfg.drain_moves = drain_moves;
        meta.cfg.qdelay_max_age_us = qdelay_max_age_us;
        meta.cfg.elephant_bytes = elephant_bytes;
        meta.cfg.elephant_window_us = elephant_window_us;
        meta.cfg.elephant_idle_us = elephant_idle_us;
        meta.cfg.malformed_l4_forward = malformed_l4_forward;
        meta.cfg.report_path_changes = report_path_changes;
        meta.cfg.order_guards = order_guards;
        meta.cfg.dre_shift = dre_shift;
        meta.cfg.util_weight = util_weight;
        meta.cfg.qdelay_weight = qdelay_weight;
        meta.cfg.level_weight = level_weight;
    }

    /* One (default) entry: the parameters of this switch. */
    table params {
        actions = {
            set_params;
        }
        default_action = set_params(DEFAULT_FLOWLET_TIMEOUT_US,
                                    DEFAULT_DRAIN_MARGIN_US,
                                    DEFAULT_HYSTERESIS_US,
                                    DEFAULT_GAP_MOVES,
                                    DEFAULT_DRAIN_MOVES,
                                    DEFAULT_QDELAY_MAX_AGE_US,
                                    DEFAULT_ELEPHANT_BYTES,
                                    DEFAULT_ELEPHANT_WINDOW_US,
                                    DEFAULT_ELEPHANT_IDLE_US,
                                    DEFAULT_MALFORMED_L4_FORWARD,
                                    DEFAULT_REPORT_PATH_CHANGES,
                                    DEFAULT_ORDER_GUARDS,
                                    DEFAULT_DRE_SHIFT,
                                    DEFAULT_UTIL_WEIGHT,
                                    DEFAULT_QDELAY_WEIGHT,
                                    DEFAULT_LEVEL_WEIGHT);
    }

    action set_adapt(bit<1>  drain_any,
                     bit<4>  move_guards,
                     bit<32> explore_signals,
                     bit<32> explore_window_us) {
        meta.adapt.drain_any = drain_any;
        meta.adapt.move_guards = move_guards;
        meta.adapt.explore_signals = explore_signals;
        meta.adapt.explore_window_us = explore_window_us;
    }

    /* One (default) entry: how flows adapt after they started (move points,
     * exploration).  A table of its own so that params keeps its signature. */
    table adapt {
        actions = {
            set_adapt;
        }
        default_action = set_adapt(DEFAULT_DRAIN_ANY,
                                   DEFAULT_MOVE_GUARDS,
                                   DEFAULT_EXPLORE_SIGNALS,
                                   DEFAULT_EXPLORE_WINDOW_US);
    }

    apply {
        params.apply();
        adapt.apply();
    }
}

#endif  /* _STELLAR_CONTROL_CONFIG_P4_ */
