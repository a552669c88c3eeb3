/*
 * metadata.p4 (TNA) -- per-packet metadata of the Tofino program.  Ingress
 * and egress have their own structs: on Tofino nothing crosses from one to
 * the other except what the bridged header carries.
 */
#ifndef _STELLAR_TNA_METADATA_P4_
#define _STELLAR_TNA_METADATA_P4_

/* The DRE's per-member scores s_k and packed {score, member} p_k (dre.p4),
 * in metadata so that each step stays in its own table action (bf-p4c). */
struct dre_scores_t {
    bit<16> s0; bit<16> s1; bit<16> s2; bit<16> s3;
    bit<16> s4; bit<16> s5; bit<16> s6; bit<16> s7;
}

struct tna_ingress_metadata_t {
    dre_scores_t dre_score;
    resubmit_h resub;        /* valid on a resubmitted pass (drain test or DRE choice) */
    bit<2>   kind;           /* KIND_DATA / KIND_FEEDBACK / KIND_PORT_DOWN */
    bit<1>   drop;           /* sanity, TTL, no live member, no path set (and, in
                              * `finish`, no route and red): one writer per stage */
    bit<1>   no_route;       /* routing.lpm missed (its own flag: lpm runs beside
                              * the sanity checks, which write `drop`) */
    bit<8>   drop_reason;
    bit<8>   malformed;      /* MALFORMED_* */
    bit<1>   ipv4_options;   /* IHL > 5: options left in the payload */
    bit<16>  ipv4_residual;  /* the checksum of what ingress does not change */
    /* routing */
    group_t  group;
    bit<4>   count;          /* members in the group */
    bit<1>   reserved;       /* routing.reservation hit: its group replaces the route's */
    group_t  resv_group;
    bit<4>   resv_count;
    prior_t  prior;          /* the destination's capacity prior (dre.level<k>'s rows) */
    prior_t  resv_prior;
    bit<1>   down_hit;       /* failover.port_member hit (a port-down packet) */
    /* the flow key's one CRC-32, sliced (see flowlet.p4) */
    bit<32>  flow_hash;
    bit<1>   is_roce;
    /* path choice */
    member_t best;           /* the group's best member (feedback) */
    member_t hashed;         /* the flow hash's member (stable, ECMP) */
    member_t chosen;
    /* a feedback packet's port as (group, member), in fields of their own:
     * written into group/chosen, they tied path_choice.port_member to the
     * data packets' writers of those fields (routing, flowlet.decide) by
     * output dependences, one more step in bf-p4c's chain */
    group_t  fb_group;
    member_t fb_member;
    bit<1>   fb_hit;         /* path_choice.port_member hit (a feedback packet) */
    bit<1>   fb_remote;      /* the feedback packet carries another leaf's path report (parser) */
    bit<1>   resub_pass;     /* a second pass (parser) */
    bit<1>   hot;            /* the host pair keeps receiving CNPs (pressure.p4) */
    bit<1>   resend;         /* a data packet not ahead of its flow's highest PSN (restart.p4) */
    bit<16>  best_raw;       /* path_choice.group_best's member field: the member, or bit 8 = none */
    bit<16>  hashed16;       /* the hash member, 16 bits wide (flowlet's offer) */
    bit<8>   alive;          /* bitmap of the group's live members */
    bit<8>   silent;         /* bitmap of the group's members whose path went silent */
    bit<8>   dead;           /* ... whose path a destination leaf reported dead, lately */
    bit<8>   live;           /* alive less dead */
    bit<1>   chosen_alive;
    /* liveness of the candidates, tested before the flowlet decision
     * (failover.p4's Liveness), which copies the chosen one's into chosen_alive */
    bit<1>   best_alive;
    bit<1>   hashed_alive;
    bit<1>   cur_alive;      /* resub.cur's (a second pass) */
    bit<1>   first_alive;    /* some member of the group is up ... */
    member_t first_member;   /* ... and this is the lowest */
    bit<8>   ctl_measured;   /* dre_base.levels: bit k set when member k's level was measured */
    bit<8>   change_reason;  /* CHANGE_* or 0xFF = no change */
    bit<1>   feedback_known; /* some member of the group has reported a delay */
    bit<1>   choose;         /* a new flow or a gap: the DRE chooses (dre.p4) */
    bit<1>   drain_test;     /* this pass asks for a drain-test pass: its bytes count there */
    bit<1>   move_refused;   /* a gap or drain move off an unmeasured member was refused (dre.p4) */
    bit<1>   is_new;
    member_t old;            /* a gap's member before the gap */
    bit<16>  prev_ts;        /* a gap: the slot's previous arrival (64 ns units) for the drain test */
    bit<16>  dre_penalty_tie; /* dre_penalty + the tie bit (dre.p4's score) */
    bit<16>  dre_penalty;    /* params' dre_delay_penalty (written x16) */
    PortId_t port;
    /* qos / elephant */
    bit<2>   traffic_class;
    tenant_id_t tenant;
    bit<8>   colour;
    bit<1>   red;            /* policed: dropped at the end of ingress (stellar.p4) */
    bit<1>   elephant;
    bit<5>   qid;            /* low 5 bits of the queue (queueing) */
    bit<32>  row0;
    bit<32>  row1;
    bit<32>  l4;             /* the flow key's L4 part: dest QP, or source|dest port */
    bit<1>   hint_elephant;
    bit<1>   hint_mouse;
    bit<1>   eleph_report;   /* the sketch classified the flow in this packet: digest */
    bit<32>  eleph_bytes;    /* the sketch's estimate (the smaller row) */
    tstamp32_t now;
    tstamp32_t stamp;        /* now | 1: a flow slot's arrival (0 = never) */
    bit<16>  stamp16;        /* now >> 6 (64 ns units): the bridged arrival stamp */
    bit<32>  dre_win;        /* now >> 14: the DRE window */
    bit<32>  sketch_win;     /* now >> 20: the sketch window */
}

