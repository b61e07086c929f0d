/* Waits without a deadline, under `timewarp run`: pthread_cond_wait and sem_wait (poll, select,
 * epoll and futex waits without timeout are in wait.c and syscall.c). Such a wait cannot end by time, so
 * the thread tells the run's time keeper it is idle (it no longer holds the clock back) and, woken, resumes
 * no earlier than anything that happened anywhere (what woke it among it). Without a keeper they pass
 * through untouched.
 *
 * A thread blocked in a call not interposed here (read, accept, waitpid, a contended mutex) is found by the
 * keeper itself (coordinator: a running thread that stopped reading the clock and sleeps in the kernel).
 * pthread_join is deliberately left to the keeper: the thread joined holds the clock until it releases its
 * slot, and an idle joiner let the keeper jump in the moment between that and the kernel ending it (a
 * process tearing down its thread pools at exit gave a polling parent seconds it never lived).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>

#include "tw_libc.h"


TW_EXPORT int pthread_cond_wait(pthread_cond_t *restrict cond, pthread_mutex_t *restrict mutex) {
    if (!tw_libc_virtual() || !tw_libc_keeper()) return tw_real.cond_wait(cond, mutex);
    tw_cv_wait_begin(cond);
    tw_libc_block_begin(0);   /* it holds the mutex: no settling, no jump (tw_tk_block_begin) */
    int r = tw_real.cond_wait(cond, mutex);
    tw_cv_wait_end(cond);
    tw_libc_block_end(tw_cond_wake(cond));
    return r;
}

TW_EXPORT int sem_wait(sem_t *sem) {
    if (!tw_libc_virtual() || !tw_libc_keeper()) return tw_real.sem_wait(sem);
    /* An uncontended semaphore (most of Python's lock acquisitions) is taken without waiting: announcing
     * an idle thread for it would let the keeper jump the clock past this one, which is running. */
    if (sem_trywait(sem) == 0) return 0;
    tw_sem_wait_begin(sem);
    tw_libc_block_begin(1);
    int r = tw_real.sem_wait(sem);
    tw_libc_block_end(tw_sem_wake(sem));
    tw_sem_wait_end(sem);
    return r;
}
