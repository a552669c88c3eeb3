/*
 * routing.p4 -- destination to path set, path set to members, TTL (ingress).
 *
 * LPM on the destination names a path set (one per destination leaf on a
 * leaf, one per leaf on a spine).  A job reservation (src, dst ternary) may
 * replace it with a reserved set.  The path_set table then yields up to
 * MAX_PATH_MEMBERS member ports with the controller's congestion level of
 * each, a bitmap of which levels were measured (bit i = member i; a clear
 * bit = the downstream queue is unknown, flowlet.p4 then moves no flow off
 * that member), and the set's mode (adaptive or plain ECMP).  Which member a flow
 * uses is decided later (path_choice.p4, flowlet.p4).
 */
#ifndef _STELLAR_CONTROL_ROUTING_P4_
#define _STELLAR_CONTROL_ROUTING_P4_

control Routing(inout headers_t hdr,
                inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {

    action set_path_set(path_set_id_t path_set_id) {
        meta.route.path_set_id = path_set_id;
    }

    action drop_no_route() {
        meta.drop = 1;
        meta.drop_reason = DROP_NO_ROUTE;
        mark_to_drop(standard_metadata);
    }

    /* Destination prefixes.  Size: ROUTING_LPM_SIZE (size.p4). */
    /* (named routes here: a table called lpm would shadow the match kind) */
    @name("lpm")
    table routes {
        key = {
            hdr.ipv4.dst_addr: lpm;
        }
        actions = {
            set_path_set;
            drop_no_route;
        }
        default_action = drop_no_route();
        size = ROUTING_LPM_SIZE;
    }

    action reserve_path_set(path_set_id_t path_set_id) {
        meta.route.path_set_id = path_set_id;
    }

    /* Job reservations: traffic between a job's hosts uses the path set the
     * controller reserved for it.  Size: RESERVATION_SIZE. */
    table reservation {
        key = {
            hdr.ipv4.src_addr: ternary;
            hdr.ipv4.dst_addr: ternary;
        }
        actions = {
            reserve_path_set;
            NoAction;
        }
        default_action = NoAction();
        size = RESERVATION_SIZE;
    }

    action set_members(bit<4> count, bit<1> ecmp,
                               port_t port0, port_t port1, port_t port2, port_t port3,
                               port_t port4, port_t port5, port_t port6, port_t port7,
                               bit<16> level0, bit<16> level1, bit<16> level2, bit<16> level3,
                               bit<16> level4, bit<16> level5, bit<16> level6, bit<16> level7,
                               bit<8> measured) {
        meta.route.count = count;
        meta.route.ecmp = ecmp;
        meta.route.port0 = port0;
        meta.route.port1 = port1;
        meta.route.port2 = port2;
        meta.route.port3 = port3;
        meta.route.port4 = port4;
        meta.route.port5 = port5;
        meta.route.port6 = port6;
        meta.route.port7 = port7;
        meta.route.level0 = level0;
        meta.route.level1 = level1;
        meta.route.level2 = level2;
        meta.route.level3 = level3;
        meta.route.level4 = level4;
        meta.route.level5 = level5;
        meta.route.level6 = level6;
        meta.route.level7 = level7;
        meta.route.measured = measured;
    }

    action drop_no_path_set() {
        meta.drop = 1;
        meta.drop_reason = DROP_NO_PATH_SET;
        mark_to_drop(standard_metadata);
    }

    /* Path set members.  Size: PATH_SET_SIZE. */
    table path_set {
        key = {
            meta.route.path_set_id: exact;
        }
        actions = {
            set_members;
            drop_no_path_set;
        }
        default_action = drop_no_path_set();
        size = PATH_SET_SIZE;
    }

    apply {
        if (hdr.ipv4.ttl <= 1) {
            meta.drop = 1;
            meta.drop_reason = DROP_TTL_EXPIRED;
        } else if (routes.apply().hit) {
            reservation.apply();
            path_set.apply();
            if (meta.drop == 0) {
                if (meta.route.count == 0 || meta.route.count > MAX_PATH_MEMBERS) {
                    meta.drop = 1;
                    meta.drop_reason = DROP_NO_PATH_SET;
                } else {
                    /* The TTL shares a checksum word with the protocol. */
                    bit<16> old_word = hdr.ipv4.ttl ++ hdr.ipv4.protocol;
                    hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
                    hdr.ipv4.hdr_checksum = csum16_replace(hdr.ipv4.hdr_checksum, old_word,
                                                           hdr.ipv4.ttl ++ hdr.ipv4.protocol);
                }
            }
        }
    }
}

#endif  /* _STELLAR_CONTROL_ROUTING_P4_ */
