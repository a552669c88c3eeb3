/*
 * direct_meter.p4 -- a table with a direct meter: the matched entry's meter colours the packet.
 */
#include <core.p4>
#include <v1model.p4>

header m_t {
    bit<8> key;
    bit<8> color;
    bit<8> acted;
}

struct headers { m_t m; }
struct metadata { }

parser P(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { packet.extract(hdr.m); transition accept; }
}

control V(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    direct_meter<bit<8>>(MeterType.packets) dm;

    action colour() {
        dm.read(hdr.m.color);
        hdr.m.acted = 1;
    }

    table t {
        key = { hdr.m.key: exact; }
        actions = { colour; NoAction; }
        meters = dm;
        default_action = NoAction();
    }

    apply {
        sm.egress_spec = 1;
        t.apply();
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out packet, in headers hdr) { apply { packet.emit(hdr.m); } }

V1Switch(P(), V(), I(), E(), C(), D()) main;
