/* Streams and their virtual timelines.
 *
 * Each stream has a tail: the virtual time its last operation completes. An operation starts at the
 * latest of the stream's tail, the host's virtual time when it was issued, and the legacy default
 * stream's ordering (the legacy stream waits for every blocking stream of its device and they wait for
 * it); it ends after its predicted duration. Nothing runs: a host wait (synchronize, a blocking copy, an
 * event wait) moves the waiting thread's clock to the completion time. On a capturing stream an
 * operation is appended to the capture's graph instead.
 *
 * The host cannot run ahead of a stream without bound: the driver queues at most TW_LAUNCH_QUEUE_DEPTH
 * operations a stream has not finished, and the next launch waits (spinning) until the oldest of them
 * ends. Measured on the H200 (predictors/calibration/launch_queue.py, data launch_queue_2026-12-01): the
 * 1022nd launch behind a busy kernel blocks, whether kernels, pinned copies or graph replays (one slot
 * each); event records take no slot. A program that issues more than that ahead of the GPU (long eager
 * loops of small kernels behind big ones) waits here; vLLM's eager steps take 434-529 slots each
 * (vllm_queue_slots.json), so its two steps in flight stay just under the depth.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include "internal.h"
#include "graph_internal.h"

#define STREAM_MAGIC 0x54575354u /* "TWST" */
#define STREAM_NONBLOCKING 0x1u

struct tw_stream {
    uint32_t magic;
    uint64_t id;
    int dev;
    unsigned flags;
    int priority;
    int legacy, per_thread;
    uint64_t tail;
    tw_capture *cap;        /* the capture this stream takes part in, or NULL */
    struct tw_stream *next_free;
    uint64_t *queue_end;    /* end times of the last TW_LAUNCH_QUEUE_DEPTH operations (a ring), or NULL */
    unsigned queue_next;
};

#define TW_LAUNCH_QUEUE_DEPTH 1022

static uint64_t next_stream_id = 1;
static tw_stream *free_streams;     /* destroyed streams are reused, never freed: stale handles stay readable */
static __thread tw_stream *per_thread_streams[TW_MAX_DEVICES];

/* every stream object ever made (they are reused, never freed), so a handle can be checked without
 * dereferencing an arbitrary pointer */
static tw_stream **known;
static size_t nknown_slots, nknown;

static int known_has(const void *p) {
    if (!nknown_slots) return 0;
    size_t j = ((uintptr_t)p >> 4) & (nknown_slots - 1);
    for (;;) {
        tw_stream *k = __atomic_load_n(&known[j], __ATOMIC_ACQUIRE);
        if (!k) return 0;
        if (k == p) return 1;
        j = (j + 1) & (nknown_slots - 1);
    }
}

static void known_add_slot(tw_stream **tab, size_t slots, tw_stream *s) {
    size_t j = ((uintptr_t)s >> 4) & (slots - 1);
    while (tab[j]) j = (j + 1) & (slots - 1);
    __atomic_store_n(&tab[j], s, __ATOMIC_RELEASE);
}

static int known_add(tw_stream *s) {
    if ((nknown + 1) * 2 > nknown_slots) {
        size_t ns = nknown_slots ? nknown_slots * 2 : 256;
        tw_stream **nt = calloc(ns, sizeof *nt);
        if (!nt) return -1;
        for (size_t i = 0; i < nknown_slots; i++) if (known[i]) known_add_slot(nt, ns, known[i]);
        /* the old table is leaked on purpose: a reader without the lock may still be probing it */
        __atomic_store_n(&known, nt, __ATOMIC_RELEASE);
        nknown_slots = ns;
    }
    known_add_slot(known, nknown_slots, s);
    nknown++;
    return 0;
}

static tw_stream *stream_new(int dev, unsigned flags, int prio) {
    tw_stream *s = free_streams;
    if (s) free_streams = s->next_free;
    else {
        s = calloc(1, sizeof *s);
        if (s && known_add(s)) { free(s); s = NULL; }
    }
    if (!s) return NULL;
    uint64_t *ring = s->queue_end;  /* a reused stream keeps its ring's memory */
    memset(s, 0, sizeof *s);
    if (ring) memset(ring, 0, TW_LAUNCH_QUEUE_DEPTH * sizeof *ring);
    s->queue_end = ring;
    s->magic = STREAM_MAGIC;
    s->id = next_stream_id++;
    s->dev = dev;
    s->flags = flags;
    s->priority = prio;
    return s;
}

