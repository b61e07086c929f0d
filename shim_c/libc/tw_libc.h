/* Interposers for the libc calls that read time or wait with a deadline (time.c, sleep.c, wait.c,
 * syscall.c), and the few helpers they share (common.c). Every program's reading of time goes through the
 * virtual clock of shim_c/include/tw/core.h; every wait with a deadline is translated onto it.
 *
 * Switch: TIMEWARP_VIRTUAL_TIME=0 makes every interposer pass straight through to libc.
 *
 * While a thread is inside a core call made from here, the interposers pass through (a per-thread flag), so
 * the core may call libc's clock and wait functions. Calls into the core from elsewhere (the CUDA front
 * ends) are not flagged: there the core must use its own tw_real_clock_gettime() (core/internal.h).
 */
#ifndef TW_LIBC_H
#define TW_LIBC_H

#include <stdint.h>
#include <time.h>

#include "tw/core.h"
#include "tw/timekeeper.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- what the core provides */
/* A thread sleeps until virtual time virt_ns (nanosleep, an empty poll...): a pure wait, nothing else can
 * wake it. The core may jump the clock to virt_ns (when no other thread can act earlier) and should block
 * the thread only a short bounded real time. common.c holds a weak fallback: tw_wait_until(t) then
 * sched_yield(). */
void tw_sleep_until(uint64_t virt_ns);

/* The run-wide time keeper (core/timekeeper.c, vclock.c). tw_tk_on(): 1 when this thread takes part in
 * one (under `timewarp run`); then a wait an event can end is announced with tw_tk_twait_begin(deadline)
 * (or tw_tk_block_begin() without deadline), tw_tk_due(deadline, may_jump) says whether the keeper's clock has
 * reached the deadline, and tw_tk_wake(timed_out, deadline) ends the wait. common.c holds weak fallbacks
 * (no keeper). */
int tw_tk_on(void);
void tw_tk_twait_begin(uint64_t deadline);
void tw_tk_block_begin(int may_jump);
/* the first look (vclock.c; TIMEWARP_WAIT_FIRST_LOOK=0 turns it off): a wait looks at what is there before the keeper may jump */
int tw_tk_first_look(void);
int tw_tk_due(uint64_t deadline, int may_jump);
int tw_tk_due_look(uint64_t deadline, int (*look)(void *), void *ctx);
uint64_t tw_tk_safe(void);       /* the keeper's clock (0 without one) */
void tw_tk_wake(int how, uint64_t deadline);
void tw_tk_before_exec(void);
/* the core's charging of CPU time to the thread's clock, paused around the emulator's own work (vclock.c) */
void tw_charge_pause(void);
void tw_charge_resume(void);
/* the core: wait until no thread of any process can act before this thread's time (vclock.c); 1 if it waited */
int tw_tk_sync_now(void);
/* the core: this thread talks to its process's other threads through descriptors only (vclock.c) */
void tw_clock_io_thread(void);
/* the core: this own-clock thread's waits for Python's GIL are modelled (gil.c), so its timed waits on
 * private locks take real time and leave its clock where it is (tw_libc_real_lock_wait) */
int tw_gil_modelled_thread(void);
/* the core: the calling thread polls, as an event loop does at each turn, and lets Python's GIL go (gil.c) */
void tw_gil_release_point(void);
/* pthread_create: the creator reserves a slot (running, at its own clock) that the new thread adopts as its
 * first act, so that no clock jump can happen between the creation and the new thread's first reading
 * (a creator that then waits for the thread would otherwise leave nothing running). -1: none. */
int tw_tk_reserve(void);
void tw_tk_adopt(int slot);
void tw_tk_unreserve(int slot);

/* ---------------------------------------------------------------- internal to shim_c/libc/ */
#define TW_HIDDEN __attribute__((visibility("hidden")))

/* The real libc clock_gettime, whatever the switch says (the raw system call before it is resolved). */
int tw_libc_real_clock_gettime(clockid_t clk, struct timespec *tp) TW_HIDDEN;

enum { TW_LIBC_UNINIT = 0, TW_LIBC_OFF = 1, TW_LIBC_ON = 2 };
extern int tw_libc_state TW_HIDDEN;
/* >0 while the thread is inside the shim (a core call, init): interposers pass through. */
extern __thread int tw_libc_depth TW_HIDDEN __attribute__((tls_model("initial-exec")));
int tw_libc_init(void) TW_HIDDEN;
/* 1 once the core's clock epoch is known (tw_clock_epoch() answered non-zero). */
extern int tw_libc_epoch_ok TW_HIDDEN;
int tw_libc_load_epochs(void) TW_HIDDEN;

