/* Python's GIL between a thread with its own clock and its process's timeline.
 *
 * Why: vLLM's API server tokenizes each prompt in a one-thread pool (integrations/executor_clock.py) while its
 * event loop streams tokens. On the real H200 host (lease vllm_2026-12-01t, case 14: 128 requests at once),
 * once the loop streamed to 64 clients it held the GIL nearly all the time, and each tokenization waited
 * for CPython's switch interval (5 ms) before the loop let go: 0.6-1.0 ms of CPU took about 6 ms, and the
 * wave's second half reached the engine one request per engine step. The pool thread keeps its own clock,
 * and a thread woken by a GIL hand-over keeps it too (vclock.c), so under emulation it tokenized as if it
 * had a GIL of its own: the wave reached the engine twice as fast as on the real host.
 *
 * Model: the threads on the process's own timeline run Python, under the GIL, except where that timeline
 * jumped over a wait (vclock.c's resume_at notes those jumps here: idle, the GIL free). An own-clock thread
 * that asks for the GIL at t (tw_gil_take) gets it at the first idle moment at or after t, or once the
 * timeline has been busy for the switch interval since t (CPython's forced switch), whichever is first.
 * Where the timeline has not reached that point yet, it waits in real time, with the GIL released and out
 * of the time keeper's way, until the process's threads get there or all of them wait. Its work then
 * displaces the timeline (tw_gil_give): the busy time it overlapped is added to the process clock.
 * Where a piece of work asks (integrations/executor_clock.py): to start, if the pool had been idle, and to
 * return its result, after the work's native part let the GIL go; the real host's tokenizations waited
 * inside the call (median 0.1-0.2 ms, 3-18% of them a switch interval or more: leases t, u, v).
 * The loop also lets the GIL go at each turn: uvloop runs libuv without it, and asyncio's selector releases it
 * around epoll, so each of the loop's polls (tw_gil_release_point, from shim_c/libc/wait.c) is a moment at
 * which a waiting thread gets it. Without those, a busy loop had only its idle spells: in vLLM case 8 (256
 * streams) 80% of the tokenizations waited a whole switch interval, where on the real host 3-10% did
 * (leases u and v: the median wait 0.1-0.2 ms).
 * A pool of several threads (a loop's default executor) shares the one GIL among its threads too: each
 * hold is placed, as it ends, at the first time at or after its start where it overlaps no other recent
 * hold of the process's own-clock threads, and the thread's clock moves on by the delay (pool_serialize).
 * The loop takes the result then. `vllm bench serve`'s client runs two lookups of about 0.1 ms of Python per
 * request there (aiohttp's netrc and proxy, trust_env): side by side, a burst of 128 requests reached vLLM's
 * API server 10-20 ms earlier than on the real host.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "internal.h"
#include "tw/raw_syscall.h"
#include "tw/timekeeper.h"

void tw_tk_block_begin(int may_jump);         /* vclock.c (tw_libc.h): a wait the keeper need not wait for */
void tw_tk_wake(int how, uint64_t deadline);  /* vclock.c: its end, at a known time */
uint64_t tw_clock_raise(uint64_t t);          /* vclock.c */

/* The timeline's recent idle spells [a, b), in the order noted (a ring; the pool asks about times a few
 * engine steps back at most). */
#define IDLE_RING 65536   /* the loop's turns too: thousands per virtual second at 256 streams */
static struct { uint64_t a, b; } ring[IDLE_RING];
static uint64_t ring_n;           /* spells noted so far; under ring_lock */
static atomic_flag ring_lock = ATOMIC_FLAG_INIT;
static _Atomic uint64_t stats_takes, stats_waited_ns, stats_capped;

static int log_on = -1;   /* TIMEWARP_GIL_LOG=1: a line per request; 2: and per idle spell (diagnostics) */

static int log_level(void) {
    if (log_on < 0) log_on = getenv("TIMEWARP_GIL_LOG") ? atoi(getenv("TIMEWARP_GIL_LOG")) : 0;
    return log_on;
}

static void lock(void) { while (atomic_flag_test_and_set_explicit(&ring_lock, memory_order_acquire)) {} }
static void unlock(void) { atomic_flag_clear_explicit(&ring_lock, memory_order_release); }

static void ring_note(uint64_t from, uint64_t to) {
    lock();
    ring[ring_n % IDLE_RING].a = from;
    ring[ring_n % IDLE_RING].b = to;
    ring_n++;
    unlock();
}

void tw_gil_note_idle(uint64_t from, uint64_t to) {
    if (log_level() >= 2) tw_log("gil: pid %d idle %.3f..%.3f ms", (int)getpid(), from / 1e6, to / 1e6);
    ring_note(from, to);
}

