/* Inert libcusparseLt.so.0: version/property/error strings and library init; compute is a stub
 * (CUSPARSE_STATUS_NOT_SUPPORTED). Version of the wheel torch 2.11 pins: 0.8.0. */
#include <string.h>

#include "inert_common.h"

TW_EXPORT const char *cusparseLtGetErrorName(int status)
{
    switch (status) {
    case 0: return "CUSPARSE_STATUS_SUCCESS";
    case 1: return "CUSPARSE_STATUS_NOT_INITIALIZED";
    case 2: return "CUSPARSE_STATUS_ALLOC_FAILED";
    case 3: return "CUSPARSE_STATUS_INVALID_VALUE";
    case 4: return "CUSPARSE_STATUS_ARCH_MISMATCH";
    case 7: return "CUSPARSE_STATUS_INTERNAL_ERROR";
    case 10: return "CUSPARSE_STATUS_NOT_SUPPORTED";
    case 11: return "CUSPARSE_STATUS_INSUFFICIENT_RESOURCES";
    default: return "CUSPARSE_STATUS_UNKNOWN";
    }
}

TW_EXPORT const char *cusparseLtGetErrorString(int status)
{
    return status == 10 ? "operation not supported (timewarp: cuSPARSELt is an inert stand-in)"
                        : cusparseLtGetErrorName(status);
}

TW_EXPORT int cusparseLtGetVersion(const void *handle, int *version)
{
    (void)handle;
    if (!version) return 3;
    *version = 0 * 1000 + 8 * 100 + 0;
    return 0;
}

TW_EXPORT int cusparseLtGetProperty(int type, int *value)
{
    return tw_inert_property(type, value, 0, 8, 0) ? 3 : 0;
}

/* cusparseLtHandle_t is caller storage (an opaque 1024-byte block): mark it, nothing else. */
TW_EXPORT int cusparseLtInit(void *handle)
{
    if (!handle) return 3;
    memset(handle, 0, 8);
    memcpy(handle, "twLtInit", 8);
    return 0;
}

TW_EXPORT int cusparseLtDestroy(const void *handle)
{
    return handle ? 0 : 3;
}
