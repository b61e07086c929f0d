/* TIMEWARP_CHARGE_DIR=DIR (a diagnostic): what this process's CPU time was charged on its virtual clock.
 *
 * Why: vLLM's TTFT under emulation hangs on how the API server's host work is priced (Python at the host
 * pace, native code at the native pace: coordinator/pace.py), and the real host's CPU time per process is
 * measured (proc_cpu.txt of the real leases). The emulated side needs the same figure in virtual time, per
 * process and per case: the running totals live in a small file, DIR/charge.PID, that anyone can read while
 * the process runs (integrations/bench/cases.sh reads them beside /proc's CPU times at each case's and each
 * main run's start and end). Each process (a fork()ed child too) gets its own file, and a process that
 * exec()s starts its file over (the totals are its program's, /proc's CPU times its whole life's); unset,
 * nothing is written or counted.
 *
 * Layout: TW_CHARGE_FIELDS little-endian uint64 (ns), in the order of tw_charge_field. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include "internal.h"

_Atomic uint64_t *tw_charge_tab;

static void open_tab(void) {
    tw_charge_tab = NULL;
    const char *dir = getenv("TIMEWARP_CHARGE_DIR");
    if (!dir || !*dir) return;
    char path[4096];
    snprintf(path, sizeof path, "%s/charge.%d", dir, (int)getpid());
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || ftruncate(fd, TW_CHARGE_FIELDS * sizeof(uint64_t)) != 0) {
        tw_log("TIMEWARP_CHARGE_DIR: cannot write %s; CPU charges are not logged", path);
        if (fd >= 0) close(fd);
        return;
    }
    void *p = mmap(NULL, TW_CHARGE_FIELDS * sizeof(uint64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p != MAP_FAILED) tw_charge_tab = p;
}

/* the parent's mapping is shared after fork(): the child starts a file of its own */
static void atfork_child(void) { open_tab(); }

__attribute__((constructor(102))) static void charge_log_init(void) {
    const char *dir = getenv("TIMEWARP_CHARGE_DIR");
    if (!dir || !*dir) return;
    open_tab();
    pthread_atfork(NULL, NULL, atfork_child);
}
