/*
 * p4sim's built-in view of the v1model architecture (BMv2 simple_switch).
 *
 * `#include <v1model.p4>` resolves to this file.  The declarations follow
 * the documented v1model API: the same names, field widths, parameter
 * directions and argument order, so programs written for p4c compile here
 * unchanged.  The default API version is the untyped-index one
 * (V1MODEL_VERSION 20180101); programs may test the macro as with p4c.
 */
#ifndef _V1_MODEL_P4_
#define _V1_MODEL_P4_

#include "core.p4"

#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20180101
#endif

const bit<32> __v1model_version = V1MODEL_VERSION;

/* Extra match kinds of v1model (selector needs action selectors: rejected). */
match_kind {
    range,
    optional,
    selector
}

/* Per-packet intrinsic metadata, with BMv2's widths.  Times are in us. */
@metadata @name("standard_metadata")
struct standard_metadata_t {
    bit<9>  ingress_port;
    bit<9>  egress_spec;
    bit<9>  egress_port;
    bit<32> instance_type;
    bit<32> packet_length;
    bit<32> enq_timestamp;
    bit<19> enq_qdepth;
    bit<32> deq_timedelta;
    bit<19> deq_qdepth;
    bit<48> ingress_global_timestamp;
    bit<48> egress_global_timestamp;
    bit<16> mcast_grp;
    bit<16> egress_rid;
    bit<1>  checksum_error;
    error   parser_error;
    bit<3>  priority;
}

enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

enum MeterType {
    packets,
    bytes
}

/* Order matters: it is the encoding BMv2 and the runtime agree on. */
enum HashAlgorithm {
    crc32,
    crc32_custom,
    crc16,
    crc16_custom,
    random,
    identity,
    csum16,
    xor16
}

enum CloneType {
    I2E,
    E2E
}

/* An array of packet/byte counters indexed by the program. */
extern counter {
    counter(bit<32> size, CounterType type);
    void count(in bit<32> index);
}

/* One counter per entry of the table that names it in `counters = ...`. */
extern direct_counter {
    direct_counter(CounterType type);
    void count();
}

/* An array of two-rate three-colour meters (colour GREEN 0, YELLOW 1, RED 2). */
extern meter {
    meter(bit<32> size, MeterType type);
    void execute_meter<V1MeterColorT>(in bit<32> index, out V1MeterColorT result);
}

/* One meter per entry of the table that names it in `meters = ...`. */
extern direct_meter<V1DirectColorT> {
    direct_meter(MeterType type);
    void read(out V1DirectColorT result);
}

/* An array of values kept across packets. */
extern register<V1RegValueT> {
    register(bit<32> size);
    void read(out V1RegValueT result, in bit<32> index);
    void write(in bit<32> index, in V1RegValueT value);
}

/* Declared so that programs using them get a clear "unsupported" error. */
extern action_profile {
    action_profile(bit<32> size);
}

extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

/* result = a uniformly random value in [lo, hi]. */
extern void random<V1RandT>(out V1RandT result, in V1RandT lo, in V1RandT hi);

/* Send `data` to the control plane (receiver 1 is the P4Runtime client). */
extern void digest<V1DigestT>(in bit<32> receiver, in V1DigestT data);

/* egress_spec := drop port, mcast_grp := 0. */
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

/* result = base + (hash(data) mod max), or base when max is 0. */
extern void hash<V1HashOutT, V1HashBaseT, V1HashDataT, V1HashMaxT>(
    out V1HashOutT result, in HashAlgorithm algo, in V1HashBaseT base,
    in V1HashDataT data, in V1HashMaxT max);

/* Checksums over the fields in `data`; verify sets checksum_error on mismatch. */
extern void verify_checksum<V1VcDataT, V1VcSumT>(in bool condition, in V1VcDataT data,
    in V1VcSumT checksum, HashAlgorithm algo);
extern void update_checksum<V1UcDataT, V1UcSumT>(in bool condition, in V1UcDataT data,
    inout V1UcSumT checksum, HashAlgorithm algo);
extern void verify_checksum_with_payload<V1VpDataT, V1VpSumT>(in bool condition,
    in V1VpDataT data, in V1VpSumT checksum, HashAlgorithm algo);
extern void update_checksum_with_payload<V1UpDataT, V1UpSumT>(in bool condition,
    in V1UpDataT data, inout V1UpSumT checksum, HashAlgorithm algo);

/* Packet replication and re-injection. */
extern void resubmit<V1ResubT>(in V1ResubT data);
extern void resubmit_preserving_field_list(bit<8> index);
extern void recirculate<V1RecircT>(in V1RecircT data);
extern void recirculate_preserving_field_list(bit<8> index);
extern void clone(in CloneType type, in bit<32> session);
extern void clone3<V1CloneT>(in CloneType type, in bit<32> session, in V1CloneT data);
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);

/* Keep only the first `length` bytes of the packet on output. */
extern void truncate(in bit<32> length);

extern void assert(in bool check);
extern void assume(in bool check);

/* Print to the switch log; `{}` in msg is replaced by the fields of data. */
extern void log_msg(string msg);
extern void log_msg<V1LogT>(string msg, in V1LogT data);

/* The six programmable blocks of the v1model pipeline. */
parser Parser<V1HdrsT, V1MetaT>(packet_in b,
                                out V1HdrsT parsedHdr,
                                inout V1MetaT meta,
                                inout standard_metadata_t standard_metadata);

control VerifyChecksum<V1HdrsT, V1MetaT>(inout V1HdrsT hdr, inout V1MetaT meta);

control Ingress<V1HdrsT, V1MetaT>(inout V1HdrsT hdr,
                                  inout V1MetaT meta,
                                  inout standard_metadata_t standard_metadata);

control Egress<V1HdrsT, V1MetaT>(inout V1HdrsT hdr,
                                 inout V1MetaT meta,
                                 inout standard_metadata_t standard_metadata);

control ComputeChecksum<V1HdrsT, V1MetaT>(inout V1HdrsT hdr, inout V1MetaT meta);

control Deparser<V1HdrsT>(packet_out b, in V1HdrsT hdr);

package V1Switch<V1HdrsT, V1MetaT>(Parser<V1HdrsT, V1MetaT> p,
                                   VerifyChecksum<V1HdrsT, V1MetaT> vr,
                                   Ingress<V1HdrsT, V1MetaT> ig,
                                   Egress<V1HdrsT, V1MetaT> eg,
                                   ComputeChecksum<V1HdrsT, V1MetaT> ck,
                                   Deparser<V1HdrsT> dep);

#endif  /* _V1_MODEL_P4_ */
