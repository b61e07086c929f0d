/* The virtual clock of this process.
 *
 * Virtual time is ns since the process's virtual epoch (the wall-clock instant the core first ran). Each
 * thread keeps its own reading; a reading charges the thread's CPU time since its previous reading, scaled
 * by the host pace of the CPU it runs on (what a CPU second here is worth on the target's host right now:
 * coordinator/pace.py), or by TIMEWARP_HOST_SPEED when that is set or no pace is measured, so a loaded
 * emulation host does not slow the virtual timeline. The process clock is the maximum over all
 * threads' readings, and a thread never reads less than it: threads that run in parallel each add their
 * own CPU time to the same base instead of adding up. GPU waits jump the reading to the completion time.
 * (The cross-process time keeper of the coordinator refines this; see docs/VIRTUAL_TIME.md.)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <time.h>
#include "internal.h"
#include "tw/raw_syscall.h"
#include "tw/timekeeper.h"

/* The highest time any thread reached: this process's own, or the run's (the time keeper's max_now) */
static _Atomic uint64_t local_now;
static _Atomic uint64_t *process_now = &local_now;
/* The highest time any thread of this process reached (== *process_now without a time keeper) */
static _Atomic uint64_t own_max;
static __thread uint64_t thread_now;
static __thread uint64_t thread_cpu_last;
static __thread int thread_started;
/* The driver's callback thread (host functions) runs ahead, at the time its stream reaches each callback:
 * its readings must not drag the program's threads forward. */
static __thread int thread_private;

void tw_clock_private_thread(void) { thread_private = 1; tw_tk_thread_private(); }
/* A thread that exchanges data with its process's other threads only through descriptors (libzmq's I/O
 * threads; shim_c/libc/thread.c): message stamps carry its time to them, so its clock is its own. It is
 * neither raised to the process's clock nor raises it, but takes part in the time keeper as any thread. */
static __thread int thread_io_only;
static inline tw_tk_slot *keeper_slot(void);
void tw_clock_io_thread(void) {
    thread_io_only = 1;
    tw_tk_slot *s = keeper_slot();   /* the keeper tells it from its process's timeline (gil.c) */
    if (s) __atomic_or_fetch(&s->flags, TW_SLOT_OWN, __ATOMIC_RELEASE);
}
/* An own-clock thread that hands what it receives to its process's other threads through memory (vLLM's
 * EngineCore input thread and its queue): tw_sync_inputs waits for it, and a thread its semaphore posts
 * wake resumes no earlier than the post (shim_c/libc/semaphore.c). */
static __thread int thread_feeder;
static _Atomic int process_feeders;
int tw_clock_is_feeder(void) { return thread_feeder; }
int tw_clock_has_feeder(void) { return atomic_load_explicit(&process_feeders, memory_order_relaxed); }
void tw_clock_feeder_thread(void) {
    thread_feeder = 1;
    atomic_store_explicit(&process_feeders, 1, memory_order_relaxed);
    tw_clock_io_thread();
    tw_tk_slot *s = keeper_slot();
    if (s) __atomic_or_fetch(&s->flags, TW_SLOT_FEEDER, __ATOMIC_RELEASE);
}
/* A thread that is not Python's (a C++ library's background thread: gloo's socket loop, NCCL's watchdog and
 * heartbeat), resumed from a timed wait that only its timeout ended: it woke to find nothing to do, and that
 * is no event of its process's timeline until something else wakes it (see tw_tk_wake). Only in a process
 * that asks for it (tw_clock_idle_timers_private; vLLM's EngineCore with TIMEWARP_VLLM_IDLE_TIMERS=1): in
 * every process, vLLM's TP=2 start-up hung in 2 of 8 full test-suite runs, its ranks' gloo collectives
 * waiting on each other, for a reason not found. */
static __thread int thread_idle_timer;
static _Atomic int idle_timers_private;
void tw_clock_idle_timers_private(void) { atomic_store_explicit(&idle_timers_private, 1, memory_order_relaxed); }
static inline int shares_process_clock(void) { return !thread_private && !thread_io_only && !thread_idle_timer; }
int tw_clock_on_timeline(void) { return shares_process_clock(); }
static inline int gil_keeps_clock(void) { return thread_io_only && tw_gil_modelled_thread(); }
/* native code marked by tw_clock_native: priced by its own pace */
static __thread int thread_native;
static __thread uint64_t native_cpu_ns;
static double native_factor(void);
static double host_speed = 1.0;
static int64_t epoch_realtime, epoch_monotonic;
static int (*real_clock_gettime)(clockid_t, struct timespec *);

static long raw_clock_gettime(clockid_t id, struct timespec *ts) { return tw_sys2(SYS_clock_gettime, id, ts); }

int tw_real_clock_gettime(clockid_t id, struct timespec *ts) {
    if (real_clock_gettime) return real_clock_gettime(id, ts);
    return raw_clock_gettime(id, ts) == 0 ? 0 : -1;
}

