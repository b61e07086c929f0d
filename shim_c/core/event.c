/* Events: a record marks the virtual time at which everything issued before it on its stream is done. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "tw/timekeeper.h"
#include "graph_internal.h"

#define EVENT_MAGIC 0x54574556u /* "TWEV" */
#define EVENT_DISABLE_TIMING 0x2u

struct tw_event {
    uint32_t magic;
    unsigned flags;
    int recorded;
    uint64_t time;
    tw_capture *cap;       /* recorded inside a capture: stream waits on it join that capture */
    struct tw_event *next_free;
};

static tw_event *free_events;

tw_err tw_event_create(unsigned flags, tw_event **out) {
    tw_init();
    if (!out) return TW_ERR_INVALID_VALUE;
    TW_LOCK();
    tw_event *e = free_events;
    if (e) free_events = e->next_free;
    else e = calloc(1, sizeof *e);
    TW_UNLOCK();
    if (!e) return TW_ERR_OUT_OF_MEMORY;
    memset(e, 0, sizeof *e);
    e->magic = EVENT_MAGIC;
    e->flags = flags;
    *out = e;
    return TW_OK;
}

int tw_event_valid(const tw_event *e) { return e && e->magic == EVENT_MAGIC; }

tw_err tw_event_destroy(tw_event *e) {
    if (!tw_event_valid(e)) return TW_ERR_INVALID_HANDLE;
    TW_LOCK();
    e->magic = 0;
    e->next_free = free_events;
    free_events = e;
    TW_UNLOCK();
    return TW_OK;
}

tw_err tw_event_record(tw_event *e, tw_stream *s) {
    if (!tw_event_valid(e) || !s) return TW_ERR_INVALID_HANDLE;
    TW_LOCK();
    tw_capture *c = tw_stream_capture(s);
    if (c) {
        e->cap = c;
        tw_op op = {.kind = TW_OP_EVENT_RECORD, .event = e, .label = "event record"};
        tw_err err = tw_capture_append(c, s, &op);
        TW_UNLOCK();
        return err;
    }
    TW_UNLOCK();
    uint64_t t = tw_stream_place_marker(s);
    TW_LOCK();
    e->cap = NULL;
    e->recorded = 1;
    e->time = t;
    TW_UNLOCK();
    return TW_OK;
}

tw_err tw_event_query(tw_event *e) {
    if (!tw_event_valid(e)) return TW_ERR_INVALID_HANDLE;
    if (!e->recorded) return TW_OK;
    return tw_now() >= e->time ? TW_OK : TW_ERR_NOT_READY;
}

tw_err tw_event_synchronize(tw_event *e) {
    if (!tw_event_valid(e)) return TW_ERR_INVALID_HANDLE;
    tw_sync_until(e->recorded ? e->time : 0);
    return TW_OK;
}

tw_err tw_event_elapsed_ms(tw_event *a, tw_event *b, float *ms) {
    if (!ms) return TW_ERR_INVALID_VALUE;
    if (!tw_event_valid(a) || !tw_event_valid(b)) return TW_ERR_INVALID_HANDLE;
    if ((a->flags | b->flags) & EVENT_DISABLE_TIMING) return TW_ERR_INVALID_HANDLE;
    if (!a->recorded || !b->recorded) return TW_ERR_INVALID_HANDLE;
    uint64_t now = tw_now();
    if (now < a->time || now < b->time) return TW_ERR_NOT_READY;
    *ms = (float)(((double)(int64_t)(b->time - a->time)) / 1e6);
    return TW_OK;
}

tw_err tw_stream_wait_event(tw_stream *s, tw_event *e) {
    if (!s || !tw_event_valid(e)) return TW_ERR_INVALID_HANDLE;
    TW_LOCK();
    tw_capture *sc = tw_stream_capture(s);
    if (e->cap) {
        /* fork into a capture: the waiting stream joins it (how multi-stream graphs are captured); the wait is
         * a node, the edge that lets the branches run side by side at replay (graph.c) */
        tw_err err = TW_OK;
        if (!sc) { tw_capture_join(e->cap, s); sc = e->cap; }
        if (sc == e->cap) {
            tw_op op = {.kind = TW_OP_EVENT_WAIT, .event = e, .label = "event wait"};
            err = tw_capture_append(sc, s, &op);
        }
        TW_UNLOCK();
        return err;
    }
    int recorded = e->recorded;
    uint64_t t = e->time;
    TW_UNLOCK();
    if (recorded && !sc) tw_stream_advance_to(s, t);
    return TW_OK;
}

