/* Condvar hand-overs under `timewarp run`: pthread_cond_signal and pthread_cond_broadcast, and what the
 * waits on a condvar (block.c's pthread_cond_wait, wait.c's timed ones) do around their real waits.
 *
 * Two things went wrong between a thread that signals a condvar and one that waits on it, on a loaded machine
 * above all (gloo's Pair::waitUntilConnected hung vLLM's TP=2 start-up in full test-suite runs;
 * tests/progs/cond_slices.c, 2000 hand-overs to a waiter with a 100 s deadline: 4-125 ran to the deadline):
 * - a lost wake-up. A timed wait is made of real slices (wait.c). A waiter whose slice timed out while the
 *   notifier held the mutex gets ETIMEDOUT: glibc (nptl, 2.36) has by then cancelled the wait, and a broadcast
 *   with no waiter registered does nothing. Its caller, told of a timeout, would look at its predicate; a
 *   slice short of the virtual deadline instead went back to waiting for a signal already sent. So signals
 *   and broadcasts are counted per condvar (a hashed table: a collision costs a spurious wake-up at most),
 *   and a slice that timed out with the count moved since the wait began ends as a wake-up, a spurious one
 *   at worst, which every correct caller allows for.
 * - a jump past a hand-over. The waiter, woken by the kernel, still shows as waiting in the keeper's table
 *   until it runs; the keeper settles (a short real pause with no change in the table) and jumps to the
 *   earliest deadline. So a signal or broadcast to a condvar with waiters is a message (message.c's holds):
 *   it holds the keeper's clock at the notifier's time until a waiter sees it (its wait ends) or the hold
 *   runs out (TIMEWARP_MSG_HOLD_US, longer while the waiter is runnable); the condvar's waiter is its reader.
 *   And a thread waiting on a condvar does not settle or jump itself (wait.c, block.c): it holds the mutex
 *   the woken thread needs, which could not run to change the table. Before jumps of 1 s or more the keeper
 *   also looks for runnable waiters in /proc (core/tk_shared.c).
 * With all of it, none of the 2000 hand-overs ran to the deadline (runs beside two CPU hogs included).
 * Process-shared condvars (signals from another process) are neither counted nor held.
 */
#define _GNU_SOURCE
#include <pthread.h>

#include "tw_libc.h"

#define TW_CV_NOTES 4096
static uint32_t notes[TW_CV_NOTES];

static inline uint32_t *note_of(const void *cond) {
    uintptr_t a = (uintptr_t)cond >> 4;
    return &notes[(a ^ (a >> 12) ^ (a >> 24)) % TW_CV_NOTES];
}

uint32_t tw_cv_notes(const void *cond) { return cond ? __atomic_load_n(note_of(cond), __ATOMIC_ACQUIRE) : 0; }

static inline int shared(const void *c) { return tw_cond_wake(c) == TW_WAKE_ANY; }
/* glibc's condvar (nptl; checked on 2.36): bits 3+ of __wrefs count its waiters (wait.c reads its other bits) */
static inline int has_waiters(const pthread_cond_t *c) { return __atomic_load_n(&c->__data.__wrefs, __ATOMIC_ACQUIRE) >> 3; }

static void notify(pthread_cond_t *cond) {
    __atomic_add_fetch(note_of(cond), 1, __ATOMIC_ACQ_REL);
    if (has_waiters(cond) && !shared(cond) && tw_libc_virtual() && tw_libc_keeper()) {
        tw_libc_depth++;
        tw_tk_msg_sent(tw_msg_sync_key(cond), 1);
        tw_libc_depth--;
    }
}

TW_EXPORT int pthread_cond_signal(pthread_cond_t *cond) {
    notify(cond);
    return tw_real_cond_notify(cond, 0);
}

TW_EXPORT int pthread_cond_broadcast(pthread_cond_t *cond) {
    notify(cond);
    return tw_real_cond_notify(cond, 1);
}

/* The calling thread is about to wait on cond (the keeper on): it is the reader a hold waits for. */
void tw_cv_wait_begin(const void *cond) {
    if (shared(cond)) return;
    tw_libc_depth++;
    tw_tk_msg_reader(tw_msg_sync_key(cond));
    tw_libc_depth--;
}

/* Its wait ended: what was signalled is seen (the hold ends). */
void tw_cv_wait_end(const void *cond) {
    if (shared(cond)) return;
    uint64_t t;
    tw_libc_depth++;
    (void)tw_tk_msg_at(tw_msg_sync_key(cond), &t);
    tw_libc_depth--;
}