static inline uint64_t ts_ns(const struct timespec *ts) { return (uint64_t)ts->tv_sec * 1000000000ull + ts->tv_nsec; }

uint64_t tw_thread_cpu_ns(void) {
    struct timespec ts;
    raw_clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts_ns(&ts);
}

/* What one reading of this clock costs the program's thread beyond what reading a clock costs it on a real
 * machine: the CPU-time clock is a system call (about 0.6-0.8 us in a VM), the program's own clocks are
 * vDSO reads (about 25 ns). Every reading charges the CPU time since the previous one, which holds one
 * whole reading's cost. Left in, Python code that reads clocks often paid it on the virtual clock (CPython
 * 3.11 reads one at every lock acquisition, asyncio at every loop turn): time.monotonic() took 653 ns of
 * virtual time against 55 ns natively, an uncontended lock cycle 855 against 168 (113 and 293 with this
 * deducted; the rest is the interposed call's own path). Measured once per process. */
static uint64_t read_overhead_ns;

static uint64_t measure_read_overhead(void) {
    /* the whole reading (system call, keeper slot, process clock), with charging paused so that measuring
     * adds no time, minus the vDSO read that a real machine's program pays instead; best of 5 rounds */
    uint64_t best_now = UINT64_MAX, best_vdso = UINT64_MAX;
    struct timespec ts;
    tw_charge_pause();
    for (int round = 0; round < 5; round++) {
        uint64_t a = tw_thread_cpu_ns();
        for (int i = 0; i < 32; i++) (void)tw_now();
        uint64_t b = tw_thread_cpu_ns();
        for (int i = 0; i < 32; i++) (void)tw_thread_cpu_ns();
        uint64_t c = tw_thread_cpu_ns();
        for (int i = 0; i < 64; i++) tw_real_clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t d = tw_thread_cpu_ns();
        uint64_t now = (b - a) / 33, sys = (c - b) / 33;
        uint64_t vdso = d - c > sys ? (d - c - sys) / 64 : 0;
        if (now < best_now) best_now = now;
        if (vdso < best_vdso) best_vdso = vdso;
    }
    tw_charge_resume();
    return best_now > best_vdso ? best_now - best_vdso : 0;
}

/* Kernel time priced apart (TIMEWARP_KERNEL_PRICE: virtual ns per ns of a thread's system time; 0 or unset:
 * charged as the rest). Why: the pace (coordinator/pace.py) is measured by a user-mode probe, and this machine's
 * states that slow it 2x leave a system call's CPU within about 20% (predictors/data/h200/syscall_probe_2026-12-06);
 * priced at the pace, the 13-32% of the serving processes' CPU spent in the kernel here swung with it.
 * A thread's system time comes from getrusage(RUSAGE_THREAD), which the kernel splits from the exact CPU time by
 * tick samples: read once per KERNEL_SAMPLE_NS of the thread's CPU. Of the system time since the previous
 * sample, what is known not to be charged comes off (each clock reading's own cost, the CPU of the waits the
 * shim dropped), and the difference between this price and the one the readings charged is settled on the
 * following readings, by at most their own charge each so that the clock moves smoothly. */
static double kernel_price;
#define KERNEL_SAMPLE_NS 4000000ull   /* one scheduler tick at 250 Hz: a shorter window sees no new sample */
static __thread uint64_t ks_cpu;       /* the thread's CPU time at the last sample; 0: none taken yet */
static __thread uint64_t ks_sys;       /* its system time then */
static __thread uint64_t ks_reads;     /* readings since */
static __thread uint64_t ks_charged;   /* CPU ns charged since (after the deductions) */
static __thread uint64_t ks_waited;    /* CPU ns of waits dropped since (a wait's CPU is system calls) */
static __thread int64_t ks_owed;       /* virtual ns still to add to the readings (negative: to take off) */

static uint64_t thread_sys_ns(void) {
    struct rusage r;
    if (tw_sys2(SYS_getrusage, RUSAGE_THREAD, &r) != 0) return 0;
    return (uint64_t)r.ru_stime.tv_sec * 1000000000ull + (uint64_t)r.ru_stime.tv_usec * 1000ull;
}

/* A reading charged d ns of CPU (at factor f) as `charged`: what it charges with kernel time at its own price. */
static uint64_t kernel_settle(uint64_t cpu, uint64_t d, uint64_t charged, double f) {
    ks_reads++;
    ks_charged += d;
    if (cpu - ks_cpu >= KERNEL_SAMPLE_NS) {
        uint64_t s = thread_sys_ns();
        if (ks_cpu) {
            uint64_t ds = s > ks_sys ? s - ks_sys : 0, known = ks_reads * read_overhead_ns + ks_waited;
            ds = ds > known ? ds - known : 0;
            if (ds > ks_charged) ds = ks_charged;
            ks_owed += (int64_t)((double)ds * (kernel_price - f));
            tw_charge_count(TW_CHARGE_HOST_KERNEL, ds);
            tw_charge_count(TW_CHARGE_VIRT_KERNEL, (uint64_t)((double)ds * kernel_price));
        }
        ks_cpu = cpu;
        ks_sys = s;
        ks_reads = ks_charged = ks_waited = 0;
    }
    if (ks_owed > 0) {
        uint64_t add = (uint64_t)ks_owed < charged ? (uint64_t)ks_owed : charged;
        ks_owed -= (int64_t)add;
        return charged + add;
    }
    if (ks_owed < 0) {
        uint64_t take = (uint64_t)-ks_owed < charged ? (uint64_t)-ks_owed : charged;
        ks_owed += (int64_t)take;
        return charged - take;
    }
    return charged;
}

