/*
 * path_choice.p4 -- congestion-aware choice among a path set's members.
 *
 * Each member's rank (functions.p4: member_score, member_rank) combines,
 * with the controller's weights (config.params util/qdelay/level_weight),
 *   (a) the port's utilisation: a CONGA-style DRE (port_dre_ps), the time
 *       on the wire of the bytes recently *assigned* to the port, updated by
 *       the Placement control for every forwarded packet and halved every
 *       2^dre_shift us, normalised by the port's operating rate
 *       (placement.port_rate, which the controller sets from port status).
 *       Because it moves on assignment, not on departure, flows that start
 *       in the same microsecond see each other.  Where the path set has a
 *       capacity prior (table prior), the member's path DRE counts instead
 *       (path_dre_ps: this switch's bytes on the member at its end-to-end
 *       bottleneck rate, plus the wire time of the packet being placed;
 *       functions.p4 member_util says why the port's DRE is left out), so
 *       each set splits its traffic in proportion to its members'
 *       bottlenecks, as WCMP does, before anything was measured;
 *   (b) the queue delay of the flow's (port, queue) (functions.p4:
 *       queue_delay): the delay of the last packet that left it
 *       (queue_qdelay_us, written by QdelayRecord below), or how long its
 *       oldest waiting packet has waited when nothing left since; a queue
 *       that holds packets but had no departure for config.qdelay_max_age_us
 *       is stalled (paused, failed silently) and scores worst, never idle;
 *       one with nothing waiting and no departure for that long is idle,
 *   (c) the controller's congestion level for that member (routing.path_set;
 *       an unmeasured level counts as 0 here, since placing a new flow cannot
 *       reorder it, but flowlet.p4 refuses to move a flow off such a member),
 *   (d) liveness (failover.p4),
 * with ties shared out by flow hash.  In ECMP mode only liveness and the hash
 * count.  Members beyond the set's count are not read at all.  This step
 * finds the best member and the flow's current member; flowlet.p4 decides
 * which one the flow uses.  The eight members are unrolled by hand (P4 has
 * no loops over struct fields).  QdelayRecord is the egress half.
 */
#ifndef _STELLAR_CONTROL_PATH_CHOICE_P4_
#define _STELLAR_CONTROL_PATH_CHOICE_P4_

