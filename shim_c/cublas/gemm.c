/* Fake cuBLAS: the GEMM family (cublas{S,D,C,Z,H}gemm, *Ex, strided and pointer-array batched, 64-bit forms).
 * Each call is checked as the real library checks it and becomes one kernel op with a TW_ANN_GEMM annotation
 * on the handle's stream. C keeps whatever the memory held (kernels never run). */
#include "cublas_internal.h"

static tw_kernel *k_gemm;

int tw_cublas_compute_for(cublasHandle_t h, int data_type) { return tw_blas_compute_for(h->math_mode, data_type); }

int tw_cublas_compute_ex(cublasHandle_t h, int compute, int a_type, int b_type)
{
    return tw_blas_compute_ex(h->math_mode, compute, a_type, b_type);
}

static int64_t max1(int64_t v) { return v > 1 ? v : 1; }

cublasStatus_t tw_cublas_gemm(cublasHandle_t h, const char *label, int transa, int transb, int64_t m, int64_t n,
                              int64_t k, const void *alpha, int64_t lda, int64_t ldb, const void *beta, int64_t ldc,
                              int64_t batch, int a_type, int b_type, int c_type, int compute)
{
    if (!tw_op_valid(transa) || !tw_op_valid(transb)) return CUBLAS_STATUS_INVALID_VALUE;
    if (m < 0 || n < 0 || k < 0 || batch < 0) return CUBLAS_STATUS_INVALID_VALUE;
    if (lda < max1(transa == CUBLAS_OP_N ? m : k)) return CUBLAS_STATUS_INVALID_VALUE;
    if (ldb < max1(transb == CUBLAS_OP_N ? k : n)) return CUBLAS_STATUS_INVALID_VALUE;
    if (ldc < max1(m)) return CUBLAS_STATUS_INVALID_VALUE;
    if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS; /* quick return: no launch */

    tw_blas_gemm_desc d = {
        .label = label, .kernel = tw_blas_kernel(&k_gemm, "cublas::gemm"),
        .m = m, .n = n, .k = k, .batch = batch,
        .a_type = a_type, .b_type = b_type, .c_type = c_type, .compute_type = compute,
        .trans_a = transa, .trans_b = transb, .epilogue = 1,
    };
    tw_op op;
    tw_blas_fill_gemm_op(&op, &d);
    TW_DEBUG("%s m=%lld n=%lld k=%lld batch=%lld types=%d/%d/%d compute=%d", label, (long long)m, (long long)n,
             (long long)k, (long long)batch, a_type, b_type, c_type, compute);
    return tw_blas_enqueue(h->stream, &op);
}

cublasStatus_t tw_cublas_launch(cublasHandle_t h, tw_kernel *kernel, const char *label, int64_t m, int64_t n,
                                int64_t k, int64_t batch, int a_type, int c_type, int compute, int trans_a,
                                int trans_b)
{
    tw_blas_gemm_desc d = {
        .label = label, .kernel = kernel, .m = m, .n = n, .k = k, .batch = batch,
        .a_type = a_type, .b_type = a_type, .c_type = c_type, .compute_type = compute,
        .trans_a = trans_a, .trans_b = trans_b, .epilogue = 1,
    };
    tw_op op;
    tw_blas_fill_gemm_op(&op, &d);
    return tw_blas_enqueue(h->stream, &op);
}

static int gemm_algo_valid(int algo)
{
    return (algo >= CUBLAS_GEMM_DEFAULT && algo <= 23) || (algo >= CUBLAS_GEMM_DEFAULT_TENSOR_OP && algo <= 115) ||
           algo == CUBLAS_GEMM_AUTOTUNE;
}

/* Checks shared by the *Ex forms (after the handle check). Returns -1 when fine, else a status. */
static int ex_types(cublasHandle_t h, int a_type, int b_type, int c_type, int compute, int algo, int *out_compute)
{
    if (!tw_dtype_bits(a_type) || !tw_dtype_bits(b_type) || !tw_dtype_bits(c_type)) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (!gemm_algo_valid(algo)) return CUBLAS_STATUS_INVALID_VALUE;
    int c = tw_cublas_compute_ex(h, compute, a_type, b_type);
    if (c < 0) return CUBLAS_STATUS_INVALID_VALUE;
    *out_compute = c;
    return -1;
}

