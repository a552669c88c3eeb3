/*
 * rewrite.p4 (TNA) -- next-hop MAC rewrite (egress).
 *
 * As the v1model program's rewrite.p4: in a leaf-spine fabric each port has
 * one neighbour, so the next hop's MAC is a property of the egress port.  An
 * exact table on eg_intr_md.egress_port; no state.
 */
control Rewrite(inout tna_egress_headers_t hdr, in PortId_t port) {
    action set_macs(mac_addr_t src_mac, mac_addr_t dst_mac) {
        hdr.ethernet.src_addr = src_mac;
        hdr.ethernet.dst_addr = dst_mac;
    }
    /* One entry per port.  Size: PORT_SLOTS. */
    table port_mac {
        key = { port: exact; }
        actions = { set_macs; NoAction; }
        default_action = NoAction();
        size = PORT_SLOTS;
    }
    apply {
        if (hdr.ethernet.isValid()) {
            port_mac.apply();
        }
    }
}
