/*
 * telemetry.p4 (TNA) -- counters the controller and the tests read.
 */
control IngressTelemetry(inout tna_ingress_metadata_t meta, in PortId_t port) {
    /* Packets received per port (data, once per packet): with the far
     * end's `tx`, what a link lost on the wire (the controller's gray-link
     * report).  Size: PORT_SLOTS. */
    Counter<bit<32>, PortId_t>(PORT_SLOTS, CounterType_t.PACKETS) rx;
    /* (Drops by reason, `telemetry.drops`, are counted by stellar.p4's
     * `finish`, which knows the last reason: a stage less on Tofino-1.) */
    /* Path changes by reason (CHANGE_*).  Size: CHANGE_REASON_SLOTS. */
    Counter<bit<32>, bit<8>>(CHANGE_REASON_SLOTS, CounterType_t.PACKETS) path_changes;
    /* Malformed input by kind (MALFORMED_*).  Size: REASON_SLOTS. */
    Counter<bit<32>, bit<8>>(REASON_SLOTS, CounterType_t.PACKETS) malformed;
    /* Packets classified elephant.  Size: 1. */
    Counter<bit<32>, bit<1>>(2, CounterType_t.PACKETS) elephants;
    /* Gap or drain moves refused because the member the flow would leave
     * has no measured level (dre.p4).  Size: 1. */
    Counter<bit<32>, bit<1>>(1, CounterType_t.PACKETS) moves_refused;
    /* Each counter under a gate of its own, none nested (a nested gate took
     * a stage more on Tofino-1; README.md, "Tofino-1"). */
    apply {
        rx.count(port);
        if (meta.malformed != MALFORMED_NONE) {
            malformed.count(meta.malformed);
        }
        if (meta.drop == 0 && meta.change_reason != 0xFF) {
            path_changes.count(meta.change_reason);
        }
        if (meta.drop == 0) {
            elephants.count(meta.elephant);
        }
        if (meta.drop == 0 && meta.move_refused == 1) {
            moves_refused.count(0);
        }
    }
}

control EgressTelemetry(inout tna_egress_metadata_t meta, in PortId_t port) {
    /* Packets sent per port.  Size: PORT_SLOTS. */
    Counter<bit<32>, PortId_t>(PORT_SLOTS, CounterType_t.PACKETS_AND_BYTES) tx;
    /* Queue-delay histogram per port, index {port, bucket} (= port * 16 +
     * bucket, as v1model's qdelay_hist): what the controller's congestion
     * map reads (a counter: every P4Runtime server reads counters).  Buckets'
     * lower edges in us: 0 1 2 4 8 12 16 24 32 48 64 96 128 192 256 512.
     * Size: QDELAY_HIST_SLOTS (PORT_SLOTS * 16). */
    Counter<bit<32>, bit<13>>(QDELAY_HIST_SLOTS, CounterType_t.PACKETS_AND_BYTES) qdelay_hist;

    bit<4> bucket;
    action set_bucket(bit<4> b) { bucket = b; }
    /* Queue delay (8 ns units, meta.qdelay_8ns) -> histogram bucket: the
     * v1model edges (whole us, so whole units; no run-time compare chain; one
     * range lookup).  Size: 16 const rows. */
    table qdelay_bucket {
        key = { meta.qdelay_8ns: range; }
        actions = { set_bucket; }
        default_action = set_bucket(15);
        const entries = {
            0 .. 124: set_bucket(0);
            125 .. 249: set_bucket(1);
            250 .. 499: set_bucket(2);
            500 .. 999: set_bucket(3);
            1000 .. 1499: set_bucket(4);
            1500 .. 1999: set_bucket(5);
            2000 .. 2999: set_bucket(6);
            3000 .. 3999: set_bucket(7);
            4000 .. 5999: set_bucket(8);
            6000 .. 7999: set_bucket(9);
            8000 .. 11999: set_bucket(10);
            12000 .. 15999: set_bucket(11);
            16000 .. 23999: set_bucket(12);
            24000 .. 31999: set_bucket(13);
            32000 .. 63999: set_bucket(14);
            64000 .. 65535: set_bucket(15);
        }
        size = 16;
    }
    apply {
        tx.count(port);
        qdelay_bucket.apply();
        qdelay_hist.count(port ++ bucket);
    }
}
