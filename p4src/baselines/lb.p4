/*
 * lb.p4 -- the baseline load balancers of the fabric study (fabric_sim/eval.py),
 * for v1model (p4c-bm2-ss --arch v1model -I p4src p4src/baselines/lb.p4).
 *
 * Stellar's own program (p4src/v1model/stellar.p4) chooses paths by
 * congestion; the baselines it is compared with choose them the way deployed
 * fabrics and the load-balancing literature do, and stellar.p4's tables cannot
 * express them (no hash salt, no weighted members, no random choice at a
 * flowlet gap, no per-packet spraying).  One small program holds them all, so
 * that everything except the choice of member is the same for every baseline:
 * the parser, the routing tables, the ECN marking and the queues.
 *
 * Per group (a destination's set of next hops), `group.set_group` selects
 *   MODE_ECMP    hash of the 5-tuple mixed with a per-run salt, modulo the slots;
 *                WCMP is the same mode with members repeated in proportion to
 *                their capacity (the `member` table's slots);
 *   MODE_FLOWLET LetFlow (Vanini et al., NSDI'17): a flow keeps its member
 *                until it has been idle for `timeout_us`, then takes a member
 *                uniformly at random;
 *   MODE_SPRAY   a member uniformly at random for every packet;
 *   MODE_DRILL   DRILL (Ghorbani et al., SIGCOMM'17), per packet: the member with
 *                the shortest local queue among d = 2 random members and the
 *                m = 1 best of the group's previous packet (power of two choices);
 *   MODE_LEAST   least loaded at start: a flow's first packet takes the member
 *                whose port carries the least recent load (its DRE, below) and
 *                the flow stays there (no later moves);
 *   MODE_CONGA   CONGA (Alizadeh et al., SIGCOMM'14): at each flowlet (idle gap
 *                > timeout_us) the member with the least congested path to the
 *                destination leaf, max(local DRE, the path's metric fed back by
 *                that leaf), from leaf-to-leaf feedback in a shim header (below).
 * DRILL, LEAST and CONGA take their (at most 8) distinct members from the
 * group entry itself (p0..p7), with each member's rate scale s0..s7, so that
 * one packet can compare them: `set_group` carries up to 4 (the lab and pod
 * fabrics' leaves), `set_group8` up to 8 (the 8-spine conweave and cluster512
 * fabrics); a group of 4 or fewer reads no state for members 4..7.
 *
 * Load and capacity (the same for every scheme): a DRE per port, bytes
 * assigned to the port at ingress (so flows starting together see each other),
 * halved every 2^dre_shift us; its metric is DRE x the member's scale (65536 x
 * 100G / the port's real rate, written by the control plane from the rate it
 * learned), so a port degraded to 40% looks 2.5x as loaded.  The local queue
 * of a port (DRILL) is packets taken in at ingress minus packets seen leaving at
 * egress (top-level registers, shared by both blocks, as stellar.p4 does).
 *
 * CONGA feedback: the source leaf pushes a `conga_h` shim between Ethernet and
 * IPv4 (ethertype 0x88B5, IEEE local experimental) on packets to a remote leaf:
 * its leaf id, the path (member index) and the congestion field CE, set to
 * its own uplink's metric; each switch on the way raises CE to its egress
 * port's metric; the destination leaf stores CE per (source leaf, path) and
 * strips the shim before the host.  Every shim also carries one feedback
 * value, round robin over the paths, from the sender leaf's table for the
 * destination leaf (fb_path, fb_metric); the destination leaf stores it as the
 * congestion of its own path fb_path towards the sender.  RoCE's ACKs and CNPs
 * make the reverse traffic that carries it.
 *
 * Every mode puts ACKs, NAKs and CNPs (BTH opcode) in the highest-priority
 * queue, as production RoCE fabrics (and Stellar's control class) do.
 *
 * A dead next hop is removed by rewriting the group's slots (what ECMP
 * hardware's local link-down handling does); the program keeps no liveness
 * state of its own.
 *
 * Egress marks ECT packets CE with the RED ramp DCQCN deployments use
 * (Kmin/Kmax in packets of the egress queue, probability up to Pmax), and,
 * when `lb_config` enables it, ingress separates elephants from mice: a flow
 * that has sent more than `em_threshold` bytes since it was last idle for
 * `em_window_us` goes to the lower priority queue and stays there until it is
 * idle again (so one flow's packets never sit in two queues at once: no
 * reordering), as "ECMP + elephant/mouse queues" needs.
 *
 * Shares p4src/include/{define,size,header}.p4 with stellar.p4.
 */
