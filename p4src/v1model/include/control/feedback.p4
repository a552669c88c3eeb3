/*
 * feedback.p4 -- path feedback between leaves (CONGA's idea for RoCEv2) and
 * the suspect paths it reveals.
 *
 * The source leaf tags every IPv4 packet it sends to another leaf with the
 * path-feedback shim (header.p4: stellar_fb_h) carrying its leaf id, the
 * member position it chose and a congestion field starting at 0.  Every
 * switch the packet crosses towards the destination raises the field to its
 * egress (port, queue)'s congestion: the packet's own queue delay plus the
 * port's utilisation (DRE at the port's operating rate) in us-equivalent
 * (FeedbackEgress).  The destination leaf stores the value per (source leaf,
 * path) (fb_from_*), removes the shim before the host port (hosts see the
 * original bytes; the shim is outside IP, so neither the IPv4 checksum nor
 * the RoCE ICRC changes), and returns one stored entry, round robin over the
 * source's paths and only when it changed since it was last returned, in the
 * shim of every packet it sends back to that leaf -- ACKs, CNPs and data.
 * The source leaf keeps them as congestion-to-leaf (fb_to_*) with the time
 * they arrived.  Feedback younger than feedback.params max_age_us replaces
 * the controller's level of that member and counts as measured (path choice,
 * the drain margin).
 *
 * A path is suspect when (a) this leaf sent on it and no feedback for it came
 * back within suspect_silence_us (a remote link failed silently), or (b) at
 * least retx_threshold retransmitted data packets (a PSN not ahead of the
 * flow's highest) went onto it within retx_window_us (gray loss).  A suspect
 * member scores worst (path_choice.p4): new flows avoid it.  A flow on a
 * silent path moves at once (CHANGE_SUSPECT): nothing it sent there since
 * the silence began was delivered, so nothing there can overtake a later
 * packet.  A flow on a lossy path moves at its next safe point (drain
 * proof; the margin is the path's fresh feedback delay).  After
 * suspect_hold_us the path may be probed again.
 *
 * Controls: FeedbackLookup (before path choice), FeedbackTag (after
 * placement), FeedbackEgress.
 */
#ifndef _STELLAR_CONTROL_FEEDBACK_P4_
#define _STELLAR_CONTROL_FEEDBACK_P4_

/* A feedback metric as a 16-bit controller-style level (us). */
bit<16> fb_level(in bit<32> metric) {
    bit<32> m = metric;
    if (m > 0xFFFF) {
        m = 0xFFFF;
    }
    return m[15:0];
}

/* Whether a run of the destination leaf's packets, [since, last], covered
 * at least half the silence after this leaf's unanswered send. */
bool talked_after(in timestamp_t sent, in timestamp_t since, in timestamp_t last,
                  in bit<32> silence_us) {
    timestamp_t from = sent;
    if (since > from) {
        from = since;
    }
    return last > from && last - from >= (timestamp_t)(silence_us >> 1);
}

/* Silent: the first send not answered by feedback is older than the silence
 * (and not yet past the hold, after which the path is probed again), while
 * the destination leaf kept sending to this one, without a pause, for at
 * least half the silence after that send (its current run of packets or the
 * one before), or it kept sending that long and answered another of this
 * leaf's paths after that send: it had the means to answer and did not.
 * One-way traffic (no reverse packets to carry feedback) is never silent,
 * nor is a path whose destination leaf has just resumed after a pause and
 * answered nothing yet (its first answer may sit behind its own queue). */
bool path_silent(in timestamp_t sent, in timestamp_t fb_stamp, in talk_t talk,
                 in timestamp_t now, in bit<32> silence_us, in bit<32> hold_us) {
    bool silent = false;
    if (silence_us != 0 && sent != 0 && sent > fb_stamp &&
        (talked_after(sent, talk.since, talk.heard, silence_us) ||
         talked_after(sent, talk.prev_since, talk.prev_heard, silence_us) ||
         (talk.answered > sent && talked_after(sent, 0, talk.heard, silence_us))) &&
        now - sent > (timestamp_t)silence_us &&
        now - sent <= (timestamp_t)(silence_us + hold_us)) {
        silent = true;
    }
    return silent;
}

