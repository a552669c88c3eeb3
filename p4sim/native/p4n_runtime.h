/* p4sim native backend: the small C runtime every generated program includes.
 *
 * Bit I/O on packet bytes (MSB first, as BMv2 and p4sim's reference backend read them), the hash
 * and checksum algorithms with BMv2's exact results (crc16 = CRC-16/ARC, crc32 = IEEE, identity,
 * csum16, xor16), the two-rate three-colour meter with the reference's floating-point steps, and
 * match-action tables whose entries the Python runtime loads (p4sim/native/tables.py) and whose
 * direct counters it reads back.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned __int128 p4n_u128;

static inline uint64_t p4n_mask(int w) { return w >= 64 ? ~UINT64_C(0) : ((UINT64_C(1) << w) - 1); }

/* w (<= 64) bits starting at bit ``pos`` of ``d``, first bit most significant. */
static inline uint64_t p4n_rd(const uint8_t *d, uint64_t pos, int w) {
    if (w == 0) return 0;
    uint64_t byte = pos >> 3;
    int need = (int)(pos & 7) + w;
    int nbytes = (need + 7) >> 3;
    p4n_u128 acc = 0;
    for (int i = 0; i < nbytes; i++) acc = (acc << 8) | d[byte + i];
    acc >>= (nbytes * 8 - need);
    return (uint64_t)acc & p4n_mask(w);
}

/* Append the low w bits of v at bit offset *nb of a zeroed buffer. */
static inline void p4n_wr(uint8_t *b, uint64_t *nb, uint64_t v, int w) {
    uint64_t pos = *nb;
    *nb += (uint64_t)w;
    while (w > 0) {
        int off = (int)(pos & 7);
        int take = 8 - off;
        if (take > w) take = w;
        uint8_t chunk = (uint8_t)((v >> (w - take)) & ((1u << take) - 1));
        b[pos >> 3] |= (uint8_t)(chunk << (8 - off - take));
        pos += (uint64_t)take;
        w -= take;
    }
}

/* ---------------------------------------------------------------- hashes */
static uint16_t p4n_crc16_tab[256];
static uint32_t p4n_crc32_tab[256];
static int p4n_tabs_ready;

static void p4n_init_tabs(void) {
    if (p4n_tabs_ready) return;
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
        p4n_crc32_tab[i] = c;
        uint16_t h = (uint16_t)i;
        for (int k = 0; k < 8; k++) h = (h & 1) ? (uint16_t)((h >> 1) ^ 0xA001u) : (uint16_t)(h >> 1);
        p4n_crc16_tab[i] = h;
    }
    p4n_tabs_ready = 1;
}

static inline uint64_t p4n_crc16(const uint8_t *d, size_t n) {
    uint16_t c = 0;
    for (size_t i = 0; i < n; i++) c = (uint16_t)((c >> 8) ^ p4n_crc16_tab[(c ^ d[i]) & 0xFF]);
    return c;
}

static inline uint64_t p4n_crc32(const uint8_t *d, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) c = (c >> 8) ^ p4n_crc32_tab[(c ^ d[i]) & 0xFF];
    return c ^ 0xFFFFFFFFu;
}

static inline uint64_t p4n_identity(const uint8_t *d, size_t n) {
    uint64_t v = 0;
    for (size_t i = 0; i < n && i < 8; i++) v = (v << 8) | d[i];
    return v;
}

static inline uint64_t p4n_csum16(const uint8_t *d, size_t n) {
    uint64_t s = 0;
    for (size_t i = 0; i + 1 < n; i += 2) s += ((uint64_t)d[i] << 8) | d[i + 1];
    if (n & 1) s += (uint64_t)d[n - 1] << 8;
    while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
    return (~s) & 0xFFFF;
}

static inline uint64_t p4n_xor16(const uint8_t *d, size_t n) {
    uint64_t r = 0;
    for (size_t i = 0; i + 1 < n; i += 2) r ^= ((uint64_t)d[i] << 8) | d[i + 1];
    if (n & 1) r ^= (uint64_t)d[n - 1] << 8;
    return r;
}

/* ---------------------------------------------------------------- meters */
typedef struct {
    int configured;
    double cir, cburst, pir, pburst;
    double tc, tp, last_us;
} p4n_meter_t;

/* p4sim.runtime.externs.TwoRateMeter.execute, step for step (same doubles, same order). */
static inline uint64_t p4n_meter_exec(p4n_meter_t *m, uint64_t size, double now_us) {
    if (!m->configured) return 0;
    double dt = now_us - m->last_us;
    if (dt > 0) {
        double a = m->tc + dt * m->cir / 1e6;
        m->tc = (a < m->cburst) ? a : m->cburst;
        double b = m->tp + dt * m->pir / 1e6;
        m->tp = (b < m->pburst) ? b : m->pburst;
        m->last_us = now_us;
    }
    double s = (double)size;
    if (m->tp < s) return 2;
    if (m->tc < s) { m->tp -= s; return 1; }
    m->tp -= s;
    m->tc -= s;
    return 0;
}

