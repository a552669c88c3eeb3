/*
 * define.p4 -- Stellar's constants and every tunable, with units.
 *
 * Units: every time is in MICROSECONDS (v1model's timestamp and
 * deq_timedelta unit), every size in BYTES, probabilities in 1/65536.
 * The DEFAULT_* values are what the program uses until the controller
 * overrides them through StellarIngress.config.params /
 * StellarEgress.ecn.config (p4src/CONTRACT.md); they are chosen for a
 * 100 Gb/s RoCEv2 fabric and documented where they come from.  Each is
 * declared in control_plane/params.py (unit, range, fabric key; table in
 * docs/parameters.md), and tests/control_plane/test_params.py checks that
 * every DEFAULT_* here is declared there with this value.
 */
#ifndef _STELLAR_DEFINE_P4_
#define _STELLAR_DEFINE_P4_

/* ---------------------------------------------------------------- types */
typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<9>  port_t;          /* v1model port number */
typedef bit<16> path_set_id_t;
typedef bit<2>  traffic_class_t;
typedef bit<3>  queue_t;          /* standard_metadata.priority */
typedef bit<8>  tenant_id_t;
typedef bit<48> timestamp_t;      /* v1model global timestamps, us */

/* ------------------------------------------------------ protocol numbers */
const bit<16> ETHERTYPE_IPV4  = 0x0800;
const bit<16> ETHERTYPE_VLAN  = 0x8100;
/* IEEE 802 local experimental EtherType 1: the path-feedback shim. */
const bit<16> ETHERTYPE_STELLAR_FB = 0x88B5;
const bit<8>  IP_PROTO_TCP    = 6;
const bit<8>  IP_PROTO_UDP    = 17;
const bit<16> UDP_PORT_ROCEV2 = 4791;   /* IANA port of RoCEv2 */

/* IHL 15 leaves 10 words of options. */
#define IPV4_MAX_OPTION_WORDS 10

/* ECN codepoints (RFC 3168). */
const bit<2> ECN_NOT_ECT = 0;
const bit<2> ECN_ECT1    = 1;
const bit<2> ECN_ECT0    = 2;
const bit<2> ECN_CE      = 3;

/* BTH opcode fields (InfiniBand spec. vol. 1, table 38): transport in bits
 * 7..5, operation in bits 4..0.  Data operations are SEND first .. SEND only
 * with immediate (0x00-0x05), RDMA WRITE first .. WRITE only with immediate
 * (0x06-0x0B) and RDMA READ response first .. only (0x0D-0x10); ACK is 0x11
 * and the RoCEv2 CNP 0x81 (transport 0b100). */
const bit<8> BTH_OP_CNP             = 0x81;
const bit<3> BTH_TRANSPORT_RC       = 0;
const bit<3> BTH_TRANSPORT_UC       = 1;
const bit<5> BTH_OP_WRITE_ONLY_IMM  = 0x0B;
const bit<5> BTH_OP_READ_RESP_FIRST = 0x0D;
const bit<5> BTH_OP_READ_RESP_ONLY  = 0x10;

/* RoCEv2 PSN is 24 bits; comparisons are modulo 2^24 (half window). */
const bit<24> PSN_HALF_RANGE = 0x800000;
/* Bit 24 of StellarEgress.reorder.max_psn marks a used slot. */
const bit<32> PSN_SLOT_VALID = 0x01000000;

/* -------------------------------------------------------- traffic classes */
const traffic_class_t CLASS_BACKGROUND = 0;
const traffic_class_t CLASS_ELASTIC    = 1;
const traffic_class_t CLASS_CRITICAL   = 2;
const traffic_class_t CLASS_CONTROL    = 3;

/* Tenant 0 = traffic from no configured tenant subnet: never policed. */
const tenant_id_t TENANT_NONE = 0;

/* v1model meter colours (BMv2). */
const bit<2> METER_GREEN  = 0;
const bit<2> METER_YELLOW = 1;
const bit<2> METER_RED    = 2;

/* ------------------------------- drop reasons (StellarIngress.telemetry.drops) */
const bit<8> DROP_NONE           = 0;
const bit<8> DROP_MALFORMED      = 1;
const bit<8> DROP_BAD_CHECKSUM   = 2;
const bit<8> DROP_TTL_EXPIRED    = 3;
const bit<8> DROP_NO_ROUTE       = 4;
const bit<8> DROP_NO_PATH_SET    = 5;
const bit<8> DROP_NO_LIVE_MEMBER = 6;
const bit<8> DROP_TENANT_RED     = 7;
const bit<8> DROP_NOT_IPV4       = 8;

