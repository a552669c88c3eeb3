/*
 * failover.p4 -- Failover: port liveness for path choice and flow moves
 * (ingress).
 *
 * The controller (or an operator) marks a port down the moment it learns a
 * port or link is dead.  From the next packet on, the data plane never
 * chooses a member on that port and moves every flow still using it (reason
 * failover) -- without waiting for the controller to recompute and push new
 * path sets, which it does afterwards.
 *
 * Liveness is controller-owned state, so it lives in tables (action data),
 * which every P4Runtime server accepts writes to -- BMv2's PI refuses
 * register writes.  A packet needs the liveness of up to eight members and a
 * table can be applied once per packet, so there is one table per member
 * position, keyed by that member's port, all eight holding the same entries:
 * marking a port down is one MODIFY per table, eight updates in one Write
 * (p4src/README.md, "Controller-owned state").
 */
#ifndef _STELLAR_CONTROL_FAILOVER_P4_
#define _STELLAR_CONTROL_FAILOVER_P4_

control Failover(inout headers_t hdr,
                 inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {

    action port_up() {
        meta.path.down = 0;
    }

    action port_down() {
        meta.path.down = 1;
    }

    /* livenessN: the liveness of member N's port.  One entry per port (the
     * control plane installs port_up for every port and MODIFYs it); a port
     * without an entry is up.  Size: PORT_SLOTS each. */
    table liveness0 {
        key = {
            meta.route.port0: exact;
        }
        actions = {
            port_up;
            port_down;
        }
        default_action = port_up();
        size = PORT_SLOTS;
    }

    table liveness1 {
        key = {
            meta.route.port1: exact;
        }
        actions = {
            port_up;
            port_down;
        }
        default_action = port_up();
        size = PORT_SLOTS;
    }

    table liveness2 {
        key = {
            meta.route.port2: exact;
        }
        actions = {
            port_up;
            port_down;
        }
        default_action = port_up();
        size = PORT_SLOTS;
    }

    table liveness3 {
        key = {
            meta.route.port3: exact;
        }
        actions = {
            port_up;
            port_down;
        }
        default_action = port_up();
        size = PORT_SLOTS;
    }

    table liveness4 {
        key = {
            meta.route.port4: exact;
        }
        actions = {
            port_up;
            port_down;
        }
        default_action = port_up();
        size = PORT_SLOTS;
    }

    table liveness5 {
        key = {
            meta.route.port5: exact;
        }
        actions = {
            port_up;
            port_down;
        }
        default_action = port_up();
        size = PORT_SLOTS;
    }

    table liveness6 {
        key = {
            meta.route.port6: exact;
        }
        actions = {
            port_up;
            port_down;
        }
        default_action = port_up();
        size = PORT_SLOTS;
    }

    table liveness7 {
        key = {
            meta.route.port7: exact;
        }
        actions = {
            port_up;
            port_down;
        }
        default_action = port_up();
        size = PORT_SLOTS;
    }

    apply {
        /* Only the set's members are looked up (alive bits beyond count stay 0). */
        meta.path.down = 0;
        liveness0.apply();
        meta.path.alive0 = ~meta.path.down;
        if (meta.route.count > 1) {
            meta.path.down = 0;
            liveness1.apply();
            meta.path.alive1 = ~meta.path.down;
        }
        if (meta.route.count > 2) {
            meta.path.down = 0;
            liveness2.apply();
            meta.path.alive2 = ~meta.path.down;
        }
        if (meta.route.count > 3) {
            meta.path.down = 0;
            liveness3.apply();
            meta.path.alive3 = ~meta.path.down;
        }
        if (meta.route.count > 4) {
            meta.path.down = 0;
            liveness4.apply();
            meta.path.alive4 = ~meta.path.down;
        }
        if (meta.route.count > 5) {
            meta.path.down = 0;
            liveness5.apply();
            meta.path.alive5 = ~meta.path.down;
        }
        if (meta.route.count > 6) {
            meta.path.down = 0;
            liveness6.apply();
            meta.path.alive6 = ~meta.path.down;
        }
        if (meta.route.count > 7) {
            meta.path.down = 0;
            liveness7.apply();
            meta.path.alive7 = ~meta.path.down;
        }
    }
}

#endif  /* _STELLAR_CONTROL_FAILOVER_P4_ */
