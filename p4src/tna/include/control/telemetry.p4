/*
 * telemetry.p4 (TNA) -- counters the controller and the tests read.
 */
control IngressTelemetry(inout tna_ingress_metadata_t meta) {
    /* Drops by reason (DROP_*).  Size: REASON_SLOTS. */
    Counter<bit<32>, bit<8>>(REASON_SLOTS, CounterType_t.PACKETS) drops;
    /* Path changes by reason (CHANGE_*).  Size: CHANGE_REASON_SLOTS. */
    Counter<bit<32>, bit<8>>(CHANGE_REASON_SLOTS, CounterType_t.PACKETS) path_changes;
    /* Malformed input by kind (MALFORMED_*).  Size: REASON_SLOTS. */
    Counter<bit<32>, bit<8>>(REASON_SLOTS, CounterType_t.PACKETS) malformed;
    /* Packets classified elephant.  Size: 1. */
    Counter<bit<32>, bit<1>>(2, CounterType_t.PACKETS) elephants;
    /* Gap or drain moves refused because the member the flow would leave
     * has no measured level (dre.p4).  Size: 1. */
    Counter<bit<32>, bit<1>>(1, CounterType_t.PACKETS) moves_refused;
    apply {
        if (meta.malformed != MALFORMED_NONE) {
            malformed.count(meta.malformed);
        }
        if (meta.drop == 1) {
            drops.count(meta.drop_reason);
        } else {
            if (meta.change_reason != 0xFF) {
                path_changes.count(meta.change_reason);
            }
            elephants.count(meta.elephant);
            if (meta.move_refused == 1) {
                moves_refused.count(0);
            }
        }
    }
}

control EgressTelemetry(inout tna_egress_metadata_t meta, in PortId_t port) {
    /* Packets sent per port.  Size: PORT_SLOTS. */
    Counter<bit<32>, PortId_t>(PORT_SLOTS, CounterType_t.PACKETS_AND_BYTES) tx;
    apply { tx.count(port); }
}
