/*
 * failover.p4 (TNA) -- data-plane liveness.
 *
 * v1model: a liveness table the controller writes, read per member.
 * Tofino: the packet generator's port-down application sends a packet
 * (pktgen_port_down_header_t, on the pktgen port) the moment a port goes
 * down; ingress clears the port's bit in its group's liveness bitmap (one
 * RegisterAction).  A data packet reads the bitmap once; a const table
 * tests a member's bit (no run-time shift).  Every candidate member is
 * tested before the flowlet decision (Liveness: the best, the hash member,
 * a second pass's choice, the lowest live member; flowlet.p4 the slot's
 * member), and the decision copies the chosen one's bit, so that the
 * fallback below is one step after it (a shorter chain for bf-p4c).  A flow
 * on a dead member moves at once to the best member, or if that is dead too
 * to the group's lowest live member;
 * the flow's stored member is not rewritten in the same pass (one access),
 * so the choice is remade per packet until the flow's next gap, always the
 * same for the same state: no reordering.  The controller sets a bit back
 * (register write) when the port comes up.
 *
 * Silent members: a flow routed by hash (its slot held by another flow) is
 * sent to its hash member unless that member's path went silent while
 * another member is live (v1model's hash_key): what goes to a silent path
 * is lost, so leaving it cannot reorder.  Silence is found in egress per
 * (destination leaf, path) (path_feedback.p4); a tag's feedback copy says so
 * (`feedback_h.silent`), and `silent` keeps it per (group, member) until the
 * path answers again (a returned entry's copy, `remote`).  The hash member
 * then counts as down (`hashed_up` reads both bitmaps), and the fallback
 * below takes the best member.  A group serving several leaves marks the
 * member for all of them, as `group_best` does.
 *
 * Reported dead: a destination leaf whose own uplink on a path is down says
 * so on what it sends back (path_feedback.p4, FB_METRIC_DEAD), and the copy
 * for ingress is remote and silent.  `dead` keeps per group the members so
 * reported, with the time of the last report; for TNA_DEAD_HOLD_NS after it
 * a data packet's bitmap (`alive`) counts them as down, unless that leaves
 * no member up: every candidate test, the fallback and the DRE then treat
 * the member as a dead port, so a flow on it leaves with its next packet
 * (v1model: a fresh dead report is silence, and suspect flows move at
 * once).  No answer clears it: a path nobody sends on gets none, so the
 * bits expire instead (reports go on while the far leaf sends here and its
 * port stays down); the bridged bitmap is the raw one (the far leaf's own
 * dead report is about its ports alone).
 */
/* A const table: is bit `m` of bitmap `a` set (member m up; flowlet.p4 also
 * tests the `measured` bitmap with it)?  Eight fixed ternary rows (no
 * run-time shift); the action sets `flag`. */
