/*
 * routing.p4 (TNA) -- destination to member group, member to port, TTL.
 *
 * v1model: LPM -> path set -> one action with eight member ports that every
 * packet ranks.  Tofino: LPM -> member group (the set of ports a destination
 * may use; path sets with the same members share a group), and a member
 * index -> port table applied once, after the member is chosen
 * (path_choice.p4, flowlet.p4).  The hash member (for ECMP and untracked
 * flows) comes from a table keyed by 3 bits of the flow CRC, which the
 * controller fills round-robin over the live members: no run-time modulo.
 * A job reservation (src, dst ternary) replaces the destination's group.
 * Both also name the destination's capacity prior (`prior`): which of the
 * group's rows of dre.level<k> normalise its members' estimates -- the rows
 * the controller wrote from each member's end-to-end bottleneck towards that
 * destination (a group serves every destination behind the same uplinks, and
 * the spine's downlink to each can run at another rate).
 *
 * Tofino-1 (README.md, "Tofino-1"): the two are looked up side by side,
 * each under a gate of its own, and a gated assignment then takes the
 * reservation's group over the route's (the LPM and the reservation on its
 * hit were a two-stage block under one gate, which held back every later
 * block); a miss sets its own flag, no_route, beside the sanity checks'
 * `drop`; the TTL test is the sanity checks' and the decrement is at the end
 * of ingress (stellar.p4).  As before, a reserved pair whose destination has
 * no route is dropped (no_route).
 */
control Routing(inout tna_headers_t hdr, inout tna_ingress_metadata_t meta) {
    action set_group(group_t group, bit<4> count, prior_t prior) {
        meta.group = group;
        meta.count = count;
        meta.prior = prior;
    }
    action drop_no_route() {
        meta.no_route = 1;    /* stellar.p4's `finish` drops it (DROP_NO_ROUTE) */
    }
    /* Destination prefixes.  Size: ROUTING_LPM_SIZE (size.p4). */
    @stage(0)
    table lpm {
        key = { hdr.ipv4.dst_addr: lpm; }
        actions = { set_group; drop_no_route; }
        default_action = drop_no_route();
        size = ROUTING_LPM_SIZE;
    }
    action reserve_group(group_t group, bit<4> count, prior_t prior) {
        meta.resv_group = group;
        meta.resv_count = count;
        meta.resv_prior = prior;
        meta.reserved = 1;
    }
    /* Job reservations: traffic between a job's hosts uses the member group
     * (the uplinks) the controller reserved for it, instead of the
     * destination's.  As the v1model program's routing.reservation, with a
     * group where v1model has a path set.  Size: RESERVATION_SIZE. */
    @stage(0)
    table reservation {
        key = {
            hdr.ipv4.src_addr: ternary;
            hdr.ipv4.dst_addr: ternary;
        }
        actions = { reserve_group; NoAction; }
        default_action = NoAction();
        size = RESERVATION_SIZE;
    }
    apply {
        if (hdr.ipv4.isValid()) {
            lpm.apply();
        }
        if (hdr.ipv4.isValid()) {
            reservation.apply();
        }
        if (meta.reserved == 1) {
            meta.group = meta.resv_group;
            meta.count = meta.resv_count;
            meta.prior = meta.resv_prior;
        }
        hdr.bridged.group = meta.group;
    }
}

/* Member index -> egress port, applied once per packet with the chosen member. */
control MemberPort(inout tna_ingress_metadata_t meta,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    /* also the resubmit header's port: a second pass tests for drain at the
     * port this pass would have sent the flow's packet to */
    action set_port(PortId_t port) {
        ig_tm_md.ucast_egress_port = port;
        meta.port = port;
        meta.resub.port = port;
    }
    action drop_no_path_set() {
        meta.drop = 1;
        meta.drop_reason = DROP_NO_PATH_SET;
    }
    /* (group, member) -> port.  Size: PATH_SET_SIZE. */
    table members {
        key = { meta.group: exact; meta.chosen: exact; }
        actions = { set_port; drop_no_path_set; }
        default_action = drop_no_path_set();
        size = PATH_SET_SIZE;
    }
    apply {
        members.apply();
    }
}
