/*
 * reorder.p4 -- receiver-side reordering detector (egress).
 *
 * Per RoCEv2 flow (src IP, dst IP, dest QP, hashed to REORDER_SLOTS) the
 * PSN of the last packet that left this switch, as long as PSNs only rise.
 * A departing packet whose PSN is lower (modulo 2^24, half-range
 * comparison) is a backward jump, a reorder event: counted per egress port
 * and in a total register, and the tracked PSN follows it.  A late packet is
 * one event; so is a go-back-N resend of a whole range (the receiver does not
 * count a retransmission as reordering, and the switch cannot tell one from
 * a late first transmission: a resend shows as one event, not one per
 * resent packet).  On the destination leaf this sees
 * exactly what the receiving NIC would; on a single switch it checks the
 * merged departure order of all ports -- the metric ordering tests and
 * benchmarks use.  An equal PSN (retransmission or a duplicate) is not a
 * reorder.  A CRC-16 signature per slot keeps two flows that share a slot
 * from being compared with each other; the newer flow takes the slot over.
 *
 * Only data packets count (bth_is_data, functions.p4: RC/UC SEND, RDMA WRITE
 * and RDMA READ response opcodes).  ACKs, NAKs and CNPs share the data's key
 * (src, dst, dest QP) on the reverse direction of a bidirectional QP, but
 * their PSNs belong to another sequence (an ACK names the PSN it acknowledges,
 * a CNP carries PSN 0): compared with the data stream they read as
 * regressions that no receiver ever sees.  The key is directional (src, dst),
 * so the two directions of a QP are tracked apart.
 */
#ifndef _STELLAR_CONTROL_REORDER_P4_
#define _STELLAR_CONTROL_REORDER_P4_

control Reorder(inout headers_t hdr,
                inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {

    /* PSN_SLOT_VALID | highest PSN.  Size: REORDER_SLOTS. */
    register<bit<32>>(REORDER_SLOTS) max_psn;
    /* FLOW_SIG_VALID | crc16 of the flow: which flow the slot tracks, so that two
     * flows sharing a slot never compare PSNs with each other (a false reorder). */
    @name("flow_sig")
    register<bit<32>>(REORDER_SLOTS) owner_sig;
    /* Reorder events since start (index 0). */
    register<bit<32>>(1) total;
    /* Reorder events per egress port.  Size: PORT_SLOTS. */
    counter(PORT_SLOTS, CounterType.packets_and_bytes) events;

    apply {
        if (hdr.bth.isValid() && bth_is_data(hdr.bth.opcode)) {
            hash(meta.reorder_slot, HashAlgorithm.crc32, 32w0,
                 { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.bth.dest_qp },
                 (bit<32>)REORDER_SLOTS);
            hash(meta.reorder_sig, HashAlgorithm.crc16, 32w0,
                 { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.bth.dest_qp }, 32w65536);
            meta.reorder_sig = meta.reorder_sig | FLOW_SIG_VALID;
            bit<32> owner;
            bit<32> stored;
            owner_sig.read(owner, meta.reorder_slot);
            max_psn.read(stored, meta.reorder_slot);
            bit<32> current = PSN_SLOT_VALID | (bit<32>)hdr.bth.psn;
            if (owner != meta.reorder_sig || (stored & PSN_SLOT_VALID) == 0) {
                /* A new flow for this slot (or the first one): start tracking it. */
                owner_sig.write(meta.reorder_slot, meta.reorder_sig);
                max_psn.write(meta.reorder_slot, current);
            } else {
                bit<24> ahead = hdr.bth.psn - stored[23:0];
                if (ahead != 0 && ahead < PSN_HALF_RANGE) {
                    max_psn.write(meta.reorder_slot, current);
                } else if (ahead >= PSN_HALF_RANGE) {
                    /* A backward jump: counted once, and the detector follows
                     * the stream from there, so a go-back-N resend of a range
                     * is one event, not one per resent packet. */
                    max_psn.write(meta.reorder_slot, current);
                    bit<32> events_so_far;
                    total.read(events_so_far, 0);
                    total.write(0, events_so_far + 1);
                    events.count((bit<32>)standard_metadata.egress_port);
                }
            }
        }
    }
}

#endif  /* _STELLAR_CONTROL_REORDER_P4_ */
