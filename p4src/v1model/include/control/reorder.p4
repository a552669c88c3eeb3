/*
 * reorder.p4 -- receiver-side reordering detector (egress).
 *
 * Per RoCEv2 flow (src IP, dst IP, dest QP, hashed to REORDER_SLOTS) the
 * highest PSN that has left this switch.  A departing packet whose PSN is
 * lower (modulo 2^24, half-range comparison) is a reorder event: counted per
 * egress port and in a total register.  On the destination leaf this sees
 * exactly what the receiving NIC would; on a single switch it checks the
 * merged departure order of all ports -- the metric ordering tests and
 * benchmarks use.  An equal PSN (retransmission or a duplicate) is not a
 * reorder.
 *
 * Block file: included once per section (see stellar.p4, "Block files").
 */
#if defined(STELLAR_EGRESS_DECLS)

    /* PSN_SLOT_VALID | highest PSN.  Size: REORDER_SLOTS. */
    @name("reorder.max_psn")
    register<bit<32>>(REORDER_SLOTS) reorder_max_psn;
    /* Reorder events since start (index 0). */
    @name("reorder.total")
    register<bit<32>>(1) reorder_total;
    /* Reorder events per egress port.  Size: PORT_SLOTS. */
    @name("reorder.events")
    counter(PORT_SLOTS, CounterType.packets_and_bytes) reorder_events;

#elif defined(STELLAR_STEP_REORDER)
    {
        if (hdr.bth.isValid()) {
            hash(meta.reorder_slot, HashAlgorithm.crc32, 32w0,
                 { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.bth.dest_qp },
                 (bit<32>)REORDER_SLOTS);
            bit<32> stored;
            reorder_max_psn.read(stored, meta.reorder_slot);
            bit<32> current = PSN_SLOT_VALID | (bit<32>)hdr.bth.psn;
            if ((stored & PSN_SLOT_VALID) == 0) {
                reorder_max_psn.write(meta.reorder_slot, current);
            } else {
                bit<24> ahead = hdr.bth.psn - stored[23:0];
                if (ahead != 0 && ahead < PSN_HALF_RANGE) {
                    reorder_max_psn.write(meta.reorder_slot, current);
                } else if (ahead >= PSN_HALF_RANGE) {
                    bit<32> events_so_far;
                    reorder_total.read(events_so_far, 0);
                    reorder_total.write(0, events_so_far + 1);
                    reorder_events.count((bit<32>)standard_metadata.egress_port);
                }
            }
        }
    }
#endif
