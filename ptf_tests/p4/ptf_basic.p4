/*
 * ptf_basic.p4 -- the small v1model program the PTF harness tests itself with.
 *
 * It exercises every P4Runtime path the harness offers, one feature per table or extern:
 *   - ipv4_lpm   (lpm)      : L3 forwarding, MAC rewrite, TTL decrement, checksum update
 *   - acl        (ternary)  : priorities; "punt" sends a packet to the CPU (packet-in)
 *   - smac       (exact)    : MAC learning; a miss emits a learn_t digest
 *   - l2_special (exact)    : multicast groups and I2E mirroring (clone sessions) via the PRE
 *   - port_pkts  (counter)  : packets/bytes per ingress port
 *   - last_len   (register) : length of the last packet per ingress port
 *   - packet_out / packet_in @controller_header headers on CPU_PORT
 * CPU_PORT must equal the switch's --cpu-port (255 in ptf_tests/run.sh).
 */
#include <core.p4>
#include <v1model.p4>

#ifndef CPU_PORT
#define CPU_PORT 255
#endif

const bit<16> ETHERTYPE_IPV4 = 0x0800;

@controller_header("packet_out")
header packet_out_header_t {
    bit<9> egress_port;
    bit<7> _pad;
}

@controller_header("packet_in")
header packet_in_header_t {
    bit<9> ingress_port;
    bit<7> _pad;
}

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

struct learn_t {
    bit<48> srcAddr;
    bit<9>  ingress_port;
}

struct metadata {
    bit<1> unused;
}

struct headers {
    packet_out_header_t packet_out;
    packet_in_header_t  packet_in;
    ethernet_t          ethernet;
    ipv4_t              ipv4;
}

parser BasicParser(packet_in packet,
                   out headers hdr,
                   inout metadata meta,
                   inout standard_metadata_t standard_metadata) {
    state start {
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }

    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

control BasicVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

counter(512, CounterType.packets_and_bytes) port_pkts;
register<bit<32>>(512) last_len;

control BasicIngress(inout headers hdr,
                     inout metadata meta,
                     inout standard_metadata_t standard_metadata) {

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action ipv4_forward(bit<48> dstAddr, bit<9> port) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = dstAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    table ipv4_lpm {
        key = {
            hdr.ipv4.dstAddr: lpm;
        }
        actions = {
            ipv4_forward;
            drop;
        }
        size = 1024;
        default_action = drop();
    }

    action punt() {
        standard_metadata.egress_spec = CPU_PORT;
    }

    table acl {
        key = {
            hdr.ipv4.srcAddr:  ternary;
            hdr.ipv4.protocol: ternary;
        }
        actions = {
            punt;
            drop;
            NoAction;
        }
        size = 64;
        default_action = NoAction();
    }

    action learn() {
        digest<learn_t>(1, { hdr.ethernet.srcAddr, standard_metadata.ingress_port });
    }

    table smac {
        key = {
            hdr.ethernet.srcAddr: exact;
        }
        actions = {
            learn;
            NoAction;
        }
        size = 256;
        default_action = learn();
    }

    action set_mcast_grp(bit<16> grp) {
        standard_metadata.mcast_grp = grp;
    }

    action mirror(bit<32> session) {
        clone(CloneType.I2E, session);
    }

    table l2_special {
        key = {
            hdr.ethernet.dstAddr: exact;
        }
        actions = {
            set_mcast_grp;
            mirror;
            NoAction;
        }
        size = 16;
        default_action = NoAction();
    }

    apply {
        if (hdr.packet_out.isValid()) {
            /* From the controller: leave on the port it names, untouched. */
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else {
            port_pkts.count((bit<32>) standard_metadata.ingress_port);
            last_len.write((bit<32>) standard_metadata.ingress_port, standard_metadata.packet_length);
            if (hdr.ethernet.isValid()) {
                smac.apply();
                /* Before routing rewrites the destination MAC it matches on. */
                l2_special.apply();
            }
            if (hdr.ipv4.isValid()) {
                ipv4_lpm.apply();
                acl.apply();
            } else if (standard_metadata.mcast_grp == 0) {
                /* Non-IP frames are dropped unless l2_special multicast them. */
                drop();
            }
        }
    }
}

control BasicEgress(inout headers hdr,
                    inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
            hdr.packet_in._pad = 0;
        }
    }
}

control BasicComputeChecksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version,
              hdr.ipv4.ihl,
              hdr.ipv4.diffserv,
              hdr.ipv4.totalLen,
              hdr.ipv4.identification,
              hdr.ipv4.flags,
              hdr.ipv4.fragOffset,
              hdr.ipv4.ttl,
              hdr.ipv4.protocol,
              hdr.ipv4.srcAddr,
              hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

control BasicDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(
    BasicParser(),
    BasicVerifyChecksum(),
    BasicIngress(),
    BasicEgress(),
    BasicComputeChecksum(),
    BasicDeparser()
) main;
