/* The time keeper's own loop, run by the coordinator (coordinator/clock.py loads this library with ctypes
 * and calls tw_keeper_run on a thread of the `timewarp run` process).
 *
 * Threads move the keeper's clock themselves when they wait (core/tk_shared.c: tw_tk_advance). The keeper
 * does what no emulated thread can:
 * - a thread marked running that has not read the clock for a while is looked up in /proc: computing
 *   ('R'), its clock is extrapolated by the CPU time it has used since (so waiters are released at the
 *   rate it really progresses); sleeping in the kernel in a call the shim does not interpose (read,
 *   accept, waitpid, a contended mutex), it is marked LOST, i.e. idle until it runs again;
 * - slots of threads and processes that ended without releasing them (killed, _exit) are freed;
 * - it beats: processes that see no beat for several seconds know the coordinator is gone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "tw/timekeeper.h"

#define EXPORT __attribute__((visibility("default")))
#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)

/* a running slot is looked at once its clock has not moved for this long (real time) */
#define STALE_NS 1000000ll

static uint64_t last_seq[TW_TK_SLOTS];
static int64_t last_move[TW_TK_SLOTS];
/* when a running slot's thread was first seen asleep in the kernel (0: not), and its CPU time then */
static int64_t asleep_since[TW_TK_SLOTS];
static uint64_t asleep_cpu[TW_TK_SLOTS];
/* A running thread is declared LOST only after sleeping this long without using CPU: a program's short
 * blocking calls (reading a file, a page fault, a pipe that answers at once) are part of its work, and
 * declaring it idle at the first glimpse lets a sleeping thread elsewhere jump the clock past it (an
 * import of torch, full of such calls, made a polling parent's clock run 20x faster than real time). */
#define LOST_NS 20000000ll

/* The slot of a thread (or reserved thread) that ended without releasing it; tid: the owner seen. */
static void free_slot(tw_tk_shared *k, tw_tk_slot *s, int32_t tid) {
    if (__atomic_compare_exchange_n(&s->tid, &tid, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
        __atomic_store_n(&s->state, TW_SLOT_FREE, __ATOMIC_RELEASE);
        __atomic_add_fetch(&k->changes, 1, __ATOMIC_RELAXED);
    }
}

EXPORT tw_tk_shared *tw_keeper_create(const char *path, const char *topology) {
    struct timespec r, m;
    clock_gettime(CLOCK_REALTIME, &r);
    clock_gettime(CLOCK_MONOTONIC, &m);
    tw_tk_shared *k = tw_tk_create(path, (int64_t)r.tv_sec * 1000000000ll + r.tv_nsec,
                                   (int64_t)m.tv_sec * 1000000000ll + m.tv_nsec);
    if (k && topology) snprintf(k->topology, sizeof k->topology, "%s", topology);
    return k;
}

EXPORT void tw_keeper_close(tw_tk_shared *k, const char *path) {
    if (k) munmap(k, tw_tk_size());
    if (path) unlink(path);
}

EXPORT void tw_keeper_abort(tw_tk_shared *k, const char *reason) { tw_tk_abort(k, reason); }

/* the thread's state letter ('\0': gone) and, for a running one, its CPU time in ns from schedstat */
static char thread_state(int32_t pid, int32_t tid, uint64_t *cpu_ns) {
    char st = tw_tk_task_state(pid, tid);
    if (!cpu_ns || !st) return st;
    char path[64], buf[128];
    *cpu_ns = 0;
    snprintf(path, sizeof path, "/proc/%d/task/%d/schedstat", pid, tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n > 0) { buf[n] = '\0'; *cpu_ns = strtoull(buf, NULL, 10); }
    }
    return st;
}

static int64_t now_ns(void) { return tw_tk_real_ns(); }

