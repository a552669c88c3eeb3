/*
 * failover.p4 (TNA) -- data-plane liveness.
 *
 * v1model: a liveness table the controller writes, read per member.
 * Tofino: the packet generator's port-down application sends a packet
 * (pktgen_port_down_header_t, on the pktgen port) the moment a port goes
 * down; ingress clears the port's bit in its group's liveness bitmap (one
 * RegisterAction).  A data packet reads the bitmap once; a const table
 * tests the chosen member's bit (no run-time shift).  A flow on a dead
 * member moves at once to the best member, or if that is dead too to its
 * hash member (which the controller keeps on live ports once it recomputes);
 * the flow's stored member is not rewritten in the same pass (one access),
 * so the choice is remade per packet until the flow's next gap, always the
 * same for the same state: no reordering.  The controller sets a bit back
 * (register write) when the port comes up.
 */
control Failover(inout tna_headers_t hdr, inout tna_ingress_metadata_t meta) {
    /* Per group: bit i = member i is up.  Size: 256 groups. */
    Register<bit<8>, group_t>(256, 8w0xFF) alive;

    bit<8> down_mask;   /* all ones but the member that went down */

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

    action set_member(group_t group, member_t member, bit<8> clear_mask) {
        meta.group = group;
        meta.chosen = member;
        down_mask = clear_mask;
    }
    /* port -> (group, member, ~(1 << member)), from the controller.  A port is
     * a member of one group.  Size: PORT_SLOTS. */
    table port_member {
        key = { hdr.port_down.port_num: exact; }
        actions = { set_member; NoAction; }
        default_action = NoAction();
        size = PORT_SLOTS;
    }

    action up() { meta.chosen_alive = 1; }
    action down() { meta.chosen_alive = 0; }
    /* Is member `chosen` up in `alive`?  Eight fixed ternary rows. */
    table member_up {
        key = { meta.alive: ternary; meta.chosen: exact; }
        actions = { up; down; }
        default_action = down();
        const entries = {
            (8w0x01 &&& 8w0x01, 0): up();
            (8w0x02 &&& 8w0x02, 1): up();
            (8w0x04 &&& 8w0x04, 2): up();
            (8w0x08 &&& 8w0x08, 3): up();
            (8w0x10 &&& 8w0x10, 4): up();
            (8w0x20 &&& 8w0x20, 5): up();
            (8w0x40 &&& 8w0x40, 6): up();
            (8w0x80 &&& 8w0x80, 7): up();
        }
        size = 8;
    }
    bit<1> best_alive;
    action best_is_up() { best_alive = 1; }
    action best_is_down() { best_alive = 0; }
    /* The same test for the second candidate, into its own flag: it needs only
     * the bitmap and `best`, so bf-p4c can place it beside the flowlet lookup
     * instead of after member_up (a shorter dependency chain). */
    table best_up {
        key = { meta.alive: ternary; meta.best: exact; }
        actions = { best_is_up; best_is_down; }
        default_action = best_is_down();
        const entries = {
            (8w0x01 &&& 8w0x01, 0): best_is_up();
            (8w0x02 &&& 8w0x02, 1): best_is_up();
            (8w0x04 &&& 8w0x04, 2): best_is_up();
            (8w0x08 &&& 8w0x08, 3): best_is_up();
            (8w0x10 &&& 8w0x10, 4): best_is_up();
            (8w0x20 &&& 8w0x20, 5): best_is_up();
            (8w0x40 &&& 8w0x40, 6): best_is_up();
            (8w0x80 &&& 8w0x80, 7): best_is_up();
        }
        size = 8;
    }

    member_t first_member;
    bit<1> first_alive;
    action first(member_t member) { first_member = member; first_alive = 1; }
    action none_up() { first_alive = 0; }
    /* The lowest live member among the group's `count` members (a priority
     * encoder; the first matching row wins).  The count is a key rather than
     * a later `chosen >= count` test: bf-p4c's gateways compare a field with
     * a constant, not with another field, and the bitmap's bits above the
     * count are never cleared (a "live" bit there is not a member).  Like
     * best_up it depends only on the bitmap (and the count), so it is
     * applied for every data packet, beside the flowlet lookup.  Rows:
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

    apply {
        if (meta.kind == KIND_PORT_DOWN) {
            if (port_member.apply().hit) {
                mark_down.execute(meta.group);
            }
        } else if (meta.kind == KIND_DATA) {
            meta.alive = read_alive.execute(meta.group);
            /* the two fallbacks first (they do not need the flow's member),
             * then the flow's member: one test after the flowlet lookup */
            best_up.apply();
            first_up.apply();
            member_up.apply();
            if (meta.chosen_alive == 0) {
                if (best_alive == 1) {
                    meta.chosen = meta.best;
                    meta.chosen_alive = 1;
                } else if (first_alive == 1) {
                    meta.chosen = first_member;
                    meta.chosen_alive = 1;
                } else {
                    meta.drop = 1;
                    meta.drop_reason = DROP_NO_LIVE_MEMBER;
                }
                meta.change_reason = CHANGE_FAILOVER;
            }
        }
    }
}
