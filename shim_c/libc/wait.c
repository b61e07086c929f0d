/* Waits with a deadline on something another thread or process can end: poll, ppoll, select, pselect,
 * epoll_wait, epoll_pwait, epoll_pwait2, sigtimedwait, pthread_cond_timedwait/clockwait, sem_timedwait/
 * clockwait, pthread_mutex_timedlock/clocklock, pthread_rwlock_timed{rd,wr}lock/clock{rd,wr}lock, pthread_timedjoin_np/
 * clockjoin_np. (Futex waits: syscall.c.)
 *
 * The rule:
 * - a wait with nothing to wait on (poll with no descriptors or only negative ones, select with empty sets)
 *   is a sleep (sleep.c's semantics);
 * - a relative zero timeout passes through unchanged: it is a non-blocking check;
 * - a wait without timeout passes through;
 * - otherwise the real call gets the same remaining duration: a relative timeout unchanged, an absolute
 *   deadline translated from the caller's virtual clock to the real one (deadline_virtual - now_virtual
 *   from now on the real clock; a deadline already past becomes "now", a non-blocking check). If the real
 *   call times out, the thread's virtual time advances to the deadline (tw_wait_until, no sleep).
 * A wait that ends early (an event, a signal) charges nothing more than the thread's CPU time.
 *
 * Under `timewarp run` (a run-wide time keeper; tw_libc_keeper()) the same waits go through the keeper
 * instead: a timed wait is made in short real slices until an event ends it or the keeper's clock reaches
 * its deadline (no thread of any process can act before it), and a wait without timeout tells the keeper
 * the thread is idle until woken (tw_libc_block_begin/end).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>

#include "tw_libc.h"

/* ---------------------------------------------------------------- helpers */
/* Start of a wait with a relative timeout of rel_ns (> 0): its virtual deadline. */
static inline uint64_t tw_rel_target(int64_t rel_ns) {
    return (uint64_t)tw_add_sat((int64_t)tw_libc_now(), rel_ns);
}

static void tw_sleep_to(uint64_t target) {
    pthread_testcancel(); /* every wait here is a cancellation point */
    tw_libc_sleep_until(target);
}

/* A poll is a turn of an event loop: Python lets its GIL go around it (asyncio's selector; uvloop runs all
 * of libuv without it), and a thread waiting for the GIL gets it there (shim_c/core/gil.c). */
static inline void tw_loop_turn(void) {
    tw_libc_depth++;
    tw_gil_release_point();
    tw_libc_depth--;
}

/* ---------------------------------------------------------------- poll */
static int tw_pollfds_empty(const struct pollfd *fds, nfds_t n) {
    for (nfds_t i = 0; i < n; i++)
        if (fds[i].fd >= 0) return 0;
    return 1;
}

/* ---- keeper waits: each real call with a relative timeout in ns */
typedef struct { struct pollfd *fds; nfds_t n; const sigset_t *mask; int r; } tw_poll_ctx;
static int tw_poll_call(void *c, int64_t rel) {
    tw_poll_ctx *x = c;
    struct timespec ts = tw_ns_ts(rel);
    x->r = tw_real.ppoll(x->fds, x->n, &ts, x->mask);
    if (x->r != 0) tw_msg_wake_poll(x->fds, x->n, x->r);
    return x->r != 0;
}

static int tw_poll_keeper(struct pollfd *fds, nfds_t n, int64_t rel_ns, const sigset_t *mask) {
    if (rel_ns < 0) {   /* no timeout */
        tw_msg_watch_poll(fds, n);
        tw_libc_block_begin(1);
        int r = tw_real.ppoll(fds, n, NULL, mask);
        tw_msg_wake_poll(fds, n, r);
        tw_libc_block_end(TW_WAKE_ANY);
        return r;
    }
    uint64_t target = tw_rel_target(rel_ns);
    if (tw_pollfds_empty(fds, n)) {
        for (nfds_t i = 0; i < n; i++) fds[i].revents = 0;
        tw_sleep_to(target);
        return 0;
    }
    tw_poll_ctx x = {fds, n, mask, 0};
    tw_msg_watch_poll(fds, n);
    tw_libc_keeper_wait(target, tw_poll_call, &x, TW_WAKE_ANY);
    return x.r;
}

