/* Meeting the other ranks of a collective across processes, through the run's time keeper
 * (tw/timekeeper.h: the collective table in the shared clock file). A rank posts when its operation could
 * start (its arrival) and its argument, then waits until every rank has posted; each rank then knows all
 * arrivals and computes the same completion. While it waits the thread is idle for the keeper (it holds no
 * one back) and its own clock does not move: the wait is the emulator's, not the program's.
 *
 * A peer that dies or stays stopped while the others wait is reported: the wait returns an error naming it
 * (checked every TW_COLL_CHECK_NS of real time against the members' process ids).
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "tw/timekeeper.h"

#define TW_COLL_CHECK_NS 500000000ll
#define TW_COLL_GRACE_NS 2000000ll
#define TW_COLL_STOPPED_NS 10000000000ll   /* a peer stopped (SIGSTOP) this long is a failure */

int tw_coll_available(void) { return tw_tk != NULL; }

int tw_coll_post(uint64_t key, int nranks, int rank, uint64_t arrival, int64_t arg, int gpu) {
    tw_tk_shared *k = tw_tk;
    if (!k || nranks > TW_TK_MAX_RANKS || rank < 0 || rank >= nranks) return -1;
    tw_tk_coll_lock(k);
    int h = -1, free_slot = -1;
    for (int i = 0; i < TW_TK_COLLS; i++) {
        tw_tk_coll *c = &k->colls[i];
        if (c->state == TW_COLL_OPEN && c->key == key) { h = i; break; }
        if (c->state == TW_COLL_FREE && free_slot < 0) free_slot = i;
    }
    if (h < 0 && free_slot >= 0) {
        h = free_slot;
        tw_tk_coll *c = &k->colls[h];
        memset(c, 0, sizeof *c);
        c->key = key;
        c->nranks = (uint32_t)nranks;
        c->state = TW_COLL_OPEN;
        for (int r = 0; r < nranks; r++) c->pid[r] = 0;
    }
    int complete = 0;
    if (h >= 0) {
        tw_tk_coll *c = &k->colls[h];
        c->pid[rank] = (int32_t)getpid();
        c->arrival[rank] = arrival;
        c->bytes[rank] = arg;
        c->gpu[rank] = gpu;
        complete = ++c->arrived == c->nranks;
    }
    tw_tk_coll_unlock(k);
    if (complete) tw_tk_wake_all(k);
    return h;
}

int tw_coll_wait(int h, const int32_t *member_pids, int nmembers, uint64_t *arrivals, int64_t *args, int32_t *gpus,
                 int32_t *pids, char *why, size_t whylen) {
    tw_tk_shared *k = tw_tk;
    tw_tk_coll *c = &k->colls[h];
    tw_tk_slot *s = tw_tk_thread_slot(tw_now());
    uint32_t saved = s ? __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) : 0;
    int64_t started = tw_tk_real_ns(), next_check = started + TW_COLL_CHECK_NS;
    int64_t stopped_since[TW_TK_MAX_RANKS] = {0};
    int idle = 0, rc = 0;
    for (;;) {
        uint32_t g0 = __atomic_load_n(&k->gen, __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&c->arrived, __ATOMIC_ACQUIRE) == c->nranks) break;
        if (__atomic_load_n(&k->aborted, __ATOMIC_ACQUIRE)) {
            snprintf(why, whylen, "the run was aborted: %s", k->abort_reason);
            rc = -1;
            break;
        }
        /* For a short real grace the waiting thread still holds the clock at its own time: the real
         * host does not wait for its peers here (launches are asynchronous), so while they are about to
         * arrive time must not pass it by. After the grace it goes idle: a peer may be waiting for the
         * clock itself (a synchronize, a sleep) before it can arrive. */
        if (!idle && s && tw_tk_real_ns() - started > TW_COLL_GRACE_NS) {
            idle = 1;
            __atomic_store_n(&s->state, TW_SLOT_BLOCK, __ATOMIC_RELEASE);
            __atomic_add_fetch(&k->changes, 1, __ATOMIC_RELAXED);
            tw_tk_advance(k);
        }
        int64_t now = tw_tk_real_ns();
        if (now >= next_check && member_pids) {
            next_check = now + TW_COLL_CHECK_NS;
            for (int r = 0; r < nmembers && !rc; r++) {
                if (__atomic_load_n(&c->pid[r], __ATOMIC_ACQUIRE) || member_pids[r] == getpid()) continue;
                char st = tw_tk_task_state(member_pids[r], 0);
                if (st == '\0' || st == 'Z' || st == 'X') {
                    snprintf(why, whylen, "rank %d (pid %d) exited or was killed before joining this operation",
                             r, member_pids[r]);
                    rc = -2;
                } else if (st == 'T' || st == 't') {
                    if (!stopped_since[r]) stopped_since[r] = now;
                    else if (now - stopped_since[r] > TW_COLL_STOPPED_NS) {
                        snprintf(why, whylen, "rank %d (pid %d) has been stopped for %.0f s", r, member_pids[r],
                                 (now - stopped_since[r]) / 1e9);
                        rc = -2;
                    }
                } else stopped_since[r] = 0;
            }
            if (rc) break;
        }
        tw_tk_futex_wait(k, g0, idle ? 1000000 : 100000);
    }
    if (s && idle) {
        __atomic_store_n(&s->state, saved == TW_SLOT_FREE ? TW_SLOT_RUN : saved, __ATOMIC_RELEASE);
        __atomic_add_fetch(&k->changes, 1, __ATOMIC_RELAXED);
    }
    tw_clock_forget_cpu();  /* the wait is the emulator's */
    if (rc) return rc;
    for (uint32_t r = 0; r < c->nranks; r++) {
        if (arrivals) arrivals[r] = c->arrival[r];
        if (args) args[r] = c->bytes[r];
        if (gpus) gpus[r] = c->gpu[r];
        if (pids) pids[r] = c->pid[r];
    }
    return 0;
}

void tw_coll_leave(int h) {
    tw_tk_shared *k = tw_tk;
    if (!k || h < 0) return;
    tw_tk_coll_lock(k);
    tw_tk_coll *c = &k->colls[h];
    if (++c->left >= c->nranks) { c->state = TW_COLL_FREE; c->key = 0; }
    tw_tk_coll_unlock(k);
}

const char *tw_coll_topology(void) { return tw_tk ? tw_tk->topology : NULL; }
