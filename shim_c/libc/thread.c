/* Thread creation under `timewarp run`: a new thread holds the run's clock from its creation on.
 *
 * A thread takes part in the time keeper from its first clock reading. Between pthread_create and that
 * reading nothing represented it: a creator that then blocked (joining a pool of workers it has just
 * started, as `import torch` does) left no thread running, and the keeper let another process's sleep jump
 * the clock. The creator now reserves a slot at its own time, and the new thread adopts it first thing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tw_libc.h"

struct tw_start { void *(*fn)(void *); void *arg; int slot; };

static void *tw_thread_start(void *p) {
    struct tw_start st = *(struct tw_start *)p;
    free(p);
    tw_tk_adopt(st.slot);
    return st.fn(st.arg);
}

TW_EXPORT int pthread_create(pthread_t *restrict th, const pthread_attr_t *restrict attr, void *(*fn)(void *),
                             void *restrict arg) {
    if (tw_libc_init() != TW_LIBC_ON || !tw_real.create || !tw_libc_keeper())
        return tw_real.create ? tw_real.create(th, attr, fn, arg) : EAGAIN;
    struct tw_start *st = malloc(sizeof *st);
    if (!st) return tw_real.create(th, attr, fn, arg);
    tw_libc_depth++;
    *st = (struct tw_start){fn, arg, tw_tk_reserve()};
    tw_libc_depth--;
    int r = tw_real.create(th, attr, tw_thread_start, st);
    if (r) {
        tw_tk_unreserve(st->slot);
        free(st);
    }
    return r;
}

/* A thread that names itself as one of libzmq's background threads ("ZMQbg/IO/0", "ZMQbg/Reaper") takes
 * messages from sockets to its application's threads and back, through mailboxes each signalled by a
 * descriptor, which message stamps carry (message.c). Its clock then stays its own (tw_clock_io_thread):
 * sharing the process's clock, it raised vLLM's API server's event loop to the engine's clock at each
 * output it took off the socket, whether or not the loop had got to it (`TIMEWARP_CLAMP_LOG=1` counts
 * such raises). */
TW_EXPORT int pthread_setname_np(pthread_t th, const char *name) {
    tw_libc_init();
    int r = tw_real.setname_np ? tw_real.setname_np(th, name) : ENOSYS;
    if (r == 0 && pthread_equal(th, pthread_self()) && strncmp(name, "ZMQbg/", 6) == 0) tw_clock_io_thread();
    return r;
}
