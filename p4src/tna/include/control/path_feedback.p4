/*
 * path_feedback.p4 (TNA) -- path feedback between leaves (CONGA's idea for
 * RoCEv2), the egress half of data plane v3's feedback.
 *
 * The shim is the v1model program's (../../include/header.p4: stellar_fb_h,
 * EtherType ETHERTYPE_STELLAR_FB, 8 bytes after Ethernet; p4src/README.md
 * says why a shim and what MTU headroom it costs).  Every role is played in
 * egress, where the queue delay, the egress port and the chosen member are
 * known and the shim can be added or removed in one place:
 *   tag    (a leaf, towards a fabric port, a packet to another leaf's subnet):
 *          the shim with this leaf's id, the path (the egress port's uplink
 *          index, `port_kind`: one index per uplink whatever group the flow
 *          used, so a job's reserved group names its path alike), the
 *          congestion field at this hop's queue delay, and one entry returned
 *          to that leaf: round robin over its paths (`return_ptr`), the
 *          congestion this leaf last measured for it (`from_leaf`);
 *   raise  (any switch, towards a fabric port, a shimmed packet): the
 *          congestion field becomes max(field, this hop's queue delay);
 *   strip  (a leaf, towards a host port, a shimmed packet): the field is
 *          stored per (source leaf, path) in `from_leaf`, the returned entry
 *          (if any) in `to_leaf` with its time, and the shim is removed, so the
 *          host sees the original bytes (the shim is outside IP: neither the
 *          IPv4 checksum nor the RoCE ICRC covers it).
 * A returned entry reaches path choice as a feedback copy (feedback.p4's
 * mirror to the recirculation port) whose port is the uplink of the entry's
 * path and whose delay is the path's congestion, flagged `remote` (no
 * departure to record): path_choice's group_best takes it like a local
 * report, so a member whose spine downlink is congested loses "best" once the
 * destination leaf's traffic comes back, without the controller.  `to_leaf`
 * also limits those copies to one per (leaf, path) per `interval`.
 * And the uplink's own reports carry it: a tag reads the entry of its
 * (destination leaf, path), 0 once older than `max_age` (a measurement
 * only while fresh), and a local feedback copy of that packet reports the
 * larger of the queue delay here and the path's congestion (CONGA's max
 * over the path), so the next local report of the congested uplink does
 * not undo the remote one.
 * Silence: a path this leaf sends on to a leaf that returns nothing for it
 * for `silence` (a remote link died) is silent (`silence`), and its tags'
 * local reports saturate: the path loses "best" and its flows leave it at
 * their next drain point, without the controller.  Only while that leaf
 * keeps sending here (`heard`, as v1model's fb_heard): a run of its
 * shimmed packets here (no pause longer than half the silence: `run_since`
 * its start) must have covered at least half the silence after the
 * unanswered period began, so it had the means to answer.  The run before
 * the current one counts too (`prev_proof`, kept when a pause ends).  One-way
 * traffic (nothing comes back to carry an answer) is never silent, nor is a
 * path whose destination leaf has just resumed after a pause (v1model's
 * fb_heard_since, fb_prev_since, fb_prev_heard).  An answer is evidence too
 * (v1model's fb_answered): a leaf that answered another of this leaf's paths
 * after the period began (`answered`, per source leaf: when a shim carrying
 * an entry was last stripped) is answering, only not for this path, so it
 * proves the silence with half the silence of sending after the period began
 * (`heard`, no run needed), or with a go-back-N resend on the path after the
 * period began (`resent`, per (leaf, path): the flow's receiver behind that
 * leaf acknowledged nothing for a retransmission timeout).  The resend covers
 * a leaf that goes quiet after the failure: its own transfers done and the
 * dead path's returning nothing, it sends nothing more that could prove a
 * run, while the flows on the dead path wait for their timeout.  A resend
 * never starts a period (it probes nothing): a timeout longer than silence
 * + hold still finds the period it proves silent.
 * `suspect_hold` after it went
 * silent (silence + hold after its period began) the path is probed again:
 * the next tag on it starts a new period, as the v1model program's hold.
 * A dead uplink is reported by the leaf that sees it (v1model's fb_from_port,
 * FB_METRIC_DEAD): silence needs traffic to prove it, and a job waiting out
 * its retransmission timeout has none.  A strip records where the shim came
 * in (`from_port`: the ingress port's (group, member), `arrival`, the
 * controller's copy of failover.port_member); a tag reads the record of the
 * path it returns (the round robin's) and tests that member's bit in the
 * packet's own liveness bitmap (failover.alive, bridged; the packet-generator
 * port-down packet cleared it): a path whose uplink here is down is returned
 * as FB_METRIC_DEAD instead of its congestion (its stale entry is never
 * returned after: the fetch took its fresh bit).  Only for the packet's own
 * group (a port is a member of one group, as the port-down packet's).  The
 * source leaf takes a dead entry as silence: its copy for path choice says
 * silent (failover.silent marks the member, and its saturated delay takes
 * "best" away at the next report of another member), it answers nothing
 * (the silence period stays), and its tags on the path find it silent
 * while the entry is fresh (`max_age`).
 *
 * Units: congestion in ~us (ns >> 10, 2.4 % low), 16 bits in the field and
 * 13 bits (FB_METRIC_MAX) when returned; v1model adds the port's utilisation
 * to the hop's value, this program the queue delay only (no per-port DRE in
 * egress).  Retransmissions on a path: path_loss.p4.
 *
 * Registers, one RegisterAction each per packet (a packet is tagged or
 * stripped, never both): from_leaf (store: strip; fetch: tag, one table),
 * return_ptr (tag), to_leaf (receive: strip; read: tag, one table),
 * silence (answer: strip; sent_on: tag, one table), heard (hear: strip;
 * read_heard: tag, one table), run_since and prev_proof (a strip that ends
 * a pause writes, a tag reads: one table each), answered (a strip with an
 * entry writes, a tag reads: one table), resent (a resend's tag writes,
 * another tag reads: one table), from_port (a strip writes, a tag reads: one
 * table).  No multiply; the shifts are by constants.
 */