/* A non-blocking check under the keeper sees what other processes sent before the thread's time t, and
 * only that:
 * - it waits until no thread of another process can still act before t (tw_tk_sync_now): a writer running
 *   behind in real time has then written what it writes before t;
 * - descriptors whose unseen data was all written after t are not reported (message.c,
 *   tw_msg_view_*): a writer running ahead in real time does not drag the reader to its clock.
 * What it reports is marked seen: unseen messages hold the run's clock (message.c), which the wait would
 * otherwise sit out. Without the keeper, or with TIMEWARP_POLL_SYNC=0, data found moves the thread to its
 * time where that is later (the rule of blocking waits). One body for poll and epoll: */
typedef struct {
    int (*call)(void *x);                       /* the real call with a zero timeout */
    int (*view)(void *x, int r, uint64_t t);    /* drop what was all written after t, look the rest up
                                                 * (marks it seen); the count left */
    void (*wake)(void *x, int r);               /* look the reported descriptors up (the rule off) */
    int (*once)(void *x, int r);                /* whether the kernel reports any of them only once (NULL:
                                                 * never) */
} tw_check_ops;

static int tw_check_now(const tw_check_ops *op, void *x) {
    int r = op->call(x);
    if (r < 0 || !tw_libc_keeper()) return r;
    tw_libc_bookkeeping_begin();
    uint64_t at, t = tw_libc_now();
    if (!tw_libc_poll_sync_on()) {
        if (r > 0) { op->wake(x, r); tw_libc_msg_catch_up(); }
    } else {
        for (int pass = 0; pass < 2; pass++) {   /* a second look once the others have caught up */
            if (r > 0) { r = op->view(x, r, t); (void)tw_msg_wake_resolve(&at); }
            if (pass) break;
            /* not when the first reported an event that the kernel reports once (epoll's EPOLLET or
             * EPOLLONESHOT; the view hides only level-triggered ones): the second call would not report it
             * again, and the program would never see it */
            if (r > 0 && op->once && op->once(x, r)) break;
            if (!tw_tk_sync_now()) break;
            r = op->call(x);
            if (r < 0) break;
        }
    }
    tw_libc_bookkeeping_end();
    return r;
}

typedef struct { struct pollfd *fds; nfds_t n; } tw_pollnow_ctx;
static int pollnow_call(void *c) { tw_pollnow_ctx *x = c; return tw_real.poll(x->fds, x->n, 0); }
static int pollnow_view(void *c, int r, uint64_t t) { tw_pollnow_ctx *x = c; return tw_msg_view_poll(x->fds, x->n, r, t); }
static void pollnow_wake(void *c, int r) { tw_pollnow_ctx *x = c; tw_msg_wake_poll(x->fds, x->n, r); }
static const tw_check_ops pollnow_ops = {pollnow_call, pollnow_view, pollnow_wake, NULL};

static int tw_poll_now(struct pollfd *fds, nfds_t n) {
    tw_pollnow_ctx x = {fds, n};
    return tw_check_now(&pollnow_ops, &x);
}

typedef struct { int epfd; struct epoll_event *ev; int max; const sigset_t *mask; } tw_epollnow_ctx;
static int epollnow_call(void *c) { tw_epollnow_ctx *x = c; return tw_real.epoll_pwait(x->epfd, x->ev, x->max, 0, x->mask); }
static int epollnow_view(void *c, int r, uint64_t t) { tw_epollnow_ctx *x = c; return tw_msg_view_epoll(x->epfd, x->ev, r, t); }
static void epollnow_wake(void *c, int r) { tw_epollnow_ctx *x = c; tw_msg_wake_epoll(x->epfd, x->ev, r); }
static int epollnow_once(void *c, int r) { tw_epollnow_ctx *x = c; return tw_msg_epoll_once(x->epfd, x->ev, r); }
static const tw_check_ops epollnow_ops = {epollnow_call, epollnow_view, epollnow_wake, epollnow_once};

static int tw_epoll_now(int epfd, struct epoll_event *ev, int max, const sigset_t *mask) {
    tw_epollnow_ctx x = {epfd, ev, max, mask};
    return tw_check_now(&epollnow_ops, &x);
}

