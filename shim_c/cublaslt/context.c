/* Fake cuBLASLt: handles, versions, status strings, logger, heuristics cache capacity. */
#include <stdio.h>
#include <stdlib.h>
#include "cublaslt_types.h"

TW_EXPORT cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle)
{
    if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
    tw_init();
    if (tw_device_count() <= 0) return CUBLAS_STATUS_NOT_INITIALIZED;
    struct cublasLtContext *h = calloc(1, sizeof *h);
    if (!h) return CUBLAS_STATUS_ALLOC_FAILED;
    h->magic = TW_LT_MAGIC_HANDLE;
    h->device = tw_get_device();
    *handle = h;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle)
{
    if (!tw_lt_handle_ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->magic = 0;
    free(handle);
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT size_t cublasLtGetVersion(void) { return TW_CUBLASLT_VERSION; }
TW_EXPORT size_t cublasLtGetCudartVersion(void) { return TW_CUBLAS_CUDART_VERSION; }
TW_EXPORT const char *cublasLtGetStatusName(cublasStatus_t status) { return tw_blas_status_name(status); }
TW_EXPORT const char *cublasLtGetStatusString(cublasStatus_t status) { return tw_blas_status_string(status); }

TW_EXPORT cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int *value)
{
    if (!value) return CUBLAS_STATUS_INVALID_VALUE;
    switch ((int)type) {
    case MAJOR_VERSION: *value = TW_CUBLAS_VER_MAJOR; return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION: *value = TW_CUBLAS_VER_MINOR; return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = TW_CUBLAS_VER_PATCH; return CUBLAS_STATUS_SUCCESS;
    default: return CUBLAS_STATUS_INVALID_VALUE;
    }
}

/* ---------------------------------------------------------------- heuristics cache (no cache: the capacity only) */
static size_t g_cache_capacity = 8192;

TW_EXPORT cublasStatus_t cublasLtHeuristicsCacheGetCapacity(size_t *capacity)
{
    if (!capacity) return CUBLAS_STATUS_INVALID_VALUE;
    *capacity = __atomic_load_n(&g_cache_capacity, __ATOMIC_RELAXED);
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtHeuristicsCacheSetCapacity(size_t capacity)
{
    __atomic_store_n(&g_cache_capacity, capacity, __ATOMIC_RELAXED);
    return CUBLAS_STATUS_SUCCESS;
}

/* ---------------------------------------------------------------- logger: settings accepted, nothing is logged */
typedef void (*cublasLtLoggerCallback_t)(int logLevel, const char *functionName, const char *message);
static cublasLtLoggerCallback_t g_logger_cb;
static int g_logger_level, g_logger_mask;

TW_EXPORT cublasStatus_t cublasLtLoggerSetCallback(cublasLtLoggerCallback_t callback)
{
    __atomic_store_n(&g_logger_cb, callback, __ATOMIC_RELEASE);
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtLoggerSetFile(FILE *file)
{
    (void)file;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtLoggerOpenFile(const char *logFile)
{
    if (!logFile) return CUBLAS_STATUS_INVALID_VALUE;
    TW_DEBUG("cublasLtLoggerOpenFile(%s): cuBLASLt logging is not emulated", logFile);
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtLoggerSetLevel(int level)
{
    if (level < 0 || level > 5) return CUBLAS_STATUS_INVALID_VALUE;
    g_logger_level = level;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtLoggerSetMask(int mask)
{
    if (mask < 0 || mask > 31) return CUBLAS_STATUS_INVALID_VALUE;
    g_logger_mask = mask;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtLoggerForceDisable(void)
{
    g_logger_level = 0;
    g_logger_mask = 0;
    return CUBLAS_STATUS_SUCCESS;
}