/* ---------------------- malformed input kinds (StellarIngress.telemetry.malformed) */
const bit<8> MALFORMED_NONE           = 0;
const bit<8> MALFORMED_TRUNC_ETHERNET = 1;
const bit<8> MALFORMED_TRUNC_IPV4     = 2;
const bit<8> MALFORMED_BAD_VERSION    = 3;
const bit<8> MALFORMED_BAD_IHL        = 4;
const bit<8> MALFORMED_TRUNC_UDP      = 5;
const bit<8> MALFORMED_TRUNC_TCP      = 6;
const bit<8> MALFORMED_TRUNC_BTH      = 7;
const bit<8> MALFORMED_IPV4_OPTIONS   = 8;   /* counted, not dropped */
const bit<8> MALFORMED_OTHER          = 9;

/* ------------------ path-change reasons (StellarIngress.flowlet.path_changes) */
const bit<8> CHANGE_NEW        = 0;
const bit<8> CHANGE_GAP        = 1;
const bit<8> CHANGE_DRAIN      = 2;
const bit<8> CHANGE_FAILOVER   = 3;
const bit<8> CHANGE_MEMBERSHIP = 4;
const bit<8> CHANGE_EXPLORE    = 5;   /* congestion signals on a locally best path */
const bit<8> CHANGE_SUSPECT    = 6;   /* the current path went silent (feedback.p4) */
const bit<8> CHANGE_RESTART    = 7;   /* at a go-back-N restart (MOVE_POINT_RESTART) */

/* ------------------------------------------------------------ path choice */
/* A path set has at most this many members (action params port0..port7). */
#define MAX_PATH_MEMBERS 8
/* Congestion scores are in ticks: WEIGHT_ONE ticks per us of queue delay or
 * of controller level at weight 1.0 (so a tick is ~1 ns), see member_score.
 * They are clamped below 2^28 so that score << 3 | tiebreak fits 32 bits
 * (2^28 ticks is ~0.26 s, far beyond any real queue); each input is clamped
 * to 2^16 us first so that input x weight (16 bits) fits 32 bits. */
const bit<32> SCORE_CLAMP = 0x0FFFFFFF;
/* A suspect member's score (feedback.p4): one above the clamp, so it ranks
 * below every usable member, a stalled one included.  A stalled queue (PFC
 * pause) drains when the pause ends; a silent or lossy path drops what it
 * gets.  SCORE_SUSPECT << 3 | 7 still fits 32 bits below RANK_UNUSABLE. */
const bit<32> SCORE_SUSPECT = 0x10000000;
const bit<32> SCORE_INPUT_CLAMP = 0xFFFF;
/* queue_delay's answer for a stalled queue (packets waiting, no departure). */
const bit<32> QDELAY_STALLED = 0xFFFFFFFF;
#define WEIGHT_ONE 1024
/* hysteresis_us is compared in ticks: << WEIGHT_SHIFT (x WEIGHT_ONE). */
#define WEIGHT_SHIFT 10
/* Rank of a member that must not be chosen (absent or down). */
const bit<32> RANK_UNUSABLE = 0xFFFFFFFF;

/* Flow signature: bit 31 marks a used slot, bits 15..0 hold a CRC-16 of the
 * flow key (the slot index itself comes from a CRC-32). */
const bit<32> FLOW_SIG_VALID = 0x80000000;

/* Bits of the flow_state register. */
const bit<8> FLOW_STATE_ELEPHANT = 0x01;
const bit<8> FLOW_STATE_REPORTED = 0x02;
const bit<8> FLOW_STATE_HINTED   = 0x04;
const bit<8> FLOW_STATE_DEMOTED  = 0x08;   /* tenant-meter demoted until drained */

/* Salt mixed into the second count-min row's hash so that its index is
 * independent of the first row's. */
const bit<16> CMS_ROW1_SALT = 0x5A17;

/* ------------------------------------------- default tunables (config.params) */
/* Flowlet timeout, us.  Published flowlet systems use 100-500 us; 200 us is
 * above a typical two-tier fabric's worst queueing skew. */