TW_EXPORT int poll(struct pollfd *fds, nfds_t n, int timeout) {
    if (!tw_libc_virtual()) return tw_real.poll(fds, n, timeout);
    tw_loop_turn();
    if (timeout == 0) return tw_poll_now(fds, n);
    if (tw_libc_keeper()) return tw_poll_keeper(fds, n, timeout < 0 ? -1 : (int64_t)timeout * 1000000, NULL);
    if (timeout < 0) return tw_real.poll(fds, n, timeout);
    uint64_t target = tw_rel_target((int64_t)timeout * 1000000);
    if (tw_pollfds_empty(fds, n)) {
        for (nfds_t i = 0; i < n; i++) fds[i].revents = 0;
        tw_sleep_to(target);
        return 0;
    }
    int r = tw_real.poll(fds, n, timeout);
    if (r == 0) tw_libc_timed_out(target);
    return r;
}

int __poll(struct pollfd *fds, nfds_t n, int timeout);
TW_EXPORT int __poll(struct pollfd *fds, nfds_t n, int timeout) { return poll(fds, n, timeout); }

TW_EXPORT int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask) {
    if (tw_libc_virtual()) tw_loop_turn();
    if (!tw_libc_virtual() || (tmo && (!tw_ts_valid(tmo) || (tmo->tv_sec == 0 && tmo->tv_nsec == 0))))
        return tw_real.ppoll(fds, n, tmo, mask);
    if (tw_libc_keeper()) return tw_poll_keeper(fds, n, tmo ? tw_ts_ns(tmo) : -1, mask);
    if (!tmo) return tw_real.ppoll(fds, n, tmo, mask);
    uint64_t target = tw_rel_target(tw_ts_ns(tmo));
    if (tw_pollfds_empty(fds, n)) { /* a sleep; the signal mask is not applied (see sleep.c on signals) */
        for (nfds_t i = 0; i < n; i++) fds[i].revents = 0;
        tw_sleep_to(target);
        return 0;
    }
    int r = tw_real.ppoll(fds, n, tmo, mask);
    if (r == 0) tw_libc_timed_out(target);
    return r;
}

/* _FORTIFY_SOURCE builds call these instead of poll/ppoll; glibc's versions then call __poll internally,
 * past any interposer. Keep their check (real one aborts on a short array), then do ours. */
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);
int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask, size_t fdslen);

TW_EXPORT int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen) {
    if (fdslen / sizeof(*fds) < n && tw_real.poll_chk) return tw_real.poll_chk(fds, n, timeout, fdslen);
    return poll(fds, n, timeout);
}

TW_EXPORT int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *mask,
                          size_t fdslen) {
    if (fdslen / sizeof(*fds) < n && tw_real.ppoll_chk) return tw_real.ppoll_chk(fds, n, tmo, mask, fdslen);
    return ppoll(fds, n, tmo, mask);
}

/* ---------------------------------------------------------------- select */
static int tw_fdset_empty(int n, const fd_set *s) {
    if (!s) return 1;
    for (int fd = 0; fd < n && fd < FD_SETSIZE; fd++)
        if (FD_ISSET(fd, s)) return 0;
    return 1;
}

static int tw_select_empty(int n, const fd_set *r, const fd_set *w, const fd_set *e) {
    return tw_fdset_empty(n, r) && tw_fdset_empty(n, w) && tw_fdset_empty(n, e);
}

/* select modifies its sets (cleared on a timeout): each slice starts from the caller's sets. */
typedef struct { int n; fd_set *r, *w, *e; fd_set r0, w0, e0; const sigset_t *mask; int res; } tw_select_ctx;
static int tw_select_call(void *c, int64_t rel) {
    tw_select_ctx *x = c;
    if (x->r) *x->r = x->r0;
    if (x->w) *x->w = x->w0;
    if (x->e) *x->e = x->e0;
    struct timespec ts = tw_ns_ts(rel);
    x->res = tw_real.pselect(x->n, x->r, x->w, x->e, &ts, x->mask);
    if (x->res != 0) tw_msg_wake_select(x->n, x->r, x->e, x->res);
    return x->res != 0;
}

