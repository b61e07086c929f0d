/* Stream management: creation, queries, synchronisation, waits, host callbacks, capture, attributes.
 * Every entry point taking a stream has a _ptsz twin in which NULL names the per-thread default stream. */
#include <stdlib.h>
#include <string.h>

#include "cudart_internal.h"

static cudaError_t stream_create(cudaStream_t *pStream, unsigned flags, int priority)
{
    if (!pStream) return cr(cudaErrorInvalidValue);
    if (flags & ~(unsigned)cudaStreamNonBlocking) return cr(cudaErrorInvalidValue);
    tw_init();
    /* priorities outside [greatest, least] = [-5, 0] are clamped, as CUDA does */
    if (priority < -5) priority = -5;
    if (priority > 0) priority = 0;
    tw_stream *s = NULL;
    tw_err e = tw_stream_create(tw_get_device(), flags, priority, &s);
    if (e != TW_OK) return cr_tw(e);
    *pStream = s;
    TW_DEBUG("cudaStreamCreate(flags %u, prio %d) -> %p", flags, priority, (void *)s);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
    return stream_create(pStream, 0, 0);
}

TW_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    return stream_create(pStream, flags, 0);
}

TW_EXPORT cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
{
    return stream_create(pStream, flags, priority);
}

TW_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    if (tw_is_default_stream_handle(stream)) return cr(cudaErrorInvalidResourceHandle);
    tw_stream *s = tw_stream_get(stream, 0);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    return cr_tw(tw_stream_destroy(s));
}

/* ------------------------------------------------------------------ simple queries */

static cudaError_t cudaStreamSynchronize_impl(cudaStream_t stream, int pt)
{
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    return cr_tw(tw_stream_synchronize(s));
}

TW_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream) { return cudaStreamSynchronize_impl(stream, 0); }
TW_EXPORT cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) { return cudaStreamSynchronize_impl(stream, 1); }

static cudaError_t cudaStreamQuery_impl(cudaStream_t stream, int pt)
{
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    return cr_tw(tw_stream_query(s));
}

TW_EXPORT cudaError_t cudaStreamQuery(cudaStream_t stream) { return cudaStreamQuery_impl(stream, 0); }
TW_EXPORT cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) { return cudaStreamQuery_impl(stream, 1); }

static cudaError_t stream_wait_event(cudaStream_t stream, cudaEvent_t event, unsigned flags, int pt)
{
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    if (flags & ~(unsigned)cudaEventWaitExternal) return cr(cudaErrorInvalidValue);
    if (!event || !tw_event_valid(event)) return cr(cudaErrorInvalidResourceHandle);
    return cr_tw(tw_stream_wait_event(s, event));
}

TW_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    return stream_wait_event(stream, event, flags, 0);
}

TW_EXPORT cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    return stream_wait_event(stream, event, flags, 1);
}

static cudaError_t stream_get_priority(cudaStream_t stream, int *priority, int pt)
{
    if (!priority) return cr(cudaErrorInvalidValue);
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    *priority = tw_stream_priority(s);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority)
{
    return stream_get_priority(hStream, priority, 0);
}

TW_EXPORT cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t hStream, int *priority)
{
    return stream_get_priority(hStream, priority, 1);
}

static cudaError_t stream_get_flags(cudaStream_t stream, unsigned *flags, int pt)
{
    if (!flags) return cr(cudaErrorInvalidValue);
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    *flags = tw_stream_flags(s);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags)
{
    return stream_get_flags(hStream, flags, 0);
}

TW_EXPORT cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t hStream, unsigned int *flags)
{
    return stream_get_flags(hStream, flags, 1);
}

static cudaError_t stream_get_device(cudaStream_t stream, int *device, int pt)
{
    if (!device) return cr(cudaErrorInvalidValue);
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    *device = tw_stream_device(s);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int *device)
{
    return stream_get_device(hStream, device, 0);
}

