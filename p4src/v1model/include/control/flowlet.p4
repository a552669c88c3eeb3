/*
 * flowlet.p4 -- per-flow state and flowlet-safe path switching with drain
 * detection.
 *
 * Flow key: RoCEv2 (src IP, dst IP, dest QP); other traffic its 5-tuple
 * (3-tuple without a whole L4 header).  The key hashes to a slot of the
 * flow_* registers (registers.p4); a CRC-16 signature tells whether the slot
 * holds this flow.
 *
 * A flow keeps its port unless
 *   - it is new (or lost its slot)                 -> best member   (new)
 *   - its port left the path set                   -> best member   (membership)
 *   - its port is down                             -> best member   (failover)
 *   - it is movable and the best member beats the current one by more than
 *     the hysteresis margin, where movable means
 *       (a) gap:   idle for >= flowlet_timeout_us, or
 *       (b) drain: a tracked flow (an elephant; every flow with
 *                  config.adapt drain_any) whose packets have all left this switch
 *                  (flow_departed_seq == flow_last_seq) at least
 *                  drain_margin_us + (current member's level) ago.
 *                  The drain point proves the packets left *this* queue;
 *                  the controller's level of the old member is its estimate
 *                  of the queue they may still sit in downstream (e.g. a
 *                  spine's congested downlink), so the margin grows by it:
 *                  a move then cannot overtake them there either.
 *                  A level the controller has never measured (its
 *                  routing.path_set `measured` bit clear: rendered, or reset
 *                  by a failover re-push) is unknown, not 0: no move off
 *                  that member proves anything downstream, so none is made
 *                  until the first measured level arrives.
 *   Gap moves need the same proof ("drained", order guard GAP_DRAIN).
 * (b) lets a flow leave a congested port as soon as doing so cannot reorder
 * it here, instead of waiting out a worst-case timeout.  With drain_any 0
 * mice are not moved at drain points (pinned), only at gaps.
 *   - explore: the flow's host pair keeps receiving congestion signals
 *     (pressure.p4: CNPs on the reverse path) while its member is the best
 *     one here -> the next best member, with the same drain proof.
 *
 * A flow whose slot is held by another flow active within the flowlet
 * timeout is routed by hash among the live members (stable, so not
 * reordered) and does not disturb the owner's state.
 *
 * Controls: FlowLookup (before tenant demotion, elephant detection and path
 * choice, which need the stored state), Flowlet (decide and commit),
 * DrainRecord (egress).
 */
#ifndef _STELLAR_CONTROL_FLOWLET_P4_
#define _STELLAR_CONTROL_FLOWLET_P4_

control FlowLookup(inout headers_t hdr,
                   inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    apply {
        meta.flow.protocol = hdr.ipv4.protocol;
        if (hdr.bth.isValid()) {
            meta.flow.is_roce = 1;
            meta.flow.l4_id = (bit<32>)hdr.bth.dest_qp;
        } else if (hdr.udp.isValid()) {
            meta.flow.l4_id = hdr.udp.src_port ++ hdr.udp.dst_port;
        } else if (hdr.tcp.isValid()) {
            meta.flow.l4_id = hdr.tcp.src_port ++ hdr.tcp.dst_port;
        } else {
            meta.flow.l4_id = 0;
        }

        hash(meta.flow.slot, HashAlgorithm.crc32, 32w0,
             { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, meta.flow.protocol, meta.flow.l4_id },
             (bit<32>)FLOW_SLOTS);
        hash(meta.flow.sig, HashAlgorithm.crc16, 32w0,
             { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, meta.flow.protocol, meta.flow.l4_id },
             32w65536);
        meta.flow.sig = meta.flow.sig | FLOW_SIG_VALID;
        /* Where a tie between equal members starts (see member_rank): the key's
         * CRC-32 modulo the prime 65521, then modulo the member count.  A CRC is
         * linear, so its low bits alone can be constant over structured keys
         * (CRC-32 mod 2 is the same for all 16 leaf1->leaf2 flows of the lab
         * fabric; CRC-16/ARC mod 8 takes 2 of 8 values when only the QP
         * varies); the prime modulus folds all 32 bits in.  The second hash is
         * the identity, i.e. a run-time modulo, which P4 has no operator for. */
        hash(meta.flow.rot_seed, HashAlgorithm.crc32, 32w0,
             { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, meta.flow.protocol, meta.flow.l4_id },
             32w65521);
        hash(meta.flow.rot, HashAlgorithm.identity, 32w0, { meta.flow.rot_seed },
             (bit<32>)meta.route.count);

        bit<32> stored_sig;
        flow_sig.read(stored_sig, meta.flow.slot);
        /* The slot's sequence numbers continue across owners, so that a
         * departure of a previous owner's packet never looks like ours. */
        flow_last_seq.read(meta.flow.last_seq, meta.flow.slot);
        flow_departed_seq.read(meta.flow.departed_seq, meta.flow.slot);
        flow_departed_stamp.read(meta.flow.departed_stamp, meta.flow.slot);
        flow_last_arrival.read(meta.flow.last_arrival, meta.flow.slot);
        flow_untracked_in.read(meta.flow.untracked_in, meta.flow.slot);
        flow_untracked_out.read(meta.flow.untracked_out, meta.flow.slot);
        meta.flow.gap_us = standard_metadata.ingress_global_timestamp - meta.flow.last_arrival;
        if (stored_sig == meta.flow.sig) {
            meta.flow.known = 1;
            flow_port.read(meta.flow.cur_port, meta.flow.slot);
            flow_state.read(meta.flow.status, meta.flow.slot);
            /* An elephant that went idle, and has nothing left in a (lower
             * priority) queue here, is a mouse again. */
            if (meta.flow.gap_us >= (timestamp_t)meta.cfg.elephant_idle_us &&
                meta.flow.departed_seq == meta.flow.last_seq) {
                meta.flow.status = 0;
            }
        } else {
            meta.flow.known = 0;
            meta.flow.status = 0;
            /* Another flow owns the slot and is still active: do not take its
             * state over (it could then be reordered); this flow is routed by
             * hash alone and not tracked. */
            if ((stored_sig & FLOW_SIG_VALID) != 0 &&
                meta.flow.gap_us < (timestamp_t)meta.cfg.flowlet_timeout_us) {
                meta.flow.slot_busy = 1;
            }
        }
    }
}

