/* This process's side of the run-wide time keeper (tw/timekeeper.h): mapping the coordinator's clock file
 * named by TIMEWARP_CLOCK, each thread's slot (claimed at its first clock reading, released when it ends,
 * re-claimed in a fork child, handed to the new image across an exec), and waiting until the keeper's
 * clock reaches a time. What a reading or a wait does to a thread's clock is vclock.c's business.
 *
 * Without TIMEWARP_CLOCK (a program run without `timewarp run`, the C tests) there is no keeper: time is
 * process-local and waits jump at once, as before the coordinator existed.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "tw/raw_syscall.h"
#include "tw/timekeeper.h"

tw_tk_shared *tw_tk;                     /* NULL: no keeper */
static __thread tw_tk_slot *my_slot;
static __thread int my_slot_none;        /* the table was full, or this thread must stay out (private) */
static pthread_key_t slot_key;
static int64_t keeper_dead_after_ns = 5000000000ll;

static int32_t gettid_raw(void) { return (int32_t)tw_sys6(SYS_gettid, 0, 0, 0, 0, 0, 0); }

static void slot_destructor(void *p) {
    tw_tk_slot *s = p;
    if (tw_tk && s && s->tid == gettid_raw()) tw_tk_release(tw_tk, s);
    my_slot = NULL;
    my_slot_none = 1;
}

static void atfork_child(void) {
    /* the child's only thread is new: its slot is claimed now, before anything could let the clock jump */
    my_slot = NULL;
    my_slot_none = 0;
    tw_clock_forget_cpu();   /* the new thread's CPU clock starts at 0 */
    if (tw_tk) (void)tw_tk_thread_slot(__atomic_load_n(&tw_tk->max_now, __ATOMIC_ACQUIRE));
}

void tw_tk_attach(int64_t *epoch_realtime, int64_t *epoch_monotonic) {
    const char *path = getenv("TIMEWARP_CLOCK");
    if (!path || !*path) return;
    const char *why = NULL;
    tw_tk_shared *k = tw_tk_map(path, &why);
    if (!k) {
        tw_log("TIMEWARP_CLOCK=%s: cannot join the run's clock: %s. Run the program with `timewarp run`, "
               "or unset TIMEWARP_CLOCK for a process-local clock.", path, why);
        _exit(70);
    }
    const char *d = getenv("TIMEWARP_KEEPER_TIMEOUT_S");
    if (d && atof(d) > 0) keeper_dead_after_ns = (int64_t)(atof(d) * 1e9);
    *epoch_realtime = k->epoch_realtime;
    *epoch_monotonic = k->epoch_monotonic;
    pthread_key_create(&slot_key, slot_destructor);
    pthread_atfork(NULL, NULL, atfork_child);
    tw_tk = k;
}

/* pthread_create (libc/thread.c): a slot for the thread about to be created, running at the creator's
 * time, under a placeholder thread id (negative: the keeper does not look it up in /proc). */
int tw_tk_reserve(void) {
    if (!tw_tk || my_slot_none) return -1;
    uint64_t now = tw_now();
    static uint32_t seq;
    uint32_t n = __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED);
    int32_t placeholder = -(int32_t)(1 + ((((uint32_t)getpid() & 0x7fff) << 15) | (n & 0x7fff)));
    tw_tk_slot *s = tw_tk_claim(tw_tk, (int32_t)getpid(), placeholder, now);
    return s ? (int)(s - tw_tk->slots) : -1;
}

/* The new thread's first act: the reserved slot becomes its own. */
void tw_tk_adopt(int idx) {
    if (!tw_tk || idx < 0) return;
    tw_tk_slot *s = &tw_tk->slots[idx];
    __atomic_store_n(&s->tid, gettid_raw(), __ATOMIC_RELEASE);
    my_slot = s;
    my_slot_none = 0;
    pthread_setspecific(slot_key, s);
}

void tw_tk_unreserve(int idx) {
    if (tw_tk && idx >= 0) tw_tk_release(tw_tk, &tw_tk->slots[idx]);
}

/* Where this process's timeline starts: the clock of the slot handed to it across the exec (its parent's
 * time then), or, for a process nobody handed one to, the run's highest time. */
