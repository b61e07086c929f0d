/* The libc time interposers (shim_c/libc/), against the fake core (shim_c/libc/test_fake_core.c) or the
 * real one. Run under LD_PRELOAD of the library that holds them:
 *
 *   tests/c/test_libc_run.sh builds and runs everything; by hand:
 *   gcc -shared -fPIC -O2 -fvisibility=hidden -DTW_LIBC_FAKE_CORE -Ishim_c/include shim_c/libc/[a-z]*.c \
 *       -o /tmp/tw/libtw.so -ldl
 *   gcc -O2 tests/c/test_libc_time.c -o /tmp/tw/test_libc_time -ldl -lpthread
 *   LD_PRELOAD=/tmp/tw/libtw.so /tmp/tw/test_libc_time            # virtual time
 *   TIMEWARP_VIRTUAL_TIME=0 LD_PRELOAD=... /tmp/tw/test_libc_time --off   # the switch: real time
 *
 * "Real" durations are read from libc's own clock_gettime (found through dlopen of libc.so.6), which the
 * interposer does not see. Exits non-zero on a failure.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures;
#define CHECK(cond, ...)                                                                                     \
    do {                                                                                                     \
        if (cond) {                                                                                          \
            printf("ok    ");                                                                                \
        } else {                                                                                             \
            printf("FAIL  ");                                                                                \
            failures++;                                                                                      \
        }                                                                                                    \
        printf(__VA_ARGS__);                                                                                 \
        printf("\n");                                                                                        \
        fflush(stdout);                                                                                      \
    } while (0)

static double fabs_like(double x) { return x < 0 ? -x : x; }
static int (*libc_clock_gettime)(clockid_t, struct timespec *);

static double ts_s(const struct timespec *ts) { return ts->tv_sec + ts->tv_nsec * 1e-9; }
static double vnow(clockid_t c) { struct timespec ts; clock_gettime(c, &ts); return ts_s(&ts); }
static double rnow(clockid_t c) { struct timespec ts; libc_clock_gettime(c, &ts); return ts_s(&ts); }
static struct timespec abs_in(clockid_t c, double s) {
    struct timespec ts;
    clock_gettime(c, &ts);
    long long ns = (long long)ts.tv_sec * 1000000000 + ts.tv_nsec + (long long)(s * 1e9);
    ts.tv_sec = ns / 1000000000;
    ts.tv_nsec = ns % 1000000000;
    return ts;
}

static void (*fake_advance)(uint64_t);

/* ---------------------------------------------------------------- sleeps */
static void test_sleeps(void) {
    double v0 = vnow(CLOCK_MONOTONIC), r0 = rnow(CLOCK_MONOTONIC), w0 = vnow(CLOCK_REALTIME);
    struct timespec two = {2, 0}, rem = {9, 9};
    int rc = nanosleep(&two, &rem);
    double dv = vnow(CLOCK_MONOTONIC) - v0, dr = rnow(CLOCK_MONOTONIC) - r0, dw = vnow(CLOCK_REALTIME) - w0;
    CHECK(rc == 0 && rem.tv_sec == 0 && rem.tv_nsec == 0, "nanosleep(2 s) returns 0, rem 0");
    CHECK(dv >= 2.0 && dv < 2.05, "nanosleep(2 s): monotonic +%.4f s (want 2)", dv);
    CHECK(dw >= 2.0 && dw < 2.05, "nanosleep(2 s): realtime +%.4f s (want 2)", dw);
    CHECK(dr < 0.2, "nanosleep(2 s): real %.4f s", dr);

    struct timespec dl = abs_in(CLOCK_MONOTONIC, 3.0);
    r0 = rnow(CLOCK_MONOTONIC);
    rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &dl, NULL);
    double after = vnow(CLOCK_MONOTONIC);
    CHECK(rc == 0 && after >= ts_s(&dl) && after < ts_s(&dl) + 0.05 && rnow(CLOCK_MONOTONIC) - r0 < 0.2,
          "clock_nanosleep(MONOTONIC, ABSTIME, +3 s): at deadline %+.4f s", after - ts_s(&dl));

    dl = abs_in(CLOCK_REALTIME, 1.5);
    rc = clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &dl, NULL);
    after = vnow(CLOCK_REALTIME);
    CHECK(rc == 0 && after >= ts_s(&dl) && after < ts_s(&dl) + 0.05,
          "clock_nanosleep(REALTIME, ABSTIME, +1.5 s): at deadline %+.4f s", after - ts_s(&dl));

    v0 = vnow(CLOCK_MONOTONIC);
    r0 = rnow(CLOCK_MONOTONIC);
    struct timespec half = {0, 500000000};
    clock_nanosleep(CLOCK_BOOTTIME, 0, &half, NULL);
    usleep(250000);
    sleep(1);
    struct timeval tv = {1, 500000};
    int sr = select(0, NULL, NULL, NULL, &tv);
    int pr = poll(NULL, 0, 700);
    struct pollfd neg = {.fd = -1, .events = POLLIN};
    int pr2 = poll(&neg, 1, 50);
    dv = vnow(CLOCK_MONOTONIC) - v0;
    dr = rnow(CLOCK_MONOTONIC) - r0;
    CHECK(sr == 0 && pr == 0 && pr2 == 0 && tv.tv_sec == 0 && tv.tv_usec == 0,
          "select/poll with nothing to wait on return 0 (sleeps)");
    CHECK(dv >= 4.0 && dv < 4.1 && dr < 0.3,
          "relative clock_nanosleep .5 + usleep .25 + sleep 1 + select 1.5 + poll .7 + poll(fd -1) .05 = "
          "+%.4f s virtual (want 4.0), %.4f s real", dv, dr);

    /* a deadline in the past returns at once and does not move the clock */
    dl = abs_in(CLOCK_MONOTONIC, -10.0);
    v0 = vnow(CLOCK_MONOTONIC);
    rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &dl, NULL);
    CHECK(rc == 0 && vnow(CLOCK_MONOTONIC) - v0 < 0.01, "clock_nanosleep to a past deadline returns at once");
    struct timespec bad = {0, 2000000000};
    CHECK(nanosleep(&bad, NULL) == -1 && errno == EINVAL, "nanosleep(tv_nsec 2e9) fails EINVAL");
}

