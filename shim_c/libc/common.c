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

#include "tw/raw_syscall.h"
#include "tw_libc.h"

int tw_libc_state = TW_LIBC_UNINIT;
__thread int tw_libc_depth __attribute__((tls_model("initial-exec")));
tw_libc_real tw_real;

/* Per thread: the last virtual time this thread saw, so that its readings never go back. */
static __thread uint64_t tw_libc_last __attribute__((tls_model("initial-exec")));

/* ---------------------------------------------------------------- raw system calls, for before resolution */
long tw_raw_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6) {
    long ret = tw_sys6(nr, a1, a2, a3, a4, a5, a6);
    if (ret < 0 && ret > -4096) { errno = (int)-ret; return -1; }
    return ret;
}

int tw_libc_real_clock_gettime(clockid_t clk, struct timespec *tp) {
    int (*fn)(clockid_t, struct timespec *) = __atomic_load_n(&tw_real.clock_gettime, __ATOMIC_RELAXED);
    if (__builtin_expect(fn != NULL, 1)) return fn(clk, tp);
    long r = tw_sys2(SYS_clock_gettime, clk, tp);
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

/* pthread_cond_signal/broadcast (condvar.c counts them) and sem_post (semaphore.c) pass through whatever the
 * shim's state: resolved here if tw_libc_init has not run (a call from another library's constructor, or from
 * within dlsym). */
int tw_real_cond_notify(void *cond, int all) {
    int (*f)(void *) = all ? tw_real.cond_broadcast : tw_real.cond_signal;
    if (__builtin_expect(f == NULL, 0)) {
        void *p = tw_resolve_cond(all ? "pthread_cond_broadcast" : "pthread_cond_signal");
        memcpy(&f, &p, sizeof p);
    }
    return f(cond);
}

int tw_real_sem_post(void *sem) {
    int (*f)(void *) = tw_real.sem_post;
    if (__builtin_expect(f == NULL, 0)) {
        void *p = dlsym(RTLD_NEXT, "sem_post");
        memcpy(&f, &p, sizeof p);
    }
    return f(sem);
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
    R_SET(cond_wait, tw_resolve_cond("pthread_cond_wait"));
    R_SET(cond_signal, tw_resolve_cond("pthread_cond_signal"));
    R_SET(cond_broadcast, tw_resolve_cond("pthread_cond_broadcast"));
    R(sem_wait, "sem_wait");
    R(sem_post, "sem_post");
    R(create, "pthread_create");
    R(setname_np, "pthread_setname_np");
    R(sched_yield, "sched_yield");
    R(execve, "execve");
    R(execv, "execv");
    R(execvp, "execvp");
    R(execvpe, "execvpe");
    R(posix_spawn, "posix_spawn");
    R(posix_spawnp, "posix_spawnp");
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


/* ---------------------------------------------------------------- the run's time keeper */
/* Fallbacks for a build without the core (the libc tests' fake core): no keeper. */
__attribute__((weak)) int tw_tk_on(void) { return 0; }
__attribute__((weak)) void tw_tk_twait_begin(uint64_t deadline) { (void)deadline; }
__attribute__((weak)) void tw_tk_block_begin(int may_jump) { (void)may_jump; }
__attribute__((weak)) int tw_tk_first_look(void) { return 0; }
__attribute__((weak)) int tw_tk_due(uint64_t deadline, int may_jump) { (void)deadline; (void)may_jump; return 1; }
__attribute__((weak)) int tw_tk_due_look(uint64_t deadline, int (*look)(void *), void *ctx) {
    (void)deadline; (void)look; (void)ctx;
    return 1;
}
__attribute__((weak)) uint64_t tw_tk_safe(void) { return 0; }
__attribute__((weak)) void tw_tk_wake(int how, uint64_t deadline) { (void)how; (void)deadline; }
__attribute__((weak)) void tw_tk_before_exec(void) {}
__attribute__((weak)) void tw_charge_pause(void) {}
__attribute__((weak)) int tw_tk_sync_now(void) { return 0; }
__attribute__((weak)) void tw_clock_io_thread(void) {}
__attribute__((weak)) int tw_clock_is_feeder(void) { return 0; }
__attribute__((weak)) int tw_clock_has_feeder(void) { return 0; }
__attribute__((weak)) uint64_t tw_clock_raise(uint64_t t) { return t; }
__attribute__((weak)) int tw_gil_modelled_thread(void) { return 0; }
__attribute__((weak)) void tw_gil_release_point(void) {}
__attribute__((weak)) void tw_charge_resume(void) {}
__attribute__((weak)) int tw_tk_reserve(void) { return -1; }
__attribute__((weak)) void tw_tk_adopt(int slot) { (void)slot; }
__attribute__((weak)) void tw_tk_unreserve(int slot) { (void)slot; }

int tw_libc_keeper(void) {
    tw_libc_depth++;
    int on = tw_tk_on();
    tw_libc_depth--;
    return on;
}

int64_t tw_libc_slice(uint64_t target) {
    uint64_t safe = tw_tk_safe();
    int64_t left = target > safe ? (int64_t)(target - safe) : 0;
    return left < TW_SLICE_MIN_NS ? TW_SLICE_MIN_NS : left > TW_SLICE_MAX_NS ? TW_SLICE_MAX_NS : left;
}

void tw_libc_kw_begin(uint64_t target) {
    int saved = errno;
    tw_libc_depth++;
    tw_tk_twait_begin(target);
    tw_libc_depth--;
    errno = saved;
}

int tw_libc_kw_due(uint64_t target, int may_jump) {
    int saved = errno;
    tw_libc_depth++;
    int due = tw_tk_due(target, may_jump);
    tw_libc_depth--;
    errno = saved;
    return due;
}

/* The wait's own look, made by the keeper's advance just before it would jump (tw_tk_advance_look) */
typedef struct { tw_libc_wait_fn call; void *ctx; int r; } own_look;
static int own_look_now(void *p) {
    own_look *l = p;
    l->r = l->call(l->ctx, 0);
    return l->r;
}

static int tw_libc_kw_due_look(uint64_t target, own_look *look) {
    int saved = errno;
    tw_libc_depth++;
    int due = tw_tk_due_look(target, own_look_now, look);
    tw_libc_depth--;
    if (!look->r) errno = saved;   /* what the look found keeps its own errno */
    return due;
}

/* A wait that something outside this process may end (TW_WAKE_ANY): message stamps may say when. */
static int tw_libc_wake_rule(int wake, uint64_t *t) {
    if (wake != TW_WAKE_ANY) return wake;
    return tw_msg_wake_resolve(t);
}

void tw_libc_kw_end(int timed_out, uint64_t target, int wake) {
    int saved = errno;
    uint64_t at = target;
    int how = tw_libc_wake_rule(wake, &at);   /* always asked: it forgets the wait's readiness */
    tw_libc_depth++;
    if (timed_out) tw_tk_wake(TW_WAKE_TIMEOUT, target);
    else tw_tk_wake(how, at);
    tw_libc_depth--;
    if (timed_out && target > tw_libc_last) tw_libc_last = target;
    errno = saved;
}

int tw_libc_keeper_wait(uint64_t target, tw_libc_wait_fn call, void *ctx, int wake) {
    if (tw_libc_real_lock_wait(wake)) {
        uint64_t now = tw_libc_now();
        tw_libc_block_begin(1);
        int r = call(ctx, target > now ? (int64_t)(target - now) : 0);
        tw_libc_block_end(TW_WAKE_LOCAL);
        return r;
    }
    /* what is there already ends the wait before it is a wait: the keeper's due check may settle (a real
     * pause, tk_shared.c) and jump past it (vclock.c, tw_tk_first_look) */
    if (tw_tk_first_look()) {
        int r0 = call(ctx, 0);
        if (r0) { tw_libc_kw_end(0, target, wake); return r0; }
    }
    tw_libc_kw_begin(target);
    for (;;) {
        own_look look = {call, ctx, 0};
        int due = tw_libc_kw_due_look(target, &look);
        if (look.r) { tw_libc_kw_end(0, target, wake); return look.r; }
        int r = call(ctx, due ? 0 : tw_libc_slice(target));
        if (r || due) { tw_libc_kw_end(!r, target, wake); return r; }
    }
}

/* A pool thread whose GIL waits gil.c models keeps its clock through waits on its own process's locks (its GIL
 * hand-overs are the model's), so a virtual deadline would be due at once: CPython's take_gil (a private
 * condvar, 5 ms deadlines) spun on one timed-out wait after another while the loop held the real GIL (about
 * 40 s of system time in vLLM case 8). Such a wait takes the real time asked for, with the keeper told the
 * thread is blocked, and leaves the thread's clock where it is. */
int tw_libc_real_lock_wait(int wake) {
    if (wake != TW_WAKE_LOCAL) return 0;
    tw_libc_depth++;
    int on = tw_gil_modelled_thread();
    tw_libc_depth--;
    return on;
}

void tw_libc_block_begin(int may_jump) {
    int saved = errno;
    tw_libc_depth++;
    tw_tk_block_begin(may_jump);
    tw_libc_depth--;
    errno = saved;
}

void tw_libc_block_end(int wake) {
    int saved = errno;
    uint64_t at = 0;
    int how = tw_libc_wake_rule(wake, &at);
    tw_libc_depth++;
    tw_tk_wake(how, at);
    tw_libc_depth--;
    errno = saved;
}

/* The message stamps' bookkeeping (keying a descriptor, the run's shared tables) is the emulator's work,
 * not the program's: it is not charged to the thread's clock. Charged, it made an asyncio program that
 * streams over 256 connections 8-28% slower in virtual time than without stamps. */
void tw_libc_bookkeeping_begin(void) { tw_libc_depth++; tw_charge_pause(); }
void tw_libc_bookkeeping_end(void) { tw_charge_resume(); tw_libc_depth--; }

int tw_libc_switch_on(const char *name, int *cache) {
    int on = __atomic_load_n(cache, __ATOMIC_RELAXED);
    if (__builtin_expect(on < 0, 0)) {
        const char *v = getenv(name);
        on = !(v && v[0] == '0' && !v[1]);
        __atomic_store_n(cache, on, __ATOMIC_RELAXED);
    }
    return on;
}

/* TIMEWARP_POLL_SYNC=0 turns off the busy reader's rule (wait.c, sleep.c's sched_yield): a busy reader then
 * sees what the machine delivered. */
int tw_libc_poll_sync_on(void) {
    static int on = -1;
    return tw_libc_switch_on("TIMEWARP_POLL_SYNC", &on);
}

void tw_libc_msg_catch_up(void) {
    uint64_t at = 0;
    if (tw_msg_wake_resolve(&at) != TW_WAKE_AT) return;
    int saved = errno;
    tw_libc_depth++;
    (void)tw_now();   /* charge the CPU time until here first: a wake-up forgets it */
    tw_tk_wake(TW_WAKE_AT, at);
    tw_libc_depth--;
    errno = saved;
}

struct timespec tw_libc_real_after(clockid_t clk, int64_t rel_ns) {
    struct timespec now;
    tw_libc_real_clock_gettime(clk, &now);
    return tw_ns_ts(tw_add_sat(tw_ts_ns(&now), rel_ns));
}