static int tw_select_keeper(int n, fd_set *r, fd_set *w, fd_set *e, int64_t rel_ns, const sigset_t *mask) {
    if (rel_ns < 0) {
        tw_libc_block_begin(1);
        int rr = tw_real.pselect(n, r, w, e, NULL, mask);
        tw_msg_wake_select(n, r, e, rr);
        tw_libc_block_end(TW_WAKE_ANY);
        return rr;
    }
    uint64_t target = tw_rel_target(rel_ns);
    if (tw_select_empty(n, r, w, e)) { tw_sleep_to(target); return 0; }
    tw_select_ctx x = {.n = n, .r = r, .w = w, .e = e, .mask = mask};
    if (r) x.r0 = *r;
    if (w) x.w0 = *w;
    if (e) x.e0 = *e;
    tw_libc_keeper_wait(target, tw_select_call, &x, TW_WAKE_ANY);
    return x.res;
}

TW_EXPORT int select(int n, fd_set *restrict r, fd_set *restrict w, fd_set *restrict e,
                     struct timeval *restrict tv) {
    if (tw_libc_virtual()) tw_loop_turn();
    if (!tw_libc_virtual() || n < 0 || n > FD_SETSIZE ||
        (tv && (tv->tv_sec < 0 || tv->tv_usec < 0 || tv->tv_usec >= 1000000 || (tv->tv_sec == 0 && tv->tv_usec == 0))))
        return tw_real.select(n, r, w, e, tv);
    if (tw_libc_keeper()) {
        int rr = tw_select_keeper(n, r, w, e, tv ? (int64_t)tv->tv_sec * TW_NS + (int64_t)tv->tv_usec * 1000 : -1, NULL);
        if (tv && rr == 0) tv->tv_sec = tv->tv_usec = 0;
        return rr;
    }
    if (!tv) return tw_real.select(n, r, w, e, tv);
    uint64_t target = tw_rel_target((int64_t)tv->tv_sec * TW_NS + (int64_t)tv->tv_usec * 1000);
    if (tw_select_empty(n, r, w, e)) { /* the classic portable sub-second sleep */
        tw_sleep_to(target);
        tv->tv_sec = tv->tv_usec = 0; /* Linux reports the time not slept */
        return 0;
    }
    int rr = tw_real.select(n, r, w, e, tv);
    if (rr == 0) tw_libc_timed_out(target);
    return rr;
}

int __select(int n, fd_set *restrict r, fd_set *restrict w, fd_set *restrict e, struct timeval *restrict tv);
TW_EXPORT int __select(int n, fd_set *restrict r, fd_set *restrict w, fd_set *restrict e,
                       struct timeval *restrict tv) {
    return select(n, r, w, e, tv);
}

TW_EXPORT int pselect(int n, fd_set *restrict r, fd_set *restrict w, fd_set *restrict e,
                      const struct timespec *restrict tmo, const sigset_t *restrict mask) {
    if (tw_libc_virtual()) tw_loop_turn();
    if (!tw_libc_virtual() || n < 0 || n > FD_SETSIZE || (tmo && (!tw_ts_valid(tmo) || (tmo->tv_sec == 0 && tmo->tv_nsec == 0))))
        return tw_real.pselect(n, r, w, e, tmo, mask);
    if (tw_libc_keeper()) return tw_select_keeper(n, r, w, e, tmo ? tw_ts_ns(tmo) : -1, mask);
    if (!tmo) return tw_real.pselect(n, r, w, e, tmo, mask);
    uint64_t target = tw_rel_target(tw_ts_ns(tmo));
    if (tw_select_empty(n, r, w, e)) { /* the mask is not applied: see sleep.c on signals */
        tw_sleep_to(target);
        return 0;
    }
    int rr = tw_real.pselect(n, r, w, e, tmo, mask);
    if (rr == 0) tw_libc_timed_out(target);
    return rr;
}

/* ---------------------------------------------------------------- epoll */
/* An epoll set may be empty, but nothing cheap tells: these are always real waits. Keeper slices use
 * epoll_pwait2 (ns timeouts) where the kernel has it, else epoll_pwait (whole milliseconds). */