void tw_streams_init(void) {
    for (int d = 0; d < tw_ndevices; d++) {
        tw_devices[d].legacy = stream_new(d, 0, 0);
        tw_devices[d].legacy->legacy = 1;
    }
    tw_hostfn_worker_start();
}

tw_stream *tw_stream_get(void *handle, int per_thread_default) {
    tw_init();
    int dev = tw_get_device();
    if (dev >= tw_ndevices) return NULL;
    if (handle == NULL) handle = per_thread_default ? TW_STREAM_PER_THREAD : TW_STREAM_LEGACY;
    if (handle == TW_STREAM_LEGACY) return tw_devices[dev].legacy;
    if (handle == TW_STREAM_PER_THREAD) {
        tw_stream *s = per_thread_streams[dev];
        if (!s) {
            TW_LOCK();
            s = stream_new(dev, 0, 0);
            if (s) s->per_thread = 1;
            TW_UNLOCK();
            per_thread_streams[dev] = s;
        }
        return s;
    }
    tw_stream *s = handle;
    return known_has(s) && s->magic == STREAM_MAGIC ? s : NULL;
}

tw_err tw_stream_create(int dev, unsigned flags, int priority, tw_stream **out) {
    tw_init();
    if (!out) return TW_ERR_INVALID_VALUE;
    if (dev < 0 || dev >= tw_ndevices) return TW_ERR_INVALID_DEVICE;
    /* priorities are clamped to the device's range [-5, 0], as CUDA does */
    if (priority > 0) priority = 0;
    if (priority < -5) priority = -5;
    TW_LOCK();
    tw_stream *s = stream_new(dev, flags, priority);
    TW_UNLOCK();
    if (!s) return TW_ERR_OUT_OF_MEMORY;
    *out = s;
    return TW_OK;
}

tw_err tw_stream_destroy(tw_stream *s) {
    if (!s || s->magic != STREAM_MAGIC || s->legacy || s->per_thread) return TW_ERR_INVALID_HANDLE;
    TW_LOCK();
    s->magic = 0;
    s->next_free = free_streams;
    free_streams = s;
    TW_UNLOCK();
    return TW_OK;
}

int tw_stream_device(const tw_stream *s) { return s->dev; }
unsigned tw_stream_flags(const tw_stream *s) { return s->flags; }
int tw_stream_priority(const tw_stream *s) { return s->priority; }
uint64_t tw_stream_id(const tw_stream *s) { return s->id; }
tw_capture *tw_stream_capture(const tw_stream *s) { return s->cap; }
void tw_stream_set_capture(tw_stream *s, tw_capture *c) { s->cap = c; }
int tw_stream_is_legacy(const tw_stream *s) { return s->legacy; }
int tw_stream_capturing(tw_stream *s) { return s->cap != NULL; }

/* When an operation issued by the host at virtual time host starts on s (its tail, legacy-stream ordering).
 * Called with the lock held, as the two below. */
static uint64_t start_on(tw_stream *s, uint64_t host) {
    tw_device_state *D = &tw_devices[s->dev];
    uint64_t start = s->tail > host ? s->tail : host;
    if (s->legacy) { if (D->blocking_tail > start) start = D->blocking_tail; }
    else if (!(s->flags & STREAM_NONBLOCKING) && D->legacy->tail > start) start = D->legacy->tail;
    return start;
}

/* Place an operation of duration dur on s at start: updates the timelines, returns start. */
static uint64_t place_at(tw_stream *s, uint64_t start, uint64_t dur, uint64_t *end_out) {
    tw_device_state *D = &tw_devices[s->dev];
    int blocking = !(s->flags & STREAM_NONBLOCKING);
    uint64_t end = start + dur;
    s->tail = end;
    if (blocking || s->legacy) { if (end > D->blocking_tail) D->blocking_tail = end; }
    if (end > D->max_tail) D->max_tail = end;
    *end_out = end;
    return start;
}

/* ... issued by the host at virtual time host */
static uint64_t place(tw_stream *s, uint64_t host, uint64_t dur, uint64_t *end_out) {
    return place_at(s, start_on(s, host), dur, end_out);
}

