/*
 * header.p4 -- packet headers Stellar parses (architecture independent).
 *
 * Ethernet, one optional 802.1Q tag, IPv4 (options kept as 32-bit words so
 * they are re-emitted untouched), UDP, TCP and the RoCEv2 Base Transport
 * Header.  Field names are snake_case; widths follow the wire formats
 * (IEEE 802.3/802.1Q, RFC 791, RFC 768, RFC 9293, InfiniBand Annex A17).
 */
#ifndef _STELLAR_HEADER_P4_
#define _STELLAR_HEADER_P4_

#include "define.p4"

header ethernet_h {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

header vlan_h {
    bit<3>  pcp;
    bit<1>  dei;
    bit<12> vid;
    bit<16> ether_type;
}

/* Stellar's path-feedback shim between leaves (p4src/README.md, "Path
 * feedback"): after Ethernet, EtherType ETHERTYPE_STELLAR_FB, 8 bytes.  The
 * source leaf adds it on a fabric port, every switch it crosses raises
 * `congestion` to its egress (port, queue)'s, the destination leaf records it
 * and removes the shim before the host port, so hosts see the original bytes.
 * The same shim carries one piggybacked entry back: the congestion the sender
 * of this packet measured for path `fb_path` of the packet's destination leaf. */
header stellar_fb_h {
    bit<16> next_type;      /* the EtherType the shim displaced (IPv4) */
    bit<8>  src_leaf;       /* the leaf that added the shim */
    bit<3>  path;           /* member position the source leaf chose */
    bit<3>  path_count;     /* members of the source leaf's set, minus 1 */
    bit<1>  fb_valid;       /* fb_path / fb_metric carry an entry */
    bit<1>  reserved;
    bit<16> congestion;     /* max over hops so far, us-equivalent */
    bit<3>  fb_path;
    bit<13> fb_metric;      /* us-equivalent, clamped to 8191 */
}

/* DSCP and ECN are separate fields so that classification and marking need
 * no masking. */
header ipv4_h {
    bit<4>      version;
    bit<4>      ihl;
    bit<6>      dscp;
    bit<2>      ecn;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

/* One 32-bit word of IPv4 options.  A header stack of these (up to 10 words,
 * IHL 15) holds the options without varbit, which p4sim does not support. */
header ipv4_option_word_h {
    bit<32> data;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

/* The fixed 20-byte TCP header; options (if any) stay in the payload. */
header tcp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> seq_no;
    bit<32> ack_no;
    bit<4>  data_offset;
    bit<4>  reserved;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent_ptr;
}

/* RoCEv2 Base Transport Header (12 bytes after UDP port 4791). */
header bth_h {
    bit<8>  opcode;
    bit<1>  solicited_event;
    bit<1>  mig_req;
    bit<2>  pad_count;
    bit<4>  transport_version;
    bit<16> partition_key;
    bit<1>  fecn;
    bit<1>  becn;
    bit<6>  reserved0;
    bit<24> dest_qp;
    bit<1>  ack_req;
    bit<7>  reserved1;
    bit<24> psn;
}

struct headers_t {
    ethernet_h         ethernet;
    stellar_fb_h       fb;
    vlan_h             vlan;
    ipv4_h             ipv4;
    ipv4_option_word_h[IPV4_MAX_OPTION_WORDS] ipv4_options;
    udp_h              udp;
    tcp_h              tcp;
    bth_h              bth;
}

#endif  /* _STELLAR_HEADER_P4_ */
