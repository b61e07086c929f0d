/* Fake cuBLASLt: cublasLtMatmul and cublasLtMatrixTransform.
 *
 * cublasLtMatmul: m, n from D's ROWS/COLS, k from A (TRANSA considered), batch from D's BATCH_COUNT, types from
 * the layouts (annotation c_type = D's type), compute type, transposes and epilogue from the descriptor. One
 * kernel op "cublasLt::matmul" on the given stream, tiled per the algo (or the heuristic's choice when algo is
 * NULL). D, AMAX and epilogue auxiliary outputs keep whatever the memory held: kernels never run.
 *
 * cublasLtMatrixTransform: one memory-bound kernel op "cublasLt::matrix_transform" whose `bytes` is what it reads
 * (A, and B when given) plus what it writes (C). C keeps whatever the memory held. */
#include "lt_attr.h"

static tw_kernel *k_matmul, *k_xform;

TW_EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void *alpha,
                                        const void *A, cublasLtMatrixLayout_t Adesc, const void *B,
                                        cublasLtMatrixLayout_t Bdesc, const void *beta, const void *C,
                                        cublasLtMatrixLayout_t Cdesc, void *D, cublasLtMatrixLayout_t Ddesc,
                                        const cublasLtMatmulAlgo_t *algo, void *workspace, size_t workspaceSize,
                                        void *stream)
{
    (void)A; (void)B; (void)C; (void)D; (void)workspace; (void)workspaceSize;
    if (!tw_lt_handle_ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    tw_lt_problem p;
    cublasStatus_t st = tw_lt_problem_from(desc, Adesc, Bdesc, Cdesc, Ddesc, &p);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    tw_lt_algo chosen;
    if (algo) {
        if (!tw_lt_algo_valid(algo)) return CUBLAS_STATUS_INVALID_VALUE;
        memcpy(&chosen, algo, sizeof chosen);
    } else {
        tw_lt_algo_for(&p, 16, &chosen);
    }
    /* the fake's algorithms need no workspace, so any workspaceSize (including 0) suffices */
    if (p.m == 0 || p.n == 0 || p.batch == 0) return CUBLAS_STATUS_SUCCESS; /* nothing to compute */

    tw_blas_gemm_desc d = {
        .label = "cublasLtMatmul", .kernel = tw_blas_kernel(&k_matmul, "cublasLt::matmul"),
        .m = p.m, .n = p.n, .k = p.k, .batch = p.batch,
        .a_type = p.a_type, .b_type = p.b_type, .c_type = p.d_type, .compute_type = p.compute_type,
        .trans_a = p.transa, .trans_b = p.transb, .epilogue = (int)p.epilogue,
        .splitk = (int)chosen.splitk_num,
    };
    tw_lt_tile_dims(chosen.tile, &d.tile_m, &d.tile_n);
    tw_op op;
    tw_blas_fill_gemm_op(&op, &d);
    TW_DEBUG("cublasLtMatmul m=%lld n=%lld k=%lld batch=%lld types=%d/%d/%d compute=%d epilogue=%u",
             (long long)p.m, (long long)p.n, (long long)p.k, (long long)p.batch, p.a_type, p.b_type, p.d_type,
             p.compute_type, p.epilogue);
    return tw_blas_enqueue(stream, &op);
}

static uint64_t layout_bytes(const tw_lt_layout *l)
{
    uint64_t bits = (uint64_t)tw_dtype_bits((int)l->type);
    uint64_t batch = l->batch_count > 0 ? (uint64_t)l->batch_count : 1;
    return (l->rows * l->cols * batch * bits + 7) / 8;
}

TW_EXPORT cublasStatus_t cublasLtMatrixTransform(cublasLtHandle_t handle, cublasLtMatrixTransformDesc_t desc,
                                                 const void *alpha, const void *A, cublasLtMatrixLayout_t Adesc,
                                                 const void *beta, const void *B, cublasLtMatrixLayout_t Bdesc,
                                                 void *C, cublasLtMatrixLayout_t Cdesc, void *stream)
{
    (void)A; (void)C;
    if (!tw_lt_handle_ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!desc || desc->magic != TW_LT_MAGIC_XFORM || !alpha || !beta) return CUBLAS_STATUS_INVALID_VALUE;
    if (!Cdesc || Cdesc->magic != TW_LT_MAGIC_LAYOUT) return CUBLAS_STATUS_INVALID_VALUE;
    uint64_t rows = Cdesc->rows, cols = Cdesc->cols;
    uint64_t bytes = layout_bytes(Cdesc);
    const tw_lt_layout *in[2] = { Adesc, B ? Bdesc : NULL };
    int trans[2] = { desc->transa, desc->transb };
    if (!Adesc) return CUBLAS_STATUS_INVALID_VALUE;
    for (int i = 0; i < 2; i++) {
        const tw_lt_layout *l = in[i];
        if (!l) continue;
        if (l->magic != TW_LT_MAGIC_LAYOUT) return CUBLAS_STATUS_INVALID_VALUE;
        uint64_t r = trans[i] == CUBLAS_OP_N ? l->rows : l->cols, c = trans[i] == CUBLAS_OP_N ? l->cols : l->rows;
        if (r != rows || c != cols) return CUBLAS_STATUS_INVALID_VALUE;
        bytes += layout_bytes(l);
    }
    if (rows == 0 || cols == 0) return CUBLAS_STATUS_SUCCESS;
    tw_op op;
    memset(&op, 0, sizeof op);
    op.kind = TW_OP_KERNEL;
    op.kernel = tw_blas_kernel(&k_xform, "cublasLt::matrix_transform");
    op.label = "cublasLtMatrixTransform";
    op.bytes = (size_t)bytes;
    uint64_t batch = Cdesc->batch_count > 0 ? (uint64_t)Cdesc->batch_count : 1;
    tw_blas_vector_launch_shape(&op, (int64_t)(rows * cols * batch), 4);
    return tw_blas_enqueue(stream, &op);
}
