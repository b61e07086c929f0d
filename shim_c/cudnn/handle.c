/* cuDNN handles: the device they were created on and the stream their work goes to. That is all the state a
 * handle has here; every launch goes through the core's streams. */
#include <stdlib.h>

#include "cudnn_internal.h"

twdnn_handle *twdnn_handle_get(void *p)
{
    twdnn_handle *h = p;
    return (h && h->magic == TWDNN_HANDLE_MAGIC) ? h : NULL;
}

tw_stream *twdnn_handle_stream(twdnn_handle *h)
{
    /* cuDNN is built without per-thread default streams: a NULL stream is the legacy one */
    return tw_stream_get(h->stream, 0);
}

TW_EXPORT int cudnnCreate(void **handle)
{
    tw_init();
    if (!handle)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnCreate: handle is NULL");
    if (tw_device_count() <= 0)
        return twdnn_fail(TWDNN_STATUS_NOT_INITIALIZED, "cudnnCreate: no CUDA device");
    twdnn_handle *h = calloc(1, sizeof *h);
    if (!h)
        return twdnn_fail(TWDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED, "cudnnCreate: out of host memory");
    h->magic = TWDNN_HANDLE_MAGIC;
    h->device = tw_get_device();
    h->stream = NULL;
    *handle = h;
    TW_DEBUG("cudnn: cudnnCreate -> %p (device %d)", (void *)h, h->device);
    return TWDNN_STATUS_SUCCESS;
}

TW_EXPORT int cudnnDestroy(void *handle)
{
    twdnn_handle *h = twdnn_handle_get(handle);
    if (!h)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnDestroy: not a cuDNN handle");
    h->magic = 0;
    free(h);
    return TWDNN_STATUS_SUCCESS;
}

TW_EXPORT int cudnnSetStream(void *handle, void *stream)
{
    twdnn_handle *h = twdnn_handle_get(handle);
    if (!h)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnSetStream: not a cuDNN handle");
    if (stream && !tw_stream_get(stream, 0))
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnSetStream: %p is not a live stream", stream);
    h->stream = stream;
    return TWDNN_STATUS_SUCCESS;
}

TW_EXPORT int cudnnGetStream(void *handle, void **stream)
{
    twdnn_handle *h = twdnn_handle_get(handle);
    if (!h)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM, "cudnnGetStream: not a cuDNN handle");
    if (!stream)
        return twdnn_fail(TWDNN_STATUS_BAD_PARAM_NULL_POINTER, "cudnnGetStream: stream is NULL");
    *stream = h->stream;
    return TWDNN_STATUS_SUCCESS;
}
