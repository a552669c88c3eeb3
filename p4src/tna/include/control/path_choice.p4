/*
 * path_choice.p4 (TNA) -- the group's best member, kept up to date by
 * congestion feedback (HULA's best-hop register, with CONGA's metric).
 *
 * v1model: every packet reads the queue delay egress wrote for each of up to
 * eight members (a register shared by ingress and egress) and ranks them.
 * Tofino: a register belongs to one gress and is touched once per packet, so
 * egress sends its queue delay to ingress in feedback packets (feedback.p4
 * in the egress control; a mirrored copy recirculated into ingress on
 * Tofino-1), and ingress keeps, per member group, one paired cell
 * {best member, its delay}:
 *   - a feedback packet for member m with delay d:
 *       m is the best member           -> refresh its delay (even if worse)
 *       d + hysteresis < best's delay  -> m becomes the best member
 *   - a data packet reads the best member (one access); while no member
 *     has reported, flows are shared by their hash member (ECMP).
 * As in HULA, new flows follow the best member until another one reports a
 * delay better by the hysteresis (README.md: "feedback").
 * A worse best member is replaced as soon as another member reports a delay
 * better by the hysteresis: the "flows see each other" property holds via the
 * queue the flows build, with a feedback delay (README.md: "feedback").
 */
struct best_pair_t {
    bit<16> member;   /* member_t in the low bits */
    bit<16> score;    /* queue delay, 16 ns units (define.p4); SCORE_NONE = nothing known */
}

control PathChoice(inout tna_headers_t hdr, inout tna_ingress_metadata_t meta) {
    /* Per member group: {best member, its delay}.  Size: 256 groups. */
    /* member 0x100 = no member has reported (a feedback packet writes a
     * member < 8); the data packets' read returns the member field as it is
     * (bf-p4c: a RegisterAction returns one register field or a predicate,
     * not a constant in one branch and a field in the other). */
    Register<best_pair_t, group_t>(256, {0x100, SCORE_NONE}) group_best;

    bit<16> fb_member16;
    bit<16> fb_delay;
    /* the reported delay's 16 ns units, by an identity hash (a slice copy
     * must stay bit-aligned with its source) */
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) delay_units_of;

    RegisterAction<best_pair_t, group_t, bit<16>>(group_best) update_best = {
        void apply(inout best_pair_t v, out bit<16> rv) {
            if (v.member == fb_member16 || fb_delay + TNA_FEEDBACK_HYSTERESIS < v.score) {
                v.member = fb_member16;
                v.score = fb_delay;
            }
            rv = v.member;
        }
    };
    /* rv: the best member, or bit 8 set when no member has reported yet
     * (then flows are shared by hash, as ECMP) */
    RegisterAction<best_pair_t, group_t, bit<16>>(group_best) read_best = {
        void apply(inout best_pair_t v, out bit<16> rv) {
            rv = v.member;
        }
    };

    action set_member(group_t group, member_t member) {
        meta.fb_group = group;
        meta.fb_member = member;
        meta.fb_hit = 1;
        fb_member16 = (bit<16>) member;
    }
    /* Which group and member a feedback packet's port is.  Size: PORT_SLOTS. */
    table port_member {
        key = { hdr.feedback.port: exact; }
        actions = { set_member; NoAction; }
        default_action = NoAction();
        size = PORT_SLOTS;
    }

    action set_hashed(member_t member) {
        meta.hashed = member;
        meta.hashed16 = (bit<16>) member;
    }
    /* (group, 3 bits of the flow CRC) -> member, filled round-robin over the
     * live members by the controller.  Size: 8 per group. */
    table hash_member {
        key = { meta.group: exact; meta.flow_hash[2:0]: exact; }
        actions = { set_hashed; }
        default_action = set_hashed(0);
        size = 2048;
    }

    /* The register's two accesses as tables of their own, placed in the
     * stage after the group is known (bf-p4c places the tables sharing a
     * register together; left to its greedy placement they went three
     * stages later than their inputs allowed on Tofino-1). */
    action do_update_best() { update_best.execute(meta.fb_group); }
    @stage(2)
    table best_update { actions = { do_update_best; } const default_action = do_update_best(); size = 1; }
    action do_read_best() { meta.best_raw = read_best.execute(meta.group); }
    @stage(2)
    table best_read { actions = { do_read_best; } const default_action = do_read_best(); size = 1; }

    /* Each gate holds one table and reads the parser's `kind` (and a flag
     * of the table before it): on Tofino-1 a gate waits for every input of
     * every table under it (README.md, "Tofino-1"). */
    apply {
        if (meta.kind == KIND_FEEDBACK) {
            port_member.apply();
        }
        if (meta.kind == KIND_FEEDBACK) {
            if (hdr.feedback.qdelay_ns[31:19] != 0) {
                fb_delay = TNA_BEST_DELAY_SATURATED;
            } else {
                fb_delay = delay_units_of.get({hdr.feedback.qdelay_ns[19:4]});
            }
        }
        if (meta.kind == KIND_FEEDBACK && meta.fb_hit == 1) {
            best_update.apply();
        }
        if (meta.kind == KIND_DATA) {
            hash_member.apply();
        }
        if (meta.kind == KIND_DATA) {
            best_read.apply();
        }
        if (meta.best_raw[8:8] == 1) {
            meta.best = meta.hashed;   /* nothing known: share by flow hash */
            meta.feedback_known = 0;
        } else {
            meta.best = (member_t) meta.best_raw[2:0];
            meta.feedback_known = 1;
        }
    }
}
