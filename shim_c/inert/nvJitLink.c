/* Inert libnvJitLink.so.13: version only; linking is a stub (NVJITLINK_ERROR_INTERNAL). */
#include "inert_common.h"

TW_EXPORT int nvJitLinkVersion(unsigned int *major, unsigned int *minor)
{
    if (!major || !minor) return 10; /* NVJITLINK_ERROR_NULL_INPUT */
    *major = 13;
    *minor = 0;
    return 0;
}
