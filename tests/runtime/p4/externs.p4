/*
 * externs.p4 -- exercises one v1model extern per packet, chosen by ctl.op.
 *
 * Packet = ctl header, data header (nine bytes, "123456789" for the CRC check values), payload.
 * Ingress runs the operation and forwards to port 1 (unless the operation drops); egress records
 * instance_type and egress_rid so clones, resubmits, recirculations and replicas can be told apart.
 */
#include <core.p4>
#include <v1model.p4>

header ctl_t {
    bit<8>  op;
    bit<32> idx;
    bit<32> val;
    bit<32> res;
    bit<16> res16;
    bit<8>  color;
    bit<8>  inst;
    bit<16> rid;
}

header data_t {
    bit<8> b0; bit<8> b1; bit<8> b2; bit<8> b3; bit<8> b4;
    bit<8> b5; bit<8> b6; bit<8> b7; bit<8> b8;
}

struct headers { ctl_t c; data_t d; }

struct metadata {
    @field_list(1)
    bit<8> keep;
    bit<8> lose;
    bit<8> e2e;
    bit<8> recirc;
}

struct learn_t {
    bit<32> idx;
    bit<8>  op;
}

parser P(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        packet.extract(hdr.c);
        packet.extract(hdr.d);
        transition accept;
    }
}

