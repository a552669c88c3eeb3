/*
 * telemetry.p4 -- generic counters and the controller reports (digests).
 *
 * Mechanism-specific counters live with their mechanism (ECN marks in
 * ecn.p4, path changes in flowlet.p4, reorder events in reorder.p4, ...);
 * here are the per-port, per-class, per-reason counts and the digests.
 * BMv2 keeps one digest per packet, so the elephant report takes precedence
 * over a path-change report.
 */
#ifndef _STELLAR_CONTROL_TELEMETRY_P4_
#define _STELLAR_CONTROL_TELEMETRY_P4_

control TelemetryIngress(inout headers_t hdr,
                         inout metadata_t meta,
                         inout standard_metadata_t standard_metadata) {

    /* Received per ingress port.  Size: PORT_SLOTS. */
    counter(PORT_SLOTS, CounterType.packets_and_bytes) rx_port;
    /* Dropped by reason (define.p4 DROP_*).  Size: REASON_SLOTS. */
    counter(REASON_SLOTS, CounterType.packets_and_bytes) drops;
    /* Malformed/notable input by kind (define.p4 MALFORMED_*). */
    counter(REASON_SLOTS, CounterType.packets_and_bytes) malformed;
    /* Forwarded per traffic class (after policing).  Size: CLASS_SLOTS. */
    counter(CLASS_SLOTS, CounterType.packets_and_bytes) class_rx;

    apply {
        rx_port.count((bit<32>)standard_metadata.ingress_port);
        if (meta.malformed != MALFORMED_NONE) {
            malformed.count((bit<32>)meta.malformed);
        }
        if (meta.drop == 1) {
            drops.count((bit<32>)meta.drop_reason);
        } else {
            class_rx.count((bit<32>)meta.qos.traffic_class);
            if (meta.eleph.report == 1) {
                meta.elephant_report.src_addr = hdr.ipv4.src_addr;
                meta.elephant_report.dst_addr = hdr.ipv4.dst_addr;
                meta.elephant_report.protocol = meta.flow.protocol;
                meta.elephant_report.l4_id = meta.flow.l4_id;
                meta.elephant_report.bytes = meta.eleph.bytes_estimate;
                digest<elephant_digest_t>(1, meta.elephant_report);
            } else if (meta.path.changed == 1 && meta.path.change_reason != CHANGE_NEW &&
                       meta.cfg.report_path_changes == 1) {
                meta.path_report.src_addr = hdr.ipv4.src_addr;
                meta.path_report.dst_addr = hdr.ipv4.dst_addr;
                meta.path_report.protocol = meta.flow.protocol;
                meta.path_report.l4_id = meta.flow.l4_id;
                meta.path_report.old_port = meta.flow.cur_port;
                meta.path_report.new_port = (bit<16>)meta.path.chosen_port;
                meta.path_report.reason = meta.path.change_reason;
                digest<path_change_digest_t>(1, meta.path_report);
            }
        }
    }
}

control TelemetryEgress(inout headers_t hdr,
                        inout metadata_t meta,
                        inout standard_metadata_t standard_metadata) {

    /* Sent per egress port.  Size: PORT_SLOTS. */
    counter(PORT_SLOTS, CounterType.packets_and_bytes) tx_port;
    /* Sent per (port, queue): index port * 8 + queue.  Size: PORT_QUEUE_SLOTS. */
    counter(PORT_QUEUE_SLOTS, CounterType.packets_and_bytes) tx_queue;
    /* Queue-delay histogram per egress port: index port * 16 + bucket of the
     * packet's deq_timedelta, buckets starting at 0, 1, 2, 4, 8, 12, 16, 24,
     * 32, 48, 64, 96, 128, 192, 256, 512 us.  The controller's congestion
     * map is built from it (counter deltas between polls): P4Runtime on BMv2
     * reads counters, not registers.  Size: PORT_SLOTS * QDELAY_BUCKETS. */
    counter(QDELAY_HIST_SLOTS, CounterType.packets_and_bytes) qdelay_hist;

    apply {
        tx_port.count((bit<32>)standard_metadata.egress_port);
        bit<32> d = standard_metadata.deq_timedelta;
        bit<32> bucket = 15;
        if (d < 1) {
            bucket = 0;
        } else if (d < 2) {
            bucket = 1;
        } else if (d < 4) {
            bucket = 2;
        } else if (d < 8) {
            bucket = 3;
        } else if (d < 12) {
            bucket = 4;
        } else if (d < 16) {
            bucket = 5;
        } else if (d < 24) {
            bucket = 6;
        } else if (d < 32) {
            bucket = 7;
        } else if (d < 48) {
            bucket = 8;
        } else if (d < 64) {
            bucket = 9;
        } else if (d < 96) {
            bucket = 10;
        } else if (d < 128) {
            bucket = 11;
        } else if (d < 192) {
            bucket = 12;
        } else if (d < 256) {
            bucket = 13;
        } else if (d < 512) {
            bucket = 14;
        }
        qdelay_hist.count(((bit<32>)standard_metadata.egress_port << 4) | bucket);
        tx_queue.count(((bit<32>)standard_metadata.egress_port << 3) |
                                 (bit<32>)meta.qos.queue);
    }
}

#endif  /* _STELLAR_CONTROL_TELEMETRY_P4_ */