/* One pass over the table; returns the number of threads waiting on the clock. */
static int pass(tw_tk_shared *k, double host_speed, int64_t t) {
    int waiting = 0;
    uint32_t hi = LOAD(&k->hiwater);
    for (uint32_t i = 0; i < hi; i++) {
        tw_tk_slot *s = &k->slots[i];
        int32_t tid = LOAD(&s->tid);
        if (!tid) continue;
        uint32_t st = LOAD(&s->state);
        uint64_t seq = LOAD(&s->seq);
        if (seq != last_seq[i]) { last_seq[i] = seq; last_move[i] = t; asleep_since[i] = 0; }
        if (st == TW_SLOT_SLEEP || st == TW_SLOT_TWAIT) waiting++;
        int stale = t - last_move[i] > STALE_NS;
        if (!stale) continue;
        if (tid < 0) {   /* reserved for a thread being created (libc/thread.c): only its process can end it */
            if (t - last_move[i] > 200 * STALE_NS && tw_tk_task_state(s->pid, 0) == '\0') free_slot(k, s, tid);
            continue;
        }
        if (st != TW_SLOT_RUN) {
            /* an idle thread: only check now and then that it still exists */
            if (t - last_move[i] < 200 * STALE_NS || (i + (uint32_t)(t >> 20)) % 64) continue;
        }
        uint64_t cpu = 0;
        char c = thread_state(s->pid, tid, st == TW_SLOT_RUN ? &cpu : NULL);
        if (c == '\0' || c == 'Z' || c == 'X') {   /* gone without releasing its slot */
            free_slot(k, s, tid);
            continue;
        }
        if (st != TW_SLOT_RUN) continue;
        /* computing, or it was since the last look: extrapolate by its CPU time; not CPU it will not be
         * charged: paused (tw_charge_pause), or before its first reading (base 0: a slot claimed for it or
         * handed to it; what a new process spends loading is not on its clock). The flag is read first: a
         * thread that resumes stores its new base before it clears the flag. */
        int paused = (LOAD(&s->flags) & TW_SLOT_PAUSED) != 0;
        uint64_t base = LOAD(&s->cpu);
        if (cpu > base && base && !paused) {
            uint64_t x = LOAD(&s->clock) + (uint64_t)((double)(cpu - base) * tw_tk_pace(k, -1, host_speed));
            __atomic_store_n(&s->ext, x, __ATOMIC_RELEASE);
        }
        if (c == 'R' || c == 'D') {   /* on a CPU, or in a disk wait that is part of its work */
            asleep_since[i] = 0;
        } else if (!asleep_since[i] || cpu != asleep_cpu[i]) {
            asleep_since[i] = t;
            asleep_cpu[i] = cpu;
        } else if (t - asleep_since[i] >= LOST_NS) {
            uint32_t expect = TW_SLOT_RUN;
            if (LOAD(&s->seq) == seq &&
                __atomic_compare_exchange_n(&s->state, &expect, TW_SLOT_LOST, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
                __atomic_add_fetch(&k->changes, 1, __ATOMIC_RELAXED);
        }
    }
    return waiting;
}

/* Runs until *stop becomes non-zero. */
EXPORT void tw_keeper_run(tw_tk_shared *k, volatile int *stop, double host_speed) {
    if (host_speed <= 0) host_speed = 1.0;
    while (!*stop) {
        int64_t t = now_ns();
        __atomic_store_n(&k->keeper_beat, (uint64_t)t, __ATOMIC_RELEASE);
        int waiting = pass(k, host_speed, t);
        tw_tk_advance(k);
        struct timespec ts = {0, waiting || LOAD(&k->sleepers) ? 300000 : 2000000};
        nanosleep(&ts, NULL);
    }
}

/* Where the pace probe (coordinator/pace.py) writes: the byte offset of pace_on, pace_milli and pace_mean in
 * the clock file, and the number of CPUs it has room for. */
EXPORT void tw_keeper_pace_layout(long *on, long *milli, long *mean, int *ncpu) {
    *on = (long)offsetof(tw_tk_shared, pace_on);
    *milli = (long)offsetof(tw_tk_shared, pace_milli);
    *mean = (long)offsetof(tw_tk_shared, pace_mean);
    *ncpu = TW_TK_PACE_CPUS;
}

/* The same for the native probe's pace: native_on, native_milli and native_mean. */
EXPORT void tw_keeper_native_layout(long *on, long *milli, long *mean) {
    *on = (long)offsetof(tw_tk_shared, native_on);
    *milli = (long)offsetof(tw_tk_shared, native_milli);
    *mean = (long)offsetof(tw_tk_shared, native_mean);
}

/* A JSON snapshot of the keeper's state; returns the length it needed (the output is cut at len). */
EXPORT int tw_keeper_status(tw_tk_shared *k, char *buf, int len) {
    int n = 0;
#define OUT(...) do { int w_ = snprintf(buf + (n < len ? n : len), n < len ? (size_t)(len - n) : 0, __VA_ARGS__); n += w_ > 0 ? w_ : 0; } while (0)
    OUT("{\"safe_ns\": %llu, \"max_now_ns\": %llu, \"jumps\": %llu, \"holds_expired\": %u, \"aborted\": %u, "
        "\"pace\": %.3f, \"threads\": [",
        (unsigned long long)LOAD(&k->safe), (unsigned long long)LOAD(&k->max_now),
        (unsigned long long)LOAD(&k->jumps), LOAD(&k->holds_expired), LOAD(&k->aborted), tw_tk_pace(k, -1, 0.0));
    uint32_t hi = LOAD(&k->hiwater);
    int first = 1;
    for (uint32_t i = 0; i < hi; i++) {
        tw_tk_slot *s = &k->slots[i];
        int32_t tid = LOAD(&s->tid);
        if (!tid) continue;
        OUT("%s{\"pid\": %d, \"tid\": %d, \"state\": \"%s\", \"clock_ns\": %llu, \"deadline_ns\": %llu}",
            first ? "" : ", ", s->pid, tid, tw_tk_state_name(LOAD(&s->state)), (unsigned long long)LOAD(&s->clock),
            (unsigned long long)LOAD(&s->deadline));
        first = 0;
    }
    OUT("]}");
#undef OUT
    return n;
}