/* ---------------------------------------------------------------- clocks */
static void test_clocks(void) {
    double mono = vnow(CLOCK_MONOTONIC), rmono = rnow(CLOCK_MONOTONIC);
    double rt = vnow(CLOCK_REALTIME), rrt = rnow(CLOCK_REALTIME);
    CHECK(mono - rmono > 5.0, "virtual monotonic ahead of the real one by %.3f s after the sleeps", mono - rmono);
    CHECK(fabs_like(rt - rrt - (mono - rmono)) < 0.05, "realtime and monotonic moved together");
    struct timeval tv;
    gettimeofday(&tv, NULL);
    time_t t = time(NULL);
    struct timespec tg;
    timespec_get(&tg, TIME_UTC);
    double g = tv.tv_sec + tv.tv_usec * 1e-6;
    CHECK(g - rt >= 0 && g - rt < 0.05 && t >= (time_t)rt && t <= (time_t)rt + 1 && ts_s(&tg) - rt < 0.05,
          "gettimeofday, time, timespec_get follow virtual realtime");
    CHECK(fabs_like(vnow(CLOCK_MONOTONIC_RAW) - vnow(CLOCK_MONOTONIC) - (rnow(CLOCK_MONOTONIC_RAW) -
                                                                          rnow(CLOCK_MONOTONIC))) < 0.01 &&
              fabs_like(vnow(CLOCK_BOOTTIME) - vnow(CLOCK_MONOTONIC) -
                        (rnow(CLOCK_BOOTTIME) - rnow(CLOCK_MONOTONIC))) < 0.01 &&
              fabs_like(vnow(CLOCK_MONOTONIC_COARSE) - vnow(CLOCK_MONOTONIC)) < 0.01 &&
              fabs_like(vnow(CLOCK_TAI) - vnow(CLOCK_REALTIME) - (rnow(CLOCK_TAI) - rnow(CLOCK_REALTIME))) < 0.01,
          "MONOTONIC_RAW, BOOTTIME, _COARSE, TAI keep their offsets to their family clock");
    double cpu = vnow(CLOCK_THREAD_CPUTIME_ID), rcpu = rnow(CLOCK_THREAD_CPUTIME_ID);
    double pcpu = vnow(CLOCK_PROCESS_CPUTIME_ID);
    clockid_t tclk;
    pthread_getcpuclockid(pthread_self(), &tclk);
    double tcpu = vnow(tclk);
    CHECK(rcpu - cpu >= 0 && rcpu - cpu < 0.01 && pcpu < 5 && tcpu - cpu < 0.01,
          "CPU-time clocks pass through (thread %.4f s)", cpu);
    /* per-thread monotonic */
    int back = 0;
    struct timespec prev, cur;
    clock_gettime(CLOCK_MONOTONIC, &prev);
    for (int i = 0; i < 200000; i++) {
        clock_gettime(CLOCK_MONOTONIC, &cur);
        if (cur.tv_sec < prev.tv_sec || (cur.tv_sec == prev.tv_sec && cur.tv_nsec < prev.tv_nsec)) back++;
        prev = cur;
    }
    CHECK(back == 0, "200k CLOCK_MONOTONIC readings never go back");
    long sr = syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &cur);
    CHECK(sr == 0 && ts_s(&cur) - vnow(CLOCK_MONOTONIC) < 0.01 && ts_s(&cur) - rnow(CLOCK_MONOTONIC) > 5.0,
          "syscall(SYS_clock_gettime) is virtual too");
    struct timespec *volatile null_ts = NULL;
    CHECK(clock_gettime(CLOCK_MONOTONIC, null_ts) == -1 && errno == EFAULT, "clock_gettime(.., NULL) -> EFAULT");
}