/* ---------------------------------------------------------------- tables
 * Slot 0 is the default entry; slots 1..n-1 the entries.  mode 0/1 (exact / lpm): each entry
 * belongs to one level (a mask per key; lpm levels longest prefix first) and is found by hashing
 * its masked key.  mode 2 (ternary/range/optional): entries in priority order, each key checked
 * as (x & va) == vb, or va <= x <= vb for a range. */
typedef struct {
    int nk, nargs, mode, n, nlev;
    uint64_t *va, *vb;
    uint8_t *rng;
    int32_t *lev;
    uint64_t *lmask;
    int32_t *act;
    uint64_t *args;
    uint64_t *cpk, *cby;
    int32_t *hs;
    uint32_t hcap;
    p4n_meter_t *mtr;
} p4n_tbl_t;

static inline uint32_t p4n_thash(const uint64_t *k, int nk, int lev) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)lev;
    for (int i = 0; i < nk; i++) {
        h ^= k[i];
        h *= 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    return (uint32_t)(h ^ (h >> 32));
}

static void p4n_tbl_free(p4n_tbl_t *t) {
    free(t->va); free(t->vb); free(t->rng); free(t->lev); free(t->lmask); free(t->act);
    free(t->args); free(t->cpk); free(t->cby); free(t->hs); free(t->mtr);
    int nk = t->nk, nargs = t->nargs;
    memset(t, 0, sizeof *t);
    t->nk = nk;
    t->nargs = nargs;
}

#define P4N_DUP(dst, src, type, count) do { size_t _c = (size_t)(count) ? (size_t)(count) : 1; \
    dst = (type *)calloc(_c, sizeof(type)); if ((count) && (src)) memcpy(dst, src, (size_t)(count) * sizeof(type)); } while (0)

static int p4n_tbl_load(p4n_tbl_t *t, int mode, int n, int nlev, const int32_t *act, const uint64_t *args,
                        const uint64_t *va, const uint64_t *vb, const uint8_t *rng, const int32_t *lev,
                        const uint64_t *lmask, const uint64_t *cpk, const uint64_t *cby,
                        const p4n_meter_t *mtr) {
    p4n_tbl_free(t);
    int nk = t->nk, na = t->nargs;
    t->mode = mode; t->n = n; t->nlev = nlev;
    P4N_DUP(t->act, act, int32_t, n);
    P4N_DUP(t->args, args, uint64_t, (size_t)n * na);
    P4N_DUP(t->va, va, uint64_t, (size_t)n * nk);
    P4N_DUP(t->vb, vb, uint64_t, (size_t)n * nk);
    P4N_DUP(t->rng, rng, uint8_t, (size_t)n * nk);
    P4N_DUP(t->lev, lev, int32_t, n);
    P4N_DUP(t->lmask, lmask, uint64_t, (size_t)nlev * nk);
    P4N_DUP(t->cpk, cpk, uint64_t, n);
    P4N_DUP(t->cby, cby, uint64_t, n);
    P4N_DUP(t->mtr, mtr, p4n_meter_t, n);
    if (mode != 2) {
        uint32_t cap = 16;
        while (cap < (uint32_t)n * 2) cap <<= 1;
        t->hcap = cap;
        t->hs = (int32_t *)malloc(cap * sizeof(int32_t));
        for (uint32_t i = 0; i < cap; i++) t->hs[i] = -1;
        for (int s = 1; s < n; s++) {
            uint32_t h = p4n_thash(t->va + (size_t)s * nk, nk, t->lev[s]) & (cap - 1);
            while (t->hs[h] >= 0) h = (h + 1) & (cap - 1);
            t->hs[h] = s;
        }
    }
    return 0;
}

static inline int32_t p4n_tbl_find(const p4n_tbl_t *t, const uint64_t *k) {
    int nk = t->nk;
    if (t->mode == 2) {
        for (int s = 1; s < t->n; s++) {
            const uint64_t *a = t->va + (size_t)s * nk, *b = t->vb + (size_t)s * nk;
            const uint8_t *r = t->rng + (size_t)s * nk;
            int ok = 1;
            for (int i = 0; i < nk; i++) {
                if (r[i] ? !(a[i] <= k[i] && k[i] <= b[i]) : ((k[i] & a[i]) != b[i])) { ok = 0; break; }
            }
            if (ok) return s;
        }
        return 0;
    }
    if (t->n <= 1) return 0;
    uint64_t mk[16];
    for (int L = 0; L < t->nlev; L++) {
        const uint64_t *m = t->lmask + (size_t)L * nk;
        for (int i = 0; i < nk; i++) mk[i] = k[i] & m[i];
        uint32_t h = p4n_thash(mk, nk, L) & (t->hcap - 1);
        for (;;) {
            int32_t s = t->hs[h];
            if (s < 0) break;
            if (t->lev[s] == L && memcmp(t->va + (size_t)s * nk, mk, (size_t)nk * sizeof(uint64_t)) == 0) return s;
            h = (h + 1) & (t->hcap - 1);
        }
    }
    return 0;
}
