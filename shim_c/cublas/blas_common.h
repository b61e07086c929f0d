/* Helpers shared by the fake cuBLAS and cuBLASLt: status strings, data type sizes, compute type checks, and
 * the one place that turns a GEMM-like call into a timed kernel op (plausible tiling + TW_ANN_GEMM).
 * Everything here is static: each library carries its own copy (no symbols cross between them). */
#ifndef TW_BLAS_COMMON_H
#define TW_BLAS_COMMON_H

#include <string.h>
#include "tw/core.h"
#include "cublas_types.h"

static inline const char *tw_blas_status_name(int s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "CUBLAS_STATUS_UNKNOWN";
    }
}

static inline const char *tw_blas_status_string(int s)
{
    switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED: return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE: return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR: return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR: return "the functionality requested requires some license";
    default: return "unknown error";
    }
}

/* Bits per element of a cudaDataType_t; 0 for an unknown value. */
static inline int tw_dtype_bits(int t)
{
    switch (t) {
    case CUDA_R_4I: case CUDA_R_4U: case CUDA_R_4F_E2M1: return 4;
    case CUDA_R_6F_E2M3: case CUDA_R_6F_E3M2: return 6;
    case CUDA_C_4I: case CUDA_C_4U: return 8;
    case CUDA_R_8I: case CUDA_R_8U: case CUDA_R_8F_E4M3: case CUDA_R_8F_E5M2: case CUDA_R_8F_UE8M0: return 8;
    case CUDA_R_16F: case CUDA_R_16BF: case CUDA_R_16I: case CUDA_R_16U: case CUDA_C_8I: case CUDA_C_8U: return 16;
    case CUDA_R_32F: case CUDA_R_32I: case CUDA_R_32U: case CUDA_C_16F: case CUDA_C_16BF: case CUDA_C_16I:
    case CUDA_C_16U: return 32;
    case CUDA_R_64F: case CUDA_R_64I: case CUDA_R_64U: case CUDA_C_32F: case CUDA_C_32I: case CUDA_C_32U: return 64;
    case CUDA_C_64F: case CUDA_C_64I: case CUDA_C_64U: return 128;
    default: return 0;
    }
}

static inline int tw_compute_type_valid(int c)
{
    switch (c) {
    case CUBLAS_COMPUTE_16F: case CUBLAS_COMPUTE_16F_PEDANTIC: case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC: case CUBLAS_COMPUTE_64F: case CUBLAS_COMPUTE_64F_PEDANTIC:
    case CUBLAS_COMPUTE_32I: case CUBLAS_COMPUTE_32I_PEDANTIC: case CUBLAS_COMPUTE_32F_FAST_16F:
    case CUBLAS_COMPUTE_32F_FAST_16BF: case CUBLAS_COMPUTE_32F_FAST_TF32: case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
    case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
        return 1;
    default:
        return 0;
    }
}

static inline int tw_op_valid(int op) { return op == CUBLAS_OP_N || op == CUBLAS_OP_T || op == CUBLAS_OP_C; }

/* The compute type cuBLAS runs a GEMM with, from the handle's math mode (cublasSetMathMode) and, for the Ex
 * entry points, the compute type passed (-1: invalid). Shared by the fake cuBLAS and the recorder library
 * (shim_c/record), so that both annotate a call alike. */

static inline int tw_blas_compute_for(int math_mode, int data_type)
{
    int mm = math_mode & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
    switch (data_type) {
    case CUDA_R_32F: case CUDA_C_32F:
        if (mm == CUBLAS_PEDANTIC_MATH) return CUBLAS_COMPUTE_32F_PEDANTIC;
        if (mm == CUBLAS_TF32_TENSOR_OP_MATH) return CUBLAS_COMPUTE_32F_FAST_TF32;
        if (mm == CUBLAS_FP32_EMULATED_BF16X9_MATH) return CUBLAS_COMPUTE_32F_EMULATED_16BFX9;
        if (mm == CUBLAS_TENSOR_OP_MATH) return CUBLAS_COMPUTE_32F_FAST_16F;
        return CUBLAS_COMPUTE_32F;
    case CUDA_R_64F: case CUDA_C_64F:
        if (mm == CUBLAS_PEDANTIC_MATH) return CUBLAS_COMPUTE_64F_PEDANTIC;
        if (mm == CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH) return CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT;
        return CUBLAS_COMPUTE_64F;
    case CUDA_R_16F: case CUDA_C_16F:
        return mm == CUBLAS_PEDANTIC_MATH ? CUBLAS_COMPUTE_16F_PEDANTIC : CUBLAS_COMPUTE_16F;
    default:
        return CUBLAS_COMPUTE_32F;
    }
}

