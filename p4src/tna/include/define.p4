/*
 * define.p4 (TNA) -- what the Tofino program adds to ../../include/define.p4.
 *
 * Units on Tofino: every time is in NANOSECONDS (TNA's timestamps and
 * deq_timedelta), queue depths in cells.  Stored times are 32-bit slices of
 * the 48-bit ns clock (wraps every ~4.3 s; every comparison is a difference
 * of two such slices, so the wrap is harmless for the short intervals used).
 */
#ifndef _STELLAR_TNA_DEFINE_P4_
#define _STELLAR_TNA_DEFINE_P4_

/* Profiles (as fabric-tna keeps one per feature set; each has its own
 * P4Info).  STELLAR_NO_DRE leaves out the per-packet utilisation estimate
 * and its choice (dre.p4: eight level tables, four stateful ALUs, the
 * three-round tournament and a second pass per new flow): new flows and
 * gap moves then take congestion feedback's best member (path_choice.p4),
 * and the controller's `dre_base.levels` keeps only its `measured` bitmap.
 * It is the profile meant for Tofino-1: the full program's dependency
 * chain alone is 15 stages, longer than Tofino-1's 12; this one is placed
 * in 12 (README.md, "Resources"). */

typedef bit<32> tstamp32_t;      /* low 32 bits of a ns timestamp */
typedef bit<8>  group_t;         /* member group: a set of ports several path sets share */
typedef bit<4>  prior_t;         /* capacity prior within a group: one per bottleneck profile */
typedef bit<3>  member_t;        /* index of a member in its group */

/* The first byte of every bridged or mirror header says which it is, so the
 * egress parser can tell them apart (the fabric-tna pattern). */
const bit<8> PKT_BRIDGED  = 1;
const bit<8> PKT_FEEDBACK = 2;

/* What an ingress packet is (stellar.p4). */
const bit<2> KIND_DATA      = 0;
const bit<2> KIND_FEEDBACK  = 1;
const bit<2> KIND_PORT_DOWN = 2;

/* Congestion feedback packets (egress -> ingress) use this EtherType. */
const bit<16> ETHERTYPE_STELLAR_FEEDBACK = 0x88B6;

/* Mirror type / session of the egress-to-ingress feedback copy. */
const MirrorType_t MIRROR_TYPE_FEEDBACK = 1;
const MirrorId_t   MIRROR_SESSION_FEEDBACK = 1;

/* Resubmit type of the second passes: the drain test (flowlet.p4) and a
 * DRE choice (dre.p4); the resubmit header's `kind` tells them apart. */
const ResubmitType_t RESUBMIT_TYPE_SECOND_PASS = 1;
const bit<2> RESUB_DRAIN  = 1;
/* Ingress digest types (the deparser packs elephant_digest_t). */
const bit<3> DIGEST_TYPE_ELEPHANT = 1;
const bit<2> RESUB_CHOOSE = 2;

/* Tofino-1 pipe 0: port 68 is the packet generator and recirculation port. */
const PortId_t PKTGEN_PORT = 68;
const bit<3>   PKTGEN_APP_PORT_DOWN = 1;

/* path_choice.group_best's delay score: the queue delay in 16 ns units, 15
 * bits (below 524 us), TNA_BEST_DELAY_SATURATED at and above; SCORE_NONE
 * when nothing is known (every member looks idle).  16 bits, not 32: the
 * stateful ALU of a 2 x 32-bit cell with two 32-bit inputs did not fit
 * bf-p4c's input crossbar.  Saturating at 2^15 keeps delay + hysteresis
 * below SCORE_NONE in the ALU's 16-bit arithmetic (no wrap). */
const bit<16> SCORE_NONE = 0xFFFF;
const bit<16> TNA_BEST_DELAY_SATURATED = 0x8000;


/* Default tunables (config table action data can override them).  Each
 * TNA_* #define is declared in control_plane/params.py with this value
 * (tests/control_plane/test_params.py checks it). */
#define TNA_FLOWLET_TIMEOUT_NS 200000      /* 200 us, as the v1model program */
#define TNA_FEEDBACK_HYSTERESIS 250        /* a member must be 4 us (250 x 16 ns) better to take over */
#define TNA_ELEPHANT_BYTES 500000          /* per sketch window */
#define TNA_DRE_DELAY_PENALTY 256          /* 16 levels added to members feedback says are not the best,
                                            * written x16 like all DRE score data (dre.p4) */
#define TNA_DRAIN_MARGIN_NS 8000           /* downstream skew margin of a drain move: 8 us, as the
                                            * v1model program (control_plane/params.py) */
#define TNA_FEEDBACK_ENABLED 0             /* path feedback between leaves (path_feedback.p4): off
                                            * until the controller names the leaf */
#define TNA_FEEDBACK_RETURN_INTERVAL_NS 2000 /* at most one copy of a returned entry per (leaf,
                                            * path) to path choice per 2 us */
#define TNA_FEEDBACK_MAX_AGE_NS 500000     /* a returned entry younger than 500 us is a measurement:
                                            * the uplink's own reports carry it */
#define TNA_SUSPECT_SILENCE_NS 300000     /* a path sent on and unanswered this long is silent:
                                            * its reports saturate (path_feedback.p4); 0: off */
#define TNA_EXPLORE_SIGNALS 4              /* CNPs per host pair within the window that make its packets
                                            * report their member saturated (pressure.p4); 0: off */
#define TNA_EXPLORE_WINDOW_NS 200000       /* 200 us, as the v1model program */
#define TNA_RETX_THRESHOLD 8               /* resends per (leaf, path) within the window that make it
                                            * lossy (path_loss.p4); 0: off */
#define TNA_RETX_WINDOW_NS 1000000         /* 1 ms, as the v1model program */
#define TNA_SUSPECT_HOLD_NS 2000000        /* 2 ms, as the v1model program: a silent path is sent
                                            * on anew (a new period) this long after it went
                                            * silent, a lossy one stays lossy this long past its
                                            * window (path_feedback.p4, path_loss.p4) */
#define TNA_DRAIN_ANY 1                    /* drain moves for every tracked flow, not only elephants:
                                            * a DCQCN-paced RoCE flow rarely pauses a flowlet timeout,
                                            * and a drain point is as safe for a mouse (define.p4) */
#define TNA_MOVE_GUARDS 15                 /* MOVE_GUARD_* (../../include/define.p4): bit 0, a drain
                                            * move needs the drain proof; clearing it is the tests'
                                            * negative control */
/* Range rows in each dre.level<k> table: 64 levels for each of 8 groups
 * with a choice (groups of one member have no rows; the lab's job scenario
 * needs 4 on a leaf).  bf-p4c expands a 16-bit range into about 2.5 TCAM
 * rows, and the eight tables should share one stage (the DRE choice needs
 * the stages after it), which holds 24 TCAMs of 512 rows: at 512 rows each
 * the eight take two stages (tofino2 full: stages 14 and 15 of its 20,
 * README.md "Resources"); at 192 (3 groups) they would share one, but 3
 * groups are too few; at 4096 they spread over 20 stages. */
#define DRE_LEVEL_SIZE 512
/* Sketch window: bits 47:20 of the ns clock, i.e. ~1.05 ms windows. */
#define TNA_EPOCH(ts) ((bit<16>)(ts >> 20))
/* A member whose path a destination leaf reported dead (its uplink there is
 * down: path_feedback.p4) counts as down for this long after the last such
 * report (failover.p4's `dead`), as the v1model program's silence + hold. */
#define TNA_DEAD_HOLD_NS 2300000

#endif  /* _STELLAR_TNA_DEFINE_P4_ */