/* ---------------------------------------------------------------- host functions
 * cudaLaunchHostFunc / cuLaunchHostFunc callbacks run on one worker thread, in order, each at the virtual
 * time its stream reaches it (the worker's clock is moved there first), as the driver's callback thread
 * would. Without a time keeper the worker's clock is private (it runs ahead and must not drag the
 * program's threads). With one, the worker takes part: a pending callback is a deadline the keeper's
 * clock may not jump over, set by the submitting thread itself so that no jump can slip in before the
 * worker wakes. */
typedef struct hostfn { void (*fn)(void *); void *data; uint64_t at; struct hostfn *next; } hostfn;
static hostfn *hf_head, *hf_tail;
static pthread_mutex_t hf_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hf_cond = PTHREAD_COND_INITIALIZER;
static pthread_cond_t hf_ready_cond = PTHREAD_COND_INITIALIZER;
static pthread_cond_t hf_done_cond = PTHREAD_COND_INITIALIZER;
static uint64_t hf_running_at = UINT64_MAX;   /* the `at` of the callback running now */
static int hf_started, hf_ready;
static tw_tk_slot *hf_slot;   /* the worker's slot in the time keeper (NULL without one) */

void tw_clock_private_thread(void);

static void *hostfn_main(void *arg) {
    (void)arg;
    if (tw_tk) (void)tw_now();   /* claims this thread's slot */
    else tw_clock_private_thread();
    pthread_mutex_lock(&hf_lock);
    hf_slot = tw_tk ? tw_tk_thread_slot(0) : NULL;
    hf_ready = 1;
    pthread_cond_broadcast(&hf_ready_cond);
    pthread_mutex_unlock(&hf_lock);
    for (;;) {
        pthread_mutex_lock(&hf_lock);
        while (!hf_head) pthread_cond_wait(&hf_cond, &hf_lock);
        hostfn *h = hf_head;
        hf_head = h->next;
        if (!hf_head) hf_tail = NULL;
        hf_running_at = h->at;
        pthread_mutex_unlock(&hf_lock);
        tw_wait_until(h->at);
        h->fn(h->data);
        pthread_mutex_lock(&hf_lock);
        hf_running_at = UINT64_MAX;
        pthread_cond_broadcast(&hf_done_cond);
        pthread_mutex_unlock(&hf_lock);
        free(h);
    }
    return NULL;
}

void tw_hostfn_worker_start(void) { hf_started = 0; }

/* A synchronize until virtual time t returns once every callback its streams reached by t has run, as
 * the real driver's does. The virtual clock alone does not ensure it: a synchronizing thread whose clock
 * is already past t does not wait at all, and the worker may not have run the callback yet. */
void tw_hostfn_drain(uint64_t t) {
    pthread_mutex_lock(&hf_lock);
    for (;;) {
        int pending = hf_running_at <= t;
        for (hostfn *h = hf_head; h && !pending; h = h->next) pending = h->at <= t;
        if (!pending || !hf_started) break;
        pthread_cond_wait(&hf_done_cond, &hf_lock);
    }
    pthread_mutex_unlock(&hf_lock);
}

void tw_hostfn_submit(void (*fn)(void *), void *data, uint64_t at) {
    hostfn *h = malloc(sizeof *h);
    if (!h) { fn(data); return; }
    *h = (hostfn){fn, data, at, NULL};
    pthread_mutex_lock(&hf_lock);
    if (!hf_started) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, hostfn_main, NULL) == 0) hf_started = 1;
        pthread_attr_destroy(&attr);
        while (hf_started && !hf_ready) pthread_cond_wait(&hf_ready_cond, &hf_lock);
    }
    if (hf_slot && tw_tk) {   /* the keeper's clock may not pass this callback before it has run */
        /* the earliest callback not yet run: also the one the worker has taken and waits to run (hf_head no
         * longer holds it), else this deadline would let the clock pass it and it would run late */
        uint64_t first = at;
        if (hf_head && hf_head->at < first) first = hf_head->at;
        if (hf_running_at < first) first = hf_running_at;
        hf_slot->deadline = first;
        __atomic_add_fetch(&hf_slot->seq, 1, __ATOMIC_RELEASE);
        __atomic_store_n(&hf_slot->state, TW_SLOT_SLEEP, __ATOMIC_RELEASE);
        __atomic_add_fetch(&tw_tk->changes, 1, __ATOMIC_RELAXED);
    }
    if (hf_tail) hf_tail->next = h; else hf_head = h;
    hf_tail = h;
    pthread_cond_signal(&hf_cond);
    pthread_mutex_unlock(&hf_lock);
}