/* ---------------------------------------------------------------- waits */
struct condctx {
    pthread_mutex_t m;
    pthread_cond_t c;
    int flag;
    int rc;
    double v_deadline, v_after, real_s;
    clockid_t clk;
    double wait_s;
};

static void *cond_waiter(void *p) {
    struct condctx *x = p;
    struct timespec dl = abs_in(x->clk, x->wait_s);
    x->v_deadline = ts_s(&dl);
    double r0 = rnow(CLOCK_MONOTONIC);
    pthread_mutex_lock(&x->m);
    int rc = 0;
    while (!x->flag && rc == 0) rc = pthread_cond_timedwait(&x->c, &x->m, &dl);
    pthread_mutex_unlock(&x->m);
    x->rc = rc;
    x->v_after = vnow(x->clk);
    x->real_s = rnow(CLOCK_MONOTONIC) - r0;
    return NULL;
}

static void run_cond(clockid_t clk, double wait_s, double signal_after, struct condctx *x) {
    memset(x, 0, sizeof *x);
    pthread_mutex_init(&x->m, NULL);
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, clk);
    pthread_cond_init(&x->c, &a);
    x->clk = clk;
    x->wait_s = wait_s;
    pthread_t th;
    pthread_create(&th, NULL, cond_waiter, x);
    if (signal_after > 0) {
        struct timespec ts = {0, (long)(signal_after * 1e9)};
        int (*real_nanosleep)(const struct timespec *, struct timespec *) =
            dlsym(dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY), "nanosleep");
        real_nanosleep(&ts, NULL);
        pthread_mutex_lock(&x->m);
        x->flag = 1;
        pthread_cond_signal(&x->c);
        pthread_mutex_unlock(&x->m);
    }
    pthread_join(th, NULL);
}

