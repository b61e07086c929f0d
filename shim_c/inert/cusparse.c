/* Inert libcusparse.so.12: version/property/error strings and handle life cycle; compute is a stub
 * (CUSPARSE_STATUS_NOT_SUPPORTED). Version of the CUDA 13.0 wheel: 12.6.3. */
#include "inert_common.h"

#define CUSPARSE_SUCCESS 0
#define CUSPARSE_NOT_INITIALIZED 1
#define CUSPARSE_INVALID_VALUE 3
#define CUSPARSE_ALLOC_FAILED 2
#define TW_CUSPARSE_MAGIC 0x7477637370727365ull

static const char *status_name(int s)
{
    switch (s) {
    case 0: return "CUSPARSE_STATUS_SUCCESS";
    case 1: return "CUSPARSE_STATUS_NOT_INITIALIZED";
    case 2: return "CUSPARSE_STATUS_ALLOC_FAILED";
    case 3: return "CUSPARSE_STATUS_INVALID_VALUE";
    case 4: return "CUSPARSE_STATUS_ARCH_MISMATCH";
    case 5: return "CUSPARSE_STATUS_MAPPING_ERROR";
    case 6: return "CUSPARSE_STATUS_EXECUTION_FAILED";
    case 7: return "CUSPARSE_STATUS_INTERNAL_ERROR";
    case 8: return "CUSPARSE_STATUS_MATRIX_TYPE_NOT_SUPPORTED";
    case 9: return "CUSPARSE_STATUS_ZERO_PIVOT";
    case 10: return "CUSPARSE_STATUS_NOT_SUPPORTED";
    case 11: return "CUSPARSE_STATUS_INSUFFICIENT_RESOURCES";
    default: return "CUSPARSE_STATUS_UNKNOWN";
    }
}

static const char *status_text(int s)
{
    switch (s) {
    case 0: return "success";
    case 1: return "library not initialized";
    case 2: return "resource allocation failed";
    case 3: return "invalid value";
    case 4: return "device architecture mismatch";
    case 5: return "memory mapping error";
    case 6: return "execution failed";
    case 7: return "internal error";
    case 8: return "matrix type not supported";
    case 9: return "zero pivot";
    case 10: return "operation not supported (timewarp: cuSPARSE is an inert stand-in)";
    case 11: return "insufficient resources";
    default: return "unknown status";
    }
}

TW_EXPORT const char *cusparseGetErrorName(int status) { return status_name(status); }
TW_EXPORT const char *cusparseGetErrorString(int status) { return status_text(status); }

TW_EXPORT int cusparseGetProperty(int type, int *value)
{
    return tw_inert_property(type, value, 12, 6, 3) ? CUSPARSE_INVALID_VALUE : CUSPARSE_SUCCESS;
}

TW_EXPORT int cusparseGetVersion(void *handle, int *version)
{
    (void)handle;
    if (!version) return CUSPARSE_INVALID_VALUE;
    *version = 12 * 1000 + 6 * 100 + 3;
    return CUSPARSE_SUCCESS;
}

TW_EXPORT int cusparseCreate(void **handle)
{
    if (!handle) return CUSPARSE_INVALID_VALUE;
    *handle = tw_inert_handle_new(TW_CUSPARSE_MAGIC);
    return *handle ? CUSPARSE_SUCCESS : CUSPARSE_ALLOC_FAILED;
}

TW_EXPORT int cusparseDestroy(void *handle)
{
    if (!tw_inert_handle_ok(handle, TW_CUSPARSE_MAGIC)) return CUSPARSE_NOT_INITIALIZED;
    tw_inert_handle_free(handle);
    return CUSPARSE_SUCCESS;
}

TW_EXPORT int cusparseSetStream(void *handle, void *stream)
{
    if (!tw_inert_handle_ok(handle, TW_CUSPARSE_MAGIC)) return CUSPARSE_NOT_INITIALIZED;
    ((tw_inert_handle *)handle)->stream = stream;
    return CUSPARSE_SUCCESS;
}

TW_EXPORT int cusparseGetStream(void *handle, void **stream)
{
    if (!tw_inert_handle_ok(handle, TW_CUSPARSE_MAGIC)) return CUSPARSE_NOT_INITIALIZED;
    if (!stream) return CUSPARSE_INVALID_VALUE;
    *stream = ((tw_inert_handle *)handle)->stream;
    return CUSPARSE_SUCCESS;
}

TW_EXPORT int cusparseSetPointerMode(void *handle, int mode)
{
    if (!tw_inert_handle_ok(handle, TW_CUSPARSE_MAGIC)) return CUSPARSE_NOT_INITIALIZED;
    if (mode != 0 && mode != 1) return CUSPARSE_INVALID_VALUE;
    ((tw_inert_handle *)handle)->pointer_mode = mode;
    return CUSPARSE_SUCCESS;
}

TW_EXPORT int cusparseGetPointerMode(void *handle, int *mode)
{
    if (!tw_inert_handle_ok(handle, TW_CUSPARSE_MAGIC)) return CUSPARSE_NOT_INITIALIZED;
    if (!mode) return CUSPARSE_INVALID_VALUE;
    *mode = ((tw_inert_handle *)handle)->pointer_mode;
    return CUSPARSE_SUCCESS;
}
