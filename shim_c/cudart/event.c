/* Event management (and IPC event handles). */
#include <string.h>
#include <unistd.h>

#include "cudart_internal.h"

TW_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    if (!event) return cr(cudaErrorInvalidValue);
    if (flags & ~(unsigned)(cudaEventBlockingSync | cudaEventDisableTiming | cudaEventInterprocess))
        return cr(cudaErrorInvalidValue);
    /* an interprocess event must have timing disabled */
    if ((flags & cudaEventInterprocess) && !(flags & cudaEventDisableTiming)) return cr(cudaErrorInvalidValue);
    tw_init();
    tw_event *e = NULL;
    tw_err err = tw_event_create(flags, &e);
    if (err != TW_OK) return cr_tw(err);
    *event = e;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    return cudaEventCreateWithFlags(event, cudaEventDefault);
}

static cudaError_t event_record(cudaEvent_t event, cudaStream_t stream, unsigned flags, int pt)
{
    if (flags & ~(unsigned)cudaEventRecordExternal) return cr(cudaErrorInvalidValue);
    if (!event || !tw_event_valid(event)) return cr(cudaErrorInvalidResourceHandle);
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    return cr_tw(tw_event_record(event, s));
}

TW_EXPORT cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    return event_record(event, stream, 0, 0);
}

TW_EXPORT cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
    return event_record(event, stream, 0, 1);
}

TW_EXPORT cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
    return event_record(event, stream, flags, 0);
}

TW_EXPORT cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
    return event_record(event, stream, flags, 1);
}

TW_EXPORT cudaError_t cudaEventQuery(cudaEvent_t event)
{
    if (!event || !tw_event_valid(event)) return cr(cudaErrorInvalidResourceHandle);
    return cr_tw(tw_event_query(event));
}

TW_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    if (!event || !tw_event_valid(event)) return cr(cudaErrorInvalidResourceHandle);
    return cr_tw(tw_event_synchronize(event));
}

TW_EXPORT cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    if (!ms) return cr(cudaErrorInvalidValue);
    if (!start || !end || !tw_event_valid(start) || !tw_event_valid(end))
        return cr(cudaErrorInvalidResourceHandle);
    return cr_tw(tw_event_elapsed_ms(start, end, ms));
}

TW_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    if (!event || !tw_event_valid(event)) return cr(cudaErrorInvalidResourceHandle);
    return cr_tw(tw_event_destroy(event));
}

/* ------------------------------------------------------------------ IPC event handles */

#define IPC_EVENT_MAGIC 0x45435049u /* "IPCE" */

typedef struct {
    uint32_t magic;
    int32_t pid;
    uint64_t event;
    char unused[CUDART_IPC_HANDLE_SIZE - 16];
} ipc_event_payload;
_Static_assert(sizeof(ipc_event_payload) == CUDART_IPC_HANDLE_SIZE, "IPC event handle payload size");

TW_EXPORT cudaError_t cudaIpcGetEventHandle(cudaIpcEventHandle_t *handle, cudaEvent_t event)
{
    if (!handle) return cr(cudaErrorInvalidValue);
    if (!event || !tw_event_valid(event)) return cr(cudaErrorInvalidResourceHandle);
    ipc_event_payload p;
    memset(&p, 0, sizeof(p));
    p.magic = IPC_EVENT_MAGIC;
    p.pid = (int32_t)getpid();
    p.event = (uint64_t)(uintptr_t)event;
    memcpy(handle, &p, sizeof(p));
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaIpcOpenEventHandle(cudaEvent_t *event, cudaIpcEventHandle_t handle)
{
    if (!event) return cr(cudaErrorInvalidValue);
    tw_init();
    ipc_event_payload p;
    memcpy(&p, &handle, sizeof(p));
    if (p.magic != IPC_EVENT_MAGIC) return cr(cudaErrorInvalidValue);
    tw_event *e = (tw_event *)(uintptr_t)p.event;
    if (p.pid == (int32_t)getpid()) {
        /* same process: the exporter's event itself */
        if (!tw_event_valid(e)) return cr(cudaErrorInvalidResourceHandle);
        *event = e;
        return cudaSuccess;
    }
    /* another process's event: a local event that was never recorded (complete; waits on it return at once) */
    tw_event *local = NULL;
    tw_err err = tw_event_create(cudaEventDisableTiming | cudaEventInterprocess, &local);
    if (err != TW_OK) return cr_tw(err);
    *event = local;
    return cudaSuccess;
}
