/* p4sim native backend: Switch.send_many's loop in C (p4sim/native/batch.py), appended to a
 * generated v1model program after its p4n_fast_ingress / p4n_fast_egress.
 *
 * Frames first..n-1 of one buffer (frame i is buf[ends[i-1]..ends[i]), ends[-1] = 0) arrive on
 * `port`, one after another, each exactly as Switch.send runs it through NativePipeline's
 * fast_arrive when it needs nothing of Python: no parser error, no assert, no multicast, and
 * unicast to a (port, priority) that `fast` marks as an idle unlimited-rate queue on an up port
 * (fast[egress_spec * 8 + priority] = 1; Python fills it, as only it knows the traffic manager).
 * Such a frame's egress output goes to out (output k is out[oend[k-1]..oend[k]) for
 * oport[k]); a frame that ingress sends to the drop port is counted in res[7].
 *
 * The loop stops at the first frame that needs Python and returns its index (n when none did),
 * with res[5] saying why:
 *   1  ingress has run and the switch's own code continues from there: res[0..4] are
 *      p4n_fast_ingress's (pos, parser error, egress_spec, mcast_grp, priority), *tnow its time;
 *   2  the frame's egress or checksum failed an assert/assume (the frame is done; Python logs it);
 *   3  out has no room for the frame's output (the frame has not started).
 * res[6] is the number of outputs written.  Time: `now` for every frame, or when wall_t0 >= 0
 * the monotonic clock read per frame as p4sim.clock.WallClock reads it (microseconds since
 * wall_t0, in seconds); *tnow always holds the current frame's time (digests are stamped
 * with it). */
#include <time.h>

static double p4n_wall_us(double t0) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    /* as Python's time.monotonic(): integer nanoseconds, then one division to seconds */
    double s = (double)((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec) / 1e9;
    return (s - t0) * 1e6;
}

int64_t p4n_batch(inst_t *S, const char *buf, const int64_t *ends, int64_t first, int64_t n, uint64_t port,
                  double now, double wall_t0, const uint8_t *fast, char *out, int64_t cap, int64_t room,
                  int64_t *oend, int64_t *oport, int64_t *res, double *tnow) {
    int64_t opos = 0, k = 0, drops = 0, i;
    res[5] = 0;
    for (i = first; i < n; i++) {
        int64_t start = i ? ends[i - 1] : 0, len = ends[i] - start;
        const char *d = buf + start;
        if (opos + len + room > cap) { res[5] = 3; break; }
        double t = wall_t0 >= 0 ? p4n_wall_us(wall_t0) : now;
        *tnow = t;
        p4n_fast_ingress(S, d, len, port, t, res);
        int64_t espec = res[2], prio = res[4];
        if (res[1] != -2 || espec < 0 || res[3]) { res[5] = 1; break; }
        if ((uint64_t)espec == S->drop_port) { drops++; continue; }
        if (espec >= 512 || prio < 0 || prio >= 8 || !fast[espec * 8 + prio]) { res[5] = 1; break; }
        int64_t w = p4n_fast_egress(S, d, len, res[0], (uint64_t)espec, t, out + opos);
        if (w == -2) { res[5] = 2; break; }
        if (w < 0) { drops++; continue; }
        opos += w;
        oend[k] = opos;
        oport[k++] = espec;
    }
    res[6] = k;
    res[7] = drops;
    return i;
}
