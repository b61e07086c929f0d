/* Operations on the time keeper's shared state (tw/timekeeper.h): creating and mapping the file, slots,
 * the Lamport clock, advancing the keeper's clock, futex waits and wake-ups, abort.
 *
 * Compiled into libtimewarp.so and into the coordinator's keeper library: it uses raw system calls only,
 * never a libc function that the shim interposes (clock_gettime, syscall, futex waits).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "tw/raw_syscall.h"
#include "tw/timekeeper.h"

#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

size_t tw_tk_size(void) { return (sizeof(tw_tk_shared) + 4095) & ~(size_t)4095; }

int64_t tw_tk_real_ns(void) {
    struct timespec ts;
    tw_sys2(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

tw_tk_shared *tw_tk_create(const char *path, int64_t epoch_realtime, int64_t epoch_monotonic) {
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return NULL;
    size_t n = tw_tk_size();
    if (ftruncate(fd, (off_t)n) != 0) { int e = errno; close(fd); unlink(path); errno = e; return NULL; }
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED) { unlink(path); errno = e; return NULL; }
    tw_tk_shared *k = p;   /* the file starts zeroed */
    k->version = TW_TK_VERSION;
    k->nslots = TW_TK_SLOTS;
    k->epoch_realtime = epoch_realtime;
    k->epoch_monotonic = epoch_monotonic;
    k->keeper_pid = (uint32_t)getpid();
    STORE(&k->keeper_beat, (uint64_t)tw_tk_real_ns());
    STORE(&k->magic, TW_TK_MAGIC);
    return k;
}

tw_tk_shared *tw_tk_map(const char *path, const char **why) {
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) { *why = errno == ENOENT ? "the file does not exist (is the coordinator running?)" : strerror(errno); return NULL; }
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size < tw_tk_size()) {
        close(fd);
        *why = "the file is too small to be a time keeper file";
        return NULL;
    }
    void *p = mmap(NULL, tw_tk_size(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) { *why = strerror(errno); return NULL; }
    tw_tk_shared *k = p;
    if (LOAD(&k->magic) != TW_TK_MAGIC || k->version != TW_TK_VERSION) {
        munmap(p, tw_tk_size());
        *why = "not a time keeper file of this timewarp version";
        return NULL;
    }
    return k;
}

/* A per-CPU pace of the clock file (milli per CPU, their mean where a CPU has none yet), dflt until `on`. */
static double pace_of(const uint32_t *on, const uint32_t *milli, const uint32_t *mean, int cpu, double dflt) {
    if (!__atomic_load_n(on, __ATOMIC_RELAXED)) return dflt;
    uint32_t m = cpu >= 0 && cpu < TW_TK_PACE_CPUS ? __atomic_load_n(&milli[cpu], __ATOMIC_RELAXED) : 0;
    if (!m) m = __atomic_load_n(mean, __ATOMIC_RELAXED);
    return m ? m / 1000.0 : dflt;
}

double tw_tk_pace(tw_tk_shared *k, int cpu, double dflt) {
    return k ? pace_of(&k->pace_on, k->pace_milli, &k->pace_mean, cpu, dflt) : dflt;
}

double tw_tk_native_pace(tw_tk_shared *k, int cpu, double dflt) {
    return k ? pace_of(&k->native_on, k->native_milli, &k->native_mean, cpu, dflt) : dflt;
}

tw_tk_slot *tw_tk_find(tw_tk_shared *k, int32_t tid) {
    uint32_t hi = LOAD(&k->hiwater);
    for (uint32_t i = 0; i < hi; i++)
        if (LOAD(&k->slots[i].tid) == tid) return &k->slots[i];
    return NULL;
}

