/*
 * pressure.p4 -- congestion signals on the reverse path (ingress).
 *
 * A RoCEv2 CNP (BTH opcode 0x81) travels from the receiver back to the
 * sender.  On the sender's leaf it says that the forward flows of that host
 * pair meet congestion somewhere on their path -- possibly beyond what this
 * leaf can see (a spine's downlink), where a path that looks best locally is
 * not.  The count per host pair (the forward direction's (src, dst): the CNP's
 * (dst, src)) within explore_window_us marks the pair's flows "hot"; flowlet.p4
 * then lets a hot flow whose member scores best here explore the next best
 * member at its next safe point (CHANGE_EXPLORE), and clears the count so
 * that one round of signals moves one flow once.  A CNP's dest QP is the
 * sender's, not the data's, so the pair, not the QP, is the key.
 */
#ifndef _STELLAR_CONTROL_PRESSURE_P4_
#define _STELLAR_CONTROL_PRESSURE_P4_

control Pressure(inout headers_t hdr,
                 inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {

    /* CNPs counted per host pair since start.  Size: 1. */
    counter(1, CounterType.packets_and_bytes) cnps;

    apply {
        timestamp_t now = standard_metadata.ingress_global_timestamp;
        meta.pressure.hot = 0;
        if (hdr.bth.isValid() && hdr.bth.opcode == BTH_OP_CNP) {
            /* The forward direction's pair: the CNP's destination sent the data. */
            hash(meta.pressure.slot, HashAlgorithm.crc32, 32w0,
                 { hdr.ipv4.dst_addr, hdr.ipv4.src_addr }, (bit<32>)PRESSURE_SLOTS);
            bit<32> signals;
            timestamp_t since;
            pressure_signals.read(signals, meta.pressure.slot);
            pressure_since.read(since, meta.pressure.slot);
            if (signals == 0 || now - since > (timestamp_t)meta.adapt.explore_window_us) {
                signals = 0;
                pressure_since.write(meta.pressure.slot, now);
            }
            pressure_signals.write(meta.pressure.slot, signals + 1);
            cnps.count(0);
        } else if (meta.adapt.explore_signals != 0) {
            hash(meta.pressure.slot, HashAlgorithm.crc32, 32w0,
                 { hdr.ipv4.src_addr, hdr.ipv4.dst_addr }, (bit<32>)PRESSURE_SLOTS);
            bit<32> signals;
            timestamp_t since;
            pressure_signals.read(signals, meta.pressure.slot);
            pressure_since.read(since, meta.pressure.slot);
            if (signals >= meta.adapt.explore_signals &&
                now - since <= (timestamp_t)meta.adapt.explore_window_us) {
                meta.pressure.hot = 1;
            }
        }
    }
}

#endif  /* _STELLAR_CONTROL_PRESSURE_P4_ */