static void test_cond(void) {
    /* glibc's layout, which wait.c relies on: __wrefs bit 1 is the monotonic clock */
    pthread_condattr_t a;
    pthread_cond_t c1, c2;
    pthread_condattr_init(&a);
    pthread_cond_init(&c1, &a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&c2, &a);
    CHECK((c1.__data.__wrefs & 2) == 0 && (c2.__data.__wrefs & 2) == 2,
          "glibc condvar: __data.__wrefs bit 1 = CLOCK_MONOTONIC (%u, %u)", c1.__data.__wrefs, c2.__data.__wrefs);

    /* The virtual clock is now far ahead of the real one: a deadline not translated would make the waiter
     * wait that much longer (realtime) or not at all (a deadline in the real past). */
    if (fake_advance) fake_advance(1000000000000ULL); /* +1000 s */
    struct condctx x;
    run_cond(CLOCK_REALTIME, 1.0, 0, &x);
    CHECK(x.rc == ETIMEDOUT && x.v_after >= x.v_deadline && x.v_after < x.v_deadline + 0.05 &&
              x.real_s > 0.9 && x.real_s < 1.5,
          "pthread_cond_timedwait(REALTIME, +1 s) times out: clock at deadline %+.4f s, real %.3f s",
          x.v_after - x.v_deadline, x.real_s);
    run_cond(CLOCK_MONOTONIC, 0.5, 0, &x);
    CHECK(x.rc == ETIMEDOUT && x.v_after >= x.v_deadline && x.v_after < x.v_deadline + 0.05 &&
              x.real_s > 0.4 && x.real_s < 1.0,
          "pthread_cond_timedwait(condattr MONOTONIC, +0.5 s) times out: clock at deadline %+.4f s, real %.3f s",
          x.v_after - x.v_deadline, x.real_s);
    run_cond(CLOCK_MONOTONIC, 5.0, 0.1, &x);
    CHECK(x.rc == 0 && x.v_after < x.v_deadline - 4.5 && x.real_s < 1.0,
          "pthread_cond_timedwait signalled after 0.1 s: returns 0, no jump (%.3f s before deadline)",
          x.v_deadline - x.v_after);

    /* pthread_cond_clockwait, an already-past deadline: a non-blocking check */
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    struct timespec past = abs_in(CLOCK_MONOTONIC, -1.0);
    double r0 = rnow(CLOCK_MONOTONIC);
    pthread_mutex_lock(&m);
    int rc = pthread_cond_clockwait(&c, &m, CLOCK_MONOTONIC, &past);
    pthread_mutex_unlock(&m);
    CHECK(rc == ETIMEDOUT && rnow(CLOCK_MONOTONIC) - r0 < 0.1, "pthread_cond_clockwait to a past deadline");
}

