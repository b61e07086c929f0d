/* The recorder library (libtimewarp_record.so): preloaded into a program that runs on a real GPU, it passes
 * every call through to the real libraries and writes one row per kernel, copy and memset the GPU ran,
 * keyed as the emulator keys its launch records. See record.c. */
#ifndef TW_RECORD_H
#define TW_RECORD_H
#include <stdint.h>

/* A GEMM's annotation as the emulator's fake cuBLAS/cuBLASLt records it (shim_c/cublas/gemm.c,
 * shim_c/cublaslt/matmul.c): cuBLAS's view, C[m,n] = op(A)[m,k] op(B)[k,n]. */
typedef struct {
    int64_t m, n, k, batch;
    int a_type, b_type, c_type, compute, trans_a, trans_b, epilogue;
    const char *api;          /* the cuBLAS entry point */
    uint64_t id;              /* this call's number (the external correlation id CUPTI links launches to) */
} tw_rec_gemm;

/* record_blas.c -> record.c: a GEMM call begins (its annotation) and ends on the calling thread */
void tw_rec_gemm_begin(const tw_rec_gemm *g);
void tw_rec_gemm_end(void);

#endif
