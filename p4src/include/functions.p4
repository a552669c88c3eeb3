/*
 * functions.p4 -- pure arithmetic helpers (need only core.p4).
 */
#ifndef _STELLAR_FUNCTIONS_P4_
#define _STELLAR_FUNCTIONS_P4_

#include "define.p4"

/*
 * Incremental update of a ones'-complement checksum when one 16-bit word of
 * the covered data changes from old_word to new_word (RFC 1624, eqn. 3:
 * HC' = ~(~HC + ~m + m')).  Stellar changes only TTL and ECN, so updating
 * incrementally keeps IPv4 options (which the checksum also covers) correct
 * without listing them in an update_checksum field list.
 */
bit<16> csum16_replace(in bit<16> csum, in bit<16> old_word, in bit<16> new_word) {
    bit<32> sum = (bit<32>)(~csum) + (bit<32>)(~old_word) + (bit<32>)new_word;
    sum = (sum & 32w0xFFFF) + (sum >> 16);
    sum = (sum & 32w0xFFFF) + (sum >> 16);
    return ~(sum[15:0]);
}

/*
 * Queue delay of one (port, queue), us, from what egress recorded at its last
 * departure (delay, time), how many packets are in it (ingress counts them
 * in, egress out) and when the first of them went into an empty queue
 * (pending).  With packets waiting, the delay is at least the time since the
 * later of the last departure and that first packet, and when that exceeds
 * max_age_us the queue is stalled (paused, or failed silently):
 * QDELAY_STALLED, the worst usable member.  Nothing waiting and no departure
 * for max_age_us: idle, 0.
 */
bit<32> queue_delay(in bit<32> qdelay_us, in timestamp_t departed, in bit<32> waiting_pkts,
                    in timestamp_t pending, in timestamp_t now, in bit<32> max_age_us) {
    bit<32> delay = qdelay_us;
    bit<1> waiting = 0;
    timestamp_t since = departed;
    if (pending > since) {
        since = pending;
    }
    if (waiting_pkts != 0 && since < now) {
        waiting = 1;
    }
    if (waiting == 1) {
        if (now - since > (timestamp_t)max_age_us) {
            delay = QDELAY_STALLED;
        } else if ((bit<32>)(now - since) > delay) {
            delay = (bit<32>)(now - since);
        }
    } else if (departed < now && now - departed > (timestamp_t)max_age_us) {
        delay = 0;
    }
    return delay;
}

/*
 * A DRE value after `age` windows of halving (CONGA's decay with alpha 1/2).
 */
bit<32> dre_decay(in bit<32> dre_ps, in bit<32> age) {
    bit<32> value = 0;
    if (age < 32) {
        value = dre_ps >> (bit<8>)age;
    }
    return value;
}

/*
 * The utilisation a member's score uses where its path set has a capacity
 * prior: the path's DRE (this switch's bytes on the member, at its end-to-end
 * bottleneck rate) decayed to the current window, plus the wire time the
 * packet being placed would add there.  The port's own DRE is left out: the
 * set's members share the uplinks with other destinations' sets, each of
 * which splits its own traffic by its members' bottlenecks, so the ports
 * balance in aggregate, while a port estimate would hide a remote bottleneck
 * behind the local load (a 40G spine downlink behind a 100G uplink carrying
 * three destinations' traffic).  The packet's own wire time makes idle
 * members differ by capacity: an idle fast path beats an idle slow one
 * instead of tying on the hash.  Returned for window now_window (age 0), so
 * member_score's own decay leaves it as it is.
 */
bit<32> member_util(in bit<32> path_dre, in bit<32> path_window, in bit<32> now_window,
                    in bit<32> own_ps) {
    bit<32> path = dre_decay(path_dre, now_window - path_window);
    bit<32> sum = path + own_ps;
    if (sum < path) {
        sum = 0xFFFFFFFF;
    }
    return sum;
}

/*
 * Congestion score of one path-set member, in score ticks (WEIGHT_ONE ticks
 * = 1 us at weight 1.0, so a tick is ~1 ns):
 *   qdelay_weight x the queue delay of its (port, queue) (queue_delay; a
 *                   stalled queue scores SCORE_CLAMP, the worst usable)
 * + level_weight  x the controller's level (us-equivalent)
 * + util_weight   x its DRE (ps on the wire, decayed), / 2^20 (ps -> ~ns
 *                   at weight 1.0 = 1024)
 * clamped to SCORE_CLAMP.  Weights are the controller's (config.params);
 * util_weight 0 turns the estimator off.
 */
