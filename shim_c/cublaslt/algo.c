/* Fake cuBLASLt: problem validation, the heuristic, and the algorithm (cublasLtMatmulAlgo_t) API.
 *
 * The fake offers TW_LT_NUM_ALGOS algorithm ids (0..3) for every type combination. The heuristic returns exactly
 * one result: algo id 0 with a tile chosen from the problem shape (the same rule the cuBLAS front end uses),
 * split-K 1, no workspace (0 <= any MAX_WORKSPACE_BYTES), state SUCCESS, wavesCount 1.0. The 64-byte algo holds
 * the configuration (layout tw_lt_algo) and a magic word, so that serialized algos round-trip. */
#include "lt_attr.h"

#define TW_LT_NUM_ALGOS 4

static const uint32_t k_tiles[] = {
    CUBLASLT_MATMUL_TILE_64x64, CUBLASLT_MATMUL_TILE_64x128, CUBLASLT_MATMUL_TILE_128x64,
    CUBLASLT_MATMUL_TILE_128x128, CUBLASLT_MATMUL_TILE_128x256, CUBLASLT_MATMUL_TILE_256x128,
};
static const uint32_t k_stages[] = { CUBLASLT_MATMUL_STAGES_64x4, CUBLASLT_MATMUL_STAGES_64xAUTO,
                                     CUBLASLT_MATMUL_STAGES_128xAUTO };

void tw_lt_tile_dims(uint32_t tile, uint32_t *tm, uint32_t *tn)
{
    switch (tile) {
    case CUBLASLT_MATMUL_TILE_64x64: *tm = 64; *tn = 64; break;
    case CUBLASLT_MATMUL_TILE_64x128: *tm = 64; *tn = 128; break;
    case CUBLASLT_MATMUL_TILE_128x64: *tm = 128; *tn = 64; break;
    case CUBLASLT_MATMUL_TILE_128x128: *tm = 128; *tn = 128; break;
    case CUBLASLT_MATMUL_TILE_128x256: *tm = 128; *tn = 256; break;
    case CUBLASLT_MATMUL_TILE_256x128: *tm = 256; *tn = 128; break;
    default: *tm = 0; *tn = 0; break;
    }
}

static uint32_t tile_id(uint32_t tm, uint32_t tn)
{
    if (tm == 64 && tn == 64) return CUBLASLT_MATMUL_TILE_64x64;
    if (tm == 64 && tn == 128) return CUBLASLT_MATMUL_TILE_64x128;
    if (tm == 128 && tn == 64) return CUBLASLT_MATMUL_TILE_128x64;
    if (tm == 128 && tn == 256) return CUBLASLT_MATMUL_TILE_128x256;
    if (tm == 256 && tn == 128) return CUBLASLT_MATMUL_TILE_256x128;
    return CUBLASLT_MATMUL_TILE_128x128;
}

static int layout_ok(const tw_lt_layout *l) { return l && l->magic == TW_LT_MAGIC_LAYOUT; }

static int ld_ok(const tw_lt_layout *l)
{
    if (l->rows == 0 || l->cols == 0) return 1;
    if (l->order == CUBLASLT_ORDER_COL) return l->ld >= (int64_t)l->rows;
    if (l->order == CUBLASLT_ORDER_ROW) return l->ld >= (int64_t)l->cols;
    return l->ld >= 0;
}

