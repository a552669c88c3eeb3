/*
 * queue_probe.p4 -- records the traffic manager's view of each packet in the packet itself.
 *
 * The packet is one 'probe' header followed by payload.  Ingress sends it to probe.out_port with
 * priority probe.prio (a probe with out_port 511 is dropped by mark_to_drop).  Egress writes the
 * queueing metadata BMv2 fills in (all times in microseconds) into the probe.
 */
#include <core.p4>
#include <v1model.p4>

header probe_t {
    bit<16> out_port;
    bit<8>  prio;
    bit<8>  instance_type;
    bit<32> enq_timestamp;
    bit<32> enq_qdepth;
    bit<32> deq_timedelta;
    bit<32> deq_qdepth;
    bit<48> ingress_ts;
    bit<48> egress_ts;
    bit<16> egress_port;
    bit<32> packet_length;
}

struct headers { probe_t probe; }
struct metadata { }

parser ProbeParser(packet_in packet, out headers hdr, inout metadata meta,
                   inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.probe);
        transition accept;
    }
}

control ProbeVerify(inout headers hdr, inout metadata meta) { apply { } }

control ProbeIngress(inout headers hdr, inout metadata meta,
                     inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.probe.out_port == 511) {
            mark_to_drop(standard_metadata);
        } else {
            standard_metadata.egress_spec = (bit<9>) hdr.probe.out_port;
        }
        standard_metadata.priority = (bit<3>) hdr.probe.prio;
        hdr.probe.ingress_ts = standard_metadata.ingress_global_timestamp;
        hdr.probe.packet_length = standard_metadata.packet_length;
    }
}

control ProbeEgress(inout headers hdr, inout metadata meta,
                    inout standard_metadata_t standard_metadata) {
    apply {
        hdr.probe.instance_type = (bit<8>) standard_metadata.instance_type;
        hdr.probe.enq_timestamp = standard_metadata.enq_timestamp;
        hdr.probe.enq_qdepth = (bit<32>) standard_metadata.enq_qdepth;
        hdr.probe.deq_timedelta = standard_metadata.deq_timedelta;
        hdr.probe.deq_qdepth = (bit<32>) standard_metadata.deq_qdepth;
        hdr.probe.egress_ts = standard_metadata.egress_global_timestamp;
        hdr.probe.egress_port = (bit<16>) standard_metadata.egress_port;
    }
}

control ProbeCompute(inout headers hdr, inout metadata meta) { apply { } }

control ProbeDeparser(packet_out packet, in headers hdr) {
    apply { packet.emit(hdr.probe); }
}

V1Switch(ProbeParser(), ProbeVerify(), ProbeIngress(), ProbeEgress(), ProbeCompute(), ProbeDeparser()) main;