TW_EXPORT cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t hStream, int *device)
{
    return stream_get_device(hStream, device, 1);
}

static cudaError_t stream_get_id(cudaStream_t stream, unsigned long long *id, int pt)
{
    if (!id) return cr(cudaErrorInvalidValue);
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    *id = tw_stream_id(s);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaStreamGetId(cudaStream_t hStream, unsigned long long *streamId)
{
    return stream_get_id(hStream, streamId, 0);
}

TW_EXPORT cudaError_t cudaStreamGetId_ptsz(cudaStream_t hStream, unsigned long long *streamId)
{
    return stream_get_id(hStream, streamId, 1);
}

/* ------------------------------------------------------------------ host functions */

typedef struct {
    cudaStreamCallback_t cb;
    cudaStream_t stream;
    void *user;
} callback_tramp;

static void run_callback(void *arg)
{
    callback_tramp *t = arg;
    t->cb(t->stream, cudaSuccess, t->user);
    free(t);
}

static cudaError_t stream_add_callback(cudaStream_t stream, cudaStreamCallback_t cb, void *user, unsigned flags,
                                       int pt)
{
    if (!cb || flags != 0) return cr(cudaErrorInvalidValue);
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    if (tw_capture_status_of(s, NULL, NULL) != TW_CAPTURE_NONE) return cr(cudaErrorStreamCaptureUnsupported);
    callback_tramp *t = malloc(sizeof(*t));
    if (!t) return cr(cudaErrorMemoryAllocation);
    t->cb = cb;
    t->stream = stream;
    t->user = user;
    tw_op op = {.kind = TW_OP_HOST_FUNC, .label = "cudaStreamAddCallback", .fn = run_callback, .fn_data = t};
    tw_err e = tw_enqueue(s, &op);
    if (e != TW_OK) {
        free(t);
        return cr_tw(e);
    }
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void *userData,
                                            unsigned int flags)
{
    return stream_add_callback(stream, callback, userData, flags, 0);
}

TW_EXPORT cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback,
                                                 void *userData, unsigned int flags)
{
    return stream_add_callback(stream, callback, userData, flags, 1);
}

static cudaError_t launch_host_func(cudaStream_t stream, cudaHostFn_t fn, void *user, int pt)
{
    if (!fn) return cr(cudaErrorInvalidValue);
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    tw_op op = {.kind = TW_OP_HOST_FUNC, .label = "cudaLaunchHostFunc", .fn = fn, .fn_data = user};
    return cr_tw(tw_enqueue(s, &op));
}

TW_EXPORT cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    return launch_host_func(stream, fn, userData, 0);
}

TW_EXPORT cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    return launch_host_func(stream, fn, userData, 1);
}

/* ------------------------------------------------------------------ capture */

static cudaError_t begin_capture(cudaStream_t stream, int mode, int pt)
{
    if (mode < cudaStreamCaptureModeGlobal || mode > cudaStreamCaptureModeRelaxed) return cr(cudaErrorInvalidValue);
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    /* the legacy stream cannot be captured */
    if (stream == NULL ? !pt : stream == TW_STREAM_LEGACY) return cr(cudaErrorStreamCaptureUnsupported);
    TW_DEBUG("cudaStreamBeginCapture(%p, mode %d)", stream, mode);
    return cr_tw(tw_capture_begin(s, mode));
}

TW_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t stream, int mode)
{
    return begin_capture(stream, mode, 0);
}

TW_EXPORT cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, int mode)
{
    return begin_capture(stream, mode, 1);
}

static cudaError_t end_capture(cudaStream_t stream, cudaGraph_t *pGraph, int pt)
{
    if (!pGraph) return cr(cudaErrorInvalidValue);
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    tw_graph *g = NULL;
    tw_err e = tw_capture_end(s, &g);
    *pGraph = e == TW_OK ? g : NULL;
    TW_DEBUG("cudaStreamEndCapture(%p) -> %p (%d)", stream, (void *)g, (int)e);
    return cr_tw(e);
}