tw_tk_slot *tw_tk_claim(tw_tk_shared *k, int32_t pid, int32_t tid, uint64_t clock) {
    tw_tk_slot *s = tw_tk_find(k, tid);   /* the slot this thread already has (claimed before an exec) */
    for (uint32_t i = 0; !s && i < k->nslots; i++) {
        int32_t zero = 0;
        if (LOAD(&k->slots[i].tid) == 0 &&
            __atomic_compare_exchange_n(&k->slots[i].tid, &zero, tid, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            s = &k->slots[i];
            uint32_t h = LOAD(&k->hiwater);
            while (h < i + 1 && !__atomic_compare_exchange_n(&k->hiwater, &h, i + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {}
        }
    }
    if (!s) return NULL;
    s->pid = pid;
    s->ext = 0;
    STORE(&s->flags, 0);
    /* CPU time at `clock`: unknown here (a slot handed to a child before it runs, or claimed by a thread
     * that stores its own at its first reading); 0 tells the keeper so: it holds the slot at `clock` until
     * then (a previous owner's reading would freeze it longer; extrapolating by all of the thread's CPU time
     * counted what the thread's clock does not) */
    STORE(&s->cpu, 0);
    STORE(&s->clock, clock);
    __atomic_add_fetch(&s->seq, 1, __ATOMIC_RELEASE);
    STORE(&s->state, TW_SLOT_RUN);
    __atomic_add_fetch(&k->changes, 1, __ATOMIC_RELAXED);
    return s;
}

void tw_tk_release(tw_tk_shared *k, tw_tk_slot *s) {
    STORE(&s->state, TW_SLOT_FREE);
    STORE(&s->tid, 0);
    __atomic_add_fetch(&k->changes, 1, __ATOMIC_RELAXED);
    tw_tk_advance(k);   /* a thread that ends may have held the clock back */
}

uint64_t tw_tk_publish(tw_tk_shared *k, uint64_t t) {
    uint64_t g = __atomic_load_n(&k->max_now, __ATOMIC_RELAXED);
    while (g < t && !__atomic_compare_exchange_n(&k->max_now, &g, t, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    return g < t ? t : g;
}

static void futex_wake(uint32_t *w) {
    tw_sys6(SYS_futex, (long)w, FUTEX_WAKE, INT_MAX, 0, 0, 0);
}

void tw_tk_wake_all(tw_tk_shared *k) {
    __atomic_add_fetch(&k->gen, 1, __ATOMIC_ACQ_REL);
    if (LOAD(&k->sleepers)) futex_wake(&k->gen);
}

void tw_tk_futex_wait(tw_tk_shared *k, uint32_t seen, int64_t timeout_ns) {
    struct timespec ts = {(time_t)(timeout_ns / 1000000000ll), (long)(timeout_ns % 1000000000ll)};
    __atomic_add_fetch(&k->sleepers, 1, __ATOMIC_ACQ_REL);
    if (LOAD(&k->gen) == seen) tw_sys6(SYS_futex, (long)&k->gen, FUTEX_WAIT, (long)seen, (long)&ts, 0, 0);
    __atomic_sub_fetch(&k->sleepers, 1, __ATOMIC_ACQ_REL);
}

static int pend_free(tw_tk_shared *k, tw_tk_pend *e, uint64_t key);

/* Whether a hold past its time still stands because the channel's reader (the thread that last waited for
 * it or saw it: tw_tk_msg_watch, tw_tk_msg_seen) has been woken by the kernel and not yet run (its slot still
 * waits, its thread is runnable): on a loaded machine that can take longer than the hold (2 ms), and the
 * clock then passed a message the reader was about to take. At most PEND_WOKEN_MAX_NS from the hold's start,
 * looked at again every PEND_RECHECK_NS (one /proc read each). With vclock.c's tw_tk_reader_running, this
 * took tests/progs/feeder_queue.py (vLLM's input-thread pattern) under two CPU hogs from a drain that missed
 * a message in about 1 run of 25 (5 of some 120) to none in 80. */
#define PEND_RECHECK_NS 500000ll
#define PEND_WOKEN_MAX_NS 100000000ll
static int reader_woken(tw_tk_shared *k, tw_tk_pend *e, int64_t now) {
    uint64_t r = LOAD(&e->reader);
    uint32_t idx = (uint32_t)r;
    if (!idx || idx > TW_TK_SLOTS || now - LOAD(&e->born) > PEND_WOKEN_MAX_NS) return 0;
    tw_tk_slot *s = &k->slots[idx - 1];
    int32_t tid = (int32_t)(r >> 32);
    uint32_t st = LOAD(&s->state);
    if (LOAD(&s->tid) != tid || (st != TW_SLOT_BLOCK && st != TW_SLOT_TWAIT && st != TW_SLOT_LOST)) return 0;
    return tw_tk_task_state(LOAD(&s->pid), tid) == 'R';
}

/* The minimum over running clocks and waiting deadlines of threads not in process skip_pid (0: none; with
 * feeders, that process's feeder threads count, at their clock when they wait with a deadline), and the
 * stamps of messages on their way; *running says whether a running thread (or a message) set it. The
 * caller's own slot needs no exclusion: it is at its time t when it looks, or asleep with deadline t. */
static uint64_t scan_except(tw_tk_shared *k, int32_t skip_pid, int feeders, int *running, int *who) {
    uint64_t lo = UINT64_MAX;
    *running = 0;
    if (who) *who = -1;
    uint32_t hi = LOAD(&k->hiwater);
    for (uint32_t i = 0; i < hi; i++) {
        tw_tk_slot *s = &k->slots[i];
        if (!LOAD(&s->tid)) continue;
        int feeder = 0;
        if (skip_pid && LOAD(&s->pid) == skip_pid) {
            if (!(feeders && (LOAD(&s->flags) & TW_SLOT_FEEDER))) continue;
            feeder = 1;
        }
        uint64_t c;
        switch (LOAD(&s->state)) {
        case TW_SLOT_RUN: {
            c = LOAD(&s->clock);
            uint64_t x = LOAD(&s->ext);
            if (x > c) c = x;
            if (c < lo) *running = 1;
            break;
        }
        case TW_SLOT_SLEEP:
            c = LOAD(&s->deadline); if (c < lo) *running = 0; break;
        case TW_SLOT_TWAIT:
            if (feeder) { c = LOAD(&s->clock); if (c < lo) *running = 1; break; }
            c = LOAD(&s->deadline); if (c < lo) *running = 0; break;
        default: continue;   /* FREE, BLOCK, LOST: nothing it does can come before it is woken */
        }
        if (c < lo) { lo = c; if (who) *who = (int)i; }
    }
    /* a message on its way to a reader that will act at its stamp, as a running thread would */
    if (LOAD(&k->npend)) {
        int64_t now = tw_tk_real_ns();
        for (uint32_t i = 0; i < TW_TK_PENDS; i++) {
            tw_tk_pend *e = &k->pends[i];
            uint64_t key = LOAD(&e->key);
            if (!key) continue;
            if (now >= LOAD(&e->until)) {
                if (reader_woken(k, e, now)) {
                    STORE(&e->until, now + PEND_RECHECK_NS);
                } else {
                    if (pend_free(k, e, key)) __atomic_add_fetch(&k->holds_expired, 1, __ATOMIC_RELAXED);
                    continue;
                }
            }
            uint64_t c = LOAD(&e->stamp);
            if (c < lo) { lo = c; *running = 1; if (who) *who = TW_TK_SLOTS + (int)i; }
        }
    }
    return lo;
}

static uint64_t scan(tw_tk_shared *k, int *running) { return scan_except(k, 0, 0, running, NULL); }

/* The earliest virtual time at which a thread of a process other than pid can still act (running: its
 * clock; waiting: its deadline; blocked: none), or a message on its way to another reader can be taken:
 * what a thread of pid may still receive from elsewhere before then has been sent. */
uint64_t tw_tk_others_lo(tw_tk_shared *k, int32_t pid) {
    int running;
    return scan_except(k, pid, 0, &running, NULL);
}

uint64_t tw_tk_inputs_lo(tw_tk_shared *k, int32_t pid) {
    int running;
    return scan_except(k, pid, 1, &running, NULL);
}

const char *tw_tk_state_name(uint32_t st) {
    switch (st) {
    case TW_SLOT_RUN: return "run";
    case TW_SLOT_SLEEP: return "sleep";
    case TW_SLOT_TWAIT: return "timed-wait";
    case TW_SLOT_BLOCK: return "blocked";
    case TW_SLOT_LOST: return "blocked-unknown";
    default: return "free";
    }
}

/* What holds tw_tk_inputs_lo(k, pid) where it is, in words (a diagnostic for a wait that ran out). */
void tw_tk_describe_inputs_lo(tw_tk_shared *k, int32_t pid, char *buf, size_t n) {
    int running, who;
    uint64_t lo = scan_except(k, pid, 1, &running, &who);
    if (who < 0) { snprintf(buf, n, "nothing (%llu)", (unsigned long long)lo); return; }
    if (who >= TW_TK_SLOTS) {
        snprintf(buf, n, "a message on its way at %.3f ms", lo / 1e6);
        return;
    }
    tw_tk_slot *s = &k->slots[who];
    snprintf(buf, n, "thread %d of pid %d, state %s%s, at %.3f ms (clock %.3f, extrapolated %.3f, deadline %.3f)",
             (int)LOAD(&s->tid), (int)LOAD(&s->pid), tw_tk_state_name(LOAD(&s->state)),
             LOAD(&s->flags) & TW_SLOT_FEEDER ? " (a feeder)" : "", lo / 1e6, LOAD(&s->clock) / 1e6,
             LOAD(&s->ext) / 1e6, LOAD(&s->deadline) / 1e6);
}

int tw_tk_process_acts_by(tw_tk_shared *k, int32_t pid, uint64_t t, uint64_t *run_hi) {
    int acts = 0;
    *run_hi = 0;
    uint32_t hi = LOAD(&k->hiwater);
    for (uint32_t i = 0; i < hi; i++) {
        tw_tk_slot *s = &k->slots[i];
        if (!LOAD(&s->tid) || LOAD(&s->pid) != pid || (LOAD(&s->flags) & TW_SLOT_OWN)) continue;
        switch (LOAD(&s->state)) {
        case TW_SLOT_RUN: {
            uint64_t c = LOAD(&s->clock), x = LOAD(&s->ext);
            if (x > c) c = x;
            if (c > *run_hi) *run_hi = c;
            acts = 1;
            break;
        }
        case TW_SLOT_SLEEP: case TW_SLOT_TWAIT: if (LOAD(&s->deadline) <= t) acts = 1; break;
        default: break;
        }
    }
    return acts;
}

/* A jump (the clock moves to a deadline because nothing runs) must not overtake a thread that another has
 * just woken, or a message just sent, that the kernel has not yet delivered: before jumping, let the table
 * settle (no state change during a short real pause), else look again. The pause grows with the jump: a
 * jump of seconds ends somebody's timeout (vLLM's 5-minute start-up handshake fired on a loaded machine
 * when a 20 µs pause let the clock jump past a reply in flight), and such jumps are rare enough that
 * milliseconds of real time on them cost nothing. */
#define SETTLE_TRIES 8
static int64_t settle_ns(uint64_t jump) {
    return jump < 10000000ull ? 20000 : jump < 1000000000ull ? 500000 : 5000000;
}

/* A settled table can still hide a thread the kernel has woken (or preempted) that has not yet run to tell:
 * a condvar waiter woken while the thread that woke it took the mutex back for its next wait (condvar.c's
 * hold ran out meanwhile), or a waiter preempted between announcing its wait and releasing the mutex that
 * its notifier needs. Before a jump of a second or more (rare: such jumps end timeouts, and their settle is
 * 5 ms anyway) the waiting threads are looked up in /proc: one on a CPU or runnable ('R') is a change not
 * yet seen, and the settle goes on (at most SETTLE_TRIES pauses, as for other changes). The calling thread,
 * which is running this, is left out. tests/progs/cond_slices.c: 1 round in about 4000 had jumped to its
 * waiter's 100 s deadline with the condvar's holds alone. */
#define WOKEN_CHECK_JUMP 1000000000ull
static int waiter_runnable(tw_tk_shared *k) {
    int32_t self = (int32_t)tw_sys6(SYS_gettid, 0, 0, 0, 0, 0, 0);
    uint32_t hi = LOAD(&k->hiwater);
    for (uint32_t i = 0; i < hi; i++) {
        tw_tk_slot *s = &k->slots[i];
        int32_t tid = LOAD(&s->tid);
        uint32_t st = LOAD(&s->state);
        if (tid <= 0 || tid == self || (st != TW_SLOT_TWAIT && st != TW_SLOT_BLOCK && st != TW_SLOT_LOST)) continue;
        if (tw_tk_task_state(LOAD(&s->pid), tid) == 'R' && LOAD(&s->tid) == tid && LOAD(&s->state) == st) return 1;
    }
    return 0;
}

/* A /proc file into buf (NUL-terminated), with raw system calls: the keeper's advance reads them. Its length,
 * or -1. */
static long read_proc(const char *path, char *buf, size_t cap) {
    long fd = tw_sys6(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC, 0, 0, 0);
    if (fd < 0) return -1;
    long n = tw_sys6(SYS_read, fd, (long)buf, (long)cap - 1, 0, 0, 0);
    tw_sys6(SYS_close, fd, 0, 0, 0, 0, 0);
    if (n < 0) return -1;
    buf[n] = '\0';
    return n;
}

/* The state letter of a process (tid 0) or thread from its stat file, '\0' if gone; its name into name when
 * asked. */
static char task_stat(int32_t pid, int32_t tid, char *name, size_t name_cap) {
    char path[64], buf[512];
    if (tid > 0) snprintf(path, sizeof path, "/proc/%d/task/%d/stat", pid, tid);
    else snprintf(path, sizeof path, "/proc/%d/stat", pid);
    if (read_proc(path, buf, sizeof buf) <= 0) return '\0';
    char *a = strchr(buf, '('), *b = strrchr(buf, ')');   /* the command name may hold spaces and parentheses */
    if (name && a && b && b > a) snprintf(name, name_cap, "%.*s", (int)(b - a - 1), a + 1);
    return b && b[1] == ' ' ? b[2] : '\0';
}

/* TIMEWARP_JUMP_LOG=1 (a diagnostic): each jump of a second or more prints the table it was decided on to
 * stderr: who jumped, from and to, and every thread's slot (process, thread, name, /proc state, slot state,
 * clock, deadline, system call) and the message holds. Jumps that long end timeouts; when one ended a timeout that a real run would not reach,
 * the line shows which waiter was taken for blocked. Raw system calls (read_proc): it runs inside the keeper's
 * advance. */
static void jump_log(tw_tk_shared *k, uint64_t from, uint64_t to, int tries, int64_t settle_ns) {
    static int on = -1;
    if (on < 0) { const char *v = getenv("TIMEWARP_JUMP_LOG"); on = v && v[0] == '1'; }
    if (!on || to - from < WOKEN_CHECK_JUMP) return;
    char line[256];
    int n = snprintf(line, sizeof line, "timewarp: jump by pid %d tid %d from %.6f to %.6f s after %d settles (%.3f ms)\n",
                     (int)getpid(), (int)tw_sys6(SYS_gettid, 0, 0, 0, 0, 0, 0), from / 1e9, to / 1e9, tries, settle_ns / 1e6);
    (void)tw_sys6(SYS_write, 2, (long)line, n, 0, 0, 0);
    uint32_t hi = LOAD(&k->hiwater);
    for (uint32_t i = 0; i < hi; i++) {
        tw_tk_slot *s = &k->slots[i];
        int32_t tid = LOAD(&s->tid), pid = LOAD(&s->pid);
        if (tid <= 0) continue;
        char path[64], name[32] = "?", sys[64] = "?";   /* sys: the system call it is in, and its arguments */
        char st = task_stat(pid, tid, name, sizeof name);
        snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", pid, tid);
        if (read_proc(path, sys, sizeof sys) >= 0)
            for (char *c = sys; *c; c++) if (*c == '\n') *c = '\0';
        n = snprintf(line, sizeof line, "  slot %u pid %d tid %d (%s) proc %c state %u flags %u clock %.6f deadline %.6f in %.40s\n",
                     i, pid, tid, name, st ? st : '?', LOAD(&s->state), LOAD(&s->flags), LOAD(&s->clock) / 1e9,
                     LOAD(&s->deadline) / 1e9, sys);
        (void)tw_sys6(SYS_write, 2, (long)line, n, 0, 0, 0);
    }
    int64_t now = tw_tk_real_ns();
    n = snprintf(line, sizeof line, "  holds %u, expired so far %u\n", LOAD(&k->npend), LOAD(&k->holds_expired));
    (void)tw_sys6(SYS_write, 2, (long)line, n, 0, 0, 0);
    for (uint32_t i = 0; i < TW_TK_PENDS; i++) {
        tw_tk_pend *e = &k->pends[i];
        if (!LOAD(&e->key)) continue;
        uint64_t r = LOAD(&e->reader);
        n = snprintf(line, sizeof line, "  hold %u stamp %.6f reader slot %d tid %d born %.3f ms ago, until %+.3f ms\n", i,
                     LOAD(&e->stamp) / 1e9, (int)(uint32_t)r - 1, (int)(r >> 32), (now - LOAD(&e->born)) / 1e6,
                     (LOAD(&e->until) - now) / 1e6);
        (void)tw_sys6(SYS_write, 2, (long)line, n, 0, 0, 0);
    }
}

/* The changes are counted from before each scan: a change between a scan and the pause after it went
 * unseen, and the jump went by a table that was no longer there (tests/progs/cond_slices.c beside four CPU
 * hogs: the waiter had begun its next round, with a later deadline, and the notifier ran; 1 run in about 10
 * jumped a round to its 100 s deadline). */
static uint64_t advance(tw_tk_shared *k, int may_jump, int (*look)(void *), void *look_ctx) {
    uint64_t g = LOAD(&k->safe);
    int running;
    uint64_t c0 = LOAD(&k->changes);
    uint64_t lo = scan(k, &running);
    if (!may_jump && !running && lo != UINT64_MAX && lo > g) {
        tw_tk_wake_all(k);   /* the waiters look themselves, and jump after settling */
        return g;
    }
    int64_t start = 0;
    int i;
    for (i = 0; !running && lo != UINT64_MAX && lo > g && i < SETTLE_TRIES; i++) {
        int64_t pause = settle_ns(lo - g), until = tw_tk_real_ns() + pause;
        if (!start) start = until - pause;
        while (LOAD(&k->changes) == c0 && tw_tk_real_ns() < until) {
            if (pause > 100000) {   /* long pauses sleep in small steps instead of spinning */
                struct timespec ts = {0, 50000};
                tw_sys6(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
            } else {
                tw_sys6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
            }
        }
        if (LOAD(&k->changes) == c0 && (lo - g < WOKEN_CHECK_JUMP || !waiter_runnable(k))) break;
        c0 = LOAD(&k->changes);
        lo = scan(k, &running);
        g = LOAD(&k->safe);
    }
    if (lo == UINT64_MAX || lo <= g) return g;
    /* The settle watched the other threads; the calling thread's own wait may have been sent something
     * meanwhile (its first look came before the settle): a jump now would overtake it. Beside two CPU hogs,
     * in 100 runs of 6 libzmq connections (tests/progs/zmq_connect.py), an I/O thread jumped to its own 30 s
     * handshake deadline in 24 runs and 13 of them lost a connection to ZMQ's timer; with this look, 6 and
     * 2 (TIMEWARP_JUMP_LOG=1 shows the rest: the other side's I/O thread asleep in its own wait). */
    if (!running && look && look(look_ctx)) return g;
    while (g < lo && !__atomic_compare_exchange_n(&k->safe, &g, lo, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {}
    if (g < lo) {
        if (!running) {
            __atomic_add_fetch(&k->jumps, 1, __ATOMIC_RELAXED);
            jump_log(k, g, lo, i, start ? tw_tk_real_ns() - start : 0);
        }
        tw_tk_wake_all(k);
        return lo;
    }
    return g;
}

uint64_t tw_tk_advance(tw_tk_shared *k) { return advance(k, 1, NULL, NULL); }

uint64_t tw_tk_advance_look(tw_tk_shared *k, int (*look)(void *), void *ctx) { return advance(k, 1, look, ctx); }

/* A thread about to make a real wait (a blocking poll, a futex) must not settle first: the settle is a real
 * pause with no look at its own descriptors, and the jump it ends in may overtake what is already there for
 * it. A libzmq connection's two I/O threads each settled 5 ms this way before looking, with the other's
 * handshake in their sockets, and the jump ended the other's 30 s handshake timer: ZMQ reconnected, and the
 * run's clock jumped 30-154 s (tests/progs/zmq_connect.py; with tw_libc_keeper_wait's first look and
 * epoll_ctl's reader, shim_c/libc). */
uint64_t tw_tk_advance_no_jump(tw_tk_shared *k) { return advance(k, 0, NULL, NULL); }

void tw_tk_abort(tw_tk_shared *k, const char *reason) {
    uint32_t zero = 0;
    if (__atomic_compare_exchange_n(&k->aborted, &zero, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
        snprintf(k->abort_reason, sizeof k->abort_reason, "%s", reason);
    tw_tk_wake_all(k);
}

/* ---- message stamps: open addressing. When a key's probe window is full, the entry written longest ago
 * (lowest stamp) is taken over: a channel's stamp only matters until its reader has caught up, and a
 * reader whose entry was taken over finds none and falls back to the run's highest time (causal). */
#define MSG_PROBES 64
static inline uint32_t msg_home(uint64_t key) { return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 51) & (TW_TK_MSGS - 1); }

/* key's entry, claimed where its probe window has a free one; NULL when the window is full, with *oldest (if
 * asked) the entry in it written longest ago */
static tw_tk_msg *msg_claim(tw_tk_shared *k, uint64_t key, tw_tk_msg **oldest) {
    uint32_t h = msg_home(key);
    uint64_t oldest_stamp = UINT64_MAX;
    if (oldest) *oldest = NULL;
    for (uint32_t i = 0; i < MSG_PROBES; i++) {
        tw_tk_msg *e = &k->msgs[(h + i) & (TW_TK_MSGS - 1)];
        uint64_t cur = LOAD(&e->key);
        if (cur == 0) {
            uint64_t zero = 0;
            if (!__atomic_compare_exchange_n(&e->key, &zero, key, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) cur = zero;
            else cur = key;
        }
        if (cur == key) return e;
        uint64_t st = LOAD(&e->stamp);
        if (oldest && st < oldest_stamp) { oldest_stamp = st; *oldest = e; }
    }
    return NULL;
}

void tw_tk_msg_stamp(tw_tk_shared *k, uint64_t key, uint64_t t) {
    if (!key) return;
    tw_tk_msg *oldest, *e = msg_claim(k, key, &oldest);
    if (e) {
        uint64_t v = t + 1, g = LOAD(&e->stamp);
        while (g < v && !__atomic_compare_exchange_n(&e->stamp, &g, v, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {}
        uint64_t f = LOAD(&e->first);   /* the earliest unseen write (writers of one channel race rarely) */
        while ((f == 0 || f > v) && !__atomic_compare_exchange_n(&e->first, &f, v, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {}
        return;
    }
    if (oldest) {   /* the window is full: take over the entry written longest ago */
        uint64_t prev = LOAD(&oldest->key);
        if (__atomic_compare_exchange_n(&oldest->key, &prev, key, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            STORE(&oldest->stamp, t + 1);
            STORE(&oldest->first, t + 1);
            STORE(&oldest->reader, 0);
        }
    }
}

static tw_tk_msg *msg_find(tw_tk_shared *k, uint64_t key) {
    if (!key) return NULL;
    uint32_t h = msg_home(key);
    for (uint32_t i = 0; i < MSG_PROBES; i++) {
        tw_tk_msg *e = &k->msgs[(h + i) & (TW_TK_MSGS - 1)];
        uint64_t cur = LOAD(&e->key);
        if (cur == 0) return NULL;
        if (cur == key) return e;
    }
    return NULL;
}

uint64_t tw_tk_msg_first(tw_tk_shared *k, uint64_t key, int *found) {
    tw_tk_msg *e = msg_find(k, key);
    uint64_t v = e ? LOAD(&e->first) : 0;
    *found = v != 0;
    return v ? v - 1 : 0;
}

uint64_t tw_tk_msg_time(tw_tk_shared *k, uint64_t key, int *found) {
    tw_tk_msg *e = msg_find(k, key);
    uint64_t v = e ? LOAD(&e->stamp) : 0;
    *found = v != 0;
    return v ? v - 1 : 0;
}

void tw_tk_msg_hold(tw_tk_shared *k, uint64_t key, uint64_t t, int64_t until) {
    if (!key) return;
    tw_tk_pend *free_e = NULL;
    for (uint32_t i = 0; i < TW_TK_PENDS; i++) {
        tw_tk_pend *e = &k->pends[i];
        uint64_t cur = LOAD(&e->key);
        if (cur == key) {   /* one more message on a channel not read yet: the earliest stamp holds */
            STORE(&e->until, until);
            return;
        }
        if (!cur && !free_e) free_e = e;
    }
    for (; free_e < k->pends + TW_TK_PENDS; free_e++) {
        uint64_t zero = 0;
        if (LOAD(&free_e->key) != 0) continue;
        STORE(&free_e->stamp, t);
        STORE(&free_e->until, until);
        STORE(&free_e->born, tw_tk_real_ns());
        tw_tk_msg *m = msg_find(k, key);
        STORE(&free_e->reader, m ? LOAD(&m->reader) : 0);
        if (__atomic_compare_exchange_n(&free_e->key, &zero, key, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
            __atomic_add_fetch(&k->npend, 1, __ATOMIC_ACQ_REL);
            __atomic_add_fetch(&k->changes, 1, __ATOMIC_RELAXED);
            return;
        }
    }
}

static int pend_free(tw_tk_shared *k, tw_tk_pend *e, uint64_t key) {
    if (!__atomic_compare_exchange_n(&e->key, &key, 0, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) return 0;
    __atomic_sub_fetch(&k->npend, 1, __ATOMIC_ACQ_REL);
    __atomic_add_fetch(&k->changes, 1, __ATOMIC_RELAXED);
    return 1;
}

static inline uint64_t reader_word(tw_tk_shared *k, const tw_tk_slot *r) {
    return (uint64_t)(uint32_t)LOAD(&r->tid) << 32 | (uint64_t)(r - k->slots + 1);
}

void tw_tk_msg_watch(tw_tk_shared *k, uint64_t key, const tw_tk_slot *reader) {
    if (!key) return;
    uint64_t w = reader_word(k, reader);
    tw_tk_msg *e = msg_claim(k, key, NULL);
    if (e && LOAD(&e->reader) != w) STORE(&e->reader, w);
}

void tw_tk_msg_seen(tw_tk_shared *k, uint64_t key, const tw_tk_slot *reader) {
    tw_tk_msg *m = msg_find(k, key);
    if (m) {
        STORE(&m->first, 0);   /* what comes next is new to the reader */
        if (reader) STORE(&m->reader, reader_word(k, reader));
    }
    if (!key || !LOAD(&k->npend)) return;
    for (uint32_t i = 0; i < TW_TK_PENDS; i++)
        if (LOAD(&k->pends[i].key) == key) pend_free(k, &k->pends[i], key);
}

void tw_tk_coll_lock(tw_tk_shared *k) {
    uint32_t zero = 0;
    while (!__atomic_compare_exchange_n(&k->coll_lock, &zero, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        zero = 0;
        tw_sys6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
    }
}

void tw_tk_coll_unlock(tw_tk_shared *k) { __atomic_store_n(&k->coll_lock, 0, __ATOMIC_RELEASE); }

char tw_tk_task_state(int32_t pid, int32_t tid) { return task_stat(pid, tid, NULL, 0); }