/* 1 when the calling interposer must apply virtual time; 0: pass through. Time stays real until the core
 * has an epoch (a library constructor may run before the core's), so that sleeps and clock readings agree. */
static inline int tw_libc_virtual(void) {
    int s = __atomic_load_n(&tw_libc_state, __ATOMIC_ACQUIRE);
    if (__builtin_expect(s == TW_LIBC_UNINIT, 0)) s = tw_libc_init();
    if (s != TW_LIBC_ON || tw_libc_depth != 0) return 0;
    if (__builtin_expect(__atomic_load_n(&tw_libc_epoch_ok, __ATOMIC_ACQUIRE), 1)) return 1;
    return tw_libc_load_epochs();
}

/* The real functions, resolved once by tw_libc_init() (NULL where libc lacks one). */
struct pollfd;
struct epoll_event;
struct timeval;
struct timespec;
typedef struct tw_libc_real {
    int (*clock_gettime)(clockid_t, struct timespec *);
    int (*gettimeofday)(struct timeval *, void *);
    time_t (*time)(time_t *);
    int (*ftime)(void *);
    int (*timespec_get)(struct timespec *, int);
    int (*nanosleep)(const struct timespec *, struct timespec *);
    int (*clock_nanosleep)(clockid_t, int, const struct timespec *, struct timespec *);
    int (*usleep)(unsigned);
    unsigned (*sleep)(unsigned);
    int (*poll)(struct pollfd *, unsigned long, int);
    int (*ppoll)(struct pollfd *, unsigned long, const struct timespec *, const void *);
    int (*poll_chk)(struct pollfd *, unsigned long, int, unsigned long);
    int (*ppoll_chk)(struct pollfd *, unsigned long, const struct timespec *, const void *, unsigned long);
    int (*select)(int, void *, void *, void *, struct timeval *);
    int (*pselect)(int, void *, void *, void *, const struct timespec *, const void *);
    int (*epoll_wait)(int, struct epoll_event *, int, int);
    int (*epoll_pwait)(int, struct epoll_event *, int, int, const void *);
    int (*epoll_pwait2)(int, struct epoll_event *, int, const struct timespec *, const void *);
    int (*cond_timedwait)(void *, void *, const struct timespec *);
    int (*cond_clockwait)(void *, void *, clockid_t, const struct timespec *);
    int (*sem_timedwait)(void *, const struct timespec *);
    int (*sem_clockwait)(void *, clockid_t, const struct timespec *);
    int (*mutex_timedlock)(void *, const struct timespec *);
    int (*mutex_clocklock)(void *, clockid_t, const struct timespec *);
    int (*rwlock_timedrdlock)(void *, const struct timespec *);
    int (*rwlock_timedwrlock)(void *, const struct timespec *);
    int (*rwlock_clockrdlock)(void *, clockid_t, const struct timespec *);
    int (*rwlock_clockwrlock)(void *, clockid_t, const struct timespec *);
    int (*timedjoin_np)(unsigned long, void **, const struct timespec *);
    int (*clockjoin_np)(unsigned long, void **, clockid_t, const struct timespec *);
    int (*sigtimedwait)(const void *, void *, const struct timespec *);
    long (*syscall)(long, ...);
    int (*cond_wait)(void *, void *);
    int (*cond_signal)(void *);
    int (*cond_broadcast)(void *);
    int (*sem_wait)(void *);
    int (*sem_post)(void *);
    int (*create)(void *, const void *, void *(*)(void *), void *);
    int (*setname_np)(unsigned long, const char *);
    int (*sched_yield)(void);
    int (*execve)(const char *, char *const[], char *const[]);
    int (*execv)(const char *, char *const[]);
    int (*execvp)(const char *, char *const[]);
    int (*execvpe)(const char *, char *const[], char *const[]);
    int (*posix_spawn)(int *, const char *, const void *, const void *, char *const[], char *const[]);
    int (*posix_spawnp)(int *, const char *, const void *, const void *, char *const[], char *const[]);
} tw_libc_real;
extern tw_libc_real tw_real TW_HIDDEN;

/* The syscall instruction, libc-style result (-1 and errno). For syscall() before libc's is resolved. */
long tw_raw_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6) TW_HIDDEN;

/* ---- virtual clock helpers (common.c) */
#define TW_NS 1000000000LL
/* tw_now() for this thread, never below its previous reading. */
uint64_t tw_libc_now(void) TW_HIDDEN;
/* The virtual clock's value, in ns, at virtual time 0 on clock clk (the wall clock's value at the virtual
 * epoch). Returns 0 and sets *base for a clock that is virtualised; -1 for one that passes through (CPU-time
 * clocks, dynamic clocks, unknown ids; every clock while the core has no epoch yet). */