TW_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
    return end_capture(stream, pGraph, 0);
}

TW_EXPORT cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph)
{
    return end_capture(stream, pGraph, 1);
}

static cudaError_t is_capturing(cudaStream_t stream, int *status, int pt)
{
    if (!status) return cr(cudaErrorInvalidValue);
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    *status = (int)tw_capture_status_of(s, NULL, NULL);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t stream, int *pCaptureStatus)
{
    return is_capturing(stream, pCaptureStatus, 0);
}

TW_EXPORT cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream, int *pCaptureStatus)
{
    return is_capturing(stream, pCaptureStatus, 1);
}

/* CUDA 13 signature (dependencies with edge data) */
static cudaError_t get_capture_info(cudaStream_t stream, int *status_out, unsigned long long *id_out,
                                    cudaGraph_t *graph_out, const cudaGraphNode_t **deps_out,
                                    const cudaGraphEdgeData **edges_out, size_t *num_deps_out, int pt)
{
    if (!status_out) return cr(cudaErrorInvalidValue);
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    uint64_t id = 0;
    tw_graph *g = NULL;
    tw_capture_status st = tw_capture_status_of(s, &id, &g);
    *status_out = (int)st;
    if (id_out) *id_out = id;
    if (graph_out) *graph_out = st == TW_CAPTURE_NONE ? NULL : g;
    /* dependency tracking is the core's; callers see an empty frontier */
    if (deps_out) *deps_out = NULL;
    if (edges_out) *edges_out = NULL;
    if (num_deps_out) *num_deps_out = 0;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, int *captureStatus_out,
                                               unsigned long long *id_out, cudaGraph_t *graph_out,
                                               const cudaGraphNode_t **dependencies_out,
                                               const cudaGraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
    return get_capture_info(stream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                            numDependencies_out, 0);
}

TW_EXPORT cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream, int *captureStatus_out,
                                                    unsigned long long *id_out, cudaGraph_t *graph_out,
                                                    const cudaGraphNode_t **dependencies_out,
                                                    const cudaGraphEdgeData **edgeData_out,
                                                    size_t *numDependencies_out)
{
    return get_capture_info(stream, captureStatus_out, id_out, graph_out, dependencies_out, edgeData_out,
                            numDependencies_out, 1);
}

static cudaError_t update_capture_deps(cudaStream_t stream, cudaGraphNode_t *deps, size_t n, unsigned flags, int pt)
{
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    if (flags > 1 || (n && !deps)) return cr(cudaErrorInvalidValue);
    if (tw_capture_status_of(s, NULL, NULL) != TW_CAPTURE_ACTIVE) return cr(cudaErrorIllegalState);
    return cudaSuccess; /* accepted: the core keeps the capture order */
}

TW_EXPORT cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t stream, cudaGraphNode_t *dependencies,
                                                          const cudaGraphEdgeData *dependencyData,
                                                          size_t numDependencies, unsigned int flags)
{
    (void)dependencyData;
    return update_capture_deps(stream, dependencies, numDependencies, flags, 0);
}

TW_EXPORT cudaError_t cudaStreamUpdateCaptureDependencies_ptsz(cudaStream_t stream, cudaGraphNode_t *dependencies,
                                                               const cudaGraphEdgeData *dependencyData,
                                                               size_t numDependencies, unsigned int flags)
{
    (void)dependencyData;
    return update_capture_deps(stream, dependencies, numDependencies, flags, 1);
}

TW_EXPORT cudaError_t cudaThreadExchangeStreamCaptureMode(int *mode)
{
    if (!mode || *mode < cudaStreamCaptureModeGlobal || *mode > cudaStreamCaptureModeRelaxed)
        return cr(cudaErrorInvalidValue);
    *mode = tw_capture_exchange_mode(*mode);
    return cudaSuccess;
}

