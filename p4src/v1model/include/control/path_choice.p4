/*
 * path_choice.p4 -- congestion-aware choice among a path set's members.
 *
 * Each member's rank (functions.p4: member_rank) combines
 *   (a) the queue delay its port showed the egress pipeline last
 *       (port_qdelay_us, written by QueueDelayRecord below; a port with no
 *       departure for config.qdelay_max_age_us counts as idle),
 *   (b) the controller's congestion level for that member (routing.path_set),
 *   (c) liveness (failover.p4),
 * with ties shared out by flow hash.  In ECMP mode only liveness and the hash
 * count.  PathChoice finds the best member and the flow's current member;
 * flowlet.p4 decides whether the flow uses the best one.
 */
#ifndef _STELLAR_PATH_CHOICE_P4_
#define _STELLAR_PATH_CHOICE_P4_

/* The rank of one member (one instance per member position). */
control MemberRank(in port_t port,
                   in bit<16> level,
                   in bit<1> alive,
                   in bit<4> position,
                   in bit<4> count,
                   in bit<1> ecmp,
                   in bit<3> rotation,
                   in timestamp_t now,
                   in bit<32> max_age_us,
                   out bit<32> rank) {
    apply {
        bit<1> present = 0;
        bit<32> qdelay = 0;
        if (position < count) {
            present = 1;
            timestamp_t stamp;
            port_qdelay_us.read(qdelay, (bit<32>)port);
            port_qdelay_stamp.read(stamp, (bit<32>)port);
            /* Nothing left the port for a while: its queue is empty. */
            if (now > stamp && now - stamp > (timestamp_t)max_age_us) {
                qdelay = 0;
            }
        }
        rank = member_rank(present, alive, ecmp, qdelay, level, position[2:0], rotation);
    }
}

control PathChoice(inout metadata_t meta,
                   in standard_metadata_t standard_metadata) {
    MemberRank() member0;
    MemberRank() member1;
    MemberRank() member2;
    MemberRank() member3;
    MemberRank() member4;
    MemberRank() member5;
    MemberRank() member6;
    MemberRank() member7;

    apply {
        timestamp_t now = standard_metadata.ingress_global_timestamp;
        bit<3> rot = meta.flow.rot[2:0];
        bit<32> age = meta.cfg.qdelay_max_age_us;
        member0.apply(meta.route.port0, meta.route.level0, meta.path.alive0, 0,
                      meta.route.count, meta.route.ecmp, rot, now, age, meta.path.rank0);
        member1.apply(meta.route.port1, meta.route.level1, meta.path.alive1, 1,
                      meta.route.count, meta.route.ecmp, rot, now, age, meta.path.rank1);
        member2.apply(meta.route.port2, meta.route.level2, meta.path.alive2, 2,
                      meta.route.count, meta.route.ecmp, rot, now, age, meta.path.rank2);
        member3.apply(meta.route.port3, meta.route.level3, meta.path.alive3, 3,
                      meta.route.count, meta.route.ecmp, rot, now, age, meta.path.rank3);
        member4.apply(meta.route.port4, meta.route.level4, meta.path.alive4, 4,
                      meta.route.count, meta.route.ecmp, rot, now, age, meta.path.rank4);
        member5.apply(meta.route.port5, meta.route.level5, meta.path.alive5, 5,
                      meta.route.count, meta.route.ecmp, rot, now, age, meta.path.rank5);
        member6.apply(meta.route.port6, meta.route.level6, meta.path.alive6, 6,
                      meta.route.count, meta.route.ecmp, rot, now, age, meta.path.rank6);
        member7.apply(meta.route.port7, meta.route.level7, meta.path.alive7, 7,
                      meta.route.count, meta.route.ecmp, rot, now, age, meta.path.rank7);

        /* Best member: the lowest rank (ranks of usable members are distinct). */
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

        /* The flow's current member, if its port is still in the set. */
        port_t cur = meta.flow.cur_port[8:0];
        bit<4> n = meta.route.count;
        meta.path.cur_member = 1;
        if (meta.flow.known == 0) {
            meta.path.cur_member = 0;
        } else if (n > 0 && meta.route.port0 == cur) {
            meta.path.cur_score = meta.path.rank0 >> 3;
        } else if (n > 1 && meta.route.port1 == cur) {
            meta.path.cur_score = meta.path.rank1 >> 3;
        } else if (n > 2 && meta.route.port2 == cur) {
            meta.path.cur_score = meta.path.rank2 >> 3;
        } else if (n > 3 && meta.route.port3 == cur) {
            meta.path.cur_score = meta.path.rank3 >> 3;
        } else if (n > 4 && meta.route.port4 == cur) {
            meta.path.cur_score = meta.path.rank4 >> 3;
        } else if (n > 5 && meta.route.port5 == cur) {
            meta.path.cur_score = meta.path.rank5 >> 3;
        } else if (n > 6 && meta.route.port6 == cur) {
            meta.path.cur_score = meta.path.rank6 >> 3;
        } else if (n > 7 && meta.route.port7 == cur) {
            meta.path.cur_score = meta.path.rank7 >> 3;
        } else {
            meta.path.cur_member = 0;
        }
    }
}

/* Egress half: remember each port's latest queue delay for ingress. */
control QueueDelayRecord(in standard_metadata_t standard_metadata) {
    apply {
        port_qdelay_us.write((bit<32>)standard_metadata.egress_port,
                             standard_metadata.deq_timedelta);
        port_qdelay_stamp.write((bit<32>)standard_metadata.egress_port,
                                standard_metadata.egress_global_timestamp);
    }
}

#endif  /* _STELLAR_PATH_CHOICE_P4_ */