typedef struct { int epfd; struct epoll_event *ev; int max; const sigset_t *mask; int r; } tw_epoll_ctx;
static int tw_epoll_call(void *c, int64_t rel) {
    tw_epoll_ctx *x = c;
    static int no_pwait2;
    if (tw_real.epoll_pwait2 && !__atomic_load_n(&no_pwait2, __ATOMIC_RELAXED)) {
        struct timespec ts = tw_ns_ts(rel);
        x->r = tw_real.epoll_pwait2(x->epfd, x->ev, x->max, &ts, x->mask);
        if (!(x->r < 0 && errno == ENOSYS)) {
            if (x->r != 0) tw_msg_wake_epoll(x->epfd, x->ev, x->r);
            return x->r != 0;
        }
        __atomic_store_n(&no_pwait2, 1, __ATOMIC_RELAXED);
    }
    x->r = tw_real.epoll_pwait(x->epfd, x->ev, x->max, (int)((rel + 999999) / 1000000), x->mask);
    if (x->r != 0) tw_msg_wake_epoll(x->epfd, x->ev, x->r);
    return x->r != 0;
}

static int tw_epoll_keeper(int epfd, struct epoll_event *ev, int max, int64_t rel_ns, const sigset_t *mask) {
    if (rel_ns < 0) {
        tw_libc_block_begin(1);
        int r = tw_real.epoll_pwait(epfd, ev, max, -1, mask);
        tw_msg_wake_epoll(epfd, ev, r);
        tw_libc_block_end(TW_WAKE_ANY);
        return r;
    }
    tw_epoll_ctx x = {epfd, ev, max, mask, 0};
    tw_libc_keeper_wait(tw_rel_target(rel_ns), tw_epoll_call, &x, TW_WAKE_ANY);
    return x.r;
}

TW_EXPORT int epoll_wait(int epfd, struct epoll_event *ev, int max, int timeout) {
    if (!tw_libc_virtual()) return tw_real.epoll_wait(epfd, ev, max, timeout);
    tw_loop_turn();
    if (timeout == 0) return tw_epoll_now(epfd, ev, max, NULL);
    if (tw_libc_keeper()) return tw_epoll_keeper(epfd, ev, max, timeout < 0 ? -1 : (int64_t)timeout * 1000000, NULL);
    if (timeout < 0) return tw_real.epoll_wait(epfd, ev, max, timeout);
    uint64_t target = tw_rel_target((int64_t)timeout * 1000000);
    int r = tw_real.epoll_wait(epfd, ev, max, timeout);
    if (r == 0) tw_libc_timed_out(target);
    return r;
}

TW_EXPORT int epoll_pwait(int epfd, struct epoll_event *ev, int max, int timeout, const sigset_t *mask) {
    if (!tw_libc_virtual()) return tw_real.epoll_pwait(epfd, ev, max, timeout, mask);
    tw_loop_turn();
    if (timeout == 0) return tw_epoll_now(epfd, ev, max, mask);
    if (tw_libc_keeper()) return tw_epoll_keeper(epfd, ev, max, timeout < 0 ? -1 : (int64_t)timeout * 1000000, mask);
    if (timeout < 0) return tw_real.epoll_pwait(epfd, ev, max, timeout, mask);
    uint64_t target = tw_rel_target((int64_t)timeout * 1000000);
    int r = tw_real.epoll_pwait(epfd, ev, max, timeout, mask);
    if (r == 0) tw_libc_timed_out(target);
    return r;
}

TW_EXPORT int epoll_pwait2(int epfd, struct epoll_event *ev, int max, const struct timespec *tmo,
                           const sigset_t *mask) {
    if (!tw_real.epoll_pwait2) { errno = ENOSYS; return -1; }
    if (tw_libc_virtual()) tw_loop_turn();
    if (!tw_libc_virtual() || (tmo && (!tw_ts_valid(tmo) || (tmo->tv_sec == 0 && tmo->tv_nsec == 0))))
        return tw_real.epoll_pwait2(epfd, ev, max, tmo, mask);
    if (tw_libc_keeper()) return tw_epoll_keeper(epfd, ev, max, tmo ? tw_ts_ns(tmo) : -1, mask);
    if (!tmo) return tw_real.epoll_pwait2(epfd, ev, max, tmo, mask);
    uint64_t target = tw_rel_target(tw_ts_ns(tmo));
    int r = tw_real.epoll_pwait2(epfd, ev, max, tmo, mask);
    if (r == 0) tw_libc_timed_out(target);
    return r;
}

