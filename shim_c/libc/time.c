/* Reading the time: clock_gettime, gettimeofday, time, timespec_get, ftime.
 *
 * Wall clocks (REALTIME, _COARSE, _ALARM, TAI) read the realtime epoch + tw_now(); MONOTONIC, _RAW,
 * _COARSE, BOOTTIME read the monotonic epoch + tw_now(). CPU-time clocks (PROCESS/THREAD_CPUTIME, the
 * negative per-pid/tid ids) and dynamic (PTP fd) clocks pass through: the core charges CPU time from them.
 *
 * The vDSO: glibc's clock_gettime jumps into the vDSO without a syscall, but callers reach it through the
 * libc symbol (CPython's time module, libstdc++'s chrono clocks, Rust std, the JVM), so interposing the
 * symbol is enough. glibc's own internal callers (time(), gettimeofday(), timespec_get() inside libc) do not
 * go through the PLT, so each public entry is interposed here too. Code that finds the vDSO itself (Go's
 * runtime) or issues the syscall instruction directly is not seen; syscall(SYS_clock_gettime) is (syscall.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "tw_libc.h"

/* Virtual value of clock clk in ns; returns -1 for a clock that passes through. */
static inline int tw_virtual_clock(clockid_t clk, int64_t *ns) {
    int64_t base;
    if (tw_libc_clock_base(clk, &base) != 0) return -1;
    *ns = base + (int64_t)tw_libc_now();
    return 0;
}

TW_EXPORT int clock_gettime(clockid_t clk, struct timespec *tp) {
    int64_t ns;
    if (__builtin_expect(!tw_libc_virtual(), 0) || tw_virtual_clock(clk, &ns) != 0)
        return tw_libc_real_clock_gettime(clk, tp);
    if (!tw_nonnull(tp)) { errno = EFAULT; return -1; }
    *tp = tw_ns_ts(ns);
    return 0;
}

/* glibc exports the same function as __clock_gettime@GLIBC_PRIVATE for its own libraries. */
int __clock_gettime(clockid_t clk, struct timespec *tp);
TW_EXPORT int __clock_gettime(clockid_t clk, struct timespec *tp) { return clock_gettime(clk, tp); }

TW_EXPORT int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    if (!tw_libc_virtual() || !tw_real.gettimeofday) {
        if (tw_real.gettimeofday) return tw_real.gettimeofday(tv, tz);
        errno = ENOSYS;
        return -1;
    }
    if (tz) { /* obsolete; the kernel answers zeros or the boot-time timezone: let libc fill it */
        struct timeval dummy;
        tw_real.gettimeofday(&dummy, tz);
    }
    if (tw_nonnull(tv)) {
        int64_t ns = 0;
        tw_virtual_clock(CLOCK_REALTIME, &ns);
        struct timespec ts = tw_ns_ts(ns);
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return 0;
}

TW_EXPORT time_t time(time_t *out) {
    if (!tw_libc_virtual() || !tw_real.time) {
        if (tw_real.time) return tw_real.time(out);
        struct timespec ts;
        tw_libc_real_clock_gettime(CLOCK_REALTIME, &ts);
        if (out) *out = ts.tv_sec;
        return ts.tv_sec;
    }
    int64_t ns = 0;
    tw_virtual_clock(CLOCK_REALTIME, &ns);
    time_t t = tw_ns_ts(ns).tv_sec;
    if (out) *out = t;
    return t;
}

TW_EXPORT int timespec_get(struct timespec *ts, int base) {
    if (!tw_libc_virtual() || base != TIME_UTC) {
        if (tw_real.timespec_get) return tw_real.timespec_get(ts, base);
        return 0;
    }
    int64_t ns = 0;
    tw_virtual_clock(CLOCK_REALTIME, &ns);
    *ts = tw_ns_ts(ns);
    return base;
}

/* ftime: removed from glibc's headers in 2.33 (sys/timeb.h is gone here) but still exported for old
 * binaries, so the struct is spelled out. */
struct tw_timeb {
    time_t time;
    unsigned short millitm;
    short timezone;
    short dstflag;
};

TW_EXPORT int ftime(struct tw_timeb *tp) {
    if (!tw_libc_virtual() || !tw_real.ftime) {
        if (tw_real.ftime) return tw_real.ftime(tp);
        errno = ENOSYS;
        return -1;
    }
    int64_t ns = 0;
    tw_virtual_clock(CLOCK_REALTIME, &ns);
    struct timespec ts = tw_ns_ts(ns);
    tp->time = ts.tv_sec;
    tp->millitm = (unsigned short)(ts.tv_nsec / 1000000);
    tp->timezone = 0; /* glibc's ftime has answered 0/0 since 2.31 */
    tp->dstflag = 0;
    return 0;
}

/* clock_getres is not interposed: resolutions are those of the host's clocks. */
