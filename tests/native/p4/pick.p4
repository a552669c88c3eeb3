/* tests/native/test_send_many.py: frames whose first byte picks a multicast group (non-zero)
 * or, when zero, whose second byte is the egress port (511 drops); egress writes the replica's
 * egress_rid into the third byte, so replicas of one frame differ on the wire. */
#include <core.p4>
#include <v1model.p4>

header pick_t {
    bit<8> grp;
    bit<8> port;
    bit<8> rid;
}

struct headers_t {
    pick_t pick;
}

struct meta_t {
}

parser PickParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.pick);
        transition accept;
    }
}

control PickVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control PickIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.pick.grp != 0) {
            sm.mcast_grp = (bit<16>)hdr.pick.grp;
        } else if (hdr.pick.port == 255) {
            mark_to_drop(sm);
        } else {
            sm.egress_spec = (bit<9>)hdr.pick.port;
        }
    }
}

control PickEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.pick.rid = (bit<8>)sm.egress_rid;
    }
}

control PickCompute(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control PickDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.pick);
    }
}

V1Switch(PickParser(), PickVerify(), PickIngress(), PickEgress(), PickCompute(), PickDeparser()) main;
