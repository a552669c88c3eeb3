/*
 * newer.p4 -- P4_16 constructs p4c accepts that p4sim used to refuse, one per ctl.op.
 *
 * Packet = ctl header (op, a, b, then four result bytes); the ingress writes r1..r4 and
 * forwards to port 1.
 */
#include <core.p4>
#include <v1model.p4>

header ctl_t {
    bit<8> op;
    bit<8> a;
    bit<8> b;
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
    bit<8> r4;
}

header v_t { bit<8> v; }
header w_t { bit<16> w; }

header_union vw_t {
    v_t a;
    w_t b;
}

/* A varbit field between fixed fields. */
header vl_t {
    bit<4>     x;
    varbit<24> v;
    bit<4>     y;
}

struct headers { ctl_t c; vw_t u; vl_t vl; v_t sp1; v_t sp2; }
struct metadata { bit<8> la_hi; bit<8> la_next; }

struct pair8_t {
    bit<4> hi;
    bit<4> lo;
    bit<8> next;
}

bit<8> postincr(inout bit<8> x) {
    bit<8> rv = x;
    x += 1;
    return rv;
}

bit<8> plus(in bit<8> x, in bit<8> y = 100) {
    return x + y;
}

bit<8> two_outs(out bit<8> p, out bit<8> q) {
    p = 1;
    q = 2;
    return 3;
}

/* A sub-parser with a constructor parameter: extracts one byte, adds `step` to a counter. */
parser Opt(packet_in pk, out v_t o, inout bit<8> count)(bit<8> step) {
    state start {
        pk.extract(o);
        count = count + step;
        transition accept;
    }
}

parser One(packet_in pk, out v_t o) {
    state start {
        pk.extract(o);
        transition accept;
    }
}

parser P(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    Opt(8w3) opt;

    state start {
        packet.extract(hdr.c);
        transition select(hdr.c.op) {
            7: parse_u;
            8: parse_vl_bytes;
            10: parse_vl_bytes;
            15: parse_look;
            18: parse_sub;
            20: parse_direct;
            9: parse_vl_bits;
            default: accept;
        }
    }
    state parse_vl_bytes {
        packet.extract(hdr.vl, (bit<32>) hdr.c.a * 8);
        transition accept;
    }
    state parse_vl_bits {
        packet.extract(hdr.vl, (bit<32>) hdr.c.a);
        transition accept;
    }
    state parse_look {
        pair8_t p = packet.lookahead<pair8_t>();  /* lookahead of a struct */
        meta.la_hi = (bit<8>) p.hi;
        meta.la_next = p.next;
        packet.lookahead<bit<32>>();  /* value unused: still PacketTooShort if too short */
        transition accept;
    }
    state parse_sub {
        meta.la_hi = 1;
        opt.apply(packet, hdr.sp1, meta.la_hi);   /* applied twice: each apply is inlined */
        meta.la_next = meta.la_hi;
        opt.apply(packet, hdr.sp2, meta.la_hi);
        transition accept;
    }
    state parse_direct {
        One.apply(packet, hdr.sp2);   /* direct application of a parser type */
        transition accept;
    }
    state parse_u {
        packet.extract(hdr.u.a);
        transition accept;
    }
}

control V(inout headers hdr, inout metadata meta) { apply { } }

control Double(inout bit<8> v) {
    apply { v = v + v; }
}

