/* Events: CUevent is the core's tw_event *; timing is virtual time. */
#include "cu_internal.h"

TW_EXPORT CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    cu_enter();
    if (!phEvent || (Flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS)))
        return CUDA_ERROR_INVALID_VALUE;
    /* an interprocess event must not record timing */
    if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
        return CUDA_ERROR_INVALID_VALUE;
    tw_event *e = NULL;
    tw_err r = tw_event_create(Flags, &e);
    if (r != TW_OK)
        return cu_err(r);
    *phEvent = e;
    return CUDA_SUCCESS;
}

static CUresult destroy(CUevent e)
{
    cu_enter();
    if (!e || !tw_event_valid(e))
        return CUDA_ERROR_INVALID_HANDLE;
    return cu_err(tw_event_destroy(e));
}
TW_EXPORT CUresult cuEventDestroy(CUevent e) { return destroy(e); }
TW_EXPORT CUresult cuEventDestroy_v2(CUevent e) { return destroy(e); }

static CUresult record(CUevent e, CUstream h, unsigned int flags, int pt)
{
    cu_enter();
    if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
        return CUDA_ERROR_INVALID_VALUE;
    if (!e || !tw_event_valid(e))
        return CUDA_ERROR_INVALID_HANDLE;
    tw_stream *s = cu_stream(h, pt);
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    return cu_err(tw_event_record(e, s));
}
TW_EXPORT CUresult cuEventRecord(CUevent e, CUstream h) { return record(e, h, 0, 0); }
TW_EXPORT CUresult cuEventRecord_ptsz(CUevent e, CUstream h) { return record(e, h, 0, 1); }
TW_EXPORT CUresult cuEventRecordWithFlags(CUevent e, CUstream h, unsigned int f) { return record(e, h, f, 0); }
TW_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent e, CUstream h, unsigned int f) { return record(e, h, f, 1); }

TW_EXPORT CUresult cuEventQuery(CUevent e)
{
    cu_enter();
    if (!e || !tw_event_valid(e))
        return CUDA_ERROR_INVALID_HANDLE;
    return cu_err(tw_event_query(e));
}

TW_EXPORT CUresult cuEventSynchronize(CUevent e)
{
    cu_enter();
    if (!e || !tw_event_valid(e))
        return CUDA_ERROR_INVALID_HANDLE;
    return cu_err(tw_event_synchronize(e));
}

static CUresult elapsed(float *ms, CUevent a, CUevent b)
{
    cu_enter();
    if (!ms)
        return CUDA_ERROR_INVALID_VALUE;
    if (!a || !b || !tw_event_valid(a) || !tw_event_valid(b))
        return CUDA_ERROR_INVALID_HANDLE;
    return cu_err(tw_event_elapsed_ms(a, b, ms));
}
TW_EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) { return elapsed(ms, a, b); }
TW_EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) { return elapsed(ms, a, b); }