#define MEMBER_UP_TABLE(name, a, m, flag)                                      \
    action name##_up() { flag = 1; }                                           \
    action name##_down() { flag = 0; }                                         \
    table name {                                                               \
        key = { a: ternary; m: exact; }                                        \
        actions = { name##_up; name##_down; }                                  \
        default_action = name##_down();                                        \
        const entries = {                                                      \
            (8w0x01 &&& 8w0x01, 0): name##_up();                               \
            (8w0x02 &&& 8w0x02, 1): name##_up();                               \
            (8w0x04 &&& 8w0x04, 2): name##_up();                               \
            (8w0x08 &&& 8w0x08, 3): name##_up();                               \
            (8w0x10 &&& 8w0x10, 4): name##_up();                               \
            (8w0x20 &&& 8w0x20, 5): name##_up();                               \
            (8w0x40 &&& 8w0x40, 6): name##_up();                               \
            (8w0x80 &&& 8w0x80, 7): name##_up();                               \
        }                                                                      \
        size = 8;                                                              \
    }

struct dead_pair_t {
    bit<32> bits;     /* bit i: member i reported dead */
    bit<32> stamp;    /* the last report, ns */
}

control Liveness(inout tna_headers_t hdr, inout tna_ingress_metadata_t meta) {
    /* Per group: bit i = member i is up.  Size: 256 groups. */
    Register<bit<8>, group_t>(256, 8w0xFF) alive;
    /* Per group: bit i = member i's path is silent.  Size: 256 groups. */
    Register<bit<8>, group_t>(256, 0) silent;
    /* Per group: {bit i = member i reported dead, when last reported (ns)}.
     * Size: 256 groups. */
    Register<dead_pair_t, group_t>(256, {0, 0}) dead;
    bit<32> dead_limit;    /* now - TNA_DEAD_HOLD_NS: a report older is void */
    bit<8> member_bit;     /* a feedback packet's member as a bit */
    bit<8> member_clear;   /* all ones but that bit */
    bit<8> down_mask;   /* all ones but the member that went down */
    /* The port-down packet's group, in its own field rather than meta.group:
     * later blocks read meta.group (the data packets' group), and bf-p4c
     * would order them after this table's write (a longer chain). */
    group_t down_group;
    RegisterAction<bit<8>, group_t, bit<8>>(alive) mark_down = {
        void apply(inout bit<8> v, out bit<8> rv) {
            v = v & down_mask;
            rv = v;
        }
    };
    RegisterAction<bit<8>, group_t, bit<8>>(alive) read_alive = {
        void apply(inout bit<8> v, out bit<8> rv) {
            rv = v;
        }
    };
    RegisterAction<bit<8>, group_t, bit<8>>(silent) mark_silent = {
        void apply(inout bit<8> v) { v = v | member_bit; }
    };
    RegisterAction<bit<8>, group_t, bit<8>>(silent) mark_answered = {
        void apply(inout bit<8> v) { v = v & member_clear; }
    };
    RegisterAction<bit<8>, group_t, bit<8>>(silent) read_silent = {
        void apply(inout bit<8> v, out bit<8> rv) { rv = v; }
    };
    /* a dead report: the member's bit, over bits gone void */
    RegisterAction<dead_pair_t, group_t, bit<32>>(dead) mark_dead = {
        void apply(inout dead_pair_t v) {
            if (dead_limit - v.stamp < 32w0x80000000) {
                v.bits = (bit<32>) member_bit;
            } else {
                v.bits = v.bits | (bit<32>) member_bit;
            }
            v.stamp = dead_limit + TNA_DEAD_HOLD_NS;   /* now (two PHV inputs in all) */
        }
    };
    RegisterAction<dead_pair_t, group_t, bit<32>>(dead) read_dead = {
        void apply(inout dead_pair_t v, out bit<32> rv) {
            rv = 0;
            if (dead_limit - v.stamp >= 32w0x80000000) {
                rv = v.bits;
            }
        }
    };
    action bits(bit<8> set, bit<8> clear) { member_bit = set; member_clear = clear; }
    /* A feedback packet's member as masks (no run-time shift).  Rows: 8 const. */
    table member_bits {
        key = { meta.fb_member: exact; }
        actions = { bits; }
        const default_action = bits(0, 0xFF);
        const entries = {
            0: bits(0x01, 0xFE);
            1: bits(0x02, 0xFD);
            2: bits(0x04, 0xFB);
            3: bits(0x08, 0xF7);
            4: bits(0x10, 0xEF);
            5: bits(0x20, 0xDF);
            6: bits(0x40, 0xBF);
            7: bits(0x80, 0x7F);
        }
        size = 8;
    }
    /* The register's three uses in one table: a silent tag's report marks
     * its member, and so does a dead uplink's report from the destination
     * leaf (remote and silent: path_feedback.p4), an answer (remote) clears
     * it, a data packet reads the group's bitmap.  Rows: 4 const. */
    action do_mark_silent() { mark_silent.execute(meta.fb_group); }
    action do_mark_answered() { mark_answered.execute(meta.fb_group); }
    action do_read_silent() { meta.silent = read_silent.execute(meta.group); }
    action no_silent() { meta.silent = 0; }
    table silent_at {
        key = { meta.kind: exact; meta.fb_hit: ternary; hdr.feedback.silent: ternary;
                hdr.feedback.remote: ternary; }
        actions = { do_mark_silent; do_mark_answered; do_read_silent; no_silent; }
        const default_action = no_silent();
        const entries = {
            (KIND_FEEDBACK, 1w1 &&& 1w1, 1w1 &&& 1w1, 1w0 &&& 1w1): do_mark_silent();
            (KIND_FEEDBACK, 1w1 &&& 1w1, 1w1 &&& 1w1, 1w1 &&& 1w1): do_mark_silent();
            (KIND_FEEDBACK, 1w1 &&& 1w1, 1w0 &&& 1w1, 1w1 &&& 1w1): do_mark_answered();
            (KIND_DATA, 1w0 &&& 1w0, 1w0 &&& 1w0, 1w0 &&& 1w0): do_read_silent();
        }
        size = 4;
    }
    /* The dead register's two uses: a dead report (remote and silent)
     * marks its member, a data packet reads the group's.  Rows: 2 const. */
    action do_mark_dead() { mark_dead.execute(meta.fb_group); }
    action do_read_dead() { meta.dead = (bit<8>) read_dead.execute(meta.group); }
    action no_dead() { meta.dead = 0; }
    table dead_at {
        key = { meta.kind: exact; meta.fb_hit: ternary; hdr.feedback.silent: ternary;
                hdr.feedback.remote: ternary; }
        actions = { do_mark_dead; do_read_dead; no_dead; }
        const default_action = no_dead();
        const entries = {
            (KIND_FEEDBACK, 1w1 &&& 1w1, 1w1 &&& 1w1, 1w1 &&& 1w1): do_mark_dead();
            (KIND_DATA, 1w0 &&& 1w0, 1w0 &&& 1w0, 1w0 &&& 1w0): do_read_dead();
        }
        size = 2;
    }
    action take_dead_limit() { dead_limit = meta.now - TNA_DEAD_HOLD_NS; }
    table dead_limit_of { actions = { take_dead_limit; } const default_action = take_dead_limit(); size = 1; }
    action take_live() { meta.live = meta.alive & ~meta.dead; }
    table live_of { actions = { take_live; } const default_action = take_live(); size = 1; }
    action set_member(group_t group, member_t member, bit<8> clear_mask) {
        down_group = group;     /* (`member` is in the mask: ~(1 << member)) */
        down_mask = clear_mask;
        meta.down_hit = 1;
    }
    /* port -> (group, member, ~(1 << member)), from the controller.  A port is
     * a member of one group.  Size: PORT_SLOTS. */
    table port_member {
        key = { hdr.port_down.port_num: exact; }
        actions = { set_member; NoAction; }
        default_action = NoAction();
        size = PORT_SLOTS;
    }
    /* The candidates a flow may be sent to, each into its own flag. */
    MEMBER_UP_TABLE(best_up, meta.alive, meta.best, meta.best_alive)
    /* The hash member: up, and not silent (failover.p4's header). */
    action hashed_up_up() { meta.hashed_alive = 1; }
    action hashed_up_down() { meta.hashed_alive = 0; }
    table hashed_up {
        key = { meta.alive: ternary; meta.silent: ternary; meta.hashed: exact; }
        actions = { hashed_up_up; hashed_up_down; }
        default_action = hashed_up_down();
        const entries = {
            (8w0x01 &&& 8w0x01, 8w0x00 &&& 8w0x01, 0): hashed_up_up();
            (8w0x02 &&& 8w0x02, 8w0x00 &&& 8w0x02, 1): hashed_up_up();
            (8w0x04 &&& 8w0x04, 8w0x00 &&& 8w0x04, 2): hashed_up_up();
            (8w0x08 &&& 8w0x08, 8w0x00 &&& 8w0x08, 3): hashed_up_up();
            (8w0x10 &&& 8w0x10, 8w0x00 &&& 8w0x10, 4): hashed_up_up();
            (8w0x20 &&& 8w0x20, 8w0x00 &&& 8w0x20, 5): hashed_up_up();
            (8w0x40 &&& 8w0x40, 8w0x00 &&& 8w0x40, 6): hashed_up_up();
            (8w0x80 &&& 8w0x80, 8w0x00 &&& 8w0x80, 7): hashed_up_up();
        }
        size = 8;
    }
    MEMBER_UP_TABLE(cur_up, meta.alive, meta.resub.cur, meta.cur_alive)
    action first(member_t member) { meta.first_member = member; meta.first_alive = 1; }
    action none_up() { meta.first_alive = 0; }
    /* The lowest live member among the group's `count` members (a priority
     * encoder; the first matching row wins).  The count is a key rather than
     * a later `chosen >= count` test: bf-p4c's gateways compare a field with
     * a constant, not with another field, and the bitmap's bits above the
     * count are never cleared (a "live" bit there is not a member).  Rows:
     * for each count c in 1..8, members 0..c-1 in order: 36. */
    table first_up {
        key = { meta.count: exact; meta.alive: ternary; }
        actions = { first; none_up; }
        default_action = none_up();
        const entries = {
            (4w1, 8w0x01 &&& 8w0x01): first(0);
            (4w2, 8w0x01 &&& 8w0x01): first(0);
            (4w2, 8w0x02 &&& 8w0x02): first(1);
            (4w3, 8w0x01 &&& 8w0x01): first(0);
            (4w3, 8w0x02 &&& 8w0x02): first(1);
            (4w3, 8w0x04 &&& 8w0x04): first(2);
            (4w4, 8w0x01 &&& 8w0x01): first(0);
            (4w4, 8w0x02 &&& 8w0x02): first(1);
            (4w4, 8w0x04 &&& 8w0x04): first(2);
            (4w4, 8w0x08 &&& 8w0x08): first(3);
            (4w5, 8w0x01 &&& 8w0x01): first(0);
            (4w5, 8w0x02 &&& 8w0x02): first(1);
            (4w5, 8w0x04 &&& 8w0x04): first(2);
            (4w5, 8w0x08 &&& 8w0x08): first(3);
            (4w5, 8w0x10 &&& 8w0x10): first(4);
            (4w6, 8w0x01 &&& 8w0x01): first(0);
            (4w6, 8w0x02 &&& 8w0x02): first(1);
            (4w6, 8w0x04 &&& 8w0x04): first(2);
            (4w6, 8w0x08 &&& 8w0x08): first(3);
            (4w6, 8w0x10 &&& 8w0x10): first(4);
            (4w6, 8w0x20 &&& 8w0x20): first(5);
            (4w7, 8w0x01 &&& 8w0x01): first(0);
            (4w7, 8w0x02 &&& 8w0x02): first(1);
            (4w7, 8w0x04 &&& 8w0x04): first(2);
            (4w7, 8w0x08 &&& 8w0x08): first(3);
            (4w7, 8w0x10 &&& 8w0x10): first(4);
            (4w7, 8w0x20 &&& 8w0x20): first(5);
            (4w7, 8w0x40 &&& 8w0x40): first(6);
            (4w8, 8w0x01 &&& 8w0x01): first(0);
            (4w8, 8w0x02 &&& 8w0x02): first(1);
            (4w8, 8w0x04 &&& 8w0x04): first(2);
            (4w8, 8w0x08 &&& 8w0x08): first(3);
            (4w8, 8w0x10 &&& 8w0x10): first(4);
            (4w8, 8w0x20 &&& 8w0x20): first(5);
            (4w8, 8w0x40 &&& 8w0x40): first(6);
            (4w8, 8w0x80 &&& 8w0x80): first(7);
        }
        size = 36;
    }

    /* One table per gate (README.md, "Tofino-1"); the candidates' tests
     * are pure functions of metadata and run for every packet. */
    apply {
        if (meta.kind == KIND_PORT_DOWN) {
            port_member.apply();
        }
        if (meta.kind == KIND_PORT_DOWN && meta.down_hit == 1) {
            mark_down.execute(down_group);
        }
        if (meta.kind == KIND_DATA) {
            meta.alive = read_alive.execute(meta.group);
            hdr.bridged.alive = meta.alive;     /* (path_feedback.p4: this leaf's own ports) */
        }
        if (meta.kind == KIND_FEEDBACK && meta.fb_hit == 1) {
            member_bits.apply();
        }
        silent_at.apply();
        dead_limit_of.apply();
        dead_at.apply();
        live_of.apply();
        if (meta.dead != 0 && meta.live != 0) {
            meta.alive = meta.live;             /* reported dead: down, while one is left */
        }
        best_up.apply();
        hashed_up.apply();
        if (meta.resub.isValid()) {
            cur_up.apply();
        }
        first_up.apply();
    }
}

/* After the flowlet decision: a flow whose member is down goes to the best
 * member, or if that is down too to the lowest live one; none: dropped. */
control Fallback(inout tna_headers_t hdr, inout tna_ingress_metadata_t meta) {
    apply {
        if (meta.kind == KIND_DATA && meta.chosen_alive == 0 && meta.drop == 0 &&
                meta.no_route == 0) {
            if (meta.best_alive == 1) {
                meta.chosen = meta.best;
                meta.chosen_alive = 1;
            } else if (meta.first_alive == 1) {
                meta.chosen = meta.first_member;
                meta.chosen_alive = 1;
            } else {
                meta.drop = 1;
                meta.drop_reason = DROP_NO_LIVE_MEMBER;
            }
            meta.change_reason = CHANGE_FAILOVER;
        }
    }
}
