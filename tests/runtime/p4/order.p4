/*
 * order.p4 -- P4_16 evaluation-order, short-circuit and copy-in/copy-out rules, one per ctl.op.
 *
 * Packet = ctl header (op, a, then four result bytes); the ingress writes r1..r4 and forwards
 * the packet to port 1.  Each rule's expected result is what the P4_16 specification (and BMv2,
 * through p4c's side-effect ordering and copy-in/copy-out passes) gives.
 */
#include <core.p4>
#include <v1model.p4>

header ctl_t {
    bit<8> op;
    bit<8> a;
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
    bit<8> r4;
}

header v_t { bit<8> v; }

struct headers { ctl_t c; }
struct pair_t { bit<8> x; bit<8> y; }
struct metadata { bit<8> unused; }

/* Changes its argument and returns a constant: shows whether the caller read x before or after. */
bit<8> bump(inout bit<8> x) {
    x = x + 1;
    return 0;
}

bool bump_true(inout bit<8> x) {
    x = x + 1;
    return true;
}

bit<8> set_index(inout bit<32> i) {
    i = 1;
    return 9;
}

bit<8> first(in bit<8> p, in bit<8> q) {
    return p;
}

bit<8> add_ten(inout bit<8> x) {
    x = x + 10;
    return x;
}

bit<8> sub_one(inout bit<8> x) {
    x = x - 1;
    return x;
}

bool return_true_out(out v_t dummy) {
    return true;
}

parser P(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.c);
        transition accept;
    }
}

control V(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    /* Writes the caller's header directly after changing its own copy: on return the copy
     * (x) is written back over the direct write, and the direct write is not seen through x. */
    action by_value(inout ctl_t x) {
        x.r1 = 5;
        hdr.c.r2 = 9;
        x.r3 = hdr.c.r1;
    }

    action leave_scalar(inout bit<8> x) {
        x = 42;
        exit;
    }

    action leave_header(inout ctl_t x) {
        x.r2 = 43;
        exit;
    }

    apply {
        sm.egress_spec = 1;
        bit<8> a = hdr.c.a;
        if (hdr.c.op == 1) {            /* a + f(a): a is read before the call changes it */
            hdr.c.r1 = a + bump(a);
            hdr.c.r2 = a;
        } else if (hdr.c.op == 2) {     /* h[i] = f(i): the index is evaluated before the RHS */
            v_t[2] st;
            bit<32> i = 0;
            st[0].setValid();
            st[1].setValid();
            st[i].v = set_index(i);
            hdr.c.r1 = st[0].v;
            hdr.c.r2 = st[1].v;
        } else if (hdr.c.op == 3) {     /* arguments left to right */
            hdr.c.r1 = first(a, bump(a));
            hdr.c.r2 = a;
        } else if (hdr.c.op == 4) {     /* || does not evaluate its right operand when the left is true */
            bool t = (hdr.c.a == 0) || bump_true(a);
            hdr.c.r1 = a;
            hdr.c.r2 = t ? 8w1 : 8w0;
            bool u = true || bump_true(a);
            hdr.c.r3 = a;
        } else if (hdr.c.op == 5) {     /* && does not evaluate its right operand when the left is false */
            bool t = (hdr.c.a != 0) && bump_true(a);
            hdr.c.r1 = a;
            hdr.c.r2 = t ? 8w1 : 8w0;
            bool u = false && bump_true(a);
            hdr.c.r3 = a;
        } else if (hdr.c.op == 6) {     /* ?: evaluates only the chosen branch */
            hdr.c.r1 = (hdr.c.a == 0) ? add_ten(a) : sub_one(a);
            hdr.c.r2 = a;
        } else if (hdr.c.op == 7) {     /* headers are passed by value (copy-in/copy-out) */
            hdr.c.r1 = 1;
            by_value(hdr.c);
        } else if (hdr.c.op == 8) {     /* exit inside an action still copies back inout arguments */
            leave_scalar(hdr.c.r1);
        } else if (hdr.c.op == 9) {
            leave_header(hdr.c);
        } else if (hdr.c.op == 10) {    /* self-assignment of a struct keeps its value */
            pair_t p = { 3, 4 };
            p = p;
            sm = sm;
            hdr.c = hdr.c;
            hdr.c.r1 = p.x;
            hdr.c.r2 = p.y;
        } else if (hdr.c.op == 12) {    /* a function whose only out parameter is a header */
            v_t d;
            d.setValid();
            bool t = (hdr.c.a == 1) || return_true_out(d);
            hdr.c.r1 = t ? 8w1 : 8w0;
            hdr.c.r2 = d.isValid() ? 8w1 : 8w0;
        } else if (hdr.c.op == 11) {    /* a condition's call runs before the branch, once */
            if (a == 0 && bump(a) == 0) {
                hdr.c.r1 = a;
            }
            hdr.c.r2 = a;
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
control C(inout headers hdr, inout metadata meta) { apply { } }
control D(packet_out packet, in headers hdr) { apply { packet.emit(hdr.c); } }

V1Switch(P(), V(), I(), E(), C(), D()) main;
