/*
 * elephant.p4 -- elephant/mouse separation.
 *
 * A count-min sketch (2 rows x CMS_WIDTH) counts each flow's bytes in the
 * current window.  Rather than clearing 2 x CMS_WIDTH cells at every window
 * start (impossible per packet), each cell remembers the window it was last
 * written in; a cell from an older window reads as zero.  A flow whose
 * estimate reaches config.elephant_bytes becomes an elephant and stays one
 * until it is idle for config.elephant_idle_us (the flow-lookup step clears the state);
 * it is reported by digest once.  The controller's hint table overrides the
 * sketch both ways.  Elephants get a lower queue (queue_map) and may be moved
 * at drain points (flowlet.p4); mice stay pinned in a higher queue.
 */
#ifndef _STELLAR_CONTROL_ELEPHANT_P4_
#define _STELLAR_CONTROL_ELEPHANT_P4_

control Elephant(inout headers_t hdr,
                 inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {

    /* Sketch rows (bytes this window) and the window each cell belongs to.
     * Size: CMS_WIDTH each (size.p4). */
    register<bit<32>>(CMS_WIDTH) cms_row0;
    register<bit<32>>(CMS_WIDTH) cms_row1;
    register<bit<32>>(CMS_WIDTH) cms_epoch0;
    register<bit<32>>(CMS_WIDTH) cms_epoch1;
    /* Start and number of the current window (one switch-wide window). */
    register<timestamp_t>(1) window_start;
    register<bit<32>>(1) window_id;
    /* Elephants found: index 0 by the sketch, 1 by a hint (once per flow). */
    counter(2, CounterType.packets_and_bytes) detections;

    action hint_elephant() {
        meta.eleph.hint_elephant = 1;
    }

    action hint_mouse() {
        meta.eleph.hint_mouse = 1;
    }

    /* Controller knowledge: flows or job address pairs that are known
     * elephants (or must be treated as mice).  Size: HINT_SIZE. */
    table hint {
        key = {
            hdr.ipv4.src_addr: ternary;
            hdr.ipv4.dst_addr: ternary;
            meta.flow.l4_id: ternary;
        }
        actions = {
            hint_elephant;
            hint_mouse;
            NoAction;
        }
        default_action = NoAction();
        size = HINT_SIZE;
    }

    apply {
        timestamp_t now = standard_metadata.ingress_global_timestamp;

        /* Roll the window. */
        timestamp_t opened;
        bit<32> epoch;
        window_start.read(opened, 0);
        window_id.read(epoch, 0);
        if (now - opened >= (timestamp_t)meta.cfg.elephant_window_us) {
            opened = now;
            epoch = epoch + 1;
            window_start.write(0, opened);
            window_id.write(0, epoch);
        }

        /* Add this packet to both rows; the estimate is the smaller cell. */
        hash(meta.eleph.row0_index, HashAlgorithm.crc16, 32w0,
             { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, meta.flow.protocol, meta.flow.l4_id },
             (bit<32>)CMS_WIDTH);
        hash(meta.eleph.row1_index, HashAlgorithm.crc32, 32w0,
             { CMS_ROW1_SALT, hdr.ipv4.src_addr, hdr.ipv4.dst_addr, meta.flow.protocol,
               meta.flow.l4_id },
             (bit<32>)CMS_WIDTH);
        bit<32> count0;
        bit<32> count1;
        bit<32> cell_epoch0;
        bit<32> cell_epoch1;
        cms_row0.read(count0, meta.eleph.row0_index);
        cms_epoch0.read(cell_epoch0, meta.eleph.row0_index);
        cms_row1.read(count1, meta.eleph.row1_index);
        cms_epoch1.read(cell_epoch1, meta.eleph.row1_index);
        if (cell_epoch0 != epoch) {
            count0 = 0;
        }
        if (cell_epoch1 != epoch) {
            count1 = 0;
        }
        count0 = count0 + standard_metadata.packet_length;
        count1 = count1 + standard_metadata.packet_length;
        cms_row0.write(meta.eleph.row0_index, count0);
        cms_epoch0.write(meta.eleph.row0_index, epoch);
        cms_row1.write(meta.eleph.row1_index, count1);
        cms_epoch1.write(meta.eleph.row1_index, epoch);
        meta.eleph.bytes_estimate = count0;
        if (count1 < count0) {
            meta.eleph.bytes_estimate = count1;
        }

        /* Classify: hint first, then the sticky state, then the sketch. */
        hint.apply();
        if (meta.eleph.hint_mouse == 1) {
            meta.flow.elephant = 0;
        } else if (meta.eleph.hint_elephant == 1) {
            meta.flow.elephant = 1;
            if ((meta.flow.status & FLOW_STATE_HINTED) == 0 && meta.flow.slot_busy == 0) {
                detections.count(1);
            }
            meta.flow.status = meta.flow.status | FLOW_STATE_ELEPHANT | FLOW_STATE_HINTED;
        } else if ((meta.flow.status & FLOW_STATE_ELEPHANT) != 0) {
            meta.flow.elephant = 1;
        } else if (meta.flow.slot_busy == 1 &&
                   (meta.cfg.order_guards & ORDER_GUARD_UNTRACKED) != 0) {
            /* No state to keep the bit in: a per-window sketch verdict would
             * move the flow between queues at every window.  Hints only. */
            meta.flow.elephant = 0;
        } else if (meta.eleph.bytes_estimate >= meta.cfg.elephant_bytes) {
            meta.flow.elephant = 1;
            meta.flow.status = meta.flow.status | FLOW_STATE_ELEPHANT;
            if ((meta.flow.status & FLOW_STATE_REPORTED) == 0 && meta.flow.slot_busy == 0) {
                meta.flow.status = meta.flow.status | FLOW_STATE_REPORTED;
                meta.eleph.report = 1;
                detections.count(0);
            }
        }
    }
}

#endif  /* _STELLAR_CONTROL_ELEPHANT_P4_ */
