/* syscall(2): futex waits with a timeout, and the clock and sleep syscalls, made through libc's generic
 * syscall() rather than their wrappers. libstdc++ waits this way (std::future::wait_until,
 * std::condition_variable on some builds, std::atomic::wait, std::counting_semaphore:
 * syscall(SYS_futex, FUTEX_WAIT_BITSET, absolute deadline)), and some code reads clocks this way.
 *
 * syscall() is variadic: six longs are read whatever the number, as glibc's own syscall() does (on x86-64
 * and aarch64 the arguments travel in registers, so reading unused ones is harmless). Every other number
 * passes through unchanged.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <stdarg.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "tw_libc.h"

#ifndef FUTEX_LOCK_PI2
#define FUTEX_LOCK_PI2 13
#endif

static long tw_real_syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6) {
    if (__builtin_expect(tw_real.syscall != NULL, 1)) return tw_real.syscall(nr, a1, a2, a3, a4, a5, a6);
    return tw_raw_syscall6(nr, a1, a2, a3, a4, a5, a6);
}

/* One keeper slice of a wait with an absolute deadline in argument slot 4: now + rel on clock clk. */
typedef struct { clockid_t clk; long nr, a1, a2, a3, a5, a6; long r; } tw_abs_ctx;
static int tw_abs_call(void *c, int64_t rel) {
    tw_abs_ctx *x = c;
    struct timespec abs = tw_libc_real_after(x->clk, rel);
    x->r = tw_real_syscall(x->nr, x->a1, x->a2, x->a3, (long)&abs, x->a5, x->a6);
    return !(x->r == -1 && errno == ETIMEDOUT);
}

/* A wait with an absolute deadline in argument slot 4 (a4): translate it, as wait.c does. */
static long tw_syscall_abs_wait(clockid_t clk, long nr, long a1, long a2, long a3, long a4, long a5, long a6) {
    const struct timespec *abs = (const struct timespec *)a4;
    struct timespec real_abs;
    uint64_t target;
    if (!tw_libc_abs_deadline(clk, abs, &real_abs, &target)) return tw_real_syscall(nr, a1, a2, a3, a4, a5, a6);
    if (tw_libc_keeper()) {
        tw_abs_ctx x = {clk, nr, a1, a2, a3, a5, a6, 0};
        int wake = (nr == SYS_futex && (a2 & FUTEX_PRIVATE_FLAG)) ? TW_WAKE_LOCAL : TW_WAKE_ANY;
        if (!tw_libc_keeper_wait(target, tw_abs_call, &x, wake)) { errno = ETIMEDOUT; return -1; }
        return x.r;
    }
    long r = tw_real_syscall(nr, a1, a2, a3, (long)&real_abs, a5, a6);
    if (r == -1 && errno == ETIMEDOUT) tw_libc_timed_out(target);
    return r;
}

/* A futex wait without timeout: idle for the keeper until woken. */
static long tw_futex_block(long a1, long a2, long a3, long a4, long a5, long a6) {
    if (!tw_libc_keeper()) return tw_real_syscall(SYS_futex, a1, a2, a3, a4, a5, a6);
    /* the word already differs: the kernel would return at once (EAGAIN); no idle announcement */
    if (__atomic_load_n((const int *)a1, __ATOMIC_ACQUIRE) != (int)a3) { errno = EAGAIN; return -1; }
    tw_libc_block_begin(1);
    long r = tw_real_syscall(SYS_futex, a1, a2, a3, a4, a5, a6);
    tw_libc_block_end((a2 & FUTEX_PRIVATE_FLAG) ? TW_WAKE_LOCAL : TW_WAKE_ANY);
    return r;
}

/* FUTEX_WAIT with a relative timeout, in keeper slices */
typedef struct { long a1, a2, a3, a5, a6; long r; } tw_futex_ctx;
static int tw_futex_call(void *c, int64_t rel) {
    tw_futex_ctx *x = c;
    struct timespec ts = tw_ns_ts(rel);
    x->r = tw_real_syscall(SYS_futex, x->a1, x->a2, x->a3, (long)&ts, x->a5, x->a6);
    return !(x->r == -1 && errno == ETIMEDOUT);
}

static uint64_t tw_rel_futex_target(const struct timespec *tmo) {
    return (uint64_t)tw_add_sat((int64_t)tw_libc_now(), tw_ts_ns(tmo));
}

