/* Logging to stderr with write(2) (never stdout, never buffered), and the once-per-symbol report of calls
 * the shim does not implement. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "internal.h"

int tw_debug;

void tw_log(const char *fmt, ...) {
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "timewarp[%d:%ld] ", (int)getpid(), (long)syscall(SYS_gettid));
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(buf + n, sizeof buf - n - 1, fmt, ap);
    va_end(ap);
    if (m < 0) m = 0;
    n += m;
    if (n > (int)sizeof buf - 2) n = sizeof buf - 2;
    buf[n++] = '\n';
    ssize_t w = write(2, buf, n);
    (void)w;
}

/* Unimplemented calls: a small open-addressing table keyed by the name's address (each stub passes its
 * own string literal, so the address identifies the symbol). */
#define UNIMPL_SLOTS 1024
static struct { const char *lib, *name; long count; } unimpl[UNIMPL_SLOTS];
static pthread_mutex_t unimpl_lock = PTHREAD_MUTEX_INITIALIZER;

int tw_unimplemented(const char *lib, const char *name, int code, const char *code_name) {
    size_t h = ((uintptr_t)name >> 3) % UNIMPL_SLOTS;
    int first = 0;
    pthread_mutex_lock(&unimpl_lock);
    for (size_t i = 0; i < UNIMPL_SLOTS; i++) {
        size_t j = (h + i) % UNIMPL_SLOTS;
        if (unimpl[j].name == name) { unimpl[j].count++; break; }
        if (!unimpl[j].name) { unimpl[j].lib = lib; unimpl[j].name = name; unimpl[j].count = 1; first = 1; break; }
    }
    pthread_mutex_unlock(&unimpl_lock);
    const char *strict = getenv("TIMEWARP_STRICT");
    if (first || (strict && strict[0] == '1'))
        tw_log("%s: %s not implemented -> %s (%d)", lib, name, code_name, code);
    if (strict && strict[0] == '1') {
        tw_log("TIMEWARP_STRICT=1: aborting at unimplemented %s", name);
        abort();
    }
    return code;
}

void tw_unimplemented_foreach(void (*cb)(const char *, const char *, long, void *), void *ctx) {
    pthread_mutex_lock(&unimpl_lock);
    for (size_t i = 0; i < UNIMPL_SLOTS; i++)
        if (unimpl[i].name) cb(unimpl[i].lib, unimpl[i].name, unimpl[i].count, ctx);
    pthread_mutex_unlock(&unimpl_lock);
}

const char *tw_env(const char *name, const char *dflt) {
    const char *v = getenv(name);
    return v && *v ? v : dflt;
}
