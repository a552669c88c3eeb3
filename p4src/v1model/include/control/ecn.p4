/*
 * ecn.p4 -- time-window adaptive ECN marking (egress).
 *
 * Per egress (port, queue) and window W (window_us) the block tracks the minimum
 * queue delay (deq_timedelta) and the bytes sent.  When a window closes:
 *   - its minimum delay stayed above target_us (a standing queue that did
 *     not drain once in W)  -> K = max(K - step, Kmin): mark earlier;
 *   - no standing queue and fewer than idle_bytes sent (light load), or no
 *     packet at all for a whole window                 -> K = min(K + step, Kmax).
 * An ECT packet whose own queue delay d is >= K is marked CE with
 * probability pmax * (d - K) / (Kmax - K), and always at d >= Kmax; not-ECT
 * packets are never marked.  K never falls below its floor, kfloor_bytes at
 * the queue's measured drain rate (the window's bytes over its length while
 * a standing queue kept the port busy): DCQCN's control loop runs at tens of
 * microseconds, so a K of a few frames at a slow (or degraded) port marks
 * flows the loop has not had time to slow down yet, and adaptive ECN then
 * marks more than static ECN.  adapt = 0 keeps K at k_init_us (static K, the
 * comparison baseline).  The division is avoided by cross-multiplying:
 * mark iff rand * (Kmax - K) < pmax * (d - K), rand uniform in [0, 65535].
 */
#ifndef _STELLAR_CONTROL_ECN_P4_
#define _STELLAR_CONTROL_ECN_P4_

