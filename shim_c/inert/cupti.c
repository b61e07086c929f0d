/* Inert libcupti.so.13: version, result strings, timestamps on the virtual clock, and the calls torch's
 * profiler (kineto) makes, answered so that it falls back to a CPU-only trace: subscribing and enabling
 * activity kinds return CUPTI_ERROR_NOT_SUPPORTED, bookkeeping calls succeed, there are never records. */
#include "inert_common.h"

#define CUPTI_SUCCESS 0
#define CUPTI_ERROR_INVALID_PARAMETER 1
#define CUPTI_ERROR_MAX_LIMIT_REACHED 12
#define CUPTI_ERROR_NOT_SUPPORTED 27

static const char *result_name(int r)
{
    switch (r) {
    case 0: return "CUPTI_SUCCESS";
    case 1: return "CUPTI_ERROR_INVALID_PARAMETER";
    case 2: return "CUPTI_ERROR_INVALID_DEVICE";
    case 3: return "CUPTI_ERROR_INVALID_CONTEXT";
    case 4: return "CUPTI_ERROR_INVALID_EVENT_DOMAIN_ID";
    case 5: return "CUPTI_ERROR_INVALID_EVENT_ID";
    case 6: return "CUPTI_ERROR_INVALID_EVENT_NAME";
    case 7: return "CUPTI_ERROR_INVALID_OPERATION";
    case 8: return "CUPTI_ERROR_OUT_OF_MEMORY";
    case 9: return "CUPTI_ERROR_HARDWARE";
    case 10: return "CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT";
    case 11: return "CUPTI_ERROR_API_NOT_IMPLEMENTED";
    case 12: return "CUPTI_ERROR_MAX_LIMIT_REACHED";
    case 13: return "CUPTI_ERROR_NOT_READY";
    case 14: return "CUPTI_ERROR_NOT_COMPATIBLE";
    case 15: return "CUPTI_ERROR_NOT_INITIALIZED";
    case 16: return "CUPTI_ERROR_INVALID_METRIC_ID";
    case 17: return "CUPTI_ERROR_INVALID_METRIC_NAME";
    case 18: return "CUPTI_ERROR_QUEUE_EMPTY";
    case 19: return "CUPTI_ERROR_INVALID_HANDLE";
    case 20: return "CUPTI_ERROR_INVALID_STREAM";
    case 21: return "CUPTI_ERROR_INVALID_KIND";
    case 22: return "CUPTI_ERROR_INVALID_EVENT_VALUE";
    case 23: return "CUPTI_ERROR_DISABLED";
    case 24: return "CUPTI_ERROR_INVALID_MODULE";
    case 25: return "CUPTI_ERROR_INVALID_METRIC_VALUE";
    case 26: return "CUPTI_ERROR_HARDWARE_BUSY";
    case 27: return "CUPTI_ERROR_NOT_SUPPORTED";
    case 28: return "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED";
    case 29: return "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE";
    case 30: return "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES";
    case 31: return "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS";
    case 32: return "CUPTI_ERROR_CDP_TRACING_NOT_SUPPORTED";
    case 33: return "CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED";
    case 34: return "CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE";
    case 35: return "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
    case 36: return "CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED";
    case 37: return "CUPTI_ERROR_OPENACC_UNDEFINED_ROUTINE";
    case 38: return "CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED";
    case 39: return "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
    case 40: return "CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES";
    case 41: return "CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED";
    case 42: return "CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED";
    case 43: return "CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED";
    case 44: return "CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED";
    case 45: return "CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED";
    case 46: return "CUPTI_ERROR_INVALID_CHIP_NAME";
    case 999: return "CUPTI_ERROR_UNKNOWN";
    default: return NULL;
    }
}

TW_EXPORT int cuptiGetResultString(int result, const char **str)
{
    if (!str) return CUPTI_ERROR_INVALID_PARAMETER;
    const char *s = result_name(result);
    if (!s) { *str = "CUPTI_ERROR_UNKNOWN"; return CUPTI_ERROR_INVALID_PARAMETER; }
    *str = s;
    return CUPTI_SUCCESS;
}

/* CUPTI 13.0 (CUPTI_API_VERSION 130001, as the real library reports) */
TW_EXPORT int cuptiGetVersion(uint32_t *version)
{
    if (!version) return CUPTI_ERROR_INVALID_PARAMETER;
    *version = 130001;
    return CUPTI_SUCCESS;
}

TW_EXPORT int cuptiGetTimestamp(uint64_t *timestamp)
{
    if (!timestamp) return CUPTI_ERROR_INVALID_PARAMETER;
    *timestamp = tw_now();
    return CUPTI_SUCCESS;
}

TW_EXPORT int cuptiSubscribe(void **subscriber, void *callback, void *userdata)
{
    (void)callback; (void)userdata;
    if (subscriber) *subscriber = NULL;
    TW_DEBUG("cupti: cuptiSubscribe -> CUPTI_ERROR_NOT_SUPPORTED (no GPU activity to trace)");
    return CUPTI_ERROR_NOT_SUPPORTED;
}

TW_EXPORT int cuptiUnsubscribe(void *subscriber) { (void)subscriber; return CUPTI_SUCCESS; }
TW_EXPORT int cuptiFinalize(void) { return CUPTI_SUCCESS; }
TW_EXPORT int cuptiActivityFlushAll(uint32_t flag) { (void)flag; return CUPTI_SUCCESS; }

TW_EXPORT int cuptiActivityGetNumDroppedRecords(void *context, uint32_t streamId, size_t *dropped)
{
    (void)context; (void)streamId;
    if (!dropped) return CUPTI_ERROR_INVALID_PARAMETER;
    *dropped = 0;
    return CUPTI_SUCCESS;
}

TW_EXPORT int cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes, void **record)
{
    (void)buffer; (void)validBufferSizeBytes;
    if (record) *record = NULL;
    return CUPTI_ERROR_MAX_LIMIT_REACHED; /* no (more) records */
}

TW_EXPORT int cuptiActivityPushExternalCorrelationId(int kind, uint64_t id)
{
    (void)kind; (void)id;
    return CUPTI_SUCCESS;
}

TW_EXPORT int cuptiActivityPopExternalCorrelationId(int kind, uint64_t *lastId)
{
    (void)kind;
    if (lastId) *lastId = 0;
    return CUPTI_SUCCESS;
}
