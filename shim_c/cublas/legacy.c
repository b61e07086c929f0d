/* Fake cuBLAS: the legacy (v1, cublas.h) entry points whose return type is not cublasStatus_t, plus the legacy
 * context helpers. The generated stubs return an integer, which is wrong for functions returning float, double,
 * complex or int; these answer honestly instead: they are not supported, return 0 and set the legacy error
 * (cublasGetError) to CUBLAS_STATUS_NOT_SUPPORTED. Legacy functions returning void keep the generated stubs. */
#include "cublas_internal.h"

static __thread cublasStatus_t t_last_error = CUBLAS_STATUS_SUCCESS;
static void *g_kernel_stream; /* cublasSetKernelStream: the stream legacy calls would use */

void tw_cublas_legacy_set_error(cublasStatus_t s) { t_last_error = s; }

TW_EXPORT cublasStatus_t cublasInit(void)
{
    tw_init();
    return tw_device_count() > 0 ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}

TW_EXPORT cublasStatus_t cublasShutdown(void) { return CUBLAS_STATUS_SUCCESS; }

TW_EXPORT cublasStatus_t cublasGetError(void)
{
    cublasStatus_t s = t_last_error;
    t_last_error = CUBLAS_STATUS_SUCCESS;
    return s;
}

TW_EXPORT cublasStatus_t cublasGetVersion(int *version)
{
    if (!version) return CUBLAS_STATUS_INVALID_VALUE;
    *version = TW_CUBLAS_VERSION;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasAlloc(int n, int elemSize, void **devicePtr)
{
    if (!devicePtr || n <= 0 || elemSize <= 0) return CUBLAS_STATUS_INVALID_VALUE;
    tw_init();
    if (tw_mem_alloc(tw_get_device(), (size_t)n * (size_t)elemSize, devicePtr) != TW_OK) {
        *devicePtr = NULL;
        return CUBLAS_STATUS_ALLOC_FAILED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasFree(void *devicePtr)
{
    if (!devicePtr) return CUBLAS_STATUS_SUCCESS;
    return tw_mem_free(devicePtr) == TW_OK ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INTERNAL_ERROR;
}

TW_EXPORT cublasStatus_t cublasSetKernelStream(void *stream)
{
    __atomic_store_n(&g_kernel_stream, stream, __ATOMIC_RELEASE);
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT void cublasXerbla(const char *srName, int info)
{
    tw_log(" ** On entry to %s parameter number %d had an illegal value", srName ? srName : "?", info);
}

/* ---------------------------------------------------------------- value-returning legacy BLAS: not supported */
static void legacy_unsupported(const char *name)
{
    tw_unimplemented("cublas", name, CUBLAS_STATUS_NOT_SUPPORTED, "CUBLAS_STATUS_NOT_SUPPORTED");
    t_last_error = CUBLAS_STATUS_NOT_SUPPORTED;
}

#define TW_LEGACY_RED(NAME, RT, T)                                                                             \
    TW_EXPORT RT NAME(int n, const T *x, int incx)                                                             \
    {                                                                                                          \
        (void)n; (void)x; (void)incx;                                                                          \
        legacy_unsupported(#NAME);                                                                             \
        RT r;                                                                                                  \
        memset(&r, 0, sizeof r);                                                                               \
        return r;                                                                                              \
    }
#define TW_LEGACY_DOT(NAME, RT, T)                                                                             \
    TW_EXPORT RT NAME(int n, const T *x, int incx, const T *y, int incy)                                       \
    {                                                                                                          \
        (void)n; (void)x; (void)incx; (void)y; (void)incy;                                                     \
        legacy_unsupported(#NAME);                                                                             \
        RT r;                                                                                                  \
        memset(&r, 0, sizeof r);                                                                               \
        return r;                                                                                              \
    }

TW_LEGACY_RED(cublasSnrm2, float, float)
TW_LEGACY_RED(cublasDnrm2, double, double)
TW_LEGACY_RED(cublasScnrm2, float, tw_cuComplex)
TW_LEGACY_RED(cublasDznrm2, double, tw_cuDoubleComplex)
TW_LEGACY_RED(cublasSasum, float, float)
TW_LEGACY_RED(cublasDasum, double, double)
TW_LEGACY_RED(cublasScasum, float, tw_cuComplex)
TW_LEGACY_RED(cublasDzasum, double, tw_cuDoubleComplex)
TW_LEGACY_RED(cublasIsamax, int, float)
TW_LEGACY_RED(cublasIdamax, int, double)
TW_LEGACY_RED(cublasIcamax, int, tw_cuComplex)
TW_LEGACY_RED(cublasIzamax, int, tw_cuDoubleComplex)
TW_LEGACY_RED(cublasIsamin, int, float)
TW_LEGACY_RED(cublasIdamin, int, double)
TW_LEGACY_RED(cublasIcamin, int, tw_cuComplex)
TW_LEGACY_RED(cublasIzamin, int, tw_cuDoubleComplex)
TW_LEGACY_DOT(cublasSdot, float, float)
TW_LEGACY_DOT(cublasDdot, double, double)
TW_LEGACY_DOT(cublasCdotu, tw_cuComplex, tw_cuComplex)
TW_LEGACY_DOT(cublasCdotc, tw_cuComplex, tw_cuComplex)
TW_LEGACY_DOT(cublasZdotu, tw_cuDoubleComplex, tw_cuDoubleComplex)
TW_LEGACY_DOT(cublasZdotc, tw_cuDoubleComplex, tw_cuDoubleComplex)
