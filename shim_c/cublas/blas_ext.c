/* Fake cuBLAS: gemv, dot products and triangular solves. Each becomes one kernel op annotated as the
 * equivalent GEMM (gemv: out x 1 x reduction; dot: 1 x 1 x n; trsm: m x n x (side dimension)).
 * Outputs keep whatever the memory held, except a dot product returned in host memory
 * (CUBLAS_POINTER_MODE_HOST), which is 0 after the call: the real call blocks until the result is on the host,
 * so the fake one waits for the stream (virtual time) and then writes 0. */
#include <string.h>
#include "cublas_internal.h"

static tw_kernel *k_gemv, *k_dot, *k_trsm;

static int64_t max1(int64_t v) { return v > 1 ? v : 1; }

/* ---------------------------------------------------------------- gemv */
static cublasStatus_t gemv(cublasHandle_t h, const char *label, int trans, int64_t m, int64_t n, const void *alpha,
                           int64_t lda, int64_t incx, const void *beta, int64_t incy, int dt)
{
    if (!tw_op_valid(trans) || m < 0 || n < 0 || lda < max1(m) || incx == 0 || incy == 0)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
    int64_t out = trans == CUBLAS_OP_N ? m : n, red = trans == CUBLAS_OP_N ? n : m;
    return tw_cublas_launch(h, tw_blas_kernel(&k_gemv, "cublas::gemv"), label, out, 1, red, 1, dt, dt,
                            tw_cublas_compute_for(h, dt), trans, CUBLAS_OP_N);
}

