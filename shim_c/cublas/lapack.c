/* Fake cuBLAS: batched LAPACK-style routines (getrf, getrs, geqrf, gels). Each is one kernel op, annotated as a
 * GEMM of about the same work (getrf n x n x n/3, getrs n x nrhs x n, geqrf m x n x n, gels m x (n+nrhs) x n).
 * Factors, pivots and solutions keep whatever the memory held. Info results report success: the host `info`
 * (argument check) is written at once; device info arrays are zeroed where the memory is backed, so that
 * programs checking them (torch.linalg) see "no singular matrix" rather than stale bytes. */
#include "cublas_internal.h"

static tw_kernel *k_getrf, *k_getrs, *k_geqrf, *k_gels;

static int64_t max1(int64_t v) { return v > 1 ? v : 1; }

static void zero_device_array(void *p, size_t bytes)
{
    tw_alloc a;
    if (!p || !bytes) return;
    if (!tw_mem_lookup(p, &a)) return;       /* not memory the stack knows: leave it alone */
    if (!a.backed) return;                   /* address range only: nothing to write */
    if ((uintptr_t)p + bytes > a.base + a.size) return;
    tw_mem_set_now(p, 0, bytes);
}

static cublasStatus_t getrf(cublasHandle_t h, const char *label, int n, int lda, int *info, int batch, int dt)
{
    if (n < 0 || lda < max1(n) || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
    if (n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
    cublasStatus_t st = tw_cublas_launch(h, tw_blas_kernel(&k_getrf, "cublas::getrf_batched"), label, n, n,
                                         ((int64_t)n + 2) / 3, batch, dt, dt, tw_cublas_compute_for(h, dt),
                                         CUBLAS_OP_N, CUBLAS_OP_N);
    if (st == CUBLAS_STATUS_SUCCESS) zero_device_array(info, (size_t)batch * sizeof(int));
    return st;
}

#define TW_GETRF(NAME, T, DT)                                                                                  \
    TW_EXPORT cublasStatus_t NAME(cublasHandle_t handle, int n, T *const A[], int lda, int *P, int *info,      \
                                  int batchSize)                                                               \
    {                                                                                                          \
        (void)A; (void)P;                                                                                      \
        TW_CUBLAS_CHECK_HANDLE(handle);                                                                        \
        return getrf(handle, #NAME, n, lda, info, batchSize, DT);                                              \
    }
TW_GETRF(cublasSgetrfBatched, float, CUDA_R_32F)
TW_GETRF(cublasDgetrfBatched, double, CUDA_R_64F)
TW_GETRF(cublasCgetrfBatched, tw_cuComplex, CUDA_C_32F)
TW_GETRF(cublasZgetrfBatched, tw_cuDoubleComplex, CUDA_C_64F)

static cublasStatus_t getrs(cublasHandle_t h, const char *label, int trans, int n, int nrhs, int lda, int ldb,
                            int *info, int batch, int dt)
{
    if (!info) return CUBLAS_STATUS_INVALID_VALUE;
    int bad = 0;
    if (!tw_op_valid(trans)) bad = 1;
    else if (n < 0) bad = 2;
    else if (nrhs < 0) bad = 3;
    else if (lda < max1(n)) bad = 5;
    else if (ldb < max1(n)) bad = 8;
    else if (batch < 0) bad = 10;
    *info = -bad;
    if (bad) return CUBLAS_STATUS_INVALID_VALUE;
    if (n == 0 || nrhs == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
    return tw_cublas_launch(h, tw_blas_kernel(&k_getrs, "cublas::getrs_batched"), label, n, nrhs, n, batch, dt, dt,
                            tw_cublas_compute_for(h, dt), trans, CUBLAS_OP_N);
}

#define TW_GETRS(NAME, T, DT)                                                                                  \
    TW_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t trans, int n, int nrhs,             \
                                  const T *const Aarray[], int lda, const int *devIpiv, T *const Barray[],     \
                                  int ldb, int *info, int batchSize)                                           \
    {                                                                                                          \
        (void)Aarray; (void)devIpiv; (void)Barray;                                                             \
        TW_CUBLAS_CHECK_HANDLE(handle);                                                                        \
        return getrs(handle, #NAME, trans, n, nrhs, lda, ldb, info, batchSize, DT);                            \
    }
TW_GETRS(cublasSgetrsBatched, float, CUDA_R_32F)
TW_GETRS(cublasDgetrsBatched, double, CUDA_R_64F)
TW_GETRS(cublasCgetrsBatched, tw_cuComplex, CUDA_C_32F)
TW_GETRS(cublasZgetrsBatched, tw_cuDoubleComplex, CUDA_C_64F)

static cublasStatus_t geqrf(cublasHandle_t h, const char *label, int m, int n, int lda, int *info, int batch, int dt)
{
    if (!info) return CUBLAS_STATUS_INVALID_VALUE;
    int bad = 0;
    if (m < 0) bad = 1;
    else if (n < 0) bad = 2;
    else if (lda < max1(m)) bad = 4;
    else if (batch < 0) bad = 7;
    *info = -bad;
    if (bad) return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
    int64_t kk = m < n ? m : n;
    return tw_cublas_launch(h, tw_blas_kernel(&k_geqrf, "cublas::geqrf_batched"), label, m, n, kk, batch, dt, dt,
                            tw_cublas_compute_for(h, dt), CUBLAS_OP_N, CUBLAS_OP_N);
}

#define TW_GEQRF(NAME, T, DT)                                                                                  \
    TW_EXPORT cublasStatus_t NAME(cublasHandle_t handle, int m, int n, T *const Aarray[], int lda,             \
                                  T *const TauArray[], int *info, int batchSize)                               \
    {                                                                                                          \
        (void)Aarray; (void)TauArray;                                                                          \
        TW_CUBLAS_CHECK_HANDLE(handle);                                                                        \
        return geqrf(handle, #NAME, m, n, lda, info, batchSize, DT);                                           \
    }
TW_GEQRF(cublasSgeqrfBatched, float, CUDA_R_32F)
TW_GEQRF(cublasDgeqrfBatched, double, CUDA_R_64F)
TW_GEQRF(cublasCgeqrfBatched, tw_cuComplex, CUDA_C_32F)
TW_GEQRF(cublasZgeqrfBatched, tw_cuDoubleComplex, CUDA_C_64F)

static cublasStatus_t gels(cublasHandle_t h, const char *label, int trans, int m, int n, int nrhs, int lda, int ldc,
                           int *info, int *dev_info, int batch, int dt)
{
    if (!info) return CUBLAS_STATUS_INVALID_VALUE;
    int bad = 0;
    if (!tw_op_valid(trans)) bad = 1;
    else if (m < 0) bad = 2;
    else if (n < 0) bad = 3;
    else if (nrhs < 0) bad = 4;
    else if (lda < max1(m)) bad = 6;
    else if (ldc < max1(m > n ? m : n)) bad = 8;
    else if (batch < 0) bad = 11;
    *info = -bad;
    if (bad) return CUBLAS_STATUS_INVALID_VALUE;
    /* only the non-transposed, overdetermined (m >= n) case exists in cuBLAS */
    if (trans != CUBLAS_OP_N || m < n) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
    cublasStatus_t st = tw_cublas_launch(h, tw_blas_kernel(&k_gels, "cublas::gels_batched"), label, m,
                                         (int64_t)n + nrhs, n, batch, dt, dt, tw_cublas_compute_for(h, dt),
                                         CUBLAS_OP_N, CUBLAS_OP_N);
    if (st == CUBLAS_STATUS_SUCCESS) zero_device_array(dev_info, (size_t)batch * sizeof(int));
    return st;
}

#define TW_GELS(NAME, T, DT)                                                                                   \
    TW_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t trans, int m, int n, int nrhs,      \
                                  T *const Aarray[], int lda, T *const Carray[], int ldc, int *info,           \
                                  int *devInfoArray, int batchSize)                                            \
    {                                                                                                          \
        (void)Aarray; (void)Carray;                                                                            \
        TW_CUBLAS_CHECK_HANDLE(handle);                                                                        \
        return gels(handle, #NAME, trans, m, n, nrhs, lda, ldc, info, devInfoArray, batchSize, DT);            \
    }
TW_GELS(cublasSgelsBatched, float, CUDA_R_32F)
TW_GELS(cublasDgelsBatched, double, CUDA_R_64F)
TW_GELS(cublasCgelsBatched, tw_cuComplex, CUDA_C_32F)
TW_GELS(cublasZgelsBatched, tw_cuDoubleComplex, CUDA_C_64F)