/* What the thread's keeper slot publishes as its clock: reading t less the kernel time's charge still owed
 * back. The keeper extrapolates a running thread from its slot's clock at the pace (keeper.c), and the next
 * readings come out up to that much below such an extrapolation: the keeper's clock would run ahead of the
 * thread, below which its order no longer holds (the forty-eighth session's bug). Lower is the safe side. */
static inline uint64_t slot_clock(uint64_t t) {
    uint64_t back = ks_owed < 0 ? (uint64_t)-ks_owed : 0;
    return t > back ? t - back : 0;
}

/* The thread's CPU clock moves on to cpu without charging what it ran since: a wait's (system calls). */
static inline void drop_waited_cpu(uint64_t cpu) {
    if (cpu > thread_cpu_last) ks_waited += cpu - thread_cpu_last;
    thread_cpu_last = cpu;
}

__attribute__((constructor(101))) static void vclock_init(void) {
    if (epoch_monotonic) return;
    struct timespec r, m;
    raw_clock_gettime(CLOCK_REALTIME, &r);
    raw_clock_gettime(CLOCK_MONOTONIC, &m);
    epoch_realtime = (int64_t)ts_ns(&r);
    epoch_monotonic = (int64_t)ts_ns(&m);
    /* under `timewarp run` every process shares the run's epoch and clock */
    tw_tk_attach(&epoch_realtime, &epoch_monotonic);
    if (tw_tk) {
        process_now = (_Atomic uint64_t *)&tw_tk->max_now;
        atomic_store(&own_max, tw_tk_start_clock());
    }
    /* the fixed factor the user set, or the launcher's fallback for when no host pace is measured */
    const char *hs = getenv("TIMEWARP_HOST_SPEED");
    if (!hs || !(atof(hs) > 0)) hs = getenv("TIMEWARP_HOST_SPEED_FALLBACK");
    if (hs && atof(hs) > 0) host_speed = atof(hs);
    /* Resolve the vDSO-backed clock_gettime for the waits that need real time; readings of the virtual
     * clock only need the CPU-time clock, which is a plain system call. */
    real_clock_gettime = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
    const char *ro = getenv("TIMEWARP_READ_OVERHEAD_NS");  /* for measuring its effect; unset in use */
    read_overhead_ns = ro ? (uint64_t)atoll(ro) : measure_read_overhead();
    const char *kp = getenv("TIMEWARP_KERNEL_PRICE");   /* the launcher's (integrations/launcher.py) */
    if (kp && atof(kp) > 0) kernel_price = atof(kp);
    /* the launcher sets TIMEWARP_AUDIT=0 and the LD_AUDIT redirector turns it to 1 when it loads */
    char *audit = getenv("TIMEWARP_AUDIT");
    if (audit && audit[0] == '1') audit[0] = '0';  /* re-armed for the processes this one starts */
    else if (audit && audit[0] == '0')
        tw_log("the LD_AUDIT redirector (%s) did not load: CUDA libraries will resolve to NVIDIA's real ones, "
               "which find no GPU here; check that LD_AUDIT names libtimewarp_audit.so and that the program is "
               "not setuid", getenv("LD_AUDIT") ? getenv("LD_AUDIT") : "LD_AUDIT unset");
}

void tw_clock_epoch(int64_t *realtime_ns, int64_t *monotonic_ns) {
    /* reached from another library's constructor before ours ran */
    if (__builtin_expect(!epoch_monotonic, 0)) vclock_init();
    if (realtime_ns) *realtime_ns = epoch_realtime;
    if (monotonic_ns) *monotonic_ns = epoch_monotonic;
}

static inline void publish(uint64_t t) {
    uint64_t o = atomic_load_explicit(&own_max, memory_order_relaxed);
    while (o < t && !atomic_compare_exchange_weak_explicit(&own_max, &o, t, memory_order_relaxed, memory_order_relaxed)) {}
    uint64_t g = atomic_load_explicit(process_now, memory_order_relaxed);
    while (g < t && !atomic_compare_exchange_weak_explicit(process_now, &g, t, memory_order_relaxed, memory_order_relaxed)) {}
}

void tw_clock_forget_cpu(void) { drop_waited_cpu(tw_thread_cpu_ns()); }

/* Work the emulator itself does on the program's thread (the PyTorch shadow of small results) is not
 * charged: while paused, a reading does not add CPU time, and resuming drops what was spent. */
