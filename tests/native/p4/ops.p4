/* ops.p4 -- operators and control flow for the native-vs-reference differential: signed and
 * unsigned arithmetic, shifts by run-time amounts, saturation, casts, slices, concatenation,
 * exit inside an action (its inout argument still copied back) and in the apply block,
 * log_msg, a failing assert, a ternary/range table and a register.  Every result is written into the packet. */
#include <core.p4>
#include <v1model.p4>

header ops_t {
    bit<8>  a;
    bit<8>  b;
    bit<8>  op;
    bit<8>  r0;
    bit<8>  r1;
    bit<16> r2;
    bit<32> r3;
}

struct headers { ops_t ops; }
struct metadata { bit<8> scratch; }

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ops);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    register<bit<8>>(16) seen;

    action leave(inout bit<8> x) {
        x = x + 1;
        exit;
    }
    action set_r1(bit<8> v) { hdr.ops.r1 = v; }
    table classify {
        key = { hdr.ops.a: ternary; hdr.ops.b: range; }
        actions = { set_r1; NoAction; }
        default_action = set_r1(0xEE);
        const entries = {
            (0x80 &&& 0x80, 0 .. 15) : set_r1(1);
            (_, 16 .. 200)           : set_r1(2);
        }
    }

    apply {
        sm.egress_spec = 1;
        int<8> sa = (int<8>) hdr.ops.a;
        int<8> sb = (int<8>) hdr.ops.b;
        bit<8> old;
        seen.read(old, (bit<32>) hdr.ops.op[3:0]);
        seen.write((bit<32>) hdr.ops.op[3:0], old + hdr.ops.a);
        classify.apply();
        if (hdr.ops.op == 0) {
            hdr.ops.r0 = (bit<8>) (sa - sb * 3);
        } else if (hdr.ops.op == 1) {
            hdr.ops.r0 = sa >= sb ? 8w1 : 8w0;
        } else if (hdr.ops.op == 2) {
            hdr.ops.r0 = (bit<8>) (sa >> hdr.ops.b);
        } else if (hdr.ops.op == 3) {
            hdr.ops.r0 = (bit<8>) (sa |+| sb);
        } else if (hdr.ops.op == 4) {
            hdr.ops.r0 = (bit<8>) (sa |-| sb);
        } else if (hdr.ops.op == 5) {
            hdr.ops.r0 = sa < sb ? 8w1 : 8w0;
        } else if (hdr.ops.op == 6) {
            hdr.ops.r0 = hdr.ops.a << hdr.ops.b;
        } else if (hdr.ops.op == 7) {
            hdr.ops.r0 = hdr.ops.a |-| hdr.ops.b;
        } else if (hdr.ops.op == 8) {
            leave(hdr.ops.r0);
            hdr.ops.r0 = 0x55;  /* not reached */
        } else if (hdr.ops.op == 9) {
            hdr.ops.r0 = hdr.ops.a |+| hdr.ops.b;
        } else if (hdr.ops.op == 10) {
            exit;
        } else if (hdr.ops.op == 11) {
            log_msg("a={} b={}", {hdr.ops.a, hdr.ops.b});
            assert(hdr.ops.b != 3);   /* b == 3: the packet is dropped and counted */
            hdr.ops.r0 = 0x11;
        } else {
            /* unsigned wrap-around product; no run-time / or %: p4c accepts those on compile-time
             * values only ("could not evaluate expression at compilation time") */
            hdr.ops.r0 = hdr.ops.a * hdr.ops.b + (hdr.ops.a & ~hdr.ops.b);
        }
        hdr.ops.r2 = (bit<16>) ((int<16>) sa) ^ (hdr.ops.a ++ hdr.ops.b);
        hdr.ops.r3 = (bit<32>) ((bit<8>) (-sa)) + (bit<32>) (~hdr.ops.b) + (bit<32>) hdr.ops.r2[11:4];
        sm.egress_spec = 2;
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.ops); } }

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
