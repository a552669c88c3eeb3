/*
 * flowlet.p4 (TNA) -- per-flow state and flowlet switching, one
 * RegisterAction per register per pass.
 *
 * v1model: seven registers per flow slot (signature, port, last arrival,
 * sequence numbers, departure stamp, state), read and written separately.
 * Tofino: two registers per slot, `arrivals` (the last arrival of any packet
 * in the slot) and `flows` (signature | member).  The first pass reads and
 * restamps `arrivals`; ingress decides whether the slot was used within the
 * flowlet timeout ("recent"), then `touch` reads `flows` and writes the new
 * flow's tag only into a slot that is not recent:
 *   same flow, recent                 -> keep its member
 *   same flow, not recent             -> keep it for now; a gap (below)
 *   another flow's (or no) tag, not recent -> take the best member  (new)
 *   another flow's tag, recent        -> hash member, slot untouched
 * (first design, refused by bf-p4c: one paired {tag, time} cell deciding all
 * of this in one stateful ALU, README.md "bf-p4c").
 * A colliding flow's packets restamp `arrivals` too, so the holder's gap can
 * be masked (it then stays where it is: no reordering, fewer moves).
 * A new flow with the DRE on, and a gap, are settled by a second pass
 * (Resubmit, resubmit_h.kind = RESUB_CHOOSE) that writes the member the
 * first pass chose (dre.p4).  A gap moves only once the flow's last packet
 * has left the old member's queue (`departed`, read in that second pass), so
 * a flow never changes (port, queue) while a packet of it is queued here,
 * even when the queue is longer than the timeout.
 * The flow CRC-32 is computed once (stellar.p4) and sliced: [12:0] is the
 * slot, [30:19] the signature, [2:0] the hash member; v1model computes CRC-32
 * and CRC-16 separately over the same key.
 * Drain (b): an elephant (any tracked flow with `drain_any`: a DCQCN-paced
 * RoCE flow rarely pauses for a flowlet timeout, and the drain point is the
 * move point it has) kept on a member that is no longer the best gets a
 * second pass (Resubmit, with its member and its previous packet's
 * arrival, port and queue): that pass reads the (port, queue)'s last departure
 * stamp -- the arrival time of the last packet that left that queue, which egress bridges
 * through and reports in the feedback packets -- and moves the flow if it
 * is later than the flow's previous packet and the downstream skew margin
 * has passed since that packet.  One access per register per pass, and one
 * place in the program per register: the first pass touches `arrivals` then
 * `flows`, the second `departed` then `flows`, a feedback packet `departed`.
 * bf-p4c places each register with the one table that executes it, so each
 * register has one RegisterAction, executed at one call site whose inputs
 * each pass computes (README.md, "bf-p4c": two actions on `flows`, called
 * after different chains, could not share a stage).
 * What `update` returns is decided by one const table (`decide`) on 1-bit
 * flags, all known one step after it: the placement needs the decision as
 * few steps behind the register as possible, and every later block (the
 * fallback, the DRE's byte add and choice) waits for it.
 */
/* Each cell 16 bits with 16-bit inputs: the 32-bit cells with two 32-bit
 * inputs did not fit the stateful ALU's input crossbar (README.md, "bf-p4c").
 * bf-p4c's stateful ALU takes no slice of a register value in a condition,
 * no concatenation or OR in its output, and at most two comparisons per
 * action. */