struct tna_egress_metadata_t {
    bit<1>   feedback_copy;  /* this is the mirrored feedback packet */
    MirrorId_t mirror_session;   /* MIRROR_SESSION_FEEDBACK, for the deparser */
    bit<8>   mirror_pkt_type;    /* PKT_FEEDBACK, for the deparser */
    bit<1>   ipv4_options;
    bit<16>  ipv4_residual;  /* the checksum of what egress does not change */
    bit<32>  qdelay_ns;
    bit<16>  qdelay_8ns;     /* the queue delay in 8 ns units, 0xFFFF at and above 524 us: the
                              * range-match key (bf-p4c ranges take at most 4 nibbles) */
    bit<16>  ingress_ts;     /* from the bridged header (removed before the deparser) */
    bit<16>  mark_prob;      /* P(mark) in 1/65536 from ecn.prob */
    bit<16>  rand;
    bit<16>  mark_gap;       /* mark_prob |-| rand (non-zero iff rand < mark_prob), 1 for a row of 0xFFFF */
    bit<1>   regressed;
    bit<1>   bth_data;       /* a RoCE data packet (reorder.p4's opcode rows) */
    bit<32>  flow_crc;       /* CRC-32 of (src, dst, dest QP): reorder.p4's slot and signature */
    /* a tag's (path_feedback.p4): its (destination leaf, path) index, for path_loss.p4 */
    bit<1>   fb_tag;
    bit<11>  fb_index;
    /* the feedback copy's content (the deparser's mirror field list) */
    PortId_t report_port;
    bit<32>  report_delay_ns;
    bit<1>   report_remote;
    bit<1>   report_silent;
    bit<16>  report_downstream_x2;
}

/* Reported (Digest) when the sketch first classifies a flow as an elephant
 * in a window; the fields of the v1model program's digest. */
struct elephant_digest_t {
    bit<32> src_addr;
    bit<32> dst_addr;
    bit<8>  protocol;
    bit<32> l4_id;
    bit<32> bytes;
}

#endif  /* _STELLAR_TNA_METADATA_P4_ */