/* ---------------------------------------------------------------- typed GEMMs (32- and 64-bit sizes) */
#define TW_TYPED_GEMM(NAME, T, DT, IT)                                                                         \
    TW_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,  \
                                  IT m, IT n, IT k, const T *alpha, const T *A, IT lda, const T *B, IT ldb,    \
                                  const T *beta, T *C, IT ldc)                                                \
    {                                                                                                          \
        (void)A; (void)B; (void)C;                                                                             \
        TW_CUBLAS_CHECK_HANDLE(handle);                                                                        \
        return tw_cublas_gemm(handle, #NAME, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, 1, DT, DT, DT, \
                              tw_cublas_compute_for(handle, DT));                                              \
    }

TW_TYPED_GEMM(cublasSgemm_v2, float, CUDA_R_32F, int)
TW_TYPED_GEMM(cublasDgemm_v2, double, CUDA_R_64F, int)
TW_TYPED_GEMM(cublasCgemm_v2, tw_cuComplex, CUDA_C_32F, int)
TW_TYPED_GEMM(cublasZgemm_v2, tw_cuDoubleComplex, CUDA_C_64F, int)
TW_TYPED_GEMM(cublasHgemm, tw_half, CUDA_R_16F, int)
TW_TYPED_GEMM(cublasCgemm3m, tw_cuComplex, CUDA_C_32F, int)
TW_TYPED_GEMM(cublasZgemm3m, tw_cuDoubleComplex, CUDA_C_64F, int)
TW_TYPED_GEMM(cublasSgemm_v2_64, float, CUDA_R_32F, int64_t)
TW_TYPED_GEMM(cublasDgemm_v2_64, double, CUDA_R_64F, int64_t)
TW_TYPED_GEMM(cublasCgemm_v2_64, tw_cuComplex, CUDA_C_32F, int64_t)
TW_TYPED_GEMM(cublasZgemm_v2_64, tw_cuDoubleComplex, CUDA_C_64F, int64_t)
TW_TYPED_GEMM(cublasHgemm_64, tw_half, CUDA_R_16F, int64_t)
TW_TYPED_GEMM(cublasCgemm3m_64, tw_cuComplex, CUDA_C_32F, int64_t)
TW_TYPED_GEMM(cublasZgemm3m_64, tw_cuDoubleComplex, CUDA_C_64F, int64_t)

#define TW_TYPED_GEMM_STRIDED(NAME, T, DT, IT)                                                                 \
    TW_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,  \
                                  IT m, IT n, IT k, const T *alpha, const T *A, IT lda, long long strideA,     \
                                  const T *B, IT ldb, long long strideB, const T *beta, T *C, IT ldc,          \
                                  long long strideC, IT batchCount)                                            \
    {                                                                                                          \
        (void)A; (void)B; (void)C; (void)strideA; (void)strideB; (void)strideC;                                \
        TW_CUBLAS_CHECK_HANDLE(handle);                                                                        \
        return tw_cublas_gemm(handle, #NAME, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, batchCount,  \
                              DT, DT, DT, tw_cublas_compute_for(handle, DT));                                  \
    }

TW_TYPED_GEMM_STRIDED(cublasSgemmStridedBatched, float, CUDA_R_32F, int)
TW_TYPED_GEMM_STRIDED(cublasDgemmStridedBatched, double, CUDA_R_64F, int)
TW_TYPED_GEMM_STRIDED(cublasCgemmStridedBatched, tw_cuComplex, CUDA_C_32F, int)
TW_TYPED_GEMM_STRIDED(cublasZgemmStridedBatched, tw_cuDoubleComplex, CUDA_C_64F, int)
TW_TYPED_GEMM_STRIDED(cublasHgemmStridedBatched, tw_half, CUDA_R_16F, int)
TW_TYPED_GEMM_STRIDED(cublasCgemm3mStridedBatched, tw_cuComplex, CUDA_C_32F, int)
TW_TYPED_GEMM_STRIDED(cublasSgemmStridedBatched_64, float, CUDA_R_32F, int64_t)
TW_TYPED_GEMM_STRIDED(cublasDgemmStridedBatched_64, double, CUDA_R_64F, int64_t)
TW_TYPED_GEMM_STRIDED(cublasCgemmStridedBatched_64, tw_cuComplex, CUDA_C_32F, int64_t)
TW_TYPED_GEMM_STRIDED(cublasZgemmStridedBatched_64, tw_cuDoubleComplex, CUDA_C_64F, int64_t)
TW_TYPED_GEMM_STRIDED(cublasHgemmStridedBatched_64, tw_half, CUDA_R_16F, int64_t)
TW_TYPED_GEMM_STRIDED(cublasCgemm3mStridedBatched_64, tw_cuComplex, CUDA_C_32F, int64_t)

