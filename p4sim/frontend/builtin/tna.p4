/*
 * p4sim's built-in view of the Tofino Native Architecture (TNA).
 *
 * `#include <tna.p4>` resolves to this file.  It is p4sim's own declaration
 * of the part of TNA that p4sim runs, written from the public TNA
 * documentation (Open-Tofino, and the names, field widths and parameter
 * directions of the tna.p4 that ships with the open-source Tofino back end),
 * so a program written for bf-p4c compiles here unchanged.  Where TNA gives a
 * parameter @optional, this file declares the overloads instead (same
 * meaning to a caller).
 *
 * As with bf-p4c, the target is chosen by __TARGET_TOFINO__ (1 = Tofino,
 * 2 = Tofino2; default 1).  With tna.p4 the intrinsic metadata keeps the
 * Tofino-1 layout on either target (only the spec widths change: queue id,
 * mirror type/id, port metadata size); <t2na.p4> gives Tofino2's own layout.
 *
 * Everything declared here is either run by p4sim or refused with
 * file:line:col where the program uses it (see docs/p4sim-subset.md, TNA).
 * Type parameter names are unusual on purpose: p4sim's lexer keeps one
 * program-wide table of type names.
 */
#ifndef _P4SIM_TNA_P4_
#define _P4SIM_TNA_P4_

#include "core.p4"

#ifndef __TARGET_TOFINO__
#define __TARGET_TOFINO__ 1
#endif

#if __TARGET_TOFINO__ != 1 && __TARGET_TOFINO__ != 2
#error p4sim's TNA runs __TARGET_TOFINO__ 1 or 2
#endif

/* Read by p4sim to know the target (1 = Tofino, 2 = Tofino2) and layout. */
const bit<8> __p4sim_tofino_target = __TARGET_TOFINO__;
#ifdef _P4SIM_T2NA_
const bool __p4sim_t2na = true;
#else
const bool __p4sim_t2na = false;
#endif

/* ---- target widths (Tofino: 9-bit ports, 5-bit queues; Tofino2: 7-bit queues) */
#define PORT_ID_WIDTH 9
typedef bit<PORT_ID_WIDTH> PortId_t;
#define MULTICAST_GROUP_ID_WIDTH 16
typedef bit<MULTICAST_GROUP_ID_WIDTH> MulticastGroupId_t;
#if __TARGET_TOFINO__ == 2
#define QUEUE_ID_WIDTH 7
#define MIRROR_TYPE_WIDTH 4
#define MIRROR_ID_WIDTH 8
#else
#define QUEUE_ID_WIDTH 5
#define MIRROR_TYPE_WIDTH 3
#define MIRROR_ID_WIDTH 10
#endif
typedef bit<QUEUE_ID_WIDTH> QueueId_t;
typedef bit<MIRROR_TYPE_WIDTH> MirrorType_t;
typedef bit<MIRROR_ID_WIDTH> MirrorId_t;
#define RESUBMIT_TYPE_WIDTH 3
typedef bit<RESUBMIT_TYPE_WIDTH> ResubmitType_t;
#define DIGEST_TYPE_WIDTH 3
typedef bit<DIGEST_TYPE_WIDTH> DigestType_t;
#define REPLICATION_ID_WIDTH 16
typedef bit<REPLICATION_ID_WIDTH> ReplicationId_t;
#define L1_EXCLUSION_ID_WIDTH 16
typedef bit<L1_EXCLUSION_ID_WIDTH> L1ExclusionId_t;
#define L2_EXCLUSION_ID_WIDTH 9
typedef bit<L2_EXCLUSION_ID_WIDTH> L2ExclusionId_t;
typedef error ParserError_t;

/* Bits of per-port metadata (or resubmit data) that follow the ingress
 * intrinsic metadata at the start of every packet the ingress parser sees. */
#if __TARGET_TOFINO__ == 2
const bit<32> PORT_METADATA_SIZE = 32w192;
#else
const bit<32> PORT_METADATA_SIZE = 32w64;
#endif

#define DEVPORT_PIPE_MASK 0x180
#define DEVPORT_PIPE(port) (port)[8:7]
#define DEVPORT_PORT_MASK 0x7f
#define DEVPORT_PORT(port) (port)[6:0]