static __thread int charge_paused;

/* The keeper extrapolates a running thread that has not read its clock for a while by the CPU it used
 * (keeper.c). CPU that is not charged must not be extrapolated: the keeper's clock ran ahead of the thread,
 * which then acted below it, where the keeper's order no longer holds (a graph's host function ran after
 * a later one: tests/c/test_step_graph.c; the predictor's tables load paused, ~10 virtual ms). */
static inline tw_tk_slot *keeper_slot(void);

static void slot_paused(int on) {
    tw_tk_slot *s = keeper_slot();
    if (!s) return;
    if (on) {
        __atomic_or_fetch(&s->flags, TW_SLOT_PAUSED, __ATOMIC_RELEASE);
    } else {
        __atomic_store_n(&s->cpu, thread_cpu_last, __ATOMIC_RELEASE);   /* the base from which it charges again */
        __atomic_and_fetch(&s->flags, ~TW_SLOT_PAUSED, __ATOMIC_RELEASE);
    }
}

void tw_charge_pause(void) {
    if (charge_paused == 0) {
        (void)tw_now();  /* charge what ran until now, then stop */
        slot_paused(1);
    }
    charge_paused++;
}

void tw_charge_resume(void) {
    if (charge_paused > 0 && --charge_paused == 0) {
        thread_cpu_last = tw_thread_cpu_ns();
        slot_paused(0);
    }
}

/* CPU time of this emulation host that the next readings should not charge: measured overheads of the
 * emulator on the program's thread that pausing cannot exclude (the Python dispatch-mode entry). */
static __thread uint64_t forgive_ns;

/* Host time that the real stack spends where the emulator spends less (the runtime's launch path): added
 * to the calling thread's clock as if it had run. */
uint64_t tw_charge_add(uint64_t ns) {
    uint64_t t = tw_now();
    if (!ns || charge_paused) return t;
    tw_charge_count(TW_CHARGE_ADDED, ns);
    t += ns;
    thread_now = t;
    if (shares_process_clock()) publish(t);
    return t;
}

void tw_charge_forgive(uint64_t ns) {
    /* the unspent part carries over (the overhead may be charged after the call), capped at twice one
     * grant so that an over-estimate never eats more than that of the program's own work */
    forgive_ns += ns;
    if (forgive_ns > 2 * ns) forgive_ns = 2 * ns;
}

uint64_t tw_charge_forgive_clear(void) {
    uint64_t left = forgive_ns;
    forgive_ns = 0;
    return left;
}

/* TIMEWARP_CLAMP_LOG=1 (a diagnostic): how much virtual time each thread's readings gained from being
 * raised to the process's highest time, printed at exit, per thread name. */
#define CLAMP_THREADS 64
static struct { _Atomic int tid; char name[16]; _Atomic uint64_t n, ns, lost_n, lost_ns; } clamp_tab[CLAMP_THREADS];
static int clamp_on = -1;
static __thread int clamp_idx = -1;

static void clamp_report(void) {
    for (int i = 0; i < CLAMP_THREADS; i++)
        if (atomic_load(&clamp_tab[i].tid))
            tw_log("pid %d thread %d (%s): %llu readings raised to the process clock, %.3f ms in all; %llu wake-ups "
                   "from a call the keeper found blocked raised to the run's clock, %.3f ms in all", (int)getpid(),
                   atomic_load(&clamp_tab[i].tid), clamp_tab[i].name,
                   (unsigned long long)atomic_load(&clamp_tab[i].n), atomic_load(&clamp_tab[i].ns) / 1e6,
                   (unsigned long long)atomic_load(&clamp_tab[i].lost_n), atomic_load(&clamp_tab[i].lost_ns) / 1e6);
}

/* lost: the raise of a thread the keeper found blocked in a call the shim does not know (to the run's clock) */
static void clamp_note(uint64_t gain, int lost, uint64_t to) {
    if (__builtin_expect(clamp_on == 0, 1)) return;
    if (clamp_on < 0) {
        const char *v = getenv("TIMEWARP_CLAMP_LOG");
        clamp_on = v && *v == '1';
        if (!clamp_on) return;
        atexit(clamp_report);
    }
    if (clamp_idx < 0) {
        int tid = (int)syscall(SYS_gettid);
        for (int i = 0; i < CLAMP_THREADS && clamp_idx < 0; i++) {
            int zero = 0;
            if (atomic_compare_exchange_strong(&clamp_tab[i].tid, &zero, tid)) {
                clamp_idx = i;
                pthread_getname_np(pthread_self(), clamp_tab[i].name, sizeof clamp_tab[i].name);
            }
        }
        if (clamp_idx < 0) return;
    }
    if (lost) {
        atomic_fetch_add(&clamp_tab[clamp_idx].lost_n, 1);
        atomic_fetch_add(&clamp_tab[clamp_idx].lost_ns, gain);
        if (gain > 2000000) tw_log("pid %d thread %d (%s): woken from a call the keeper found blocked, raised "
                                   "%.3f ms to the run's clock (%.3f ms)", (int)getpid(), atomic_load(&clamp_tab[clamp_idx].tid),
                                   clamp_tab[clamp_idx].name, gain / 1e6, (epoch_monotonic + to) / 1e6);
        return;
    }
    if (gain > 2000000) tw_log("pid %d thread %d (%s): reading raised %.3f ms to the process clock (%.3f ms)",
                               (int)getpid(), atomic_load(&clamp_tab[clamp_idx].tid), clamp_tab[clamp_idx].name,
                               gain / 1e6, (epoch_monotonic + to) / 1e6);
    atomic_fetch_add(&clamp_tab[clamp_idx].n, 1);
    atomic_fetch_add(&clamp_tab[clamp_idx].ns, gain);
}

