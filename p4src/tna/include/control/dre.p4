/*
 * dre.p4 (TNA) -- the utilisation estimate (CONGA's DRE) and the choice of a
 * member for a new flow or a flow at a flowlet gap.
 *
 * v1model: one DRE register per port (bytes, decayed by halving each window
 * of 2^dre_shift us), updated at ingress when a packet is assigned; every
 * choice reads the DRE of each of the path set's members, normalises it by
 * the port's rate and adds the queue delay and the controller's level,
 * weighted (a run-time multiply).
 * Tofino:
 *   - the estimate is kept per (group, member position): register dre<j>
 *     holds members 2j and 2j+1 (one 16-bit lane each) for every group, so a
 *     packet reads all members of its group with one access to each of four
 *     registers; groups that share
 *     an uplink do not see each other's bytes (on a leaf all remote prefixes
 *     use the one group of its uplinks);
 *   - decay: a group's window (bits 31:14 of the ns clock, 16.4 us) is kept in
 *     `window`; each cell is {units this window, units this and the previous
 *     window}: at a window change the previous window's bytes still count for
 *     one window, then drop out (a two-window moving sum).  The three cases
 *     (same window, the next, later) are three register actions chosen by
 *     table update<j> on the windows elapsed.  v1model halves the
 *     estimate instead; the stateful ALU has no shifter, so the halving would
 *     need its math unit;
 *   - normalisation: no multiply; per member position a range table
 *     `level<k>` maps (group, estimate in 64-byte units) to a level, written
 *     by the controller from the port's rate (a 40 % port's ranges are 40 %
 *     as wide): a quantised division by the rate;
 *   - score_k = level_k + the controller's congestion level of member k
 *     (`levels`, table action data the controller writes) + a penalty when
 *     congestion feedback names another member as the group's best
 *     (path_choice.p4); members beyond the group's count or down
 *     (failover.p4's bitmap) score DRE_UNUSABLE;
 *   - the choice is the lowest score; ties go to the flow's hash member,
 *     then to the lowest member (one extra bit below the score, and the
 *     member's position below that: the minimum of {score, member});
 *   - "flows that start together see each other": the chosen member's cell
 *     must grow before the next choice, but the choice reads the same cells.
 *     One access per register per pass: a choosing packet reads the cells in
 *     its first pass (adding nothing) and is resubmitted with its choice; the
 *     second pass adds its bytes to the chosen cell and writes the member into
 *     its flow slot (flowlet.p4).  Packets of established flows add their
 *     bytes in their only pass.
 */
struct dre_pair_t {
    bit<32> cur;      /* units this window, two lanes (below) */
    bit<32> sum;      /* units this and the previous window (the estimate) */
}

/* Two members per register: register dre<j> holds members 2j (bits 31:16 of
 * each half) and 2j+1 (bits 15:0), in 64-byte units (DRE_UNIT_SHIFT), so
 * four stateful ALUs do the work of eight (a Tofino2 stage has four: with
 * one register per member the eight updates take two stages).  The add is this packet's units in its member's lane
 * and 0 in the other, so one 32-bit add updates both lanes with no carry
 * between them while a lane stays below 2^16 units: 4 MiB per member over
 * two windows (1 Tbps assigned to one member; README.md says what happens
 * above).  Three register actions, one per window change, each with a
 * single update per half: the stateful ALU has two update slots per half
 * of a pair cell, and one program with all three cases needed three for
 * the sum (bfas: "instruction slot used multiple times").  Which one runs
 * is the action of table update<j>. */
