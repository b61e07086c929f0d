/* Kernel time priced apart (shim_c/core/vclock.c, TIMEWARP_KERNEL_PRICE): a thread's system time is charged
 * at that price, its user time at the host factor. Phase "user" computes for about 200 ms in user mode; phase
 * "kernel" spends about 200 ms reading /dev/zero (the kernel fills the buffer: system time). Prints each
 * phase's virtual time over its CPU time, and the kernel phase's share of system time (getrusage, split by
 * the kernel's tick samples). Built and run by tests/test_c_parts.py under `timewarp run`. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void) {   /* the virtual clock */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static double cpu_ms(void) {   /* this thread's CPU time */
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static double sys_ms(void) {
    struct rusage r;
    getrusage(RUSAGE_THREAD, &r);
    return r.ru_stime.tv_sec * 1e3 + r.ru_stime.tv_usec * 1e-3;
}

static volatile unsigned long sink;
static char buf[1 << 16];

int main(void) {
    int fd = open("/dev/zero", O_RDONLY);
    if (fd < 0) { perror("/dev/zero"); return 1; }
    double v0 = now_ms(), c0 = cpu_ms();
    while (cpu_ms() - c0 < 200) {   /* user mode; the CPU-time clock is not virtual: one reading per phase edge */
        for (unsigned long i = 0; i < 200000; i++) sink += i * i;
    }
    double v1 = now_ms(), c1 = cpu_ms(), s1 = sys_ms();
    while (cpu_ms() - c1 < 200) {   /* the kernel's: 64 KiB copies, straight to the kernel (no interposer) */
        for (int i = 0; i < 20; i++) syscall(SYS_read, fd, buf, sizeof buf);
    }
    double v2 = now_ms(), c2 = cpu_ms(), s2 = sys_ms();
    close(fd);
    printf("{\"user\": %.4f, \"kernel\": %.4f, \"kernel_sys_share\": %.4f}\n", (v1 - v0) / (c1 - c0),
           (v2 - v1) / (c2 - c1), (s2 - s1) / (c2 - c1));
    return 0;
}