uint64_t tw_tk_start_clock(void) {
    if (!tw_tk) return 0;
    tw_tk_slot *s = tw_tk_find(tw_tk, gettid_raw());
    return __atomic_load_n(s ? &s->clock : &tw_tk->max_now, __ATOMIC_ACQUIRE);
}

tw_tk_slot *tw_tk_thread_slot(uint64_t now) {
    if (__builtin_expect(my_slot != NULL, 1)) return my_slot;
    if (!tw_tk || my_slot_none) return NULL;
    tw_tk_slot *s = tw_tk_claim(tw_tk, (int32_t)getpid(), gettid_raw(), now);
    if (!s) {
        my_slot_none = 1;
        tw_log("time keeper: all %d thread slots are taken; this thread's waits will not hold the run's clock",
               TW_TK_SLOTS);
        return NULL;
    }
    my_slot = s;
    pthread_setspecific(slot_key, s);
    return s;
}

void tw_tk_thread_private(void) {
    if (my_slot && tw_tk) tw_tk_release(tw_tk, my_slot);
    my_slot = NULL;
    my_slot_none = 1;
}

/* execve: the new image is the same thread; it finds this slot by its thread id. Called in a vfork child
 * too, whose thread-local data is the parent's: only the shared table is touched. */
void tw_tk_before_exec(void) {
    if (!tw_tk) return;
    (void)tw_tk_claim(tw_tk, (int32_t)getpid(), gettid_raw(), __atomic_load_n(&tw_tk->max_now, __ATOMIC_ACQUIRE));
}

/* posix_spawn: the child's main thread (tid = pid), before it has run anything of ours */
void tw_tk_claim_child(pid_t pid) {
    if (!tw_tk || pid <= 0) return;
    (void)tw_tk_claim(tw_tk, (int32_t)pid, (int32_t)pid, __atomic_load_n(&tw_tk->max_now, __ATOMIC_ACQUIRE));
}

static void keeper_gone(void) {
    tw_log("time keeper: the coordinator (pid %u) has not run for %.0f s: it is gone. This process goes on "
           "with a process-local clock; its times are no longer comparable with the other processes'.",
           tw_tk->keeper_pid, keeper_dead_after_ns / 1e9);
    tw_tk = NULL;
    my_slot = NULL;
}

/* 0 (and this process goes on alone) when the keeper has not beaten for keeper_dead_after_ns */
static int keeper_alive(tw_tk_shared *k) {
    int64_t beat = (int64_t)__atomic_load_n(&k->keeper_beat, __ATOMIC_ACQUIRE);
    if (tw_tk_real_ns() - beat <= keeper_dead_after_ns) return 1;
    keeper_gone();
    return 0;
}

int tw_tk_wait_safe(tw_tk_slot *s, uint64_t t, uint32_t state) {
    s->deadline = t;
    __atomic_add_fetch(&s->seq, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&s->state, state, __ATOMIC_RELEASE);
    tw_tk_shared *k = tw_tk;
    for (;;) {
        uint32_t g0 = __atomic_load_n(&k->gen, __ATOMIC_ACQUIRE);
        if (tw_tk_advance(k) >= t) return 0;
        if (__atomic_load_n(&k->aborted, __ATOMIC_ACQUIRE)) return -1;
        if (!keeper_alive(k)) return -1;
        tw_tk_futex_wait(k, g0, 2000000);
    }
}

/* Slot s asleep at t until lo(k, pid) reaches t (tw_tk_others_lo, or with feeders tw_tk_inputs_lo), at
 * most max_real_ns of real time (< 0: no cap). 0 done, 1 the cap ran out, -1 aborted. */