#define TW_TYPED_GEMM_BATCHED(NAME, T, DT, IT)                                                                 \
    TW_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,  \
                                  IT m, IT n, IT k, const T *alpha, const T *const Aarray[], IT lda,           \
                                  const T *const Barray[], IT ldb, const T *beta, T *const Carray[], IT ldc,   \
                                  IT batchCount)                                                               \
    {                                                                                                          \
        (void)Aarray; (void)Barray; (void)Carray;                                                              \
        TW_CUBLAS_CHECK_HANDLE(handle);                                                                        \
        return tw_cublas_gemm(handle, #NAME, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, batchCount,  \
                              DT, DT, DT, tw_cublas_compute_for(handle, DT));                                  \
    }

TW_TYPED_GEMM_BATCHED(cublasSgemmBatched, float, CUDA_R_32F, int)
TW_TYPED_GEMM_BATCHED(cublasDgemmBatched, double, CUDA_R_64F, int)
TW_TYPED_GEMM_BATCHED(cublasCgemmBatched, tw_cuComplex, CUDA_C_32F, int)
TW_TYPED_GEMM_BATCHED(cublasZgemmBatched, tw_cuDoubleComplex, CUDA_C_64F, int)
TW_TYPED_GEMM_BATCHED(cublasHgemmBatched, tw_half, CUDA_R_16F, int)
TW_TYPED_GEMM_BATCHED(cublasCgemm3mBatched, tw_cuComplex, CUDA_C_32F, int)
TW_TYPED_GEMM_BATCHED(cublasSgemmBatched_64, float, CUDA_R_32F, int64_t)
TW_TYPED_GEMM_BATCHED(cublasDgemmBatched_64, double, CUDA_R_64F, int64_t)
TW_TYPED_GEMM_BATCHED(cublasCgemmBatched_64, tw_cuComplex, CUDA_C_32F, int64_t)
TW_TYPED_GEMM_BATCHED(cublasZgemmBatched_64, tw_cuDoubleComplex, CUDA_C_64F, int64_t)
TW_TYPED_GEMM_BATCHED(cublasHgemmBatched_64, tw_half, CUDA_R_16F, int64_t)
TW_TYPED_GEMM_BATCHED(cublasCgemm3mBatched_64, tw_cuComplex, CUDA_C_32F, int64_t)

/* ---------------------------------------------------------------- *Ex forms */
#define TW_GEMM_EX(NAME, IT)                                                                                   \
    TW_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,  \
                                  IT m, IT n, IT k, const void *alpha, const void *A, cudaDataType Atype,      \
                                  IT lda, const void *B, cudaDataType Btype, IT ldb, const void *beta,         \
                                  void *C, cudaDataType Ctype, IT ldc, cublasComputeType_t computeType,        \
                                  cublasGemmAlgo_t algo)                                                       \
    {                                                                                                          \
        (void)A; (void)B; (void)C;                                                                             \
        TW_CUBLAS_CHECK_HANDLE(handle);                                                                        \
        int compute, st = ex_types(handle, Atype, Btype, Ctype, computeType, algo, &compute);                  \
        if (st >= 0) return (cublasStatus_t)st;                                                                \
        return tw_cublas_gemm(handle, #NAME, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, 1, Atype,    \
                              Btype, Ctype, compute);                                                          \
    }
TW_GEMM_EX(cublasGemmEx, int)
TW_GEMM_EX(cublasGemmEx_64, int64_t)