cublasStatus_t tw_lt_problem_from(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t A, cublasLtMatrixLayout_t B,
                                  cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t D, tw_lt_problem *p)
{
    if (!desc || desc->magic != TW_LT_MAGIC_DESC) return CUBLAS_STATUS_INVALID_VALUE;
    if (!layout_ok(A) || !layout_ok(B) || !layout_ok(C)) return CUBLAS_STATUS_INVALID_VALUE;
    if (!D) D = C;
    if (!layout_ok(D)) return CUBLAS_STATUS_INVALID_VALUE;
    const tw_lt_layout *L[4] = { A, B, C, D };
    for (int i = 0; i < 4; i++) {
        if (L[i]->rows > (uint64_t)INT64_MAX || L[i]->cols > (uint64_t)INT64_MAX) return CUBLAS_STATUS_INVALID_VALUE;
        if (!ld_ok(L[i])) return CUBLAS_STATUS_INVALID_VALUE;
    }
    int64_t m = (int64_t)D->rows, n = (int64_t)D->cols;
    int ta = desc->transa, tb = desc->transb;
    int64_t a_rows = ta == CUBLAS_OP_N ? (int64_t)A->rows : (int64_t)A->cols;
    int64_t k = ta == CUBLAS_OP_N ? (int64_t)A->cols : (int64_t)A->rows;
    int64_t b_rows = tb == CUBLAS_OP_N ? (int64_t)B->rows : (int64_t)B->cols;
    int64_t b_cols = tb == CUBLAS_OP_N ? (int64_t)B->cols : (int64_t)B->rows;
    if (a_rows != m || b_cols != n || b_rows != k) return CUBLAS_STATUS_INVALID_VALUE;
    if ((int64_t)C->rows != m || (int64_t)C->cols != n) return CUBLAS_STATUS_INVALID_VALUE;
    int64_t batch = D->batch_count > 0 ? D->batch_count : 1;
    memset(p, 0, sizeof *p);
    p->m = m; p->n = n; p->k = k; p->batch = batch;
    p->a_type = (int)A->type; p->b_type = (int)B->type; p->c_type = (int)C->type; p->d_type = (int)D->type;
    p->compute_type = desc->compute_type;
    p->scale_type = desc->scale_type;
    p->transa = ta; p->transb = tb;
    p->epilogue = desc->epilogue ? desc->epilogue : CUBLASLT_EPILOGUE_DEFAULT;
    return CUBLAS_STATUS_SUCCESS;
}

static uint32_t align_of(uint32_t pref_min)
{
    /* the configuration assumes the smaller of 16 bytes and what the caller guarantees */
    uint32_t a = pref_min ? pref_min : 1;
    return a < 16 ? a : 16;
}

static void algo_init(tw_lt_algo *a, int id, int compute, int scale, int at, int bt, int ct, int dt)
{
    memset(a, 0, sizeof *a);
    a->id = id;
    a->tile = CUBLASLT_MATMUL_TILE_UNDEFINED;
    a->splitk_num = 1;
    a->stages = CUBLASLT_MATMUL_STAGES_UNDEFINED;
    a->compute_type = compute; a->scale_type = scale;
    a->a_type = at; a->b_type = bt; a->c_type = ct; a->d_type = dt;
    a->min_align = 16;
    a->magic = TW_LT_MAGIC_ALGO;
}

void tw_lt_algo_for(const tw_lt_problem *p, uint32_t min_align, tw_lt_algo *out)
{
    uint32_t tm, tn;
    algo_init(out, 0, p->compute_type, p->scale_type, p->a_type, p->b_type, p->c_type, p->d_type);
    tw_blas_pick_tile(p->m, p->n, &tm, &tn);
    out->tile = tile_id(tm, tn);
    out->stages = CUBLASLT_MATMUL_STAGES_64xAUTO;
    out->swizzle = (p->m >= 2048 && p->n >= 2048) ? 1 : 0;
    out->min_align = min_align;
}

int tw_lt_algo_valid(const cublasLtMatmulAlgo_t *algo)
{
    const tw_lt_algo *a = (const tw_lt_algo *)algo;
    return a && a->magic == TW_LT_MAGIC_ALGO && a->id >= 0 && a->id < TW_LT_NUM_ALGOS && a->splitk_num >= 1;
}

static float waves_for(const tw_lt_problem *p) { (void)p; return 1.0f; }