/* Whether an own-clock thread of this process has asked for the GIL: only then are the loop's turns noted. */
static _Atomic int gil_asked;

void tw_gil_release_point(void) {
    if (!atomic_load_explicit(&gil_asked, memory_order_relaxed) || !tw_clock_on_timeline()) return;
    uint64_t t = tw_now();
    ring_note(t, t + 1);   /* a moment: it adds nothing to the idle time a hold displaces (not logged: many) */
}

/* The first idle moment in [lo, hi] (1 and *at), and the idle time inside [lo, hi] (*idle). Spells are
 * scanned newest first until one ends before lo. */
static int idle_in(uint64_t lo, uint64_t hi, uint64_t *at, uint64_t *idle) {
    int found = 0;
    uint64_t first = 0, sum = 0;
    lock();
    for (uint64_t i = ring_n, seen = 0; i > 0 && seen < IDLE_RING; i--, seen++) {
        uint64_t a = ring[(i - 1) % IDLE_RING].a, b = ring[(i - 1) % IDLE_RING].b;
        if (b <= lo) break;
        if (a > hi) continue;
        uint64_t x = a > lo ? a : lo, y = b < hi ? b : hi;
        if (!found || x < first) first = x;
        found = 1;
        if (y > x) sum += y - x;
    }
    unlock();
    if (at) *at = first;
    if (idle) *idle = sum;
    return found;
}

/* How long (real time) a request for the GIL waits at most for its process's timeline to reach its
 * answer: TIMEWARP_GIL_WAIT_US, default 50 ms (a safety valve for a thread that runs without reading its
 * clock; then the pool takes the GIL where it is). */
static int64_t cap_ns = -1;
#define CAP_DEFAULT_NS 50000000
#define QUIET_NS 300000

static __thread int gil_modelled;
/* the thread's CPU time when it last took the GIL (a queued piece starts holding it from the previous
 * piece's last take) */
static __thread uint64_t held_cpu0, held_native0;
int tw_gil_modelled_thread(void) { return gil_modelled; }

TW_EXPORT uint64_t tw_gil_take(uint64_t switch_ns) {
    gil_modelled = 1;
    if (!atomic_load_explicit(&gil_asked, memory_order_relaxed)) atomic_store(&gil_asked, 1);
    uint64_t t0 = tw_now(), limit = t0 + switch_ns, t = t0, got;
    const char *why = "";
    if (cap_ns < 0) {
        const char *v = getenv("TIMEWARP_GIL_WAIT_US");
        cap_ns = v && *v ? (int64_t)(atof(v) * 1000) : CAP_DEFAULT_NS;
    }
    held_cpu0 = tw_thread_cpu_ns();
    held_native0 = tw_clock_native_cpu_ns();
    /* far ahead of its process's timeline (its clock jumped with a wait on a descriptor: a pool that resolves
     * host names): no contention known there, and waiting for the timeline to get there would cost real time */
    if (t0 > tw_clock_process_time() + switch_ns) return t0;
    int keeper = tw_tk != NULL;
    int32_t pid = (int32_t)getpid();
    if (keeper) tw_tk_block_begin(1);   /* waiting here holds nobody else back */
    int64_t until = tw_tk_real_ns() + cap_ns, start = tw_tk_real_ns(), quiet_since = 0;
    for (;;) {
        uint64_t p = tw_clock_process_time(), x, run_hi = 0;
        int acts = keeper && tw_tk_process_acts_by(tw_tk, pid, t, &run_hi);
        if (run_hi > p) p = run_hi;    /* a thread computing for long without reading its clock */
        if (p > t) {                   /* the timeline has passed t: its record answers */
            uint64_t hi = p < limit ? p : limit;
            if (idle_in(t, hi, &x, NULL)) { got = x; why = "idle"; break; }
            if (p >= limit) { got = limit; why = "switch"; break; }
            t = p;                     /* busy up to p */
            quiet_since = 0;
        } else if (!acts) {
            /* all its threads wait beyond t: the GIL is free at t, once that has held for a while of real
             * time (a thread that waited for the GIL this thread just let go of needs a moment to take it;
             * on a loaded machine it can take longer, and the loop then looks idle: counting a thread that
             * waits one switch interval as busy stalled vLLM's API server, whose loop waits such times too) */
            int64_t now = tw_tk_real_ns();
            if (!quiet_since) quiet_since = now;
            if (now - quiet_since >= QUIET_NS) {
                got = t; why = "waiting";
                if (log_level() >= 2 && tw_tk) {
                    for (uint32_t i = 0; i < tw_tk->hiwater; i++) {
                        tw_tk_slot *sl = &tw_tk->slots[i];
                        if (sl->tid && sl->pid == pid)
                            tw_log("gil:   slot tid %d state %u flags %u clock %.3f deadline %.3f", sl->tid, sl->state,
                                   sl->flags, sl->clock / 1e6, sl->deadline / 1e6);
                    }
                }
                break;
            }
        } else {
            quiet_since = 0;
        }
        if (tw_tk_real_ns() >= until) { got = t; why = "cap"; atomic_fetch_add(&stats_capped, 1); break; }
        struct timespec ts = {0, 20000};
        tw_sys2(SYS_nanosleep, &ts, 0);
    }
    atomic_fetch_add(&stats_takes, 1);
    atomic_fetch_add(&stats_waited_ns, (uint64_t)(tw_tk_real_ns() - start));
    if (log_level())
        tw_log("gil: pid %d take at %.3f ms: timeline %.3f ms, got +%.3f ms (%s), %.0f us real", (int)pid, t0 / 1e6,
               tw_clock_process_time() / 1e6, (got - t0) / 1e6, why, (tw_tk_real_ns() - start) / 1e3);
    if (keeper) tw_tk_wake(TW_WAKE_AT, got);
    else (void)tw_clock_raise(got);
    return got;
}