int tw_libc_clock_base(clockid_t clk, int64_t *base) TW_HIDDEN;
/* An absolute deadline on clock clk, as a caller computed it from the virtual clock, translated into a real
 * deadline on the same clock for the same remaining duration. Returns 1 and fills *real_abs and *target (the
 * deadline in virtual time) when translated; 0 when the call must pass through unchanged (no deadline, a
 * clock that is not virtualised, a malformed timespec the real call should reject). */
int tw_libc_abs_deadline(clockid_t clk, const struct timespec *abs, struct timespec *real_abs,
                         uint64_t *target) TW_HIDDEN;
/* A wait with a deadline timed out: advance the thread's virtual time to target without sleeping.
 * Preserves errno. */
void tw_libc_timed_out(uint64_t target) TW_HIDDEN;
/* A pure sleep until target (virtual time). Preserves errno. */
void tw_libc_sleep_until(uint64_t target) TW_HIDDEN;
/* 1 when waits go through the run's time keeper (tw_tk_on(), called as the shim). */
int tw_libc_keeper(void) TW_HIDDEN;
/* A wait with virtual deadline target that an event can end, through the time keeper: the real call is
 * made in short real slices, call(ctx, rel_ns) with a relative timeout (0: a non-blocking check), until it
 * reports an event (returns non-zero: 1) or the keeper's clock reaches the deadline (returns 0: timed out,
 * the thread's clock is at the deadline). wake: TW_WAKE_LOCAL when only this process's threads can end
 * the wait, else TW_WAKE_ANY (tw_tk_wake). Preserves errno of the last call. */
typedef int (*tw_libc_wait_fn)(void *ctx, int64_t rel_ns);
int tw_libc_keeper_wait(uint64_t target, tw_libc_wait_fn call, void *ctx, int wake) TW_HIDDEN;
/* Its parts, for callers that loop themselves: announce, ask whether due, end (timed out or woken).
 * A real-time slice lasts as long as the keeper's clock still has to go to the deadline (it advances about
 * as fast as real time when threads compute), between TW_SLICE_MIN_NS and TW_SLICE_MAX_NS: a wait notices
 * its deadline soon after the clock reaches it, and a long wait costs a few wake-ups per millisecond. */
#define TW_SLICE_MIN_NS 50000
#define TW_SLICE_MAX_NS 2000000
void tw_libc_kw_begin(uint64_t target) TW_HIDDEN;
int tw_libc_kw_due(uint64_t target, int may_jump) TW_HIDDEN;
void tw_libc_kw_end(int timed_out, uint64_t target, int wake) TW_HIDDEN;
int64_t tw_libc_slice(uint64_t target) TW_HIDDEN;
/* Around a wait without deadline: the thread no longer holds the clock back; woken, it resumes no earlier
 * than anything that happened. Preserve errno. */
void tw_libc_block_begin(int may_jump) TW_HIDDEN;   /* may_jump 0: the caller holds a lock (a condvar's mutex) */
void tw_libc_block_end(int wake) TW_HIDDEN;
/* whether a wait with this wake rule waits real time, not to a virtual deadline (a GIL-modelled pool
 * thread's wait on its own process's locks; common.c) */
int tw_libc_real_lock_wait(int wake) TW_HIDDEN;
int tw_real_cond_notify(void *cond, int all) TW_HIDDEN;   /* the real pthread_cond_signal (0) / broadcast (1) */
int tw_real_sem_post(void *sem) TW_HIDDEN;
/* Condvar hand-overs (condvar.c): signals counted per condvar (a slice that timed out with the count moved is
 * a wake-up), and a signal to waiters held as a message to them (message.c's key, the keeper's holds). */
/* Who can end a wait on a condvar or semaphore (wait.c): TW_WAKE_ANY for a process-shared one, else TW_WAKE_LOCAL */
int tw_cond_wake(const void *cond) TW_HIDDEN;
int tw_sem_wake(const void *sem) TW_HIDDEN;
uint32_t tw_cv_notes(const void *cond) TW_HIDDEN;
void tw_cv_wait_begin(const void *cond) TW_HIDDEN;
void tw_cv_wait_end(const void *cond) TW_HIDDEN;
/* Semaphore hand-overs (semaphore.c): a feeder thread's post is a message to the waiter, which resumes no
 * earlier than it (tw_sem_wait_end, after the wait's end has set the thread running). */
