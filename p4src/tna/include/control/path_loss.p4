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
 * window.  The count is a path's, not a flow's: a resend is charged to the
 * path the flow takes when it resends, unless its PSN was first sent before
 * the flow's last path change (v1model's flow_move_psn): then the copy was
 * lost on the path the flow left, and charging the path it fled to would
 * make that one lossy too (after a dead path, every member of the
 * destination suspect and nothing left to move to).
 *
 * Per flow (reorder.p4's slot and signature), two registers tell which PSNs
 * were sent before the last path change: `sent_top` {signature, highest
 * PSN} returns the flow's highest PSN before this packet, and `move_psn`
 * {signature with the path, the highest PSN when the flow took that path}
 * takes it over when the flow's path differs from the stored one.  The
 * stored mark is the flow's first PSN here less one for a flow new to the
 * slot, so a flow that stays is charged for its resends.  Two flows sharing
 * a slot take the cells over in turn and look moved: their resends are not
 * charged (a missed signal, never a false one).
 *
 * Each register one RegisterAction in one table; `retx` is used in one place
 * (`retx_at`): a resend counts, another tag reads.
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
    /* Per flow, reorder.p4's slot: {signature, highest data PSN << 8}.
     * Size: REORDER_SLOTS. */
    Register<reorder_pair_t, bit<13>>(REORDER_SLOTS, {0, 0}) sent_top;
    /* Per flow: {signature | path << 17 (bit 16 valid), the flow's highest data PSN << 8
     * when it took that path}.  Size: REORDER_SLOTS. */
    Register<reorder_pair_t, bit<13>>(REORDER_SLOTS, {0, 0}) move_psn;
    /* Resends counted (0), tags of a lossy path (1), resends not charged:
     * first sent before the flow's last path change (2). */
    Counter<bit<32>, bit<2>>(3, CounterType_t.PACKETS) events;
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
    bit<32> psn;        /* the data PSN << 8 */
    bit<32> psn_prev;   /* one PSN behind it */
    bit<32> sig;        /* reorder.p4's signature */
    bit<32> sig_path;   /* with the path's index above it */
    bit<32> top;        /* the flow's highest PSN before this packet */
    bit<1>  earlier;    /* this PSN was first sent before the flow's last path change */

    /* The flow's highest PSN before this packet (for a flow new to the slot,
     * one behind this packet's); the cell keeps the higher of the two.  Two
     * compares: one stateful ALU. */
    RegisterAction<reorder_pair_t, bit<13>, bit<32>>(sent_top) raise_top = {
        void apply(inout reorder_pair_t v, out bit<32> rv) {
            if (v.sig == sig) {
                rv = v.psn;
            } else {
                rv = psn_prev;
            }
            if (v.sig != sig || v.psn - psn >= 32w0x80000000) {
                v.psn = psn;
            }
            v.sig = sig;
        }
    };
    /* On the flow's path: the PSN is earlier if not ahead of the mark (equal,
     * or behind by at most half the range).  On another path (or a flow new
     * to the slot): the flow moved here at this packet, everything up to its
     * highest PSN so far was sent before, and the mark becomes that PSN. */
    RegisterAction<reorder_pair_t, bit<13>, bit<1>>(move_psn) mark = {
        void apply(inout reorder_pair_t v, out bit<1> rv) {
            if (v.sig == sig_path) {
                if (v.psn - psn < 32w0x80000001) {
                    rv = 1;
                } else {
                    rv = 0;
                }
            } else {
                rv = 1;
                v.sig = sig_path;
                v.psn = top;
            }
        }
    };
    action take_top() { top = raise_top.execute(meta.flow_crc[12:0]); }
    table top_at { actions = { take_top; } const default_action = take_top(); size = 1; }
    action take_mark() { earlier = mark.execute(meta.flow_crc[12:0]); }
    table mark_at { actions = { take_mark; } const default_action = take_mark(); size = 1; }

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
    /* a resend of a PSN sent before the flow moved: another tag of the path */
    action do_earlier() {
        lossy = check.execute(meta.fb_index);
        events.count(2);
    }
    /* The register's two uses in one table.  Size: 4 const rows. */
    table retx_at {
        key = { meta.regressed: exact; earlier: exact; }
        actions = { do_resend; do_check; do_earlier; }
        const default_action = do_check();
        const entries = {
            (1, 0): do_resend();
            (1, 1): do_earlier();
            (0, 0): do_check();
            (0, 1): do_check();
        }
        size = 4;
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
        earlier = 0;
        psn = hdr.bth.psn ++ 8w0;
        psn_prev = psn - 32w0x100;
        sig = 15w0 ++ 1w1 ++ meta.flow_crc[31:16];
        sig_path = 12w0 ++ meta.fb_index[2:0] ++ 1w1 ++ meta.flow_crc[31:16];
        if (meta.fb_tag == 1 && meta.bth_data == 1 && threshold != 0) {
            top_at.apply();
        }
        if (meta.fb_tag == 1 && meta.bth_data == 1 && threshold != 0) {
            mark_at.apply();
        }
        if (meta.fb_tag == 1 && threshold != 0) {
            retx_at.apply();
        }
        if (lossy == 1 && eg_dprsr_md.mirror_type == MIRROR_TYPE_FEEDBACK) {
            lossy_report.apply();
        }
    }
}

#endif  /* _STELLAR_TNA_CONTROL_PATH_LOSS_P4_ */