#define DEFAULT_FLOWLET_TIMEOUT_US 200
/* Drain margin, us: after the flow's last packet left this switch, wait this
 * long before moving it, to absorb delay differences further downstream
 * (one 4 KB MTU at 100 Gb/s is ~0.3 us; 8 us covers a few downstream hops). */
#define DEFAULT_DRAIN_MARGIN_US 8
/* Hysteresis, us of score: a move must gain at least this much. */
#define DEFAULT_HYSTERESIS_US 4
/* Move at flowlet gaps (1) / at drain points (1). */
#define DEFAULT_GAP_MOVES 1
#define DEFAULT_DRAIN_MOVES 1
/* A port whose last departure is older than this is treated as idle, us. */
#define DEFAULT_QDELAY_MAX_AGE_US 200
/* Elephant threshold, bytes per sketch window (500 KB per ms = 4 Gb/s). */
#define DEFAULT_ELEPHANT_BYTES 500000
/* Count-min sketch window, us. */
#define DEFAULT_ELEPHANT_WINDOW_US 1000
/* An elephant idle this long is a mouse again, us. */
#define DEFAULT_ELEPHANT_IDLE_US 2000
/* Truncated UDP/TCP/BTH: 0 drop, 1 forward as non-RoCE. */
#define DEFAULT_MALFORMED_L4_FORWARD 0
/* Digest every path change (1) or not (0). */
#define DEFAULT_REPORT_PATH_CHANGES 0
/* Ordering guards (config.order_guards), all on by default.  Each closes one
 * way a flow's packets could change (port, queue) while an earlier packet of
 * the flow is still queued here (p4src/README.md, "Ordering rule"); turning a
 * bit off restores the unguarded behaviour, the tests' negative control.
 *   GAP_DRAIN  a gap move also needs the local drain + margin + level
 *   TAKEOVER   a flow taking over a slot stays on its hash port while packets
 *              routed by hash for that slot are still queued
 *   DEMOTION   tenant-meter demotion is per flow, sticky until drained
 *   UNTRACKED  flows without a slot ignore the sketch (hints only) */
const bit<4> ORDER_GUARD_GAP_DRAIN = 1;
const bit<4> ORDER_GUARD_TAKEOVER  = 2;
const bit<4> ORDER_GUARD_DEMOTION  = 4;
const bit<4> ORDER_GUARD_UNTRACKED = 8;
#define DEFAULT_ORDER_GUARDS 15
/* Utilisation estimator (DRE): halved every 2^dre_shift us.  32 us windows:
 * a port busy at line rate settles near 64 us of wire time, several
 * microseconds of new flows' first packets already move it. */
#define DEFAULT_DRE_SHIFT 5
/* Path-choice weights, WEIGHT_ONE = 1.0: utilisation (DRE), local queue
 * delay, controller level.  The local queue delay weighs 1/8: an
 * oversubscribed leaf's uplink queues swing by microseconds from packet to
 * packet, and at full weight that noise outweighs the bottleneck-rate
 * utilisation that says where a new flow belongs; a stalled queue still
 * scores worst whatever the weight (functions.p4 member_score).  The level
 * (fresh path feedback, else the controller's) weighs 1/8 too: in a lossless
 * fabric both paths into a saturated leaf carry PFC-shaped queues, and at
 * full weight their difference steered flows onto the slower downlink. */
#define DEFAULT_UTIL_WEIGHT 1024
#define DEFAULT_QDELAY_WEIGHT 128
#define DEFAULT_LEVEL_WEIGHT 128
/* Port rate for the DRE when placement.port_rate has no entry: 100 Gb/s. */
#define DEFAULT_PS_PER_BYTE 80

/* ------------------------------------------- default tunables (config.adapt) */
/* Drain moves for every tracked flow (1), not only elephants (0).  DCQCN-paced
 * RoCE flows rarely pause for a flowlet timeout; a drain point (every packet
 * of the flow has left this switch, plus the downstream margin) is the move
 * point they do have, and it is as safe for a mouse as for an elephant. */
#define DEFAULT_DRAIN_ANY 1
/* Move guards (config.adapt move_guards), all on by default; the tests clear
 * one for their negative control.
 *   DRAIN_PROOF  drain and explore moves need the drain proof (departed_seq
 *                = last_seq, + margin + the old member's downstream delay) */