control Ecn(inout headers_t hdr,
            inout metadata_t meta,
            inout standard_metadata_t standard_metadata) {

    /* All per (port, queue), index port << 3 | queue, size PORT_QUEUE_SLOTS;
     * p4src/CONTRACT.md s.4.  The parameters (ecn.config) are per port. */
    register<bit<32>>(PORT_QUEUE_SLOTS) k_us;
    register<bit<1>>(PORT_QUEUE_SLOTS) initialised;
    register<timestamp_t>(PORT_QUEUE_SLOTS) win_start;
    register<bit<32>>(PORT_QUEUE_SLOTS) win_min_us;
    register<bit<32>>(PORT_QUEUE_SLOTS) win_bytes;
    register<bit<32>>(PORT_QUEUE_SLOTS) last_min_us;
    register<bit<32>>(PORT_QUEUE_SLOTS) last_bytes;
    register<bit<32>>(PORT_QUEUE_SLOTS) mean_us;
    /* CE marks made here, per port. */
    counter(PORT_SLOTS, CounterType.packets_and_bytes) marks;

    action set_ecn_params(bit<32> window_us, bit<32> target_us,
                              bit<32> kmin_us, bit<32> kmax_us, bit<32> k_init_us,
                              bit<32> step_us, bit<32> pmax, bit<32> idle_bytes,
                              bit<1> adapt) {
        meta.ecn.enabled = 1;
        meta.ecn.window_us = window_us;
        meta.ecn.target_us = target_us;
        meta.ecn.kmin_us = kmin_us;
        meta.ecn.kmax_us = kmax_us;
        meta.ecn.k_init_us = k_init_us;
        meta.ecn.step_us = step_us;
        meta.ecn.pmax = pmax;
        meta.ecn.idle_bytes = idle_bytes;
        meta.ecn.adapt = adapt;
    }

    action ecn_off() {
        meta.ecn.enabled = 0;
    }

    /* Per-port parameters; the default (every port) is define.p4's.
     * Size: PORT_SLOTS. */
    table config {
        key = {
            standard_metadata.egress_port: exact;
        }
        actions = {
            set_ecn_params;
            ecn_off;
        }
        default_action = set_ecn_params(DEFAULT_ECN_WINDOW_US, DEFAULT_ECN_TARGET_US,
                                            DEFAULT_ECN_KMIN_US, DEFAULT_ECN_KMAX_US,
                                            DEFAULT_ECN_K_INIT_US, DEFAULT_ECN_STEP_US,
                                            DEFAULT_ECN_PMAX, DEFAULT_ECN_IDLE_BYTES,
                                            DEFAULT_ECN_ADAPT);
        size = PORT_SLOTS;
    }

    action set_floor(bit<32> kfloor_bytes) {
        meta.ecn.kfloor_bytes = kfloor_bytes;
    }

    /* One (default) entry: K's floor as bytes at the queue's measured drain
     * rate (see the file comment).  0: no floor beyond kmin_us. */
    table floor {
        actions = {
            set_floor;
        }
        default_action = set_floor(DEFAULT_ECN_KFLOOR_BYTES);
    }

    apply {
        config.apply();
        floor.apply();
        if (meta.ecn.enabled == 1 && hdr.ipv4.isValid()) {
            bit<32> port = (bit<32>)standard_metadata.egress_port;
            /* The adaptive state is per (port, queue): a queue's marking
             * follows its own standing queue, not its neighbours'. */
            bit<32> qi = (port << 3) | (bit<32>)meta.qos.queue;
            timestamp_t now = standard_metadata.egress_global_timestamp;
            bit<32> delay = standard_metadata.deq_timedelta;
            bit<32> length = standard_metadata.packet_length;

            bit<1> ready;
            bit<32> k;
            timestamp_t opened;
            bit<32> wmin;
            bit<32> wbytes;
            bit<32> mean;
            initialised.read(ready, qi);
            k_us.read(k, qi);
            win_start.read(opened, qi);
            win_min_us.read(wmin, qi);
            win_bytes.read(wbytes, qi);
            mean_us.read(mean, qi);

            if (ready == 0) {
                /* First packet on this port: open the first window. */
                ready = 1;
                k = meta.ecn.k_init_us;
                opened = now;
                wmin = delay;
                wbytes = length;
            } else if (now - opened >= (timestamp_t)meta.ecn.window_us) {
                /* Close the window: adapt K, publish the summary, open the next. */
                if (meta.ecn.adapt == 1) {
                    if (now - opened >= (timestamp_t)(meta.ecn.window_us + meta.ecn.window_us)) {
                        /* No packet for at least one whole window: idle link. */
                        k = k + meta.ecn.step_us;
                    } else if (wmin > meta.ecn.target_us) {
                        bit<32> lower = 0;
                        if (k > meta.ecn.step_us) {
                            lower = k - meta.ecn.step_us;
                        }
                        /* The floor: a standing queue drains at the port's
                         * real rate, wbytes per (now - opened); K may not go
                         * below kfloor_bytes' worth of it.  Cross-multiplied:
                         * lower * wbytes / elapsed >= kfloor_bytes. */
                        bit<64> elapsed = (bit<64>)(now - opened);
                        if ((bit<64>)lower * (bit<64>)wbytes >= (bit<64>)meta.ecn.kfloor_bytes * elapsed) {
                            k = lower;
                        } else if ((bit<64>)k * (bit<64>)wbytes < (bit<64>)meta.ecn.kfloor_bytes * elapsed) {
                            k = k + meta.ecn.step_us;
                        }
                    } else if (wbytes < meta.ecn.idle_bytes) {
                        k = k + meta.ecn.step_us;
                    }
                }
                last_min_us.write(qi, wmin);
                last_bytes.write(qi, wbytes);
                opened = now;
                wmin = delay;
                wbytes = length;
            } else {
                if (delay < wmin) {
                    wmin = delay;
                }
                wbytes = wbytes + length;
            }
            /* Keep K inside the (possibly just changed) bounds. */
            if (meta.ecn.adapt == 0) {
                k = meta.ecn.k_init_us;
            }
            if (k < meta.ecn.kmin_us) {
                k = meta.ecn.kmin_us;
            }
            if (k > meta.ecn.kmax_us) {
                k = meta.ecn.kmax_us;
            }
            mean = mean - (mean >> ECN_MEAN_SHIFT) + (delay >> ECN_MEAN_SHIFT);

            initialised.write(qi, ready);
            k_us.write(qi, k);
            win_start.write(qi, opened);
            win_min_us.write(qi, wmin);
            win_bytes.write(qi, wbytes);
            mean_us.write(qi, mean);

            /* Mark ECT(0)/ECT(1) packets; never not-ECT, CE already marked. */
            if ((hdr.ipv4.ecn == ECN_ECT0 || hdr.ipv4.ecn == ECN_ECT1) && delay >= k) {
                bit<1> mark = 0;
                if (delay >= meta.ecn.kmax_us) {
                    mark = 1;
                } else {
                    random(meta.ecn.rand, 32w0, 32w0xFFFF);
                    bit<64> lhs = (bit<64>)meta.ecn.rand * (bit<64>)(meta.ecn.kmax_us - k);
                    bit<64> rhs = (bit<64>)meta.ecn.pmax * (bit<64>)(delay - k);
                    if (lhs < rhs) {
                        mark = 1;
                    }
                }
                if (mark == 1) {
                    bit<16> old_word = hdr.ipv4.version ++ hdr.ipv4.ihl ++ hdr.ipv4.dscp ++ hdr.ipv4.ecn;
                    hdr.ipv4.ecn = ECN_CE;
                    hdr.ipv4.hdr_checksum = csum16_replace(
                        hdr.ipv4.hdr_checksum, old_word,
                        hdr.ipv4.version ++ hdr.ipv4.ihl ++ hdr.ipv4.dscp ++ hdr.ipv4.ecn);
                    marks.count(port);
                }
            }
        }
    }
}

#endif  /* _STELLAR_CONTROL_ECN_P4_ */
