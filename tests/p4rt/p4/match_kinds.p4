/*
 * match_kinds.p4 -- one table per P4Runtime match kind, plus meters and a direct meter, so the
 * P4Runtime server's entry translation can be checked against the real p4sim core.
 * Each table's action writes the egress port, so a packet shows which entry it hit.
 */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

struct metadata {
    bit<8> color;
}

struct headers {
    ethernet_t ethernet;
}

parser MkParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control MkVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MkIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    meter(16, MeterType.packets) port_meter;
    direct_meter<bit<8>>(MeterType.packets) exact_meter;

    action to_port(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    action to_port_metered(bit<9> port) {
        standard_metadata.egress_spec = port;
        exact_meter.read(meta.color);
    }

    action drop() {
        mark_to_drop(standard_metadata);
    }

    table t_exact {
        key = { hdr.ethernet.etherType: exact; }
        actions = { to_port_metered; drop; }
        meters = exact_meter;
        default_action = drop();
    }

    table t_lpm {
        key = { hdr.ethernet.dstAddr: lpm; }
        actions = { to_port; NoAction; }
        default_action = NoAction();
    }

    table t_ternary {
        key = {
            hdr.ethernet.srcAddr: ternary;
            hdr.ethernet.etherType: exact;
        }
        actions = { to_port; NoAction; }
        default_action = NoAction();
    }

    table t_range {
        key = { hdr.ethernet.etherType: range; }
        actions = { to_port; NoAction; }
        default_action = NoAction();
    }

    table t_optional {
        key = {
            hdr.ethernet.srcAddr: optional;
            hdr.ethernet.dstAddr: optional;
        }
        actions = { to_port; NoAction; }
        default_action = NoAction();
    }

    apply {
        t_exact.apply();
        t_lpm.apply();
        t_ternary.apply();
        t_range.apply();
        t_optional.apply();
        port_meter.execute_meter((bit<32>) standard_metadata.ingress_port, meta.color);
        if (meta.color == 2) {
            drop();
        }
    }
}

control MkEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control MkComputeChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MkDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
    }
}

V1Switch(MkParser(), MkVerifyChecksum(), MkIngress(), MkEgress(), MkComputeChecksum(),
         MkDeparser()) main;