control PathChoice(inout headers_t hdr,
                   inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {

    action set_prior(bit<32> slot,
                     bit<32> ps0, bit<32> ps1, bit<32> ps2, bit<32> ps3,
                     bit<32> ps4, bit<32> ps5, bit<32> ps6, bit<32> ps7,
                     bit<32> first0, bit<32> first1, bit<32> first2, bit<32> first3,
                     bit<32> first4, bit<32> first5, bit<32> first6, bit<32> first7) {
        meta.prior.valid = 1;
        meta.prior.slot = slot;
        meta.prior.ps0 = ps0;
        meta.prior.ps1 = ps1;
        meta.prior.ps2 = ps2;
        meta.prior.ps3 = ps3;
        meta.prior.ps4 = ps4;
        meta.prior.ps5 = ps5;
        meta.prior.ps6 = ps6;
        meta.prior.ps7 = ps7;
        meta.prior.first0 = first0;
        meta.prior.first1 = first1;
        meta.prior.first2 = first2;
        meta.prior.first3 = first3;
        meta.prior.first4 = first4;
        meta.prior.first5 = first5;
        meta.prior.first6 = first6;
        meta.prior.first7 = first7;
    }

    action no_prior() {
        meta.prior.valid = 0;
    }

    /* The capacity prior of each multi-member path set: its slot in the
     * path_dre_* registers (slot < PATH_DRE_SLOTS / 8), each member's
     * end-to-end bottleneck rate as ps per byte (8000 / Gb/s; the slowest
     * link from this switch to the set's destination at its *operating*
     * rate, from port status) and the first position of each member's port.
     * No entry: ports' own utilisation only.  Size: PATH_PRIOR_SIZE. */
    table prior {
        key = {
            meta.route.path_set_id: exact;
        }
        actions = {
            set_prior;
            no_prior;
        }
        default_action = no_prior();
        size = PATH_PRIOR_SIZE;
    }

    apply {
        timestamp_t now = standard_metadata.ingress_global_timestamp;
        bit<3> rot = meta.flow.rot[2:0];
        bit<32> age = meta.cfg.qdelay_max_age_us;
        bit<4> n = meta.route.count;
        /* The DRE window this packet falls in (windows of 2^dre_shift us). */
        bit<32> now_win = (bit<32>)(now >> meta.cfg.dre_shift);
        bit<16> wu = meta.cfg.util_weight;
        bit<16> wq = meta.cfg.qdelay_weight;
        bit<16> wl = meta.cfg.level_weight;
        /* Queue state is per (port, queue): the queue this flow will use. */
        bit<32> q = (bit<32>)meta.qos.queue;
        bit<32> qi;
        bit<32> qdelay;
        timestamp_t stamp;
        bit<32> qin;
        bit<32> qout;
        timestamp_t pending;
        bit<32> dre;
        bit<32> dre_win;
        bit<32> pdre;
        bit<32> pwin;
        prior.apply();
        meta.path.rank0 = RANK_UNUSABLE;
        if (n > 0) {
            qi = ((bit<32>)meta.route.port0 << 3) | q;
            queue_qdelay_us.read(qdelay, qi);
            queue_depart_stamp.read(stamp, qi);
            queue_in.read(qin, qi);
            queue_out.read(qout, qi);
            queue_pending_since.read(pending, qi);
            port_dre_ps.read(dre, (bit<32>)meta.route.port0);
            port_dre_window.read(dre_win, (bit<32>)meta.route.port0);
            if (meta.prior.valid == 1) {
                path_dre_ps.read(pdre, (meta.prior.slot << 3) | meta.prior.first0);
                path_dre_window.read(pwin, (meta.prior.slot << 3) | meta.prior.first0);
                dre = member_util(pdre, pwin, now_win,
                                  standard_metadata.packet_length * meta.prior.ps0);
                dre_win = now_win;
            }
            meta.path.rank0 = member_rank(0, n, meta.path.alive0, meta.route.ecmp,
                suspect_score(meta.fb.suspect[0:0],
                    member_score(queue_delay(qdelay, stamp, qin - qout, pending, now, age),
                                 meta.route.level0, dre, dre_win, now_win, wu, wq, wl)), rot);
        }
        meta.path.rank1 = RANK_UNUSABLE;
        if (n > 1) {
            qi = ((bit<32>)meta.route.port1 << 3) | q;
            queue_qdelay_us.read(qdelay, qi);
            queue_depart_stamp.read(stamp, qi);
            queue_in.read(qin, qi);
            queue_out.read(qout, qi);
            queue_pending_since.read(pending, qi);
            port_dre_ps.read(dre, (bit<32>)meta.route.port1);
            port_dre_window.read(dre_win, (bit<32>)meta.route.port1);
            if (meta.prior.valid == 1) {
                path_dre_ps.read(pdre, (meta.prior.slot << 3) | meta.prior.first1);
                path_dre_window.read(pwin, (meta.prior.slot << 3) | meta.prior.first1);
                dre = member_util(pdre, pwin, now_win,
                                  standard_metadata.packet_length * meta.prior.ps1);
                dre_win = now_win;
            }
            meta.path.rank1 = member_rank(1, n, meta.path.alive1, meta.route.ecmp,
                suspect_score(meta.fb.suspect[1:1],
                    member_score(queue_delay(qdelay, stamp, qin - qout, pending, now, age),
                                 meta.route.level1, dre, dre_win, now_win, wu, wq, wl)), rot);
        }
        meta.path.rank2 = RANK_UNUSABLE;
        if (n > 2) {
            qi = ((bit<32>)meta.route.port2 << 3) | q;
            queue_qdelay_us.read(qdelay, qi);
            queue_depart_stamp.read(stamp, qi);
            queue_in.read(qin, qi);
            queue_out.read(qout, qi);
            queue_pending_since.read(pending, qi);
            port_dre_ps.read(dre, (bit<32>)meta.route.port2);
            port_dre_window.read(dre_win, (bit<32>)meta.route.port2);
            if (meta.prior.valid == 1) {
                path_dre_ps.read(pdre, (meta.prior.slot << 3) | meta.prior.first2);
                path_dre_window.read(pwin, (meta.prior.slot << 3) | meta.prior.first2);
                dre = member_util(pdre, pwin, now_win,
                                  standard_metadata.packet_length * meta.prior.ps2);
                dre_win = now_win;
            }
            meta.path.rank2 = member_rank(2, n, meta.path.alive2, meta.route.ecmp,
                suspect_score(meta.fb.suspect[2:2],
                    member_score(queue_delay(qdelay, stamp, qin - qout, pending, now, age),
                                 meta.route.level2, dre, dre_win, now_win, wu, wq, wl)), rot);
        }
        meta.path.rank3 = RANK_UNUSABLE;
        if (n > 3) {
            qi = ((bit<32>)meta.route.port3 << 3) | q;
            queue_qdelay_us.read(qdelay, qi);
            queue_depart_stamp.read(stamp, qi);
            queue_in.read(qin, qi);
            queue_out.read(qout, qi);
            queue_pending_since.read(pending, qi);
            port_dre_ps.read(dre, (bit<32>)meta.route.port3);
            port_dre_window.read(dre_win, (bit<32>)meta.route.port3);
            if (meta.prior.valid == 1) {
                path_dre_ps.read(pdre, (meta.prior.slot << 3) | meta.prior.first3);
                path_dre_window.read(pwin, (meta.prior.slot << 3) | meta.prior.first3);
                dre = member_util(pdre, pwin, now_win,
                                  standard_metadata.packet_length * meta.prior.ps3);
                dre_win = now_win;
            }
            meta.path.rank3 = member_rank(3, n, meta.path.alive3, meta.route.ecmp,
                suspect_score(meta.fb.suspect[3:3],
                    member_score(queue_delay(qdelay, stamp, qin - qout, pending, now, age),
                                 meta.route.level3, dre, dre_win, now_win, wu, wq, wl)), rot);
        }
        meta.path.rank4 = RANK_UNUSABLE;
        if (n > 4) {
            qi = ((bit<32>)meta.route.port4 << 3) | q;
            queue_qdelay_us.read(qdelay, qi);
            queue_depart_stamp.read(stamp, qi);
            queue_in.read(qin, qi);
            queue_out.read(qout, qi);
            queue_pending_since.read(pending, qi);
            port_dre_ps.read(dre, (bit<32>)meta.route.port4);
            port_dre_window.read(dre_win, (bit<32>)meta.route.port4);
            if (meta.prior.valid == 1) {
                path_dre_ps.read(pdre, (meta.prior.slot << 3) | meta.prior.first4);
                path_dre_window.read(pwin, (meta.prior.slot << 3) | meta.prior.first4);
                dre = member_util(pdre, pwin, now_win,
                                  standard_metadata.packet_length * meta.prior.ps4);
                dre_win = now_win;
            }
            meta.path.rank4 = member_rank(4, n, meta.path.alive4, meta.route.ecmp,
                suspect_score(meta.fb.suspect[4:4],
                    member_score(queue_delay(qdelay, stamp, qin - qout, pending, now, age),
                                 meta.route.level4, dre, dre_win, now_win, wu, wq, wl)), rot);
        }
        meta.path.rank5 = RANK_UNUSABLE;
        if (n > 5) {
            qi = ((bit<32>)meta.route.port5 << 3) | q;
            queue_qdelay_us.read(qdelay, qi);
            queue_depart_stamp.read(stamp, qi);
            queue_in.read(qin, qi);
            queue_out.read(qout, qi);
            queue_pending_since.read(pending, qi);
            port_dre_ps.read(dre, (bit<32>)meta.route.port5);
            port_dre_window.read(dre_win, (bit<32>)meta.route.port5);
            if (meta.prior.valid == 1) {
                path_dre_ps.read(pdre, (meta.prior.slot << 3) | meta.prior.first5);
                path_dre_window.read(pwin, (meta.prior.slot << 3) | meta.prior.first5);
                dre = member_util(pdre, pwin, now_win,
                                  standard_metadata.packet_length * meta.prior.ps5);
                dre_win = now_win;
            }
            meta.path.rank5 = member_rank(5, n, meta.path.alive5, meta.route.ecmp,
                suspect_score(meta.fb.suspect[5:5],
                    member_score(queue_delay(qdelay, stamp, qin - qout, pending, now, age),
                                 meta.route.level5, dre, dre_win, now_win, wu, wq, wl)), rot);
        }
        meta.path.rank6 = RANK_UNUSABLE;
        if (n > 6) {
            qi = ((bit<32>)meta.route.port6 << 3) | q;
            queue_qdelay_us.read(qdelay, qi);
            queue_depart_stamp.read(stamp, qi);
            queue_in.read(qin, qi);
            queue_out.read(qout, qi);
            queue_pending_since.read(pending, qi);
            port_dre_ps.read(dre, (bit<32>)meta.route.port6);
            port_dre_window.read(dre_win, (bit<32>)meta.route.port6);
            if (meta.prior.valid == 1) {
                path_dre_ps.read(pdre, (meta.prior.slot << 3) | meta.prior.first6);
                path_dre_window.read(pwin, (meta.prior.slot << 3) | meta.prior.first6);
                dre = member_util(pdre, pwin, now_win,
                                  standard_metadata.packet_length * meta.prior.ps6);
                dre_win = now_win;
            }
            meta.path.rank6 = member_rank(6, n, meta.path.alive6, meta.route.ecmp,
                suspect_score(meta.fb.suspect[6:6],
                    member_score(queue_delay(qdelay, stamp, qin - qout, pending, now, age),
                                 meta.route.level6, dre, dre_win, now_win, wu, wq, wl)), rot);
        }
        meta.path.rank7 = RANK_UNUSABLE;
        if (n > 7) {
            qi = ((bit<32>)meta.route.port7 << 3) | q;
            queue_qdelay_us.read(qdelay, qi);
            queue_depart_stamp.read(stamp, qi);
            queue_in.read(qin, qi);
            queue_out.read(qout, qi);
            queue_pending_since.read(pending, qi);
            port_dre_ps.read(dre, (bit<32>)meta.route.port7);
            port_dre_window.read(dre_win, (bit<32>)meta.route.port7);
            if (meta.prior.valid == 1) {
                path_dre_ps.read(pdre, (meta.prior.slot << 3) | meta.prior.first7);
                path_dre_window.read(pwin, (meta.prior.slot << 3) | meta.prior.first7);
                dre = member_util(pdre, pwin, now_win,
                                  standard_metadata.packet_length * meta.prior.ps7);
                dre_win = now_win;
            }
            meta.path.rank7 = member_rank(7, n, meta.path.alive7, meta.route.ecmp,
                suspect_score(meta.fb.suspect[7:7],
                    member_score(queue_delay(qdelay, stamp, qin - qout, pending, now, age),
                                 meta.route.level7, dre, dre_win, now_win, wu, wq, wl)), rot);
        }

        /* Best member: the lowest rank (ranks of usable members differ). */
        meta.path.best_rank = meta.path.rank0;
        meta.path.best_port = meta.route.port0;
        if (meta.path.rank1 < meta.path.best_rank) {
            meta.path.best_rank = meta.path.rank1;
            meta.path.best_port = meta.route.port1;
        }
        if (meta.path.rank2 < meta.path.best_rank) {
            meta.path.best_rank = meta.path.rank2;
            meta.path.best_port = meta.route.port2;
        }
        if (meta.path.rank3 < meta.path.best_rank) {
            meta.path.best_rank = meta.path.rank3;
            meta.path.best_port = meta.route.port3;
        }
        if (meta.path.rank4 < meta.path.best_rank) {
            meta.path.best_rank = meta.path.rank4;
            meta.path.best_port = meta.route.port4;
        }
        if (meta.path.rank5 < meta.path.best_rank) {
            meta.path.best_rank = meta.path.rank5;
            meta.path.best_port = meta.route.port5;
        }
        if (meta.path.rank6 < meta.path.best_rank) {
            meta.path.best_rank = meta.path.rank6;
            meta.path.best_port = meta.route.port6;
        }
        if (meta.path.rank7 < meta.path.best_rank) {
            meta.path.best_rank = meta.path.rank7;
            meta.path.best_port = meta.route.port7;
        }
        meta.path.best_score = meta.path.best_rank >> 3;

        /* Hash-only choice (for flows without state): the tiebreak bits of
         * the usable ranks, i.e. the first live member at or after rotation,
         * skipping silent members while another is left (hash_key): what
         * goes to a silent path is lost, so leaving it cannot reorder. */
        bit<32> hash_rank = RANK_UNUSABLE;
        bit<32> hk;
        hk = hash_key(meta.path.rank0, meta.fb.silent[0:0]);
        if (hk < hash_rank) {
            hash_rank = hk;
            meta.path.hash_port = meta.route.port0;
        }
        hk = hash_key(meta.path.rank1, meta.fb.silent[1:1]);
        if (hk < hash_rank) {
            hash_rank = hk;
            meta.path.hash_port = meta.route.port1;
        }
        hk = hash_key(meta.path.rank2, meta.fb.silent[2:2]);
        if (hk < hash_rank) {
            hash_rank = hk;
            meta.path.hash_port = meta.route.port2;
        }
        hk = hash_key(meta.path.rank3, meta.fb.silent[3:3]);
        if (hk < hash_rank) {
            hash_rank = hk;
            meta.path.hash_port = meta.route.port3;
        }
        hk = hash_key(meta.path.rank4, meta.fb.silent[4:4]);
        if (hk < hash_rank) {
            hash_rank = hk;
            meta.path.hash_port = meta.route.port4;
        }
        hk = hash_key(meta.path.rank5, meta.fb.silent[5:5]);
        if (hk < hash_rank) {
            hash_rank = hk;
            meta.path.hash_port = meta.route.port5;
        }
        hk = hash_key(meta.path.rank6, meta.fb.silent[6:6]);
        if (hk < hash_rank) {
            hash_rank = hk;
            meta.path.hash_port = meta.route.port6;
        }
        hk = hash_key(meta.path.rank7, meta.fb.silent[7:7]);
        if (hk < hash_rank) {
            hash_rank = hk;
            meta.path.hash_port = meta.route.port7;
        }

        /* The flow's current member, if its port is still in the set. */
        port_t cur = meta.flow.cur_port[8:0];
        meta.path.cur_member = 1;
        meta.path.cur_level = 0;
        meta.path.cur_measured = 0;
        meta.path.cur_fresh = 0;
        meta.path.cur_silent = 0;
        if (meta.flow.known == 0) {
            meta.path.cur_member = 0;
        } else if (n > 0 && meta.route.port0 == cur) {
            meta.path.cur_score = meta.path.rank0 >> 3;
            meta.path.cur_level = (bit<32>)meta.route.level0;
            meta.path.cur_measured = meta.route.measured[0:0];
            meta.path.cur_fresh = meta.fb.fresh[0:0];
            meta.path.cur_silent = meta.fb.silent[0:0];
            meta.path.cur_alive = meta.path.alive0;
        } else if (n > 1 && meta.route.port1 == cur) {
            meta.path.cur_score = meta.path.rank1 >> 3;
            meta.path.cur_level = (bit<32>)meta.route.level1;
            meta.path.cur_measured = meta.route.measured[1:1];
            meta.path.cur_fresh = meta.fb.fresh[1:1];
            meta.path.cur_silent = meta.fb.silent[1:1];
            meta.path.cur_alive = meta.path.alive1;
        } else if (n > 2 && meta.route.port2 == cur) {
            meta.path.cur_score = meta.path.rank2 >> 3;
            meta.path.cur_level = (bit<32>)meta.route.level2;
            meta.path.cur_measured = meta.route.measured[2:2];
            meta.path.cur_fresh = meta.fb.fresh[2:2];
            meta.path.cur_silent = meta.fb.silent[2:2];
            meta.path.cur_alive = meta.path.alive2;
        } else if (n > 3 && meta.route.port3 == cur) {
            meta.path.cur_score = meta.path.rank3 >> 3;
            meta.path.cur_level = (bit<32>)meta.route.level3;
            meta.path.cur_measured = meta.route.measured[3:3];
            meta.path.cur_fresh = meta.fb.fresh[3:3];
            meta.path.cur_silent = meta.fb.silent[3:3];
            meta.path.cur_alive = meta.path.alive3;
        } else if (n > 4 && meta.route.port4 == cur) {
            meta.path.cur_score = meta.path.rank4 >> 3;
            meta.path.cur_level = (bit<32>)meta.route.level4;
            meta.path.cur_measured = meta.route.measured[4:4];
            meta.path.cur_fresh = meta.fb.fresh[4:4];
            meta.path.cur_silent = meta.fb.silent[4:4];
            meta.path.cur_alive = meta.path.alive4;
        } else if (n > 5 && meta.route.port5 == cur) {
            meta.path.cur_score = meta.path.rank5 >> 3;
            meta.path.cur_level = (bit<32>)meta.route.level5;
            meta.path.cur_measured = meta.route.measured[5:5];
            meta.path.cur_fresh = meta.fb.fresh[5:5];
            meta.path.cur_silent = meta.fb.silent[5:5];
            meta.path.cur_alive = meta.path.alive5;
        } else if (n > 6 && meta.route.port6 == cur) {
            meta.path.cur_score = meta.path.rank6 >> 3;
            meta.path.cur_level = (bit<32>)meta.route.level6;
            meta.path.cur_measured = meta.route.measured[6:6];
            meta.path.cur_fresh = meta.fb.fresh[6:6];
            meta.path.cur_silent = meta.fb.silent[6:6];
            meta.path.cur_alive = meta.path.alive6;
        } else if (n > 7 && meta.route.port7 == cur) {
            meta.path.cur_score = meta.path.rank7 >> 3;
            meta.path.cur_level = (bit<32>)meta.route.level7;
            meta.path.cur_measured = meta.route.measured[7:7];
            meta.path.cur_fresh = meta.fb.fresh[7:7];
            meta.path.cur_silent = meta.fb.silent[7:7];
            meta.path.cur_alive = meta.path.alive7;
        } else {
            meta.path.cur_member = 0;
        }

        /* The best member on another port than the flow's current one: where
         * exploration (flowlet.p4, CHANGE_EXPLORE) goes. */
        meta.path.alt_rank = RANK_UNUSABLE;
        if (meta.route.port0 != cur && meta.path.rank0 < meta.path.alt_rank) {
            meta.path.alt_rank = meta.path.rank0;
            meta.path.alt_port = meta.route.port0;
        }
        if (meta.route.port1 != cur && meta.path.rank1 < meta.path.alt_rank) {
            meta.path.alt_rank = meta.path.rank1;
            meta.path.alt_port = meta.route.port1;
        }
        if (meta.route.port2 != cur && meta.path.rank2 < meta.path.alt_rank) {
            meta.path.alt_rank = meta.path.rank2;
            meta.path.alt_port = meta.route.port2;
        }
        if (meta.route.port3 != cur && meta.path.rank3 < meta.path.alt_rank) {
            meta.path.alt_rank = meta.path.rank3;
            meta.path.alt_port = meta.route.port3;
        }
        if (meta.route.port4 != cur && meta.path.rank4 < meta.path.alt_rank) {
            meta.path.alt_rank = meta.path.rank4;
            meta.path.alt_port = meta.route.port4;
        }
        if (meta.route.port5 != cur && meta.path.rank5 < meta.path.alt_rank) {
            meta.path.alt_rank = meta.path.rank5;
            meta.path.alt_port = meta.route.port5;
        }
        if (meta.route.port6 != cur && meta.path.rank6 < meta.path.alt_rank) {
            meta.path.alt_rank = meta.path.rank6;
            meta.path.alt_port = meta.route.port6;
        }
        if (meta.route.port7 != cur && meta.path.rank7 < meta.path.alt_rank) {
            meta.path.alt_rank = meta.path.rank7;
            meta.path.alt_port = meta.route.port7;
        }
    }
}

/*
 * Placement: the ingress half of the utilisation estimator.  Every forwarded
 * packet adds its time on the wire (bytes x ps per byte of the port's rate)
 * to its egress port's DRE, after decaying the DRE to the current window.
 */
control Placement(inout headers_t hdr,
                  inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {

    action set_rate(bit<32> ps_per_byte) {
        meta.path.ps_per_byte = ps_per_byte;
    }

    /* The operating rate of each egress port, as picoseconds per byte
     * (8000 / Gb/s: 100G = 80, 40G = 200): rendered from the fabric's
     * configured rate, rewritten by the controller from port status when a
     * link runs slower (Controller.port_rates).  Default: 100 Gb/s.
     * Size: PORT_SLOTS (one entry per port). */
    table port_rate {
        key = {
            standard_metadata.egress_spec: exact;
        }
        actions = {
            set_rate;
        }
        default_action = set_rate(DEFAULT_PS_PER_BYTE);
        size = PORT_SLOTS;
    }

    apply {
        port_rate.apply();
        bit<32> port = (bit<32>)standard_metadata.egress_spec;
        /* Stall detection: count the packet into its (port, queue); the
         * first one into an empty queue starts the wait (queue_pending_since). */
        bit<32> qi = (port << 3) | (bit<32>)meta.qos.queue;
        bit<32> qin;
        bit<32> qout;
        queue_in.read(qin, qi);
        queue_out.read(qout, qi);
        if (qin == qout) {
            queue_pending_since.write(qi, standard_metadata.ingress_global_timestamp);
        }
        queue_in.write(qi, qin + 1);
        bit<32> now_win = (bit<32>)(standard_metadata.ingress_global_timestamp >> meta.cfg.dre_shift);
        bit<32> dre;
        bit<32> dre_win;
        port_dre_ps.read(dre, port);
        port_dre_window.read(dre_win, port);
        dre = dre_decay(dre, now_win - dre_win);
        bit<32> add = standard_metadata.packet_length * meta.path.ps_per_byte;
        if (dre + add < dre) {
            dre = 0xFFFFFFFF;
        } else {
            dre = dre + add;
        }
        port_dre_ps.write(port, dre);
        port_dre_window.write(port, now_win);
        /* The chosen member's first position (path feedback, the prior) and
         * its bottleneck rate. */
        port_t chosen = standard_metadata.egress_spec;
        bit<32> pos = 0;
        bit<32> ps = meta.prior.ps0;
        if (meta.route.port0 == chosen) {
            pos = 0;
        } else if (meta.route.port1 == chosen) {
            pos = 1;
            ps = meta.prior.ps1;
        } else if (meta.route.port2 == chosen) {
            pos = 2;
            ps = meta.prior.ps2;
        } else if (meta.route.port3 == chosen) {
            pos = 3;
            ps = meta.prior.ps3;
        } else if (meta.route.port4 == chosen) {
            pos = 4;
            ps = meta.prior.ps4;
        } else if (meta.route.port5 == chosen) {
            pos = 5;
            ps = meta.prior.ps5;
        } else if (meta.route.port6 == chosen) {
            pos = 6;
            ps = meta.prior.ps6;
        } else if (meta.route.port7 == chosen) {
            pos = 7;
            ps = meta.prior.ps7;
        } else {
            ps = 0;
        }
        meta.path.chosen_pos = (bit<3>)pos;
        if (meta.prior.valid == 1) {
            bit<32> pi = (meta.prior.slot << 3) | pos;
            bit<32> pdre;
            bit<32> pwin;
            path_dre_ps.read(pdre, pi);
            path_dre_window.read(pwin, pi);
            pdre = dre_decay(pdre, now_win - pwin);
            bit<32> padd = standard_metadata.packet_length * ps;
            if (pdre + padd < pdre) {
                pdre = 0xFFFFFFFF;
            } else {
                pdre = pdre + padd;
            }
            path_dre_ps.write(pi, pdre);
            path_dre_window.write(pi, now_win);
        }
    }
}

control QdelayRecord(inout headers_t hdr,
                     inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    apply {
        /* Egress half: each (port, queue)'s latest departure for ingress:
         * its queue delay and when it left; and the packet counted out.  A
         * departure that leaves the queue empty (deq_qdepth 0) sets the out
         * count to the in count, which forgets packets the traffic manager
         * tail-dropped (counted in, never out). */
        bit<32> qi = ((bit<32>)standard_metadata.egress_port << 3) | (bit<32>)meta.qos.queue;
        queue_qdelay_us.write(qi, standard_metadata.deq_timedelta);
        queue_depart_stamp.write(qi, standard_metadata.egress_global_timestamp);
        bit<32> qout;
        if (standard_metadata.deq_qdepth == 0) {
            queue_in.read(qout, qi);
        } else {
            queue_out.read(qout, qi);
            qout = qout + 1;
        }
        queue_out.write(qi, qout);
    }
}

#endif  /* _STELLAR_CONTROL_PATH_CHOICE_P4_ */
