/* Inert libnvshmem_host.so.3: version queries, and the non-status functions answered as "not initialized"
 * (PE queries -1, symmetric allocations NULL); initialization and communication are stubs
 * (NVSHMEMX_ERROR_NOT_SUPPORTED = 3). NVSHMEM 3.4.5, OpenSHMEM 1.3. */
#include <stdio.h>

#include "inert_common.h"

TW_EXPORT void nvshmem_info_get_version(int *major, int *minor)
{
    if (major) *major = 1;
    if (minor) *minor = 3;
}

TW_EXPORT void nvshmem_info_get_name(char *name)
{
    if (name) snprintf(name, 256, "NVSHMEM v3.4.5");
}

TW_EXPORT void nvshmemx_vendor_get_version_info(int *major, int *minor, int *patch)
{
    if (major) *major = 3;
    if (minor) *minor = 4;
    if (patch) *patch = 5;
}

TW_EXPORT int nvshmemx_init_status(void) { return 0; }  /* NVSHMEM_STATUS_NOT_INITIALIZED */
TW_EXPORT int nvshmemid_init_status(void) { return 0; }
TW_EXPORT int nvshmem_my_pe(void) { return -1; }
TW_EXPORT int nvshmem_n_pes(void) { return -1; }
TW_EXPORT int nvshmem_team_my_pe(int team) { (void)team; return -1; }
TW_EXPORT int nvshmem_team_n_pes(int team) { (void)team; return -1; }
TW_EXPORT void nvshmem_query_thread(int *provided) { if (provided) *provided = 0; }
TW_EXPORT void *nvshmem_malloc(size_t size) { (void)size; return NULL; }
TW_EXPORT void *nvshmem_calloc(size_t n, size_t size) { (void)n; (void)size; return NULL; }
TW_EXPORT void *nvshmem_align(size_t alignment, size_t size) { (void)alignment; (void)size; return NULL; }
TW_EXPORT void *nvshmem_ptr(const void *dest, int pe) { (void)dest; (void)pe; return NULL; }
TW_EXPORT void *nvshmemx_mc_ptr(int team, const void *ptr) { (void)team; (void)ptr; return NULL; }