uint64_t tw_stream_ready_at(tw_stream *s, uint64_t host) {
    TW_LOCK();
    uint64_t start = start_on(s, host);
    TW_UNLOCK();
    return start;
}

uint64_t tw_stream_place_marker(tw_stream *s) {
    uint64_t host = tw_now(), end;
    TW_LOCK();
    place(s, host, 0, &end);
    TW_UNLOCK();
    return end;
}

void tw_stream_advance_to(tw_stream *s, uint64_t t) {
    TW_LOCK();
    if (s->tail < t) s->tail = t;
    tw_device_state *D = &tw_devices[s->dev];
    if (!(s->flags & STREAM_NONBLOCKING) || s->legacy) { if (t > D->blocking_tail) D->blocking_tail = t; }
    if (t > D->max_tail) D->max_tail = t;
    TW_UNLOCK();
}

/* When a launch issued at host time host gets a slot in s's queue: the end of the operation
 * TW_LAUNCH_QUEUE_DEPTH launches back, if that is later. Called with the lock held. */
static uint64_t queue_slot_at(tw_stream *s, uint64_t host) {
    if (!s->queue_end) return host;
    uint64_t t = s->queue_end[s->queue_next];
    return t > host ? t : host;
}

/* note an operation that takes a queue slot until end. Called with the lock held. */
static void queue_take(tw_stream *s, uint64_t end) {
    if (!s->queue_end && !(s->queue_end = calloc(TW_LAUNCH_QUEUE_DEPTH, sizeof *s->queue_end))) return;
    s->queue_end[s->queue_next] = end;
    s->queue_next = (s->queue_next + 1) % TW_LAUNCH_QUEUE_DEPTH;
}

/* side effects of an op that has been placed: the data it moves and the host function it calls */
void tw_op_side_effects(const tw_op *op, uint64_t start) {
    switch (op->kind) {
    case TW_OP_MEMCPY: tw_mem_copy_now(op->dst, op->src, op->bytes); break;
    case TW_OP_MEMSET: tw_mem_set_now(op->dst, op->value, op->bytes); break;
    case TW_OP_HOST_FUNC: if (op->fn) tw_hostfn_submit(op->fn, op->fn_data, start); break;
    default: break;
    }
}

tw_err tw_enqueue(tw_stream *s, tw_op *op) {
    if (!s) return TW_ERR_INVALID_HANDLE;
    /* cuBLAS's own behaviour (lazy kernel loads, split-K memsets, its host cost) only for its own calls: a GEMM
     * read from another library's launch (CUTLASS, Triton's fused MoE) is a plain kernel launch on the host */
    int blas = op->ann.kind == TW_ANN_GEMM && op->ann.u.gemm.source == TW_GEMM_BLAS;
    if (blas) tw_blas_before_gemm(s, op);
    /* the real runtime's launch path costs the host more than the shim's: charge the difference, and take
     * the host's issue time from the same clock reading */
    uint64_t cost = 0;
    if (op->kind == TW_OP_KERNEL || op->kind == TW_OP_MEMCPY || op->kind == TW_OP_MEMSET)
        cost = tw_profile_host_cost(TW_HOST_LAUNCH) +
               (blas ? tw_profile_host_cost(TW_HOST_GEMM)
                : op->ann.kind == TW_ANN_ATTENTION ? tw_profile_host_cost(TW_HOST_ATTN) : 0);
    else if (op->kind == TW_OP_GRAPH)
        cost = tw_profile_host_cost(TW_HOST_GRAPH_LAUNCH);
    uint64_t host = tw_charge_add(cost);
    TW_LOCK();
    if (s->cap) {
        tw_err e = tw_capture_append(s->cap, s, op);
        TW_UNLOCK();
        return e;
    }
    int slot = op->kind != TW_OP_EVENT_RECORD && op->kind != TW_OP_EVENT_WAIT;
    if (slot) {
        uint64_t free_at = queue_slot_at(s, host);
        if (free_at > host) {   /* the queue is full: the launch returns once the GPU has taken one more */
            TW_UNLOCK();
            tw_sync_until(free_at);
            host = tw_now();
            TW_LOCK();
        }
    }
    int dev = s->dev;
    if (!op->duration) op->duration = tw_predict_ex(dev, op, &op->layer);
    else if (op->kind != TW_OP_GRAPH) op->layer = -1;
    uint64_t end, start = start_on(s, host);
    op->duration = tw_power_stretch(dev, op, start, op->duration);
    place_at(s, start, op->duration, &end);
    tw_device_state *D = &tw_devices[dev];
    if (slot) { queue_take(s, end); D->queued++; }
    if (op->kind == TW_OP_MEMCPY || op->kind == TW_OP_MEMSET) D->copies++;
    else if (op->kind == TW_OP_GRAPH) D->kernels += tw_graph_exec_kernels(op->exec);
    else if (op->kind != TW_OP_HOST_FUNC) D->kernels++;
    D->busy_ns += op->duration;
    if (op->kind == TW_OP_GRAPH) tw_graph_exec_layer_busy(op->exec, D->busy_layer_ns);
    else if (op->kind == TW_OP_KERNEL || op->kind == TW_OP_MEMCPY || op->kind == TW_OP_MEMSET)
        D->busy_layer_ns[tw_layer_slot(op->layer)] += op->duration;
    tw_record(dev, s->id, op, start, end, host);
    TW_UNLOCK();
    if (op->kind == TW_OP_GRAPH) tw_graph_exec_side_effects(op->exec, start);
    else tw_op_side_effects(op, start);
    tw_report_snapshot_maybe();
    return TW_OK;
}