uint64_t tw_now(void) {
    uint64_t cpu = tw_thread_cpu_ns();
    if (charge_paused) thread_cpu_last = cpu;
    /* A reading never goes below this process's highest time (its threads share its timeline), but not up
     * to the run's: another process's clock is inherited only through what may carry a message from it
     * (waits woken by descriptors or shared objects, and calls the keeper saw the thread blocked in; see
     * the LOST branch below and tw_tk_twait_begin). Clamping every reading to the run's maximum dragged each
     * process forward by the others' progress (the EngineCore by the API server's, at every step). */
    uint64_t g = atomic_load_explicit(&own_max, memory_order_relaxed);
    if (__builtin_expect(!thread_started, 0)) {
        /* a new thread starts at the process clock */
        thread_started = 1;
        thread_cpu_last = cpu;
        thread_now = g;
    }
    /* a fork()ed child's thread inherits the parent thread's last reading, with its own CPU clock at 0 */
    uint64_t d = cpu > thread_cpu_last ? cpu - thread_cpu_last : 0;
    thread_cpu_last = cpu;
    tw_charge_count(TW_CHARGE_RAW, d);
    d = d > read_overhead_ns ? d - read_overhead_ns : 0;
    if (__builtin_expect(forgive_ns != 0, 0)) {
        uint64_t f = forgive_ns < d ? forgive_ns : d;
        d -= f;
        forgive_ns -= f;
    }
    /* the host pace (coordinator/pace.py) prices a CPU ns by this machine's speed right now; native code
     * that a binding marks (tw_clock_native) by the native probe's pace */
    if (thread_native) native_cpu_ns += d;
    double f = thread_native ? native_factor() : tw_clock_cpu_factor();
    uint64_t charged = f == 1.0 ? d : (uint64_t)(d * f);
    if (kernel_price > 0 && !charge_paused) charged = kernel_settle(cpu, d, charged, f);
    if (__builtin_expect(tw_charge_tab != NULL, 0)) {
        tw_charge_count(thread_native ? TW_CHARGE_HOST_NATIVE : TW_CHARGE_HOST_PY, d);
        tw_charge_count(thread_native ? TW_CHARGE_VIRT_NATIVE : TW_CHARGE_VIRT_PY, charged);
    }
    uint64_t t = thread_now + charged;
    if (t < g && !thread_io_only) { clamp_note(g - t, 0, g); t = g; }
    if (tw_tk && !thread_private) {
        tw_tk_slot *s = tw_tk_thread_slot(t);
        if (s) {
            if (__builtin_expect(__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) != TW_SLOT_RUN, 0)) {
                /* the keeper saw this thread blocked in a call the shim does not know: it woke because
                 * something happened, no earlier than anything that happened anywhere; except a pool thread
                 * whose GIL waits gil.c models, found blocked on the GIL's own mutex as it takes the real
                 * GIL back after the model gave it (raised, each of vLLM's tokenizations began about a
                 * switch interval late) */
                uint64_t m = atomic_load_explicit(process_now, memory_order_acquire);
                if (t < m && !gil_keeps_clock()) { clamp_note(m - t, 1, m); t = m; }
                __atomic_store_n(&s->state, TW_SLOT_RUN, __ATOMIC_RELEASE);
                __atomic_add_fetch(&tw_tk->changes, 1, __ATOMIC_RELAXED);
            }
            __atomic_store_n(&s->cpu, cpu, __ATOMIC_RELAXED);
            __atomic_store_n(&s->clock, slot_clock(t), __ATOMIC_RELEASE);
            __atomic_add_fetch(&s->seq, 1, __ATOMIC_RELEASE);
        }
    }
    thread_now = t;
    if (shares_process_clock()) publish(t);
    return t;
}

/* This thread's slot in the run's time keeper, when there is one and the thread takes part. */
static inline tw_tk_slot *keeper_slot(void) {
    return tw_tk && !thread_private ? tw_tk_thread_slot(thread_now) : NULL;
}

/* Slot s runs again, at clock t. The keeper's extrapolation of the thread's last run (CPU it ran
 * charge-paused included) is not this one's. */