void tw_sem_wait_begin(const void *sem) TW_HIDDEN;
void tw_sem_wait_end(const void *sem) TW_HIDDEN;
int tw_clock_is_feeder(void);        /* core (vclock.c); weak fallbacks in common.c */
int tw_clock_has_feeder(void);
uint64_t tw_clock_raise(uint64_t t);
uint64_t tw_msg_sync_key(const void *obj) TW_HIDDEN;   /* a private condvar's or semaphore's channel */
void tw_tk_msg_sent(uint64_t key, int hold);   /* the keeper's message table (core; weak fallbacks in message.c) */
int tw_tk_msg_at(uint64_t key, uint64_t *t);
void tw_tk_reader_running(void);   /* vclock.c: a woken waiter marks its slot running */
int tw_tk_msg_first_at(uint64_t key, uint64_t *t);
void tw_tk_msg_reader(uint64_t key);
/* Message stamps (message.c): after a wait's real call, what became ready (r: its result), then at the
 * wait's end the wake rule: TW_WAKE_AT with *t (the latest write among readable descriptors), TW_WAKE_ANY
 * (one of them untracked, or a signal) or TW_WAKE_LOCAL (only writable ones). Without a prior call: ANY. */
struct pollfd;
struct epoll_event;
void tw_msg_wake_poll(const struct pollfd *fds, unsigned long n, int r) TW_HIDDEN;
void tw_msg_watch_poll(const struct pollfd *fds, unsigned long n) TW_HIDDEN;
void tw_msg_wake_select(int n, const void *r, const void *e, int res) TW_HIDDEN;
void tw_msg_wake_epoll(int epfd, const struct epoll_event *ev, int r) TW_HIDDEN;
/* a non-blocking check at virtual time t: hide what was all written after t (level-triggered only), and
 * take what is still reported into the wake-up (as tw_msg_wake_poll/epoll do) */
int tw_msg_view_poll(struct pollfd *fds, unsigned long n, int r, uint64_t t) TW_HIDDEN;
int tw_msg_view_epoll(int epfd, struct epoll_event *ev, int r, uint64_t t) TW_HIDDEN;
int tw_msg_epoll_once(int epfd, const struct epoll_event *ev, int r) TW_HIDDEN;
int tw_msg_wake_resolve(uint64_t *t) TW_HIDDEN;
void tw_msg_epoll_ctl(int epfd, int op, int fd, const struct epoll_event *ev) TW_HIDDEN;
/* Descriptors first..last were closed (a path other than close(): their keys are stale). */
void tw_msg_forget(long first, long last) TW_HIDDEN;
/* A non-blocking check found events: move to the stamp of what it found, when known. */
void tw_libc_msg_catch_up(void) TW_HIDDEN;
/* A switch that is on unless environment variable `name` is "0", read once into *cache (-1: not read) */
int tw_libc_switch_on(const char *name, int *cache) TW_HIDDEN;
/* the busy reader's rule is on (TIMEWARP_POLL_SYNC, default on) */
int tw_libc_poll_sync_on(void) TW_HIDDEN;
/* Around the stamps' bookkeeping: not charged to the program's clock (tw_charge_pause) */
void tw_libc_bookkeeping_begin(void) TW_HIDDEN;
void tw_libc_bookkeeping_end(void) TW_HIDDEN;
/* A real absolute deadline rel_ns from now on clock clk. */
struct timespec tw_libc_real_after(clockid_t clk, int64_t rel_ns) TW_HIDDEN;

static inline int64_t tw_ts_ns(const struct timespec *ts) { return (int64_t)ts->tv_sec * TW_NS + ts->tv_nsec; }
static inline struct timespec tw_ns_ts(int64_t ns) {
    struct timespec ts;
    ts.tv_sec = ns / TW_NS;
    ts.tv_nsec = ns % TW_NS;
    if (ts.tv_nsec < 0) { ts.tv_nsec += TW_NS; ts.tv_sec -= 1; }
    return ts;
}
static inline int tw_ts_valid(const struct timespec *ts) {
    return ts->tv_sec >= 0 && ts->tv_nsec >= 0 && ts->tv_nsec < TW_NS;
}
/* libc's headers declare some pointers nonnull, which lets the compiler drop a NULL check; the kernel
 * answers EFAULT instead, and so should we. */
static inline int tw_nonnull(const void *p) {
    __asm__("" : "+r"(p));
    return p != 0;
}
/* a + b, saturating at INT64_MAX (a timeout of years must not wrap) */
static inline int64_t tw_add_sat(int64_t a, int64_t b) {
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

#ifdef __cplusplus
}
#endif
#endif
