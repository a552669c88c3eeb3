/*
 * lang.p4 -- P4_16 language features through the whole front end + runtime, one per ctl.op.
 *
 * Packet = ctl header, then up to three one-byte 's' headers ending with a 0 byte, then payload.
 */
#include <core.p4>
#include <v1model.p4>

header ctl_t {
    bit<8>  op;
    bit<8>  a;
    bit<8>  b;
    bit<8>  r1;
    bit<8>  r2;
    bit<16> r16;
}

header s_t { bit<8> v; }

struct headers {
    ctl_t  c;
    s_t[3] s;
}

struct pair_t {
    s_t    h;
    bit<8> x;
}

struct metadata { bit<8> unused; bit<8> last_index; }

/* A top-level extern is one instance shared by every control that uses it. */
register<bit<8>>(4) shared;

bit<8> add_with_carry(in bit<8> x, in bit<8> y, out bit<8> carry) {
    bit<9> wide = (bit<9>) x + (bit<9>) y;
    carry = (bit<8>) wide[8:8];
    return wide[7:0];
}

parser P(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.c);
        transition select(hdr.c.b) {
            0: accept;
            default: parse_s;
        }
    }
    state parse_s {
        packet.extract(hdr.s.next);
        meta.last_index = (bit<8>) hdr.s.lastIndex;  /* lastIndex: parser only (P4_16, p4c) */
        transition select(hdr.s.last.v) {
            0: accept;
            default: parse_s;
        }
    }
}

control V(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    bit<8> local_count = 0;

    action incr(inout bit<8> x) {
        x = x + 1;
    }

    action leave() {
        hdr.c.r1 = 7;
        exit;
    }

    apply {
        sm.egress_spec = 1;
        local_count = local_count + 1;
        if (hdr.c.op == 1) {
            hdr.s.push_front(1);
            hdr.s[0].setValid();
            hdr.s[0].v = 0xAA;
        } else if (hdr.c.op == 2) {
            hdr.s.pop_front(1);
        } else if (hdr.c.op == 3) {
            bit<8> carry;
            hdr.c.r1 = add_with_carry(hdr.c.a, hdr.c.b, carry);
            hdr.c.r2 = carry;
        } else if (hdr.c.op == 4) {
            incr(hdr.c.r1);
            incr(hdr.c.r1);
        } else if (hdr.c.op == 5) {
            switch (hdr.c.a) {
                1: { hdr.c.r1 = 10; }
                2:
                3: { hdr.c.r1 = 23; }
                default: { hdr.c.r1 = 99; }
            }
        } else if (hdr.c.op == 6) {
            s_t tmp = hdr.s[0];
            tmp.v = 5;
            hdr.c.r1 = hdr.s[0].v;
            hdr.c.r2 = tmp.v;
        } else if (hdr.c.op == 7) {
            hdr.c.r1 = (hdr.s[0] == hdr.s[1]) ? 8w1 : 8w0;
        } else if (hdr.c.op == 8) {
            int<8> x = (int<8>) hdr.c.a;
            x = x >> 1;
            hdr.c.r1 = (bit<8>) x;
            hdr.c.r2 = (x < 0) ? 8w1 : 8w0;
        } else if (hdr.c.op == 9) {
            hdr.c.r1 = local_count;
        } else if (hdr.c.op == 10) {
            hdr.c.r1 = 1;
            return;
        } else if (hdr.c.op == 11) {
            hdr.c.r1 = meta.last_index;
        } else if (hdr.c.op == 12) {
            hdr.s[1].setInvalid();
        } else if (hdr.c.op == 13) {
            hdr.c.r1 = (sm.parser_error == error.NoError) ? 8w1 : 8w0;
        } else if (hdr.c.op == 14) {
            pair_t p1;
            pair_t p2;
            p1.h = hdr.s[0];
            p1.x = 3;
            p2 = p1;
            p2.x = 4;
            hdr.c.r1 = p1.x;
            hdr.c.r2 = (p1 == p2) ? 8w1 : 8w0;
            p2.x = 3;
            hdr.c.r16 = (p1 == p2) ? 16w1 : 16w0;
        } else if (hdr.c.op == 15) {
            hdr.c.r16 = hdr.c.a ++ hdr.c.b;
        } else if (hdr.c.op == 16) {
            leave();
        } else if (hdr.c.op == 17) {
            shared.write(2, hdr.c.a);
        }
        if (hdr.c.op == 10 || hdr.c.op == 16) {
            hdr.c.r1 = 2;  /* never reached */
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.c.op == 17) {
            shared.read(hdr.c.r2, 2);
        }
    }
}
control C(inout headers hdr, inout metadata meta) { apply { } }

control D(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.c);
        packet.emit(hdr.s);
    }
}

V1Switch(P(), V(), I(), E(), C(), D()) main;
