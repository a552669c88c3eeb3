/*
 * pressure.p4 (TNA) -- congestion signals on the reverse path (ingress):
 * exploration under pressure.
 *
 * A RoCEv2 CNP (BTH opcode 0x81) travels from the receiver back to the
 * sender.  On the sender's leaf it says that the forward flows of that host
 * pair meet congestion somewhere on their path, possibly beyond what this
 * leaf sees (a spine's downlink), where the member that looks best here is
 * not.  As the v1model program's pressure.p4, CNPs are counted per host pair
 * (the forward direction's (src, dst): the CNP's (dst, src)) within
 * explore_window; a data packet of a pair with at least explore_signals of
 * them is *hot*.
 *
 * What a hot packet does differs from v1model (README.md, "Data plane v3"):
 * path choice on Tofino is one {best member, delay} cell per group, which
 * the members' feedback copies keep, and a flow off the best member is
 * drained back to it (drain_any), with no per-flow room to remember an
 * exploration.  So the pressure enters the reports: a hot packet is bridged
 * as hot (hdr.bridged.hot), and if its egress port's feedback copy is due,
 * feedback.p4 reports the member saturated.  The member loses "best" at the
 * next report of another member, and the flows on it leave at their next
 * drain point (with the drain proof); while the pair stays hot its packets
 * keep the member's reports saturated.  Never with ECMP: no feedback.
 *
 * One register, one place (`signals_at`): a CNP counts, a data packet's
 * first pass reads.
 */
#ifndef _STELLAR_TNA_CONTROL_PRESSURE_P4_
#define _STELLAR_TNA_CONTROL_PRESSURE_P4_

struct pressure_cell_t {
    bit<32> since;    /* the window's first CNP, ns */
    bit<32> count;    /* CNPs since */
}

control Pressure(inout tna_headers_t hdr, inout tna_ingress_metadata_t meta) {
    /* Per host pair (12 bits of a CRC-16 of (src, dst)): {since, count}.
     * Size: PRESSURE_SLOTS. */
    Register<pressure_cell_t, bit<12>>(PRESSURE_SLOTS, {0, 0}) signals;
    /* CNPs counted (0), hot packets (1). */
    Counter<bit<32>, bit<1>>(2, CounterType_t.PACKETS) events;

    bit<32> min_signals;
    bit<32> window;
    bit<32> limit;      /* now - window */
    bit<1>  is_cnp;
    bit<12> slot;
    Hash<bit<12>>(HashAlgorithm_t.CRC16) forward_pair_of;
    Hash<bit<12>>(HashAlgorithm_t.CRC16) reverse_pair_of;

    /* A CNP: within the window (since >= now - window, a sign test) one
     * more, else a new window with this one. */
    RegisterAction<pressure_cell_t, bit<12>, bit<1>>(signals) signal = {
        void apply(inout pressure_cell_t v) {
            if (v.since - limit < 32w0x80000000) {
                v.count = v.count + 1;
            } else {
                v.since = meta.now;
                v.count = 1;
            }
        }
    };
    /* A data packet: hot while the window holds enough CNPs. */
    RegisterAction<pressure_cell_t, bit<12>, bit<1>>(signals) check = {
        void apply(inout pressure_cell_t v, out bit<1> rv) {
            rv = 0;
            if (v.count >= min_signals && v.since - limit < 32w0x80000000) {
                rv = 1;
            }
        }
    };

    /* explore_signals (0: off) and explore_window (ns): one keyless row. */
    action set_params(bit<32> explore_signals, bit<32> explore_window_ns) {
        min_signals = explore_signals;
        window = explore_window_ns;
    }
    table params {
        actions = { set_params; }
        default_action = set_params(TNA_EXPLORE_SIGNALS, TNA_EXPLORE_WINDOW_NS);
        size = 1;
    }
    action take_limit() { limit = meta.now - window; }
    table window_limit { actions = { take_limit; } const default_action = take_limit(); size = 1; }
    action do_signal() { signal.execute(slot); events.count(0); }
    action do_check() { meta.hot = check.execute(slot); }
    /* The register's two uses in one table.  Size: 2 const rows. */
    table signals_at {
        key = { is_cnp: exact; meta.resub_pass: exact; }
        actions = { do_signal; do_check; NoAction; }
        const default_action = NoAction();
        const entries = {
            (1, 0): do_signal();
            (0, 0): do_check();
        }
        size = 2;
    }
    action hot() { hdr.bridged.hot = 1; events.count(1); }
    table mark_hot { actions = { hot; } const default_action = hot(); size = 1; }

    apply {
        params.apply();
        window_limit.apply();
        if (hdr.bth.isValid() && hdr.bth.opcode == BTH_OP_CNP) {
            is_cnp = 1;
            slot = reverse_pair_of.get({hdr.ipv4.dst_addr, hdr.ipv4.src_addr});
        } else {
            is_cnp = 0;
            slot = forward_pair_of.get({hdr.ipv4.src_addr, hdr.ipv4.dst_addr});
        }
        meta.hot = 0;
        hdr.bridged.hot = 0;
        if (meta.kind == KIND_DATA && hdr.ipv4.isValid() && min_signals != 0) {
            signals_at.apply();
        }
        if (meta.hot == 1) {
            mark_hot.apply();
        }
    }
}

#endif  /* _STELLAR_TNA_CONTROL_PRESSURE_P4_ */
