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
 *   MODE_SPRAY   a member uniformly at random for every packet.
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

#define LB_GROUPS 1024
#define LB_MEMBER_SLOTS 16384   /* groups x up to 16 slots each */
#define LB_FLOW_SLOTS 8192      /* flowlet and elephant state, hashed per flow */

const bit<3> QUEUE_MOUSE    = 1;  /* served first (strict priority) */
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
}

parser LbParser(packet_in pkt, out headers_t hdr, inout lb_metadata_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
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

control LbVerifyChecksum(inout headers_t hdr, inout lb_metadata_t meta) {
    apply { }
}

control LbIngress(inout headers_t hdr, inout lb_metadata_t meta,
                  inout standard_metadata_t sm) {
    /* Packets dropped by reason: 0 no route, 1 not IPv4 / IP options,
     * 2 TTL expired, 3 empty group. */
    counter(4, CounterType.packets) drops;
    /* Member changes at flowlet gaps (LetFlow), for the report. */
    counter(1, CounterType.packets) flowlet_moves;
    /* LetFlow state per hashed flow: time of its last packet (us) and its
     * member slot; LB_FLOW_SLOTS cells (two flows may share one, as on a
     * switch ASIC; then they move together). */
    register<bit<32>>(LB_FLOW_SLOTS) flowlet_last_us;
    register<bit<8>>(LB_FLOW_SLOTS) flowlet_slot;
    /* Elephant/mouse state per hashed flow: bytes since the flow was last idle
     * for em_window_us, the time of its last packet (us) and whether it is an
     * elephant now; LB_FLOW_SLOTS cells. */
    register<bit<32>>(LB_FLOW_SLOTS) em_bytes;
    register<bit<32>>(LB_FLOW_SLOTS) em_last_us;
    register<bit<1>>(LB_FLOW_SLOTS) em_elephant;

    action configure(bit<32> kmin, bit<32> kmax, bit<32> pmax256,
                     bit<32> em_threshold, bit<32> em_window_us) {
        meta.kmin = kmin;
        meta.kmax = kmax;
        meta.pmax256 = pmax256;
        meta.em_threshold = em_threshold;
        meta.em_window_us = em_window_us;
    }
    /* The switch's ECN ramp (used by egress: v1model carries user metadata
     * through the traffic manager) and elephant threshold.  Keyless: its
     * default action is set per switch by the eval harness.  The defaults are
     * DCQCN's common deployment values for 4 KB packets: Kmin 100 KB = 25,
     * Kmax 400 KB = 100 packets, Pmax 0.2 = 51/256. */
    table lb_config {
        key = { }
        actions = { configure; }
        default_action = configure(25, 100, 51, 0, 1000);
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

    action set_group(bit<8> mode, bit<8> count, bit<32> salt, bit<32> timeout_us) {
        meta.mode = mode;
        meta.count = count;
        meta.salt = salt;
        meta.timeout_us = timeout_us;
    }
    /* Group -> how a member is chosen and how many member slots it has.
     * One entry per group; rewritten when a next hop dies. */
    table group {
        key = { meta.group: exact; }
        actions = { set_group; drop; }
        default_action = drop(3);
        size = LB_GROUPS;
    }

    action set_member(port_t port) {
        sm.egress_spec = port;
    }
    /* (group, slot) -> egress port.  ECMP: one slot per live next hop; WCMP:
     * slots in proportion to each next hop's capacity (up to 16 per group). */
    table member {
        key = { meta.group: exact; meta.slot: exact; }
        actions = { set_member; drop; }
        default_action = drop(3);
        size = LB_MEMBER_SLOTS;
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
        bit<32> now = (bit<32>)sm.ingress_global_timestamp;
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
            if (now - seen > meta.em_window_us) {
                bytes = 0;   /* idle long enough: its old packets have left */
                big = 0;
            }
            bytes = bytes + sm.packet_length;
            if (bytes > meta.em_threshold) {
                big = 1;
            }
            em_bytes.write(meta.flow_idx, bytes);
            em_last_us.write(meta.flow_idx, now);
            em_elephant.write(meta.flow_idx, big);
            if (big == 0) {
                sm.priority = QUEUE_MOUSE;
            }
        }
        route.apply();
        if (meta.group == 0) {
            return;   /* a local port, or dropped by route */
        }
        group.apply();
        if (meta.count == 0) {
            drop(3);
            return;
        }
        if (meta.mode == MODE_SPRAY) {
            random(meta.slot, 8w0, meta.count - 1);
        } else if (meta.mode == MODE_FLOWLET) {
            bit<32> last;
            bit<8> slot;
            flowlet_last_us.read(last, meta.flow_idx);
            flowlet_slot.read(slot, meta.flow_idx);
            if (last == 0 || now - last > meta.timeout_us || slot >= meta.count) {
                bit<8> fresh;
                random(fresh, 8w0, meta.count - 1);
                if (last != 0 && fresh != slot) {
                    flowlet_moves.count(0);
                }
                slot = fresh;
                flowlet_slot.write(meta.flow_idx, slot);
            }
            /* 0 means "never seen": time 0 is stored as 1. */
            if (now == 0) {
                flowlet_last_us.write(meta.flow_idx, 32w1);
            } else {
                flowlet_last_us.write(meta.flow_idx, now);
            }
            meta.slot = slot;
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
            hash(meta.slot, HashAlgorithm.crc16, 8w0, { mixed }, meta.count);
        }
        member.apply();
    }
}

control LbEgress(inout headers_t hdr, inout lb_metadata_t meta,
                 inout standard_metadata_t sm) {
    /* CE marks applied, for the report. */
    counter(1, CounterType.packets) ce_marks;
    apply {
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

control LbComputeChecksum(inout headers_t hdr, inout lb_metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.total_len, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.frag_offset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control LbDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.bth);
    }
}

V1Switch(LbParser(), LbVerifyChecksum(), LbIngress(), LbEgress(),
         LbComputeChecksum(), LbDeparser()) main;
