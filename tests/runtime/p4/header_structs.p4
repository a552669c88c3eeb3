/*
 * header_structs.p4 -- struct-typed fields inside headers (P4_16: a header field may be a struct
 * of bit<W>/int<W>/bool/serializable-enum fields, nested), lookahead of typedef'd types, and
 * literals given a type too narrow for them; one case per ctl.op.
 *
 * Packet = ctl header (op, a, then four result bytes), then (except op 7's lookahead case,
 * which reads it first) an sh_t header.  The ingress writes r1..r4 and forwards to port 1.
 */
#include <core.p4>
#include <v1model.p4>

typedef bit<16> word_t;

enum bit<4> kind_t { A = 1, B = 2 }

struct inner_t {
    bit<3> p;
    bool   q;
    bit<4> r;
}

struct pair_t {
    bit<4>  hi;
    inner_t mid;     /* a struct inside a struct inside a header */
    bit<4>  lo;
}

struct tag_t {
    kind_t k;
    bit<4> v;
}

header ctl_t {
    bit<8> op;
    bit<8> a;
    bit<8> r1;
    bit<8> r2;
    bit<8> r3;
    bit<8> r4;
}

/* On the wire (32 bits, first field first): x(8) s.hi(4) s.mid.p(3) s.mid.q(1) s.mid.r(4)
 * s.lo(4) t.k(4) t.v(4). */
header sh_t {
    bit<8> x;
    pair_t s;
    tag_t  t;
}

/* For lookahead: typedefs of a bit type, of a header, of a struct, and of a header with a
 * struct field (p4c's ExpandLookahead reads the leaves as slices of one bit<W>). */
header w_t { word_t w; }
header ph_t {
    bit<8> x;
    pair_t s;
}
typedef w_t    w_alias_t;
typedef pair_t pair_alias_t;
typedef ph_t   ph_alias_t;

/* A controller header with a struct field: P4Info lists its leaves (p4c's FlattenHeader). */
struct cpu_info_t {
    bit<7>  pad;
    bit<16> reason;
}
@controller_header("packet_in")
header packet_in_t {
    bit<9>     ingress_port;
    cpu_info_t info;
}

header ck_t { bit<16> sum; }

struct headers {
    packet_in_t cpu;
    ctl_t       c;
    sh_t        sh;
    ck_t        ck;
}

struct metadata {
    word_t w;
    bit<16> hw;
    bit<8> p_mid_r;
    bit<8> ph_lo;
    bit<8> t_k;
}

parser P(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.c);
        transition select(hdr.c.op) {
            7: parse_look;
            default: parse_sh;
        }
    }
    state parse_look {
        word_t w = packet.lookahead<word_t>();
        w_alias_t h = packet.lookahead<w_alias_t>();
        pair_alias_t p = packet.lookahead<pair_alias_t>();
        ph_alias_t ph = packet.lookahead<ph_alias_t>();
        sh_t sh = packet.lookahead<sh_t>();     /* a serializable enum leaf too */
        meta.w = w;
        meta.hw = h.w;
        meta.p_mid_r = (bit<8>) p.mid.r;
        meta.ph_lo = (bit<8>) ph.s.lo;
        meta.t_k = (bit<8>) (bit<4>) sh.t.k;
        transition parse_sh;
    }
    state parse_sh {
        packet.extract(hdr.sh);
        transition accept;
    }
}

