/*
 * rewrite.p4 -- next-hop MAC rewrite (egress).
 *
 * In a leaf-spine fabric each port has exactly one neighbour (a spine, a
 * leaf, or one GPU NIC), so the next hop's MAC is a property of the egress
 * port and needs no per-route next-hop table.
 *
 * Block file: included once per section (see stellar.p4, "Block files").
 */
#if defined(STELLAR_EGRESS_DECLS)

    @name("rewrite.set_macs")
    action rewrite_set_macs(mac_addr_t src_mac, mac_addr_t dst_mac) {
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
    }

    /* One entry per port.  Size: PORT_SLOTS. */
    @name("rewrite.port_mac")
    table rewrite_port_mac {
        key = {
            standard_metadata.egress_port: exact;
        }
        actions = {
            rewrite_set_macs;
            NoAction;
        }
        default_action = NoAction();
        size = PORT_SLOTS;
    }

#elif defined(STELLAR_STEP_REWRITE)
    {
        rewrite_port_mac.apply();
    }
#endif
