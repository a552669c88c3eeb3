/*
 * path_choice.p4 -- congestion-aware choice among a path set's members.
 *
 * Each member's rank (functions.p4: member_score, member_rank) combines,
 * with the controller's weights (config.params util/qdelay/level_weight),
 *   (a) the port's utilisation: a CONGA-style DRE (port_dre_ps), the time
 *       on the wire of the bytes recently *assigned* to the port, updated by
 *       the Placement control for every forwarded packet and halved every
 *       2^dre_shift us, normalised by the port's configured rate
 *       (placement.port_rate).  Because it moves on assignment, not on
 *       departure, flows that start in the same microsecond see each other;
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
            meta.path.rank0 = member_rank(0, n, meta.path.alive0, meta.route.ecmp,
                member_score(queue_delay(qdelay, stamp, qin - qout, pending, now, age),
                             meta.route.level0, dre, dre_win, now_win, wu, wq, wl), rot);
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
            meta.path.rank1 = member_rank(1, n, meta.path.alive1, meta.route.ecmp,
                member_score(queue_delay(qdelay, stamp, qin - qout, pending, now, age),
                             meta.route.level1, dre, dre_win, now_win, wu, wq, wl), rot);
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
            meta.path.rank2 = member_rank(2, n, meta.path.alive2, meta.route.ecmp,
                member_score(queue_delay(qdelay, stamp, qin - qout, pending, now, age),
                             meta.route.level2, dre, dre_win, now_win, wu, wq, wl), rot);
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
            meta.path.rank3 = member_rank(3, n, meta.path.alive3, meta.route.ecmp,
                member_score(queue_delay(qdelay, stamp, qin - qout, pending, now, age),
                             meta.route.level3, dre, dre_win, now_win, wu, wq, wl), rot);
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
            meta.path.rank4 = member_rank(4, n, meta.path.alive4, meta.route.ecmp,
                member_score(queue_delay(qdelay, stamp, qin - qout, pending, now, age),
                             meta.route.level4, dre, dre_win, now_win, wu, wq, wl), rot);
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
            meta.path.rank5 = member_rank(5, n, meta.path.alive5, meta.route.ecmp,
                member_score(queue_delay(qdelay, stamp, qin - qout, pending, now, age),
                             meta.route.level5, dre, dre_win, now_win, wu, wq, wl), rot);
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
            meta.path.rank6 = member_rank(6, n, meta.path.alive6, meta.route.ecmp,
                member_score(queue_delay(qdelay, stamp, qin - qout, pending, now, age),
                             meta.route.level6, dre, dre_win, now_win, wu, wq, wl), rot);
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
            meta.path.rank7 = member_rank(7, n, meta.path.alive7, meta.route.ecmp,
                member_score(queue_delay(qdelay, stamp, qin - qout, pending, now, age),
                             meta.route.level7, dre, dre_win, now_win, wu, wq, wl), rot);
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
         * the usable ranks, i.e. the first live member at or after rotation. */
        bit<32> hash_rank = RANK_UNUSABLE;
        if (meta.path.rank0 != RANK_UNUSABLE && (meta.path.rank0 & 7) < hash_rank) {
            hash_rank = meta.path.rank0 & 7;
            meta.path.hash_port = meta.route.port0;
        }
        if (meta.path.rank1 != RANK_UNUSABLE && (meta.path.rank1 & 7) < hash_rank) {
            hash_rank = meta.path.rank1 & 7;
            meta.path.hash_port = meta.route.port1;
        }
        if (meta.path.rank2 != RANK_UNUSABLE && (meta.path.rank2 & 7) < hash_rank) {
            hash_rank = meta.path.rank2 & 7;
            meta.path.hash_port = meta.route.port2;
        }
        if (meta.path.rank3 != RANK_UNUSABLE && (meta.path.rank3 & 7) < hash_rank) {
            hash_rank = meta.path.rank3 & 7;
            meta.path.hash_port = meta.route.port3;
        }
        if (meta.path.rank4 != RANK_UNUSABLE && (meta.path.rank4 & 7) < hash_rank) {
            hash_rank = meta.path.rank4 & 7;
            meta.path.hash_port = meta.route.port4;
        }
        if (meta.path.rank5 != RANK_UNUSABLE && (meta.path.rank5 & 7) < hash_rank) {
            hash_rank = meta.path.rank5 & 7;
            meta.path.hash_port = meta.route.port5;
        }
        if (meta.path.rank6 != RANK_UNUSABLE && (meta.path.rank6 & 7) < hash_rank) {
            hash_rank = meta.path.rank6 & 7;
            meta.path.hash_port = meta.route.port6;
        }
        if (meta.path.rank7 != RANK_UNUSABLE && (meta.path.rank7 & 7) < hash_rank) {
            hash_rank = meta.path.rank7 & 7;
            meta.path.hash_port = meta.route.port7;
        }

        /* The flow's current member, if its port is still in the set. */
        port_t cur = meta.flow.cur_port[8:0];
        meta.path.cur_member = 1;
        meta.path.cur_level = 0;
        meta.path.cur_measured = 0;
        if (meta.flow.known == 0) {
            meta.path.cur_member = 0;
        } else if (n > 0 && meta.route.port0 == cur) {
            meta.path.cur_score = meta.path.rank0 >> 3;
            meta.path.cur_level = (bit<32>)meta.route.level0;
            meta.path.cur_measured = meta.route.measured[0:0];
            meta.path.cur_alive = meta.path.alive0;
        } else if (n > 1 && meta.route.port1 == cur) {
            meta.path.cur_score = meta.path.rank1 >> 3;
            meta.path.cur_level = (bit<32>)meta.route.level1;
            meta.path.cur_measured = meta.route.measured[1:1];
            meta.path.cur_alive = meta.path.alive1;
        } else if (n > 2 && meta.route.port2 == cur) {
            meta.path.cur_score = meta.path.rank2 >> 3;
            meta.path.cur_level = (bit<32>)meta.route.level2;
            meta.path.cur_measured = meta.route.measured[2:2];
            meta.path.cur_alive = meta.path.alive2;
        } else if (n > 3 && meta.route.port3 == cur) {
            meta.path.cur_score = meta.path.rank3 >> 3;
            meta.path.cur_level = (bit<32>)meta.route.level3;
            meta.path.cur_measured = meta.route.measured[3:3];
            meta.path.cur_alive = meta.path.alive3;
        } else if (n > 4 && meta.route.port4 == cur) {
            meta.path.cur_score = meta.path.rank4 >> 3;
            meta.path.cur_level = (bit<32>)meta.route.level4;
            meta.path.cur_measured = meta.route.measured[4:4];
            meta.path.cur_alive = meta.path.alive4;
        } else if (n > 5 && meta.route.port5 == cur) {
            meta.path.cur_score = meta.path.rank5 >> 3;
            meta.path.cur_level = (bit<32>)meta.route.level5;
            meta.path.cur_measured = meta.route.measured[5:5];
            meta.path.cur_alive = meta.path.alive5;
        } else if (n > 6 && meta.route.port6 == cur) {
            meta.path.cur_score = meta.path.rank6 >> 3;
            meta.path.cur_level = (bit<32>)meta.route.level6;
            meta.path.cur_measured = meta.route.measured[6:6];
            meta.path.cur_alive = meta.path.alive6;
        } else if (n > 7 && meta.route.port7 == cur) {
            meta.path.cur_score = meta.path.rank7 >> 3;
            meta.path.cur_level = (bit<32>)meta.route.level7;
            meta.path.cur_measured = meta.route.measured[7:7];
            meta.path.cur_alive = meta.path.alive7;
        } else {
            meta.path.cur_member = 0;
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

    /* The configured rate of each egress port, as picoseconds per byte
     * (8000 / Gb/s: 100G = 80, 40G = 200).  Default: 100 Gb/s.
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