control V(inout headers hdr, inout metadata meta) {
    apply {
        verify_checksum_with_payload(hdr.c.op == 27, { hdr.c.idx }, hdr.c.res16, HashAlgorithm.csum16);
        verify_checksum(hdr.c.op == 28, { hdr.d.b0, hdr.d.b1 }, hdr.c.res16, HashAlgorithm.csum16);
    }
}

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    register<bit<32>>(8) reg;
    counter(4, CounterType.packets_and_bytes) cnt;
    meter(4, MeterType.packets) mtr;
    meter(4, MeterType.bytes) bmtr;

    apply {
        sm.egress_spec = 1;
        if (hdr.c.op == 1) {
            reg.write(hdr.c.idx, hdr.c.val);
        } else if (hdr.c.op == 2) {
            reg.read(hdr.c.res, hdr.c.idx);
        } else if (hdr.c.op == 3) {
            cnt.count(hdr.c.idx);
        } else if (hdr.c.op == 4) {
            mtr.execute_meter(hdr.c.idx, hdr.c.color);
        } else if (hdr.c.op == 5) {
            hash(hdr.c.res16, HashAlgorithm.crc16, (bit<16>) 0,
                 { hdr.d.b0, hdr.d.b1, hdr.d.b2, hdr.d.b3, hdr.d.b4, hdr.d.b5, hdr.d.b6, hdr.d.b7, hdr.d.b8 },
                 (bit<32>) 65536);
        } else if (hdr.c.op == 6) {
            hash(hdr.c.res, HashAlgorithm.crc32, (bit<32>) 0,
                 { hdr.d.b0, hdr.d.b1, hdr.d.b2, hdr.d.b3, hdr.d.b4, hdr.d.b5, hdr.d.b6, hdr.d.b7, hdr.d.b8 },
                 (bit<64>) 4294967296);
        } else if (hdr.c.op == 7) {
            hash(hdr.c.res16, HashAlgorithm.crc16, (bit<16>) hdr.c.val,
                 { hdr.d.b0, hdr.d.b1, hdr.d.b2, hdr.d.b3, hdr.d.b4, hdr.d.b5, hdr.d.b6, hdr.d.b7, hdr.d.b8 },
                 hdr.c.idx);
        } else if (hdr.c.op == 8) {
            random(hdr.c.res, 10, 20);
        } else if (hdr.c.op == 9) {
            digest<learn_t>(1, { hdr.c.idx, hdr.c.op });
        } else if (hdr.c.op == 10) {
            meta.keep = 7;
            meta.lose = 9;
            clone_preserving_field_list(CloneType.I2E, hdr.c.idx, 1);
        } else if (hdr.c.op == 11) {
            meta.e2e = 1;
        } else if (hdr.c.op == 12) {
            if (sm.instance_type == 0) {
                meta.keep = 5;
                resubmit_preserving_field_list(1);
            } else {
                hdr.c.res = (bit<32>) meta.keep;
            }
        } else if (hdr.c.op == 13) {
            meta.recirc = 1;
        } else if (hdr.c.op == 14) {
            sm.mcast_grp = (bit<16>) hdr.c.idx;
        } else if (hdr.c.op == 15) {
            assert(hdr.c.val == 1);
        } else if (hdr.c.op == 16) {
            log_msg("op16 idx={} val={}", { hdr.c.idx, hdr.c.val });
        } else if (hdr.c.op == 17) {
            truncate(hdr.c.idx);
        } else if (hdr.c.op == 18) {
            hash(hdr.c.res, HashAlgorithm.identity, (bit<32>) 0, { hdr.d.b5, hdr.d.b6, hdr.d.b7, hdr.d.b8 }, (bit<64>) 4294967296);
        } else if (hdr.c.op == 19) {
            hash(hdr.c.res16, HashAlgorithm.csum16, (bit<16>) 0,
                 { hdr.d.b0, hdr.d.b1, hdr.d.b2, hdr.d.b3, hdr.d.b4, hdr.d.b5, hdr.d.b6, hdr.d.b7, hdr.d.b8 },
                 (bit<32>) 65536);
        } else if (hdr.c.op == 20) {
            hash(hdr.c.res16, HashAlgorithm.xor16, (bit<16>) 0,
                 { hdr.d.b0, hdr.d.b1, hdr.d.b2, hdr.d.b3, hdr.d.b4, hdr.d.b5, hdr.d.b6, hdr.d.b7, hdr.d.b8 },
                 (bit<32>) 65536);
        } else if (hdr.c.op == 21) {
            hdr.c.res = 1;
            exit;
        } else if (hdr.c.op == 22) {
            hash(hdr.c.res16, HashAlgorithm.crc16, (bit<16>) 0, { hdr.d.b0[3:0], hdr.d.b1[7:4] }, (bit<32>) 65536);
        } else if (hdr.c.op == 23) {
            mark_to_drop(sm);
        } else if (hdr.c.op == 24) {
            resubmit_preserving_field_list(1);   /* forever: the switch must bound it */
        } else if (hdr.c.op == 25) {
            meta.recirc = 2;
        } else if (hdr.c.op == 31) {
            bmtr.execute_meter(hdr.c.idx, hdr.c.color);
        } else if (hdr.c.op == 27 || hdr.c.op == 28) {
            hdr.c.color = (bit<8>) sm.checksum_error;
        }
        if (hdr.c.op == 21) {
            hdr.c.res = 2;  /* never reached: exit ended the block */
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        hdr.c.inst = (bit<8>) sm.instance_type;
        hdr.c.rid = sm.egress_rid;
        if (sm.instance_type == 1) {
            hdr.c.res = (bit<32>) meta.keep;
            hdr.c.res16 = (bit<16>) meta.lose;
        }
        if (meta.e2e == 1 && sm.instance_type == 0) {
            clone(CloneType.E2E, hdr.c.idx);
        }
        if (hdr.c.op == 25) {
            recirculate_preserving_field_list(1);   /* forever: the switch must bound it */
        }
        if (hdr.c.op == 30) {
            mark_to_drop(sm);   /* a drop decided in egress */
        }
        if (meta.recirc == 1 && sm.instance_type == 0) {
            hdr.c.val = 77;
            recirculate_preserving_field_list(1);
        }
    }
}

control C(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum_with_payload(hdr.c.op == 26, { hdr.c.idx }, hdr.c.res16, HashAlgorithm.csum16);
        update_checksum(hdr.c.op == 29, { hdr.d.b0, hdr.d.b1 }, hdr.c.res16, HashAlgorithm.csum16);
    }
}

control D(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.c);
        packet.emit(hdr.d);
    }
}

V1Switch(P(), V(), I(), E(), C(), D()) main;