/* The recent holds of the GIL by this process's own-clock threads [a, b): the pool's threads share one GIL (the
 * loop's default executor runs aiohttp's per-request netrc and proxy lookups on up to 20 threads). A ring:
 * holds end one after another within a few of a burst's requests. */
#define HOLDS 64
static struct { uint64_t a, b; } holds[HOLDS];
static unsigned holds_n;   /* under ring_lock */

/* The first start at or after `taken` where a hold of `held` ns overlaps none of the others (they are placed
 * as each ends, in real time: a piece that ends later in real time may still go before them); noted. */
static uint64_t pool_serialize(uint64_t taken, uint64_t held) {
    lock();
    uint64_t start = taken;
    unsigned n = holds_n < HOLDS ? holds_n : HOLDS;
    for (int moved = 1, pass = 0; moved && pass <= HOLDS; pass++) {
        moved = 0;
        for (unsigned i = 0; i < n; i++)
            if (holds[i].a < start + held && holds[i].b > start) { start = holds[i].b; moved = 1; }
    }
    holds[holds_n % HOLDS].a = start;
    holds[holds_n % HOLDS].b = start + held;
    holds_n++;
    unlock();
    return start;
}

TW_EXPORT void tw_gil_give(uint64_t taken) {
    uint64_t end = tw_now(), idle = 0;
    /* it held the GIL while it computed, not while it waited (a socket, a GPU): at most its CPU time, on the
     * scale of the clock (the pace now), less the native code marked as such (a tokenizer's Rust: the
     * binding lets the GIL go around it, tokenizers' encode_batch does) */
    uint64_t cpu = tw_thread_cpu_ns() - held_cpu0, held = end - taken;
    uint64_t native = tw_clock_native_cpu_ns() - held_native0;
    cpu = native < cpu ? cpu - native : 0;
    uint64_t cpu_virtual = (uint64_t)(cpu * tw_clock_cpu_factor());
    if (cpu_virtual < held) held = cpu_virtual;
    /* another pool thread held the GIL then: this hold comes after it, and the work ends that much later */
    uint64_t start = pool_serialize(taken, held);
    if (start > taken) {
        (void)tw_clock_raise(end + (start - taken));
        taken = start;
    }
    uint64_t p = tw_clock_process_time();
    uint64_t hi = taken + held < p ? taken + held : p;
    if (hi <= taken) return;
    /* the timeline's own busy time inside the hold was displaced: it moves on by that much. Where the hold
     * reaches past the timeline's present, nothing is pushed: the pool's work may run without the GIL
     * (hashing, a tokenizer's native part), and a real holder that needs it back waits at most a switch
     * interval (its next request is modelled by the next take). */
    idle_in(taken, hi, NULL, &idle);
    uint64_t busy = hi - taken;
    tw_clock_process_push(busy - (idle < busy ? idle : busy));
}

/* takes, real ns waited, requests that ran out of the cap (tests, diagnostics) */
TW_EXPORT void tw_gil_stats(uint64_t out[3]) {
    out[0] = atomic_load(&stats_takes);
    out[1] = atomic_load(&stats_waited_ns);
    out[2] = atomic_load(&stats_capped);
}
