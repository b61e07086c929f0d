/* Internal interface between the fake cuBLAS source files (hidden symbols). */
#ifndef TW_CUBLAS_INTERNAL_H
#define TW_CUBLAS_INTERNAL_H

#include "blas_common.h"

/* NULL or destroyed handle -> CUBLAS_STATUS_NOT_INITIALIZED */
static inline int tw_cublas_handle_ok(cublasHandle_t h) { return h && h->magic == TW_CUBLAS_MAGIC; }
#define TW_CUBLAS_CHECK_HANDLE(h) do { if (!tw_cublas_handle_ok(h)) return CUBLAS_STATUS_NOT_INITIALIZED; } while (0)

/* Compute type a real-precision routine (S/D/C/Z/H gemm, gemv, trsm...) uses under the handle's math mode. */
int tw_cublas_compute_for(cublasHandle_t h, int data_type);
/* cublasGemmEx-style compute type: legacy cudaDataType values mapped, math mode applied; -1 if invalid. */
int tw_cublas_compute_ex(cublasHandle_t h, int compute, int a_type, int b_type);

/* The GEMM core: checks (after the handle check), quick return, one op. ptr_array: 1 for the pointer-array
 * batched forms (label only). */
cublasStatus_t tw_cublas_gemm(cublasHandle_t h, const char *label, int transa, int transb, int64_t m, int64_t n,
                              int64_t k, const void *alpha, int64_t lda, int64_t ldb, const void *beta, int64_t ldc,
                              int64_t batch, int a_type, int b_type, int c_type, int compute);

/* Enqueue a non-GEMM op described as an equivalent GEMM (trsm, gemv, dot, factorizations). */
cublasStatus_t tw_cublas_launch(cublasHandle_t h, tw_kernel *kernel, const char *label, int64_t m, int64_t n,
                                int64_t k, int64_t batch, int a_type, int c_type, int compute, int trans_a,
                                int trans_b);

/* Legacy (v1) API error state, set by the legacy entry points. */
void tw_cublas_legacy_set_error(cublasStatus_t s);

#endif
