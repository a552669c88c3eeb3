/*
 * reorder.p4 (TNA) -- receiver-side PSN regression per QP direction (egress).
 *
 * As v1model (../../../v1model/include/control/reorder.p4): per RoCEv2 flow
 * direction (src IP, dst IP, dest QP, hashed to REORDER_SLOTS) the PSN of the
 * last data packet that left; a data packet whose PSN is lower (modulo 2^24,
 * half-range comparison) is a backward jump, counted once, and the tracked
 * PSN follows it, so a go-back-N resend of a range is one event.  An equal
 * PSN (a duplicate) is not a regression.
 *
 * Only data packets count (RC/UC SEND, RDMA WRITE and RDMA READ response
 * opcodes, bth_is_data in ../../../include/functions.p4).  ACKs, NAKs and
 * CNPs share the data's key on the reverse direction of a bidirectional QP,
 * but their PSNs belong to another sequence (an ACK names the PSN it
 * acknowledges, a CNP carries PSN 0): compared with the data stream they
 * read as regressions no receiver sees.  The opcode test is a const ternary
 * table whose one action runs the RegisterAction: one table under the
 * BTH gate, one register access per packet.
 *
 * As v1model, a flow signature keeps two flow directions hashed to one slot
 * from being compared with each other (a false regression): the cell is a
 * pair {sig, psn}, and a packet whose signature differs takes the slot over.
 * The total is a Counter (v1model: a register and a per-port counter).
 */
struct reorder_pair_t {
    bit<32> sig;   /* bit 16 valid, bits 15:0 the flow's CRC-32 bits 31:16; 0 = empty */
    bit<32> psn;   /* the last data PSN in bits 31:8 */
}

control Reorder(inout tna_egress_headers_t hdr, inout tna_egress_metadata_t meta) {
    /* Per slot: which flow direction it tracks and that flow's last data
     * PSN.  The PSN sits in the top 24 bits so that the 24-bit modular
     * comparison is the 32-bit one the stateful ALU does (bf-p4c: no slices
     * of the register value in a condition).  Size: REORDER_SLOTS. */
    Register<reorder_pair_t, bit<13>>(REORDER_SLOTS, {0, 0}) max_psn;
    /* Regressions seen.  Size: 1. */
    Counter<bit<32>, bit<1>>(1, CounterType_t.PACKETS) regressions;
    /* One CRC-32 of (src, dst, dest QP), sliced: [12:0] the slot, [31:16]
     * the signature. */
    Hash<bit<32>>(HashAlgorithm_t.CRC32) flow_crc;

    bit<32> crc;
    bit<32> psn;
    bit<32> sig;

    /* A regression: the slot tracks this flow and the PSN is behind the
     * stored one by less than half the range.  The cell takes every data
     * PSN (the detector follows a backward jump) and this flow's signature
     * (a new flow takes the slot over).  Two conditions: one stateful ALU. */
    RegisterAction<reorder_pair_t, bit<13>, bit<1>>(max_psn) check = {
        void apply(inout reorder_pair_t v, out bit<1> rv) {
            if (v.sig == sig && psn - v.psn >= 32w0x80000000) {
                rv = 1;
            } else {
                rv = 0;
            }
            v.sig = sig;
            v.psn = psn;
        }
    };
    action track() {
        meta.regressed = check.execute(crc[12:0]);
        meta.bth_data = 1;
    }
    action not_data() { }
    /* bth_is_data as ternary rows: bits 7:6 zero and bit 5 free (transport
     * RC 0b000 or UC 0b001), then 0x00-0x0B (SEND, WRITE) or 0x0D-0x10 (READ
     * response).  Rows: 5 const. */
    table data_opcode {
        key = { hdr.bth.opcode: ternary; }
        actions = { track; not_data; }
        const default_action = not_data();
        const entries = {
            8w0x00 &&& 8w0xD8: track();   /* 0x00-0x07 */
            8w0x08 &&& 8w0xDC: track();   /* 0x08-0x0B */
            8w0x0D &&& 8w0xDF: track();   /* 0x0D */
            8w0x0E &&& 8w0xDE: track();   /* 0x0E-0x0F */
            8w0x10 &&& 8w0xDF: track();   /* 0x10 */
        }
        size = 5;
    }
    /* Gates of one table each, none nested (README.md, "Tofino-1"). */
    apply {
        psn = hdr.bth.psn ++ 8w0;
        crc = flow_crc.get({hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.bth.dest_qp});
        sig = 15w0 ++ 1w1 ++ crc[31:16];
        meta.flow_crc = crc;   /* path_loss.p4's flow slot and signature */
        meta.bth_data = 0;
        if (hdr.bth.isValid()) {
            data_opcode.apply();
        }
        if (meta.regressed == 1) {
            regressions.count(0);
        }
    }
}
