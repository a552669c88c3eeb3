/*
 * registers.p4 -- registers shared between controls (top level).
 *
 * v1model lets a register instantiated at the top level of the program be
 * used from several controls; Stellar uses that for the state egress writes
 * and ingress reads (queue delay per port, departures per flow), and for the
 * per-flow state that several ingress blocks read.  Sizes in size.p4, names
 * and meanings in p4src/CONTRACT.md.
 */
#ifndef _STELLAR_REGISTERS_P4_
#define _STELLAR_REGISTERS_P4_

/* --- per port (index = port number) -------------------------------------- */

/* --- per (port, queue) (index = port << 3 | queue) ------------------------ */

/* The last departure from each queue: its queue delay (deq_timedelta, us)
 * and when it left (egress_global_timestamp).  Written by egress
 * QdelayRecord, read by ingress PathChoice.  Per queue, so that a mouse
 * leaving the fast queue cannot erase an elephant backlog in a slower one. */
register<bit<32>>(PORT_QUEUE_SLOTS) queue_qdelay_us;
register<timestamp_t>(PORT_QUEUE_SLOTS) queue_depart_stamp;
/* Stall detection: packets counted into the queue at ingress (Placement) and
 * out at egress (QdelayRecord; a departure that empties the queue sets out =
 * in, forgetting tail drops); when the first packet went into an empty queue.
 * Packets waiting and no departure for qdelay_max_age_us = stalled.  Counts,
 * not timestamps, because a packet and a departure share a microsecond. */
register<bit<32>>(PORT_QUEUE_SLOTS) queue_in;
register<bit<32>>(PORT_QUEUE_SLOTS) queue_out;
register<timestamp_t>(PORT_QUEUE_SLOTS) queue_pending_since;

/* Utilisation estimator (CONGA's DRE): picoseconds on the wire of the bytes
 * assigned to the port, halved per window of 2^dre_shift us, and the window
 * it was last brought up to.  Written by ingress Placement on assignment,
 * read by ingress PathChoice. */
register<bit<32>>(PORT_SLOTS) port_dre_ps;
register<bit<32>>(PORT_SLOTS) port_dre_window;

/* --- per (prior slot, member position) (index = slot << 3 | position) ------- */

/* Path utilisation estimator: the wire time of the bytes this switch sent on
 * each member of a path set, at the member's end-to-end bottleneck rate
 * (path_choice.prior), halved per 2^dre_shift us like port_dre_ps.  It is the
 * capacity prior: before any measurement of the remote links a path whose
 * bottleneck is slower fills up sooner, so new flows spread by capacity
 * (WCMP's split) instead of by the local ports' rates alone.  Written by
 * ingress Placement, read by ingress PathChoice. */
register<bit<32>>(PATH_DRE_SLOTS) path_dre_ps;
register<bit<32>>(PATH_DRE_SLOTS) path_dre_window;

/* --- per host pair (index = crc32(src, dst of the forward direction)) ------ */

/* Congestion signals for the host pair's forward direction: CNPs travelling
 * back (dst -> src) counted by ingress Pressure, and when the count started.
 * Read by Pressure for the forward flows, cleared by Flowlet when one of
 * them explores another member. */
register<bit<32>>(PRESSURE_SLOTS) pressure_signals;
register<timestamp_t>(PRESSURE_SLOTS) pressure_since;

/* --- per (leaf id, member position) (index = leaf << 3 | position) -------- */

/* Path feedback (feedback.p4).  At a destination leaf: the congestion the
 * last tagged packet from (source leaf, path) carried, and whether it changed
 * since it was last returned (a bitmap per source leaf, bit = path) and the
 * round-robin pointer of the entry returned next.  At a source leaf: the
 * congestion-to-leaf entries returned to it and when they arrived (their
 * age); the first send on a path not yet answered by feedback; retransmitted
 * data packets sent on it in the current window and when it started. */
register<bit<32>>(FB_SLOTS) fb_from_metric;
register<bit<8>>(LEAF_SLOTS) fb_from_new;
register<bit<3>>(LEAF_SLOTS) fb_rr;
/* At a destination leaf: the port the last tagged packet from (source leaf,
 * path) came in on (FB_PORT_VALID | port: the uplink that path crosses), and
 * per source leaf the entry checked next for an uplink that is down.  A dead
 * uplink is reported to the source leaf (FB_METRIC_DEAD) before any other
 * entry.  Size: FB_SLOTS and LEAF_SLOTS. */
