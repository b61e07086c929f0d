/* What the libc interposers share: resolving the real functions, the TIMEWARP_VIRTUAL_TIME switch, the
 * "inside the shim" flag, the cached clock epochs, and deadline translation. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "tw_libc.h"

int tw_libc_state = TW_LIBC_UNINIT;
__thread int tw_libc_depth __attribute__((tls_model("initial-exec")));
tw_libc_real tw_real;

/* Per thread: the last virtual time this thread saw, so that its readings never go back. */
static __thread uint64_t tw_libc_last __attribute__((tls_model("initial-exec")));

/* ---------------------------------------------------------------- raw clock, for before resolution */
/* clock_gettime without libc: used only if a clock read arrives while the real functions are being
 * resolved (dlsym calling back into us). The kernel's clock_gettime; the vDSO is not worth finding here. */
static long tw_raw_syscall2(long nr, long a1, long a2) {
    long ret;
#if defined(__x86_64__)
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a1), "S"(a2) : "rcx", "r11", "memory");
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = nr;
    register long x0 __asm__("x0") = a1;
    register long x1 __asm__("x1") = a2;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1) : "memory");
    ret = x0;
#else
#error "tw_raw_syscall2: unsupported architecture"
#endif
    return ret;
}

long tw_raw_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6) {
    long ret;
#if defined(__x86_64__)
    register long r10 __asm__("r10") = a4;
    register long r8 __asm__("r8") = a5;
    register long r9 __asm__("r9") = a6;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
#elif defined(__aarch64__)
    register long x8 __asm__("x8") = nr;
    register long x0 __asm__("x0") = a1;
    register long x1 __asm__("x1") = a2;
    register long x2 __asm__("x2") = a3;
    register long x3 __asm__("x3") = a4;
    register long x4 __asm__("x4") = a5;
    register long x5 __asm__("x5") = a6;
    __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
    ret = x0;
#endif
    if (ret < 0 && ret > -4096) { errno = (int)-ret; return -1; }
    return ret;
}

int tw_libc_real_clock_gettime(clockid_t clk, struct timespec *tp) {
    int (*fn)(clockid_t, struct timespec *) = __atomic_load_n(&tw_real.clock_gettime, __ATOMIC_RELAXED);
    if (__builtin_expect(fn != NULL, 1)) return fn(clk, tp);
    long r = tw_raw_syscall2(SYS_clock_gettime, clk, (long)tp);
    if (r < 0) { errno = (int)-r; return -1; }
    return 0;
}

/* ---------------------------------------------------------------- init */
static void *tw_resolve(const char *name) { return dlsym(RTLD_NEXT, name); }

/* pthread_cond_timedwait has two versions: GLIBC_2.2.5 (the pre-2.3.2 condvar, 8 bytes wide: compat only)
 * and the default one. dlsym(RTLD_NEXT) returns the default, but ask for it by name where the version is
 * known so that no glibc quirk hands us the compat one. */
static void *tw_resolve_cond(const char *name) {
    void *p = NULL;
#if defined(__x86_64__)
    p = dlvsym(RTLD_NEXT, name, "GLIBC_2.3.2");
#elif defined(__aarch64__)
    p = dlvsym(RTLD_NEXT, name, "GLIBC_2.17");
#endif
    return p ? p : dlsym(RTLD_NEXT, name);
}

int tw_libc_epoch_ok;                           /* 0: epochs not read yet (or a fork child) */
static int64_t tw_epoch_rt, tw_epoch_mono; /* wall clocks at the virtual epoch */
static int64_t tw_off_raw, tw_off_boot, tw_off_tai; /* real (clock - family clock), read with the epochs */

static void tw_libc_atfork_child(void) { __atomic_store_n(&tw_libc_epoch_ok, 0, __ATOMIC_RELEASE); }

/* Resolves every real function once. Safe from another library's constructor (nothing here needs our own
 * constructor to have run) and from several threads at once (they store the same values). Re-entered from
 * dlsym (tw_libc_depth > 0): answers OFF so that the nested call passes through. */