/* ------------------------------------------------------------------ attributes */

static cudaError_t stream_get_attr(cudaStream_t stream, int attr, cudaLaunchAttributeValue *value, int pt)
{
    if (!value) return cr(cudaErrorInvalidValue);
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    memset(value, 0, sizeof(*value));
    switch (attr) {
    case cudaLaunchAttributeAccessPolicyWindow:
    case cudaLaunchAttributeSynchronizationPolicy:
    case cudaLaunchAttributeMemSyncDomainMap:
    case cudaLaunchAttributeMemSyncDomain:
        return cudaSuccess;
    case cudaLaunchAttributePriority:
        value->priority = tw_stream_priority(s);
        return cudaSuccess;
    default:
        return cr(cudaErrorInvalidValue);
    }
}

TW_EXPORT cudaError_t cudaStreamGetAttribute(cudaStream_t hStream, int attr, cudaLaunchAttributeValue *value_out)
{
    return stream_get_attr(hStream, attr, value_out, 0);
}

TW_EXPORT cudaError_t cudaStreamGetAttribute_ptsz(cudaStream_t hStream, int attr,
                                                  cudaLaunchAttributeValue *value_out)
{
    return stream_get_attr(hStream, attr, value_out, 1);
}

static cudaError_t stream_set_attr(cudaStream_t stream, int attr, const cudaLaunchAttributeValue *value, int pt)
{
    if (!value) return cr(cudaErrorInvalidValue);
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    switch (attr) {
    case cudaLaunchAttributeAccessPolicyWindow:
    case cudaLaunchAttributeSynchronizationPolicy:
    case cudaLaunchAttributeMemSyncDomainMap:
    case cudaLaunchAttributeMemSyncDomain:
    case cudaLaunchAttributePriority:
        return cudaSuccess; /* accepted; no timing effect is modelled */
    default:
        return cr(cudaErrorInvalidValue);
    }
}

TW_EXPORT cudaError_t cudaStreamSetAttribute(cudaStream_t hStream, int attr, const cudaLaunchAttributeValue *value)
{
    return stream_set_attr(hStream, attr, value, 0);
}

TW_EXPORT cudaError_t cudaStreamSetAttribute_ptsz(cudaStream_t hStream, int attr,
                                                  const cudaLaunchAttributeValue *value)
{
    return stream_set_attr(hStream, attr, value, 1);
}

static cudaError_t stream_copy_attrs(cudaStream_t dst, cudaStream_t src, int pt)
{
    if (!tw_stream_get(dst, pt) || !tw_stream_get(src, pt)) return cr(cudaErrorInvalidResourceHandle);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaStreamCopyAttributes(cudaStream_t dst, cudaStream_t src)
{
    return stream_copy_attrs(dst, src, 0);
}

TW_EXPORT cudaError_t cudaStreamCopyAttributes_ptsz(cudaStream_t dst, cudaStream_t src)
{
    return stream_copy_attrs(dst, src, 1);
}

static cudaError_t attach_mem(cudaStream_t stream, void *devPtr, unsigned flags, int pt)
{
    if (!tw_stream_get(stream, pt)) return cr(cudaErrorInvalidResourceHandle);
    if (!devPtr) return cr(cudaErrorInvalidValue);
    if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost && flags != cudaMemAttachSingle)
        return cr(cudaErrorInvalidValue);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaStreamAttachMemAsync(cudaStream_t stream, void *devPtr, size_t length, unsigned int flags)
{
    (void)length;
    return attach_mem(stream, devPtr, flags, 0);
}

TW_EXPORT cudaError_t cudaStreamAttachMemAsync_ptsz(cudaStream_t stream, void *devPtr, size_t length,
                                                    unsigned int flags)
{
    (void)length;
    return attach_mem(stream, devPtr, flags, 1);
}