static inline int tw_blas_compute_ex(int math_mode, int compute, int a_type, int b_type)
{
    int legacy = 0;
    switch (compute) { /* a cudaDataType_t given as compute type (pre-CUDA 11 callers) */
    case CUDA_R_16F: compute = CUBLAS_COMPUTE_16F; legacy = 1; break;
    case CUDA_R_32F: case CUDA_C_32F: compute = CUBLAS_COMPUTE_32F; legacy = 1; break;
    case CUDA_R_64F: case CUDA_C_64F: compute = CUBLAS_COMPUTE_64F; legacy = 1; break;
    case CUDA_R_32I: compute = CUBLAS_COMPUTE_32I; legacy = 1; break;
    default: break;
    }
    if (!tw_compute_type_valid(compute)) return -1;
    int mm = math_mode & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
    if (legacy && mm == CUBLAS_PEDANTIC_MATH) {
        if (compute == CUBLAS_COMPUTE_16F) return CUBLAS_COMPUTE_16F_PEDANTIC;
        if (compute == CUBLAS_COMPUTE_32F) return CUBLAS_COMPUTE_32F_PEDANTIC;
        if (compute == CUBLAS_COMPUTE_64F) return CUBLAS_COMPUTE_64F_PEDANTIC;
        if (compute == CUBLAS_COMPUTE_32I) return CUBLAS_COMPUTE_32I_PEDANTIC;
    }
    int f32_in = (a_type == CUDA_R_32F || a_type == CUDA_C_32F) && (b_type == CUDA_R_32F || b_type == CUDA_C_32F);
    if (compute == CUBLAS_COMPUTE_32F && f32_in) {
        if (mm == CUBLAS_TF32_TENSOR_OP_MATH) return CUBLAS_COMPUTE_32F_FAST_TF32;
        if (mm == CUBLAS_FP32_EMULATED_BF16X9_MATH) return CUBLAS_COMPUTE_32F_EMULATED_16BFX9;
    }
    if (compute == CUBLAS_COMPUTE_64F && mm == CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH)
        return CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT;
    return compute;
}

/* Kernel objects, interned once per call site. */
static inline tw_kernel *tw_blas_kernel(tw_kernel **slot, const char *name)
{
    tw_kernel *k = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (!k) {
        k = tw_kernel_intern(name);
        __atomic_store_n(slot, k, __ATOMIC_RELEASE);
    }
    return k;
}

/* CTA tile (rows x cols of C) of the kernel a real Hopper library would plausibly pick. */
static inline void tw_blas_pick_tile(int64_t m, int64_t n, uint32_t *tm, uint32_t *tn)
{
    if (m <= 64 && n <= 64) { *tm = 64; *tn = 64; }
    else if (m <= 64) { *tm = 64; *tn = 128; }
    else if (n <= 64) { *tm = 128; *tn = 64; }
    else if (m >= 4096 && n >= 4096) { *tm = 128; *tn = 256; }
    else { *tm = 128; *tn = 128; }
}

static inline uint32_t tw_clamp_u32(int64_t v, int64_t hi)
{
    if (v < 1) return 1;
    return (uint32_t)(v > hi ? hi : v);
}

/* Grid/block/shared memory of a GEMM launch: one CTA of 384 threads (3 warp groups) per tile of C, batch (and
 * split-K slices) in grid.z; shared memory = pipeline stages of A and B k-slices (64 deep), at most 227 KiB. */