/* Reported dead: the destination leaf's last answer for the path says its
 * uplink on it is down (FB_METRIC_DEAD), within the silence plus the hold
 * (suspect_silence_us 0 turns this off with the silence rule).  It sees its own port go down at once; this leaf would have to wait for
 * silence, which needs traffic, and a job waiting out a timeout has none. */
bool path_reported_dead(in bit<32> metric, in timestamp_t fb_stamp, in timestamp_t now,
                        in bit<32> silence_us, in bit<32> hold_us) {
    return silence_us != 0 && metric == FB_METRIC_DEAD && fb_stamp != 0 &&
           now - fb_stamp <= (timestamp_t)(silence_us + hold_us);
}

/* Lossy: enough retransmissions in the window (plus the hold). */
bool path_lossy(in timestamp_t retx_since, in bit<32> retx, in timestamp_t now,
                in bit<32> retx_threshold, in bit<32> retx_window_us, in bit<32> hold_us) {
    bool lossy = false;
    if (retx_threshold != 0 && retx >= retx_threshold &&
        now - retx_since <= (timestamp_t)(retx_window_us + hold_us)) {
        lossy = true;
    }
    return lossy;
}

/* Position of the lowest set bit of a non-zero byte. */
bit<3> first_set_bit(in bit<8> b) {
    bit<3> k = 7;
    if (b[0:0] == 1) {
        k = 0;
    } else if (b[1:1] == 1) {
        k = 1;
    } else if (b[2:2] == 1) {
        k = 2;
    } else if (b[3:3] == 1) {
        k = 3;
    } else if (b[4:4] == 1) {
        k = 4;
    } else if (b[5:5] == 1) {
        k = 5;
    } else if (b[6:6] == 1) {
        k = 6;
    }
    return k;
}

/* Whether ``port`` is one of this packet's members and down (failover.p4's
 * liveness, already looked up for the packet's path set). */
bool uplink_down(in port_t port, in metadata_t meta) {
    bit<4> n = meta.route.count;
    return (n > 0 && meta.route.port0 == port && meta.path.alive0 == 0) ||
           (n > 1 && meta.route.port1 == port && meta.path.alive1 == 0) ||
           (n > 2 && meta.route.port2 == port && meta.path.alive2 == 0) ||
           (n > 3 && meta.route.port3 == port && meta.path.alive3 == 0) ||
           (n > 4 && meta.route.port4 == port && meta.path.alive4 == 0) ||
           (n > 5 && meta.route.port5 == port && meta.path.alive5 == 0) ||
           (n > 6 && meta.route.port6 == port && meta.path.alive6 == 0) ||
           (n > 7 && meta.route.port7 == port && meta.path.alive7 == 0);
}