#include <core.p4>
#include <v1model.p4>

#include "../include/define.p4"
#include "../include/size.p4"
#include "../include/header.p4"

const bit<8> MODE_ECMP    = 0;
const bit<8> MODE_FLOWLET = 1;
const bit<8> MODE_SPRAY   = 2;
const bit<8> MODE_DRILL   = 3;
const bit<8> MODE_LEAST   = 4;
const bit<8> MODE_CONGA   = 5;

const bit<16> ETHERTYPE_CONGA = 0x88B5;
const bit<8>  BTH_OP_ACK = 0x11;
const bit<8>  CONGA_PATHS = 16;     /* feedback cells per leaf */
const bit<8>  DRE_UNIT_SHIFT = 13;  /* metric unit: 8 KB at 100G */

#define LB_GROUPS 1024
#define LB_MEMBER_SLOTS 16384   /* groups x up to 16 slots each */
#define LB_FLOW_SLOTS 8192      /* flowlet and elephant state, hashed per flow */
#define LB_PORTS 512            /* v1model ports */
#define LB_LEAVES 256           /* leaf ids */

header conga_h {
    bit<8>  src_leaf;
    bit<8>  path;        /* member index at the source leaf */
    bit<8>  ce;          /* max metric along the path so far */
    bit<8>  fb_path;     /* feedback: a path of the receiver's towards the sender */
    bit<8>  fb_metric;   /* ... and its congestion as the sender last measured it */
    bit<8>  reserved;
    bit<16> ether_type;  /* what follows (IPv4) */
}

struct lb_headers_t {
    ethernet_h ethernet;
    conga_h    conga;
    ipv4_h     ipv4;
    udp_h      udp;
    bth_h      bth;
}

/* Load and queue per port, shared by ingress (writes load, counts packets
 * in) and egress (counts packets out). */
register<bit<32>>(LB_PORTS) dre_bytes;
register<bit<32>>(LB_PORTS) dre_stamp_us;
register<bit<32>>(LB_PORTS) queue_in;
register<bit<32>>(LB_PORTS) queue_out;

const bit<3> QUEUE_CONTROL  = 7;  /* ACK, NAK, CNP: before everything */
const bit<3> QUEUE_MOUSE    = 1;  /* served before elephants (strict priority) */
const bit<3> QUEUE_ELEPHANT = 0;

struct lb_metadata_t {
    bit<16> group;
    bit<8>  mode;
    bit<8>  count;          /* member slots of the group */
    bit<32> salt;
    bit<32> timeout_us;
    bit<8>  slot;
    bit<32> flow_idx;       /* index into the per-flow registers */
    bit<16> l4_sport;
    bit<16> l4_dport;
    bit<32> kmin;           /* ECN ramp, packets */
    bit<32> kmax;
    bit<32> pmax256;        /* marking probability at kmax, in 1/256 */
    bit<32> em_threshold;   /* bytes per window; 0 = one queue for all */
    bit<32> em_window_us;
    bit<8>  dre_shift;      /* DRE half-life = 2^dre_shift us */
    bit<8>  leaf_id;        /* this switch's leaf id (0: a spine) */
    bit<8>  dst_leaf;       /* the group's destination leaf */
    bit<32> now;
    /* The adaptive members 0..7: */
    bit<32> p0; bit<32> p1; bit<32> p2; bit<32> p3;        /* ports */
    bit<32> p4; bit<32> p5; bit<32> p6; bit<32> p7;
    bit<32> s0; bit<32> s1; bit<32> s2; bit<32> s3;        /* rate scales */
    bit<32> s4; bit<32> s5; bit<32> s6; bit<32> s7;
    bit<32> l0; bit<32> l1; bit<32> l2; bit<32> l3;        /* load metrics */
    bit<32> l4; bit<32> l5; bit<32> l6; bit<32> l7;
    bit<32> q0; bit<32> q1; bit<32> q2; bit<32> q3;        /* queues (packets) */
    bit<32> q4; bit<32> q5; bit<32> q6; bit<32> q7;
    bit<32> c0; bit<32> c1; bit<32> c2; bit<32> c3;        /* CONGA path scores */
    bit<32> c4; bit<32> c5; bit<32> c6; bit<32> c7;
}