static void test_poll_sem_futex(void) {
    int fds[2];
    if (pipe(fds) != 0) abort();
    struct pollfd p = {.fd = fds[0], .events = POLLIN};
    double v0 = vnow(CLOCK_MONOTONIC), r0 = rnow(CLOCK_MONOTONIC);
    int rc = poll(&p, 1, 100);
    double dv = vnow(CLOCK_MONOTONIC) - v0, dr = rnow(CLOCK_MONOTONIC) - r0;
    CHECK(rc == 0 && dv >= 0.1 && dv < 0.15 && dr >= 0.09 && dr < 0.5,
          "poll(pipe, 100 ms) times out: +%.4f s virtual, %.4f s real", dv, dr);
    if (write(fds[1], "x", 1) != 1) abort();
    v0 = vnow(CLOCK_MONOTONIC);
    rc = poll(&p, 1, 5000);
    dv = vnow(CLOCK_MONOTONIC) - v0;
    CHECK(rc == 1 && (p.revents & POLLIN) && dv < 0.01, "poll(readable pipe, 5 s) returns 1 at once, +%.4f s", dv);
    rc = poll(&p, 1, 0);
    CHECK(rc == 1, "poll timeout 0 passes through");
    char ch;
    if (read(fds[0], &ch, 1) != 1) abort();

    fd_set rs;
    FD_ZERO(&rs);
    FD_SET(fds[0], &rs);
    struct timeval tv = {0, 150000};
    v0 = vnow(CLOCK_MONOTONIC);
    rc = select(fds[0] + 1, &rs, NULL, NULL, &tv);
    dv = vnow(CLOCK_MONOTONIC) - v0;
    CHECK(rc == 0 && dv >= 0.15 && dv < 0.2, "select(pipe, 150 ms) times out: +%.4f s", dv);

    sem_t s;
    sem_init(&s, 0, 0);
    struct timespec dl = abs_in(CLOCK_REALTIME, 0.2);
    r0 = rnow(CLOCK_MONOTONIC);
    rc = sem_timedwait(&s, &dl);
    int e = errno;
    double after = vnow(CLOCK_REALTIME);
    dr = rnow(CLOCK_MONOTONIC) - r0;
    CHECK(rc == -1 && e == ETIMEDOUT && after >= ts_s(&dl) && dr > 0.15 && dr < 0.6,
          "sem_timedwait(+0.2 s) -> ETIMEDOUT, clock at deadline %+.4f s, real %.3f s", after - ts_s(&dl), dr);
    sem_post(&s);
    dl = abs_in(CLOCK_MONOTONIC, 5.0);
    CHECK(sem_clockwait(&s, CLOCK_MONOTONIC, &dl) == 0, "sem_clockwait on a posted semaphore returns 0");

    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&m);
    dl = abs_in(CLOCK_REALTIME, 0.1);
    rc = pthread_mutex_timedlock(&m, &dl); /* default mutex, owner relocking: waits, times out */
    after = vnow(CLOCK_REALTIME);
    CHECK(rc == ETIMEDOUT && after >= ts_s(&dl), "pthread_mutex_timedlock(+0.1 s) times out at the deadline");
    pthread_mutex_unlock(&m);

    /* futex through syscall(): relative FUTEX_WAIT, absolute FUTEX_WAIT_BITSET on either clock */
    uint32_t word = 0;
    struct timespec rel = {0, 200000000};
    v0 = vnow(CLOCK_MONOTONIC);
    r0 = rnow(CLOCK_MONOTONIC);
    long fr = syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &rel, NULL, 0);
    e = errno;
    dv = vnow(CLOCK_MONOTONIC) - v0;
    dr = rnow(CLOCK_MONOTONIC) - r0;
    CHECK(fr == -1 && e == ETIMEDOUT && dv >= 0.2 && dv < 0.25 && dr > 0.15 && dr < 0.6,
          "futex WAIT (0.2 s relative): ETIMEDOUT, +%.4f s virtual, %.3f s real", dv, dr);
    dl = abs_in(CLOCK_MONOTONIC, 0.3);
    r0 = rnow(CLOCK_MONOTONIC);
    fr = syscall(SYS_futex, &word, FUTEX_WAIT_BITSET_PRIVATE, 0, &dl, NULL, FUTEX_BITSET_MATCH_ANY);
    e = errno;
    after = vnow(CLOCK_MONOTONIC);
    dr = rnow(CLOCK_MONOTONIC) - r0;
    CHECK(fr == -1 && e == ETIMEDOUT && after >= ts_s(&dl) && after < ts_s(&dl) + 0.05 && dr > 0.25 && dr < 0.7,
          "futex WAIT_BITSET (MONOTONIC abs +0.3 s): ETIMEDOUT at deadline %+.4f s, %.3f s real",
          after - ts_s(&dl), dr);
    dl = abs_in(CLOCK_REALTIME, 0.1);
    fr = syscall(SYS_futex, &word, FUTEX_WAIT_BITSET_PRIVATE | FUTEX_CLOCK_REALTIME, 0, &dl, NULL,
                 FUTEX_BITSET_MATCH_ANY);
    e = errno;
    after = vnow(CLOCK_REALTIME);
    CHECK(fr == -1 && e == ETIMEDOUT && after >= ts_s(&dl) && after < ts_s(&dl) + 0.05,
          "futex WAIT_BITSET|CLOCK_REALTIME (abs +0.1 s): ETIMEDOUT at deadline %+.4f s", after - ts_s(&dl));
    fr = syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 1, &rel, NULL, 0);
    CHECK(fr == -1 && errno == EAGAIN, "futex WAIT on a changed word: EAGAIN (pass through)");
    CHECK(syscall(SYS_getpid) == getpid(), "syscall(SYS_getpid) passes through");
}