control FeedbackLookup(inout headers_t hdr,
                       inout metadata_t meta,
                       inout standard_metadata_t standard_metadata) {

    action set_feedback(bit<1> enabled, bit<8> leaf_id, bit<32> max_age_us,
                        bit<32> suspect_silence_us, bit<32> retx_threshold,
                        bit<32> retx_window_us, bit<32> suspect_hold_us) {
        meta.fb.enabled = enabled;
        meta.fb.leaf_id = leaf_id;
        meta.fb.max_age_us = max_age_us;
        meta.fb.suspect_silence_us = suspect_silence_us;
        meta.fb.retx_threshold = retx_threshold;
        meta.fb.retx_window_us = retx_window_us;
        meta.fb.suspect_hold_us = suspect_hold_us;
    }

    /* One (default) entry: this leaf's id and the feedback parameters. */
    table params {
        actions = {
            set_feedback;
        }
        default_action = set_feedback(DEFAULT_FEEDBACK_ENABLED, 0,
                                      DEFAULT_FEEDBACK_MAX_AGE_US,
                                      DEFAULT_SUSPECT_SILENCE_US,
                                      DEFAULT_RETX_THRESHOLD,
                                      DEFAULT_RETX_WINDOW_US,
                                      DEFAULT_SUSPECT_HOLD_US);
    }

    action set_dest_leaf(bit<8> leaf_id) {
        meta.fb.dest_known = 1;
        meta.fb.dest_leaf = leaf_id;
    }

    /* Which leaf a destination lives behind (one prefix per leaf subnet).
     * Size: DEST_LEAF_SIZE. */
    table dest_leaf {
        key = {
            hdr.ipv4.dst_addr: lpm;
        }
        actions = {
            set_dest_leaf;
            NoAction;
        }
        default_action = NoAction();
        size = DEST_LEAF_SIZE;
    }

    apply {
        params.apply();
        meta.fb.suspect = 0;
        meta.fb.silent = 0;
        meta.fb.fresh = 0;
        meta.fb.restart = 0;
        meta.fb.sent_top = 0;
        meta.fb.restart_here = 0;
        /* The flow's highest data PSN so far: a data packet not ahead of it
         * is a resend (a go-back-N restart), which the flowlet control may
         * use as a move point and FeedbackTag counts against its path.  A
         * flow that is not the slot's owner (a new one, or one routed by
         * hash beside another) leaves the slot alone. */
        if (hdr.bth.isValid() && bth_is_data(hdr.bth.opcode) && meta.flow.slot_busy == 0) {
            bit<32> top;
            flow_max_psn.read(top, meta.flow.slot);
            bit<24> ahead = hdr.bth.psn - top[23:0];
            if (meta.flow.known == 1) {
                meta.fb.sent_top = top;
            }
            if (meta.flow.known == 1 && (top & PSN_SLOT_VALID) != 0 &&
                (ahead == 0 || ahead >= PSN_HALF_RANGE)) {
                meta.fb.restart = 1;
            } else {
                flow_max_psn.write(meta.flow.slot, PSN_SLOT_VALID | (bit<32>)hdr.bth.psn);
            }
        }
        if (hdr.ipv4.isValid()) {
            dest_leaf.apply();
        }
        if (meta.fb.dest_leaf == meta.fb.leaf_id) {
            meta.fb.dest_known = 0;
        }
        if (meta.fb.enabled == 1 && meta.fb.dest_known == 1) {
            timestamp_t now = standard_metadata.ingress_global_timestamp;
            bit<4> n = meta.route.count;
            bit<32> base = (bit<32>)meta.fb.dest_leaf << 3;
            talk_t talk;
            fb_heard.read(talk.heard, (bit<32>)meta.fb.dest_leaf);
            fb_heard_since.read(talk.since, (bit<32>)meta.fb.dest_leaf);
            fb_prev_heard.read(talk.prev_heard, (bit<32>)meta.fb.dest_leaf);
            fb_prev_since.read(talk.prev_since, (bit<32>)meta.fb.dest_leaf);
            fb_answered.read(talk.answered, (bit<32>)meta.fb.dest_leaf);
            bit<32> fi;
            bit<32> metric;
            timestamp_t stamp;
            timestamp_t sent;
            bit<32> retx;
            timestamp_t retx_since;
            if (n > 0) {
                fi = base | 0;
                fb_to_metric.read(metric, fi);
                fb_to_stamp.read(stamp, fi);
                fb_sent_since.read(sent, fi);
                fb_retx.read(retx, fi);
                fb_retx_since.read(retx_since, fi);
                if (stamp != 0 && now - stamp <= (timestamp_t)meta.fb.max_age_us) {
                    meta.route.level0 = fb_level(metric);
                    meta.route.measured = meta.route.measured | 8w1;
                    meta.fb.fresh = meta.fb.fresh | 8w1;
                }
                if (path_silent(sent, stamp, talk, now, meta.fb.suspect_silence_us, meta.fb.suspect_hold_us) ||
                    path_reported_dead(metric, stamp, now, meta.fb.suspect_silence_us, meta.fb.suspect_hold_us)) {
                    meta.fb.silent = meta.fb.silent | 8w1;
                    meta.fb.suspect = meta.fb.suspect | 8w1;
                }
                if (path_lossy(retx_since, retx, now, meta.fb.retx_threshold, meta.fb.retx_window_us,
                               meta.fb.suspect_hold_us)) {
                    meta.fb.suspect = meta.fb.suspect | 8w1;
                }
            }
            if (n > 1) {
                fi = base | 1;
                fb_to_metric.read(metric, fi);
                fb_to_stamp.read(stamp, fi);
                fb_sent_since.read(sent, fi);
                fb_retx.read(retx, fi);
                fb_retx_since.read(retx_since, fi);
                if (stamp != 0 && now - stamp <= (timestamp_t)meta.fb.max_age_us) {
                    meta.route.level1 = fb_level(metric);
                    meta.route.measured = meta.route.measured | 8w2;
                    meta.fb.fresh = meta.fb.fresh | 8w2;
                }
                if (path_silent(sent, stamp, talk, now, meta.fb.suspect_silence_us, meta.fb.suspect_hold_us) ||
                    path_reported_dead(metric, stamp, now, meta.fb.suspect_silence_us, meta.fb.suspect_hold_us)) {
                    meta.fb.silent = meta.fb.silent | 8w2;
                    meta.fb.suspect = meta.fb.suspect | 8w2;
                }
                if (path_lossy(retx_since, retx, now, meta.fb.retx_threshold, meta.fb.retx_window_us,
                               meta.fb.suspect_hold_us)) {
                    meta.fb.suspect = meta.fb.suspect | 8w2;
                }
            }
            if (n > 2) {
                fi = base | 2;
                fb_to_metric.read(metric, fi);
                fb_to_stamp.read(stamp, fi);
                fb_sent_since.read(sent, fi);
                fb_retx.read(retx, fi);
                fb_retx_since.read(retx_since, fi);
                if (stamp != 0 && now - stamp <= (timestamp_t)meta.fb.max_age_us) {
                    meta.route.level2 = fb_level(metric);
                    meta.route.measured = meta.route.measured | 8w4;
                    meta.fb.fresh = meta.fb.fresh | 8w4;
                }
                if (path_silent(sent, stamp, talk, now, meta.fb.suspect_silence_us, meta.fb.suspect_hold_us) ||
                    path_reported_dead(metric, stamp, now, meta.fb.suspect_silence_us, meta.fb.suspect_hold_us)) {
                    meta.fb.silent = meta.fb.silent | 8w4;
                    meta.fb.suspect = meta.fb.suspect | 8w4;
                }
                if (path_lossy(retx_since, retx, now, meta.fb.retx_threshold, meta.fb.retx_window_us,
                               meta.fb.suspect_hold_us)) {
                    meta.fb.suspect = meta.fb.suspect | 8w4;
                }
            }
            if (n > 3) {
                fi = base | 3;
                fb_to_metric.read(metric, fi);
                fb_to_stamp.read(stamp, fi);
                fb_sent_since.read(sent, fi);
                fb_retx.read(retx, fi);
                fb_retx_since.read(retx_since, fi);
                if (stamp != 0 && now - stamp <= (timestamp_t)meta.fb.max_age_us) {
                    meta.route.level3 = fb_level(metric);
                    meta.route.measured = meta.route.measured | 8w8;
                    meta.fb.fresh = meta.fb.fresh | 8w8;
                }
                if (path_silent(sent, stamp, talk, now, meta.fb.suspect_silence_us, meta.fb.suspect_hold_us) ||
                    path_reported_dead(metric, stamp, now, meta.fb.suspect_silence_us, meta.fb.suspect_hold_us)) {
                    meta.fb.silent = meta.fb.silent | 8w8;
                    meta.fb.suspect = meta.fb.suspect | 8w8;
                }
                if (path_lossy(retx_since, retx, now, meta.fb.retx_threshold, meta.fb.retx_window_us,
                               meta.fb.suspect_hold_us)) {
                    meta.fb.suspect = meta.fb.suspect | 8w8;
                }
            }
            if (n > 4) {
                fi = base | 4;
                fb_to_metric.read(metric, fi);
                fb_to_stamp.read(stamp, fi);
                fb_sent_since.read(sent, fi);
                fb_retx.read(retx, fi);
                fb_retx_since.read(retx_since, fi);
                if (stamp != 0 && now - stamp <= (timestamp_t)meta.fb.max_age_us) {
                    meta.route.level4 = fb_level(metric);
                    meta.route.measured = meta.route.measured | 8w16;
                    meta.fb.fresh = meta.fb.fresh | 8w16;
                }
                if (path_silent(sent, stamp, talk, now, meta.fb.suspect_silence_us, meta.fb.suspect_hold_us) ||
                    path_reported_dead(metric, stamp, now, meta.fb.suspect_silence_us, meta.fb.suspect_hold_us)) {
                    meta.fb.silent = meta.fb.silent | 8w16;
                    meta.fb.suspect = meta.fb.suspect | 8w16;
                }
                if (path_lossy(retx_since, retx, now, meta.fb.retx_threshold, meta.fb.retx_window_us,
                               meta.fb.suspect_hold_us)) {
                    meta.fb.suspect = meta.fb.suspect | 8w16;
                }
            }
            if (n > 5) {
                fi = base | 5;
                fb_to_metric.read(metric, fi);
                fb_to_stamp.read(stamp, fi);
                fb_sent_since.read(sent, fi);
                fb_retx.read(retx, fi);
                fb_retx_since.read(retx_since, fi);
                if (stamp != 0 && now - stamp <= (timestamp_t)meta.fb.max_age_us) {
                    meta.route.level5 = fb_level(metric);
                    meta.route.measured = meta.route.measured | 8w32;
                    meta.fb.fresh = meta.fb.fresh | 8w32;
                }
                if (path_silent(sent, stamp, talk, now, meta.fb.suspect_silence_us, meta.fb.suspect_hold_us) ||
                    path_reported_dead(metric, stamp, now, meta.fb.suspect_silence_us, meta.fb.suspect_hold_us)) {
                    meta.fb.silent = meta.fb.silent | 8w32;
                    meta.fb.suspect = meta.fb.suspect | 8w32;
                }
                if (path_lossy(retx_since, retx, now, meta.fb.retx_threshold, meta.fb.retx_window_us,
                               meta.fb.suspect_hold_us)) {
                    meta.fb.suspect = meta.fb.suspect | 8w32;
                }
            }
            if (n > 6) {
                fi = base | 6;
                fb_to_metric.read(metric, fi);
                fb_to_stamp.read(stamp, fi);
                fb_sent_since.read(sent, fi);
                fb_retx.read(retx, fi);
                fb_retx_since.read(retx_since, fi);
                if (stamp != 0 && now - stamp <= (timestamp_t)meta.fb.max_age_us) {
                    meta.route.level6 = fb_level(metric);
                    meta.route.measured = meta.route.measured | 8w64;
                    meta.fb.fresh = meta.fb.fresh | 8w64;
                }
                if (path_silent(sent, stamp, talk, now, meta.fb.suspect_silence_us, meta.fb.suspect_hold_us) ||
                    path_reported_dead(metric, stamp, now, meta.fb.suspect_silence_us, meta.fb.suspect_hold_us)) {
                    meta.fb.silent = meta.fb.silent | 8w64;
                    meta.fb.suspect = meta.fb.suspect | 8w64;
                }
                if (path_lossy(retx_since, retx, now, meta.fb.retx_threshold, meta.fb.retx_window_us,
                               meta.fb.suspect_hold_us)) {
                    meta.fb.suspect = meta.fb.suspect | 8w64;
                }
            }
            if (n > 7) {
                fi = base | 7;
                fb_to_metric.read(metric, fi);
                fb_to_stamp.read(stamp, fi);
                fb_sent_since.read(sent, fi);
                fb_retx.read(retx, fi);
                fb_retx_since.read(retx_since, fi);
                if (stamp != 0 && now - stamp <= (timestamp_t)meta.fb.max_age_us) {
                    meta.route.level7 = fb_level(metric);
                    meta.route.measured = meta.route.measured | 8w128;
                    meta.fb.fresh = meta.fb.fresh | 8w128;
                }
                if (path_silent(sent, stamp, talk, now, meta.fb.suspect_silence_us, meta.fb.suspect_hold_us) ||
                    path_reported_dead(metric, stamp, now, meta.fb.suspect_silence_us, meta.fb.suspect_hold_us)) {
                    meta.fb.silent = meta.fb.silent | 8w128;
                    meta.fb.suspect = meta.fb.suspect | 8w128;
                }
                if (path_lossy(retx_since, retx, now, meta.fb.retx_threshold, meta.fb.retx_window_us,
                               meta.fb.suspect_hold_us)) {
                    meta.fb.suspect = meta.fb.suspect | 8w128;
                }
            }
        }
    }
}