/* ---- parser error flags (ig/eg_intr_md_from_prsr.parser_err) */
const bit<16> PARSER_ERROR_OK           = 16w0x0000;
const bit<16> PARSER_ERROR_NO_MATCH     = 16w0x0001;
const bit<16> PARSER_ERROR_PARTIAL_HDR  = 16w0x0002;
const bit<16> PARSER_ERROR_CTR_RANGE    = 16w0x0004;
const bit<16> PARSER_ERROR_TIMEOUT_USER = 16w0x0008;
const bit<16> PARSER_ERROR_TIMEOUT_HW   = 16w0x0010;
const bit<16> PARSER_ERROR_SRC_EXT      = 16w0x0020;
const bit<16> PARSER_ERROR_DST_CONT     = 16w0x0040;
const bit<16> PARSER_ERROR_PHV_OWNER    = 16w0x0080;
const bit<16> PARSER_ERROR_MULTIWRITE   = 16w0x0100;
const bit<16> PARSER_ERROR_ARAM_MBE     = 16w0x0400;
const bit<16> PARSER_ERROR_FCS          = 16w0x0800;

/* ---- enums used by externs */
enum MeterType_t { PACKETS, BYTES }
/* Note RED is 3, not 2, in TNA. */
enum bit<8> MeterColor_t { GREEN = 8w0, YELLOW = 8w1, RED = 8w3 }
enum CounterType_t { PACKETS, BYTES, PACKETS_AND_BYTES }
enum SelectorMode_t { FAIR, RESILIENT }
enum HashAlgorithm_t { IDENTITY, RANDOM, XOR8, XOR16, XOR32, CRC8, CRC16, CRC32, CRC64, CUSTOM }

match_kind { range, selector, atcam_partition_index }

error { CounterRange, Timeout, PhvOwner, MultiWrite, IbufOverflow, IbufUnderflow }

/* ---- intrinsic metadata.  Times are nanoseconds; queue depths are in cells
 * (80 bytes on Tofino, 176 on Tofino2). */

/* Prepended by the hardware to every packet entering the ingress parser
 * (8 bytes), followed by PORT_METADATA_SIZE bits of port metadata or, when
 * resubmit_flag is 1, of resubmit data. */
@__intrinsic_metadata
header ingress_intrinsic_metadata_t {
    bit<1>   resubmit_flag;
    @padding bit<1> _pad1;
    bit<2>   packet_version;
    @padding bit<3> _pad2;
    PortId_t ingress_port;
    bit<48>  ingress_mac_tstamp;     /* ns */
}

/* What ingress tells the traffic manager. */
@__intrinsic_metadata
struct ingress_intrinsic_metadata_for_tm_t {
    PortId_t ucast_egress_port;      /* unicast destination; unset = none */
    bit<1>   bypass_egress;          /* skip the egress pipeline */
    bit<1>   deflect_on_drop;
    bit<3>   ingress_cos;
    QueueId_t qid;                   /* egress queue of the port */
    bit<3>   icos_for_copy_to_cpu;
    bit<1>   copy_to_cpu;
    bit<2>   packet_color;
    bit<1>   disable_ucast_cutthru;
    bit<1>   enable_mcast_cutthru;
    MulticastGroupId_t mcast_grp_a;
    MulticastGroupId_t mcast_grp_b;
    bit<13>  level1_mcast_hash;
    bit<13>  level2_mcast_hash;
    L1ExclusionId_t level1_exclusion_id;
    L2ExclusionId_t level2_exclusion_id;
    bit<16>  rid;
}

@__intrinsic_metadata
struct ingress_intrinsic_metadata_from_parser_t {
    bit<48>  global_tstamp;          /* ns, when the packet entered the parser */
    bit<32>  global_ver;
    bit<16>  parser_err;             /* PARSER_ERROR_* flags */
}

