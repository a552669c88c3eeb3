/*
 * Exercises many constructs of p4sim's subset at once (front-end test input).
 * Valid P4_16 for p4c-bm2-ss --arch v1model.
 */
#include <core.p4>
#include <v1model.p4>

#define PORT_CPU 255
#define TABLE_SIZE(n) ((n) * 2)

const bit<16> TYPE_IPV4 = 0x0800;
const bit<16> TYPE_VLAN = 0x8100;
const bool DEBUG = false;

typedef bit<9> port_t;
enum Color { Red, Green, Blue }
enum bit<2> Level { Low = 0, Mid = 1, High = 3 }

header ethernet_t { bit<48> dst; bit<48> src; bit<16> type; }
header vlan_t { bit<3> pcp; bit<1> cfi; bit<12> vid; bit<16> type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<6> dscp; bit<2> ecn; bit<16> len;
    bit<16> id; bit<3> flags; bit<13> frag; bit<8> ttl; bit<8> proto;
    bit<16> csum; bit<32> src; bit<32> dst;
}
@controller_header("packet_in")
header cpu_in_t { port_t ingress_port; bit<7> pad; }

struct headers_t {
    cpu_in_t cpu_in;
    ethernet_t eth;
    vlan_t[2] vlans;
    ipv4_t ipv4;
}

struct inner_t { bit<8> depth; Color color; }
struct meta_t {
    inner_t inner;
    bit<32> hash;
    bit<8> idx;
    int<16> delta;
    Level level;
    error err;
    @field_list(1) bit<16> keep;
}

struct learn_t { bit<48> src; port_t port; }

register<bit<32>>(TABLE_SIZE(32)) flow_bytes;

bit<32> clamp32(in bit<32> v, in bit<32> hi) {
    return v > hi ? hi : v;
}

parser FParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
               inout standard_metadata_t sm) {
    bit<8> vlans_seen = 0;
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) {
            TYPE_VLAN: parse_vlan;
            TYPE_IPV4 &&& 0xFFFF: parse_ipv4;
            default: accept;
        }
    }
    state parse_vlan {
        pkt.extract(hdr.vlans.next);
        vlans_seen = vlans_seen + 1;
        transition select(hdr.vlans.last.type, vlans_seen) {
            (TYPE_VLAN, 1): parse_vlan;
            (TYPE_IPV4, _): parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        verify(hdr.ipv4.version == 4, error.HeaderTooShort);
        transition select(hdr.ipv4.ihl) {
            0 .. 4: reject;
            5: accept;
            default: skip_options;
        }
    }
    state skip_options {
        pkt.advance(((bit<32>) hdr.ipv4.ihl - 5) * 32);
        transition accept;
    }
}

control FVerify(inout headers_t hdr, inout meta_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.len,
              hdr.ipv4.id, hdr.ipv4.flags, hdr.ipv4.frag, hdr.ipv4.ttl, hdr.ipv4.proto,
              hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.csum, HashAlgorithm.csum16);
    }
}

control Mark(inout ipv4_t ip, in Level level) {
    apply {
        if (level == Level.High && ip.ecn != 0) {
            ip.ecn = 3;
        }
    }
}

control Classify(inout headers_t hdr, inout meta_t meta, in standard_metadata_t sm) {
    Mark() mark;
    action set_level(Level l) { meta.level = l; }
    table by_dscp {
        key = { hdr.ipv4.dscp : exact; }
        actions = { set_level; NoAction; }
        default_action = NoAction();
    }
    apply {
        by_dscp.apply();
        mark.apply(hdr.ipv4, meta.level);
    }
}

control FIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    counter(64, CounterType.packets_and_bytes) port_counter;
    meter(8, MeterType.bytes) port_meter;
    direct_counter(CounterType.packets) acl_hits;
    Classify() classify;
    bit<2> color = 0;

    action drop() { mark_to_drop(sm); exit; }
    action forward(port_t port) { sm.egress_spec = port; }
    action to_cpu() {
        sm.egress_spec = PORT_CPU;
        hdr.cpu_in.setValid();
        hdr.cpu_in.ingress_port = sm.ingress_port;
        hdr.cpu_in.pad = 0;
    }
    action learn() {
        digest<learn_t>(1, { hdr.eth.src, sm.ingress_port });
    }

    table acl {
        key = {
            sm.ingress_port : ternary;
            hdr.eth.type : ternary @name("ether_type");
            hdr.ipv4.dst : lpm;
            hdr.ipv4.isValid() : exact;
        }
        actions = { forward; drop; to_cpu; @defaultonly NoAction; }
        const default_action = NoAction();
        counters = acl_hits;
        size = TABLE_SIZE(512);
        const entries = {
            (_, 0x0806 &&& 0xFFFF, _, false) : to_cpu();
            (9w1 &&& 9w0x1FF, _, 32w0x0A000000 &&& 32w0xFF000000, true) : forward(2);
        }
    }
    table l2 {
        key = { hdr.eth.dst : exact; }
        actions = { forward; learn; }
        default_action = learn();
    }

    apply {
        if (DEBUG) {
            log_msg("never");
        }
        port_counter.count((bit<32>) sm.ingress_port);
        port_meter.execute_meter((bit<32>) sm.ingress_port, color);
        if (color == 2) {
            drop();
        }
        switch (acl.apply().action_run) {
            forward: { }
            to_cpu: { return; }
            default: {
                if (!l2.apply().hit) {
                    meta.inner.depth = meta.inner.depth |+| 1;
                }
            }
        }
        hash(meta.hash, HashAlgorithm.crc32, 32w0,
             { hdr.ipv4.src, hdr.ipv4.dst, hdr.ipv4.proto }, 32w65536);
        bit<32> bytes;
        flow_bytes.read(bytes, meta.hash & 63);
        flow_bytes.write(meta.hash & 63, clamp32(bytes + sm.packet_length, 1 << 30));
        meta.delta = (int<16>) ((bit<16>) meta.idx) - 16s100;
        if (meta.delta < 0) {
            meta.idx = 0;
        }
        meta.inner.color = Color.Blue;
        switch (meta.inner.color) {
            Color.Red: { meta.idx = 1; }
            Color.Green:
            Color.Blue: { meta.idx = 2; }
        }
        hdr.ipv4.dscp[5:3] = 3w5;
        hdr.vlans[0].vid = hdr.vlans[meta.idx[0:0]].vid;
        meta.err = sm.parser_error;
        classify.apply(hdr, meta, sm);
        if (sm.priority > 3w1) {
            clone_preserving_field_list(CloneType.I2E, 32w7, 1);
        }
        random(meta.idx, 0, 7);
    }
}

control FEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 1) {
            truncate(64);
        }
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
}

control FCompute(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.len,
              hdr.ipv4.id, hdr.ipv4.flags, hdr.ipv4.frag, hdr.ipv4.ttl, hdr.ipv4.proto,
              hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.csum, HashAlgorithm.csum16);
    }
}

control FDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.cpu_in);
        pkt.emit(hdr.eth);
        pkt.emit(hdr.vlans);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(FParser(), FVerify(), FIngress(), FEgress(), FCompute(), FDeparser()) main;
