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
 * Rank of one path-set member; the lowest rank wins.
 *
 * rank = score << 3 | tiebreak.  score is the member's congestion in us: the
 * queue delay its port last showed the egress pipeline (qdelay_us, taken as
 * 0 when that reading is older than max_age_us: nothing has left the port
 * since, so its queue is empty) plus the controller's level, clamped below
 * 2^28.  tiebreak = (position - rotation) mod 8, where rotation is the
 * flow's hash modulo the member count, so among equal scores the first
 * member at or after `rotation` (cyclically) wins: equal paths are shared
 * out by flow hash, and in ECMP mode, where every score is 0, the rank is
 * plain hash-based ECMP.  Members at or beyond `count`, and dead ones, get
 * RANK_UNUSABLE and are never chosen.
 */
bit<32> member_rank(in bit<4> position, in bit<4> count, in bit<1> alive,
                    in bit<1> ecmp, in bit<32> qdelay_us, in timestamp_t stamp,
                    in timestamp_t now, in bit<32> max_age_us, in bit<16> level,
                    in bit<3> rotation) {
    bit<32> rank = RANK_UNUSABLE;
    if (position < count && alive == 1) {
        bit<32> delay = qdelay_us;
        if (now > stamp && now - stamp > (timestamp_t)max_age_us) {
            delay = 0;
        }
        bit<32> score = 0;
        if (ecmp == 0) {
            if (delay >= SCORE_CLAMP) {
                score = SCORE_CLAMP;
            } else {
                score = delay + (bit<32>)level;
                if (score > SCORE_CLAMP) {
                    score = SCORE_CLAMP;
                }
            }
        }
        rank = (score << 3) | (bit<32>)(position[2:0] - rotation);
    }
    return rank;
}

#endif  /* _STELLAR_FUNCTIONS_P4_ */