/* drop_ctl bit 0 drops the packet (unicast, multicast and resubmit). */
@__intrinsic_metadata
struct ingress_intrinsic_metadata_for_deparser_t {
    bit<3>   drop_ctl;
    DigestType_t digest_type;
    ResubmitType_t resubmit_type;
    MirrorType_t mirror_type;
#ifdef _P4SIM_T2NA_
    bit<1>   mirror_io_select;
    bit<13>  mirror_hash;
    bit<3>   mirror_ingress_cos;
    bit<1>   mirror_deflect_on_drop;
    bit<1>   mirror_multicast_ctrl;
    PortId_t mirror_egress_port;
    QueueId_t mirror_qid;
    bit<8>   mirror_coalesce_length;
    bit<32>  adv_flow_ctl;
    bit<14>  mtu_trunc_len;
    bit<1>   mtu_trunc_err_f;
    bit<1>   pktgen;
    bit<14>  pktgen_address;
    bit<10>  pktgen_length;
#endif
}

#ifdef _P4SIM_T2NA_
/* Prepended to every packet entering the egress parser (Tofino2 layout:
 * 32-bit enqueue stamp and queue delay). */
@__intrinsic_metadata
header egress_intrinsic_metadata_t {
    @padding bit<7> _pad0;
    PortId_t egress_port;
    @padding bit<5> _pad1;
    bit<19>  enq_qdepth;             /* cells in the queue before this packet */
    @padding bit<6> _pad2;
    bit<2>   enq_congest_stat;
    bit<32>  enq_tstamp;             /* ns */
    @padding bit<5> _pad3;
    bit<19>  deq_qdepth;             /* cells left behind this packet */
    @padding bit<6> _pad4;
    bit<2>   deq_congest_stat;
    bit<8>   app_pool_congest_stat;
    bit<32>  deq_timedelta;          /* ns spent in the queue */
    bit<16>  egress_rid;
    @padding bit<7> _pad5;
    bit<1>   egress_rid_first;
    @padding bit<1> _pad6;
    QueueId_t egress_qid;
    @padding bit<5> _pad7;
    bit<3>   egress_cos;
    @padding bit<7> _pad8;
    bit<1>   deflection_flag;
    bit<16>  pkt_length;
    @padding bit<8> _pad9;
}

/* Written by the traffic manager's queue-depth updates on Tofino2; a ghost
 * thread sees one per update. */
@__intrinsic_metadata @__ghost_metadata
header ghost_intrinsic_metadata_t {
    bit<1>  ping_pong;
    bit<18> qlength;
    bit<11> qid;
    bit<2>  pipe_id;
}
#else
/* Prepended to every packet entering the egress parser. */
@__intrinsic_metadata
header egress_intrinsic_metadata_t {
    @padding bit<7> _pad0;
    PortId_t egress_port;
    @padding bit<5> _pad1;
    bit<19>  enq_qdepth;             /* cells in the queue before this packet */
    @padding bit<6> _pad2;
    bit<2>   enq_congest_stat;
    @padding bit<14> _pad3;
    bit<18>  enq_tstamp;             /* ns, low 18 bits */
    @padding bit<5> _pad4;
    bit<19>  deq_qdepth;             /* cells left behind this packet */
    @padding bit<6> _pad5;
    bit<2>   deq_congest_stat;
    bit<8>   app_pool_congest_stat;
    @padding bit<14> _pad6;
    bit<18>  deq_timedelta;          /* ns spent in the queue */
    bit<16>  egress_rid;
    @padding bit<7> _pad7;
    bit<1>   egress_rid_first;
#if __TARGET_TOFINO__ == 2
    @padding bit<1> _pad8;
#else
    @padding bit<3> _pad8;
#endif
    QueueId_t egress_qid;
    @padding bit<5> _pad9;
    bit<3>   egress_cos;
    @padding bit<7> _pad10;
    bit<1>   deflection_flag;
    bit<16>  pkt_length;             /* bytes, as the packet entered ingress */
}

#endif

@__intrinsic_metadata
struct egress_intrinsic_metadata_from_parser_t {
    bit<48>  global_tstamp;          /* ns */
    bit<32>  global_ver;
    bit<16>  parser_err;
}

