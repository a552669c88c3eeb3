/*
 * A basic v1model IPv4 router written for p4sim's front-end tests.  It uses the
 * object names of p4lang's well-known tutorial program (MyIngress.ipv4_lpm,
 * MyIngress.ipv4_forward, MyIngress.drop, NoAction) so that the P4Info ids p4c
 * assigns to those names can be checked.
 */
#include <core.p4>
#include <v1model.p4>

typedef bit<48> mac_t;
typedef bit<32> addr4_t;

header eth_h {
    mac_t   dst;
    mac_t   src;
    bit<16> ether_type;
}

header ip4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  tos;
    bit<16> total_len;
    bit<16> ident;
    bit<3>  flags;
    bit<13> frag;
    bit<8>  ttl;
    bit<8>  proto;
    bit<16> csum;
    addr4_t src;
    addr4_t dst;
}

struct hdrs_t {
    eth_h eth;
    ip4_h ip4;
}

struct meta_t { }

parser MyParser(packet_in pkt, out hdrs_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.ether_type) {
            0x0800: parse_ip4;
            default: accept;
        }
    }
    state parse_ip4 {
        pkt.extract(hdr.ip4);
        transition accept;
    }
}

control MyVerifyChecksum(inout hdrs_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout hdrs_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action drop() {
        mark_to_drop(sm);
    }
    action ipv4_forward(mac_t dstAddr, bit<9> port) {
        sm.egress_spec = port;
        hdr.eth.src = hdr.eth.dst;
        hdr.eth.dst = dstAddr;
        hdr.ip4.ttl = hdr.ip4.ttl - 1;
    }
    table ipv4_lpm {
        key = { hdr.ip4.dst : lpm; }
        actions = { ipv4_forward; drop; NoAction; }
        size = 1024;
        default_action = NoAction();
    }
    apply {
        if (hdr.ip4.isValid()) {
            ipv4_lpm.apply();
        }
    }
}

control MyEgress(inout hdrs_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control MyComputeChecksum(inout hdrs_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ip4.isValid(),
            { hdr.ip4.version, hdr.ip4.ihl, hdr.ip4.tos, hdr.ip4.total_len,
              hdr.ip4.ident, hdr.ip4.flags, hdr.ip4.frag, hdr.ip4.ttl,
              hdr.ip4.proto, hdr.ip4.src, hdr.ip4.dst },
            hdr.ip4.csum, HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out pkt, in hdrs_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ip4);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),
         MyComputeChecksum(), MyDeparser()) main;