/* One of eight values by index (member index -> its port, queue, load or
 * score); an index past 7 gives v7. */
bit<32> pick8(in bit<8> i, in bit<32> v0, in bit<32> v1, in bit<32> v2, in bit<32> v3,
              in bit<32> v4, in bit<32> v5, in bit<32> v6, in bit<32> v7) {
    return i < 4 ? (i == 0 ? v0 : (i == 1 ? v1 : (i == 2 ? v2 : v3)))
                 : (i == 4 ? v4 : (i == 5 ? v5 : (i == 6 ? v6 : v7)));
}

/* The index of the lowest of the first `count` values; `first` wins ties
 * (the flow's hash member, so equal loads leave it where ECMP would put it),
 * then the lowest index. */
bit<8> argmin8(in bit<8> first, in bit<8> count,
               in bit<32> v0, in bit<32> v1, in bit<32> v2, in bit<32> v3,
               in bit<32> v4, in bit<32> v5, in bit<32> v6, in bit<32> v7) {
    bit<8> at = first;
    bit<32> best = pick8(first, v0, v1, v2, v3, v4, v5, v6, v7);
    if (count > 0 && v0 < best) { at = 0; best = v0; }
    if (count > 1 && v1 < best) { at = 1; best = v1; }
    if (count > 2 && v2 < best) { at = 2; best = v2; }
    if (count > 3 && v3 < best) { at = 3; best = v3; }
    if (count > 4 && v4 < best) { at = 4; best = v4; }
    if (count > 5 && v5 < best) { at = 5; best = v5; }
    if (count > 6 && v6 < best) { at = 6; best = v6; }
    if (count > 7 && v7 < best) { at = 7; }
    return at;
}

/* The metric of a DRE holding `bytes`, `periods` half-lives ago, at a port
 * with rate scale `scale`: 8 KB units at 100G, saturated to 8 bits (CONGA's
 * field).  Expressions only, so it can be used inside an action. */
bit<32> metric_of(in bit<32> bytes, in bit<32> periods, in bit<32> scale) {
    bit<32> m = (((bytes >> (bit<8>)(periods > 31 ? 32w31 : periods)) >> DRE_UNIT_SHIFT) * scale) >> 16;
    return m > 255 ? 32w255 : m;
}