bit<32> member_score(in bit<32> qdelay_us, in bit<16> level, in bit<32> dre_ps,
                     in bit<32> dre_window, in bit<32> now_window, in bit<16> util_weight,
                     in bit<16> qdelay_weight, in bit<16> level_weight) {
    bit<32> delay = qdelay_us;
    if (delay == QDELAY_STALLED) {
        return SCORE_CLAMP;
    }
    if (delay > SCORE_INPUT_CLAMP) {
        delay = SCORE_INPUT_CLAMP;
    }
    bit<64> util = (bit<64>)dre_decay(dre_ps, now_window - dre_window) * (bit<64>)util_weight;
    bit<64> score = (util >> 20) + (bit<64>)(delay * (bit<32>)qdelay_weight) +
                    (bit<64>)((bit<32>)level * (bit<32>)level_weight);
    if (score > (bit<64>)SCORE_CLAMP) {
        score = (bit<64>)SCORE_CLAMP;
    }
    return (bit<32>)score;
}

/*
 * A suspect member (feedback.p4: silent or lossy) scores worst among the
 * usable ones, below a stalled queue too (SCORE_SUSPECT): chosen only when
 * every other member is suspect as well.
 */
bit<32> suspect_score(in bit<1> suspect, in bit<32> score) {
    bit<32> s = score;
    if (suspect == 1) {
        s = SCORE_SUSPECT;
    }
    return s;
}

/*
 * Key of one member for the hash-only choice (flows without state): its
 * tiebreak (position after the flow's rotation), above every live member's
 * when its path is silent, RANK_UNUSABLE when it cannot be chosen.
 */
bit<32> hash_key(in bit<32> rank, in bit<1> silent) {
    bit<32> k = RANK_UNUSABLE;
    if (rank != RANK_UNUSABLE) {
        k = (rank & 7) | ((bit<32>)silent << 3);
    }
    return k;
}

/*
 * Rank of one path-set member; the lowest rank wins.
 *
 * rank = score << 3 | tiebreak, score from member_score (0 in ECMP mode).
 * tiebreak = (position - rotation) mod 8, where rotation is the flow's hash
 * modulo the member count, so among equal scores the first member at or
 * after `rotation` (cyclically) wins: equal paths are shared out by flow
 * hash, and in ECMP mode, where every score is 0, the rank is plain
 * hash-based ECMP.  Members at or beyond `count`, and dead ones, get
 * RANK_UNUSABLE and are never chosen.
 */
bit<32> member_rank(in bit<4> position, in bit<4> count, in bit<1> alive,
                    in bit<1> ecmp, in bit<32> score, in bit<3> rotation) {
    bit<32> rank = RANK_UNUSABLE;
    if (position < count && alive == 1) {
        bit<32> s = score;
        if (ecmp == 1) {
            s = 0;
        }
        rank = (s << 3) | (bit<32>)(position[2:0] - rotation);
    }
    return rank;
}

/*
 * A RoCEv2 data packet, by BTH opcode (InfiniBand spec. vol. 1, 9.2.2 and
 * table 38): transport RC (0b000) or UC (0b001) in bits 7..5, and in bits
 * 4..0 a SEND (0x00-0x05), an RDMA WRITE (0x06-0x0B) or an RDMA READ
 * response (0x0D-0x10).  Not: READ requests (0x0C), ACK (0x11), atomic ACK
 * (0x12), atomics (0x13, 0x14), CNP (0x81), UD and vendor opcodes.  These
 * are the packets whose PSNs a responder checks in order.
 */
bool bth_is_data(in bit<8> opcode) {
    bit<3> transport = opcode[7:5];
    bit<5> op = opcode[4:0];
    bool data = false;
    if (transport == BTH_TRANSPORT_RC || transport == BTH_TRANSPORT_UC) {
        if (op <= BTH_OP_WRITE_ONLY_IMM ||
            (op >= BTH_OP_READ_RESP_FIRST && op <= BTH_OP_READ_RESP_ONLY)) {
            data = true;
        }
    }
    return data;
}

#endif  /* _STELLAR_FUNCTIONS_P4_ */