static void slot_running(tw_tk_slot *s, uint64_t t) {
    __atomic_store_n(&s->ext, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&s->clock, slot_clock(t), __ATOMIC_RELEASE);
    __atomic_add_fetch(&s->seq, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&s->state, TW_SLOT_RUN, __ATOMIC_RELEASE);
    __atomic_add_fetch(&tw_tk->changes, 1, __ATOMIC_RELAXED);
}

/* The thread resumes at virtual time t after a wait: the CPU the waiting cost here is not charged. */
static void resume_at(tw_tk_slot *s, uint64_t t) {
    if (t < thread_now) t = thread_now;
    thread_now = t;
    drop_waited_cpu(tw_thread_cpu_ns());
    if (shares_process_clock()) {
        /* the process's timeline jumps over a wait: idle there, Python's GIL free (gil.c) */
        uint64_t o = atomic_load_explicit(&own_max, memory_order_relaxed);
        if (t > o) tw_gil_note_idle(o, t);
        publish(t);
    }
    if (s && tw_tk) {
        __atomic_store_n(&s->cpu, thread_cpu_last, __ATOMIC_RELAXED);
        slot_running(s, t);
    }
}

/* What one CPU ns of the calling thread's Python (any code not marked native) is charged now: the pace of
 * its CPU, or the fixed factor. */
double tw_clock_cpu_factor(void) { return tw_tk ? tw_tk_pace(tw_tk, sched_getcpu(), host_speed) : host_speed; }

/* The same for native code: the native probe's pace of its CPU, the Python pace where none is measured. */
static double native_factor(void) {
    if (!tw_tk) return host_speed;
    int cpu = sched_getcpu();
    return tw_tk_native_pace(tw_tk, cpu, tw_tk_pace(tw_tk, cpu, host_speed));
}

/* Mark the calling thread's next CPU time as native code (on = 1) or not (0); returns the previous mark. The
 * CPU time so far is charged first, at the mark it ran under. Why: the emulation machine's neighbours slow
 * its Python 2-3.6x more than they slow a tokenizer's Rust (predictors/data/h200/native_probe_2026-12-02), so
 * one pace left vLLM's tokenization 30-50% short of the real host's (integrations/native_price.py marks it). */
TW_EXPORT int tw_clock_native(int on) {
    (void)tw_now();
    int was = thread_native;
    thread_native = on != 0;
    return was;
}

/* CPU ns this thread ran marked native (gil.c: native code runs without the GIL). */
uint64_t tw_clock_native_cpu_ns(void) { return native_cpu_ns; }

/* This process's timeline: the highest time its threads that share it reached. */
uint64_t tw_clock_process_time(void) { return atomic_load_explicit(&own_max, memory_order_acquire); }

/* Move this process's timeline on by d (its threads' next readings are raised to it): gil.c, for time an
 * own-clock thread held Python's GIL that the process's threads would have run in. */
void tw_clock_process_push(uint64_t d) {
    if (!d) return;
    uint64_t o = atomic_load_explicit(&own_max, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&own_max, &o, o + d, memory_order_relaxed, memory_order_relaxed)) {}
    publish(o + d);
}

/* Raise the calling thread's clock to t (a result it takes was produced at t by a thread whose clock is its
 * own: integrations/executor_clock.py); no-op if it is already there. Returns the thread's time. */
uint64_t tw_clock_raise(uint64_t t) {
    uint64_t now = tw_now();
    if (t <= now) return now;
    resume_at(keeper_slot(), t);
    return t;
}

/* A wait that only time ends (a GPU completion, a sleep): with a time keeper, until its clock reaches t,
 * that is until no thread of any process can act before t; without one, at once. */
void tw_wait_until(uint64_t t) {
    uint64_t now = tw_now();
    if (t <= now) return;
    tw_tk_slot *s = keeper_slot();
    if (s) tw_tk_wait_safe(s, t, TW_SLOT_SLEEP);
    resume_at(s, t);
}

/* A non-blocking look, at the thread's time now, at what other processes may have sent it (a zero-timeout
 * poll): first wait until no thread of another process can still act before now, so that what a writer
 * running behind in real time sends before now has been sent. Without it, what a busy reader saw depended
 * on how the machine scheduled the writer (tests/progs/busy_reader.py). Returns whether it waited. */
int tw_tk_sync_now(void) {
    tw_tk_slot *s = keeper_slot();
    if (!s) return 0;
    uint64_t t = tw_now();
    /* Only other processes are waited for. This process's threads share its clock; and waiting for them,
     * a reader holding Python's GIL can make a thread that waits for the GIL time out in steps of 5
     * virtual ms until it has passed the reader (the suspected cause of vLLM case 5's TTFT +54% with a
     * process-wide wait; docs/VLLM.md, tenth session). */
    if (__atomic_load_n(&tw_tk->safe, __ATOMIC_ACQUIRE) >= t ||
        tw_tk_others_lo(tw_tk, __atomic_load_n(&s->pid, __ATOMIC_RELAXED)) >= t)
        return 0;
    tw_tk_wait_others(s, t);
    resume_at(s, t);
    return 1;
}

