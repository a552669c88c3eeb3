/*
 * path_loss.p4 (TNA) -- suspect paths by retransmissions (gray loss),
 * egress, after reorder.p4.
 *
 * On the source leaf, a data packet that leaves for another leaf with a PSN
 * behind its flow's last one (reorder.p4's `regressed`: a go-back-N resend
 * of a range is one event) is a retransmission: something on the path it
 * took before lost a packet.  Counted per (destination leaf, own path)
 * within retx_window; a path with at least retx_threshold of them is lossy
 * (a link that drops 1 % silently), and the tags that go on it report it
 * saturated in their feedback copies (as a silent path, path_feedback.p4):
 * it loses "best", its flows leave it at their next drain point, new flows
 * take the non-best penalty, and it stays lossy for suspect_hold past the
 * window.  The count is a path's, not a flow's: a resend
 * is charged to the path the flow takes when it resends, which is where the
 * loss happened unless the flow moved in between.
 *
 * One register, one place (`retx_at`): a resend counts, another tag reads.
 */
#ifndef _STELLAR_TNA_CONTROL_PATH_LOSS_P4_
#define _STELLAR_TNA_CONTROL_PATH_LOSS_P4_

struct retx_cell_t {
    bit<32> since;    /* the window's first resend, ns */
    bit<32> count;    /* resends since */
}

control PathLoss(inout tna_egress_headers_t hdr, inout tna_egress_metadata_t meta,
                 in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                 in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    /* Per (destination leaf, own path), path_feedback's index: {since,
     * count}.  Size: 256 leaves x 8 paths. */
    Register<retx_cell_t, bit<11>>(2048, {0, 0}) retx;
    /* Resends counted (0), tags of a lossy path (1). */
    Counter<bit<32>, bit<1>>(2, CounterType_t.PACKETS) events;
    /* Resends per (destination leaf, own path), retx's index: the loss
     * signal as a counter, which the controller reads to name a gray link
     * (stellarctl stats/watch; a register is the data plane's own).
     * Size: 256 leaves x 8 paths. */
    Counter<bit<32>, bit<11>>(2048, CounterType_t.PACKETS) retransmits;

    bit<32> threshold;
    bit<32> window;
    bit<32> now;
    bit<32> limit;      /* now - window */
    bit<32> hold;       /* suspect_hold: lossy this long past the window */
    bit<32> check_limit;   /* limit - hold */
    bit<1>  lossy;

    /* A resend: within the window (since >= now - window) one more, else a
     * new window with this one. */
    RegisterAction<retx_cell_t, bit<11>, bit<1>>(retx) resend = {
        void apply(inout retx_cell_t v) {
            if (v.since - limit < 32w0x80000000) {
                v.count = v.count + 1;
            } else {
                v.since = now;
                v.count = 1;
            }
        }
    };
    /* Another tag: lossy while the window held enough resends, and for the
     * hold after it (since >= now - window - hold). */
    RegisterAction<retx_cell_t, bit<11>, bit<1>>(retx) check = {
        void apply(inout retx_cell_t v, out bit<1> rv) {
            rv = 0;
            if (v.count >= threshold && v.since - check_limit < 32w0x80000000) {
                rv = 1;
            }
        }
    };

    /* retx_threshold (0: off), retx_window and the suspect hold (ns): one
     * keyless row. */
    action set_params(bit<32> retx_threshold, bit<32> retx_window_ns, bit<32> suspect_hold_ns) {
        threshold = retx_threshold;
        window = retx_window_ns;
        hold = suspect_hold_ns;
    }
    table params {
        actions = { set_params; }
        default_action = set_params(TNA_RETX_THRESHOLD, TNA_RETX_WINDOW_NS, TNA_SUSPECT_HOLD_NS);
        size = 1;
    }
    action take_limit() { limit = now - window; }
    table window_limit { actions = { take_limit; } const default_action = take_limit(); size = 1; }
    action take_check_limit() { check_limit = limit - hold; }
    table hold_limit { actions = { take_check_limit; } const default_action = take_check_limit(); size = 1; }
    action do_resend() {
        resend.execute(meta.fb_index);
        events.count(0);
        retransmits.count(meta.fb_index);
    }
    action do_check() { lossy = check.execute(meta.fb_index); }
    /* The register's two uses in one table.  Size: 2 const rows. */
    table retx_at {
        key = { meta.regressed: exact; }
        actions = { do_resend; do_check; }
        const default_action = do_check();
        const entries = {
            1: do_resend();
            0: do_check();
        }
        size = 2;
    }
    /* the tag's feedback copy, when due, reports the path saturated */
    action saturate() { meta.report_delay_ns = 32w0x80000; events.count(1); }
    table lossy_report { actions = { saturate; } const default_action = saturate(); size = 1; }

    apply {
        now = eg_prsr_md.global_tstamp[31:0];
        params.apply();
        window_limit.apply();
        hold_limit.apply();
        lossy = 0;
        if (meta.fb_tag == 1 && threshold != 0) {
            retx_at.apply();
        }
        if (lossy == 1 && eg_dprsr_md.mirror_type == MIRROR_TYPE_FEEDBACK) {
            lossy_report.apply();
        }
    }
}

#endif  /* _STELLAR_TNA_CONTROL_PATH_LOSS_P4_ */
