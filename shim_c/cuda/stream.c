/* Streams: creation, queries, synchronisation, capture, callbacks and stream memory operations.
 * CUstream is the core's tw_stream * (0x1 the legacy stream, 0x2 the per-thread stream; NULL is the legacy stream
 * for the plain entry points and the per-thread stream for the _ptsz ones).
 *
 * Stream memory operations: a write (cuStreamWriteValue*) stores its value into backed memory when the stream
 * reaches it; a wait (cuStreamWaitValue*) is a short op that is taken as satisfied (the emulator does not block a
 * timeline on memory written by another timeline). */
#include <stdlib.h>
#include <string.h>

#include "cu_internal.h"

/* duration of a stream memory operation on the GPU front end */
#define MEMOP_NS 1000

tw_err cu_enqueue_host(tw_stream *s, void (*fn)(void *), void *data, const char *label, uint64_t duration)
{
    tw_op op;
    memset(&op, 0, sizeof op);
    op.kind = TW_OP_HOST_FUNC;
    op.label = label;
    op.fn = fn;
    op.fn_data = data;
    op.duration = duration;
    return tw_enqueue(s, &op);
}

static int capturing(tw_stream *s) { return tw_capture_status_of(s, NULL, NULL) != TW_CAPTURE_NONE; }

/* ---------------------------------------------------------------- creation */
static CUresult create(CUstream *ph, unsigned int flags, int priority)
{
    cu_enter();
    if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    /* out-of-range priorities are clamped, as the driver does */
    if (priority > 0) priority = 0;
    if (priority < -5) priority = -5;
    tw_stream *s = NULL;
    tw_err e = tw_stream_create(cu_current_device(), flags, priority, &s);
    if (e != TW_OK)
        return cu_err(e);
    *ph = s;
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuStreamCreate(CUstream *ph, unsigned int Flags) { return create(ph, Flags, 0); }
TW_EXPORT CUresult cuStreamCreateWithPriority(CUstream *ph, unsigned int flags, int priority)
{
    return create(ph, flags, priority);
}

static CUresult destroy(CUstream h)
{
    cu_enter();
    if (!h || (void *)h == TW_STREAM_LEGACY || (void *)h == TW_STREAM_PER_THREAD)
        return CUDA_ERROR_INVALID_HANDLE;
    tw_stream *s = cu_stream(h, 0);
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    return cu_err(tw_stream_destroy(s));
}
TW_EXPORT CUresult cuStreamDestroy(CUstream h) { return destroy(h); }
TW_EXPORT CUresult cuStreamDestroy_v2(CUstream h) { return destroy(h); }

/* ---------------------------------------------------------------- sync / query / wait */
#define STREAM_OR_FAIL(s, h, pt)          \
    cu_enter();                           \
    tw_stream *s = cu_stream((h), (pt));  \
    if (!s)                               \
        return CUDA_ERROR_INVALID_HANDLE

static CUresult sync_(CUstream h, int pt) { STREAM_OR_FAIL(s, h, pt); return cu_err(tw_stream_synchronize(s)); }
TW_EXPORT CUresult cuStreamSynchronize(CUstream h) { return sync_(h, 0); }
TW_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream h) { return sync_(h, 1); }

static CUresult query(CUstream h, int pt) { STREAM_OR_FAIL(s, h, pt); return cu_err(tw_stream_query(s)); }
TW_EXPORT CUresult cuStreamQuery(CUstream h) { return query(h, 0); }
TW_EXPORT CUresult cuStreamQuery_ptsz(CUstream h) { return query(h, 1); }

static CUresult wait_event(CUstream h, CUevent e, unsigned int flags, int pt)
{
    STREAM_OR_FAIL(s, h, pt);
    if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!e || !tw_event_valid(e))
        return CUDA_ERROR_INVALID_HANDLE;
    return cu_err(tw_stream_wait_event(s, e));
}
TW_EXPORT CUresult cuStreamWaitEvent(CUstream h, CUevent e, unsigned int f) { return wait_event(h, e, f, 0); }
TW_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream h, CUevent e, unsigned int f) { return wait_event(h, e, f, 1); }

