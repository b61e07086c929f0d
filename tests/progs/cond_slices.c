/* A waiter in pthread_cond_timedwait with a far deadline and a predicate loop (as every caller of a condvar
 * has), and a notifier that computes for a random 0-300 us, then sets the predicate and broadcasts, holding
 * the mutex (as gloo's connect callback does), and waits for the waiter to take it. Under `timewarp run` a
 * round that ends at the 100 s deadline is a hand-over the emulation lost (shim_c/libc/condvar.c): "lost",
 * the predicate was set (a broadcast missed), or "jumped", it was not (the clock jumped to the deadline
 * while the notifier had been woken and not yet run). Prints {"rounds", "lost", "jumped", "virtual_s",
 * "max_wait_s"}. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready = PTHREAD_COND_INITIALIZER, taken_cv = PTHREAD_COND_INITIALIZER;
static int flag, taken, rounds;

static double now_s(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void *notifier(void *arg) {
    (void)arg;
    unsigned seed = 12345;
    for (int i = 0; i < rounds; i++) {
        /* compute for 0-300 us: the broadcast lands anywhere in the waiter's real slices */
        double until = now_s(CLOCK_MONOTONIC) + (rand_r(&seed) % 300) / 1e6;
        while (now_s(CLOCK_MONOTONIC) < until) {}
        pthread_mutex_lock(&m);
        flag = 1;
        pthread_cond_broadcast(&ready);
        while (taken <= i) pthread_cond_wait(&taken_cv, &m);
        pthread_mutex_unlock(&m);
    }
    return NULL;
}

int main(int argc, char **argv) {
    rounds = argc > 1 ? atoi(argv[1]) : 2000;
    int lost = 0, jumped = 0;
    double max_wait = 0, t0 = now_s(CLOCK_MONOTONIC);
    pthread_t th;
    pthread_create(&th, NULL, notifier, NULL);
    for (int i = 0; i < rounds; i++) {
        pthread_mutex_lock(&m);
        double w0 = now_s(CLOCK_MONOTONIC);
        struct timespec dl;
        clock_gettime(CLOCK_REALTIME, &dl);
        dl.tv_sec += 100;
        while (!flag) {
            if (pthread_cond_timedwait(&ready, &m, &dl) == ETIMEDOUT) {
                if (flag) lost++; else jumped++;
                break;
            }
        }
        double w = now_s(CLOCK_MONOTONIC) - w0;
        if (w > max_wait) max_wait = w;
        flag = 0;
        taken++;
        pthread_cond_signal(&taken_cv);
        pthread_mutex_unlock(&m);
    }
    pthread_join(th, NULL);
    printf("{\"rounds\": %d, \"lost\": %d, \"jumped\": %d, \"virtual_s\": %.3f, \"max_wait_s\": %.4f}\n", rounds, lost,
           jumped, now_s(CLOCK_MONOTONIC) - t0, max_wait);
    return 0;
}
