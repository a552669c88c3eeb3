/*
 * metadata.p4 -- Stellar's user metadata and digest structs.
 *
 * Grouped by the block that fills them.  v1model carries user metadata from
 * ingress to egress unchanged, which is how egress learns the flow slot and
 * sequence number of a departing packet (drain detection).
 */
#ifndef _STELLAR_METADATA_P4_
#define _STELLAR_METADATA_P4_

#include "define.p4"

/* Switch-wide parameters, copied from StellarIngress.config.params. */
struct config_md_t {
    bit<32> flowlet_timeout_us;
    bit<32> drain_margin_us;
    bit<32> hysteresis_us;
    bit<1>  gap_moves;
    bit<1>  drain_moves;
    bit<32> qdelay_max_age_us;
    bit<32> elephant_bytes;
    bit<32> elephant_window_us;
    bit<32> elephant_idle_us;
    bit<1>  malformed_l4_forward;
    bit<1>  report_path_changes;
    bit<4>  order_guards;       /* ORDER_GUARD_* bits (define.p4) */
    bit<8>  dre_shift;          /* DRE window = 2^dre_shift us */
    bit<16> util_weight;        /* path-choice weights, WEIGHT_ONE = 1.0 */
    bit<16> qdelay_weight;
    bit<16> level_weight;
}

/* Adaptation parameters, copied from StellarIngress.config.adapt. */
struct adapt_md_t {
    bit<1>  drain_any;
    bit<4>  move_guards;        /* MOVE_GUARD_* bits (define.p4) */
    bit<32> explore_signals;
    bit<32> explore_window_us;
}

/* Congestion signals of the packet's host pair (StellarIngress.pressure). */
struct pressure_md_t {
    bit<32> slot;               /* index of the forward direction (src, dst) */
    bit<1>  hot;                /* >= explore_signals within explore_window_us */
}

/* Path feedback (StellarIngress.feedback_lookup / feedback). */
struct fb_md_t {
    bit<1>  enabled;
    bit<8>  leaf_id;            /* this switch's leaf id */
    bit<32> max_age_us;
    bit<32> suspect_silence_us;
    bit<32> retx_threshold;
    bit<32> retx_window_us;
    bit<32> suspect_hold_us;
    bit<1>  dest_known;         /* the destination is behind another leaf */
    bit<8>  dest_leaf;
    bit<1>  fabric_port;        /* the egress port faces a switch */
    bit<1>  tagged_in;          /* the packet arrived with the shim */
    bit<1>  raise;              /* egress raises the shim's congestion */
    bit<8>  suspect;            /* bit i: member i of this destination is suspect */
    bit<8>  silent;             /* bit i: ... because its feedback stopped (dead path) */
    bit<8>  fresh;              /* bit i: member i's level is fresh feedback */
    bit<1>  restart;            /* a data packet of a tracked flow whose PSN is
                                 * not ahead of the flow's highest: its sender
                                 * went back (go-back-N) and resends from here */
    bit<32> sent_top;           /* PSN_SLOT_VALID | the flow's highest data
                                 * PSN before this packet (0: none known) */
    bit<1>  restart_here;       /* a restart whose PSN was first sent on the
                                 * path it takes now (FeedbackTag counts it) */
}

/* What this leaf heard from another leaf (feedback.p4 path_silent): the last
 * arrival and the start of the current run of its packets, and the run
 * before it. */
struct talk_t {
    timestamp_t heard;
    timestamp_t since;
    timestamp_t prev_heard;
    timestamp_t prev_since;
    timestamp_t answered;       /* its last answer for any of this leaf's paths */
}

/* Routing result: the path set and its members. */
struct route_md_t {
    path_set_id_t path_set_id;
    bit<4>  count;
    bit<1>  ecmp;
    port_t  port0;
    port_t  port1;
    port_t  port2;
    port_t  port3;
    port_t  port4;
    port_t  port5;
    port_t  port6;
    port_t  port7;
    bit<16> level0;
    bit<16> level1;
    bit<16> level2;
    bit<16> level3;
    bit<16> level4;
    bit<16> level5;
    bit<16> level6;
    bit<16> level7;
    bit<8>  measured;           /* bit i: level i comes from a measurement (else unknown, not 0) */
}

/* Capacity prior of the packet's path set (StellarIngress.path_choice.prior):
 * the set's prior slot and each member's end-to-end bottleneck rate as ps per
 * byte (0: no prior for that member). */
struct prior_md_t {
    bit<1>  valid;
    bit<32> slot;
    bit<32> ps0;
    bit<32> ps1;
    bit<32> ps2;
    bit<32> ps3;
    bit<32> ps4;
    bit<32> ps5;
    bit<32> ps6;
    bit<32> ps7;
    bit<32> first0;             /* first position holding member i's port (repeated members share one estimate) */
    bit<32> first1;
    bit<32> first2;
    bit<32> first3;
    bit<32> first4;
    bit<32> first5;
    bit<32> first6;
    bit<32> first7;
}