#define DRE_UNIT_SHIFT 6
#define DRE_LANE_STATE(j)                                                       \
    bit<32> add##j;                                                             \
    bit<32> est##j;    /* lanes: member 2j in 31:16, member 2j+1 in 15:0 */    \
    Register<dre_pair_t, group_t>(256, {0, 0}) dre##j;                          \
    RegisterAction<dre_pair_t, group_t, bit<32>>(dre##j) same##j = {            \
        void apply(inout dre_pair_t v, out bit<32> rv) {                        \
            v.sum = v.sum + add##j;                                             \
            v.cur = v.cur + add##j;                                             \
            rv = v.sum;                                                         \
        }                                                                       \
    };                                                                          \
    RegisterAction<dre_pair_t, group_t, bit<32>>(dre##j) next##j = {            \
        void apply(inout dre_pair_t v, out bit<32> rv) {                        \
            v.sum = v.cur + add##j;                                             \
            v.cur = add##j;                                                     \
            rv = v.sum;                                                         \
        }                                                                       \
    };                                                                          \
    RegisterAction<dre_pair_t, group_t, bit<32>>(dre##j) fresh##j = {           \
        void apply(inout dre_pair_t v, out bit<32> rv) {                        \
            v.sum = add##j;                                                     \
            v.cur = add##j;                                                     \
            rv = v.sum;                                                         \
        }                                                                       \
    };                                                                          \
    action roll_same##j() { est##j = same##j.execute(meta.group); }             \
    action roll_next##j() { est##j = next##j.execute(meta.group); }             \
    action roll_fresh##j() { est##j = fresh##j.execute(meta.group); }           \
    /* The update of the pair's cell by the windows elapsed since the        \
     * group's last packet: 0 the same window, 1 the next, more: the cell's   \
     * units are all older than the previous window.  Three ternary rows,  \
     * the last a wildcard: the register's index (the group) comes from the  \
     * hash distribution unit, which a table's miss (default) action cannot \
     * use (bf-p4c), so every case is a hit.  Size: 3 rows. */               \
    table update##j {                                                           \
        key = { elapsed: ternary; }                                             \
        actions = { roll_same##j; roll_next##j; roll_fresh##j; NoAction; }      \
        const default_action = NoAction();                                      \
        const entries = {                                                       \
            0: roll_same##j();                                                  \
            1: roll_next##j();                                                  \
            _: roll_fresh##j();                                                 \
        }                                                                       \
        size = 3;                                                               \
    }

/* Table level<k>: (group, capacity prior, member k's estimate, its 16-bit
 * lane of est<k/2>, in 64 B units) -> level, written from member k's
 * end-to-end bottleneck towards the destinations of that prior (the slower
 * of the leaf's uplink and the spine's downlink; routing names the prior) at
 * the rate the controller last read from port status, as DRE_SCORE_SCALE
 * (16) times the level (the score's low four bits are the tie bit and the
 * member; bf-p4c cannot shift action data inside an add, so the controller
 * writes it scaled).  A lane is a nibble-aligned 16-bit slice, four
 * nibbles, which bf-p4c's range match takes.  The action adds the level to
 * s_k -- one instruction.  Size of each: DRE_LEVEL_SIZE (64 rows per group
 * and prior: 8 (group, prior) pairs per switch). */
#define DRE_MEMBER_LEVEL(k, lane, qname)                                        \
    action set_level##k(bit<16> level) {                                        \
        meta.dre_score.s##k = meta.dre_score.s##k + level;                      \
    }                                                                           \
    table level##k {                                                            \
        key = { meta.group: exact; meta.prior: exact; lane: range @name(qname); } \
        actions = { set_level##k; }                                             \
        default_action = set_level##k(0);                                       \
        size = DRE_LEVEL_SIZE;                                                  \
    }

/* The score of member k, one 16-bit field per member, in the form the
 * tournament compares (so no packing step between the last add and the
 * first min()):
 *   s_k = 16 (level_k + ctl_k + penalty_k) + 8 tie_k + k
 * level_k is level<k>'s, ctl_k the controller's (`levels`), penalty_k
 * params' dre_delay_penalty when congestion feedback names another member
 * as the group's best (path_choice.p4), tie_k 1 unless k is the flow's hash
 * member.  The least s_k is the lowest score, ties to the hash member, then
 * to the lowest member; its low three bits are the member.  Every datum the
 * controller writes (level<k>, `levels`, the penalty) is written times
 * DRE_SCORE_SCALE = 16, so each action does one add on operands in final
 * form (bf-p4c cannot shift action data inside an add; p4c's mid end folds
 * a chain of statements back into one multi-operand action, README.md
 * "bf-p4c").  Usable scores stay below 16 x (127 + 127 + 255) + 15 = 8159;
 * a member that cannot be chosen (absent or down) starts at DRE_UNUSABLE
 * (0x8000) + k, at most 0x8000 + 16 x 254 + 7 with both levels added: above
 * every usable score, inside 16 bits.  One field per member
 * (dre_scores_t, metadata): bf-p4c keeps the adds' operands in one PHV
 * group, which 24 score fields did not fit. */
#define DRE_SCORE_SCALE 16
#define DRE_TIE 8
#define DRE_UNUSABLE 0x8000