register<bit<16>>(FB_SLOTS) fb_from_port;
register<bit<3>>(LEAF_SLOTS) fb_dead_rr;
/* Per other leaf: when a packet tagged by it last arrived here (any path).
 * Silence needs it: a path is silent only while that leaf keeps talking to
 * this one and says nothing about the path; with no reverse traffic at all
 * there is nothing to carry feedback, and silence proves nothing.
 * Size: LEAF_SLOTS. */
register<timestamp_t>(LEAF_SLOTS) fb_heard;
/* Per other leaf: when the current run of its packets began (the first after
 * a pause longer than half the silence), and the run before it (start, last
 * arrival).  A leaf that paused had no chance to answer during the pause,
 * whatever fb_heard says: silence is proven only by a run of its packets
 * (feedback.p4 path_silent).  Size: LEAF_SLOTS each. */
register<timestamp_t>(LEAF_SLOTS) fb_heard_since;
register<timestamp_t>(LEAF_SLOTS) fb_prev_since;
register<timestamp_t>(LEAF_SLOTS) fb_prev_heard;
/* Per other leaf: when its last answer (a returned entry, any path) arrived.
 * An answer after this leaf's unanswered send on a path shows the other leaf
 * is answering, only not for that path (feedback.p4 path_silent).
 * Size: LEAF_SLOTS. */
register<timestamp_t>(LEAF_SLOTS) fb_answered;
register<bit<32>>(FB_SLOTS) fb_to_metric;
register<timestamp_t>(FB_SLOTS) fb_to_stamp;
register<timestamp_t>(FB_SLOTS) fb_sent_since;
register<bit<32>>(FB_SLOTS) fb_retx;
register<timestamp_t>(FB_SLOTS) fb_retx_since;

/* --- per flow slot (index = crc32(flow key) mod FLOW_SLOTS) --------------- */

/* FLOW_SIG_VALID | crc16(flow key) of the flow owning the slot. */
register<bit<32>>(FLOW_SLOTS) flow_sig;
/* The flow's current egress port. */
register<bit<16>>(FLOW_SLOTS) flow_port;
/* Arrival time of the flow's last forwarded packet (flowlet gap). */
register<timestamp_t>(FLOW_SLOTS) flow_last_arrival;
/* Drain detection.  Ingress numbers the flow's forwarded packets
 * (flow_last_seq); egress records the number and time of the flow's last
 * packet that left (flow_departed_seq/_stamp).  All of the flow's packets
 * have left this switch exactly when departed_seq == last_seq.  Sequence
 * numbers instead of timestamps because many packets share one microsecond,
 * which would make a timestamp comparison either unsafe or never true. */
register<bit<32>>(FLOW_SLOTS) flow_last_seq;
register<bit<32>>(FLOW_SLOTS) flow_departed_seq;
register<timestamp_t>(FLOW_SLOTS) flow_departed_stamp;
/* Packets forwarded by hash, untracked, because another active flow held the
 * slot (ingress counts them in, egress out): while the two differ, one of
 * them is still queued, so a flow taking the slot over stays on its hash
 * port (ORDER_GUARD_TAKEOVER).  Counts, not sequence numbers, because the
 * untracked packets of several flows leave on different ports. */
register<bit<32>>(FLOW_SLOTS) flow_untracked_in;
register<bit<32>>(FLOW_SLOTS) flow_untracked_out;
/* PSN_SLOT_VALID | the highest data PSN the flow sent (source leaf, feedback.p4:
 * a PSN not ahead of it is a retransmission). */
register<bit<32>>(FLOW_SLOTS) flow_max_psn;
/* PSN_SLOT_VALID | the flow's highest data PSN when it last changed path
 * (0: not moved since it took the slot).  A resend of a PSN at or below it
 * repeats a packet the flow sent on an earlier path, so it is loss evidence
 * against that path, not the one the resend takes (feedback.p4). */
register<bit<32>>(FLOW_SLOTS) flow_move_psn;
/* FLOW_STATE_* bits: elephant, reported, hinted, demoted. */
register<bit<8>>(FLOW_SLOTS) flow_state;

#endif  /* _STELLAR_REGISTERS_P4_ */