/* Before a thread takes what its process's feeder threads or other processes may have handed it through
 * memory, with no descriptor to stamp it (vLLM's EngineCore draining its input queue between steps;
 * integrations/thread_clock.py): wait until none of them can still act before this thread's time. Called
 * with Python's GIL released (ctypes), so that a feeder holding a request can queue it. At most
 * TIMEWARP_SYNC_INPUTS_US of real time (default 500000, a safety valve: 20 ms cut the wait short in vLLM
 * case 2, whose API server ran ~10 virtual ms behind the EngineCore in real time). Returns 0 when nothing
 * was to wait for, 1 when it waited, 2 when the cap ran out. */
static int64_t sync_inputs_cap_ns = -1;

int tw_sync_inputs(void) {
    tw_tk_slot *s = keeper_slot();
    if (!s) return 0;
    uint64_t t = tw_now();
    if (tw_tk_inputs_lo(tw_tk, __atomic_load_n(&s->pid, __ATOMIC_RELAXED)) >= t) return 0;
    if (sync_inputs_cap_ns < 0) {
        const char *v = getenv("TIMEWARP_SYNC_INPUTS_US");
        sync_inputs_cap_ns = v && *v ? (int64_t)(atof(v) * 1000) : 500000000;
    }
    int r = tw_tk_wait_inputs(s, t, sync_inputs_cap_ns);
    if (r == 1) {   /* a feeder or another process held it back that long: name which, a few times */
        static _Atomic int logged;
        if (atomic_fetch_add(&logged, 1) < 5) {
            char what[256];
            tw_tk_describe_inputs_lo(tw_tk, __atomic_load_n(&s->pid, __ATOMIC_RELAXED), what, sizeof what);
            tw_log("pid %d: waited %.0f ms of real time for its inputs to reach %.3f ms (TIMEWARP_SYNC_INPUTS_US), held "
                   "by %s", (int)getpid(), sync_inputs_cap_ns / 1e6, t / 1e6, what);
        }
    }
    resume_at(s, t);
    return r == 1 ? 2 : 1;
}

void tw_sync_until(uint64_t t) {
    tw_wait_until(t);
    tw_hostfn_drain(t);
    tw_charge_add(tw_profile_host_cost(TW_HOST_SYNC));
}

/* ---- waits the libc interposers translate (shim_c/libc/tw_libc.h) */
int tw_tk_on(void) { return keeper_slot() != NULL; }

void tw_tk_twait_begin(uint64_t deadline) {
    tw_tk_slot *s = keeper_slot();
    if (!s) return;
    /* The keeper saw this thread blocked in a call the shim does not know (a socket read), and it now waits
     * without having read the clock (Python retaking the GIL after recv): what it received may come from any
     * process, so it goes on no earlier than the run's latest time, as a clock reading would. */
    if (__atomic_load_n(&s->state, __ATOMIC_ACQUIRE) == TW_SLOT_LOST && !gil_keeps_clock()) {
        uint64_t m = atomic_load_explicit(process_now, memory_order_acquire);
        if (thread_now < m) { clamp_note(m - thread_now, 1, m); thread_now = m; if (shares_process_clock()) publish(m); }
    }
    s->deadline = deadline;
    __atomic_add_fetch(&s->seq, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&s->state, TW_SLOT_TWAIT, __ATOMIC_RELEASE);
    __atomic_add_fetch(&tw_tk->changes, 1, __ATOMIC_RELAXED);
}

/* The first look (TIMEWARP_WAIT_FIRST_LOOK=0 turns it off): a wait makes its first real look before the
 * keeper may jump (libc/common.c, tw_libc_keeper_wait), a thread going into a wait without deadline does not
 * settle and jump on its way (tw_tk_advance_no_jump), and epoll_ctl names a descriptor's reader
 * (libc/message.c). Together they took a ZMQ connection's set-up from jumps of 30-154 virtual s (7 of 9 runs
 * beside a CPU hog, and hangs) to none in 40 (tests/progs/zmq_connect.py). It was opt-in while vLLM's TP=2
 * start-up hung in full test-suite runs, with it and without; that hang was a lost condvar hand-over
 * (libc/condvar.c). */
static int first_look = -1;
int tw_tk_first_look(void) {
    if (__builtin_expect(first_look < 0, 0)) {
        const char *v = getenv("TIMEWARP_WAIT_FIRST_LOOK");
        first_look = !(v && v[0] == '0' && !v[1]);
    }
    return first_look;
}

void tw_tk_block_begin(int may_jump) {
    tw_tk_slot *s = keeper_slot();
    if (!s) return;
    (void)tw_now();   /* charge the CPU time until the wait */
    __atomic_add_fetch(&s->seq, 1, __ATOMIC_RELEASE);
    __atomic_store_n(&s->state, TW_SLOT_BLOCK, __ATOMIC_RELEASE);
    __atomic_add_fetch(&tw_tk->changes, 1, __ATOMIC_RELAXED);
    /* this thread no longer holds the clock back */
    if (tw_tk_first_look() || !may_jump) tw_tk_advance_no_jump(tw_tk);
    else tw_tk_advance(tw_tk);
}

