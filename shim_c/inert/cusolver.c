/* Inert libcusolver.so.12: version/property and dense-handle life cycle; solvers are stubs
 * (CUSOLVER_STATUS_NOT_SUPPORTED = 9). 12.0.4. */
#include "inert_common.h"

#define CUSOLVER_SUCCESS 0
#define CUSOLVER_NOT_INITIALIZED 1
#define CUSOLVER_ALLOC_FAILED 2
#define CUSOLVER_INVALID_VALUE 3
#define TW_CUSOLVER_MAGIC 0x747763736f6c7672ull

TW_EXPORT int cusolverGetVersion(int *version)
{
    if (!version) return CUSOLVER_INVALID_VALUE;
    *version = 12 * 1000 + 0 * 100 + 4;
    return CUSOLVER_SUCCESS;
}

TW_EXPORT int cusolverGetProperty(int type, int *value)
{
    return tw_inert_property(type, value, 12, 0, 4) ? CUSOLVER_INVALID_VALUE : CUSOLVER_SUCCESS;
}

static int create(void **handle)
{
    if (!handle) return CUSOLVER_INVALID_VALUE;
    *handle = tw_inert_handle_new(TW_CUSOLVER_MAGIC);
    return *handle ? CUSOLVER_SUCCESS : CUSOLVER_ALLOC_FAILED;
}

static int destroy(void *handle)
{
    if (!tw_inert_handle_ok(handle, TW_CUSOLVER_MAGIC)) return CUSOLVER_NOT_INITIALIZED;
    tw_inert_handle_free(handle);
    return CUSOLVER_SUCCESS;
}

static int set_stream(void *handle, void *stream)
{
    if (!tw_inert_handle_ok(handle, TW_CUSOLVER_MAGIC)) return CUSOLVER_NOT_INITIALIZED;
    ((tw_inert_handle *)handle)->stream = stream;
    return CUSOLVER_SUCCESS;
}

static int get_stream(void *handle, void **stream)
{
    if (!tw_inert_handle_ok(handle, TW_CUSOLVER_MAGIC)) return CUSOLVER_NOT_INITIALIZED;
    if (!stream) return CUSOLVER_INVALID_VALUE;
    *stream = ((tw_inert_handle *)handle)->stream;
    return CUSOLVER_SUCCESS;
}

TW_EXPORT int cusolverDnCreate(void **handle) { return create(handle); }
TW_EXPORT int cusolverDnDestroy(void *handle) { return destroy(handle); }
TW_EXPORT int cusolverDnSetStream(void *handle, void *stream) { return set_stream(handle, stream); }
TW_EXPORT int cusolverDnGetStream(void *handle, void **stream) { return get_stream(handle, stream); }
TW_EXPORT int cusolverSpCreate(void **handle) { return create(handle); }
TW_EXPORT int cusolverSpDestroy(void *handle) { return destroy(handle); }
TW_EXPORT int cusolverSpSetStream(void *handle, void *stream) { return set_stream(handle, stream); }