/* The base of s_k, one const table per member (conditions as rows: eight
 * small tables where a chain of conditions took 32 tables and 24 gateways
 * of bf-p4c's per-stage budget); set before the flowlet lookup (it needs
 * only the group's count, the bitmap and the best and hash members).  Rows
 * in priority order. */
#define DRE_BASE_TABLE(k, mbit)                                                 \
    action base_pen_tie##k() { meta.dre_score.s##k = meta.dre_penalty_tie | k; } \
    action base_pen##k() { meta.dre_score.s##k = meta.dre_penalty | k; }        \
    action base_const##k(bit<16> v) { meta.dre_score.s##k = v; }                \
    table base##k {                                                             \
        key = {                                                                 \
            meta.count: range; meta.alive: ternary; feedback_known: ternary;   \
            meta.best: ternary; meta.hashed: ternary;                           \
        }                                                                       \
        actions = { base_pen_tie##k; base_pen##k; base_const##k; }              \
        const default_action = base_const##k(DRE_TIE + k);                      \
        const entries = {                                                       \
            (0 .. k, _, _, _, _): base_const##k(DRE_UNUSABLE + k);  /* absent */ \
            (_, 0 &&& mbit, _, _, _): base_const##k(DRE_UNUSABLE + k); /* down */ \
            (_, _, 1, k, k): base_const##k(k);     /* feedback's best, hash member */ \
            (_, _, 1, k, _): base_const##k(DRE_TIE + k);                        \
            (_, _, 1, _, k): base_pen##k();        /* another member is best */ \
            (_, _, 1, _, _): base_pen_tie##k();                                 \
            (_, _, 0, _, k): base_const##k(k);     /* no feedback: hash member */ \
        }                                                                       \
        size = 7;                                                               \
    }

/* The part of the score that needs no estimate, and the controller's levels,
 * applied before the flowlet lookup: flowlet.p4's decision needs `measured`
 * (a move off an unmeasured member is refused), and the scores' bases are
 * then ready when the estimate arrives. */
control DreBase(inout tna_headers_t hdr, inout tna_ingress_metadata_t meta,
                in bit<1> feedback_known) {
    action set_levels(bit<16> l0, bit<16> l1, bit<16> l2, bit<16> l3,
                      bit<16> l4, bit<16> l5, bit<16> l6, bit<16> l7, bit<8> measured) {
#ifndef STELLAR_NO_DRE
        meta.dre_score.s0 = meta.dre_score.s0 + l0;
        meta.dre_score.s1 = meta.dre_score.s1 + l1;
        meta.dre_score.s2 = meta.dre_score.s2 + l2;
        meta.dre_score.s3 = meta.dre_score.s3 + l3;
        meta.dre_score.s4 = meta.dre_score.s4 + l4;
        meta.dre_score.s5 = meta.dre_score.s5 + l5;
        meta.dre_score.s6 = meta.dre_score.s6 + l6;
        meta.dre_score.s7 = meta.dre_score.s7 + l7;
#endif
        /* (without the DRE the levels have no score to go into: the same
         * action and P4Info, only `measured` is used) */
        meta.ctl_measured = measured;
    }
    /* The controller's congestion level of each member of a group, times
     * DRE_SCORE_SCALE (as level<k>'s data; from its congestion map: remote
     * congestion this switch cannot see), as
     * table action data -- controller-owned state is written as table
     * entries, never as register writes -- and `measured`, bit k set when
     * member k's level comes from a reading of the hop behind it (clear:
     * rendered, or never polled; the level is then unknown, not 0).  An
     * unmeasured member may still be chosen for a new flow, but no flow is
     * moved off it at a gap or a drain point (the v1model rule: nothing is
     * known about the queue its packets may still sit in downstream;
     * flowlet.p4's decision applies it).
     * The default (no entry) is unmeasured.  Size: 256 groups. */
    table levels {
        key = { meta.group: exact; }
        actions = { set_levels; }
        default_action = set_levels(0, 0, 0, 0, 0, 0, 0, 0, 0);
        size = 256;
    }

#ifndef STELLAR_NO_DRE
    DRE_BASE_TABLE(0, 0x01)
    DRE_BASE_TABLE(1, 0x02)
    DRE_BASE_TABLE(2, 0x04)
    DRE_BASE_TABLE(3, 0x08)
    DRE_BASE_TABLE(4, 0x10)
    DRE_BASE_TABLE(5, 0x20)
    DRE_BASE_TABLE(6, 0x40)
    DRE_BASE_TABLE(7, 0x80)
#endif

    /* (for every packet: pure functions of metadata, no gate; README.md,
     * "Tofino-1") */
    apply {
#ifndef STELLAR_NO_DRE
        base0.apply(); base1.apply(); base2.apply(); base3.apply();
        base4.apply(); base5.apply(); base6.apply(); base7.apply();
#endif
        levels.apply();
    }
}

