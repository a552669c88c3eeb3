/*
 * header.p4 (TNA) -- headers only the Tofino program has: the bridged
 * metadata header (ingress -> egress in front of the packet), the mirror
 * header of the feedback copy, and the feedback packet on the wire.  The
 * packet headers themselves are ../../include/header.p4's.
 */
#ifndef _STELLAR_TNA_HEADER_P4_
#define _STELLAR_TNA_HEADER_P4_

/* Ingress -> egress: what egress needs from ingress, nothing else (PHV
 * and bridge bytes are scarce). */
/* Each field is written where its value is made (stellar.p4), one per
 * action, and has its own byte: bf-p4c allows a written container two PHV
 * sources (or one and a constant), so one action copying all of them into
 * shared bytes cannot be placed. */
header bridged_h {
    bit<8>   pkt_type;       /* PKT_BRIDGED */
    bit<7>   _pad2;
    bit<1>   is_roce;        /* (next to pkt_type: both are set in one action) */
    bit<6>   _pad0;
    bit<2>   traffic_class;
    bit<7>   _pad1;
    bit<1>   elephant;
    group_t  group;
    bit<5>   _pad3;
    member_t member;
    bit<16>  ingress_ts;     /* arrival, ns >> 6 (64 ns units, wraps in 4.2 ms), for drain detection */
    bit<7>   _pad4;
    bit<1>   hot;            /* the host pair keeps receiving CNPs (pressure.p4) */
    bit<8>   alive;          /* the group's liveness bitmap (failover.p4): a destination
                              * leaf reports a path whose uplink is down (path_feedback.p4) */
    bit<7>   _pad6;
    PortId_t ingress_port;   /* the port the packet came in on: the uplink a shimmed
                              * packet's path crosses (path_feedback.p4's `arrival`) */
}

/* Egress mirror header of the feedback copy: which port, how much delay. */
header feedback_mirror_h {
    bit<8>   pkt_type;       /* PKT_FEEDBACK */
    bit<5>   _pad0;
    bit<1>   silent;         /* a tag's report of a silent path (path_feedback.p4): the
                              * hash choice skips the member (failover.p4) */
    bit<1>   remote;         /* a path's congestion another leaf returned (path_feedback.p4):
                              * no departure to record */
    PortId_t port;
    bit<32>  qdelay_ns;
    bit<16>  departed_ts;    /* the departing packet's ingress_ts */
    bit<8>   qid;            /* ... and its queue */
    bit<16>  downstream_x2;  /* twice the path's fresh congestion beyond this port, 64 ns
                              * units, at most 0x3FFF (path_feedback.p4; 0: none fresh):
                              * the drain margin's feedback part (flowlet.p4) */
}

/* The feedback packet as it re-enters ingress on the recirculation port:
 * Ethernet (EtherType ETHERTYPE_STELLAR_FEEDBACK) then this. */
header feedback_h {
    bit<5>   _pad0;
    bit<1>   silent;         /* as feedback_mirror_h's */
    bit<1>   remote;         /* as feedback_mirror_h's */
    PortId_t port;
    bit<32>  qdelay_ns;
    bit<16>  departed_ts;
    bit<8>   qid;
    bit<16>  downstream_x2;  /* as feedback_mirror_h's */
}

/* Data of a resubmitted pass (exactly Tofino-1's 64 bits of port metadata).
 * Drain test (kind RESUB_DRAIN): the flow's member and its previous packet's
 * arrival.  DRE choice (RESUB_CHOOSE): the member chosen, the flow's member
 * before a gap, and whether the flow is new.  Both: the packet's queue. */
header resubmit_h {
    bit<16>  prev_ts;
    /* One field (or a set of constants plus one PHV field) per byte: the
     * first pass writes them from different PHV fields and constants in one
     * action, and bf-p4c allows a written container two PHV sources, or one
     * with constants. */
    bit<2>   kind;           /* RESUB_DRAIN / RESUB_CHOOSE (a constant per action) */
    bit<1>   is_new;         /* (a constant per action) */
    bit<1>   restart;        /* drain: a go-back-N restart's move, without the drain
                              * proof (restart.p4; a constant per action) */
    bit<3>   _pad0;
    bit<1>   elephant;       /* the first pass's verdict (the sketch counts once); bit 0,
                              * as in bridged_h and meta: bf-p4c moves a bit between
                              * containers without a shift (unaligned, the elephant's
                              * copies cannot be placed) */
    bit<7>   _pad1;
    PortId_t port;           /* the port the first pass would send the packet to (the
                              * flow's port, member_port), and ... */
    bit<5>   _pad3;
    member_t cur;            /* drain: the flow's member; choose: the choice */
    bit<5>   _pad4;
    member_t old;            /* choose: the member before the gap */
    bit<3>   _pad5;
    bit<5>   qid;            /* ... its queue (queueing): the second pass reads
                              * `departed` at (port, qid) from this header alone,
                              * in the stage after the parser (Tofino-1's 12 stages) */
}

struct tna_headers_t {
    bridged_h          bridged;
    ethernet_h         ethernet;
    stellar_fb_h       fb;           /* the path-feedback shim between leaves */
    vlan_h             vlan;
    feedback_h         feedback;
    pktgen_port_down_header_t port_down;
    ipv4_h             ipv4;
    udp_h              udp;
    tcp_h              tcp;
    bth_h              bth;
}

struct tna_egress_headers_t {
    bridged_h          bridged;
    feedback_mirror_h  fb_mirror;
    ethernet_h         ethernet;
    stellar_fb_h       fb;
    vlan_h             vlan;
    feedback_h         feedback;
    ipv4_h             ipv4;
    udp_h              udp;
    bth_h              bth;
}

#endif  /* _STELLAR_TNA_HEADER_P4_ */
