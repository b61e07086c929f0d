/* The time keeper must not move the run's clock past a thread by CPU that the thread's clock is not charged
 * (the emulator's own work on it, tw_charge_pause: the predictor's tables, a prediction's miss). Thread A
 * pauses its charge and computes for 60 ms of real time without reading its clock; thread B sleeps 5 virtual
 * ms. A is at its pause's start all along, so B may not wake before A has resumed: A could still act before
 * B's deadline. When the keeper extrapolated A by that CPU, B woke in the middle of it (shim_c/keeper/keeper.c).
 * Built and run by tests/test_c_parts.py under `timewarp run`. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

extern void tw_charge_pause(void);
extern void tw_charge_resume(void);

static atomic_int resumed, saw_resumed = -1;

static double now_ms(void) {   /* the virtual clock */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static double cpu_ms(void) {   /* this thread's CPU time, past the shim */
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static void *sleeper(void *arg) {
    (void)arg;
    struct timespec d = {0, 5000000};
    nanosleep(&d, NULL);
    atomic_store(&saw_resumed, atomic_load(&resumed));
    return NULL;
}

int main(void) {
    double t0 = now_ms();
    pthread_t b;
    pthread_create(&b, NULL, sleeper, NULL);
    tw_charge_pause();
    for (double c = cpu_ms(); cpu_ms() - c < 60;) {}
    tw_charge_resume();
    atomic_store(&resumed, 1);
    struct timespec d = {0, 20000000};
    nanosleep(&d, NULL);
    pthread_join(b, NULL);
    printf("{\"sleeper_saw_resumed\": %d, \"virtual_ms\": %.3f}\n", atomic_load(&saw_resumed), now_ms() - t0);
    return 0;
}
