/* Sleeping: nanosleep, clock_nanosleep, usleep, sleep.
 *
 * A sleep is a pure wait: nothing but its deadline ends it, so the thread's virtual time goes to the deadline
 * through tw_sleep_until(), which blocks only a short bounded real time. glibc's sleep() and usleep() call
 * nanosleep internally, without the PLT, so they are interposed on their own.
 *
 * Signals do not cut a virtual sleep short: the call returns 0 (never EINTR) with nothing remaining. A
 * program that sleeps waiting for SIGALRM or a child's SIGCHLD sees the signal handled, then the full sleep
 * run out, in virtual time.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "tw/raw_syscall.h"
#include "tw_libc.h"

/* Sleep for rel_ns of virtual time from now. */
static void tw_sleep_for(int64_t rel_ns) {
    pthread_testcancel(); /* nanosleep and friends are cancellation points */
    uint64_t now = tw_libc_now();
    tw_libc_sleep_until((uint64_t)tw_add_sat((int64_t)now, rel_ns));
}

TW_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem) {
    /* A zero sleep is a yield and passes through; so does a malformed request (the real call rejects it). */
    if (!tw_libc_virtual() || !req || !tw_ts_valid(req) || (req->tv_sec == 0 && req->tv_nsec == 0))
        return tw_real.nanosleep(req, rem);
    tw_sleep_for(tw_ts_ns(req));
    if (rem) rem->tv_sec = rem->tv_nsec = 0;
    return 0;
}

int __nanosleep(const struct timespec *req, struct timespec *rem);
TW_EXPORT int __nanosleep(const struct timespec *req, struct timespec *rem) { return nanosleep(req, rem); }

/* Returns an error number, not -1/errno. */
TW_EXPORT int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem) {
    int64_t base;
    if (!tw_libc_virtual() || !req || !tw_ts_valid(req) || tw_libc_clock_base(clk, &base) != 0)
        return tw_real.clock_nanosleep(clk, flags, req, rem);
    if (flags & TIMER_ABSTIME) {
        /* The deadline is on the caller's (virtual) clock: CPython's time.sleep() computes
         * monotonic() + secs and sleeps to it. */
        int64_t target = tw_ts_ns(req) - base;
        pthread_testcancel();
        if (target > (int64_t)tw_libc_now()) tw_libc_sleep_until((uint64_t)target);
        return 0;
    }
    if (req->tv_sec == 0 && req->tv_nsec == 0) return tw_real.clock_nanosleep(clk, flags, req, rem);
    tw_sleep_for(tw_ts_ns(req));
    if (rem) rem->tv_sec = rem->tv_nsec = 0;
    return 0;
}

TW_EXPORT int usleep(useconds_t usec) {
    if (!tw_libc_virtual() || usec == 0) return tw_real.usleep(usec);
    /* usec >= 1000000 is EINVAL on some systems, never on glibc (it just sleeps): do the same. */
    tw_sleep_for((int64_t)usec * 1000);
    return 0;
}

TW_EXPORT unsigned int sleep(unsigned int seconds) {
    if (!tw_libc_virtual() || seconds == 0) return tw_real.sleep(seconds);
    tw_sleep_for((int64_t)seconds * TW_NS);
    return 0;
}

/* sched_yield: a busy wait's pause (vLLM's shared-memory queues spin on it while the processes they wait
 * for compute). Under the keeper the spinner first waits until no thread of another process can act before
 * its time (tw_tk_sync_now, the rule of a busy reader's non-blocking check): its clock then follows the
 * progress of the processes it waits for, not its own spinning, whose CPU on a loaded machine is time those
 * processes did not get (at TP=2, vLLM's engine took 21-47 virtual ms per decode step while its workers
 * took 4). TIMEWARP_POLL_SYNC=0 turns it off. */
TW_EXPORT int sched_yield(void) {
    if (tw_libc_virtual() && tw_libc_poll_sync_on() && tw_libc_keeper()) {
        tw_libc_bookkeeping_begin();
        (void)tw_tk_sync_now();
        tw_libc_bookkeeping_end();
    }
    return tw_real.sched_yield ? tw_real.sched_yield() : (int)tw_sys6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
}