/* ---------------------------------------------------------------- getters */
static CUresult get_priority(CUstream h, int *p, int pt)
{
    STREAM_OR_FAIL(s, h, pt);
    if (!p) return CUDA_ERROR_INVALID_VALUE;
    *p = tw_stream_priority(s);
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuStreamGetPriority(CUstream h, int *p) { return get_priority(h, p, 0); }
TW_EXPORT CUresult cuStreamGetPriority_ptsz(CUstream h, int *p) { return get_priority(h, p, 1); }

static CUresult get_flags(CUstream h, unsigned *f, int pt)
{
    STREAM_OR_FAIL(s, h, pt);
    if (!f) return CUDA_ERROR_INVALID_VALUE;
    *f = tw_stream_flags(s);
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuStreamGetFlags(CUstream h, unsigned int *f) { return get_flags(h, f, 0); }
TW_EXPORT CUresult cuStreamGetFlags_ptsz(CUstream h, unsigned int *f) { return get_flags(h, f, 1); }

static CUresult get_id(CUstream h, unsigned long long *id, int pt)
{
    STREAM_OR_FAIL(s, h, pt);
    if (!id) return CUDA_ERROR_INVALID_VALUE;
    *id = tw_stream_id(s);
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuStreamGetId(CUstream h, unsigned long long *id) { return get_id(h, id, 0); }
TW_EXPORT CUresult cuStreamGetId_ptsz(CUstream h, unsigned long long *id) { return get_id(h, id, 1); }

static CUresult get_device(CUstream h, CUdevice *d, int pt)
{
    STREAM_OR_FAIL(s, h, pt);
    if (!d) return CUDA_ERROR_INVALID_VALUE;
    *d = tw_stream_device(s);
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuStreamGetDevice(CUstream h, CUdevice *d) { return get_device(h, d, 0); }
TW_EXPORT CUresult cuStreamGetDevice_ptsz(CUstream h, CUdevice *d) { return get_device(h, d, 1); }

/* Streams belong to devices in the core: a stream's context is its device's primary context. */
static CUresult get_ctx(CUstream h, CUcontext *c, CUgreenCtx *g, int pt)
{
    STREAM_OR_FAIL(s, h, pt);
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    *c = cu_primary(tw_stream_device(s));
    if (g)
        *g = NULL;
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuStreamGetCtx(CUstream h, CUcontext *c) { return get_ctx(h, c, NULL, 0); }
TW_EXPORT CUresult cuStreamGetCtx_ptsz(CUstream h, CUcontext *c) { return get_ctx(h, c, NULL, 1); }
TW_EXPORT CUresult cuStreamGetCtx_v2(CUstream h, CUcontext *c, CUgreenCtx *g) { return get_ctx(h, c, g, 0); }
TW_EXPORT CUresult cuStreamGetCtx_v2_ptsz(CUstream h, CUcontext *c, CUgreenCtx *g) { return get_ctx(h, c, g, 1); }

/* ---------------------------------------------------------------- capture */
static CUresult begin_capture(CUstream h, int mode, int pt)
{
    STREAM_OR_FAIL(s, h, pt);
    if (mode < CU_STREAM_CAPTURE_MODE_GLOBAL || mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    if (s == cu_stream(TW_STREAM_LEGACY, 0))
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;   /* the legacy stream cannot be captured */
    return cu_err(tw_capture_begin(s, mode));
}
TW_EXPORT CUresult cuStreamBeginCapture(CUstream h) { return begin_capture(h, CU_STREAM_CAPTURE_MODE_GLOBAL, 0); }
TW_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream h) { return begin_capture(h, CU_STREAM_CAPTURE_MODE_GLOBAL, 1); }
TW_EXPORT CUresult cuStreamBeginCapture_v2(CUstream h, CUstreamCaptureMode m) { return begin_capture(h, m, 0); }
TW_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream h, CUstreamCaptureMode m) { return begin_capture(h, m, 1); }

static CUresult end_capture(CUstream h, CUgraph *g, int pt)
{
    STREAM_OR_FAIL(s, h, pt);
    if (!g)
        return CUDA_ERROR_INVALID_VALUE;
    tw_graph *out = NULL;
    tw_err e = tw_capture_end(s, &out);
    *g = out;
    return cu_err(e);
}
TW_EXPORT CUresult cuStreamEndCapture(CUstream h, CUgraph *g) { return end_capture(h, g, 0); }
TW_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream h, CUgraph *g) { return end_capture(h, g, 1); }

static CUresult is_capturing(CUstream h, CUstreamCaptureStatus *st, int pt)
{
    STREAM_OR_FAIL(s, h, pt);
    if (!st)
        return CUDA_ERROR_INVALID_VALUE;
    *st = (CUstreamCaptureStatus)tw_capture_status_of(s, NULL, NULL);
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuStreamIsCapturing(CUstream h, CUstreamCaptureStatus *st) { return is_capturing(h, st, 0); }
TW_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream h, CUstreamCaptureStatus *st) { return is_capturing(h, st, 1); }

/* Dependencies (the capture's current leaf nodes) are not tracked by the core: reported as none. */
static CUresult capture_info(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *graph,
                             const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps, int pt)
{
    STREAM_OR_FAIL(s, h, pt);
    if (!st)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t cid = 0;
    tw_graph *g = NULL;
    tw_capture_status cs = tw_capture_status_of(s, &cid, &g);
    *st = (CUstreamCaptureStatus)cs;
    int active = cs == TW_CAPTURE_ACTIVE;
    if (id && cs != TW_CAPTURE_NONE)
        *id = cid;
    if (graph)
        *graph = active ? g : NULL;
    if (deps)
        *deps = NULL;
    if (edges)
        *edges = NULL;
    if (ndeps)
        *ndeps = 0;
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuStreamGetCaptureInfo(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id)
{
    return capture_info(h, st, id, NULL, NULL, NULL, NULL, 0);
}
TW_EXPORT CUresult cuStreamGetCaptureInfo_ptsz(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id)
{
    return capture_info(h, st, id, NULL, NULL, NULL, NULL, 1);
}
TW_EXPORT CUresult cuStreamGetCaptureInfo_v2(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                             const CUgraphNode **deps, size_t *n)
{
    return capture_info(h, st, id, g, deps, NULL, n, 0);
}
TW_EXPORT CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id,
                                                  CUgraph *g, const CUgraphNode **deps, size_t *n)
{
    return capture_info(h, st, id, g, deps, NULL, n, 1);
}
TW_EXPORT CUresult cuStreamGetCaptureInfo_v3(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                             const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *n)
{
    return capture_info(h, st, id, g, deps, edges, n, 0);
}
TW_EXPORT CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream h, CUstreamCaptureStatus *st, cuuint64_t *id,
                                                  CUgraph *g, const CUgraphNode **deps,
                                                  const CUgraphEdgeData **edges, size_t *n)
{
    return capture_info(h, st, id, g, deps, edges, n, 1);
}

TW_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    cu_enter();
    if (!mode || *mode < CU_STREAM_CAPTURE_MODE_GLOBAL || *mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    *mode = (CUstreamCaptureMode)tw_capture_exchange_mode(*mode);
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- callbacks */
struct callback { CUstreamCallback cb; CUstream h; void *data; };

static void run_callback(void *p)
{
    struct callback c = *(struct callback *)p;
    free(p);
    c.cb(c.h, CUDA_SUCCESS, c.data);
}

static CUresult add_callback(CUstream h, CUstreamCallback cb, void *data, unsigned int flags, int pt)
{
    STREAM_OR_FAIL(s, h, pt);
    if (!cb || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (capturing(s))
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    struct callback *c = malloc(sizeof *c);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->cb = cb;
    c->h = h;
    c->data = data;
    tw_err e = cu_enqueue_host(s, run_callback, c, "cuStreamAddCallback", 0);
    if (e != TW_OK)
        free(c);
    return cu_err(e);
}
TW_EXPORT CUresult cuStreamAddCallback(CUstream h, CUstreamCallback cb, void *d, unsigned int f)
{
    return add_callback(h, cb, d, f, 0);
}
TW_EXPORT CUresult cuStreamAddCallback_ptsz(CUstream h, CUstreamCallback cb, void *d, unsigned int f)
{
    return add_callback(h, cb, d, f, 1);
}

/* ---------------------------------------------------------------- stream memory operations */
struct write_value { uintptr_t addr; uint64_t value; int size; int persistent; };

static void run_write(void *p)
{
    struct write_value *w = p;
    tw_mem_copy_now((void *)w->addr, &w->value, (size_t)w->size);
    if (!w->persistent)
        free(w);
}

static void run_nothing(void *p) { (void)p; }

static CUresult check_addr(CUdeviceptr addr, int size)
{
    if (!addr || (addr & (uintptr_t)(size - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    tw_alloc a;
    if (!cu_mem_lookup((uintptr_t)addr, &a))
        return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static CUresult write_value(tw_stream *s, CUdeviceptr addr, uint64_t value, int size, unsigned flags)
{
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    if (flags & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_addr(addr, size);
    if (r != CUDA_SUCCESS)
        return r;
    struct write_value *w = malloc(sizeof *w);
    if (!w)
        return CUDA_ERROR_OUT_OF_MEMORY;
    w->addr = (uintptr_t)addr;
    w->value = value;
    w->size = size;
    w->persistent = capturing(s);   /* replayed with its graph: kept for the graph's lifetime */
    tw_err e = cu_enqueue_host(s, run_write, w, size == 4 ? "cuStreamWriteValue32" : "cuStreamWriteValue64",
                               MEMOP_NS);
    if (e != TW_OK)
        free(w);
    return cu_err(e);
}

static CUresult wait_value(tw_stream *s, CUdeviceptr addr, int size, unsigned flags)
{
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    if ((flags & ~CU_STREAM_WAIT_VALUE_FLUSH) > CU_STREAM_WAIT_VALUE_NOR)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_addr(addr, size);
    if (r != CUDA_SUCCESS)
        return r;
    return cu_err(cu_enqueue_host(s, run_nothing, NULL, size == 4 ? "cuStreamWaitValue32" : "cuStreamWaitValue64",
                                  MEMOP_NS));
}

#define MEMOP_VARIANTS(suffix, pt)                                                                              \
    TW_EXPORT CUresult cuStreamWriteValue32##suffix(CUstream h, CUdeviceptr a, cuuint32_t v, unsigned int f) \
    {                                                                                                         \
        cu_enter();                                                                                           \
        return write_value(cu_stream(h, pt), a, v, 4, f);                                                     \
    }                                                                                                         \
    TW_EXPORT CUresult cuStreamWriteValue64##suffix(CUstream h, CUdeviceptr a, cuuint64_t v, unsigned int f) \
    {                                                                                                         \
        cu_enter();                                                                                           \
        return write_value(cu_stream(h, pt), a, v, 8, f);                                                     \
    }                                                                                                         \
    TW_EXPORT CUresult cuStreamWaitValue32##suffix(CUstream h, CUdeviceptr a, cuuint32_t v, unsigned int f)  \
    {                                                                                                         \
        (void)v;                                                                                              \
        cu_enter();                                                                                           \
        return wait_value(cu_stream(h, pt), a, 4, f);                                                         \
    }                                                                                                         \
    TW_EXPORT CUresult cuStreamWaitValue64##suffix(CUstream h, CUdeviceptr a, cuuint64_t v, unsigned int f)  \
    {                                                                                                         \
        (void)v;                                                                                              \
        cu_enter();                                                                                           \
        return wait_value(cu_stream(h, pt), a, 8, f);                                                         \
    }
MEMOP_VARIANTS(, 0)
MEMOP_VARIANTS(_ptsz, 1)
MEMOP_VARIANTS(_v2, 0)
MEMOP_VARIANTS(_v2_ptsz, 1)

static CUresult batch(CUstream h, unsigned int count, CUstreamBatchMemOpParams *ops, unsigned int flags, int pt)
{
    STREAM_OR_FAIL(s, h, pt);
    if (flags != 0 || count > 256 || (count && !ops))
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < count; i++) {
        CUresult r;
        switch (ops[i].operation) {
        case CU_STREAM_MEM_OP_WAIT_VALUE_32:
            r = wait_value(s, ops[i].waitValue.address, 4, ops[i].waitValue.flags);
            break;
        case CU_STREAM_MEM_OP_WAIT_VALUE_64:
            r = wait_value(s, ops[i].waitValue.address, 8, ops[i].waitValue.flags);
            break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_32:
            r = write_value(s, ops[i].writeValue.address, ops[i].writeValue.value, 4, ops[i].writeValue.flags);
            break;
        case CU_STREAM_MEM_OP_WRITE_VALUE_64:
            r = write_value(s, ops[i].writeValue.address, ops[i].writeValue.value64, 8, ops[i].writeValue.flags);
            break;
        case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
        case CU_STREAM_MEM_OP_BARRIER:
            r = CUDA_SUCCESS;   /* ordering only: nothing to emulate */
            break;
        default:
            r = CUDA_ERROR_INVALID_VALUE;
        }
        if (r != CUDA_SUCCESS)
            return r;
    }
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuStreamBatchMemOp(CUstream h, unsigned int n, CUstreamBatchMemOpParams *p, unsigned int f)
{
    return batch(h, n, p, f, 0);
}
TW_EXPORT CUresult cuStreamBatchMemOp_ptsz(CUstream h, unsigned int n, CUstreamBatchMemOpParams *p, unsigned int f)
{
    return batch(h, n, p, f, 1);
}
TW_EXPORT CUresult cuStreamBatchMemOp_v2(CUstream h, unsigned int n, CUstreamBatchMemOpParams *p, unsigned int f)
{
    return batch(h, n, p, f, 0);
}
TW_EXPORT CUresult cuStreamBatchMemOp_v2_ptsz(CUstream h, unsigned int n, CUstreamBatchMemOpParams *p,
                                              unsigned int f)
{
    return batch(h, n, p, f, 1);
}