@__intrinsic_metadata
struct egress_intrinsic_metadata_for_deparser_t {
    bit<3>   drop_ctl;
    MirrorType_t mirror_type;
    bit<1>   coalesce_flush;
    bit<7>   coalesce_length;
#ifdef _P4SIM_T2NA_
    bit<1>   mirror_io_select;
    bit<13>  mirror_hash;
    bit<3>   mirror_ingress_cos;
    bit<1>   mirror_deflect_on_drop;
    bit<1>   mirror_multicast_ctrl;
    PortId_t mirror_egress_port;
    QueueId_t mirror_qid;
    bit<8>   mirror_coalesce_length;
    bit<32>  adv_flow_ctl;
    bit<14>  mtu_trunc_len;
    bit<1>   mtu_trunc_err_f;
#endif
}

@__intrinsic_metadata
struct egress_intrinsic_metadata_for_output_port_t {
    bit<1>   capture_tstamp_on_tx;
    bit<1>   update_delay_on_tx;
}

/* Packet-generator headers (declared for programs that parse them). */
header pktgen_timer_header_t {
#ifdef _P4SIM_T2NA_
    @padding bit<2> _pad1;
    bit<2>  pipe_id;
    bit<4>  app_id;
#else
    @padding bit<3> _pad1;
    bit<2>  pipe_id;
    bit<3>  app_id;
#endif
    @padding bit<8> _pad2;
    bit<16> batch_id;
    bit<16> packet_id;
}

header pktgen_port_down_header_t {
#ifdef _P4SIM_T2NA_
    @padding bit<2> _pad1;
    bit<2>  pipe_id;
    bit<4>  app_id;          /* Tofino2: 4-bit application ids */
#else
    @padding bit<3> _pad1;
    bit<2>  pipe_id;
    bit<3>  app_id;
#endif
    @padding bit<15> _pad2;
    PortId_t port_num;
    bit<16> packet_id;
}

/* ---- externs */

/* Ones'-complement 16-bit checksum (parser: add/subtract/verify/get;
 * deparser: update). */
extern Checksum {
    Checksum();
    void add<TnaCkAddT>(in TnaCkAddT data);
    void subtract<TnaCkSubT>(in TnaCkSubT data);
    bool verify();
    void subtract_all_and_deposit<TnaCkResT>(out TnaCkResT residual);
    bit<16> get();
    bit<16> update<TnaCkUpdT>(in TnaCkUpdT data);
    bit<16> update<TnaCkUpdZT>(in TnaCkUpdZT data, in bool zeros_as_ones);
}

extern ParserCounter {
    ParserCounter();
    void set<TnaPcT>(in TnaPcT value);
    bool is_zero();
    bool is_negative();
    void increment(in bit<8> value);
    void decrement(in bit<8> value);
}

extern ParserPriority {
    ParserPriority();
    void set(in bit<3> prio);
}

/* A CRC: coefficient (without the top bit unless `extended`), reflected
 * input/output (`reversed`), initial value and final xor. */
extern CRCPolynomial<TnaPolyT> {
    CRCPolynomial(TnaPolyT coeff, bool reversed, bool msb, bool extended, TnaPolyT init, TnaPolyT xor);
}

/* The W low bits of a hash of `data` (fields packed MSB first). */
extern Hash<TnaHashW> {
    Hash(HashAlgorithm_t algo);
    Hash(HashAlgorithm_t algo, CRCPolynomial<_> poly);
    TnaHashW get<TnaHashD>(in TnaHashD data);
}

extern Random<TnaRandW> {
    Random();
    TnaRandW get();
}

extern TnaMinT max<TnaMinT>(in TnaMinT t1, in TnaMinT t2);
extern TnaMaxT min<TnaMaxT>(in TnaMaxT t1, in TnaMaxT t2);
extern void funnel_shift_right<TnaFsT>(inout TnaFsT dst, in TnaFsT src1, in TnaFsT src2, int shift_amount);
extern void invalidate<TnaInvT>(in TnaInvT field);
extern bool is_validated<TnaIsvT>(in TnaIsvT field);
/* In the ingress parser: the port metadata of the ingress port. */
extern TnaPmT port_metadata_unpack<TnaPmT>(packet_in pkt);
extern bit<32> sizeInBits<TnaSzbH>(in TnaSzbH h);
extern bit<32> sizeInBytes<TnaSzBH>(in TnaSzBH h);

extern Counter<TnaCntW, TnaCntI> {
    Counter(bit<32> size, CounterType_t type);
    void count(in TnaCntI index);
    void count(in TnaCntI index, in bit<32> adjust_byte_count);
}