parser LbParser(packet_in pkt, out lb_headers_t hdr, inout lb_metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_CONGA: parse_conga;
            default: accept;
        }
    }
    state parse_conga {
        pkt.extract(hdr.conga);
        transition select(hdr.conga.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        /* Options are not parsed: such packets are dropped in ingress (counted). */
        transition select(hdr.ipv4.ihl, hdr.ipv4.protocol) {
            (5, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            UDP_PORT_ROCEV2: parse_bth;
            default: accept;
        }
    }
    state parse_bth {
        pkt.extract(hdr.bth);
        transition accept;
    }
}

control LbVerifyChecksum(inout lb_headers_t hdr, inout lb_metadata_t meta) {
    apply { }
}

control LbIngress(inout lb_headers_t hdr, inout lb_metadata_t meta,
                  inout standard_metadata_t sm) {
    /* Packets dropped by reason: 0 no route, 1 not IPv4 / IP options,
     * 2 TTL expired, 3 empty group. */
    counter(4, CounterType.packets) drops;
    /* Member changes at flowlet gaps (LetFlow, CONGA), for the report. */
    counter(1, CounterType.packets) flowlet_moves;
    /* LetFlow / CONGA / least-loaded state per hashed flow: time of its last
     * packet (us, plus 1: 0 = never seen) and its member slot; LB_FLOW_SLOTS cells (two flows may share
     * one, as on a switch ASIC; then they move together). */
    register<bit<32>>(LB_FLOW_SLOTS) flowlet_last_us;
    register<bit<8>>(LB_FLOW_SLOTS) flowlet_slot;
    /* Elephant/mouse state per hashed flow: bytes since the flow was last idle
     * for em_window_us, the time of its last packet (us) and whether it is an
     * elephant now; LB_FLOW_SLOTS cells. */
    register<bit<32>>(LB_FLOW_SLOTS) em_bytes;
    register<bit<32>>(LB_FLOW_SLOTS) em_last_us;
    register<bit<1>>(LB_FLOW_SLOTS) em_elephant;
    /* DRILL's memory (m = 1): the member index chosen last, per group. */
    register<bit<8>>(LB_GROUPS) drill_best;
    /* CONGA: congestion from each source leaf per path (filled as packets
     * arrive), congestion to each destination leaf per own path (filled by
     * feedback), and the next path to feed back per destination leaf; 16
     * path cells per leaf id (CONGA_PATHS; members 0..7 use the first 8). */
    register<bit<8>>(LB_LEAVES * 16) conga_from_leaf;
    register<bit<8>>(LB_LEAVES * 16) conga_to_leaf;
    register<bit<8>>(LB_LEAVES) conga_fb_next;

    action configure(bit<32> kmin, bit<32> kmax, bit<32> pmax256,
                     bit<32> em_threshold, bit<32> em_window_us,
                     bit<8> dre_shift, bit<8> leaf_id) {
        meta.kmin = kmin;
        meta.kmax = kmax;
        meta.pmax256 = pmax256;
        meta.em_threshold = em_threshold;
        meta.em_window_us = em_window_us;
        meta.dre_shift = dre_shift;
        meta.leaf_id = leaf_id;
    }
    /* The switch's ECN ramp (used by egress: v1model carries user metadata
     * through the traffic manager), elephant threshold, DRE half-life and leaf
     * id.  Keyless: its default action is set per switch by the eval harness.
     * The defaults are DCQCN's common deployment values for 4 KB packets: Kmin
     * 100 KB = 25, Kmax 400 KB = 100 packets, Pmax 0.2 = 51/256. */
    table lb_config {
        key = { }
        actions = { configure; }
        default_action = configure(25, 100, 51, 0, 1000, 7, 0);
        size = 1;
    }

    action drop(bit<32> reason) {
        drops.count(reason);
        mark_to_drop(sm);
    }
    action to_port(port_t port) {
        sm.egress_spec = port;
        meta.group = 0;
    }
    action to_group(bit<16> group) {
        meta.group = group;
    }
    /* Destination prefix -> a directly attached port or a group of next hops.
     * One entry per host on its leaf, one per remote leaf subnet. */
    table route {
        key = { hdr.ipv4.dst_addr: lpm; }
        actions = { to_port; to_group; drop; }
        default_action = drop(0);
        size = ROUTING_LPM_SIZE;
    }

    action set_group(bit<8> mode, bit<8> count, bit<32> salt, bit<32> timeout_us,
                     bit<8> dst_leaf, bit<32> p0, bit<32> p1, bit<32> p2, bit<32> p3,
                     bit<32> s0, bit<32> s1, bit<32> s2, bit<32> s3) {
        meta.mode = mode;
        meta.count = count;
        meta.salt = salt;
        meta.timeout_us = timeout_us;
        meta.dst_leaf = dst_leaf;
        meta.p0 = p0; meta.p1 = p1; meta.p2 = p2; meta.p3 = p3;
        meta.s0 = s0; meta.s1 = s1; meta.s2 = s2; meta.s3 = s3;
    }
    /* set_group for an adaptive group of 5 to 8 members (members 4..7 too). */
    action set_group8(bit<8> mode, bit<8> count, bit<32> salt, bit<32> timeout_us,
                      bit<8> dst_leaf, bit<32> p0, bit<32> p1, bit<32> p2, bit<32> p3,
                      bit<32> p4, bit<32> p5, bit<32> p6, bit<32> p7,
                      bit<32> s0, bit<32> s1, bit<32> s2, bit<32> s3,
                      bit<32> s4, bit<32> s5, bit<32> s6, bit<32> s7) {
        set_group(mode, count, salt, timeout_us, dst_leaf, p0, p1, p2, p3, s0, s1, s2, s3);
        meta.p4 = p4; meta.p5 = p5; meta.p6 = p6; meta.p7 = p7;
        meta.s4 = s4; meta.s5 = s5; meta.s6 = s6; meta.s7 = s7;
    }
    /* Group -> how a member is chosen, how many member slots it has, its
     * destination leaf and (adaptive modes) its distinct members with their
     * rate scales (set_group: up to 4, set_group8: up to 8).  One entry per
     * group, LB_GROUPS (one per destination leaf on a leaf); rewritten when a
     * next hop dies or a rate is learned. */
    table group {
        key = { meta.group: exact; }
        actions = { set_group; set_group8; drop; }
        default_action = drop(3);
        size = LB_GROUPS;
    }

    action set_member(port_t port) {
        sm.egress_spec = port;
    }
    /* (group, slot) -> egress port.  ECMP: one slot per live next hop; WCMP:
     * slots in proportion to each next hop's path capacity (up to 16). */
    table member {
        key = { meta.group: exact; meta.slot: exact; }
        actions = { set_member; drop; }
        default_action = drop(3);
        size = LB_MEMBER_SLOTS;
    }

    /* Load, queue and CONGA score of one adaptive member (port, scale, index). */
    action member_state(in bit<32> port, in bit<32> scale, in bit<8> i,
                        out bit<32> load, out bit<32> queue, out bit<32> score) {
        bit<32> bytes;
        bit<32> stamp;
        bit<32> qin;
        bit<32> qout;
        bit<8> remote;
        dre_bytes.read(bytes, port);
        dre_stamp_us.read(stamp, port);
        queue_in.read(qin, port);
        queue_out.read(qout, port);
        conga_to_leaf.read(remote, (bit<32>)meta.dst_leaf * 16 + (bit<32>)i);
        load = metric_of(bytes, (meta.now - stamp) >> meta.dre_shift, scale);
        queue = qin - qout;
        score = (bit<32>)remote > load ? (bit<32>)remote : load;
    }

    apply {
        if (!hdr.ipv4.isValid() || hdr.ipv4.ihl != 5) {
            drop(1);
            return;
        }
        if (hdr.ipv4.ttl <= 1) {
            drop(2);
            return;
        }
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        meta.l4_sport = 0;
        meta.l4_dport = 0;
        if (hdr.udp.isValid()) {
            meta.l4_sport = hdr.udp.src_port;
            meta.l4_dport = hdr.udp.dst_port;
        }
        lb_config.apply();
        meta.now = (bit<32>)sm.ingress_global_timestamp;
        hash(meta.flow_idx, HashAlgorithm.crc32, 32w0,
             { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
               meta.l4_sport, meta.l4_dport },
             (bit<32>)LB_FLOW_SLOTS);
        sm.priority = QUEUE_ELEPHANT;
        if (meta.em_threshold != 0) {
            bit<32> bytes;
            bit<32> seen;
            bit<1> big;
            em_bytes.read(bytes, meta.flow_idx);
            em_last_us.read(seen, meta.flow_idx);
            em_elephant.read(big, meta.flow_idx);
            if (meta.now - seen > meta.em_window_us) {
                bytes = 0;   /* idle long enough: its old packets have left */
                big = 0;
            }
            bytes = bytes + sm.packet_length;
            if (bytes > meta.em_threshold) {
                big = 1;
            }
            em_bytes.write(meta.flow_idx, bytes);
            em_last_us.write(meta.flow_idx, meta.now);
            em_elephant.write(meta.flow_idx, big);
            if (big == 0) {
                sm.priority = QUEUE_MOUSE;
            }
        }
        if (hdr.bth.isValid() && (hdr.bth.opcode == BTH_OP_ACK || hdr.bth.opcode == BTH_OP_CNP)) {
            sm.priority = QUEUE_CONTROL;
        }
        route.apply();
        if (meta.group != 0) {
            group.apply();
        }
        if (meta.group == 0) {
            /* a local port, or dropped by route */
            if (hdr.conga.isValid()) {
                /* CONGA, destination leaf: what the path measured, and the
                 * sender's feedback on our own path towards it; then strip. */
                bit<32> cell = (bit<32>)hdr.conga.src_leaf * 16;
                conga_from_leaf.write(cell + (bit<32>)(hdr.conga.path & 15), hdr.conga.ce);
                conga_to_leaf.write(cell + (bit<32>)(hdr.conga.fb_path & 15), hdr.conga.fb_metric);
                hdr.ethernet.ether_type = hdr.conga.ether_type;
                hdr.conga.setInvalid();
            }
        } else if (meta.count == 0) {
            drop(3);
        } else {
            /* The salt must enter non-linearly: CRC is affine over GF(2), so a
             * salt hashed with the 5-tuple only XORs one constant into every
             * flow's hash, and on a power-of-two group the same flows collide
             * whatever the salt.  Multiplying by an odd salt mixes the bits;
             * CRC-16 of the product picks the slot. */
            bit<32> h;
            hash(h, HashAlgorithm.crc32, 32w0,
                 { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
                   meta.l4_sport, meta.l4_dport },
                 64w0x100000000);
            bit<32> mixed = h * (meta.salt | 32w1);
            bit<8> hslot;
            hash(hslot, HashAlgorithm.crc16, 8w0, { mixed }, meta.count);
            meta.slot = hslot;
            if (meta.mode >= MODE_DRILL) {
                member_state(meta.p0, meta.s0, 0, meta.l0, meta.q0, meta.c0);
                member_state(meta.p1, meta.s1, 1, meta.l1, meta.q1, meta.c1);
                member_state(meta.p2, meta.s2, 2, meta.l2, meta.q2, meta.c2);
                member_state(meta.p3, meta.s3, 3, meta.l3, meta.q3, meta.c3);
                if (meta.count > 4) {
                    member_state(meta.p4, meta.s4, 4, meta.l4, meta.q4, meta.c4);
                    member_state(meta.p5, meta.s5, 5, meta.l5, meta.q5, meta.c5);
                    member_state(meta.p6, meta.s6, 6, meta.l6, meta.q6, meta.c6);
                    member_state(meta.p7, meta.s7, 7, meta.l7, meta.q7, meta.c7);
                }
            }
            if (meta.mode == MODE_SPRAY) {
                random(meta.slot, 8w0, meta.count - 1);
            } else if (meta.mode == MODE_DRILL) {
                /* d = 2 random members and m = 1 remembered best: the shortest
                 * local queue wins (the remembered one on ties). */
                bit<8> r1;
                bit<8> r2;
                bit<8> best;
                random(r1, 8w0, meta.count - 1);
                random(r2, 8w0, meta.count - 1);
                drill_best.read(best, (bit<32>)meta.group);
                if (best >= meta.count) {
                    best = r1;
                }
                bit<32> q = pick8(best, meta.q0, meta.q1, meta.q2, meta.q3,
                                   meta.q4, meta.q5, meta.q6, meta.q7);
                bit<32> q1 = pick8(r1, meta.q0, meta.q1, meta.q2, meta.q3,
                                   meta.q4, meta.q5, meta.q6, meta.q7);
                bit<32> q2 = pick8(r2, meta.q0, meta.q1, meta.q2, meta.q3,
                                   meta.q4, meta.q5, meta.q6, meta.q7);
                if (q1 < q) {
                    best = r1;
                    q = q1;
                }
                if (q2 < q) {
                    best = r2;
                }
                drill_best.write((bit<32>)meta.group, best);
                meta.slot = best;
            } else if (meta.mode != MODE_ECMP) {
                /* Per-flow state: LetFlow and CONGA re-choose at a flowlet
                 * gap, least-loaded only at the flow's first packet. */
                bit<32> last;
                bit<8> slot;
                flowlet_last_us.read(last, meta.flow_idx);
                flowlet_slot.read(slot, meta.flow_idx);
                /* `last` holds the time + 1, so 0 means "never seen" */
                bool gap = meta.mode != MODE_LEAST && meta.now + 1 - last > meta.timeout_us;
                if (last == 0 || gap || slot >= meta.count) {
                    bit<8> fresh;
                    if (meta.mode == MODE_FLOWLET) {
                        random(fresh, 8w0, meta.count - 1);
                    } else if (meta.mode == MODE_CONGA) {
                        fresh = argmin8(hslot, meta.count, meta.c0, meta.c1, meta.c2, meta.c3,
                                        meta.c4, meta.c5, meta.c6, meta.c7);
                    } else {
                        fresh = argmin8(hslot, meta.count, meta.l0, meta.l1, meta.l2, meta.l3,
                                        meta.l4, meta.l5, meta.l6, meta.l7);
                    }
                    if (last != 0 && fresh != slot) {
                        flowlet_moves.count(0);
                    }
                    slot = fresh;
                    flowlet_slot.write(meta.flow_idx, slot);
                }
                flowlet_last_us.write(meta.flow_idx, meta.now + 1);
                meta.slot = slot;
            }
            if (meta.mode >= MODE_DRILL) {
                sm.egress_spec = (port_t)pick8(meta.slot, meta.p0, meta.p1, meta.p2, meta.p3,
                                               meta.p4, meta.p5, meta.p6, meta.p7);
            } else {
                member.apply();
            }
            /* The DRE of the chosen port takes this packet. */
            bit<32> port = (bit<32>)sm.egress_spec;
            bit<32> bytes;
            bit<32> stamp;
            dre_bytes.read(bytes, port);
            dre_stamp_us.read(stamp, port);
            bit<32> periods = (meta.now - stamp) >> meta.dre_shift;
            dre_bytes.write(port, (bytes >> (bit<8>)(periods > 31 ? 32w31 : periods)) + sm.packet_length);
            dre_stamp_us.write(port, stamp + (periods << meta.dre_shift));
            if (meta.mode == MODE_CONGA) {
                bit<32> load = pick8(meta.slot, meta.l0, meta.l1, meta.l2, meta.l3,
                                     meta.l4, meta.l5, meta.l6, meta.l7);
                if (!hdr.conga.isValid()) {
                    /* source leaf: the shim, with one feedback value for the
                     * destination leaf (its paths round robin: 0..3, or 0..7
                     * for a group of more than 4 members) */
                    bit<8> k;
                    bit<8> fb;
                    conga_fb_next.read(k, (bit<32>)meta.dst_leaf);
                    conga_from_leaf.read(fb, (bit<32>)meta.dst_leaf * 16 + (bit<32>)k);
                    conga_fb_next.write((bit<32>)meta.dst_leaf, (k + 1) & (meta.count > 4 ? 8w7 : 8w3));
                    hdr.conga.setValid();
                    hdr.conga.src_leaf = meta.leaf_id;
                    hdr.conga.path = meta.slot;
                    hdr.conga.ce = (bit<8>)load;
                    hdr.conga.fb_path = k;
                    hdr.conga.fb_metric = fb;
                    hdr.conga.reserved = 0;
                    hdr.conga.ether_type = hdr.ethernet.ether_type;
                    hdr.ethernet.ether_type = ETHERTYPE_CONGA;
                } else if ((bit<32>)hdr.conga.ce < load) {
                    hdr.conga.ce = (bit<8>)load;   /* a later hop: raise CE */
                }
            }
        }
        bit<32> qin;
        queue_in.read(qin, (bit<32>)sm.egress_spec);
        queue_in.write((bit<32>)sm.egress_spec, qin + 1);
    }
}

control LbEgress(inout lb_headers_t hdr, inout lb_metadata_t meta,
                 inout standard_metadata_t sm) {
    /* CE marks applied, for the report. */
    counter(1, CounterType.packets) ce_marks;
    apply {
        bit<32> qout;
        queue_out.read(qout, (bit<32>)sm.egress_port);
        queue_out.write((bit<32>)sm.egress_port, qout + 1);
        if (!hdr.ipv4.isValid()) {
            return;
        }
        if (hdr.ipv4.ecn != ECN_NOT_ECT && hdr.ipv4.ecn != ECN_CE) {
            bit<32> q = (bit<32>)sm.enq_qdepth;
            bool mark = false;
            if (q >= meta.kmax) {
                mark = true;
            } else if (q > meta.kmin) {
                bit<8> r;
                random(r, 8w0, 8w255);
                mark = (bit<32>)r * (meta.kmax - meta.kmin) < (q - meta.kmin) * meta.pmax256;
            }
            if (mark) {
                hdr.ipv4.ecn = ECN_CE;
                ce_marks.count(0);
            }
        }
    }
}

control LbComputeChecksum(inout lb_headers_t hdr, inout lb_metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control LbDeparser(packet_out pkt, in lb_headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.conga);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.bth);
    }
}

V1Switch(LbParser(), LbVerifyChecksum(), LbIngress(), LbEgress(),
         LbComputeChecksum(), LbDeparser()) main;