/* ---------------------------------------------------------------- signals */
typedef struct { const sigset_t *set; siginfo_t *info; int r; } tw_sigwait_ctx;
static int tw_sigwait_call(void *c, int64_t rel) {
    tw_sigwait_ctx *x = c;
    struct timespec ts = tw_ns_ts(rel);
    x->r = tw_real.sigtimedwait(x->set, x->info, &ts);
    return !(x->r < 0 && errno == EAGAIN);
}

TW_EXPORT int sigtimedwait(const sigset_t *restrict set, siginfo_t *restrict info,
                           const struct timespec *restrict tmo) {
    if (!tw_libc_virtual() || !tmo || !tw_ts_valid(tmo) || (tmo->tv_sec == 0 && tmo->tv_nsec == 0))
        return tw_real.sigtimedwait(set, info, tmo);
    if (tw_libc_keeper()) {
        tw_sigwait_ctx x = {set, info, 0};
        if (!tw_libc_keeper_wait(tw_rel_target(tw_ts_ns(tmo)), tw_sigwait_call, &x, TW_WAKE_ANY)) { errno = EAGAIN; return -1; }
        return x.r;
    }
    uint64_t target = tw_rel_target(tw_ts_ns(tmo));
    int r = tw_real.sigtimedwait(set, info, tmo);
    if (r < 0 && errno == EAGAIN) tw_libc_timed_out(target);
    return r;
}

/* ---------------------------------------------------------------- pthread objects, absolute deadlines */
/* Calls the real function (call_with(deadline)) with the deadline translated and returns its result. A
 * deadline that cannot be translated (none, a clock that is not virtual, malformed) goes through as it is.
 * Timed out: ETIMEDOUT returned (pthread_*), or -1 with errno ETIMEDOUT (sem_*). cv: the condvar waited on
 * (NULL for other objects): its hand-overs are condvar.c's, and its waiter never jumps the clock (it holds
 * the mutex that the thread about to wake it may need). sem: the semaphore waited on (NULL for others): its
 * feeders' posts are semaphore.c's. */
#define TW_ABS_WAIT(clk, abs, call_with) TW_ABS_WAIT_WAKE(clk, abs, call_with, TW_WAKE_LOCAL, NULL, NULL)
#define TW_ABS_WAIT_WAKE(clk, abs, call_with, wake, cv, sem)                                                 \
    do {                                                                                                     \
        struct timespec tw_real_abs_;                                                                        \
        uint64_t tw_target_;                                                                                 \
        if (!tw_libc_virtual() || !tw_libc_abs_deadline((clk), (abs), &tw_real_abs_, &tw_target_))           \
            return call_with(abs);                                                                           \
        const void *tw_cv_ = (cv);   /* a condvar: the caller holds its mutex */                             \
        const void *tw_sem_ = (sem);                                                                         \
        if (tw_libc_keeper() && tw_libc_real_lock_wait(wake)) { /* real time (common.c) */                   \
            if (tw_cv_) tw_cv_wait_begin(tw_cv_);                                                            \
            if (tw_sem_) tw_sem_wait_begin(tw_sem_);                                                         \
            tw_libc_block_begin(tw_cv_ == NULL);                                                             \
            int tw_r_ = call_with(&tw_real_abs_);                                                            \
            if (tw_cv_) tw_cv_wait_end(tw_cv_);                                                              \
            tw_libc_block_end(TW_WAKE_LOCAL);                                                                \
            if (tw_sem_) tw_sem_wait_end(tw_sem_);                                                           \
            return tw_r_;                                                                                    \
        }                                                                                                    \
        if (tw_libc_keeper()) { /* slices of real time until an event or the keeper reaches the deadline */  \
            uint32_t tw_notes_ = tw_cv_notes(tw_cv_); /* the caller holds the mutex: none sent for it yet */ \
            if (tw_cv_) tw_cv_wait_begin(tw_cv_);                                                            \
            if (tw_sem_) tw_sem_wait_begin(tw_sem_);                                                         \
            tw_libc_kw_begin(tw_target_);                                                                    \
            for (;;) {                                                                                       \
                int tw_due_ = tw_libc_kw_due(tw_target_, tw_cv_ == NULL);                                    \
                tw_real_abs_ = tw_libc_real_after((clk), tw_due_ ? 0 : tw_libc_slice(tw_target_));           \
                int tw_r_ = call_with(&tw_real_abs_);                                                        \
                int tw_to_ = tw_r_ == ETIMEDOUT || (tw_r_ == -1 && errno == ETIMEDOUT);                      \
                if (tw_to_ && !tw_due_ && tw_cv_notes(tw_cv_) != tw_notes_) { tw_to_ = 0; tw_r_ = 0; }       \
                if (!tw_to_ || tw_due_) {                                                                    \
                    if (tw_cv_) tw_cv_wait_end(tw_cv_);                                                      \
                    tw_libc_kw_end(tw_to_, tw_target_, (wake));                                              \
                    if (tw_sem_ && !tw_to_) tw_sem_wait_end(tw_sem_);                                        \
                    return tw_r_;                                                                            \
                }                                                                                            \
            }                                                                                                \
        }                                                                                                    \
        int tw_r_ = call_with(&tw_real_abs_);                                                                \
        if (tw_r_ == ETIMEDOUT || (tw_r_ == -1 && errno == ETIMEDOUT)) tw_libc_timed_out(tw_target_);        \
        return tw_r_;                                                                                        \
    } while (0)