/* Counts when an action of its table calls count(). */
extern DirectCounter<TnaDcW> {
    DirectCounter(CounterType_t type);
    void count();
    void count(in bit<32> adjust_byte_count);
}

/* Two-rate three-colour meters; execute returns a MeterColor_t value. */
extern Meter<TnaMtrI> {
    Meter(bit<32> size, MeterType_t type);
    Meter(bit<32> size, MeterType_t type, bit<8> red, bit<8> yellow, bit<8> green);
    bit<8> execute(in TnaMtrI index);
    bit<8> execute(in TnaMtrI index, in MeterColor_t color);
    bit<8> execute(in TnaMtrI index, in MeterColor_t color, in bit<32> adjust_byte_count);
}

extern DirectMeter {
    DirectMeter(MeterType_t type);
    DirectMeter(MeterType_t type, bit<8> red, bit<8> yellow, bit<8> green);
    bit<8> execute();
    bit<8> execute(in MeterColor_t color);
    bit<8> execute(in MeterColor_t color, in bit<32> adjust_byte_count);
}

extern Lpf<TnaLpfT, TnaLpfI> {
    Lpf(bit<32> size);
    TnaLpfT execute(in TnaLpfT val, in TnaLpfI index);
}

extern DirectLpf<TnaDlpfT> {
    DirectLpf();
    TnaDlpfT execute(in TnaDlpfT val);
}

extern Wred<TnaWredT, TnaWredI> {
    Wred(bit<32> size, bit<8> drop_value, bit<8> no_drop_value);
    bit<8> execute(in TnaWredT val, in TnaWredI index);
}

extern DirectWred<TnaDwredT> {
    DirectWred(bit<8> drop_value, bit<8> no_drop_value);
    bit<8> execute(in TnaDwredT val);
}

/* Stateful memory of one gress: touched by at most one access per packet. */
extern Register<TnaRegT, TnaRegI> {
    Register(bit<32> size);
    Register(bit<32> size, TnaRegT initial_value);
    TnaRegT read(in TnaRegI index);
    TnaRegT write(in TnaRegI index, in TnaRegT value);
}

extern DirectRegister<TnaDregT> {
    DirectRegister();
    DirectRegister(TnaDregT initial_value);
    TnaDregT read();
    TnaDregT write(in TnaDregT value);
}

extern RegisterParam<TnaRpT> {
    RegisterParam(TnaRpT initial_value);
    TnaRpT read();
}

/* One read-modify-write of a Register cell: execute(index) reads the cell
 * into `value`, runs apply, writes `value` back and returns `rv`. */
extern RegisterAction<TnaRaT, TnaRaI, TnaRaU> {
    RegisterAction(Register<_, _> reg);
    TnaRaU execute(in TnaRaI index);
    TnaRaU execute_log();
    abstract void apply(inout TnaRaT value, out TnaRaU rv);
    TnaRaU predicate();
}

extern DirectRegisterAction<TnaDraT, TnaDraU> {
    DirectRegisterAction(DirectRegister<TnaDraT> reg);
    TnaDraU execute();
    abstract void apply(inout TnaDraT value, out TnaDraU rv);
    TnaDraU predicate();
}

extern ActionProfile {
    ActionProfile(bit<32> size);
}

extern ActionSelector {
    ActionSelector(ActionProfile action_profile, Hash<_> hash, SelectorMode_t mode,
                   bit<32> max_group_size, bit<32> num_groups);
    ActionSelector(ActionProfile action_profile, Hash<_> hash, SelectorMode_t mode,
                   Register<bit<1>, _> reg, bit<32> max_group_size, bit<32> num_groups);
}

/* In a deparser: copy the packet to a mirror session, `hdr` in front. */
extern Mirror {
    Mirror();
    Mirror(MirrorType_t mirror_type);
    void emit(in MirrorId_t session_id);
    void emit<TnaMirT>(in MirrorId_t session_id, in TnaMirT hdr);
}

/* In the ingress deparser: run ingress again with `hdr` as the port metadata. */
extern Resubmit {
    Resubmit();
    Resubmit(ResubmitType_t resubmit_type);
    void emit();
    void emit<TnaResT>(in TnaResT hdr);
}