control Dre(inout tna_headers_t hdr, inout tna_ingress_metadata_t meta,
            in bit<1> dre_on) {
#ifdef STELLAR_NO_DRE
    /* The profile without the estimate: a gap move (a second pass that
     * proves drain, flowlet.p4) goes to congestion feedback's best member;
     * new flows take it in their first pass (dre_on is 0). */
    apply {
        if (meta.kind == KIND_DATA && meta.choose == 1) {
            meta.resub.cur = meta.best;
        }
    }
#else
    bit<32> now_win;
    bit<32> elapsed;

    /* Per group: the DRE window of its last packet.  Size: 256 groups. */
    Register<bit<32>, group_t>(256, 0) window;
    RegisterAction<bit<32>, group_t, bit<32>>(window) roll_window = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = now_win - v;
            v = now_win;
        }
    };

    DRE_LANE_STATE(0)
    DRE_LANE_STATE(1)
    DRE_LANE_STATE(2)
    DRE_LANE_STATE(3)
    DRE_MEMBER_LEVEL(0, est0[31:16], "q0")
    DRE_MEMBER_LEVEL(1, est0[15:0], "q1")
    DRE_MEMBER_LEVEL(2, est1[31:16], "q2")
    DRE_MEMBER_LEVEL(3, est1[15:0], "q3")
    DRE_MEMBER_LEVEL(4, est2[31:16], "q4")
    DRE_MEMBER_LEVEL(5, est2[15:0], "q5")
    DRE_MEMBER_LEVEL(6, est3[31:16], "q6")
    DRE_MEMBER_LEVEL(7, est3[15:0], "q7")

    /* This packet's bytes go to its member's cell, unless this pass asks for
     * a second one (a choice or a drain test: they go in there, once, on the
     * member that pass settles) or the packet is policed red (dropped at the
     * end of ingress: its bytes never reach the port).  One table keyed on
     * the decision's member and the candidates' liveness, which makes the
     * fallback's choice (failover.p4) itself: the member if up, else the
     * best if up, else the lowest live one (none: no add, the packet is
     * dropped), so the adds do not wait for the fallback.  Size: 24 rows. */
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) lo_of;
    Hash<bit<32>>(HashAlgorithm_t.IDENTITY) hi_of;
    bit<32> hi;   /* this packet's units in a pair's high lane (member 2j) */
    bit<32> lo;   /* ... in its low lane (member 2j+1) */
    /* One keyless table each: an action takes at most 32 bits from the hash
     * units (bf-p4c's immediate pathway; the two gets in one needed 64). */
    action take_units_lo() { lo = lo_of.get({10w0, hdr.ipv4.total_len[15:DRE_UNIT_SHIFT]}); }
    table units_lo { actions = { take_units_lo; } const default_action = take_units_lo(); size = 1; }
    action take_units_hi() { hi = hi_of.get({hdr.ipv4.total_len[15:DRE_UNIT_SHIFT], 16w0}); }
    table units_hi { actions = { take_units_hi; } const default_action = take_units_hi(); size = 1; }
    action add_none() { add0 = 0; add1 = 0; add2 = 0; add3 = 0; }
    action add_0() { add0 = hi; add1 = 0; add2 = 0; add3 = 0; }
    action add_1() { add0 = lo; add1 = 0; add2 = 0; add3 = 0; }
    action add_2() { add0 = 0; add1 = hi; add2 = 0; add3 = 0; }
    action add_3() { add0 = 0; add1 = lo; add2 = 0; add3 = 0; }
    action add_4() { add0 = 0; add1 = 0; add2 = hi; add3 = 0; }
    action add_5() { add0 = 0; add1 = 0; add2 = lo; add3 = 0; }
    action add_6() { add0 = 0; add1 = 0; add2 = 0; add3 = hi; }
    action add_7() { add0 = 0; add1 = 0; add2 = 0; add3 = lo; }