static inline void tw_blas_gemm_launch_shape(tw_op *op, int64_t m, int64_t n, int64_t batch, int ab_bits,
                                             uint32_t tm, uint32_t tn, int splitk)
{
    if (tm == 0 || tn == 0) tw_blas_pick_tile(m, n, &tm, &tn);
    int64_t tiles = ((m + tm - 1) / tm) * ((n + tn - 1) / tn);
    int64_t z = batch * (splitk > 1 ? splitk : 1);
    op->grid[0] = tw_clamp_u32(tiles, 0x7fffffff);
    op->grid[1] = 1;
    op->grid[2] = tw_clamp_u32(z, 65535);
    op->block[0] = 384; op->block[1] = 1; op->block[2] = 1;
    if (ab_bits <= 0) ab_bits = 16;
    uint64_t stage = (uint64_t)(tm + tn) * 64u * (uint64_t)ab_bits / 8u;
    uint64_t stages = stage ? 200u * 1024u / stage : 1;
    if (stages > 4) stages = 4;
    if (stages < 1) stages = 1;
    uint64_t sh = stage * stages + 1024;
    op->shmem = (uint32_t)(sh > 232448 ? 232448 : sh);
}

/* One-dimensional launch (vector kernels): 256 threads, `per_thread` elements each. */
static inline void tw_blas_vector_launch_shape(tw_op *op, int64_t elems, int per_thread)
{
    int64_t per_block = 256 * (int64_t)(per_thread > 0 ? per_thread : 1);
    op->grid[0] = tw_clamp_u32((elems + per_block - 1) / per_block, 0x7fffffff);
    op->grid[1] = op->grid[2] = 1;
    op->block[0] = 256; op->block[1] = op->block[2] = 1;
    op->shmem = 0;
}

typedef struct {
    const char *label;          /* API name, static */
    tw_kernel *kernel;
    int64_t m, n, k, batch;
    int a_type, b_type, c_type, compute_type;
    int trans_a, trans_b, epilogue;
    uint32_t tile_m, tile_n;    /* 0: pick by shape */
    int splitk;
} tw_blas_gemm_desc;

static inline void tw_blas_fill_gemm_op(tw_op *op, const tw_blas_gemm_desc *d)
{
    memset(op, 0, sizeof *op);
    op->kind = TW_OP_KERNEL;
    op->kernel = d->kernel;
    op->label = d->label;
    op->ann.kind = TW_ANN_GEMM;
    op->ann.u.gemm.m = d->m;
    op->ann.u.gemm.n = d->n;
    op->ann.u.gemm.k = d->k;
    op->ann.u.gemm.batch = d->batch;
    op->ann.u.gemm.a_type = d->a_type;
    op->ann.u.gemm.b_type = d->b_type;
    op->ann.u.gemm.c_type = d->c_type;
    op->ann.u.gemm.compute_type = d->compute_type;
    op->ann.u.gemm.trans_a = d->trans_a;
    op->ann.u.gemm.trans_b = d->trans_b;
    op->ann.u.gemm.epilogue = d->epilogue ? d->epilogue : 1;
    int bits = tw_dtype_bits(d->a_type);
    int bb = tw_dtype_bits(d->b_type);
    if (bb > bits) bits = bb;
    tw_blas_gemm_launch_shape(op, d->m, d->n, d->batch, bits, d->tile_m, d->tile_n, d->splitk);
}

/* Enqueue on a cudaStream_t as the API received it. */
static inline cublasStatus_t tw_blas_enqueue(void *stream, tw_op *op)
{
    tw_stream *s = tw_stream_get(stream, 0);
    if (!s) return CUBLAS_STATUS_EXECUTION_FAILED;
    tw_err e = tw_enqueue(s, op);
    if (e != TW_OK) {
        TW_DEBUG("%s: enqueue failed (%d)", op->label ? op->label : "cublas", (int)e);
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

#endif
