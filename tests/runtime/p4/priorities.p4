/*
 * priorities.p4 -- which entry wins when several match, under each priority convention.
 *
 * Packet = ctl header (op, a, r): op picks the table, a is its key, the winning action writes r.
 */
#include <core.p4>
#include <v1model.p4>

header ctl_t {
    bit<8> op;
    bit<8> a;
    bit<8> r;
}

struct headers { ctl_t c; }
struct metadata { bit<8> unused; }

parser P(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.c);
        transition accept;
    }
}

control V(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action set(bit<8> v) { hdr.c.r = v; }

    /* The old @priority annotation: BMv2 gives precedence to the smallest number. */
    table legacy {
        key = { hdr.c.a : ternary; }
        actions = { set; }
        const entries = {
            _ : set(1) @priority(3);
            0x05 &&& 0xFF : set(2) @priority(1);
            0x06 &&& 0xFF : set(11) @priority(2);
        }
    }

    /* P4_16 1.2.4 entries, largest priority wins (the default); the second entry's priority is
     * the first one's minus priority_delta (90). */
    table largest {
        key = { hdr.c.a : ternary; }
        actions = { set; }
        priority_delta = 10;
        entries = {
            const priority = 100 : 0x05 &&& 0xFF : set(3);
                                   0x05 &&& 0x0F : set(4);
                  priority = 50  : _ : set(5);
        }
    }

    /* The smallest priority wins; priorities 10, 20, 30. */
    table smallest {
        key = { hdr.c.a : ternary; }
        actions = { set; }
        largest_priority_wins = false;
        priority_delta = 10;
        entries = {
            priority = 10 : 0x05 &&& 0xFF : set(6);
                            0x05 &&& 0x0F : set(7);
                            _ : set(8);
        }
    }

    /* No priorities at all: numbered so that the earlier entry wins. */
    table implied {
        key = { hdr.c.a : ternary; }
        actions = { set; }
        entries = {
            0x05 &&& 0xFF : set(9);
            _ : set(10);
        }
    }

    apply {
        sm.egress_spec = 1;
        if (hdr.c.op == 1) {
            legacy.apply();
        } else if (hdr.c.op == 2) {
            largest.apply();
        } else if (hdr.c.op == 3) {
            smallest.apply();
        } else if (hdr.c.op == 4) {
            implied.apply();
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out packet, in headers hdr) { apply { packet.emit(hdr.c); } }

V1Switch(P(), V(), I(), E(), C(), D()) main;