control FeedbackTag(inout headers_t hdr,
                    inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {

    /* Shims added (index 0), removed at the destination (1), entries
     * returned (2) and received (3), dead uplinks reported (4).  Size: 5. */
    counter(5, CounterType.packets_and_bytes) shims;
    /* Retransmitted data packets sent per (destination leaf, path), index
     * as fb_retx's: the loss signal as a counter, which the controller reads
     * (P4Runtime on BMv2 reads counters, not registers) to name a gray link
     * (stellarctl stats/watch).  Size: FB_SLOTS. */
    counter(FB_SLOTS, CounterType.packets_and_bytes) retransmits;

    action fabric_port() {
        meta.fb.fabric_port = 1;
    }

    /* Ports that face a switch (the shim may cross them); any other port is
     * a host port, where the shim is removed.  Size: PORT_SLOTS. */
    table port_kind {
        key = {
            standard_metadata.egress_spec: exact;
        }
        actions = {
            fabric_port;
            NoAction;
        }
        default_action = NoAction();
        size = PORT_SLOTS;
    }

    apply {
        timestamp_t now = standard_metadata.ingress_global_timestamp;
        port_kind.apply();
        if (hdr.fb.isValid()) {
            meta.fb.tagged_in = 1;
            if (meta.fb.fabric_port == 1) {
                /* In transit (a spine): egress raises the congestion field. */
                meta.fb.raise = 1;
            } else {
                /* The destination leaf: record the path's congestion and
                 * the entry the sender returned, then remove the shim. */
                bit<32> fi = ((bit<32>)hdr.fb.src_leaf << 3) | (bit<32>)hdr.fb.path;
                fb_from_metric.write(fi, (bit<32>)hdr.fb.congestion);
                fb_from_port.write(fi, FB_PORT_VALID | (bit<16>)standard_metadata.ingress_port);
                timestamp_t last_heard;
                fb_heard.read(last_heard, (bit<32>)hdr.fb.src_leaf);
                if (now - last_heard > (timestamp_t)(meta.fb.suspect_silence_us >> 1)) {
                    /* A pause ended: the run before it is kept as evidence. */
                    timestamp_t run_since;
                    fb_heard_since.read(run_since, (bit<32>)hdr.fb.src_leaf);
                    fb_prev_since.write((bit<32>)hdr.fb.src_leaf, run_since);
                    fb_prev_heard.write((bit<32>)hdr.fb.src_leaf, last_heard);
                    fb_heard_since.write((bit<32>)hdr.fb.src_leaf, now);
                }
                fb_heard.write((bit<32>)hdr.fb.src_leaf, now);
                bit<8> changed;
                fb_from_new.read(changed, (bit<32>)hdr.fb.src_leaf);
                fb_from_new.write((bit<32>)hdr.fb.src_leaf, changed | ((bit<8>)1 << hdr.fb.path));
                if (hdr.fb.fb_valid == 1) {
                    bit<32> ti = ((bit<32>)hdr.fb.src_leaf << 3) | (bit<32>)hdr.fb.fb_path;
                    fb_to_metric.write(ti, (bit<32>)hdr.fb.fb_metric);
                    fb_to_stamp.write(ti, now);
                    fb_answered.write((bit<32>)hdr.fb.src_leaf, now);
                    shims.count(3);
                }
                hdr.ethernet.ether_type = hdr.fb.next_type;
                hdr.fb.setInvalid();
                shims.count(1);
            }
        } else if (meta.fb.enabled == 1 && meta.fb.dest_known == 1 &&
                   meta.fb.fabric_port == 1 && hdr.ipv4.isValid() && !hdr.vlan.isValid()) {
            hdr.fb.setValid();
            hdr.fb.next_type = hdr.ethernet.ether_type;
            hdr.ethernet.ether_type = ETHERTYPE_STELLAR_FB;
            hdr.fb.src_leaf = meta.fb.leaf_id;
            hdr.fb.path = meta.path.chosen_pos;
            hdr.fb.path_count = (bit<3>)(meta.route.count - 1);
            hdr.fb.fb_valid = 0;
            hdr.fb.reserved = 0;
            hdr.fb.congestion = 0;
            hdr.fb.fb_path = 0;
            hdr.fb.fb_metric = 0;
            shims.count(0);
            /* Return one entry for the destination leaf: the first path at or
             * after the round-robin pointer whose entry changed since it was
             * last returned. */
            bit<32> dest = (bit<32>)meta.fb.dest_leaf;
            bit<8> changed;
            bit<3> rr;
            fb_from_new.read(changed, dest);
            fb_rr.read(rr, dest);
            /* One entry per packet, in turn, is checked for an uplink of this
             * leaf that is down (the packet's own members' liveness,
             * failover.p4): that path delivers nothing, so it is reported
             * dead ahead of any congestion. */
            bit<3> dp;
            bit<16> from_port;
            fb_dead_rr.read(dp, dest);
            fb_dead_rr.write(dest, dp + 1);
            fb_from_port.read(from_port, (dest << 3) | (bit<32>)dp);
            if ((from_port & FB_PORT_VALID) != 0 && uplink_down((port_t)from_port[8:0], meta)) {
                hdr.fb.fb_valid = 1;
                hdr.fb.fb_path = dp;
                hdr.fb.fb_metric = FB_METRIC_DEAD[12:0];
                /* What the path carried before it died is stale: never
                 * returned after the report. */
                fb_from_new.write(dest, changed & ~((bit<8>)1 << dp));
                shims.count(4);
            } else if (changed != 0) {
                bit<3> pick = rr + first_set_bit((changed >> rr) | (changed << (3w0 - rr)));
                bit<32> metric;
                fb_from_metric.read(metric, (dest << 3) | (bit<32>)pick);
                if (metric > FB_METRIC_MAX) {
                    metric = FB_METRIC_MAX;
                }
                hdr.fb.fb_valid = 1;
                hdr.fb.fb_path = pick;
                hdr.fb.fb_metric = metric[12:0];
                fb_from_new.write(dest, changed & ~((bit<8>)1 << pick));
                fb_rr.write(dest, pick + 1);
                shims.count(2);
            }
            /* Sent on (destination, path): start an unanswered period if the
             * last one was answered (or is past the hold: probe again). */
            bit<32> si = (dest << 3) | (bit<32>)meta.path.chosen_pos;
            timestamp_t sent;
            timestamp_t answered;
            fb_sent_since.read(sent, si);
            fb_to_stamp.read(answered, si);
            if (answered >= sent ||
                now - sent > (timestamp_t)(meta.fb.suspect_silence_us + meta.fb.suspect_hold_us)) {
                fb_sent_since.write(si, now);
            }
            /* A retransmission (FeedbackLookup: restart) counts against the
             * path it goes on, unless the flow changed path after first
             * sending this PSN: then the copy was lost on an earlier path,
             * and counting it here would make the path the flow fled to look
             * lossy (flow_move_psn). */
            if (meta.fb.restart == 1 && meta.flow.tracked == 1) {
                bit<32> moved_at;
                flow_move_psn.read(moved_at, meta.flow.slot);
                bit<24> past_move = hdr.bth.psn - moved_at[23:0];
                if ((moved_at & PSN_SLOT_VALID) != 0 &&
                    (past_move == 0 || past_move >= PSN_HALF_RANGE)) {
                    meta.fb.restart_here = 0;
                } else {
                    meta.fb.restart_here = 1;
                }
            }
            if (meta.fb.restart_here == 1) {
                bit<32> retx;
                timestamp_t since;
                fb_retx.read(retx, si);
                fb_retx_since.read(since, si);
                if (now - since > (timestamp_t)meta.fb.retx_window_us) {
                    retx = 0;
                    fb_retx_since.write(si, now);
                }
                fb_retx.write(si, retx + 1);
                retransmits.count(si);
            }
        }
    }
}

control FeedbackEgress(inout headers_t hdr,
                       inout metadata_t meta,
                       inout standard_metadata_t standard_metadata) {
    apply {
        if (meta.fb.raise == 1 && hdr.fb.isValid()) {
            /* This hop's congestion: the packet's queue delay plus the port's
             * utilisation (DRE at its operating rate, ps >> 20 ~ us). */
            bit<32> port = (bit<32>)standard_metadata.egress_port;
            bit<32> dre;
            bit<32> dre_win;
            port_dre_ps.read(dre, port);
            port_dre_window.read(dre_win, port);
            bit<32> now_win = (bit<32>)(standard_metadata.egress_global_timestamp >> meta.cfg.dre_shift);
            bit<32> hop = standard_metadata.deq_timedelta + (dre_decay(dre, now_win - dre_win) >> 20);
            if (hop > FB_CONGESTION_MAX) {
                hop = FB_CONGESTION_MAX;
            }
            if (hop > (bit<32>)hdr.fb.congestion) {
                hdr.fb.congestion = hop[15:0];
            }
        }
    }
}

#endif  /* _STELLAR_CONTROL_FEEDBACK_P4_ */
