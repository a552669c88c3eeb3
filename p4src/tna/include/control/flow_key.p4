/*
 * flow_key.p4 (TNA) -- the flow key's one CRC-32 (ingress).
 *
 * Over {src, dst, protocol, l4} with l4 the destination QP (RoCEv2), the
 * ports (UDP, TCP: the parser's meta.l4) or 0; flowlet.p4 says how the CRC
 * is sliced.  Two Hash instances, one over the BTH's field and one over the
 * parser's, so that the CRC is computed in the first stage: a CRC over an l4
 * that ingress assembles waits one stage for it, and four, one per L4
 * header, take more hash distribution units than a stage has.  The bridged
 * header tells egress whether the packet is RoCE.
 */
#ifndef _STELLAR_TNA_CONTROL_FLOW_KEY_P4_
#define _STELLAR_TNA_CONTROL_FLOW_KEY_P4_

control FlowKey(inout tna_headers_t hdr, inout tna_ingress_metadata_t meta) {
    Hash<bit<32>>(HashAlgorithm_t.CRC32) flow_crc_roce;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) flow_crc;

    apply {
        if (hdr.bth.isValid()) {
            meta.is_roce = 1;
            hdr.bridged.is_roce = 1;
            meta.l4 = (bit<32>) hdr.bth.dest_qp;
            meta.flow_hash = flow_crc_roce.get({hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
                                                hdr.ipv4.protocol, 8w0, hdr.bth.dest_qp});
        } else {
            hdr.bridged.is_roce = 0;
            meta.flow_hash = flow_crc.get({hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
                                           hdr.ipv4.protocol, meta.l4});
        }
    }
}

#endif