#define TW_GEMM_STRIDED_EX(NAME, IT)                                                                           \
    TW_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,  \
                                  IT m, IT n, IT k, const void *alpha, const void *A, cudaDataType Atype,      \
                                  IT lda, long long strideA, const void *B, cudaDataType Btype, IT ldb,        \
                                  long long strideB, const void *beta, void *C, cudaDataType Ctype, IT ldc,    \
                                  long long strideC, IT batchCount, cublasComputeType_t computeType,           \
                                  cublasGemmAlgo_t algo)                                                       \
    {                                                                                                          \
        (void)A; (void)B; (void)C; (void)strideA; (void)strideB; (void)strideC;                                \
        TW_CUBLAS_CHECK_HANDLE(handle);                                                                        \
        int compute, st = ex_types(handle, Atype, Btype, Ctype, computeType, algo, &compute);                  \
        if (st >= 0) return (cublasStatus_t)st;                                                                \
        return tw_cublas_gemm(handle, #NAME, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, batchCount,  \
                              Atype, Btype, Ctype, compute);                                                   \
    }
TW_GEMM_STRIDED_EX(cublasGemmStridedBatchedEx, int)
TW_GEMM_STRIDED_EX(cublasGemmStridedBatchedEx_64, int64_t)

#define TW_GEMM_BATCHED_EX(NAME, IT)                                                                           \
    TW_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,  \
                                  IT m, IT n, IT k, const void *alpha, const void *const Aarray[],             \
                                  cudaDataType Atype, IT lda, const void *const Barray[], cudaDataType Btype,  \
                                  IT ldb, const void *beta, void *const Carray[], cudaDataType Ctype, IT ldc,  \
                                  IT batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo)       \
    {                                                                                                          \
        (void)Aarray; (void)Barray; (void)Carray;                                                              \
        TW_CUBLAS_CHECK_HANDLE(handle);                                                                        \
        int compute, st = ex_types(handle, Atype, Btype, Ctype, computeType, algo, &compute);                  \
        if (st >= 0) return (cublasStatus_t)st;                                                                \
        return tw_cublas_gemm(handle, #NAME, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, batchCount,  \
                              Atype, Btype, Ctype, compute);                                                   \
    }
TW_GEMM_BATCHED_EX(cublasGemmBatchedEx, int)
TW_GEMM_BATCHED_EX(cublasGemmBatchedEx_64, int64_t)

/* cublasSgemmEx / cublasCgemmEx: fp32 (complex fp32) scalars and accumulation, A/B/C in the given types. */
#define TW_XGEMM_EX(NAME, IT, ST, BASE)                                                                        \
    TW_EXPORT cublasStatus_t NAME(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,  \
                                  IT m, IT n, IT k, const ST *alpha, const void *A, cudaDataType Atype,        \
                                  IT lda, const void *B, cudaDataType Btype, IT ldb, const ST *beta, void *C,  \
                                  cudaDataType Ctype, IT ldc)                                                  \
    {                                                                                                          \
        (void)A; (void)B; (void)C;                                                                             \
        TW_CUBLAS_CHECK_HANDLE(handle);                                                                        \
        if (!tw_dtype_bits(Atype) || !tw_dtype_bits(Btype) || !tw_dtype_bits(Ctype))                           \
            return CUBLAS_STATUS_NOT_SUPPORTED;                                                                \
        int compute = tw_cublas_compute_ex(handle, CUBLAS_COMPUTE_32F, Atype, Btype);                          \
        (void)BASE;                                                                                            \
        return tw_cublas_gemm(handle, #NAME, transa, transb, m, n, k, alpha, lda, ldb, beta, ldc, 1, Atype,    \
                              Btype, Ctype, compute);                                                          \
    }
TW_XGEMM_EX(cublasSgemmEx, int, float, CUDA_R_32F)
TW_XGEMM_EX(cublasSgemmEx_64, int64_t, float, CUDA_R_32F)
TW_XGEMM_EX(cublasCgemmEx, int, tw_cuComplex, CUDA_C_32F)
TW_XGEMM_EX(cublasCgemmEx_64, int64_t, tw_cuComplex, CUDA_C_32F)
TW_XGEMM_EX(cublasCgemm3mEx, int, tw_cuComplex, CUDA_C_32F)
TW_XGEMM_EX(cublasCgemm3mEx_64, int64_t, tw_cuComplex, CUDA_C_32F)
