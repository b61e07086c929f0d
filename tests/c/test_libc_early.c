/* A library whose constructor reads the clock and sleeps, to be preloaded beside the interposers in either
 * order: the call may reach them before their own constructor ran (lazy init must cope).
 *
 *   gcc -shared -fPIC tests/c/test_libc_early.c -o /tmp/tw/libtw_early.so -ldl
 *   LD_PRELOAD="/tmp/tw/libtw_early.so /tmp/tw/libtw.so" /bin/true   # and the other order
 * Prints one line: "early: ok (virtual ...)" when the sleep was virtual, "early: ok (real ...)" when the
 * core had no clock epoch yet (its constructor had not run) and time stayed real; either way the clock
 * must agree with the sleep.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

__attribute__((constructor)) static void early(void) {
    int (*libc_clock_gettime)(clockid_t, struct timespec *) =
        dlsym(dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY), "clock_gettime");
    struct timespec v0, v1, r0, r1, d = {3, 0};
    clock_gettime(CLOCK_MONOTONIC, &v0);
    libc_clock_gettime(CLOCK_MONOTONIC, &r0);
    nanosleep(&d, NULL);
    clock_gettime(CLOCK_MONOTONIC, &v1);
    libc_clock_gettime(CLOCK_MONOTONIC, &r1);
    double dv = (v1.tv_sec - v0.tv_sec) + (v1.tv_nsec - v0.tv_nsec) * 1e-9;
    double dr = (r1.tv_sec - r0.tv_sec) + (r1.tv_nsec - r0.tv_nsec) * 1e-9;
    int slept = dv >= 3.0 && dv < 3.05;
    const char *verdict = slept && dr < 0.5 ? "ok (virtual" : slept && dr >= 3.0 ? "ok (real: no core epoch yet" : "FAIL (";
    printf("early: %s; clock +%.4f s, real %.4f s)\n", verdict, dv, dr);
    fflush(stdout);
}
