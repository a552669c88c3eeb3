/*
 * size.p4 -- table and register sizes of the Stellar program.
 *
 * Each size says what it holds and why that many.  Registers are indexed
 * with bit<32> and every index is produced either by a hash bounded by the
 * size or by a field whose range fits the size, so no access is out of range.
 */
#ifndef _STELLAR_SIZE_P4_
#define _STELLAR_SIZE_P4_

/* Per-port state (queue delay, ECN, liveness, counters): indexed directly by
 * the 9-bit v1model port number, so all 512 values fit. */
#define PORT_SLOTS 512
/* Per (port, queue) counters: 512 ports x 8 priority queues. */
#define PORT_QUEUE_SLOTS 4096
/* Queue-delay histogram: 512 ports x 16 buckets (telemetry.qdelay_hist). */
#define QDELAY_BUCKETS 16
#define QDELAY_HIST_SLOTS 8192

/* routing.lpm: one prefix per leaf/host subnet.  A 512-GPU cluster needs a
 * few hundred; 4096 leaves room for per-host routes. */
#define ROUTING_LPM_SIZE 4096
/* routing.reservation: job reservations (src subnet, dst subnet) pairs. */
#define RESERVATION_SIZE 512
/* routing.path_set: one set per destination leaf, plus reserved sets for
 * jobs.  1024 covers a 256-leaf fabric with three reserved sets per leaf. */
#define PATH_SET_SIZE 1024

/* path_choice.prior: one entry per multi-member path set (a leaf's sets to
 * the other leaves and its job sets), like routing.path_set.  Each entry
 * names a prior slot; the path utilisation registers hold 8 members per slot. */
#define PATH_PRIOR_SIZE 1024
#define PATH_DRE_SLOTS 8192

/* Per-flow state (flowlet, drain, elephant flags): a hash-indexed array.
 * A training job has on the order of (GPUs x QPs) flows through a leaf;
 * 8192 slots keeps collisions rare for a few thousand active flows (a
 * collision is detected by the signature and treated as a new flow). */
#define FLOW_SLOTS 8192

/* Count-min sketch: 2 rows x 2048 counters.  With error ~ e/width of the
 * window's bytes per row, a 2048-wide row over-estimates by < 0.15% of the
 * window's traffic, well below the elephant threshold. */
#define CMS_WIDTH 2048

/* Reorder detector: one slot per RoCE flow (src, dst, dest QP) seen on
 * egress; sized like the flow table. */
#define REORDER_SLOTS 8192

/* Congestion signals per host pair (pressure_*): hashed (src, dst) of the
 * forward direction; a few thousand active host pairs per leaf. */
#define PRESSURE_SLOTS 4096

/* Path feedback, per (leaf id, member position): 256 leaf ids x 8 members. */
#define FB_SLOTS 2048
#define LEAF_SLOTS 256
/* feedback.dest_leaf: one prefix per leaf subnet. */
#define DEST_LEAF_SIZE 1024

/* qos.tenant: one prefix per tenant subnet; tenant ids are 8 bits, so the
 * per-tenant meter and counters have 256 entries. */
#define TENANT_SIZE 256
#define TENANT_SLOTS 256

/* qos.dscp_class: every DSCP value. */
#define DSCP_CLASS_SIZE 64
/* queueing.queue_map: 4 classes x {mouse, elephant}, with room to spare. */
#define QUEUE_MAP_SIZE 16
/* elephant.hint: controller-known elephant/mouse flows and job address pairs. */
#define HINT_SIZE 1024

/* Counters indexed by a reason code (drops, malformed, path changes). */
#define REASON_SLOTS 16
#define CHANGE_REASON_SLOTS 8
/* Traffic classes. */
#define CLASS_SLOTS 4

#endif  /* _STELLAR_SIZE_P4_ */