/* In the ingress deparser: a learn message to the control plane. */
extern Digest<TnaDigT> {
    Digest();
    Digest(DigestType_t digest_type);
    void pack(in TnaDigT data);
}

/* ---- the six blocks of one pipe and the packages */
parser IngressParserT<TnaIH, TnaIM>(
    packet_in pkt,
    out TnaIH hdr,
    out TnaIM ig_md,
    @optional out ingress_intrinsic_metadata_t ig_intr_md,
    @optional out ingress_intrinsic_metadata_for_tm_t ig_intr_md_for_tm,
    @optional out ingress_intrinsic_metadata_from_parser_t ig_intr_md_from_prsr);

parser EgressParserT<TnaEH, TnaEM>(
    packet_in pkt,
    out TnaEH hdr,
    out TnaEM eg_md,
    @optional out egress_intrinsic_metadata_t eg_intr_md,
    @optional out egress_intrinsic_metadata_from_parser_t eg_intr_md_from_prsr,
    @optional out egress_intrinsic_metadata_for_deparser_t eg_intr_md_for_dprsr);

control IngressT<TnaIH, TnaIM>(
    inout TnaIH hdr,
    inout TnaIM ig_md,
    @optional in ingress_intrinsic_metadata_t ig_intr_md,
    @optional in ingress_intrinsic_metadata_from_parser_t ig_intr_md_from_prsr,
    @optional inout ingress_intrinsic_metadata_for_deparser_t ig_intr_md_for_dprsr,
    @optional inout ingress_intrinsic_metadata_for_tm_t ig_intr_md_for_tm
#ifdef _P4SIM_T2NA_
    , @optional in ghost_intrinsic_metadata_t gh_intr_md
#endif
    );

#ifdef _P4SIM_T2NA_
/* Tofino2's ghost thread: runs once per queue-depth update. */
control GhostT(in ghost_intrinsic_metadata_t gh_intr_md);
#endif

control EgressT<TnaEH, TnaEM>(
    inout TnaEH hdr,
    inout TnaEM eg_md,
    @optional in egress_intrinsic_metadata_t eg_intr_md,
    @optional in egress_intrinsic_metadata_from_parser_t eg_intr_md_from_prsr,
    @optional inout egress_intrinsic_metadata_for_deparser_t eg_intr_md_for_dprsr,
    @optional inout egress_intrinsic_metadata_for_output_port_t eg_intr_md_for_oport);

control IngressDeparserT<TnaIH, TnaIM>(
    packet_out pkt,
    inout TnaIH hdr,
    in TnaIM metadata,
    @optional in ingress_intrinsic_metadata_for_deparser_t ig_intr_md_for_dprsr,
    @optional in ingress_intrinsic_metadata_t ig_intr_md);

control EgressDeparserT<TnaEH, TnaEM>(
    packet_out pkt,
    inout TnaEH hdr,
    in TnaEM metadata,
    @optional in egress_intrinsic_metadata_for_deparser_t eg_intr_md_for_dprsr,
    @optional in egress_intrinsic_metadata_t eg_intr_md,
    @optional in egress_intrinsic_metadata_from_parser_t eg_intr_md_from_prsr);

package Pipeline<TnaIH, TnaIM, TnaEH, TnaEM>(
    IngressParserT<TnaIH, TnaIM> ingress_parser,
    IngressT<TnaIH, TnaIM> ingress,
    IngressDeparserT<TnaIH, TnaIM> ingress_deparser,
    EgressParserT<TnaEH, TnaEM> egress_parser,
    EgressT<TnaEH, TnaEM> egress,
    EgressDeparserT<TnaEH, TnaEM> egress_deparser
#ifdef _P4SIM_T2NA_
    , @optional GhostT ghost
#endif
    );

/* p4sim runs one pipe: Switch(pipe) main; */
#ifdef _P4SIM_T2NA_
@pkginfo(arch="T2NA", version="1.0.1")
#else
@pkginfo(arch="TNA", version="2.0.1")
#endif
package Switch<TnaIH0, TnaIM0, TnaEH0, TnaEM0>(Pipeline<TnaIH0, TnaIM0, TnaEH0, TnaEM0> pipe0);

#endif  /* _P4SIM_TNA_P4_ */