int tw_libc_init(void) {
    int s = __atomic_load_n(&tw_libc_state, __ATOMIC_ACQUIRE);
    if (s != TW_LIBC_UNINIT) return s;
    if (tw_libc_depth) return TW_LIBC_OFF;
    tw_libc_depth++;
    tw_libc_real r;
    memset(&r, 0, sizeof r);
    void *sym;
    /* memcpy: ISO C has no cast from an object pointer to a function pointer (POSIX guarantees it works) */
#define R_SET(field, expr) (sym = (expr), memcpy(&r.field, &sym, sizeof sym))
#define R(field, name) R_SET(field, tw_resolve(name))
    R(clock_gettime, "clock_gettime");
    __atomic_store_n(&tw_real.clock_gettime, r.clock_gettime, __ATOMIC_RELAXED);
    R(gettimeofday, "gettimeofday");
    R(time, "time");
    R(ftime, "ftime");
    R(timespec_get, "timespec_get");
    R(nanosleep, "nanosleep");
    R(clock_nanosleep, "clock_nanosleep");
    R(usleep, "usleep");
    R(sleep, "sleep");
    R(poll, "poll");
    R(ppoll, "ppoll");
    R(poll_chk, "__poll_chk");
    R(ppoll_chk, "__ppoll_chk");
    R(select, "select");
    R(pselect, "pselect");
    R(epoll_wait, "epoll_wait");
    R(epoll_pwait, "epoll_pwait");
    R(epoll_pwait2, "epoll_pwait2");
    R_SET(cond_timedwait, tw_resolve_cond("pthread_cond_timedwait"));
    R(cond_clockwait, "pthread_cond_clockwait");
    R(sem_timedwait, "sem_timedwait");
    R(sem_clockwait, "sem_clockwait");
    R(mutex_timedlock, "pthread_mutex_timedlock");
    R(mutex_clocklock, "pthread_mutex_clocklock");
    R(rwlock_timedrdlock, "pthread_rwlock_timedrdlock");
    R(rwlock_timedwrlock, "pthread_rwlock_timedwrlock");
    R(rwlock_clockrdlock, "pthread_rwlock_clockrdlock");
    R(rwlock_clockwrlock, "pthread_rwlock_clockwrlock");
    R(timedjoin_np, "pthread_timedjoin_np");
    R(clockjoin_np, "pthread_clockjoin_np");
    R(sigtimedwait, "sigtimedwait");
    R(syscall, "syscall");
#undef R
#undef R_SET
    tw_real = r;
    const char *e = getenv("TIMEWARP_VIRTUAL_TIME");
    int on = !(e && e[0] == '0' && e[1] == '\0');
    /* Without the clock or syscall there is nothing safe to do but pass through. */
    if (!r.clock_gettime || !r.syscall) on = 0;
    if (on) pthread_atfork(NULL, NULL, tw_libc_atfork_child);
    s = on ? TW_LIBC_ON : TW_LIBC_OFF;
    __atomic_store_n(&tw_libc_state, s, __ATOMIC_RELEASE);
    tw_libc_depth--;
    return s;
}

/* Resolve early where we can: most calls then find init done. Not relied on (see tw_libc_init). */
__attribute__((constructor)) static void tw_libc_ctor(void) { tw_libc_init(); }

/* ---------------------------------------------------------------- epochs */
/* Returns 0 when the core has no epoch yet: a call can come from a library constructor that runs before
 * the core's. Until then time passes through; real time then is about the epoch, and later virtual readings
 * (epoch + tw_now()) are not below it, so the clock does not go back at the switch. */