const bit<4> MOVE_GUARD_DRAIN_PROOF = 1;
/*   RESTART      a flow may move where its sender restarted it (feedback.p4
 *                meta.fb.restart).  A go-back-N receiver takes nothing but
 *                the PSN it expects, so whatever of the flow is still on the
 *                old path arrives as a duplicate and is discarded: the move
 *                cannot put a packet in front of an earlier one the receiver
 *                still wants.  The move point of a flow on a lossy path. */
const bit<4> MOVE_POINT_RESTART = 2;
#define DEFAULT_MOVE_GUARDS 15
/* Exploration under pressure: a flow whose host pair received at least this
 * many congestion signals (CNPs on the reverse path) within explore_window_us
 * while its member scores best here tries the next best member at its next
 * safe point.  0 turns exploration off.  DCQCN's NIC sends at most one CNP per
 * QP per 50 us; 4 in 200 us is a flow cut back again and again. */
#define DEFAULT_EXPLORE_SIGNALS 4
#define DEFAULT_EXPLORE_WINDOW_US 200

/* ---------------------------------------- default tunables (feedback.params) */
/* Path feedback between leaves: off until the controller names the leaf. */
#define DEFAULT_FEEDBACK_ENABLED 0
/* Feedback younger than this is a measurement ("measured"), us: a few RTTs of
 * a loaded two-tier fabric. */
#define DEFAULT_FEEDBACK_MAX_AGE_US 500
/* A path on which this leaf sent traffic and got no feedback for this long is
 * suspect, us (0: off).  Above the feedback's own round trip under load. */
#define DEFAULT_SUSPECT_SILENCE_US 300
/* Retransmitted data packets (PSN not ahead of the flow's highest) on one
 * path within retx_window_us that make it suspect (0: off). */
#define DEFAULT_RETX_THRESHOLD 8
#define DEFAULT_RETX_WINDOW_US 1000
/* How long a path stays suspect after its last evidence, us. */
#define DEFAULT_SUSPECT_HOLD_US 2000
/* fb_metric is 13 bits: congestion up to FB_METRIC_MAX us; the top value
 * says the destination leaf's uplink on that path is down (feedback.p4). */
const bit<32> FB_METRIC_MAX = 8190;
const bit<32> FB_METRIC_DEAD = 8191;
/* fb_from_port: an entry whose port is recorded. */
const bit<16> FB_PORT_VALID = 0x8000;
/* Shim's congestion field is 16 bits. */
const bit<32> FB_CONGESTION_MAX = 0xFFFF;

/* --------------------------------------------- default tunables (ecn.config) */
/* ECN adaptation window W, us: 8 us as in the design.  The control plane
 * refuses windows under 5 us (control_plane/params.py), which the design found
 * to amplify noise: too few packets per window to tell a standing queue. */
#define DEFAULT_ECN_WINDOW_US 8
/* Queue-delay target, us: a window whose minimum delay stays above it has a
 * standing queue. */
#define DEFAULT_ECN_TARGET_US 4
/* K bounds and start, us of queue delay.  DCQCN's common static setting,
 * Kmin 100 KB / Kmax 400 KB, is 8 / 32 us at 100 Gb/s. */
#define DEFAULT_ECN_KMIN_US 4
#define DEFAULT_ECN_KMAX_US 32
#define DEFAULT_ECN_K_INIT_US 16
/* Change of K per window, us. */
#define DEFAULT_ECN_STEP_US 2
/* Marking probability at Kmax, 1/65536 (13107 = 0.2, DCQCN's Pmax). */
#define DEFAULT_ECN_PMAX 13107
/* "Light load": fewer bytes than this in a window (half of 100 Gb/s over
 * 8 us = 50 KB). */
#define DEFAULT_ECN_IDLE_BYTES 50000
/* 1 = adapt K per window, 0 = static K (= k_init). */
#define DEFAULT_ECN_ADAPT 1
/* K's floor, bytes at the queue's measured drain rate (ecn.floor): DCQCN's
 * static Kmin of 100 KB, i.e. 8 us at 100 Gb/s and 20 us at 40 Gb/s. */
#define DEFAULT_ECN_KFLOOR_BYTES 100000
/* Probability scale: pmax = ECN_PROB_ONE means certainty. */
#define ECN_PROB_ONE 65536
/* Weight of the queue-delay running mean: new = old - old/8 + sample/8. */
#define ECN_MEAN_SHIFT 3

#endif  /* _STELLAR_DEFINE_P4_ */