/* Flow identity and the flow's stored state. */
struct flow_md_t {
    bit<1>      is_roce;
    bit<8>      protocol;
    bit<32>     l4_id;          /* dest QP (RoCE) | sport++dport | 0 */
    bit<32>     slot;           /* index into the flow_* registers */
    bit<32>     sig;            /* FLOW_SIG_VALID | crc16(flow key) */
    bit<32>     rot_seed;       /* crc32(flow key) mod 65521 */
    bit<32>     rot;            /* rot_seed mod member count */
    bit<1>      known;          /* slot holds this flow */
    bit<1>      slot_busy;      /* slot held by another flow active within the flowlet timeout */
    bit<16>     cur_port;       /* stored current port (if known) */
    timestamp_t last_arrival;
    timestamp_t gap_us;         /* now - last_arrival (if known) */
    bit<32>     last_seq;
    bit<32>     departed_seq;
    timestamp_t departed_stamp;
    bit<8>      status;         /* FLOW_STATE_* bits (register flow_state) */
    bit<1>      elephant;
    bit<32>     seq;            /* sequence number of this packet */
    bit<1>      tracked;        /* egress records this packet's departure */
    bit<1>      untracked;      /* forwarded by hash for a busy slot: egress counts it out */
    bit<32>     untracked_in;   /* the slot's untracked packets forwarded / departed */
    bit<32>     untracked_out;
}

/* Path choice: liveness, ranks, best member, current member. */
struct path_md_t {
    bit<1>  alive0;             /* member i's port is up */
    bit<1>  alive1;
    bit<1>  alive2;
    bit<1>  alive3;
    bit<1>  alive4;
    bit<1>  alive5;
    bit<1>  alive6;
    bit<1>  alive7;
    bit<1>  cur_alive;          /* the flow's current port is up */
    bit<1>  down;               /* scratch: the liveness table just applied said down */
    bit<32> rank0;
    bit<32> rank1;
    bit<32> rank2;
    bit<32> rank3;
    bit<32> rank4;
    bit<32> rank5;
    bit<32> rank6;
    bit<32> rank7;
    bit<32> best_rank;
    port_t  best_port;
    port_t  hash_port;          /* plain hash choice among live members (untracked flows) */
    bit<32> best_score;
    bit<32> alt_rank;           /* best member on another port than the flow's current one */
    port_t  alt_port;
    bit<3>  chosen_pos;         /* first position of the chosen port in the set */
    bit<1>  cur_member;         /* the current port is in the path set */
    bit<32> cur_score;
    bit<32> cur_level;          /* controller level of the current member: remote queue delay (us) */
    bit<1>  cur_measured;       /* ... and that level was measured (0: unknown, no drain proof) */
    bit<1>  cur_fresh;          /* ... by fresh path feedback (the margin is that delay) */
    bit<1>  cur_silent;         /* the current member's path went silent (feedback.p4) */
    port_t  chosen_port;
    bit<1>  changed;
    bit<8>  change_reason;
    bit<32> ps_per_byte;        /* the chosen port's rate (placement.port_rate) */
}

/* Elephant detection scratch (hash indices and sketch reads). */
struct elephant_md_t {
    bit<32> row0_index;
    bit<32> row1_index;
    bit<32> bytes_estimate;
    bit<1>  hint_elephant;
    bit<1>  hint_mouse;
    bit<1>  report;             /* send elephant_digest_t for this packet */
}

/* Egress ECN parameters of the packet's port (StellarEgress.ecn.config). */
struct ecn_md_t {
    bit<1>  enabled;
    bit<32> window_us;
    bit<32> target_us;
    bit<32> kmin_us;
    bit<32> kmax_us;
    bit<32> k_init_us;
    bit<32> step_us;
    bit<32> pmax;
    bit<32> idle_bytes;
    bit<1>  adapt;
    bit<32> kfloor_bytes;       /* StellarEgress.ecn.floor */
    bit<32> rand;               /* random(0..65535) for the marking ramp */
}

struct qos_md_t {
    traffic_class_t traffic_class;
    bit<1>          yellow;     /* tenant meter said YELLOW for this packet */
    tenant_id_t     tenant;
    bit<2>          colour;
    queue_t         queue;
}

/* Reported when the sketch first classifies a flow as an elephant. */
struct elephant_digest_t {
    bit<32> src_addr;
    bit<32> dst_addr;
    bit<8>  protocol;
    bit<32> l4_id;
    bit<32> bytes;
}

/* Reported on a path change when config.report_path_changes is set. */
struct path_change_digest_t {
    bit<32> src_addr;
    bit<32> dst_addr;
    bit<8>  protocol;
    bit<32> l4_id;
    bit<16> old_port;
    bit<16> new_port;
    bit<8>  reason;
}

struct metadata_t {
    config_md_t   cfg;
    adapt_md_t    adapt;
    pressure_md_t pressure;
    fb_md_t       fb;
    route_md_t    route;
    prior_md_t    prior;
    flow_md_t     flow;
    path_md_t     path;
    elephant_md_t eleph;
    qos_md_t      qos;
    ecn_md_t      ecn;
    bit<32>       reorder_slot;
    bit<32>       reorder_sig;
    bit<1>        ipv4_complete;  /* parser reached L4 (options all read) */
    bit<1>        drop;
    bit<8>        drop_reason;
    bit<8>        malformed;
    elephant_digest_t    elephant_report;
    path_change_digest_t path_report;
}

#endif  /* _STELLAR_METADATA_P4_ */