control Flowlet(inout headers_t hdr,
                inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {

    /* Path changes by reason (p4src/CONTRACT.md s.1); index 0 counts first
     * placements.  Size: CHANGE_REASON_SLOTS. */
    counter(CHANGE_REASON_SLOTS, CounterType.packets_and_bytes) path_changes;
    /* Packets of flows whose slot another active flow holds (routed by hash,
     * untracked); a persistent count means FLOW_SLOTS is too small. */
    counter(1, CounterType.packets_and_bytes) collisions;

    action choose_best(in bit<8> reason) {
        meta.path.chosen_port = meta.path.best_port;
        meta.path.changed = 1;
        meta.path.change_reason = reason;
    }

    apply {
        timestamp_t now = standard_metadata.ingress_global_timestamp;
        meta.path.chosen_port = (port_t)meta.flow.cur_port;

        if (meta.path.best_rank == RANK_UNUSABLE) {
            /* Every member is down. */
            meta.drop = 1;
            meta.drop_reason = DROP_NO_LIVE_MEMBER;
        } else if (meta.flow.slot_busy == 1) {
            meta.path.chosen_port = meta.path.hash_port;
            collisions.count(0);
        } else if (meta.flow.known == 0) {
            choose_best(CHANGE_NEW);
            if ((meta.cfg.order_guards & ORDER_GUARD_TAKEOVER) != 0 &&
                meta.flow.untracked_in != meta.flow.untracked_out) {
                /* Taking over a slot while packets routed by hash for it are
                 * still queued: they may be ours, so stay where they went. */
                meta.path.chosen_port = meta.path.hash_port;
            }
        } else if (meta.path.cur_member == 0) {
            choose_best(CHANGE_MEMBERSHIP);
        } else if (meta.path.cur_alive == 0) {
            choose_best(CHANGE_FAILOVER);
        } else if (meta.path.cur_silent == 1 && meta.path.best_score < SCORE_SUSPECT) {
            /* The current path went silent (feedback.p4): what the flow sent
             * there since is lost, not queued; leave it now for a member
             * that is not suspect. */
            choose_best(CHANGE_SUSPECT);
        } else if (meta.fb.restart == 1 &&
                   (meta.adapt.move_guards & MOVE_POINT_RESTART) != 0 &&
                   meta.path.best_score < meta.path.cur_score &&
                   (meta.path.cur_score == SCORE_SUSPECT ||
                    meta.path.cur_score - meta.path.best_score >
                        meta.cfg.hysteresis_us << WEIGHT_SHIFT)) {
            /* The sender went back to this PSN (go-back-N): the receiver
             * discards whatever of the flow the old path still holds, so
             * the flow may take the best member now (a lossy path's flows
             * leave here; define.p4 MOVE_POINT_RESTART).  Off a suspect
             * path the hysteresis does not apply: the best member may be
             * stalled (SCORE_CLAMP, one below SCORE_SUSPECT), and a pause
             * ends where a dead path does not. */
            choose_best(CHANGE_RESTART);
        } else {
            bit<1> gap_ok = 0;
            bit<1> drain_ok = 0;
            /* Drained: every packet of the flow has left this switch, at least
             * the margin plus the old member's downstream level ago, and that
             * level was measured (an unmeasured member's downstream queue is
             * unknown: its rendered level 0 proves nothing). */
            bit<1> drained = 0;
            /* The margin: the configured skew allowance plus the old path's
             * downstream delay.  Fresh feedback reports the worst hop (a
             * max, CONGA's metric); the packets behind the drain point still
             * cross every downstream hop, two in a leaf-spine fabric (the
             * spine's downlink and the destination leaf's host port), so a
             * fresh level counts twice.  Without fresh feedback the
             * controller's level counts once, as it is already a path sum. */
            bit<32> margin = meta.cfg.drain_margin_us + meta.path.cur_level;
            if (meta.path.cur_fresh == 1) {
                margin = meta.cfg.drain_margin_us + (meta.path.cur_level << 1);
            }
            if (meta.path.cur_measured == 1 &&
                meta.flow.departed_seq == meta.flow.last_seq &&
                now - meta.flow.departed_stamp >= (timestamp_t)margin) {
                drained = 1;
            }
            if (meta.cfg.gap_moves == 1 &&
                meta.flow.gap_us >= (timestamp_t)meta.cfg.flowlet_timeout_us &&
                (drained == 1 || (meta.cfg.order_guards & ORDER_GUARD_GAP_DRAIN) == 0)) {
                gap_ok = 1;
            }
            /* Drain and explore moves need the drain proof (MOVE_GUARD_DRAIN_PROOF;
             * clearing it is the tests' negative control). */
            bit<1> proof = drained;
            if ((meta.adapt.move_guards & MOVE_GUARD_DRAIN_PROOF) == 0) {
                proof = 1;
            }
            if (meta.cfg.drain_moves == 1 && proof == 1 &&
                (meta.flow.elephant == 1 || meta.adapt.drain_any == 1)) {
                drain_ok = 1;
            }
            /* Move only if the best member beats the current one by more
             * than the hysteresis margin. */
            if ((gap_ok == 1 || drain_ok == 1) &&
                meta.path.best_score < meta.path.cur_score &&
                meta.path.cur_score - meta.path.best_score >
                    meta.cfg.hysteresis_us << WEIGHT_SHIFT) {
                if (gap_ok == 1) {
                    choose_best(CHANGE_GAP);
                } else {
                    choose_best(CHANGE_DRAIN);
                }
            } else if (meta.pressure.hot == 1 && proof == 1 && meta.route.ecmp == 0 &&
                       meta.path.cur_fresh == 0 &&
                       meta.path.best_port == meta.path.chosen_port &&
                       meta.path.alt_rank != RANK_UNUSABLE) {
                /* Congestion signals while the current member scores best
                 * here: the congestion is beyond what this switch sees, so
                 * try the next best member; one move per round of signals.
                 * Only where the path is not seen: with fresh feedback the
                 * member's score already holds its remote congestion, and
                 * signals the score does not explain come from the
                 * destination (an incast at its host port), which no other
                 * member avoids.  An ECMP path set keeps its hash member
                 * (ECMP never moves). */
                meta.path.chosen_port = meta.path.alt_port;
                meta.path.changed = 1;
                meta.path.change_reason = CHANGE_EXPLORE;
                pressure_signals.write(meta.pressure.slot, 0);
            }
        }

        if (meta.drop == 0) {
            standard_metadata.egress_spec = meta.path.chosen_port;
        }
        if (meta.drop == 0 && meta.flow.slot_busy == 1) {
            meta.flow.untracked = 1;
            flow_untracked_in.write(meta.flow.slot, meta.flow.untracked_in + 1);
        }
        if (meta.drop == 0 && meta.flow.slot_busy == 0) {
            meta.flow.seq = meta.flow.last_seq + 1;
            meta.flow.tracked = 1;
            flow_sig.write(meta.flow.slot, meta.flow.sig);
            flow_port.write(meta.flow.slot, (bit<16>)meta.path.chosen_port);
            flow_last_arrival.write(meta.flow.slot, now);
            flow_last_seq.write(meta.flow.slot, meta.flow.seq);
            flow_state.write(meta.flow.slot, meta.flow.status);
            if (meta.path.changed == 1) {
                path_changes.count((bit<32>)meta.path.change_reason);
                /* Where the flow's sent PSNs stop on the old path (0 for a
                 * new owner of the slot): feedback.p4 charges a later resend
                 * of them to that path, not this one. */
                if (meta.path.change_reason == CHANGE_NEW) {
                    flow_move_psn.write(meta.flow.slot, 0);
                } else {
                    flow_move_psn.write(meta.flow.slot, meta.fb.sent_top);
                }
            }
        }
    }
}

control DrainRecord(inout headers_t hdr,
                    inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        /* Egress half of drain detection: which of the flow's packets left
         * last, and when. */
        if (meta.flow.tracked == 1) {
            flow_departed_seq.write(meta.flow.slot, meta.flow.seq);
            flow_departed_stamp.write(meta.flow.slot, standard_metadata.egress_global_timestamp);
        } else if (meta.flow.untracked == 1) {
            bit<32> out_count;
            flow_untracked_out.read(out_count, meta.flow.slot);
            flow_untracked_out.write(meta.flow.slot, out_count + 1);
        }
    }
}

#endif  /* _STELLAR_CONTROL_FLOWLET_P4_ */
