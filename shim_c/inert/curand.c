/* Inert libcurand.so.10: version/property only; generators are stubs (CURAND_STATUS_ARCH_MISMATCH, the
 * library's "GPU does not support requested feature"; cuRAND has no "not supported" status). 10.4.0. */
#include "inert_common.h"

TW_EXPORT int curandGetVersion(int *version)
{
    if (!version) return 104; /* CURAND_STATUS_OUT_OF_RANGE */
    *version = 10 * 1000 + 4 * 100 + 0;
    return 0;
}

TW_EXPORT int curandGetProperty(int type, int *value)
{
    return tw_inert_property(type, value, 10, 4, 0) ? 104 : 0;
}