static void test_fork(void) {
    double v0 = vnow(CLOCK_MONOTONIC);
    pid_t pid = fork();
    if (pid == 0) {
        double c0 = vnow(CLOCK_MONOTONIC);
        sleep(3);
        double c1 = vnow(CLOCK_MONOTONIC);
        _exit(c0 >= v0 && c1 - c0 >= 3.0 && c1 - c0 < 3.1 ? 0 : 1);
    }
    int st = 0;
    double r0 = rnow(CLOCK_MONOTONIC);
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0 && rnow(CLOCK_MONOTONIC) - r0 < 1.0,
          "fork child: clock continues, sleep(3) is virtual");
}

static void test_hot_path(void) {
    enum { N = 2000000 };
    struct timespec ts;
    double r0 = rnow(CLOCK_MONOTONIC);
    for (int i = 0; i < N; i++) libc_clock_gettime(CLOCK_MONOTONIC, &ts);
    double real_mono = (rnow(CLOCK_MONOTONIC) - r0) / N * 1e9;
    r0 = rnow(CLOCK_MONOTONIC);
    for (int i = 0; i < N; i++) libc_clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    double real_cpu = (rnow(CLOCK_MONOTONIC) - r0) / N * 1e9;
    r0 = rnow(CLOCK_MONOTONIC);
    for (int i = 0; i < N; i++) clock_gettime(CLOCK_MONOTONIC, &ts);
    double virt = (rnow(CLOCK_MONOTONIC) - r0) / N * 1e9;
    printf("info  clock_gettime(MONOTONIC): real %.1f ns, real THREAD_CPUTIME %.1f ns, interposed %.1f ns\n",
           real_mono, real_cpu, virt);
    /* generous: a loaded machine must not fail this; the numbers above are what matter */
    CHECK(virt < 1.5 * (real_mono + real_cpu) + 100, "hot path costs about one CPU-clock read");
}


int main(int argc, char **argv) {
    void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
    libc_clock_gettime = dlsym(libc, "clock_gettime");
    fake_advance = (void (*)(uint64_t))dlsym(RTLD_DEFAULT, "tw_fake_advance");
    if (argc > 1 && strcmp(argv[1], "--off") == 0) {
        /* TIMEWARP_VIRTUAL_TIME=0: everything real */
        double r0 = rnow(CLOCK_MONOTONIC), v0 = vnow(CLOCK_MONOTONIC);
        struct timespec t = {0, 300000000};
        nanosleep(&t, NULL);
        double dr = rnow(CLOCK_MONOTONIC) - r0, dv = vnow(CLOCK_MONOTONIC) - v0;
        CHECK(dr >= 0.3 && fabs_like(dv - dr) < 0.01 && fabs_like(vnow(CLOCK_MONOTONIC) - rnow(CLOCK_MONOTONIC)) < 0.01,
              "TIMEWARP_VIRTUAL_TIME=0: nanosleep(0.3 s) really sleeps %.3f s, clocks are real", dr);
        return failures != 0;
    }
    printf("info  core: %s\n", fake_advance ? "test_fake_core.c" : "the real one (no tw_fake_advance)");
    test_sleeps();
    test_clocks();
    test_cond();
    test_poll_sem_futex();
    test_fork();
    test_hot_path();
    printf("%s: %d failure(s)\n", failures ? "FAILED" : "PASSED", failures);
    return failures != 0;
}