/* Which clock a condvar's deadline is on: the one set with pthread_condattr_setclock, which only the
 * opaque object knows. glibc's condvar (nptl, since 2.25; checked on 2.36 by tests/c/test_libc_time.c)
 * keeps it in __data.__wrefs: bit 1 (__PTHREAD_COND_CLOCK_MONOTONIC_MASK, 2) set = CLOCK_MONOTONIC, clear
 * = CLOCK_REALTIME; bit 0 is process-shared, bits 3+ count waiters. Only pthread_cond_init writes bit 1. */
static clockid_t tw_cond_clock(const pthread_cond_t *c) {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 25))
    unsigned w = __atomic_load_n(&c->__data.__wrefs, __ATOMIC_RELAXED);
    return (w & 2) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
#else
#error "tw_cond_clock: condvar layout unknown for this libc"
#endif
}

/* Who can end a wait on a condvar or semaphore: this process's threads, or (process-shared object) any
 * process's. glibc: a condvar's __wrefs bit 0 is process-shared; a semaphore's `private` int (after its
 * 64-bit value) is 0 when private and FUTEX_PRIVATE_FLAG (128) when shared (glibc XORs it into the futex
 * operation; checked with sem_init on glibc 2.36). Reading it the other way round made every contended
 * Python lock (a private semaphore) wake at the run's latest time, dragging each process to the others. */
int tw_cond_wake(const void *cond) {
    const pthread_cond_t *c = cond;
    return (__atomic_load_n(&c->__data.__wrefs, __ATOMIC_RELAXED) & 1) ? TW_WAKE_ANY : TW_WAKE_LOCAL;
}
int tw_sem_wake(const void *sem) {
    const int *priv = (const int *)((const char *)sem + sizeof(uint64_t));
    return *priv == 0 ? TW_WAKE_LOCAL : TW_WAKE_ANY;
}

#define TW_CALL_COND_TIMEDWAIT(a) tw_real.cond_timedwait(cond, mutex, a)
TW_EXPORT int pthread_cond_timedwait(pthread_cond_t *restrict cond, pthread_mutex_t *restrict mutex,
                                     const struct timespec *restrict abs) {
    TW_ABS_WAIT_WAKE(tw_cond_clock(cond), abs, TW_CALL_COND_TIMEDWAIT, tw_cond_wake(cond), cond, NULL);
}