/* Constructor parameters: each instance gets its own compile-time values. */
control Scale(inout bit<8> v)(bit<8> factor, bool twice) {
    apply {
        v = v * factor;
        if (twice) {
            v = v * factor;
        }
    }
}

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    Scale(3, false) by3;
    Scale(2, true) by4;

    action sum_to(bit<8> n) {
        hdr.c.r1 = 0;
        for (bit<8> i = 1; i <= n; i = i + 1) {
            hdr.c.r1 = hdr.c.r1 + i;
        }
    }

    action addv(bit<8> va, bit<8> vb = 5) {
        hdr.c.r1 = va + vb;
    }

    table with_default_arg {      /* a table's default action gives every action-data argument
                                     (p4c refuses addv(1) here); direct calls use vb's default */
        key = { }
        actions = { addv; }
        const default_action = addv(1, 5);
    }

    table no_actions {           /* an empty action list (p4c accepts it) */
        key = { }
        actions = { }
    }

    /* BMv2 runs loops in action bodies (p4c's forloop-bmv2 test) */
    action count_odd(bit<8> stop) {
        bit<8> odd = 0;
        bit<8> seen = 0;
        for (bit<8> i = 0; i < 100; i = i + 1) {
            if (i == stop) {
                break;
            }
            seen = seen + 1;
            if ((i & 1) == 0) {
                continue;
            }
            odd = odd + 1;
        }
        hdr.c.r1 = odd;
        hdr.c.r2 = seen;
    }

    apply {
        sm.egress_spec = 1;
        if (hdr.c.op == 1) {            /* compound assignment */
            bit<8> x = hdr.c.a;
            x += 3;
            hdr.c.r1 = x;
            x -= hdr.c.b;
            hdr.c.r2 = x;
            x <<= 1;
            x >>= 2;
            x |= 0x80;
            hdr.c.r3 = x;
            x |+|= 0xF0;
            hdr.c.r4 = x;
        } else if (hdr.c.op == 2) {     /* the lvalue of a compound assignment is evaluated once */
            v_t[4] st;
            bit<8> i = 0;
            st[0].setValid();
            st[1].setValid();
            st[postincr(i) & 3].v |= 5;
            st[postincr(i) & 3].v += 7;
            hdr.c.r1 = st[0].v;
            hdr.c.r2 = st[1].v;
            hdr.c.r3 = i;
        } else if (hdr.c.op == 3) {     /* for loop in an action */
            sum_to(hdr.c.a);
        } else if (hdr.c.op == 4) {     /* break and continue (continue still runs the update) */
            count_odd(hdr.c.a);
        } else if (hdr.c.op == 6) {     /* header union: at most one member valid */
            vw_t u;
            u.a.setValid();
            u.b.setValid();
            hdr.c.r1 = u.a.isValid() ? 8w1 : 8w0;
            hdr.c.r2 = u.b.isValid() ? 8w1 : 8w0;
            hdr.c.r3 = u.isValid() ? 8w1 : 8w0;
            u.b.setInvalid();
            hdr.c.r4 = u.isValid() ? 8w1 : 8w0;
        } else if (hdr.c.op == 7) {     /* extract into a union member; assigning a valid header */
            hdr.c.r1 = hdr.u.a.isValid() ? 8w1 : 8w0;
            if (hdr.c.a == 1) {
                w_t w;
                w.setValid();
                w.w = 0x1234;
                hdr.u.b = w;
            }
            hdr.c.r2 = hdr.u.a.isValid() ? 8w1 : 8w0;
        } else if (hdr.c.op == 8 || hdr.c.op == 9) {  /* varbit */
            vl_t copy = hdr.vl;
            hdr.c.r1 = (bit<8>) (hdr.vl.x ++ hdr.vl.y);
            hdr.c.r2 = (copy.v == hdr.vl.v && copy == hdr.vl) ? 8w1 : 8w0;
            if (sm.parser_error == error.HeaderTooShort) {
                hdr.c.r3 = 1;
            } else if (sm.parser_error == error.ParserInvalidArgument) {
                hdr.c.r3 = 2;
            }
            hdr.c.r4 = hdr.vl.isValid() ? 8w1 : 8w0;
        } else if (hdr.c.op == 10) {    /* a checksum over a varbit uses its current length */
            bit<16> h;
            hash(h, HashAlgorithm.csum16, 16w0, { hdr.vl.x, hdr.vl.v, hdr.vl.y }, 32w65536);
            hdr.c.r1 = h[15:8];
            hdr.c.r2 = h[7:0];
        } else if (hdr.c.op == 11) {    /* a signed stack index; negative is out of bounds */
            v_t[2] st;
            int<8> k = (int<8>) hdr.c.a;
            st[0].setValid();
            st[1].setValid();
            st[k].v = 9;
            hdr.c.r1 = st[0].v;
            hdr.c.r2 = st[1].v;
            hdr.c.r3 = st[k].isValid() ? 8w1 : 8w0;
        } else if (hdr.c.op == 12) {
            hdr.c.r1 = no_actions.apply().hit ? 8w1 : 8w2;
        } else if (hdr.c.op == 13) {    /* default parameter values */
            with_default_arg.apply();
            addv(2);
            hdr.c.r2 = hdr.c.r1;
            addv(1);                    /* a direct call: vb takes its default (BMv2 applies a
                                           table at most once per path, so not the table again) */
            hdr.c.r3 = plus(1);
        } else if (hdr.c.op == 14) {    /* '_' for an out argument */
            hdr.c.r1 = two_outs(_, hdr.c.r2);
        } else if (hdr.c.op == 15) {
            hdr.c.r1 = meta.la_hi;
            hdr.c.r2 = meta.la_next;
            hdr.c.r3 = (sm.parser_error == error.PacketTooShort) ? 8w1 : 8w0;
        } else if (hdr.c.op == 16) {    /* a tuple-typed local */
            tuple<bit<8>, bool> t = { hdr.c.a + 1, hdr.c.a == 4 };
            hdr.c.r1 = t[0];
            hdr.c.r2 = t[1] ? 8w1 : 8w0;
            tuple<bit<8>, bit<8>> z;
            hdr.c.r3 = z[1];
        } else if (hdr.c.op == 17) {    /* control constructor arguments */
            bit<8> x = hdr.c.a;
            by3.apply(x);
            hdr.c.r1 = x;
            x = hdr.c.a;
            by4.apply(x);
            hdr.c.r2 = x;
        } else if (hdr.c.op == 18) {    /* sub-parser instantiation and apply */
            hdr.c.r1 = meta.la_next;
            hdr.c.r2 = meta.la_hi;
            hdr.c.r3 = hdr.sp1.v;
            hdr.c.r4 = hdr.sp2.v;
        } else if (hdr.c.op == 19 || hdr.c.op == 20) {  /* direct application of a control type */
            bit<8> y = hdr.c.a;
            Double.apply(y);
            Double.apply(y);
            hdr.c.r1 = y;
            hdr.c.r2 = hdr.sp2.isValid() ? hdr.sp2.v : 8w0;
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.c);
        packet.emit(hdr.u);
        packet.emit(hdr.vl);
        packet.emit(hdr.sp1);
        packet.emit(hdr.sp2);
    }
}

V1Switch(P(), V(), I(), E(), C(), D()) main;