TW_EXPORT cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                                        cublasLtMatrixLayout_t A, cublasLtMatrixLayout_t B,
                                                        cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t D,
                                                        cublasLtMatmulPreference_t pref, int requested,
                                                        cublasLtMatmulHeuristicResult_t results[], int *returned)
{
    if (!tw_lt_handle_ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (requested <= 0 || !results || !returned) return CUBLAS_STATUS_INVALID_VALUE;
    if (pref && pref->magic != TW_LT_MAGIC_PREF) return CUBLAS_STATUS_INVALID_VALUE;
    *returned = 0;
    tw_lt_problem p;
    cublasStatus_t st = tw_lt_problem_from(desc, A, B, C, D, &p);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    uint32_t al = 16;
    for (int i = 0; pref && i < 4; i++) {
        uint32_t a = align_of(pref->min_align[i]);
        if (a < al) al = a;
    }
    cublasLtMatmulHeuristicResult_t *r = &results[0];
    memset(r, 0, sizeof *r);
    tw_lt_algo_for(&p, al, (tw_lt_algo *)&r->algo);
    r->workspaceSize = 0;
    r->state = CUBLAS_STATUS_SUCCESS;
    r->wavesCount = waves_for(&p);
    *returned = 1;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtMatmulAlgoGetIds(cublasLtHandle_t handle, cublasComputeType_t computeType,
                                                  cudaDataType_t scaleType, cudaDataType_t Atype,
                                                  cudaDataType_t Btype, cudaDataType_t Ctype, cudaDataType_t Dtype,
                                                  int requested, int ids[], int *returned)
{
    if (!tw_lt_handle_ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (requested <= 0 || !ids || !returned) return CUBLAS_STATUS_INVALID_VALUE;
    if (!tw_compute_type_valid(computeType) || !tw_dtype_bits(scaleType) || !tw_dtype_bits(Atype) ||
        !tw_dtype_bits(Btype) || !tw_dtype_bits(Ctype) || !tw_dtype_bits(Dtype))
        return CUBLAS_STATUS_INVALID_VALUE;
    int n = requested < TW_LT_NUM_ALGOS ? requested : TW_LT_NUM_ALGOS;
    for (int i = 0; i < n; i++) ids[i] = i;
    *returned = n;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtMatmulAlgoInit(cublasLtHandle_t handle, cublasComputeType_t computeType,
                                                cudaDataType_t scaleType, cudaDataType_t Atype, cudaDataType_t Btype,
                                                cudaDataType_t Ctype, cudaDataType_t Dtype, int algoId,
                                                cublasLtMatmulAlgo_t *algo)
{
    if (!tw_lt_handle_ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!algo || algoId < 0 || algoId >= TW_LT_NUM_ALGOS) return CUBLAS_STATUS_INVALID_VALUE;
    if (!tw_compute_type_valid(computeType) || !tw_dtype_bits(scaleType) || !tw_dtype_bits(Atype) ||
        !tw_dtype_bits(Btype) || !tw_dtype_bits(Ctype) || !tw_dtype_bits(Dtype))
        return CUBLAS_STATUS_NOT_SUPPORTED;
    algo_init((tw_lt_algo *)algo, algoId, computeType, scaleType, Atype, Btype, Ctype, Dtype);
    return CUBLAS_STATUS_SUCCESS;
}

static int tile_known(uint32_t t)
{
    if (t == CUBLASLT_MATMUL_TILE_UNDEFINED) return 1;
    for (size_t i = 0; i < sizeof k_tiles / sizeof k_tiles[0]; i++)
        if (k_tiles[i] == t) return 1;
    return 0;
}

TW_EXPORT cublasStatus_t cublasLtMatmulAlgoCheck(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                                 cublasLtMatrixLayout_t A, cublasLtMatrixLayout_t B,
                                                 cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t D,
                                                 const cublasLtMatmulAlgo_t *algo,
                                                 cublasLtMatmulHeuristicResult_t *result)
{
    if (!tw_lt_handle_ok(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!algo || !result) return CUBLAS_STATUS_INVALID_VALUE;
    if (!tw_lt_algo_valid(algo)) return CUBLAS_STATUS_INVALID_VALUE;
    tw_lt_problem p;
    cublasStatus_t st = tw_lt_problem_from(desc, A, B, C, D, &p);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    const tw_lt_algo *a = (const tw_lt_algo *)algo;
    if (a->a_type != p.a_type || a->b_type != p.b_type || a->c_type != p.c_type || a->d_type != p.d_type ||
        a->compute_type != p.compute_type || a->scale_type != p.scale_type)
        return CUBLAS_STATUS_INVALID_VALUE;
    if (!tile_known(a->tile)) return CUBLAS_STATUS_NOT_SUPPORTED;
    /* result->algo is never updated (algo may point into result) */
    result->workspaceSize = 0;
    result->state = CUBLAS_STATUS_SUCCESS;
    result->wavesCount = waves_for(&p);
    memset(result->reserved, 0, sizeof result->reserved);
    return CUBLAS_STATUS_SUCCESS;
}

/* ---------------------------------------------------------------- algo configuration attributes */
#define AC(ID, F) TW_LT_ATTR(ID, tw_lt_algo, F)
static const tw_lt_attr k_config_attrs[] = {
    AC(CUBLASLT_ALGO_CONFIG_ID, id),
    AC(CUBLASLT_ALGO_CONFIG_TILE_ID, tile),
    AC(CUBLASLT_ALGO_CONFIG_SPLITK_NUM, splitk_num),
    AC(CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, reduction),
    AC(CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, swizzle),
    AC(CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, custom),
    AC(CUBLASLT_ALGO_CONFIG_STAGES_ID, stages),
    AC(CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, inner_shape),
    AC(CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, cluster_shape),
};

TW_EXPORT cublasStatus_t cublasLtMatmulAlgoConfigSetAttribute(cublasLtMatmulAlgo_t *algo,
                                                              cublasLtMatmulAlgoConfigAttributes_t attr,
                                                              const void *buf, size_t size)
{
    if (!algo || !buf) return CUBLAS_STATUS_INVALID_VALUE;
    if (attr == CUBLASLT_ALGO_CONFIG_ID) return CUBLAS_STATUS_INVALID_VALUE; /* set by cublasLtMatmulAlgoInit */
    if (attr == CUBLASLT_ALGO_CONFIG_SPLITK_NUM && size == sizeof(int32_t)) {
        int32_t v;
        memcpy(&v, buf, sizeof v);
        if (v < 1) return CUBLAS_STATUS_INVALID_VALUE;
    }
    if (attr == CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME && size == sizeof(uint32_t)) {
        uint32_t v;
        memcpy(&v, buf, sizeof v);
        if (v != 0 && v != 1 && v != 2 && v != 4) return CUBLAS_STATUS_INVALID_VALUE;
    }
    return tw_lt_attr_set(algo, k_config_attrs, TW_LT_NATTR(k_config_attrs), attr, buf, size);
}

TW_EXPORT cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t *algo,
                                                              cublasLtMatmulAlgoConfigAttributes_t attr, void *buf,
                                                              size_t size, size_t *written)
{
    if (!algo) return CUBLAS_STATUS_INVALID_VALUE;
    return tw_lt_attr_get(algo, k_config_attrs, TW_LT_NATTR(k_config_attrs), attr, buf, size, written);
}

/* ---------------------------------------------------------------- algo capabilities */
static cublasStatus_t put_scalar(const void *v, size_t vsize, void *buf, size_t size, size_t *written)
{
    if (size == 0) {
        if (!written) return CUBLAS_STATUS_INVALID_VALUE;
        *written = vsize;
        return CUBLAS_STATUS_SUCCESS;
    }
    if (!buf || size < vsize) return CUBLAS_STATUS_INVALID_VALUE;
    memcpy(buf, v, vsize);
    if (written) *written = vsize;
    return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t put_array(const uint32_t *v, size_t count, void *buf, size_t size, size_t *written)
{
    size_t full = count * sizeof(uint32_t);
    if (size == 0) {
        if (!written) return CUBLAS_STATUS_INVALID_VALUE;
        *written = full;
        return CUBLAS_STATUS_SUCCESS;
    }
    if (!buf) return CUBLAS_STATUS_INVALID_VALUE;
    size_t n = size / sizeof(uint32_t);
    if (n > count) n = count;
    memcpy(buf, v, n * sizeof(uint32_t));
    if (written) *written = n * sizeof(uint32_t);
    return CUBLAS_STATUS_SUCCESS;
}

static uint64_t impl_flags(const tw_lt_algo *a)
{
    uint64_t f;
    switch (a->compute_type) {
    case CUBLAS_COMPUTE_64F: case CUBLAS_COMPUTE_64F_PEDANTIC: case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
        return TW_LT_IMPL_DMMA | TW_LT_IMPL_ACC_64F | TW_LT_IMPL_IN_64F;
    case CUBLAS_COMPUTE_32I: case CUBLAS_COMPUTE_32I_PEDANTIC:
        return TW_LT_IMPL_IMMA | TW_LT_IMPL_ACC_32I | TW_LT_IMPL_IN_8I;
    case CUBLAS_COMPUTE_16F: case CUBLAS_COMPUTE_16F_PEDANTIC:
        return TW_LT_IMPL_HMMA | TW_LT_IMPL_ACC_16F | TW_LT_IMPL_IN_16F;
    case CUBLAS_COMPUTE_32F_PEDANTIC:
        return TW_LT_IMPL_FMA | TW_LT_IMPL_ACC_32F | TW_LT_IMPL_IN_32F;
    default:
        break;
    }
    f = TW_LT_IMPL_HMMA | TW_LT_IMPL_ACC_32F;
    switch (a->a_type) {
    case CUDA_R_16F: f |= TW_LT_IMPL_IN_16F; break;
    case CUDA_R_16BF: f |= TW_LT_IMPL_IN_16BF; break;
    case CUDA_R_8F_E4M3: f |= TW_LT_IMPL_IN_8F_E4M3; break;
    case CUDA_R_8F_E5M2: f |= TW_LT_IMPL_IN_8F_E5M2; break;
    case CUDA_R_32F: case CUDA_C_32F:
        f |= a->compute_type == CUBLAS_COMPUTE_32F_FAST_TF32 ? TW_LT_IMPL_IN_TF32
           : a->compute_type == CUBLAS_COMPUTE_32F_FAST_16BF ? TW_LT_IMPL_IN_16BF
           : a->compute_type == CUBLAS_COMPUTE_32F_FAST_16F ? TW_LT_IMPL_IN_16F : TW_LT_IMPL_IN_32F;
        if (a->compute_type == CUBLAS_COMPUTE_32F) f = TW_LT_IMPL_FMA | TW_LT_IMPL_ACC_32F | TW_LT_IMPL_IN_32F;
        break;
    default: break;
    }
    return f;
}

TW_EXPORT cublasStatus_t cublasLtMatmulAlgoCapGetAttribute(const cublasLtMatmulAlgo_t *algo,
                                                           cublasLtMatmulAlgoCapAttributes_t attr, void *buf,
                                                           size_t size, size_t *written)
{
    if (!algo) return CUBLAS_STATUS_INVALID_VALUE;
    const tw_lt_algo *a = (const tw_lt_algo *)algo;
    int32_t i32;
    uint32_t u32;
    uint64_t u64;
    switch ((int)attr) {
    case CUBLASLT_ALGO_CAP_SPLITK_SUPPORT: i32 = 1; return put_scalar(&i32, 4, buf, size, written);
    case CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK: u32 = 0x7; return put_scalar(&u32, 4, buf, size, written);
    case CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT: u32 = 1; return put_scalar(&u32, 4, buf, size, written);
    case CUBLASLT_ALGO_CAP_STRIDED_BATCH_SUPPORT: i32 = 1; return put_scalar(&i32, 4, buf, size, written);
    case CUBLASLT_ALGO_CAP_OUT_OF_PLACE_RESULT_SUPPORT: i32 = 1; return put_scalar(&i32, 4, buf, size, written);
    case CUBLASLT_ALGO_CAP_UPLO_SUPPORT: i32 = 0; return put_scalar(&i32, 4, buf, size, written);
    case CUBLASLT_ALGO_CAP_TILE_IDS: return put_array(k_tiles, sizeof k_tiles / sizeof k_tiles[0], buf, size, written);
    case CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX: i32 = 0; return put_scalar(&i32, 4, buf, size, written);
    case CUBLASLT_ALGO_CAP_CUSTOM_MEMORY_ORDER: i32 = 0; return put_scalar(&i32, 4, buf, size, written);
    case CUBLASLT_ALGO_CAP_POINTER_MODE_MASK: u32 = 0x1F; return put_scalar(&u32, 4, buf, size, written);
    case CUBLASLT_ALGO_CAP_EPILOGUE_MASK: u32 = TW_LT_EPILOGUE_ALL; return put_scalar(&u32, 4, buf, size, written);
    case CUBLASLT_ALGO_CAP_STAGES_IDS:
        return put_array(k_stages, sizeof k_stages / sizeof k_stages[0], buf, size, written);
    case CUBLASLT_ALGO_CAP_LD_NEGATIVE: i32 = 0; return put_scalar(&i32, 4, buf, size, written);
    case CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS: u64 = impl_flags(a); return put_scalar(&u64, 8, buf, size, written);
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES: case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES: case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES:
        u32 = a->magic == TW_LT_MAGIC_ALGO && a->min_align ? a->min_align : 16;
        return put_scalar(&u32, 4, buf, size, written);
    case CUBLASLT_ALGO_CAP_POINTER_ARRAY_BATCH_SUPPORT: i32 = 1; return put_scalar(&i32, 4, buf, size, written);
    case CUBLASLT_ALGO_CAP_FLOATING_POINT_EMULATION_SUPPORT: i32 = 0; return put_scalar(&i32, 4, buf, size, written);
    default: return CUBLAS_STATUS_INVALID_VALUE;
    }
}