/* futex(uaddr, op, val, timeout, uaddr2, val3) */
static long tw_futex(long a1, long a2, long a3, long a4, long a5, long a6) {
    int op = (int)a2;
    int cmd = op & FUTEX_CMD_MASK;
    const struct timespec *tmo = (const struct timespec *)a4;
    clockid_t clk = (op & FUTEX_CLOCK_REALTIME) ? CLOCK_REALTIME : CLOCK_MONOTONIC;
    switch (cmd) {
    case FUTEX_WAIT: { /* relative, measured by the kernel on CLOCK_MONOTONIC */
        if (!tmo) return tw_futex_block(a1, a2, a3, a4, a5, a6);
        if (!tw_ts_valid(tmo) || (tmo->tv_sec == 0 && tmo->tv_nsec == 0)) break;
        if (tw_libc_keeper()) {
            tw_futex_ctx x = {a1, a2, a3, a5, a6, 0};
            if (!tw_libc_keeper_wait(tw_rel_futex_target(tmo), tw_futex_call, &x,
                                     (a2 & FUTEX_PRIVATE_FLAG) ? TW_WAKE_LOCAL : TW_WAKE_ANY)) { errno = ETIMEDOUT; return -1; }
            return x.r;
        }
        uint64_t target = (uint64_t)tw_add_sat((int64_t)tw_libc_now(), tw_ts_ns(tmo));
        long r = tw_real_syscall(SYS_futex, a1, a2, a3, a4, a5, a6);
        if (r == -1 && errno == ETIMEDOUT) tw_libc_timed_out(target);
        return r;
    }
    case FUTEX_WAIT_BITSET:
        if (!tmo) return tw_futex_block(a1, a2, a3, a4, a5, a6);
        return tw_syscall_abs_wait(clk, SYS_futex, a1, a2, a3, a4, a5, a6);
    case FUTEX_WAIT_REQUEUE_PI:
    case FUTEX_LOCK_PI2: /* absolute; CLOCK_MONOTONIC unless FUTEX_CLOCK_REALTIME */
        return tw_syscall_abs_wait(clk, SYS_futex, a1, a2, a3, a4, a5, a6);
    case FUTEX_LOCK_PI: /* absolute, always CLOCK_REALTIME */
        return tw_syscall_abs_wait(CLOCK_REALTIME, SYS_futex, a1, a2, a3, a4, a5, a6);
    default:
        break;
    }
    return tw_real_syscall(SYS_futex, a1, a2, a3, a4, a5, a6);
}

TW_EXPORT long syscall(long nr, ...) {
    va_list ap;
    va_start(ap, nr);
    long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
    long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
    va_end(ap);
    if (!tw_libc_virtual()) return tw_real_syscall(nr, a1, a2, a3, a4, a5, a6);
    switch (nr) {
    case SYS_futex:
        return tw_futex(a1, a2, a3, a4, a5, a6);
#ifdef SYS_futex_waitv
    case SYS_futex_waitv: /* (waiters, n, flags, absolute timeout, clockid) */
        return tw_syscall_abs_wait((clockid_t)a5, nr, a1, a2, a3, a4, a5, a6);
#endif
    /* The wrappers below are this library's interposers, which follow the same -1/errno convention
     * (clock_nanosleep excepted). */
    case SYS_clock_gettime:
        return clock_gettime((clockid_t)a1, (struct timespec *)a2);
    case SYS_gettimeofday:
        return gettimeofday((struct timeval *)a1, (void *)a2);
#ifdef SYS_time
    case SYS_time:
        return (long)time((time_t *)a1);
#endif
    case SYS_epoll_ctl: {   /* message.c maps epoll's user data back to descriptors */
        long r = tw_real_syscall(nr, a1, a2, a3, a4, a5, a6);
        if (r == 0) tw_msg_epoll_ctl((int)a1, (int)a2, (int)a3, (const struct epoll_event *)a4);
        return r;
    }
    case SYS_close:   /* message.c's descriptor keys (libuv closes this way) */
        tw_msg_forget(a1, a1);
        return tw_real_syscall(nr, a1, a2, a3, a4, a5, a6);
#ifdef SYS_close_range
    case SYS_close_range:
        tw_msg_forget(a1, a2 > 0x7fffffff ? 0x7fffffff : a2);
        return tw_real_syscall(nr, a1, a2, a3, a4, a5, a6);
#endif
    case SYS_nanosleep:
        return nanosleep((const struct timespec *)a1, (struct timespec *)a2);
    case SYS_clock_nanosleep: {
        int e = clock_nanosleep((clockid_t)a1, (int)a2, (const struct timespec *)a3, (struct timespec *)a4);
        if (e) { errno = e; return -1; }
        return 0;
    }
    default:
        return tw_real_syscall(nr, a1, a2, a3, a4, a5, a6);
    }
}