static int wait_lo(tw_tk_slot *s, uint64_t t, int feeders, int64_t max_real_ns) {
    tw_tk_shared *k = tw_tk;
    int32_t pid = __atomic_load_n(&s->pid, __ATOMIC_RELAXED);
    int64_t until = max_real_ns < 0 ? INT64_MAX : tw_tk_real_ns() + max_real_ns;
    s->deadline = t;
    __atomic_add_fetch(&s->seq, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&s->state, TW_SLOT_SLEEP, __ATOMIC_RELEASE);
    __atomic_add_fetch(&k->changes, 1, __ATOMIC_RELAXED);
    tw_tk_advance(k);   /* this thread no longer holds the clock back */
    for (;;) {
        uint32_t g0 = __atomic_load_n(&k->gen, __ATOMIC_ACQUIRE);
        if ((feeders ? tw_tk_inputs_lo(k, pid) : tw_tk_others_lo(k, pid)) >= t) return 0;
        if (__atomic_load_n(&k->aborted, __ATOMIC_ACQUIRE) || !keeper_alive(k)) return -1;
        if (tw_tk_real_ns() >= until) return 1;
        /* running threads' readings do not wake the futex: look again every 100 us */
        tw_tk_futex_wait(k, g0, 100000);
    }
}

int tw_tk_wait_others(tw_tk_slot *s, uint64_t t) { return wait_lo(s, t, 0, -1); }

int tw_tk_wait_inputs(tw_tk_slot *s, uint64_t t, int64_t max_real_ns) { return wait_lo(s, t, 1, max_real_ns); }

uint64_t tw_tk_safe(void) { return tw_tk ? __atomic_load_n(&tw_tk->safe, __ATOMIC_ACQUIRE) : 0; }

/* whether a wait until t is over once the keeper's clock is at safe (or the run ends) */
static int due_at(tw_tk_shared *k, uint64_t safe, uint64_t t) {
    if (safe >= t || __atomic_load_n(&k->aborted, __ATOMIC_ACQUIRE)) return 1;
    return !keeper_alive(k);
}

int tw_tk_due(uint64_t t, int may_jump) {
    tw_tk_shared *k = tw_tk;
    return !k || due_at(k, may_jump ? tw_tk_advance(k) : tw_tk_advance_no_jump(k), t);
}

int tw_tk_due_look(uint64_t t, int (*look)(void *), void *ctx) {
    tw_tk_shared *k = tw_tk;
    return !k || due_at(k, tw_tk_advance_look(k, look, ctx), t);
}

/* ---- message stamps (shim_c/libc/message.c keys the channels) */
/* How long (real time) a message not yet seen holds the keeper's clock at most: TIMEWARP_MSG_HOLD_US (the
 * launcher checks it). 2 ms: a reader that is woken is scheduled well within it on a loaded 2-core machine,
 * and a message whose reader never polls for it (it reads blocking, or is outside the run) costs no more. */
#define MSG_HOLD_DEFAULT_NS 2000000
static int64_t msg_hold_ns = -1;

void tw_tk_msg_sent(uint64_t key, int hold) {
    if (!tw_tk) return;
    uint64_t t = tw_now();
    tw_tk_msg_stamp(tw_tk, key, t);
    if (!hold) return;
    if (msg_hold_ns < 0) {
        const char *v = getenv("TIMEWARP_MSG_HOLD_US");
        msg_hold_ns = v && *v ? (int64_t)(atof(v) * 1000) : MSG_HOLD_DEFAULT_NS;
    }
    if (msg_hold_ns > 0) tw_tk_msg_hold(tw_tk, key, t, tw_tk_real_ns() + msg_hold_ns);
}

/* The earliest write on key since its reader last saw it; 0 if there is none (not marked seen). */
int tw_tk_msg_first_at(uint64_t key, uint64_t *t) {
    int found = 0;
    if (!tw_tk) return 0;
    *t = tw_tk_msg_first(tw_tk, key, &found);
    return found;
}

/* The calling thread is about to wait to read key (shim_c/libc/message.c, tw_msg_watch_poll). */
void tw_tk_msg_reader(uint64_t key) {
    if (tw_tk && my_slot) tw_tk_msg_watch(tw_tk, key, my_slot);
}

int tw_tk_msg_at(uint64_t key, uint64_t *t) {
    int found = 0;
    if (!tw_tk) return 0;
    *t = tw_tk_msg_time(tw_tk, key, &found);
    if (found) {
        tw_tk_reader_running();
        tw_tk_msg_seen(tw_tk, key, my_slot);
    }
    return found;
}
