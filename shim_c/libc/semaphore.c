/* Semaphore hand-overs from a feeder thread under `timewarp run`: sem_post, and what the waits on a semaphore
 * (block.c's sem_wait, wait.c's timed ones) do around their real waits.
 *
 * Why: a feeder (an own-clock thread that hands its process data through memory: vLLM's EngineCore input
 * thread, tests/progs/idle_timers.py) wakes a thread of its process's timeline with a semaphore (Python's
 * locks: queue.put's notify releases the waiter's lock). Woken by its own process (TW_WAKE_LOCAL), that
 * thread resumed at its process's time, which lags the feeder's after an idle spell, and its next step was
 * to take Python's GIL from the feeder. CPython waits for it in 5 ms timed waits; their deadlines, behind
 * the run's clock, were due at once, so each real moment the feeder still held the GIL (preempted on a loaded
 * machine) cost the woken thread a whole switch interval of virtual time: idle_timers.py under three CPU
 * hogs, 200 messages, took messages 5.0-5.5 ms after they were put in 6 of 26 runs (a CI run failed on it);
 * with this file, in none of 12 (nor of 28 with a first version of it). Virtually the GIL was free when that
 * thread asked: the feeder took it later, at its own time.
 *
 * So a feeder's post to a private semaphore is a message to the semaphore's waiter (message.c's channel for
 * the object): stamped with the feeder's time, and held like a condvar's signal (condvar.c) while a waiter
 * is there to see it; the waiter, its wait ended, resumes no earlier than the earliest post it had not seen.
 * Posts by other threads are untouched: a lock hand-over between threads of one timeline carries nothing.
 * A waiter names itself the reader (the hold then stands while it is runnable and has not run) only in a
 * process with a feeder: elsewhere every contended lock would take an entry of the run's message table for
 * nothing. Without it, a post's hold is TIMEWARP_MSG_HOLD_US: beside three hogs a message was taken 0.92 ms
 * late once in 12 runs; with it, 0.58 ms at most in 12.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <semaphore.h>

#include "tw_libc.h"

static inline int private_sem(const void *sem) { return tw_sem_wake(sem) == TW_WAKE_LOCAL; }
/* glibc's semaphore (nptl, 64-bit atomics; checked on 2.36): a 64-bit word, the value in its low half and the
 * number of waiters in its high half */
static inline int has_waiters(const void *sem) { return __atomic_load_n((const uint64_t *)sem, __ATOMIC_ACQUIRE) >> 32; }

TW_EXPORT int sem_post(sem_t *sem) {
    /* a post that wakes nobody is not stamped: the feeder's every lock release would take a table entry */
    if (tw_libc_virtual() && has_waiters(sem) && private_sem(sem) && tw_clock_is_feeder() && tw_libc_keeper()) {
        tw_libc_depth++;
        tw_tk_msg_sent(tw_msg_sync_key(sem), 1);
        tw_libc_depth--;
    }
    return tw_real_sem_post(sem);
}

/* The calling thread is about to wait on sem (the keeper on): it is the reader a feeder's post is held for. */
void tw_sem_wait_begin(const void *sem) {
    if (!tw_clock_has_feeder() || !private_sem(sem)) return;
    int saved = errno;
    tw_libc_depth++;
    tw_tk_msg_reader(tw_msg_sync_key(sem));
    tw_libc_depth--;
    errno = saved;
}

/* Its wait ended (tw_libc_kw_end or tw_libc_block_end has set the thread running): a feeder's post it had not
 * seen raises it to the post's time, and is seen (the hold ends). Only a feeder of the waiter's own process
 * stamps the semaphore's channel: elsewhere there is nothing to look up. */
void tw_sem_wait_end(const void *sem) {
    if (!tw_clock_has_feeder() || !private_sem(sem)) return;
    int saved = errno;
    uint64_t key = tw_msg_sync_key(sem), first, t;
    tw_libc_depth++;
    int posted = tw_tk_msg_first_at(key, &first);
    (void)tw_tk_msg_at(key, &t);
    if (posted) tw_clock_raise(first);
    tw_libc_depth--;
    errno = saved;
}
