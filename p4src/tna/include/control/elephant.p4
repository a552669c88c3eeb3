/*
 * elephant.p4 (TNA) -- a two-row count-min sketch of bytes per flow and
 * window.
 *
 * v1model: count registers plus a window-start register, reset by the first
 * packet of a window.  Tofino: each row is one register of paired cells
 * {bytes, window}; one RegisterAction per row adds the packet's bytes, or
 * restarts the cell when its window is old.  The rows are indexed by two
 * disjoint 11-bit slices of the flow's one CRC-32 (v1model: two hashes).
 * A flow is an elephant when both rows are above the threshold; the packet
 * that takes the smaller row over it reports the flow (elephant_digest_t,
 * once per window).  The controller's `hint` table (flow or job addresses)
 * overrides the sketch both ways, as in the v1model program.
 */
struct cms_pair_t {
    bit<32> bytes;
    bit<32> window;
}

control Elephant(inout tna_headers_t hdr, inout tna_ingress_metadata_t meta,
                 in bit<32> threshold) {
    /* Size: CMS_WIDTH (2048 = 11 bits) per row. */
    Register<cms_pair_t, bit<11>>(CMS_WIDTH, {0, 0}) row0;
    Register<cms_pair_t, bit<11>>(CMS_WIDTH, {0, 0}) row1;

    bit<32> epoch;
    bit<32> len;

    RegisterAction<cms_pair_t, bit<11>, bit<32>>(row0) add0 = {
        void apply(inout cms_pair_t v, out bit<32> rv) {
            if (v.window == epoch) { v.bytes = v.bytes + len; }
            else { v.bytes = len; v.window = epoch; }
            rv = v.bytes;
        }
    };
    RegisterAction<cms_pair_t, bit<11>, bit<32>>(row1) add1 = {
        void apply(inout cms_pair_t v, out bit<32> rv) {
            if (v.window == epoch) { v.bytes = v.bytes + len; }
            else { v.bytes = len; v.window = epoch; }
            rv = v.bytes;
        }
    };
    /* A policed (red) packet adds nothing (it is dropped at the end of
     * ingress): the window still rolls, as an add of 0 would. */
    RegisterAction<cms_pair_t, bit<11>, bit<32>>(row0) keep0 = {
        void apply(inout cms_pair_t v, out bit<32> rv) {
            if (v.window != epoch) { v.bytes = 0; v.window = epoch; }
            rv = v.bytes;
        }
    };
    RegisterAction<cms_pair_t, bit<11>, bit<32>>(row1) keep1 = {
        void apply(inout cms_pair_t v, out bit<32> rv) {
            if (v.window != epoch) { v.bytes = 0; v.window = epoch; }
            rv = v.bytes;
        }
    };
    /* One table per row (an action may address one register from the hash
     * unit); the meter's colour as a key, not a gate on a flag made from it
     * (one stage less).  Every case is a row (a default action cannot use
     * the hash-distributed index, bf-p4c).  Size: 2 const rows each. */
    action count0() { meta.row0 = add0.execute(meta.flow_hash[10:0]); }
    action none0() { meta.row0 = keep0.execute(meta.flow_hash[10:0]); }
    table sketch0 {
        key = { meta.colour: ternary; }
        actions = { count0; none0; NoAction; }
        const default_action = NoAction();
        const entries = {
            (8w3): none0();      /* MeterColor_t.RED */
            (_): count0();
        }
        size = 2;
    }
    action count1() { meta.row1 = add1.execute(meta.flow_hash[26:16]); }
    action none1() { meta.row1 = keep1.execute(meta.flow_hash[26:16]); }
    table sketch1 {
        key = { meta.colour: ternary; }
        actions = { count1; none1; NoAction; }
        const default_action = NoAction();
        const entries = {
            (8w3): none1();
            (_): count1();
        }
        size = 2;
    }

    action hint_elephant() { meta.hint_elephant = 1; }
    action hint_mouse() { meta.hint_mouse = 1; }
    /* Controller knowledge: flows or a job's address pairs known to be
     * elephants (or to be kept mice).  Size: HINT_SIZE. */
    table hint {
        key = {
            hdr.ipv4.src_addr: ternary;
            hdr.ipv4.dst_addr: ternary;
            meta.l4: ternary;
        }
        actions = { hint_elephant; hint_mouse; NoAction; }
        default_action = NoAction();
        size = HINT_SIZE;
    }

    /* Comparisons of two 32-bit values are the sign of their difference,
     * computed in keyless tables: a gateway reads at most 4 bytes + 12 bits
     * of PHV, and p4c's mid end folds a subtraction written in the apply
     * block back into the condition (it does not look into table actions).
     * The counts stay below 2^31 bytes per window.  The smaller row (the
     * sketch's estimate, also the digest's byte count) by the action ALU's
     * min(), then two differences: two 32-bit temporaries where comparing
     * each row with the threshold took five, which tofino2's PHV
     * allocation could not place beside the rest of the program. */
    bit<32> limit;        /* threshold + len */
    bit<32> over;         /* threshold - min: sign set iff min > threshold */
    bit<32> under;        /* limit - min: sign clear iff min - len <= threshold */
    action take_limit() { limit = threshold + len; }
    table threshold_limit { actions = { take_limit; } const default_action = take_limit(); size = 1; }
    action take_min() { meta.eleph_bytes = min(meta.row0, meta.row1); }
    table smaller_row { actions = { take_min; } const default_action = take_min(); size = 1; }
    action diff_threshold() {
        over = threshold - meta.eleph_bytes;
        under = limit - meta.eleph_bytes;
    }
    table over_threshold { actions = { diff_threshold; } const default_action = diff_threshold(); size = 1; }
    /* The verdict, one const table on the flags (a chain of conditions
     * before): a second pass takes the first pass's (the sketch counts each
     * packet once); the hints override the sketch both ways; the packet
     * that takes the smaller row over the threshold reports the flow.
     * Size: 6 const rows. */
    bit<1> second;
    action from_first_pass() {
        meta.elephant = meta.resub.elephant;
        hdr.bridged.elephant = meta.resub.elephant;
    }
    action mouse() { meta.elephant = 0; hdr.bridged.elephant = 0; }
    action big() { meta.elephant = 1; hdr.bridged.elephant = 1; }
    action big_report() {
        meta.elephant = 1; hdr.bridged.elephant = 1;
        meta.eleph_report = 1;
    }
    table verdict {
        key = {
            second: ternary; meta.hint_mouse: ternary; meta.hint_elephant: ternary;
            over[31:31]: ternary; under[31:31]: ternary;
        }
        actions = { from_first_pass; mouse; big; big_report; }
        const default_action = mouse();
        const entries = {
            (1, _, _, _, _): from_first_pass();
            (0, 1, _, _, _): mouse();
            (0, 0, 1, _, _): big();
            (0, 0, 0, 1, 0): big_report();
            (0, 0, 0, 1, 1): big();
        }
        size = 6;
    }

    /* One table per gate (README.md, "Tofino-1"). */
    apply {
        if (meta.resub.isValid()) {
            second = 1;
        } else {
            second = 0;
        }
        epoch = meta.sketch_win;
        len = (bit<32>) hdr.ipv4.total_len;
        if (meta.kind == KIND_DATA && second == 0 && meta.drop == 0 && meta.no_route == 0) {
            sketch0.apply();
        }
        if (meta.kind == KIND_DATA && second == 0 && meta.drop == 0 && meta.no_route == 0) {
            sketch1.apply();
        }
        threshold_limit.apply();
        smaller_row.apply();
        over_threshold.apply();
        if (hdr.ipv4.isValid() && second == 0) {
            hint.apply();
        }
        verdict.apply();
    }
}