#define TW_GEMV(NAME, T, DT, IT)                                                                               \
    TW_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t trans, IT m, IT n, const T *alpha, \
                                  const T *A, IT lda, const T *x, IT incx, const T *beta, T *y, IT incy)       \
    {                                                                                                          \
        (void)A; (void)x; (void)y;                                                                             \
        TW_CUBLAS_CHECK_HANDLE(handle);                                                                        \
        return gemv(handle, #NAME, trans, m, n, alpha, lda, incx, beta, incy, DT);                             \
    }
TW_GEMV(cublasSgemv_v2, float, CUDA_R_32F, int)
TW_GEMV(cublasDgemv_v2, double, CUDA_R_64F, int)
TW_GEMV(cublasCgemv_v2, tw_cuComplex, CUDA_C_32F, int)
TW_GEMV(cublasZgemv_v2, tw_cuDoubleComplex, CUDA_C_64F, int)
TW_GEMV(cublasSgemv_v2_64, float, CUDA_R_32F, int64_t)
TW_GEMV(cublasDgemv_v2_64, double, CUDA_R_64F, int64_t)
TW_GEMV(cublasCgemv_v2_64, tw_cuComplex, CUDA_C_32F, int64_t)
TW_GEMV(cublasZgemv_v2_64, tw_cuDoubleComplex, CUDA_C_64F, int64_t)

/* ---------------------------------------------------------------- dot */
static cublasStatus_t dot(cublasHandle_t h, const char *label, int64_t n, void *result, size_t result_bytes,
                          int in_type, int res_type, int compute)
{
    if (!result) return CUBLAS_STATUS_INVALID_VALUE;
    if (n > 0) {
        cublasStatus_t st = tw_cublas_launch(h, tw_blas_kernel(&k_dot, "cublas::dot"), label, 1, 1, n, 1, in_type,
                                             res_type, compute, CUBLAS_OP_T, CUBLAS_OP_N);
        if (st != CUBLAS_STATUS_SUCCESS) return st;
    }
    if (h->pointer_mode == CUBLAS_POINTER_MODE_HOST) {
        /* the result goes to host memory: the real call is synchronous */
        tw_stream *s = tw_stream_get(h->stream, 0);
        if (n > 0 && s) tw_stream_synchronize(s);
        memset(result, 0, result_bytes);
    }
    return CUBLAS_STATUS_SUCCESS;
}

#define TW_DOT(NAME, T, DT, IT)                                                                                \
    TW_EXPORT cublasStatus_t NAME(cublasHandle_t handle, IT n, const T *x, IT incx, const T *y, IT incy,      \
                                  T *result)                                                                   \
    {                                                                                                          \
        (void)x; (void)y; (void)incx; (void)incy;                                                              \
        TW_CUBLAS_CHECK_HANDLE(handle);                                                                        \
        return dot(handle, #NAME, n, result, sizeof(T), DT, DT, tw_cublas_compute_for(handle, DT));            \
    }
TW_DOT(cublasSdot_v2, float, CUDA_R_32F, int)
TW_DOT(cublasDdot_v2, double, CUDA_R_64F, int)
TW_DOT(cublasCdotu_v2, tw_cuComplex, CUDA_C_32F, int)
TW_DOT(cublasCdotc_v2, tw_cuComplex, CUDA_C_32F, int)
TW_DOT(cublasZdotu_v2, tw_cuDoubleComplex, CUDA_C_64F, int)
TW_DOT(cublasZdotc_v2, tw_cuDoubleComplex, CUDA_C_64F, int)
TW_DOT(cublasSdot_v2_64, float, CUDA_R_32F, int64_t)
TW_DOT(cublasDdot_v2_64, double, CUDA_R_64F, int64_t)
TW_DOT(cublasCdotu_v2_64, tw_cuComplex, CUDA_C_32F, int64_t)
TW_DOT(cublasCdotc_v2_64, tw_cuComplex, CUDA_C_32F, int64_t)
TW_DOT(cublasZdotu_v2_64, tw_cuDoubleComplex, CUDA_C_64F, int64_t)
TW_DOT(cublasZdotc_v2_64, tw_cuDoubleComplex, CUDA_C_64F, int64_t)

static int exec_compute(int exec_type)
{
    switch (exec_type) {
    case CUDA_R_16F: case CUDA_C_16F: return CUBLAS_COMPUTE_16F;
    case CUDA_R_64F: case CUDA_C_64F: return CUBLAS_COMPUTE_64F;
    default: return CUBLAS_COMPUTE_32F;
    }
}

#define TW_DOT_EX(NAME, IT)                                                                                    \
    TW_EXPORT cublasStatus_t NAME(cublasHandle_t handle, IT n, const void *x, cudaDataType xType, IT incx,    \
                                  const void *y, cudaDataType yType, IT incy, void *result,                    \
                                  cudaDataType resultType, cudaDataType executionType)                         \
    {                                                                                                          \
        (void)x; (void)y; (void)incx; (void)incy;                                                              \
        TW_CUBLAS_CHECK_HANDLE(handle);                                                                        \
        int rb = tw_dtype_bits(resultType);                                                                    \
        if (!tw_dtype_bits(xType) || !tw_dtype_bits(yType) || rb < 8 || !tw_dtype_bits(executionType))         \
            return CUBLAS_STATUS_NOT_SUPPORTED;                                                                \
        return dot(handle, #NAME, n, result, (size_t)rb / 8, xType, resultType, exec_compute(executionType));  \
    }
TW_DOT_EX(cublasDotEx, int)
TW_DOT_EX(cublasDotEx_64, int64_t)
TW_DOT_EX(cublasDotcEx, int)
TW_DOT_EX(cublasDotcEx_64, int64_t)

/* ---------------------------------------------------------------- trsm */
static cublasStatus_t trsm(cublasHandle_t h, const char *label, int side, int uplo, int trans, int diag, int64_t m,
                           int64_t n, const void *alpha, int64_t lda, int64_t ldb, int64_t batch, int dt)
{
    if ((side != CUBLAS_SIDE_LEFT && side != CUBLAS_SIDE_RIGHT) ||
        (uplo != CUBLAS_FILL_MODE_LOWER && uplo != CUBLAS_FILL_MODE_UPPER) || !tw_op_valid(trans) ||
        (diag != CUBLAS_DIAG_NON_UNIT && diag != CUBLAS_DIAG_UNIT))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (m < 0 || n < 0 || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
    int64_t tri = side == CUBLAS_SIDE_LEFT ? m : n;
    if (lda < max1(tri) || ldb < max1(m)) return CUBLAS_STATUS_INVALID_VALUE;
    if (!alpha) return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
    /* B <- alpha * op(A)^-1 B: m x n output, reduction over the triangle's dimension */
    return tw_cublas_launch(h, tw_blas_kernel(&k_trsm, "cublas::trsm"), label, m, n, tri, batch, dt, dt,
                            tw_cublas_compute_for(h, dt), side == CUBLAS_SIDE_LEFT ? trans : CUBLAS_OP_N,
                            side == CUBLAS_SIDE_LEFT ? CUBLAS_OP_N : trans);
}

#define TW_TRSM(NAME, T, DT, IT)                                                                               \
    TW_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasSideMode_t side, cublasFillMode_t uplo,         \
                                  cublasOperation_t trans, cublasDiagType_t diag, IT m, IT n, const T *alpha,  \
                                  const T *A, IT lda, T *B, IT ldb)                                            \
    {                                                                                                          \
        (void)A; (void)B;                                                                                      \
        TW_CUBLAS_CHECK_HANDLE(handle);                                                                        \
        return trsm(handle, #NAME, side, uplo, trans, diag, m, n, alpha, lda, ldb, 1, DT);                     \
    }
TW_TRSM(cublasStrsm_v2, float, CUDA_R_32F, int)
TW_TRSM(cublasDtrsm_v2, double, CUDA_R_64F, int)
TW_TRSM(cublasCtrsm_v2, tw_cuComplex, CUDA_C_32F, int)
TW_TRSM(cublasZtrsm_v2, tw_cuDoubleComplex, CUDA_C_64F, int)
TW_TRSM(cublasStrsm_v2_64, float, CUDA_R_32F, int64_t)
TW_TRSM(cublasDtrsm_v2_64, double, CUDA_R_64F, int64_t)
TW_TRSM(cublasCtrsm_v2_64, tw_cuComplex, CUDA_C_32F, int64_t)
TW_TRSM(cublasZtrsm_v2_64, tw_cuDoubleComplex, CUDA_C_64F, int64_t)

#define TW_TRSM_BATCHED(NAME, T, DT, IT)                                                                       \
    TW_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasSideMode_t side, cublasFillMode_t uplo,         \
                                  cublasOperation_t trans, cublasDiagType_t diag, IT m, IT n, const T *alpha,  \
                                  const T *const A[], IT lda, T *const B[], IT ldb, IT batchCount)             \
    {                                                                                                          \
        (void)A; (void)B;                                                                                      \
        TW_CUBLAS_CHECK_HANDLE(handle);                                                                        \
        return trsm(handle, #NAME, side, uplo, trans, diag, m, n, alpha, lda, ldb, batchCount, DT);            \
    }
TW_TRSM_BATCHED(cublasStrsmBatched, float, CUDA_R_32F, int)
TW_TRSM_BATCHED(cublasDtrsmBatched, double, CUDA_R_64F, int)
TW_TRSM_BATCHED(cublasCtrsmBatched, tw_cuComplex, CUDA_C_32F, int)
TW_TRSM_BATCHED(cublasZtrsmBatched, tw_cuDoubleComplex, CUDA_C_64F, int)
TW_TRSM_BATCHED(cublasStrsmBatched_64, float, CUDA_R_32F, int64_t)
TW_TRSM_BATCHED(cublasDtrsmBatched_64, double, CUDA_R_64F, int64_t)
TW_TRSM_BATCHED(cublasCtrsmBatched_64, tw_cuComplex, CUDA_C_32F, int64_t)
TW_TRSM_BATCHED(cublasZtrsmBatched_64, tw_cuDoubleComplex, CUDA_C_64F, int64_t)
