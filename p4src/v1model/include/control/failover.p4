/*
 * failover.p4 -- port liveness for path choice and flow moves (ingress).
 *
 * The controller (or an operator) writes port_down[port] = 1 the moment it
 * learns a port or link is dead.  From the next packet on, the data plane
 * never chooses a member on that port and moves every flow still using it
 * (reason failover) -- without waiting for the controller to recompute and
 * push new path sets, which it does afterwards.
 */
#ifndef _STELLAR_CONTROL_FAILOVER_P4_
#define _STELLAR_CONTROL_FAILOVER_P4_

control Failover(inout headers_t hdr,
                 inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        /* Only the set's members are looked up (alive bits beyond count stay 0). */
        bit<1> down;
        port_down.read(down, (bit<32>)meta.route.port0);
        meta.path.alive0 = ~down;
        if (meta.route.count > 1) {
            port_down.read(down, (bit<32>)meta.route.port1);
            meta.path.alive1 = ~down;
        }
        if (meta.route.count > 2) {
            port_down.read(down, (bit<32>)meta.route.port2);
            meta.path.alive2 = ~down;
        }
        if (meta.route.count > 3) {
            port_down.read(down, (bit<32>)meta.route.port3);
            meta.path.alive3 = ~down;
        }
        if (meta.route.count > 4) {
            port_down.read(down, (bit<32>)meta.route.port4);
            meta.path.alive4 = ~down;
        }
        if (meta.route.count > 5) {
            port_down.read(down, (bit<32>)meta.route.port5);
            meta.path.alive5 = ~down;
        }
        if (meta.route.count > 6) {
            port_down.read(down, (bit<32>)meta.route.port6);
            meta.path.alive6 = ~down;
        }
        if (meta.route.count > 7) {
            port_down.read(down, (bit<32>)meta.route.port7);
            meta.path.alive7 = ~down;
        }
        /* The flow's current port (meaningful only for a known flow). */
        if (meta.flow.known == 1) {
            port_down.read(down, (bit<32>)meta.flow.cur_port[8:0]);
            meta.path.cur_alive = ~down;
        }
    }
}

#endif  /* _STELLAR_CONTROL_FAILOVER_P4_ */