control Flowlet(inout tna_headers_t hdr, inout tna_ingress_metadata_t meta,
                in bit<32> timeout_ns, in bit<1> drain_moves, in bit<1> dre_on,
                in bit<16> margin_units, in bit<1> gap_drain,
                in bit<1> drain_any, in bit<1> drain_proof, in bit<1> restart_point) {
    /* Per flow slot: the flow's tag, 0 = empty: bit 15 set (used), 14:3 the
     * signature (12 bits of the CRC), 2:0 the member.  A flow's tag lies in
     * [own_key, own_key + 7] with own_key = its signature bits and member 0.
     * Size: FLOW_SLOTS (8192 = 13 bits of the CRC) x 16 bits. */
    Register<bit<16>, bit<13>>(FLOW_SLOTS, 0) flows;
    /* Per flow slot: the last arrival of any packet hashed to the slot (ns,
     * low 32 bits, bit 0 forced to 1 so that 0 means "never").  Size: FLOW_SLOTS. */
    Register<bit<32>, bit<13>>(FLOW_SLOTS, 0) arrivals;
    /* Per (port, queue): the arrival stamp (ns >> 6, 16 bits) of the last
     * packet that left that queue of the port, from the feedback packets
     * (per queue: only one queue is FIFO); bit 16: some departure was
     * recorded; bits 31:17: twice the fresh congestion of the path beyond
     * the port as that report's tag read it (64 ns units, 0: none fresh),
     * the drain margin's feedback part.  Per port, not per (group, member): a feedback packet names
     * its port and a second pass the port its flow was on, both from
     * headers the parser extracts, so the index is ready in stage 0 (a
     * (group, member) of the feedback's port waited for port_member).
     * Size: 512 ports x 32 queues. */
    Register<bit<32>, bit<14>>(16384, 0) departed;

    bit<16> sig_base; /* the flow's key: its tag is sig_base | member */
    bit<16> own_key;      /* `update` writes a slot whose tag is not in [own_key, own_key + 7] */
    bit<16> offer;    /* the tag `update` writes, or 0: leave the slot */
    /* The index by identity hashes: a container written from three PHV
     * sources took two instructions, in two steps (bf-p4c); a hash unit
     * places all the bits at once.  (The feedback's cell stays an OR with a
     * constant: with the index, two hashes in one action needed 64 bits of
     * the 32-bit immediate pathway on Tofino-1.) */
    Hash<bit<14>>(HashAlgorithm_t.IDENTITY) fb_index_of;
    Hash<bit<14>>(HashAlgorithm_t.IDENTITY) resub_index_of;
    bit<14> dep_index;     /* {port, queue} */
    bit<16> offer_cur;     /* the flow's tag with the second pass's member */
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) prev_stamp_of;   /* the previous arrival in 64 ns units */
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) sig_of;          /* sig_base (apply block) */
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) dep_cell_of;     /* a feedback's `departed` cell */
    bit<32> dep_cell;

    /* rv: the slot's previous arrival; the slot now holds this packet's. */
    RegisterAction<bit<32>, bit<13>, bit<32>>(arrivals) arrive = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = v;
            v = meta.stamp;
        }
    };
    /* Both passes.  rv: the tag before this packet.  The slot takes `offer`
     * unless offer is 0 or the tag is in [own_key, own_key + 7]:
     *   first pass: own_key = the flow's own; offer = its tag with the best
     *     member, or 0 when the slot was used within the flowlet timeout
     *     (held by an active flow): a free slot of another flow is taken,
     *     the flow's own slot is left as it is;
     *   second pass: own_key = 1, which no tag is in (every tag has bit 15
     *     set), so the slot takes the move (`offer` != 0).  The first pass
     *     restamped `arrivals`, so no other flow took the slot since. */
    RegisterAction<bit<16>, bit<13>, bit<16>>(flows) update = {
        void apply(inout bit<16> v, out bit<16> rv) {
            rv = v;
            if (v - own_key >= 16w8 && offer != 0) {
                v = offer;
            }
        }
    };
    /* A feedback packet writes its departure (bit 16 set: some departure is
     * known), a second pass reads the cell.  Two register actions, each one
     * instruction (the write as an OR with a constant in the stateful ALU:
     * written into a field first, the feedback's branch was two dependent
     * tables, which held back the rest of ingress on Tofino-1).  The cell
     * {downstream_x2, valid, departed_ts} comes from the feedback header
     * alone, by an identity hash (a hash unit places the bits at once). */
    RegisterAction<bit<32>, bit<14>, bit<32>>(departed) record_dep = {
        void apply(inout bit<32> v) {
            v = dep_cell;
        }
    };
    RegisterAction<bit<32>, bit<14>, bit<32>>(departed) read_dep = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = v;
        }
    };
    /* Two-field comparisons as the sign of a difference computed in a
     * keyless table (see elephant.p4: gateway width, mid-end folding).  The
     * timeout and the margin are taken off this packet's stamp first
     * (`deadlines`, which needs only the clock and the parameters), so that
     * each test is one difference after the register read: age and
     * age - timeout side by side, not one after the other (a shorter
     * dependency chain for bf-p4c's placement; the same values mod 2^32
     * and 2^16). */
    bit<32> prev;
    bit<32> age;
    bit<32> left;
    bit<32> dep;
    bit<32> stamp_less_timeout;
    bit<16> stamp_less_margin;
    bit<16> since;
    bit<16> wait_base;
    bit<16> wait_left;
    action take_deadlines() {
        stamp_less_timeout = meta.stamp - timeout_ns;
        stamp_less_margin = meta.stamp16 - margin_units;
    }
    table deadlines { actions = { take_deadlines; } const default_action = take_deadlines(); size = 1; }
    action diff_age() { age = meta.stamp - prev; left = stamp_less_timeout - prev; }
    table arrival_age { actions = { diff_age; } const default_action = diff_age(); size = 1; }
    action diff_drain() { since = dep[15:0] - meta.resub.prev_ts; }
    table drain_times { actions = { diff_drain; } const default_action = diff_drain(); size = 1; }
    action diff_wait() { wait_base = stamp_less_margin - meta.resub.prev_ts; }
    table drain_wait { actions = { diff_wait; } const default_action = diff_wait(); size = 1; }
    /* The margin's feedback part, after the register read: fresh feedback
     * reports the worst hop beyond the port (CONGA's max), and the packets
     * behind the drain point cross two downstream hops (the spine's downlink
     * and the destination leaf's host port), so the margin is
     * drain_margin + 2 x that level (v1model's flowlet.p4).  The configured
     * margin stays: a PFC-paused spine queue sends no feedback while it
     * holds the flow's packets. */
    action diff_extra() { wait_left = wait_base - (bit<16>) dep[31:17]; }
    table drain_extra { actions = { diff_extra; } const default_action = diff_extra(); size = 1; }

    /* The decision, one table (was a chain of nested conditions, each reading
     * what the one before wrote: eight steps of bf-p4c's placement).  Keys:
     * 1-bit flags that are all known one step after `update` (the slot's
     * member's liveness, its measured bit, whether it is the best member
     * and whether the tag is the flow's own), or before it; actions: the
     * member, its liveness (failover.p4 falls back from there) and what the
     * pass asks for next.  Rows in priority order (the first match wins):
     * second pass, then first pass. */
    bit<16> r;              /* the slot's tag before this packet */
    bit<1> second;          /* this is a second pass */
    bit<1> kind_choose;     /* ... of kind RESUB_CHOOSE */
    bit<1> moves;           /* ... and it moves the flow (set before `update`) */
    bit<1> old_ne_cur;      /* ... to another member than before the gap */
    bit<1> recent;          /* first pass: the slot was used within the timeout */
    bit<1> own;             /* the tag is this flow's */
    bit<1> stored_best;     /* the tag's member is the group's best */
    bit<1> stored_measured; /* ... has a measured level (dre_base.levels) */
    bit<1> stored_alive;    /* ... is up */
    /* (MEMBER_UP_TABLE: failover.p4, included before this file) */
    MEMBER_UP_TABLE(stored_up, meta.alive, r[2:0], stored_alive)
    /* bit r[2:0] of dre_base.levels' `measured` (the same bitmap test): a
     * move off an unmeasured member is refused (`decide`) */
    MEMBER_UP_TABLE(stored_measured_bit, meta.ctl_measured, r[2:0], stored_measured)
    /* A second pass's move, from the drain test's sign bits (one table after
     * the differences, where nested conditions were three steps):
     *   RESUB_CHOOSE: the DRE's choice (dre.p4), made in the first pass: a
     *     new flow's, or a gap's once drained (or when gaps need no drain);
     *   RESUB_DRAIN: drained, and the downstream skew margin has passed
     *     since the flow's previous packet (it may still be queued in the
     *     next switch: a later packet on a shorter path must not overtake it;
     *     the margin: drain_margin + 2 x the fresh path level the last
     *     departure's report carried, drain_extra);
 *     without the drain-proof guard (`drain_proof` 0, MOVE_GUARD_DRAIN_PROOF
 *     clear: the tests' negative control) it moves at once; so does a
 *     go-back-N restart's drain pass (resub.restart, restart.p4: what the
 *     old path still holds reaches the receiver as duplicates).
     * Drained: a departure is recorded (dep bit 16) and the last one arrived
     * no earlier than the flow's previous packet (since >= 0).  Size: 9 const rows. */
    /* (own_key 1: the slot takes the offer, whatever its tag, see update;
     * the best member's tag from path_choice's register read itself, not
     * from meta.best, which is one step later: the register's member field
     * is the member when bit 8 is clear, else the hash member counts) */
    action move_cur() { moves = 1; offer = offer_cur; own_key = 1; }
    action move_best() { moves = 1; offer = sig_base | meta.best_raw; own_key = 1; }
    action move_hashed() { moves = 1; offer = sig_base | meta.hashed16; own_key = 1; }
    action stay() { moves = 0; offer = 0; own_key = 1; }
    table second_offer {
        key = {
            meta.resub.kind: ternary; meta.resub.is_new: ternary; gap_drain: ternary;
            dep[16:16]: ternary; since[15:15]: ternary; wait_left[15:15]: ternary;
            meta.best_raw[8:8]: ternary; drain_proof: ternary; meta.resub.restart: ternary;
        }
        actions = { move_cur; move_best; move_hashed; stay; }
        const default_action = stay();
        const entries = {
            (RESUB_DRAIN, _, _, _, _, _, 0, _, 1): move_best();
            (RESUB_DRAIN, _, _, _, _, _, 1, _, 1): move_hashed();
            (RESUB_CHOOSE, 1, _, _, _, _, _, _, _): move_cur();
            (RESUB_CHOOSE, _, 0, _, _, _, _, _, _): move_cur();
            (RESUB_CHOOSE, _, _, 1, 0, _, _, _, _): move_cur();
            (RESUB_DRAIN, _, _, 1, 0, 0, 0, _, _): move_best();
            (RESUB_DRAIN, _, _, 1, 0, 0, 1, _, _): move_hashed();
            (RESUB_DRAIN, _, _, _, _, _, 0, 0, _): move_best();
            (RESUB_DRAIN, _, _, _, _, _, 1, 0, _): move_hashed();
        }
        size = 9;
    }
    /* The first pass's offer: the flow's tag with the best member, unless
     * the slot was used within the flowlet timeout (recent: an active flow
     * holds it, maybe this one).  Recent: a previous arrival (prev != 0) no
     * older than the timeout (age >= 0 and age - timeout < 0, sign bits:
     * exact for ages and timeouts below 2^31 ns).  The best member as in
     * second_offer.  Size: 5 const rows. */
    action free_best() { recent = 0; offer = sig_base | meta.best_raw; own_key = sig_base; }
    action free_hashed() { recent = 0; offer = sig_base | meta.hashed16; own_key = sig_base; }
    action held() { recent = 1; offer = 0; own_key = sig_base; }
    table first_offer {
        key = {
            prev: ternary; age[31:31]: ternary; left[31:31]: ternary;
            meta.best_raw[8:8]: ternary;
        }
        actions = { free_best; free_hashed; held; }
        const default_action = free_best();
        const entries = {
            (0, _, _, 0): free_best();
            (0, _, _, 1): free_hashed();
            (_, 0, 1, _): held();
            (_, _, _, 0): free_best();
            (_, _, _, 1): free_hashed();
        }
        size = 5;
    }

    /* One action each; the same index field (bf-p4c: the actions of one
     * table address its register alike).  Rows: 2 const. */
    action record_departure() { record_dep.execute(dep_index); }
    action read_departure() { dep = read_dep.execute(dep_index); }
    /* (a remote path report, path_feedback.p4, names no departure) */
    table departure_at {
        key = { meta.kind: exact; second: exact; meta.fb_remote: exact; }
        actions = { record_departure; read_departure; NoAction; }
        const default_action = NoAction();
        const entries = {
            (KIND_FEEDBACK, 0, 0): record_departure();
            (KIND_DATA, 1, 0): read_departure();
        }
        size = 2;
    }

    /* another flow holds the slot (or took it: not expected in a second
     * pass, see update): its hash member */
    action take_hashed() { meta.chosen = meta.hashed; meta.chosen_alive = meta.hashed_alive; }
    /* the flow stays on the slot's member */
    action take_stored() { meta.chosen = (member_t) r[2:0]; meta.chosen_alive = stored_alive; }
    /* ... and a move off it was refused (unmeasured member) */
    action stay_refused() {
        meta.chosen = (member_t) r[2:0]; meta.chosen_alive = stored_alive;
        meta.move_refused = 1;
    }
    /* a second pass writes the first pass's choice */
    action take_cur(bit<8> reason) {
        meta.chosen = meta.resub.cur; meta.chosen_alive = meta.cur_alive;
        meta.change_reason = reason;
    }
    /* a drain move (second pass) to the best member: CHANGE_DRAIN, or
     * CHANGE_RESTART at a go-back-N restart */
    action take_best_drain(bit<8> reason) {
        meta.chosen = meta.best; meta.chosen_alive = meta.best_alive;
        meta.change_reason = reason;
    }
    /* a new flow: the slot took the best member (offer); with the DRE on,
     * its choice is written by a second pass.  A pass that asks the DRE for
     * a choice fills the second pass's header here, all but the choice
     * itself (`cur`, which dre.p4 writes). */
    action new_choose() {
        meta.chosen = meta.best; meta.chosen_alive = meta.best_alive;
        meta.is_new = 1; meta.choose = 1;
        meta.resub.setValid();
        meta.resub.kind = RESUB_CHOOSE;
        meta.resub.elephant = meta.elephant;
        meta.resub.is_new = 1;
        meta.resub.restart = 0;
        meta.resub.old = meta.best;
        meta.resub.prev_ts = meta.prev_ts;
        /* (port: routing.p4's set_port; qid: queueing.p4's set_queue) */
        meta.resub._pad0 = 0; meta.resub._pad1 = 0;
        meta.resub._pad3 = 0; meta.resub._pad4 = 0; meta.resub._pad5 = 0;
    }
    action new_direct() {
        meta.chosen = meta.best; meta.chosen_alive = meta.best_alive;
        meta.is_new = 1; meta.change_reason = CHANGE_NEW;
    }
    /* a gap: the flow may move, in a second pass that first proves its
     * packets have left the old member's queue (a gap longer than the
     * timeout is not proof when the queue is longer still) */
    action gap_choose() {
        meta.old = (member_t) r[2:0];
        meta.chosen = (member_t) r[2:0]; meta.chosen_alive = stored_alive;
        meta.choose = 1;
        meta.resub.setValid();
        meta.resub.kind = RESUB_CHOOSE;
        meta.resub.elephant = meta.elephant;
        meta.resub.is_new = 0;
        meta.resub.restart = 0;
        meta.resub.old = (member_t) r[2:0];
        meta.resub.prev_ts = meta.prev_ts;   /* the gap's drain test */
        /* (port: routing.p4's set_port; qid: queueing.p4's set_queue) */
        meta.resub._pad0 = 0; meta.resub._pad1 = 0;
        meta.resub._pad3 = 0; meta.resub._pad4 = 0; meta.resub._pad5 = 0;
    }
    action gap_refused() {
        meta.old = (member_t) r[2:0];
        meta.chosen = (member_t) r[2:0]; meta.chosen_alive = stored_alive;
        meta.move_refused = 1;
    }
    action gap_stay() {   /* DRE off and already on the best member: nothing to choose */
        meta.old = (member_t) r[2:0];
        meta.chosen = (member_t) r[2:0]; meta.chosen_alive = stored_alive;
    }
    /* an elephant kept on a worse member: test for drain in a second pass
     * (its register accesses are that pass's; stellar.p4 sets the resubmit) */
    action drain_request(bit<1> at_restart) {
        meta.chosen = (member_t) r[2:0]; meta.chosen_alive = stored_alive;
        meta.drain_test = 1;
        meta.resub.setValid();
        meta.resub.kind = RESUB_DRAIN;
        meta.resub.elephant = meta.elephant;   /* (a mouse keeps its queue) */
        meta.resub.is_new = 0;
        meta.resub.restart = at_restart;
        meta.resub.prev_ts = meta.prev_ts;
        meta.resub.cur = (member_t) r[2:0];
        meta.resub.old = (member_t) r[2:0];
        /* (port: routing.p4's set_port; qid: queueing.p4's set_queue) */
        meta.resub._pad0 = 0; meta.resub._pad1 = 0;
        meta.resub._pad3 = 0; meta.resub._pad4 = 0; meta.resub._pad5 = 0;
    }
    /* Size: the 20 const rows. */
    table decide {
        key = {
            second: ternary; kind_choose: ternary; own: ternary; moves: ternary;
            meta.resub.is_new: ternary; old_ne_cur: ternary; recent: ternary;
            dre_on: ternary; stored_best: ternary; stored_measured: ternary;
            drain_moves: ternary; meta.elephant: ternary; drain_any: ternary;
            meta.resend: ternary; restart_point: ternary; meta.resub.restart: ternary;
        }
        actions = { take_hashed; take_stored; stay_refused; take_cur; take_best_drain;
                    new_choose; new_direct; gap_choose; gap_refused; gap_stay; drain_request; }
        const default_action = take_stored();
        const entries = {
            /* second pass                                                      */
            (1, _, 0, _, _, _, _, _, _, _, _, _, _, _, _, _): take_hashed();
            (1, 1, 1, 1, 1, _, _, _, _, _, _, _, _, _, _, _): take_cur(CHANGE_NEW);
            (1, 1, 1, 1, 0, 1, _, _, _, _, _, _, _, _, _, _): take_cur(CHANGE_GAP);
            (1, 1, 1, 1, 0, 0, _, _, _, _, _, _, _, _, _, _): take_cur(0xFF);
            (1, 1, 1, 0, _, _, _, _, _, _, _, _, _, _, _, _): take_stored();
            (1, 0, 1, 1, _, _, _, _, _, _, _, _, _, _, _, 1): take_best_drain(CHANGE_RESTART);
            (1, 0, 1, 1, _, _, _, _, _, _, _, _, _, _, _, 0): take_best_drain(CHANGE_DRAIN);
            (1, 0, 1, 0, _, _, _, _, _, _, _, _, _, _, _, _): take_stored();
            /* first pass: another flow's slot, recent / free                  */
            (0, _, 0, _, _, _, 1, _, _, _, _, _, _, _, _, _): take_hashed();
            (0, _, 0, _, _, _, 0, 1, _, _, _, _, _, _, _, _): new_choose();
            (0, _, 0, _, _, _, 0, 0, _, _, _, _, _, _, _, _): new_direct();
            /* first pass, own slot, a gap: choose unless the DRE is off and
             * the flow is on the best member already; refused if unmeasured */
            (0, _, 1, _, _, _, 0, 0, 1, _, _, _, _, _, _, _): gap_stay();
            (0, _, 1, _, _, _, 0, _, _, 1, _, _, _, _, _, _): gap_choose();
            (0, _, 1, _, _, _, 0, _, _, 0, _, _, _, _, _, _): gap_refused();
            /* first pass, own slot, recent, a go-back-N resend off the best
             * member (restart.p4, MOVE_POINT_RESTART): a drain pass without
             * the proof, measured or not (the receiver discards what the old
             * path holds: no downstream queue to wait for) */
            (0, _, 1, _, _, _, 1, _, 0, _, _, _, _, 1, 1, _): drain_request(1);
            /* first pass, own slot, recent: an elephant (any flow with
             * drain_any) off the best member */
            (0, _, 1, _, _, _, 1, _, 0, 1, 1, 1, _, _, _, _): drain_request(0);
            (0, _, 1, _, _, _, 1, _, 0, 1, 1, _, 1, _, _, _): drain_request(0);
            (0, _, 1, _, _, _, 1, _, 0, 0, 1, 1, _, _, _, _): stay_refused();
            (0, _, 1, _, _, _, 1, _, 0, 0, 1, _, 1, _, _, _): stay_refused();
            (0, _, 1, _, _, _, 1, _, _, _, _, _, _, _, _, _): take_stored();
        }
        size = 20;
    }

    /* Each gate holds one table (or assignments), and the gates read the
     * parser's `kind`, the resubmit flag and flags made in stage 0: on
     * Tofino-1 a gate waits for every input of every table under it, so a
     * block of tables under one condition waited for the latest of them
     * (README.md, "Tofino-1").  The first pass: arrive, first_offer,
     * update, flags, decide; the second: departure_at, the drain
     * differences, second_offer, update, flags, decide. */
    apply {
        if (meta.resub.isValid()) {
            second = 1;
        } else {
            second = 0;
        }
        /* `departed`: written by feedback, read by a second pass, at
         * (port, queue) from the feedback header or the resubmit header */
        if (meta.kind == KIND_FEEDBACK) {
            dep_index = fb_index_of.get({hdr.feedback.port, hdr.feedback.qid[4:0]});
            dep_cell = dep_cell_of.get({hdr.feedback.downstream_x2[14:0], 1w1,
                                        hdr.feedback.departed_ts});
        } else {
            dep_index = resub_index_of.get({meta.resub.port, meta.resub.qid});
        }
        departure_at.apply();
        /* {valid (bit 15: a used slot), flow_hash[30:19], member 0}, by an identity hash: written
         * as (hash & 0xFFF8) | VALID, p4c's mid end substituted that
         * expression into every use (offer's slices), and bf-p4c's
         * instruction selection failed on it (an internal error) */
        sig_base = sig_of.get({1w1, meta.flow_hash[30:19], 3w0});
        if (meta.resub.isValid()) {
            /* a second pass: RESUB_CHOOSE, and whether it moves the flow */
            if (meta.resub.kind == RESUB_CHOOSE) {
                kind_choose = 1;
            } else {
                kind_choose = 0;
            }
        }
        if (meta.resub.isValid()) {
            if (meta.resub.old != meta.resub.cur) {
                old_ne_cur = 1;
            } else {
                old_ne_cur = 0;
            }
        }
        deadlines.apply();
        if (meta.kind == KIND_DATA && second == 0 && meta.drop == 0 && meta.no_route == 0) {
            /* first pass: the slot's previous arrival */
            prev = arrive.execute(meta.flow_hash[12:0]);
        }
        meta.prev_ts = prev_stamp_of.get({prev[21:6]});   /* (a hash, not a slice copy: PHV alignment) */
        arrival_age.apply();
        /* Second pass.  Drained: the last packet that left the old
         * member's queue arrived no earlier than this flow's previous
         * packet (FIFO: then all of the flow's packets have left).
         * Stamps are 64 ns units, so a packet that arrived up to 64 ns
         * before the flow's previous one can stand for it, and a flow
         * that paused over 2 ms is not tested (the stamps wrap in
         * 4.2 ms; its flowlet gap moves it anyway when the timeout is
         * below that) (README.md: drain).  `second_offer` decides. */
        offer_cur = sig_base | (bit<16>) meta.resub.cur;
        drain_times.apply();
        drain_wait.apply();
        drain_extra.apply();
        if (second == 1) {
            second_offer.apply();
        } else {
            first_offer.apply();
        }
        if (meta.kind == KIND_DATA && meta.drop == 0 && meta.no_route == 0) {
            r = update.execute(meta.flow_hash[12:0]);
        }
        /* the flags of the slot's tag, side by side, then the decision */
        if (r[15:3] == sig_base[15:3]) {
            own = 1;
        } else {
            own = 0;
        }
        if (r[2:0] == meta.best) {
            stored_best = 1;
        } else {
            stored_best = 0;
        }
        stored_up.apply();
        stored_measured_bit.apply();
        if (meta.kind == KIND_DATA && meta.drop == 0 && meta.no_route == 0) {
            decide.apply();
        }
    }
}