/* End of a TWAIT or BLOCK wait. Timed out (TW_WAKE_TIMEOUT): the thread resumes at its deadline. Woken by
 * messages whose writers' times are known (TW_WAKE_AT, shim_c/libc/message.c): at the latest of them (the
 * `deadline` argument), never before its own clock. Woken by another thread of this process (TW_WAKE_LOCAL: a
 * private condvar, lock or futex): no earlier than anything this process did, except a thread with its own
 * clock, which keeps it (a lock hand-over, Python's GIL above all, carries no data it waited for: raised to its
 * process's time at every GIL hand-over, vLLM's EngineCore input thread delivered requests 3-10 ms late and TP=2
 * decode steps came out 33% long). Woken by something that may come from another process (TW_WAKE_ANY: a
 * descriptor, a shared semaphore): no earlier than anything that happened anywhere. The distinction keeps
 * processes that run side by side from dragging each other's clocks forward at every lock hand-over.
 */
/* A waiting thread that the kernel woke takes what it was sent (message.c marks it seen, which ends the
 * message's hold on the run's clock): its slot says it runs again, at its clock before the wait, first.
 * Left waiting until tw_tk_wake set it running, the slot held nothing between the two (a blocked thread
 * holds nothing): a thread of another process, or one of this process's waiting for its feeders (vLLM's
 * EngineCore), went past the message's time while the reader, preempted on a loaded machine, had not yet
 * handed it on (tests/progs/feeder_queue.py under two CPU hogs: a drain missed a message 1 ms old). */
void tw_tk_reader_running(void) {
    tw_tk_slot *s = keeper_slot();
    uint32_t st = s ? __atomic_load_n(&s->state, __ATOMIC_ACQUIRE) : TW_SLOT_RUN;
    if (st != TW_SLOT_BLOCK && st != TW_SLOT_TWAIT) return;   /* LOST: tw_now raises it first */
    slot_running(s, thread_now);
}

/* Whether the calling thread runs Python (it has a Python thread state); 1 where the program is not Python's.
 * PyGILState_GetThisThreadState reads a thread-specific key: no GIL needed. */
static int thread_runs_python(void) {
    static void *(*this_state)(void);
    static int looked;
    if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
        this_state = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
        __atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
    }
    return !this_state || this_state() != NULL;
}

void tw_tk_wake(int how, uint64_t deadline) {
    tw_tk_slot *s = keeper_slot();
    if (!s) return;
    /* Why a timeout of a thread that is not Python's need not move its process's timeline: vLLM's EngineCore
     * holds seven gloo socket loops (10 ms epoll timeouts) and NCCL watchdogs. Their timeouts raised the
     * process's time while its busy loop was blocked on an empty input queue, and the busy loop, woken by
     * the next request (a lock hand-over: the process's time), took it 0.5-12 ms (median 2) after it had
     * reached the engine; the real H200 host took 0.06-0.5 ms (case 1, leases o and p). */
    thread_idle_timer = how == TW_WAKE_TIMEOUT && atomic_load_explicit(&idle_timers_private, memory_order_relaxed) &&
                        !thread_runs_python();
    uint64_t t = how == TW_WAKE_TIMEOUT || how == TW_WAKE_AT ? deadline
               : how == TW_WAKE_LOCAL ? (thread_io_only ? thread_now : atomic_load_explicit(&own_max, memory_order_acquire))
               : atomic_load_explicit(process_now, memory_order_acquire);
    resume_at(s, t);
}

/* A pure sleep (nanosleep, time.sleep, a poll with nothing to wait on). With a time keeper it is a wait
 * until t like a GPU completion. Without one, the sleeping thread's clock jumps to its deadline, and the
 * thread also really sleeps a bounded slice of the duration (TIMEWARP_SLEEP_SLICE_NS, default 1 ms, or a
 * hundredth of the sleep if that is less): so a loop that polls for another process with short sleeps and
 * a timeout gives that process real time to act before the virtual deadline passes. */
static int64_t sleep_slice_ns = -1;

void tw_sleep_until(uint64_t t) {
    if (keeper_slot()) { tw_wait_until(t); return; }
    uint64_t now = tw_now();
    if (t <= now) return;
    if (sleep_slice_ns < 0) {
        const char *v = getenv("TIMEWARP_SLEEP_SLICE_NS");
        sleep_slice_ns = v ? atoll(v) : 1000000;
    }
    uint64_t d = t - now, real = d / 100;
    if (real > (uint64_t)sleep_slice_ns) real = sleep_slice_ns;
    if (real < 20000) real = 20000;   /* at least a scheduling quantum: other processes get to run */
    if (real > d) real = d;
    struct timespec ts = {(time_t)(real / 1000000000ull), (long)(real % 1000000000ull)};
    tw_sys2(SYS_nanosleep, &ts, 0);
    tw_wait_until(t);
}