#ifndef _STELLAR_TNA_CONTROL_PATH_FEEDBACK_P4_
#define _STELLAR_TNA_CONTROL_PATH_FEEDBACK_P4_

const bit<2> FB_ROLE_NONE = 0;
const bit<2> FB_ROLE_TAG = 1;
const bit<2> FB_ROLE_RAISE = 2;
const bit<2> FB_ROLE_STRIP = 3;

struct fb_silence_t {
    bit<32> sent;         /* the sending period's start */
    bit<32> unanswered;   /* 1 while no entry came back since */
}

struct fb_to_leaf_t {
    bit<32> stamp;    /* when the last copy of this (leaf, path) went to ingress, ns */
    bit<32> metric;   /* its congestion, ~us */
}

control PathFeedback(inout tna_egress_headers_t hdr, inout tna_egress_metadata_t meta,
                     in egress_intrinsic_metadata_t eg_intr_md,
                     in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                     inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    /* Per (source leaf, path): {valid (bit 15), fresh (14: stored since it
     * was last returned), congestion (12:0, ~us)} as the last shim from that
     * leaf measured it.  Size: 256 leaves x 8 paths. */
    Register<bit<16>, bit<11>>(2048, 0) from_leaf;
    /* Per destination leaf: the path whose entry the next tag returns.
     * Size: 256 leaves. */
    Register<bit<8>, bit<8>>(256, 0) return_ptr;
    /* Per (remote leaf, own path): the congestion-to-leaf table, {time of
     * the entry, congestion}.  Size: 256 leaves x 8 paths. */
    Register<fb_to_leaf_t, bit<11>>(2048, {0, 0}) to_leaf;
    /* Per (remote leaf, own path): {start of the sending period (ns),
     * unanswered since}.  A tag on the path starts a period if the last one
     * was answered; it finds the path *silent* when its period began more
     * than `silence` ago with no answer since (a remote link died: the far
     * leaf stores nothing for the path, so it returns nothing).  Size: 256
     * leaves x 8 paths. */
    Register<fb_silence_t, bit<11>>(2048, {0, 0}) silence;
    /* Per source leaf: when a shim from it was last stripped here, ns (a
     * path to that leaf is silent only while it keeps sending here).
     * Size: 256 leaves. */
    Register<bit<32>, bit<8>>(256, 0) heard;
    /* Per source leaf: when the current run of its shims began (the first
     * after a pause of more than half the silence), ns.  Size: 256 leaves. */
    Register<bit<32>, bit<8>>(256, 0) run_since;
    /* Per source leaf: the run before the current one as a proof time, its
     * last arrival less half the silence (a period that began by then was
     * covered), 0 when that run was shorter than half the silence (it
     * proves nothing).  One value for v1model's two (fb_prev_since,
     * fb_prev_heard): the stateful ALU compares one register half with one
     * PHV input, so the run's length is tested once, when the run ends.
     * Size: 256 leaves. */
    Register<bit<32>, bit<8>>(256, 0) prev_proof;
    /* Per source leaf: when a shim from it carrying an entry (an answer for
     * any of this leaf's paths) was last stripped here, ns.  Size: 256
     * leaves. */
    Register<bit<32>, bit<8>>(256, 0) answered;
    /* Per (destination leaf, own path), silence's index: when a go-back-N
     * resend (reorder.p4's `regressed`) was last tagged on the path, ns.
     * Size: 256 leaves x 8 paths. */
    Register<bit<32>, bit<11>>(2048, 0) resent;
    /* Per (source leaf, path), from_leaf's index: {recorded (bit 15), the
     * member (10:8) and group (7:0) of the port the last shim from that leaf
     * on that path came in on}.  Size: 256 leaves x 8 paths. */
    Register<bit<16>, bit<11>>(2048, 0) from_port;
    /* Dead uplinks reported (a returned entry FB_METRIC_DEAD). */
    Counter<bit<32>, bit<1>>(1, CounterType_t.PACKETS) dead_reports;
    /* Silent tags (the path's reports saturated). */
    Counter<bit<32>, bit<1>>(1, CounterType_t.PACKETS) suspects;
    /* Shims added (0) and removed (1); entries returned (0) and received
     * (1): two counters, each counted once per packet. */
    Counter<bit<32>, bit<1>>(2, CounterType_t.PACKETS) shims;
    Counter<bit<32>, bit<1>>(2, CounterType_t.PACKETS) returns;

    bit<1>  enabled;
    bit<8>  leaf_id;
    bit<32> interval;
    bit<32> max_age;
    bit<32> now;
    bit<32> limit;      /* now - interval */
    bit<32> age_limit;  /* now - max_age */
    bit<32> path_metric;   /* a tag's: its path's fresh congestion to the destination, ~us */
    bit<32> path_ns;
    bit<1>  returned;   /* a strip whose shim carries an entry */
    bit<32> silence_ns;     /* 0: no silence detection */
    bit<32> silence_limit;  /* now - silence */
    bit<32> hold_ns;        /* suspect_hold */
    bit<32> probe_limit;    /* silence_limit - hold: a period begun before it is probed anew */
    bit<32> period;         /* a tag's unanswered period's start (0: none) */
    bit<32> heard_stamp;    /* a tag's: when its destination leaf was last heard;
                             * a strip's: when its source leaf was heard before it */
    bit<32> heard_limit;    /* heard_stamp - silence / 2 */
    bit<32> pause_limit;    /* now - silence / 2 */
    bit<32> pause_gap;      /* heard_stamp - pause_limit: >= 2^31, a strip ends a pause */
    bit<32> run_start;      /* the current run's start (a strip's: of the run it ends) */
    bit<32> since_after;    /* heard_limit - run_start: < 2^31, the run is long enough */
    bit<32> proof;          /* a tag's: prev_proof */
    bit<32> prev_after;     /* proof - period: < 2^31, the previous run covered the period */
    bit<32> period_age;     /* silence_limit - period: < 2^31 and not 0, the period is older */
    bit<32> heard_after;    /* heard_limit - period: < 2^31, heard long enough after it began */
    bit<32> answer_stamp;   /* a tag's: when its destination leaf last answered here */
    bit<32> answer_after;   /* answer_stamp - period: < 2^31 and not 0, answered after it began */
    bit<32> resent_stamp;   /* a tag's: the path's last resend (a resend's: now) */
    bit<32> resent_after;   /* resent_stamp - period: < 2^31, a resend since it began */
    bit<1>  answer_proof;   /* answered after the period began, and heard or resent since */
    bit<8>  leaf_index;     /* heard's index: a strip's source leaf, a tag's destination */
    bit<1>  silent;
    bit<1>  fabric;
    bit<3>  uplink;
    bit<1>  dest_known;
    bit<8>  dest;
    bit<8>  paths_mask;
    bit<2>  role;
    bit<16> hop;        /* this hop's congestion, ~us */
    bit<8>  ptr;
    bit<3>  pick;       /* the returned path: ptr masked to the destination's paths */
    bit<1>  shimmed;
    bit<1>  ipv4;
    bit<1>  tagged_vlan;
    bit<11> from_index;
    bit<16> cell;       /* from_leaf's cell, to store or fetched */
    bit<11> to_index;
    bit<32> metric32;
    bit<1>  due;
    bit<1>  path_known;
    bit<1>  arrived;        /* a strip: its ingress port is a member (`arrival`) */
    group_t arrival_group;
    member_t arrival_member;
    bit<16> port_cell;      /* from_port's cell, to store or read */
    bit<8>  group_diff;     /* a tag: the recorded group ^ the packet's (0: the same) */
    bit<1>  arrival_alive;  /* a tag: the recorded member's bit in the packet's bitmap */
    bit<1>  dead;           /* a tag returns its path dead */
    bit<1>  dead_in;        /* a strip's returned entry says dead */
    bit<1>  reported_dead;  /* a tag's path has a fresh dead entry */

    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) hop_of;
    Hash<bit<11>>(HashAlgorithm_t.IDENTITY) index_of;
    Hash<bit<11>>(HashAlgorithm_t.IDENTITY) to_index_of;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) cell_of;
    Hash<bit<16>>(HashAlgorithm_t.IDENTITY) downstream_of;

    RegisterAction<bit<16>, bit<11>, bit<16>>(from_leaf) store = {
        void apply(inout bit<16> v) { v = cell; }
    };
    /* a tag returns an entry once per measurement: the fresh bit goes with
     * it (a path that delivers nothing more is not answered again, which is
     * how its source leaf finds it silent) */
    RegisterAction<bit<16>, bit<11>, bit<16>>(from_leaf) fetch = {
        void apply(inout bit<16> v, out bit<16> rv) {
            rv = v;
            v = v & 0xBFFF;
        }
    };
    RegisterAction<bit<8>, bit<8>, bit<8>>(return_ptr) advance = {
        void apply(inout bit<8> v, out bit<8> rv) {
            rv = v;
            v = v + 1;
        }
    };
    /* Due (as feedback.p4's `due`, two sign tests): at least `interval` ns
     * since this (leaf, path)'s last copy; then the entry is stored. */
    RegisterAction<fb_to_leaf_t, bit<11>, bit<1>>(to_leaf) receive = {
        void apply(inout fb_to_leaf_t v, out bit<1> rv) {
            rv = 0;
            if (limit - v.stamp < 32w0x80000000 || now - v.stamp >= 32w0x80000000) {
                v.stamp = now;
                v.metric = metric32;
                rv = 1;
            }
        }
    };
    /* A tag: a new period once the last was answered, or once it began
     * before now - silence - hold (the hold is over: probe again) (0 out);
     * else the unanswered period's start, which the silence test compares
     * with now and with when the destination leaf was last heard.  Two
     * compares, each on one register field (the stateful ALU's rule). */
    RegisterAction<fb_silence_t, bit<11>, bit<32>>(silence) sent_on = {
        void apply(inout fb_silence_t v, out bit<32> rv) {
            rv = 0;
            if (v.unanswered == 0 || v.sent - probe_limit >= 32w0x80000000) {
                v.sent = now;
                v.unanswered = 1;
            } else {
                rv = v.sent;
            }
        }
    };
    RegisterAction<bit<32>, bit<8>, bit<32>>(heard) hear = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = v;
            v = now;
        }
    };
    /* a pause ended: a new run, and the start of the one that ended */
    RegisterAction<bit<32>, bit<8>, bit<32>>(run_since) start_run = {
        void apply(inout bit<32> v, out bit<32> rv) {
            rv = v;
            v = now;
        }
    };
    RegisterAction<bit<32>, bit<8>, bit<32>>(run_since) read_run = {
        void apply(inout bit<32> v, out bit<32> rv) { rv = v; }
    };
    RegisterAction<bit<32>, bit<8>, bit<32>>(prev_proof) keep_proof = {
        void apply(inout bit<32> v) { v = heard_limit; }
    };
    RegisterAction<bit<32>, bit<8>, bit<32>>(prev_proof) no_proof = {
        void apply(inout bit<32> v) { v = 0; }
    };
    RegisterAction<bit<32>, bit<8>, bit<32>>(prev_proof) read_proof = {
        void apply(inout bit<32> v, out bit<32> rv) { rv = v; }
    };
    RegisterAction<bit<32>, bit<8>, bit<32>>(heard) read_heard = {
        void apply(inout bit<32> v, out bit<32> rv) { rv = v; }
    };
    RegisterAction<bit<32>, bit<8>, bit<32>>(answered) mark_answered = {
        void apply(inout bit<32> v) { v = now; }
    };
    RegisterAction<bit<32>, bit<8>, bit<32>>(answered) read_answered = {
        void apply(inout bit<32> v, out bit<32> rv) { rv = v; }
    };
    RegisterAction<bit<32>, bit<11>, bit<32>>(resent) mark_resent = {
        void apply(inout bit<32> v, out bit<32> rv) {
            v = now;
            rv = now;
        }
    };
    RegisterAction<bit<32>, bit<11>, bit<32>>(resent) read_resent = {
        void apply(inout bit<32> v, out bit<32> rv) { rv = v; }
    };
    RegisterAction<bit<16>, bit<11>, bit<16>>(from_port) record_port = {
        void apply(inout bit<16> v) { v = port_cell; }
    };
    RegisterAction<bit<16>, bit<11>, bit<16>>(from_port) read_port = {
        void apply(inout bit<16> v, out bit<16> rv) { rv = v; }
    };
    RegisterAction<fb_silence_t, bit<11>, bit<1>>(silence) answer = {
        void apply(inout fb_silence_t v) {
            v.unanswered = 0;
        }
    };
    /* A tag: the entry's congestion while fresh (stamp >= now - max_age, a
     * sign test); an old one is cleared and reads 0. */
    RegisterAction<fb_to_leaf_t, bit<11>, bit<32>>(to_leaf) read_path = {
        void apply(inout fb_to_leaf_t v, out bit<32> rv) {
            if (v.stamp - age_limit >= 32w0x80000000) {
                v.metric = 0;
            }
            rv = v.metric;
        }
    };

    /* This leaf's id, whether it tags, and the copies' interval: one keyless
     * row (disabled, as on a spine, unless the controller names the leaf). */
    action set_params(bit<1> on, bit<8> leaf, bit<32> interval_ns, bit<32> max_age_ns,
                      bit<32> suspect_silence_ns, bit<32> suspect_hold_ns) {
        enabled = on;
        leaf_id = leaf;
        interval = interval_ns;
        max_age = max_age_ns;
        silence_ns = suspect_silence_ns;
        hold_ns = suspect_hold_ns;
    }
    table params {
        actions = { set_params; }
        default_action = set_params(TNA_FEEDBACK_ENABLED, 0, TNA_FEEDBACK_RETURN_INTERVAL_NS,
                                    TNA_FEEDBACK_MAX_AGE_NS, TNA_SUSPECT_SILENCE_NS,
                                    TNA_SUSPECT_HOLD_NS);
        size = 1;
    }
    /* Ports that face a switch, with their uplink index (the shim's path);
     * any other port is a host port, where the shim is removed.
     * Size: PORT_SLOTS. */
    action fabric_port(bit<3> index) { fabric = 1; uplink = index; }
    action host_port() { fabric = 0; uplink = 0; }
    table port_kind {
        key = { eg_intr_md.egress_port: exact; }
        actions = { fabric_port; host_port; }
        default_action = host_port();
        size = PORT_SLOTS;
    }
    /* Which other leaf a destination lives behind, and the mask of its
     * uplink indexes (the round robin over the entries returned to it: the
     * next power of two above its uplinks, minus one).  The leaf's own
     * subnet has no row.  Size: DEST_LEAF_SIZE. */
    action set_dest_leaf(bit<8> leaf, bit<8> mask) {
        dest_known = 1;
        dest = leaf;
        paths_mask = mask;
    }
    action no_dest() { dest_known = 0; dest = 0; paths_mask = 0; }
    table dest_leaf {
        key = { hdr.ipv4.dst_addr: lpm; }
        actions = { set_dest_leaf; no_dest; }
        default_action = no_dest();
        size = DEST_LEAF_SIZE;
    }
    /* A returned entry's path (this leaf's uplink index) -> that uplink's
     * port, which path_choice.port_member maps to (group, member).
     * Size: 8 uplink indexes. */
    action path_uplink(PortId_t port) { meta.report_port = port; path_known = 1; }
    action no_uplink() { path_known = 0; }
    table uplink_port {
        key = { hdr.fb.fb_path: exact; }
        actions = { path_uplink; no_uplink; }
        default_action = no_uplink();
        size = 8;
    }
    /* A strip's ingress port -> its (group, member), as failover.port_member
     * (the controller writes both from one list).  Size: PORT_SLOTS. */
    action arrived_on(group_t group, member_t member) {
        arrived = 1;
        arrival_group = group;
        arrival_member = member;
    }
    action not_arrived() { arrived = 0; arrival_group = 0; arrival_member = 0; }
    table arrival {
        key = { hdr.bridged.ingress_port: exact; }
        actions = { arrived_on; not_arrived; }
        default_action = not_arrived();
        size = PORT_SLOTS;
    }
    /* from_port's two accesses in one table.  Size: 2 const rows. */
    action do_record_port() { record_port.execute(from_index); }
    action do_read_port() { port_cell = read_port.execute(from_index); }
    table from_port_at {
        key = { role: exact; }
        actions = { do_record_port; do_read_port; NoAction; }
        const default_action = NoAction();
        const entries = {
            FB_ROLE_STRIP: do_record_port();
            FB_ROLE_TAG: do_read_port();
        }
        size = 2;
    }
    action take_group_diff() { group_diff = port_cell[7:0] ^ hdr.bridged.group; }
    table group_test { actions = { take_group_diff; } const default_action = take_group_diff(); size = 1; }
    /* the recorded member's liveness bit (failover.p4's const table) */
    MEMBER_UP_TABLE(arrival_up, hdr.bridged.alive, port_cell[10:8], arrival_alive)
    /* The role, one const table on the flags (Tofino-1: a gate per table).
     * Size: 4 const rows. */
    action take_role(bit<2> r) { role = r; }
    table roles {
        key = {
            shimmed: ternary; fabric: ternary; enabled: ternary; dest_known: ternary;
            ipv4: ternary; tagged_vlan: ternary;
        }
        actions = { take_role; }
        const default_action = take_role(FB_ROLE_NONE);
        const entries = {
            (1, 1, _, _, _, _): take_role(FB_ROLE_RAISE);
            (1, 0, _, _, _, _): take_role(FB_ROLE_STRIP);
            (0, 1, 1, 1, 1, 0): take_role(FB_ROLE_TAG);
        }
        size = 4;
    }
    /* from_leaf's two accesses in one table (one place per register).
     * Size: 2 const rows. */
    action do_store() { store.execute(from_index); }
    action do_fetch() { cell = fetch.execute(from_index); }
    table from_access {
        key = { role: exact; }
        actions = { do_store; do_fetch; NoAction; }
        const default_action = NoAction();
        const entries = {
            FB_ROLE_STRIP: do_store();
            FB_ROLE_TAG: do_fetch();
        }
        size = 2;
    }

    action tag() {
        hdr.fb.setValid();
        hdr.fb.next_type = hdr.ethernet.ether_type;
        hdr.ethernet.ether_type = ETHERTYPE_STELLAR_FB;
        hdr.fb.src_leaf = leaf_id;
        hdr.fb.path = uplink;
        hdr.fb.path_count = 0;
        hdr.fb.fb_valid = 0;
        hdr.fb.reserved = 0;
        hdr.fb.congestion = hop;
        hdr.fb.fb_path = 0;
        hdr.fb.fb_metric = 0;
    }
    /* to_leaf's two accesses in one table.  Size: 2 const rows. */
    action do_receive() { due = receive.execute(to_index); }
    action do_read() { path_metric = read_path.execute(to_index); }
    table to_access {
        key = { role: exact; returned: exact; }
        actions = { do_receive; do_read; NoAction; }
        const default_action = NoAction();
        const entries = {
            (FB_ROLE_STRIP, 1): do_receive();
            (FB_ROLE_TAG, 0): do_read();
        }
        size = 2;
    }
    /* the silence register's two accesses in one table.  Size: 2 const rows. */
    action do_answer() { answer.execute(to_index); }
    action do_sent_on() { period = sent_on.execute(to_index); }
    table silence_at {
        key = { role: exact; returned: exact; dead_in: exact; }
        actions = { do_answer; do_sent_on; NoAction; }
        const default_action = NoAction();
        const entries = {
            (FB_ROLE_STRIP, 1, 0): do_answer();     /* (a dead entry answers nothing) */
            (FB_ROLE_TAG, 0, 0): do_sent_on();
        }
        size = 2;
    }
    /* the heard register's two accesses in one table.  Size: 2 const rows. */
    action do_hear() { heard_stamp = hear.execute(leaf_index); }
    action do_read_heard() { heard_stamp = read_heard.execute(leaf_index); }
    table heard_at {
        key = { role: exact; }
        actions = { do_hear; do_read_heard; NoAction; }
        const default_action = NoAction();
        const entries = {
            FB_ROLE_STRIP: do_hear();
            FB_ROLE_TAG: do_read_heard();
        }
        size = 2;
    }
    /* the answered register: a strip carrying an entry writes, a tag reads.
     * Size: 2 const rows. */
    action do_mark_answered() { mark_answered.execute(leaf_index); }
    action do_read_answered() { answer_stamp = read_answered.execute(leaf_index); }
    table answered_at {
        key = { role: exact; returned: exact; }
        actions = { do_mark_answered; do_read_answered; NoAction; }
        const default_action = NoAction();
        const entries = {
            (FB_ROLE_STRIP, 1): do_mark_answered();
            (FB_ROLE_TAG, 0): do_read_answered();
        }
        size = 2;
    }
    /* the resent register: a resend's tag writes, another tag reads.
     * Size: 2 const rows. */
    action do_mark_resent() { resent_stamp = mark_resent.execute(to_index); }
    action do_read_resent() { resent_stamp = read_resent.execute(to_index); }
    table resent_at {
        key = { role: exact; meta.regressed: exact; }
        actions = { do_mark_resent; do_read_resent; NoAction; }
        const default_action = NoAction();
        const entries = {
            (FB_ROLE_TAG, 1): do_mark_resent();
            (FB_ROLE_TAG, 0): do_read_resent();
        }
        size = 2;
    }
    /* the run registers: a strip that ends a pause (pause_gap's sign) writes,
     * a tag reads.  Size: 3 const rows each. */
    action do_start_run() { run_start = start_run.execute(leaf_index); }
    action do_read_run() { run_start = read_run.execute(leaf_index); }
    table run_at {
        key = { role: exact; pause_gap[31:31]: ternary; }
        actions = { do_start_run; do_read_run; NoAction; }
        const default_action = NoAction();
        const entries = {
            (FB_ROLE_STRIP, 1w1 &&& 1w1): do_start_run();
            (FB_ROLE_TAG, 1w0 &&& 1w0): do_read_run();
        }
        size = 2;
    }
    /* the run that ended is kept as a proof if it lasted half the silence */
    action do_keep_proof() { keep_proof.execute(leaf_index); }
    action do_no_proof() { no_proof.execute(leaf_index); }
    action do_read_proof() { proof = read_proof.execute(leaf_index); }
    table proof_at {
        key = { role: exact; pause_gap[31:31]: ternary; since_after[31:31]: ternary; }
        actions = { do_keep_proof; do_no_proof; do_read_proof; NoAction; }
        const default_action = NoAction();
        const entries = {
            (FB_ROLE_STRIP, 1w1 &&& 1w1, 1w0 &&& 1w1): do_keep_proof();
            (FB_ROLE_STRIP, 1w1 &&& 1w1, 1w1 &&& 1w1): do_no_proof();
            (FB_ROLE_TAG, 1w0 &&& 1w0, 1w0 &&& 1w0): do_read_proof();
        }
        size = 3;
    }
    action take_limit() {
        limit = now - interval;
        age_limit = now - max_age;
        silence_limit = now - silence_ns;
        pause_limit = now - (silence_ns >> 1);
    }
    table report_limit { actions = { take_limit; } const default_action = take_limit(); size = 1; }
    /* A resend probes nothing: it keeps the unanswered period however old
     * (a limit 2^31 - 1 ns back), so that a retransmission timeout longer
     * than silence + hold still finds the period it proves silent (the
     * resend clause); the next tag that is not a resend starts the new
     * period.  Size: 1 const row. */
    action take_probe_limit() { probe_limit = silence_limit - hold_ns; }
    action keep_period() { probe_limit = now - 32w0x7FFFFFFF; }
    table probe_limit_of {
        key = { meta.regressed: exact; }
        actions = { take_probe_limit; keep_period; }
        const default_action = take_probe_limit();
        const entries = {
            1: keep_period();
        }
        size = 1;
    }
    action take_heard_limit() {
        heard_limit = heard_stamp - (silence_ns >> 1);
        pause_gap = heard_stamp - pause_limit;
    }
    table heard_limit_of { actions = { take_heard_limit; } const default_action = take_heard_limit(); size = 1; }
    action take_period_tests() {
        period_age = silence_limit - period;
        heard_after = heard_limit - period;
        prev_after = proof - period;
        answer_after = answer_stamp - period;
        resent_after = resent_stamp - period;
    }
    table period_tests { actions = { take_period_tests; } const default_action = take_period_tests(); size = 1; }
    action take_run_test() { since_after = heard_limit - run_start; }
    table run_test { actions = { take_run_test; } const default_action = take_run_test(); size = 1; }
    action take_metric() { metric32 = (bit<32>) hdr.fb.fb_metric; }
    table received_metric { actions = { take_metric; } const default_action = take_metric(); size = 1; }
    /* the copy for ingress: the remote path's congestion as a delay, ns */
    action report() {
        meta.report_delay_ns = metric32 << 10;
        meta.report_remote = 1;
        meta.report_silent = dead_in;    /* a dead uplink: failover.silent */
        eg_dprsr_md.mirror_type = MIRROR_TYPE_FEEDBACK;
        meta.mirror_session = MIRROR_SESSION_FEEDBACK;
        meta.mirror_pkt_type = PKT_FEEDBACK;
    }
    table remote_report { actions = { report; } const default_action = report(); size = 1; }

    apply {
        now = eg_prsr_md.global_tstamp[31:0];
        params.apply();
        port_kind.apply();
        if (hdr.ipv4.isValid()) {
            dest_leaf.apply();
        }
        report_limit.apply();
        probe_limit_of.apply();
        if (hdr.fb.isValid()) { shimmed = 1; } else { shimmed = 0; }
        if (hdr.ipv4.isValid()) { ipv4 = 1; } else { ipv4 = 0; }
        if (hdr.vlan.isValid()) { tagged_vlan = 1; } else { tagged_vlan = 0; }
        due = 0;
        meta.fb_tag = 0;
        path_metric = 0;
        silent = 0;
        period = 0;
        heard_stamp = 0;
        run_start = 0;
        proof = 0;
        answer_stamp = 0;
        resent_stamp = 0;
        answer_proof = 0;
        dead = 0;
        dead_in = 0;
        reported_dead = 0;
        port_cell = 0;
        /* this hop: the queue delay in ~us, saturated at 16 bits */
        if (meta.qdelay_ns[31:26] != 0) {
            hop = 0xFFFF;
        } else {
            hop = hop_of.get({meta.qdelay_ns[25:10]});
        }
        roles.apply();
        if (role == FB_ROLE_RAISE) {
            if (hop > hdr.fb.congestion) {
                hdr.fb.congestion = hop;
            }
        }
        /* from_leaf's index and the cell to store: a strip's (source leaf,
         * path) and its congestion clamped to 13 bits with the valid bit; a
         * tag's (destination leaf, the round robin's path) */
        if (role == FB_ROLE_STRIP) {
            from_index = index_of.get({hdr.fb.src_leaf, hdr.fb.path});
            if (hdr.fb.congestion[15:13] != 0 || hdr.fb.congestion[12:0] == 13w0x1FFF) {
                cell = 0xDFFE;   /* valid, fresh, FB_METRIC_MAX (FB_METRIC_DEAD says dead) */
            } else {
                cell = cell_of.get({3w0b110, hdr.fb.congestion[12:0]});
            }
        }
        if (role == FB_ROLE_TAG) {
            ptr = advance.execute(dest);
        }
        pick = ptr[2:0] & paths_mask[2:0];
        if (role == FB_ROLE_TAG) {
            from_index = index_of.get({dest, pick});
        }
        from_access.apply();
        /* from_port: a strip records the member its shim came in on; a tag
         * reads the record of the path it returns */
        if (role == FB_ROLE_STRIP) {
            arrival.apply();
            port_cell = cell_of.get({arrived, 4w0, arrival_member, arrival_group});
        }
        from_port_at.apply();
        group_test.apply();
        arrival_up.apply();
        if (role == FB_ROLE_TAG && port_cell[15:15] == 1 && group_diff == 0 && arrival_alive == 0) {
            dead = 1;
        }
        if (role == FB_ROLE_TAG) {
            tag();
            shims.count(0);
            meta.fb_tag = 1;
        }
        if (dead == 1) {
            hdr.fb.fb_valid = 1;
            hdr.fb.fb_path = pick;
            hdr.fb.fb_metric = FB_METRIC_DEAD[12:0];
            returns.count(0);
            dead_reports.count(0);
        } else if (role == FB_ROLE_TAG && cell[14:14] == 1) {
            hdr.fb.fb_valid = 1;
            hdr.fb.fb_path = pick;
            hdr.fb.fb_metric = cell[12:0];
            returns.count(0);
        }
        /* to_leaf: a strip stores the returned entry (the congestion-to-leaf
         * table) and, at most once per interval per (leaf, path), sends it to
         * path choice; a tag reads its own path's entry */
        if (shimmed == 1 && hdr.fb.fb_valid == 1) {
            returned = 1;
        } else {
            returned = 0;
        }
        if (role == FB_ROLE_STRIP) {
            to_index = to_index_of.get({hdr.fb.src_leaf, hdr.fb.fb_path});
        } else {
            to_index = to_index_of.get({dest, uplink});
        }
        meta.fb_index = to_index;
        if (returned == 1) {
            received_metric.apply();
        }
        if (returned == 1 && hdr.fb.fb_metric == FB_METRIC_DEAD[12:0] && silence_ns != 0) {
            dead_in = 1;
        }
        to_access.apply();
        /* a fresh dead entry: the path is silent (its congestion is not) */
        if (role == FB_ROLE_TAG && path_metric == FB_METRIC_DEAD) {
            reported_dead = 1;
            path_metric = 0;
        }
        if (role == FB_ROLE_STRIP) {
            leaf_index = hdr.fb.src_leaf;
        } else {
            leaf_index = dest;
        }
        heard_at.apply();
        if (silence_ns != 0) {
            silence_at.apply();
        }
        if (silence_ns != 0) {
            answered_at.apply();
        }
        if (silence_ns != 0) {
            resent_at.apply();
        }
        /* silent: an unanswered period older than the silence, and a run of
         * the destination leaf's shims covered half the silence after it
         * began: the current run (heard that long after both the period's
         * and the run's start) or the one before it (its proof time at or
         * after the period's start).  A strip that ends a pause starts a new
         * run and keeps the one that ended as the proof. */
        heard_limit_of.apply();
        if (silence_ns != 0) {
            run_at.apply();
        }
        run_test.apply();
        if (silence_ns != 0) {
            proof_at.apply();
        }
        period_tests.apply();
        /* ... or an answer for another path after the period began, with
         * half the silence of sending or a resend on the path since */
        if (answer_stamp != 0 && answer_after != 0 && answer_after[31:31] == 0 &&
            (heard_after[31:31] == 0 || (resent_stamp != 0 && resent_after[31:31] == 0))) {
            answer_proof = 1;
        }
        if (period != 0 && period_age != 0 && period_age[31:31] == 0 &&
            ((heard_stamp != 0 && heard_after[31:31] == 0 && since_after[31:31] == 0) ||
             (proof != 0 && prev_after[31:31] == 0) || answer_proof == 1)) {
            silent = 1;
        }
        if (reported_dead == 1 && silence_ns != 0) {
            silent = 1;
        }
        if (role == FB_ROLE_STRIP && returned == 1) {
            uplink_port.apply();
            returns.count(1);
        }
        /* a tag's own feedback copy (feedback.p4, due): the larger of this
         * queue's delay and the path's fresh congestion; a silent path's
         * is saturated (path_choice: 2^19 ns and above), so it loses "best"
         * at the next report of another member, its flows leave it at their
         * next drain point and new flows take the penalty of a non-best
         * member, while traffic on it to that leaf stays unanswered */
        path_ns = path_metric << 10;
        if (silent == 1) {
            path_ns = 32w0x80000;
            suspects.count(0);
        }
        if (role == FB_ROLE_TAG && eg_dprsr_md.mirror_type == MIRROR_TYPE_FEEDBACK &&
            path_ns > meta.report_delay_ns) {
            meta.report_delay_ns = path_ns;
        }
        /* ... and says why, so that the hash choice skips the member until
         * the path answers again (failover.p4: `silent`) */
        if (role == FB_ROLE_TAG && eg_dprsr_md.mirror_type == MIRROR_TYPE_FEEDBACK && silent == 1) {
            meta.report_silent = 1;
        }
        /* ... and the drain margin's part (flowlet.p4): twice the path's
         * fresh congestion, ~us << 5 = 64 ns units x 2, capped at 0x3FFF
         * (1 ms: the drain test's 16-bit differences stay signed), not the
         * saturated value of a suspect path (its flows must still leave at
         * their drain point) */
        if (role == FB_ROLE_TAG && eg_dprsr_md.mirror_type == MIRROR_TYPE_FEEDBACK) {
            if (path_metric[31:9] != 0) {
                meta.report_downstream_x2 = 0x3FFF;
            } else {
                meta.report_downstream_x2 = downstream_of.get({path_metric[8:0]}) << 5;
            }
        }
        if (role == FB_ROLE_STRIP && returned == 1 && due == 1 && path_known == 1) {
            remote_report.apply();
        }
        if (role == FB_ROLE_STRIP) {
            hdr.ethernet.ether_type = hdr.fb.next_type;
            hdr.fb.setInvalid();
            shims.count(1);
        }
    }
}

#endif  /* _STELLAR_TNA_CONTROL_PATH_FEEDBACK_P4_ */
