/* A stand-in for the core's virtual clock (shim_c/core/vclock.c), so that the libc interposers can be tested
 * alone: build it with the other shim_c/libc sources and -DTW_LIBC_FAKE_CORE into a test library
 * (tests/c/test_libc_run.sh). Not part of libtimewarp.so: without TW_LIBC_FAKE_CORE it compiles to nothing,
 * and its definitions are weak, so the real core wins even if it is linked in by mistake.
 *
 * The same semantics as core.h, simplified: one process clock; a reading adds the calling thread's CPU time
 * since its previous reading (no host-speed factor); tw_wait_until(t) raises the clock to t.
 * tw_fake_advance(ns) jumps it, for tests that need the virtual clock far from the real one.
 */
#ifdef TW_LIBC_FAKE_CORE
#include <sched.h>
#define _GNU_SOURCE
#include <time.h>

#include "tw_libc.h"

static uint64_t tw_fake_clock;
static __thread uint64_t tw_fake_last_cpu;
static __thread int tw_fake_seen;

static void tw_fake_raise(uint64_t t) {
    uint64_t cur = __atomic_load_n(&tw_fake_clock, __ATOMIC_RELAXED);
    while (cur < t && !__atomic_compare_exchange_n(&tw_fake_clock, &cur, t, 1, __ATOMIC_RELAXED,
                                                   __ATOMIC_RELAXED)) {
    }
}

__attribute__((weak)) uint64_t tw_now(void) {
    struct timespec ts;
    tw_libc_real_clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    uint64_t cpu = (uint64_t)tw_ts_ns(&ts);
    if (tw_fake_seen) __atomic_add_fetch(&tw_fake_clock, cpu - tw_fake_last_cpu, __ATOMIC_RELAXED);
    tw_fake_last_cpu = cpu;
    tw_fake_seen = 1;
    return __atomic_load_n(&tw_fake_clock, __ATOMIC_RELAXED);
}

__attribute__((weak)) void tw_wait_until(uint64_t t) { tw_fake_raise(t); }

/* the core's sleep also really sleeps a bounded slice; the fake only jumps */
__attribute__((weak)) void tw_sleep_until(uint64_t t) { tw_fake_raise(t); sched_yield(); }

__attribute__((weak)) void tw_clock_epoch(int64_t *realtime_ns, int64_t *monotonic_ns) {
    static int64_t rt, mono;
    static int done;
    if (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
        struct timespec a, b;
        tw_libc_real_clock_gettime(CLOCK_REALTIME, &a);
        tw_libc_real_clock_gettime(CLOCK_MONOTONIC, &b);
        rt = tw_ts_ns(&a);
        mono = tw_ts_ns(&b);
        __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
    }
    *realtime_ns = rt;
    *monotonic_ns = mono;
}

TW_EXPORT __attribute__((weak)) void tw_fake_advance(uint64_t ns) {
    tw_fake_raise(__atomic_load_n(&tw_fake_clock, __ATOMIC_RELAXED) + ns);
}

TW_EXPORT __attribute__((weak)) uint64_t tw_fake_clock_now(void) {
    return __atomic_load_n(&tw_fake_clock, __ATOMIC_RELAXED);
}
#else
typedef int tw_libc_fake_core_unused; /* ISO C: no empty translation unit */
#endif
