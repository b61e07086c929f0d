/* Inert libcufft.so.12: version/property and plan-handle life cycle (cufftCreate/Destroy/SetStream ...);
 * planning and execution are stubs (CUFFT_NOT_SUPPORTED), so torch.fft raises a clean error. 12.0.0. */
#include "inert_common.h"

#define CUFFT_SUCCESS 0
#define CUFFT_INVALID_PLAN 1
#define CUFFT_INVALID_VALUE 4

static int g_next_plan = 1;

TW_EXPORT int cufftGetVersion(int *version)
{
    if (!version) return CUFFT_INVALID_VALUE;
    *version = 12 * 1000 + 0 * 100 + 0;
    return CUFFT_SUCCESS;
}

TW_EXPORT int cufftGetProperty(int type, int *value)
{
    return tw_inert_property(type, value, 12, 0, 0) ? CUFFT_INVALID_VALUE : CUFFT_SUCCESS;
}

/* cufftHandle is an int */
TW_EXPORT int cufftCreate(int *plan)
{
    if (!plan) return CUFFT_INVALID_VALUE;
    *plan = __atomic_fetch_add(&g_next_plan, 1, __ATOMIC_RELAXED);
    return CUFFT_SUCCESS;
}

TW_EXPORT int cufftDestroy(int plan) { return plan > 0 ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN; }
TW_EXPORT int cufftSetStream(int plan, void *stream) { (void)stream; return plan > 0 ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN; }
TW_EXPORT int cufftSetAutoAllocation(int plan, int autoAllocate)
{
    (void)autoAllocate;
    return plan > 0 ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
}
TW_EXPORT int cufftSetWorkArea(int plan, void *workArea)
{
    (void)workArea;
    return plan > 0 ? CUFFT_SUCCESS : CUFFT_INVALID_PLAN;
}