#define TW_CALL_COND_CLOCKWAIT(a) tw_real.cond_clockwait(cond, mutex, clk, a)
TW_EXPORT int pthread_cond_clockwait(pthread_cond_t *restrict cond, pthread_mutex_t *restrict mutex,
                                     clockid_t clk, const struct timespec *restrict abs) {
    TW_ABS_WAIT_WAKE(clk, abs, TW_CALL_COND_CLOCKWAIT, tw_cond_wake(cond), cond, NULL);
}

#define TW_CALL_SEM_TIMEDWAIT(a) tw_real.sem_timedwait(sem, a)
TW_EXPORT int sem_timedwait(sem_t *restrict sem, const struct timespec *restrict abs) {
    TW_ABS_WAIT_WAKE(CLOCK_REALTIME, abs, TW_CALL_SEM_TIMEDWAIT, tw_sem_wake(sem), NULL, sem);
}

#define TW_CALL_SEM_CLOCKWAIT(a) tw_real.sem_clockwait(sem, clk, a)
TW_EXPORT int sem_clockwait(sem_t *restrict sem, clockid_t clk, const struct timespec *restrict abs) {
    TW_ABS_WAIT_WAKE(clk, abs, TW_CALL_SEM_CLOCKWAIT, tw_sem_wake(sem), NULL, sem);
}

#define TW_CALL_MUTEX_TIMEDLOCK(a) tw_real.mutex_timedlock(mutex, a)
TW_EXPORT int pthread_mutex_timedlock(pthread_mutex_t *restrict mutex, const struct timespec *restrict abs) {
    TW_ABS_WAIT(CLOCK_REALTIME, abs, TW_CALL_MUTEX_TIMEDLOCK);
}

#define TW_CALL_MUTEX_CLOCKLOCK(a) tw_real.mutex_clocklock(mutex, clk, a)
TW_EXPORT int pthread_mutex_clocklock(pthread_mutex_t *restrict mutex, clockid_t clk,
                                      const struct timespec *restrict abs) {
    TW_ABS_WAIT(clk, abs, TW_CALL_MUTEX_CLOCKLOCK);
}

#define TW_CALL_RW_TIMEDRD(a) tw_real.rwlock_timedrdlock(rw, a)
TW_EXPORT int pthread_rwlock_timedrdlock(pthread_rwlock_t *restrict rw, const struct timespec *restrict abs) {
    TW_ABS_WAIT(CLOCK_REALTIME, abs, TW_CALL_RW_TIMEDRD);
}

#define TW_CALL_RW_TIMEDWR(a) tw_real.rwlock_timedwrlock(rw, a)
TW_EXPORT int pthread_rwlock_timedwrlock(pthread_rwlock_t *restrict rw, const struct timespec *restrict abs) {
    TW_ABS_WAIT(CLOCK_REALTIME, abs, TW_CALL_RW_TIMEDWR);
}

#define TW_CALL_RW_CLOCKRD(a) tw_real.rwlock_clockrdlock(rw, clk, a)
TW_EXPORT int pthread_rwlock_clockrdlock(pthread_rwlock_t *restrict rw, clockid_t clk,
                                         const struct timespec *restrict abs) {
    TW_ABS_WAIT(clk, abs, TW_CALL_RW_CLOCKRD);
}

#define TW_CALL_RW_CLOCKWR(a) tw_real.rwlock_clockwrlock(rw, clk, a)
TW_EXPORT int pthread_rwlock_clockwrlock(pthread_rwlock_t *restrict rw, clockid_t clk,
                                         const struct timespec *restrict abs) {
    TW_ABS_WAIT(clk, abs, TW_CALL_RW_CLOCKWR);
}

#define TW_CALL_TIMEDJOIN(a) tw_real.timedjoin_np(th, ret, a)
TW_EXPORT int pthread_timedjoin_np(pthread_t th, void **ret, const struct timespec *abs) {
    TW_ABS_WAIT(CLOCK_REALTIME, abs, TW_CALL_TIMEDJOIN);
}

#define TW_CALL_CLOCKJOIN(a) tw_real.clockjoin_np(th, ret, clk, a)
TW_EXPORT int pthread_clockjoin_np(pthread_t th, void **ret, clockid_t clk, const struct timespec *abs) {
    TW_ABS_WAIT(clk, abs, TW_CALL_CLOCKJOIN);
}
