/* Inert libnvrtc.so.13: version, error strings and the supported-architecture list (read off the real
 * NVRTC 13.0, which needs no GPU for these); compiling is a stub (NVRTC_ERROR_INTERNAL_ERROR). */
#include "inert_common.h"

static const int k_archs[] = {75, 80, 86, 87, 88, 89, 90, 100, 103, 110, 120, 121};
#define N_ARCHS ((int)(sizeof k_archs / sizeof k_archs[0]))

TW_EXPORT int nvrtcVersion(int *major, int *minor)
{
    if (!major || !minor) return 3; /* NVRTC_ERROR_INVALID_INPUT */
    *major = 13;
    *minor = 0;
    return 0;
}

TW_EXPORT int nvrtcGetNumSupportedArchs(int *n)
{
    if (!n) return 3;
    *n = N_ARCHS;
    return 0;
}

TW_EXPORT int nvrtcGetSupportedArchs(int *archs)
{
    if (!archs) return 3;
    for (int i = 0; i < N_ARCHS; i++) archs[i] = k_archs[i];
    return 0;
}

TW_EXPORT const char *nvrtcGetErrorString(int result)
{
    switch (result) {
    case 0: return "NVRTC_SUCCESS";
    case 1: return "NVRTC_ERROR_OUT_OF_MEMORY";
    case 2: return "NVRTC_ERROR_PROGRAM_CREATION_FAILURE";
    case 3: return "NVRTC_ERROR_INVALID_INPUT";
    case 4: return "NVRTC_ERROR_INVALID_PROGRAM";
    case 5: return "NVRTC_ERROR_INVALID_OPTION";
    case 6: return "NVRTC_ERROR_COMPILATION";
    case 7: return "NVRTC_ERROR_BUILTIN_OPERATION_FAILURE";
    case 8: return "NVRTC_ERROR_NO_NAME_EXPRESSIONS_AFTER_COMPILATION";
    case 9: return "NVRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION";
    case 10: return "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID";
    case 11: return "NVRTC_ERROR_INTERNAL_ERROR";
    case 12: return "NVRTC_ERROR_TIME_FILE_WRITE_FAILED";
    case 13: return "NVRTC_ERROR_NO_PCH_CREATE_ATTEMPTED";
    case 14: return "NVRTC_ERROR_PCH_CREATE_HEAP_EXHAUSTED";
    case 15: return "NVRTC_ERROR_PCH_CREATE";
    case 16: return "NVRTC_ERROR_CANCELLED";
    case 17: return "NVRTC_ERROR_TIME_TRACE_FILE_WRITE_FAILED";
    default: return "NVRTC_ERROR unknown";
    }
}