#define DRE_ADD_ROWS(k)                                                         \
            (0, 0, 0, 1, k, _, _, _, _): add_##k();                             \
            (0, 0, 0, 0, _, 1, k, _, _): add_##k();                             \
            (0, 0, 0, 0, _, 0, _, 1, k): add_##k();
    table byte_add {
        key = {
            meta.choose: ternary; meta.drain_test: ternary; meta.red: ternary;
            meta.chosen_alive: ternary; meta.chosen: ternary;
            meta.best_alive: ternary; meta.best: ternary;
            meta.first_alive: ternary; meta.first_member: ternary;
        }
        actions = { add_none; add_0; add_1; add_2; add_3; add_4; add_5; add_6; add_7; }
        const default_action = add_none();
        const entries = {
            DRE_ADD_ROWS(0) DRE_ADD_ROWS(1) DRE_ADD_ROWS(2) DRE_ADD_ROWS(3)
            DRE_ADD_ROWS(4) DRE_ADD_ROWS(5) DRE_ADD_ROWS(6) DRE_ADD_ROWS(7)
        }
        size = 24;
    }

    /* The tournament: in-place min() (the action ALU's minu) over the
     * scores, which carry their member in their low bits, so the winner
     * carries its member and no difference or copy field is needed: eight
     * 16-bit fields in one aligned PHV cluster, where the subtraction
     * tournament chained 23 into one MAU group (bf-p4c left 69 slices
     * unallocated).  One instruction per field per action; each round is a
     * keyless table so that p4c's mid end does not fold the rounds into one
     * action. */
    action min_round1() {
        meta.dre_score.s0 = min(meta.dre_score.s0, meta.dre_score.s1);
        meta.dre_score.s2 = min(meta.dre_score.s2, meta.dre_score.s3);
        meta.dre_score.s4 = min(meta.dre_score.s4, meta.dre_score.s5);
        meta.dre_score.s6 = min(meta.dre_score.s6, meta.dre_score.s7);
    }
    table round1 { actions = { min_round1; } const default_action = min_round1(); size = 1; }
    action min_round2() {
        meta.dre_score.s0 = min(meta.dre_score.s0, meta.dre_score.s2);
        meta.dre_score.s4 = min(meta.dre_score.s4, meta.dre_score.s6);
    }
    table round2 { actions = { min_round2; } const default_action = min_round2(); size = 1; }
    action min_round3() {
        meta.dre_score.s0 = min(meta.dre_score.s0, meta.dre_score.s4);
    }
    table round3 { actions = { min_round3; } const default_action = min_round3(); size = 1; }
    /* the winner's member bits, by an identity hash (an action's slice copy
     * of a PHV source would tie the two fields into one PHV group, bf-p4c) */
    Hash<member_t>(HashAlgorithm_t.IDENTITY) pick_of;

    /* One table per gate (README.md, "Tofino-1"): the level tables and the
     * tournament run for every packet (pure functions of metadata); only
     * the register updates and the choice are gated. */
    apply {
        /* the packet's 64 B units (rounded down) in either lane, by identity
         * hashes: a shift of the length into 32-bit fields tied it to their
         * PHV container group (bf-p4c: unsatisfiable, total_len fills a
         * 16-bit container); the hash unit places the bits anywhere */
        units_lo.apply();
        units_hi.apply();
        byte_add.apply();
        now_win = meta.dre_win;
        if (meta.kind == KIND_DATA) {
            elapsed = roll_window.execute(meta.group);
        }
        if (meta.kind == KIND_DATA) { update0.apply(); }
        if (meta.kind == KIND_DATA) { update1.apply(); }
        if (meta.kind == KIND_DATA) { update2.apply(); }
        if (meta.kind == KIND_DATA) { update3.apply(); }
        level0.apply(); level1.apply(); level2.apply(); level3.apply();
        level4.apply(); level5.apply(); level6.apply(); level7.apply();
        /* the least {score, member}: three rounds of min() */
        round1.apply();
        round2.apply();
        round3.apply();
        if (meta.kind == KIND_DATA && meta.choose == 1) {
            if (dre_on == 0) {
                meta.resub.cur = meta.best;  /* a gap move without the estimate */
            } else {
                meta.resub.cur = pick_of.get({meta.dre_score.s0[2:0]});   /* the second pass's member */
            }
        }
    }
#endif  /* STELLAR_NO_DRE */
}
