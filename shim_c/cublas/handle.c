/* Fake cuBLAS: handles, streams, workspace, modes, versions, status strings, logging. */
#include <stdlib.h>
#include <string.h>
#include "cublas_internal.h"

TW_EXPORT cublasStatus_t cublasCreate_v2(cublasHandle_t *handle)
{
    if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
    tw_init();
    if (tw_device_count() <= 0) return CUBLAS_STATUS_NOT_INITIALIZED;
    struct cublasContext *h = calloc(1, sizeof *h);
    if (!h) return CUBLAS_STATUS_ALLOC_FAILED;
    h->magic = TW_CUBLAS_MAGIC;
    h->device = tw_get_device();
    h->stream = NULL;
    h->math_mode = CUBLAS_DEFAULT_MATH;
    h->pointer_mode = CUBLAS_POINTER_MODE_HOST;
    h->atomics_mode = CUBLAS_ATOMICS_NOT_ALLOWED;
    h->emulation_special = 0xFFFF;
    *handle = h;
    TW_DEBUG("cublasCreate_v2 -> %p (device %d)", (void *)h, h->device);
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasDestroy_v2(cublasHandle_t handle)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    /* the real library waits for the handle's work before releasing its resources */
    tw_stream *s = tw_stream_get(handle->stream, 0);
    if (s) tw_stream_synchronize(s);
    handle->magic = 0;
    free(handle);
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int *version)
{
    (void)handle; /* answered without a context, as the real library does */
    if (!version) return CUBLAS_STATUS_INVALID_VALUE;
    *version = TW_CUBLAS_VERSION;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasGetProperty(libraryPropertyType type, int *value)
{
    if (!value) return CUBLAS_STATUS_INVALID_VALUE;
    switch ((int)type) {
    case MAJOR_VERSION: *value = TW_CUBLAS_VER_MAJOR; return CUBLAS_STATUS_SUCCESS;
    case MINOR_VERSION: *value = TW_CUBLAS_VER_MINOR; return CUBLAS_STATUS_SUCCESS;
    case PATCH_LEVEL: *value = TW_CUBLAS_VER_PATCH; return CUBLAS_STATUS_SUCCESS;
    default: return CUBLAS_STATUS_INVALID_VALUE;
    }
}

TW_EXPORT size_t cublasGetCudartVersion(void) { return TW_CUBLAS_CUDART_VERSION; }

TW_EXPORT const char *cublasGetStatusName(cublasStatus_t status) { return tw_blas_status_name(status); }
TW_EXPORT const char *cublasGetStatusString(cublasStatus_t status) { return tw_blas_status_string(status); }

TW_EXPORT cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, void *stream)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    handle->stream = stream;
    /* cublasSetStream resets the workspace to the library's default pool */
    handle->workspace = NULL;
    handle->workspace_size = 0;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, void **stream)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    if (!stream) return CUBLAS_STATUS_INVALID_VALUE;
    *stream = handle->stream;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void *workspace, size_t size)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    if (size > 0 && !workspace) return CUBLAS_STATUS_INVALID_VALUE;
    if (workspace && ((uintptr_t)workspace & 255u)) return CUBLAS_STATUS_INVALID_VALUE; /* 256-byte alignment */
    handle->workspace = workspace;
    handle->workspace_size = size;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    int base = mode & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
    switch (base) {
    case CUBLAS_DEFAULT_MATH: case CUBLAS_TENSOR_OP_MATH: case CUBLAS_PEDANTIC_MATH:
    case CUBLAS_TF32_TENSOR_OP_MATH: case CUBLAS_FP32_EMULATED_BF16X9_MATH: case CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH:
        break;
    default:
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    handle->math_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t *mode)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
    *mode = handle->math_mode;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE) return CUBLAS_STATUS_INVALID_VALUE;
    handle->pointer_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t *mode)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
    *mode = handle->pointer_mode;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t mode)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    if (mode != CUBLAS_ATOMICS_NOT_ALLOWED && mode != CUBLAS_ATOMICS_ALLOWED) return CUBLAS_STATUS_INVALID_VALUE;
    handle->atomics_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasGetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t *mode)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
    *mode = handle->atomics_mode;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasSetSmCountTarget(cublasHandle_t handle, int target)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    if (target < 0) return CUBLAS_STATUS_INVALID_VALUE;
    const tw_gpu_spec *spec = tw_device_spec(handle->device);
    if (spec && target > spec->sm_count) return CUBLAS_STATUS_INVALID_VALUE;
    handle->sm_count_target = target;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasGetSmCountTarget(cublasHandle_t handle, int *target)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    if (!target) return CUBLAS_STATUS_INVALID_VALUE;
    *target = handle->sm_count_target;
    return CUBLAS_STATUS_SUCCESS;
}