int tw_libc_load_epochs(void) {
    int64_t rt = 0, mono = 0;
    tw_libc_depth++;
    tw_clock_epoch(&rt, &mono);
    tw_libc_depth--;
    if (rt == 0 && mono == 0) return 0;
    /* The offsets between clocks of one family, as the host has them now: MONOTONIC_RAW drifts from
     * MONOTONIC by NTP slewing, BOOTTIME adds suspend time, TAI adds leap seconds (0 unless set). */
    struct timespec a, b;
    tw_libc_real_clock_gettime(CLOCK_MONOTONIC, &a);
    tw_libc_real_clock_gettime(CLOCK_MONOTONIC_RAW, &b);
    tw_off_raw = tw_ts_ns(&b) - tw_ts_ns(&a);
    tw_libc_real_clock_gettime(CLOCK_BOOTTIME, &b);
    tw_off_boot = tw_ts_ns(&b) - tw_ts_ns(&a);
    tw_libc_real_clock_gettime(CLOCK_REALTIME, &a);
    tw_libc_real_clock_gettime(CLOCK_TAI, &b);
    tw_off_tai = (tw_ts_ns(&b) - tw_ts_ns(&a) + TW_NS / 2) / TW_NS * TW_NS; /* whole seconds */
    tw_epoch_rt = rt;
    tw_epoch_mono = mono;
    __atomic_store_n(&tw_libc_epoch_ok, 1, __ATOMIC_RELEASE);
    return 1;
}

int tw_libc_clock_base(clockid_t clk, int64_t *base) {
    if (__builtin_expect(!__atomic_load_n(&tw_libc_epoch_ok, __ATOMIC_ACQUIRE), 0) && !tw_libc_load_epochs()) return -1;
    switch (clk) {
    case CLOCK_REALTIME:
    case CLOCK_REALTIME_COARSE:
    case CLOCK_REALTIME_ALARM:
        *base = tw_epoch_rt;
        return 0;
    case CLOCK_TAI:
        *base = tw_epoch_rt + tw_off_tai;
        return 0;
    case CLOCK_MONOTONIC:
    case CLOCK_MONOTONIC_COARSE:
        *base = tw_epoch_mono;
        return 0;
    case CLOCK_MONOTONIC_RAW:
        *base = tw_epoch_mono + tw_off_raw;
        return 0;
    case CLOCK_BOOTTIME:
    case CLOCK_BOOTTIME_ALARM:
        *base = tw_epoch_mono + tw_off_boot;
        return 0;
    default: /* CPU-time clocks (2, 3, negative pid/tid clocks), dynamic (fd) clocks, unknown ids */
        return -1;
    }
}

/* ---------------------------------------------------------------- virtual time */
uint64_t tw_libc_now(void) {
    tw_libc_depth++;
    uint64_t t = tw_now();
    tw_libc_depth--;
    /* tw_now() is the process clock (a max over threads) and should never go back; this keeps each
     * thread's readings monotonic even if it did. */
    if (__builtin_expect(t < tw_libc_last, 0)) return tw_libc_last;
    tw_libc_last = t;
    return t;
}

int tw_libc_abs_deadline(clockid_t clk, const struct timespec *abs, struct timespec *real_abs,
                         uint64_t *target) {
    int64_t base;
    if (!abs || !tw_ts_valid(abs) || tw_libc_clock_base(clk, &base) != 0) return 0;
    int64_t t = tw_ts_ns(abs) - base; /* the deadline in virtual time */
    if (t < 0) t = 0;
    int64_t remaining = t - (int64_t)tw_libc_now();
    if (remaining < 0) remaining = 0; /* already due: the real call makes a non-blocking check */
    struct timespec now;
    if (tw_libc_real_clock_gettime(clk, &now) != 0) return 0;
    *real_abs = tw_ns_ts(tw_add_sat(tw_ts_ns(&now), remaining));
    *target = (uint64_t)t;
    return 1;
}

void tw_libc_timed_out(uint64_t target) {
    int saved = errno;
    tw_libc_depth++;
    tw_wait_until(target);
    tw_libc_depth--;
    if (target > tw_libc_last) tw_libc_last = target;
    errno = saved;
}

void tw_libc_sleep_until(uint64_t target) {
    int saved = errno;
    tw_libc_depth++;
    tw_sleep_until(target);
    tw_libc_depth--;
    if (target > tw_libc_last) tw_libc_last = target;
    errno = saved;
}