/* Operations issued to device dev's queues so far (kernels, copies, memsets, graph replays: one each), for
 * the vLLM timeline's per-step counts (integrations/vllm_plugin/timeline.py) */
uint64_t tw_ops_queued(int dev) {
    if (dev < 0 || dev >= tw_ndevices) return 0;
    TW_LOCK();
    uint64_t n = tw_devices[dev].queued;
    TW_UNLOCK();
    return n;
}

tw_err tw_stream_synchronize(tw_stream *s) {
    if (!s) return TW_ERR_INVALID_HANDLE;
    TW_LOCK();
    if (s->cap) { tw_capture_invalidate(s->cap); TW_UNLOCK(); return TW_ERR_CAPTURE_UNSUPPORTED; }
    uint64_t t = s->tail;
    if (s->legacy) t = tw_devices[s->dev].blocking_tail;
    TW_UNLOCK();
    tw_sync_until(t);
    return TW_OK;
}

tw_err tw_stream_query(tw_stream *s) {
    if (!s) return TW_ERR_INVALID_HANDLE;
    TW_LOCK();
    if (s->cap) { TW_UNLOCK(); return TW_ERR_CAPTURE_UNSUPPORTED; }
    uint64_t t = s->legacy ? tw_devices[s->dev].blocking_tail : s->tail;
    TW_UNLOCK();
    return tw_now() >= t ? TW_OK : TW_ERR_NOT_READY;
}

tw_err tw_device_synchronize(int dev) {
    tw_init();
    uint64_t t = 0;
    TW_LOCK();
    for (int d = 0; d < tw_ndevices; d++)
        if ((dev < 0 || d == dev) && tw_devices[d].max_tail > t) t = tw_devices[d].max_tail;
    TW_UNLOCK();
    tw_sync_until(t);
    return TW_OK;
}

tw_err tw_copy_sync(tw_stream *s, void *dst, const void *src, size_t n, tw_copy_dir dir) {
    if (!s) return TW_ERR_INVALID_HANDLE;
    if (s->cap) return TW_ERR_CAPTURE_UNSUPPORTED;
    tw_op op = {.kind = TW_OP_MEMCPY, .dir = dir, .bytes = n, .dst = dst, .src = src, .label = "memcpy"};
    tw_alloc a;
    op.pinned = (dir == TW_COPY_D2H && tw_mem_lookup(dst, &a) && a.kind == TW_MEM_HOST_PINNED) ||
                (dir == TW_COPY_H2D && tw_mem_lookup(src, &a) && a.kind == TW_MEM_HOST_PINNED);
    tw_err e = tw_enqueue(s, &op);
    if (e) return e;
    /* a synchronous copy returns once it is done: the host waits for the stream up to the copy's end */
    TW_LOCK();
    uint64_t t = s->tail;
    TW_UNLOCK();
    tw_sync_until(t);
    return TW_OK;
}