/* ---------------------------------------------------------------- floating point emulation knobs (stored only) */
TW_EXPORT cublasStatus_t cublasSetEmulationStrategy(cublasHandle_t handle, cublasEmulationStrategy_t s)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    if (s < 0 || s > 2) return CUBLAS_STATUS_INVALID_VALUE;
    handle->emulation_strategy = s;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasGetEmulationStrategy(cublasHandle_t handle, cublasEmulationStrategy_t *s)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    if (!s) return CUBLAS_STATUS_INVALID_VALUE;
    *s = handle->emulation_strategy;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasSetEmulationSpecialValuesSupport(cublasHandle_t handle,
                                                                cudaEmulationSpecialValuesSupport mask)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    handle->emulation_special = mask;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasGetEmulationSpecialValuesSupport(cublasHandle_t handle,
                                                                cudaEmulationSpecialValuesSupport *mask)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    if (!mask) return CUBLAS_STATUS_INVALID_VALUE;
    *mask = handle->emulation_special;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasSetFixedPointEmulationMantissaControl(cublasHandle_t handle,
                                                                     cudaEmulationMantissaControl c)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    if (c != 0 && c != 1) return CUBLAS_STATUS_INVALID_VALUE;
    handle->mantissa_control = c;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasGetFixedPointEmulationMantissaControl(cublasHandle_t handle,
                                                                     cudaEmulationMantissaControl *c)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    if (!c) return CUBLAS_STATUS_INVALID_VALUE;
    *c = handle->mantissa_control;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasSetFixedPointEmulationMaxMantissaBitCount(cublasHandle_t handle, int bits)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    if (bits < 0) return CUBLAS_STATUS_INVALID_VALUE;
    handle->max_mantissa_bits = bits;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasGetFixedPointEmulationMaxMantissaBitCount(cublasHandle_t handle, int *bits)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    if (!bits) return CUBLAS_STATUS_INVALID_VALUE;
    *bits = handle->max_mantissa_bits;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasSetFixedPointEmulationMantissaBitOffset(cublasHandle_t handle, int offset)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    handle->mantissa_bit_offset = offset;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasGetFixedPointEmulationMantissaBitOffset(cublasHandle_t handle, int *offset)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    if (!offset) return CUBLAS_STATUS_INVALID_VALUE;
    *offset = handle->mantissa_bit_offset;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasSetFixedPointEmulationMantissaBitCountPointer(cublasHandle_t handle, int *p)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    handle->mantissa_bit_count_ptr = p;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasGetFixedPointEmulationMantissaBitCountPointer(cublasHandle_t handle, int **p)
{
    TW_CUBLAS_CHECK_HANDLE(handle);
    if (!p) return CUBLAS_STATUS_INVALID_VALUE;
    *p = handle->mantissa_bit_count_ptr;
    return CUBLAS_STATUS_SUCCESS;
}

/* ---------------------------------------------------------------- logging: accepted, nothing is ever logged */
static cublasLogCallback g_log_callback;

TW_EXPORT cublasStatus_t cublasLoggerConfigure(int logIsOn, int logToStdOut, int logToStdErr, const char *logFileName)
{
    TW_DEBUG("cublasLoggerConfigure(%d, %d, %d, %s): cuBLAS API logging is not emulated", logIsOn, logToStdOut,
             logToStdErr, logFileName ? logFileName : "(null)");
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasSetLoggerCallback(cublasLogCallback cb)
{
    __atomic_store_n(&g_log_callback, cb, __ATOMIC_RELEASE);
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasGetLoggerCallback(cublasLogCallback *cb)
{
    if (!cb) return CUBLAS_STATUS_INVALID_VALUE;
    *cb = __atomic_load_n(&g_log_callback, __ATOMIC_ACQUIRE);
    return CUBLAS_STATUS_SUCCESS;
}