control V(inout headers hdr, inout metadata meta) { apply { } }

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.c.op == 1) {            /* member reads */
            hdr.c.r1 = (bit<8>) hdr.sh.s.mid.r;
            hdr.c.r2 = hdr.sh.s.mid.q ? 8w1 : 8w0;
            hdr.c.r3 = (bit<8>) (bit<4>) hdr.sh.t.k;
            hdr.c.r4 = hdr.sh.s.hi ++ hdr.sh.s.lo;
        } else if (hdr.c.op == 2) {     /* member writes */
            hdr.sh.s.mid.p = 5;
            hdr.sh.s.mid.q = true;
            hdr.sh.t.k = kind_t.B;
            hdr.sh.s.lo = hdr.sh.s.lo + 1;
        } else if (hdr.c.op == 3) {     /* whole-struct assignment from initialisers */
            hdr.sh.s = { hi = 1, mid = { p = 2, q = false, r = 3 }, lo = 4 };
            hdr.sh.t = { kind_t.A, hdr.c.a[3:0] };
        } else if (hdr.c.op == 4) {     /* assignment from another struct copies the value */
            pair_t tmp = hdr.sh.s;
            hdr.sh.s.lo = 0;
            hdr.c.r1 = (bit<8>) tmp.lo;
            sh_t copy = hdr.sh;
            copy.s.hi = 0xF;
            hdr.c.r2 = (bit<8>) hdr.sh.s.hi;
            tmp.mid.r = 9;
            hdr.sh.s = tmp;
        } else if (hdr.c.op == 5) {     /* equality of structs and of headers with structs */
            pair_t q = hdr.sh.s;
            hdr.c.r1 = (q == hdr.sh.s) ? 8w1 : 8w0;
            q.mid.r = q.mid.r + 1;
            hdr.c.r2 = (q == hdr.sh.s) ? 8w1 : 8w0;
            sh_t c = hdr.sh;
            hdr.c.r3 = (c == hdr.sh) ? 8w1 : 8w0;
            c.s.mid.q = !c.s.mid.q;
            hdr.c.r4 = (c == hdr.sh) ? 8w1 : 8w0;
        } else if (hdr.c.op == 6) {     /* hash data: a leaf of a struct; the whole header */
            bit<16> h1;
            bit<16> h2;
            hash(h1, HashAlgorithm.crc16, 16w0, { hdr.sh.x, hdr.sh.s.mid.r }, 32w65536);
            hash(h2, HashAlgorithm.crc16, 16w0, { hdr.sh }, 32w65536);
            hdr.c.r1 = h1[15:8];
            hdr.c.r2 = h1[7:0];
            hdr.c.r3 = h2[15:8];
            hdr.c.r4 = h2[7:0];
        } else if (hdr.c.op == 7) {     /* lookahead of typedef'd types */
            hdr.c.r1 = meta.w[15:8] ^ meta.hw[7:0];
            hdr.c.r2 = meta.p_mid_r;
            hdr.c.r3 = meta.ph_lo;
            hdr.c.r4 = (meta.w == meta.hw) ? meta.t_k : 8w0xFF;
        } else if (hdr.c.op == 8) {     /* setInvalid keeps the struct usable */
            hdr.sh.setInvalid();
            hdr.sh.setValid();
            hdr.sh.s.hi = 3;
            hdr.c.r1 = (bit<8>) hdr.sh.s.hi;
        } else if (hdr.c.op == 9) {     /* literals too wide for their type: warning, low bits */
            bit<1> one = 4;
            int<4> s = 9;
            bit<8> m = -1;
            hdr.c.r1 = (bit<8>) one;
            hdr.c.r2 = hdr.c.a + 300;
            hdr.c.r3 = (bit<8>) (bit<4>) s;
            hdr.c.r4 = m;
        } else if (hdr.c.op == 10) {    /* checksum data (below) */
            hdr.ck.setValid();
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }

control C(inout headers hdr, inout metadata meta) {
    apply {
        /* a checksum over a header with struct fields: the same leaves as on the wire (a whole
         * header in the list; BMv2 takes a header's fields, p4c's FlattenHeaders flattened) */
        update_checksum(hdr.ck.isValid(), { hdr.sh }, hdr.ck.sum, HashAlgorithm.csum16);
    }
}

control D(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.cpu);
        packet.emit(hdr.c);
        packet.emit(hdr.sh);
        packet.emit(hdr.ck);
    }
}

V1Switch(P(), V(), I(), E(), C(), D()) main;
