/*
 * rewrite.p4 -- next-hop MAC rewrite (egress).
 *
 * In a leaf-spine fabric each port has exactly one neighbour (a spine, a
 * leaf, or one GPU NIC), so the next hop's MAC is a property of the egress
 * port and needs no per-route next-hop table.
 */
#ifndef _STELLAR_CONTROL_REWRITE_P4_
#define _STELLAR_CONTROL_REWRITE_P4_

control Rewrite(inout headers_t hdr,
                inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {

    action set_macs(mac_addr_t src_mac, mac_addr_t dst_mac) {
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
    }

    /* One entry per port.  Size: PORT_SLOTS. */
    table port_mac {
        key = {
            standard_metadata.egress_port: exact;
        }
        actions = {
            set_macs;
            NoAction;
        }
        default_action = NoAction();
        size = PORT_SLOTS;
    }

    apply {
        port_mac.apply();
    }
}

#endif  /* _STELLAR_CONTROL_REWRITE_P4_ */
