/* Fake cuBLASLt: matmul descriptors, matrix layouts, matmul preferences, matrix transform descriptors and
 * emulation descriptors. Every documented attribute is stored by id; Get returns what was set or the documented
 * default. The Init_internal forms build the same objects in caller-provided storage. */
#include <stdlib.h>
#include "lt_attr.h"

/* ---------------------------------------------------------------- matmul descriptor */
#define MD(ID, F) TW_LT_ATTR(ID, tw_lt_matmul_desc, F)
static const tw_lt_attr k_desc_attrs[] = {
    MD(CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, compute_type),
    MD(CUBLASLT_MATMUL_DESC_SCALE_TYPE, scale_type),
    MD(CUBLASLT_MATMUL_DESC_POINTER_MODE, pointer_mode),
    MD(CUBLASLT_MATMUL_DESC_TRANSA, transa),
    MD(CUBLASLT_MATMUL_DESC_TRANSB, transb),
    MD(CUBLASLT_MATMUL_DESC_TRANSC, transc),
    MD(CUBLASLT_MATMUL_DESC_FILL_MODE, fill_mode),
    MD(CUBLASLT_MATMUL_DESC_EPILOGUE, epilogue),
    MD(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias),
    MD(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, bias_batch_stride),
    MD(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux),
    MD(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, aux_ld),
    MD(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, aux_batch_stride),
    MD(CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE, alpha_vec_batch_stride),
    MD(CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, sm_count_target),
    MD(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, a_scale),
    MD(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, b_scale),
    MD(CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, c_scale),
    MD(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, d_scale),
    MD(CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, amax_d),
    MD(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, aux_data_type),
    MD(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER, aux_scale),
    MD(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER, aux_amax),
    MD(CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast_accum),
    MD(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_data_type),
    MD(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, a_scale_mode),
    MD(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, b_scale_mode),
    MD(CUBLASLT_MATMUL_DESC_C_SCALE_MODE, c_scale_mode),
    MD(CUBLASLT_MATMUL_DESC_D_SCALE_MODE, d_scale_mode),
    MD(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE, aux_scale_mode),
    MD(CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER, d_out_scale),
    MD(CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE, d_out_scale_mode),
    MD(CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, emulation),
};

static int desc_ok(const tw_lt_matmul_desc *d) { return d && d->magic == TW_LT_MAGIC_DESC; }

static void desc_init(tw_lt_matmul_desc *d, int compute, int scale)
{
    memset(d, 0, sizeof *d);
    d->magic = TW_LT_MAGIC_DESC;
    d->compute_type = compute;
    d->scale_type = scale;
    d->pointer_mode = 0;
    d->transa = d->transb = d->transc = CUBLAS_OP_N;
    d->fill_mode = CUBLAS_FILL_MODE_FULL;
    d->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    d->aux_data_type = -1;
    d->bias_data_type = -1;
}

TW_EXPORT cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t desc, size_t size,
                                                         cublasComputeType_t computeType, cudaDataType_t scaleType)
{
    if (!desc) return CUBLAS_STATUS_INVALID_VALUE;
    if (size < sizeof(tw_lt_matmul_desc)) return CUBLAS_STATUS_ALLOC_FAILED;
    if (!tw_compute_type_valid(computeType) || !tw_dtype_bits(scaleType)) return CUBLAS_STATUS_INVALID_VALUE;
    desc_init(desc, computeType, scaleType);
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc, cublasComputeType_t computeType,
                                                  cudaDataType_t scaleType)
{
    if (!desc) return CUBLAS_STATUS_INVALID_VALUE;
    if (!tw_compute_type_valid(computeType) || !tw_dtype_bits(scaleType)) return CUBLAS_STATUS_INVALID_VALUE;
    tw_lt_matmul_desc *d = calloc(1, sizeof(tw_lt_matmul_desc_storage));
    if (!d) return CUBLAS_STATUS_ALLOC_FAILED;
    desc_init(d, computeType, scaleType);
    *desc = d;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc)
{
    if (!desc) return CUBLAS_STATUS_SUCCESS;
    if (!desc_ok(desc)) return CUBLAS_STATUS_INVALID_VALUE;
    desc->magic = 0;
    free(desc);
    return CUBLAS_STATUS_SUCCESS;
}

static int32_t read_i32(const void *buf)
{
    int32_t v;
    memcpy(&v, buf, sizeof v);
    return v;
}

TW_EXPORT cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                                        const void *buf, size_t size)
{
    if (!desc_ok(desc) || !buf) return CUBLAS_STATUS_INVALID_VALUE;
    if (size == sizeof(int32_t)) { /* values the real library refuses at Set time */
        int32_t v = read_i32(buf);
        switch ((int)attr) {
        case CUBLASLT_MATMUL_DESC_TRANSA: case CUBLASLT_MATMUL_DESC_TRANSB: case CUBLASLT_MATMUL_DESC_TRANSC:
            if (!tw_op_valid(v)) return CUBLAS_STATUS_INVALID_VALUE;
            break;
        case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
            if (!tw_compute_type_valid(v)) return CUBLAS_STATUS_INVALID_VALUE;
            break;
        case CUBLASLT_MATMUL_DESC_FILL_MODE:
            if (v < 0 || v > 2) return CUBLAS_STATUS_INVALID_VALUE;
            break;
        case CUBLASLT_MATMUL_DESC_POINTER_MODE:
            if (v < 0 || v > 4) return CUBLAS_STATUS_INVALID_VALUE;
            break;
        case CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET:
            if (v < 0) return CUBLAS_STATUS_INVALID_VALUE;
            break;
        default:
            break;
        }
    }
    return tw_lt_attr_set(desc, k_desc_attrs, TW_LT_NATTR(k_desc_attrs), attr, buf, size);
}

TW_EXPORT cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                                        void *buf, size_t size, size_t *written)
{
    if (!desc_ok(desc)) return CUBLAS_STATUS_INVALID_VALUE;
    return tw_lt_attr_get(desc, k_desc_attrs, TW_LT_NATTR(k_desc_attrs), attr, buf, size, written);
}

/* ---------------------------------------------------------------- matrix layout */
#define ML(ID, F) TW_LT_ATTR(ID, tw_lt_layout, F)
static const tw_lt_attr k_layout_attrs[] = {
    ML(CUBLASLT_MATRIX_LAYOUT_TYPE, type),
    ML(CUBLASLT_MATRIX_LAYOUT_ORDER, order),
    ML(CUBLASLT_MATRIX_LAYOUT_ROWS, rows),
    ML(CUBLASLT_MATRIX_LAYOUT_COLS, cols),
    ML(CUBLASLT_MATRIX_LAYOUT_LD, ld),
    ML(CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, batch_count),
    ML(CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, batch_offset),
    ML(CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, plane_offset),
    ML(CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, batch_mode),
};

static int layout_ok(const tw_lt_layout *l) { return l && l->magic == TW_LT_MAGIC_LAYOUT; }

static void layout_init(tw_lt_layout *l, int type, uint64_t rows, uint64_t cols, int64_t ld)
{
    memset(l, 0, sizeof *l);
    l->magic = TW_LT_MAGIC_LAYOUT;
    l->type = (uint32_t)type;
    l->rows = rows;
    l->cols = cols;
    l->ld = ld;
    l->order = CUBLASLT_ORDER_COL;
    l->batch_count = 1;
}

TW_EXPORT cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t layout, size_t size,
                                                           cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld)
{
    if (!layout) return CUBLAS_STATUS_INVALID_VALUE;
    if (size < sizeof(tw_lt_layout)) return CUBLAS_STATUS_ALLOC_FAILED;
    if (!tw_dtype_bits(type)) return CUBLAS_STATUS_INVALID_VALUE;
    layout_init(layout, type, rows, cols, ld);
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, cudaDataType type, uint64_t rows,
                                                    uint64_t cols, int64_t ld)
{
    if (!layout) return CUBLAS_STATUS_INVALID_VALUE;
    if (!tw_dtype_bits(type)) return CUBLAS_STATUS_INVALID_VALUE;
    tw_lt_layout *l = calloc(1, sizeof(tw_lt_small_storage));
    if (!l) return CUBLAS_STATUS_ALLOC_FAILED;
    layout_init(l, type, rows, cols, ld);
    *layout = l;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout)
{
    if (!layout) return CUBLAS_STATUS_SUCCESS;
    if (!layout_ok(layout)) return CUBLAS_STATUS_INVALID_VALUE;
    layout->magic = 0;
    free(layout);
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                          cublasLtMatrixLayoutAttribute_t attr, const void *buf,
                                                          size_t size)
{
    if (!layout_ok(layout) || !buf) return CUBLAS_STATUS_INVALID_VALUE;
    if (size == sizeof(int32_t)) {
        int32_t v = read_i32(buf);
        if (attr == CUBLASLT_MATRIX_LAYOUT_TYPE && !tw_dtype_bits(v)) return CUBLAS_STATUS_INVALID_VALUE;
        if (attr == CUBLASLT_MATRIX_LAYOUT_ORDER && (v < 0 || v > CUBLASLT_ORDER_COL32_2R_4R4))
            return CUBLAS_STATUS_INVALID_VALUE;
        if (attr == CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT && v < 0) return CUBLAS_STATUS_INVALID_VALUE;
        if (attr == CUBLASLT_MATRIX_LAYOUT_BATCH_MODE && (v < 0 || v > 1)) return CUBLAS_STATUS_INVALID_VALUE;
    }
    return tw_lt_attr_set(layout, k_layout_attrs, TW_LT_NATTR(k_layout_attrs), attr, buf, size);
}

TW_EXPORT cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t layout,
                                                          cublasLtMatrixLayoutAttribute_t attr, void *buf, size_t size,
                                                          size_t *written)
{
    if (!layout_ok(layout)) return CUBLAS_STATUS_INVALID_VALUE;
    return tw_lt_attr_get(layout, k_layout_attrs, TW_LT_NATTR(k_layout_attrs), attr, buf, size, written);
}

/* ---------------------------------------------------------------- matmul preference */
#define MP(ID, F) TW_LT_ATTR(ID, tw_lt_pref, F)
static const tw_lt_attr k_pref_attrs[] = {
    MP(CUBLASLT_MATMUL_PREF_SEARCH_MODE, search_mode),
    MP(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, max_workspace),
    MP(CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, reduction_mask),
    MP(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, min_align[0]),
    MP(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, min_align[1]),
    MP(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, min_align[2]),
    MP(CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, min_align[3]),
    MP(CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT, max_waves),
    MP(CUBLASLT_MATMUL_PREF_IMPL_MASK, impl_mask),
};

static int pref_ok(const tw_lt_pref *p) { return p && p->magic == TW_LT_MAGIC_PREF; }

static void pref_init(tw_lt_pref *p)
{
    memset(p, 0, sizeof *p);
    p->magic = TW_LT_MAGIC_PREF;
    p->reduction_mask = 0x7;
    for (int i = 0; i < 4; i++) p->min_align[i] = 256;
    p->impl_mask = ~0ull;
}

TW_EXPORT cublasStatus_t cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref, size_t size)
{
    if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
    if (size < sizeof(tw_lt_pref)) return CUBLAS_STATUS_ALLOC_FAILED;
    pref_init(pref);
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref)
{
    if (!pref) return CUBLAS_STATUS_INVALID_VALUE;
    tw_lt_pref *p = calloc(1, sizeof(tw_lt_small_storage));
    if (!p) return CUBLAS_STATUS_ALLOC_FAILED;
    pref_init(p);
    *pref = p;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref)
{
    if (!pref) return CUBLAS_STATUS_SUCCESS;
    if (!pref_ok(pref)) return CUBLAS_STATUS_INVALID_VALUE;
    pref->magic = 0;
    free(pref);
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                              cublasLtMatmulPreferenceAttributes_t attr,
                                                              const void *buf, size_t size)
{
    if (!pref_ok(pref)) return CUBLAS_STATUS_INVALID_VALUE;
    return tw_lt_attr_set(pref, k_pref_attrs, TW_LT_NATTR(k_pref_attrs), attr, buf, size);
}

TW_EXPORT cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
                                                              cublasLtMatmulPreferenceAttributes_t attr, void *buf,
                                                              size_t size, size_t *written)
{
    if (!pref_ok(pref)) return CUBLAS_STATUS_INVALID_VALUE;
    return tw_lt_attr_get(pref, k_pref_attrs, TW_LT_NATTR(k_pref_attrs), attr, buf, size, written);
}

/* ---------------------------------------------------------------- matrix transform descriptor */
#define MX(ID, F) TW_LT_ATTR(ID, tw_lt_xform, F)
static const tw_lt_attr k_xform_attrs[] = {
    MX(CUBLASLT_MATRIX_TRANSFORM_DESC_SCALE_TYPE, scale_type),
    MX(CUBLASLT_MATRIX_TRANSFORM_DESC_POINTER_MODE, pointer_mode),
    MX(CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA, transa),
    MX(CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSB, transb),
};

static int xform_ok(const tw_lt_xform *x) { return x && x->magic == TW_LT_MAGIC_XFORM; }

static void xform_init(tw_lt_xform *x, int scale)
{
    memset(x, 0, sizeof *x);
    x->magic = TW_LT_MAGIC_XFORM;
    x->scale_type = scale;
}

TW_EXPORT cublasStatus_t cublasLtMatrixTransformDescInit_internal(cublasLtMatrixTransformDesc_t desc, size_t size,
                                                                  cudaDataType scaleType)
{
    if (!desc) return CUBLAS_STATUS_INVALID_VALUE;
    if (size < sizeof(tw_lt_xform)) return CUBLAS_STATUS_ALLOC_FAILED;
    if (!tw_dtype_bits(scaleType)) return CUBLAS_STATUS_INVALID_VALUE;
    xform_init(desc, scaleType);
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtMatrixTransformDescCreate(cublasLtMatrixTransformDesc_t *desc, cudaDataType scaleType)
{
    if (!desc) return CUBLAS_STATUS_INVALID_VALUE;
    if (!tw_dtype_bits(scaleType)) return CUBLAS_STATUS_INVALID_VALUE;
    tw_lt_xform *x = calloc(1, sizeof(tw_lt_small_storage));
    if (!x) return CUBLAS_STATUS_ALLOC_FAILED;
    xform_init(x, scaleType);
    *desc = x;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtMatrixTransformDescDestroy(cublasLtMatrixTransformDesc_t desc)
{
    if (!desc) return CUBLAS_STATUS_SUCCESS;
    if (!xform_ok(desc)) return CUBLAS_STATUS_INVALID_VALUE;
    desc->magic = 0;
    free(desc);
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtMatrixTransformDescSetAttribute(cublasLtMatrixTransformDesc_t desc,
                                                                 cublasLtMatrixTransformDescAttributes_t attr,
                                                                 const void *buf, size_t size)
{
    if (!xform_ok(desc) || !buf) return CUBLAS_STATUS_INVALID_VALUE;
    if (size == sizeof(int32_t) && (attr == CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA ||
                                    attr == CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSB) && !tw_op_valid(read_i32(buf)))
        return CUBLAS_STATUS_INVALID_VALUE;
    return tw_lt_attr_set(desc, k_xform_attrs, TW_LT_NATTR(k_xform_attrs), attr, buf, size);
}

TW_EXPORT cublasStatus_t cublasLtMatrixTransformDescGetAttribute(cublasLtMatrixTransformDesc_t desc,
                                                                 cublasLtMatrixTransformDescAttributes_t attr,
                                                                 void *buf, size_t size, size_t *written)
{
    if (!xform_ok(desc)) return CUBLAS_STATUS_INVALID_VALUE;
    return tw_lt_attr_get(desc, k_xform_attrs, TW_LT_NATTR(k_xform_attrs), attr, buf, size, written);
}

/* ---------------------------------------------------------------- emulation descriptor (stored only) */
#define ME(ID, F) TW_LT_ATTR(ID, tw_lt_emul, F)
static const tw_lt_attr k_emul_attrs[] = {
    ME(CUBLASLT_EMULATION_DESC_STRATEGY, strategy),
    ME(CUBLASLT_EMULATION_DESC_SPECIAL_VALUES_SUPPORT, special_values),
    ME(CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_CONTROL, mantissa_control),
    ME(CUBLASLT_EMULATION_DESC_FIXEDPOINT_MAX_MANTISSA_BIT_COUNT, max_mantissa_bits),
    ME(CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_BIT_OFFSET, mantissa_bit_offset),
    ME(CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_BIT_COUNT_POINTER, mantissa_bit_count_ptr),
};

static int emul_ok(const tw_lt_emul *e) { return e && e->magic == TW_LT_MAGIC_EMUL; }

static void emul_init(tw_lt_emul *e)
{
    memset(e, 0, sizeof *e);
    e->magic = TW_LT_MAGIC_EMUL;
    e->special_values = 0xFFFF;
}

TW_EXPORT cublasStatus_t cublasLtEmulationDescInit_internal(cublasLtEmulationDesc_t desc, size_t size)
{
    if (!desc) return CUBLAS_STATUS_INVALID_VALUE;
    if (size < sizeof(tw_lt_emul)) return CUBLAS_STATUS_ALLOC_FAILED;
    emul_init(desc);
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtEmulationDescCreate(cublasLtEmulationDesc_t *desc)
{
    if (!desc) return CUBLAS_STATUS_INVALID_VALUE;
    tw_lt_emul *e = calloc(1, sizeof(tw_lt_small_storage));
    if (!e) return CUBLAS_STATUS_ALLOC_FAILED;
    emul_init(e);
    *desc = e;
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtEmulationDescDestroy(cublasLtEmulationDesc_t desc)
{
    if (!desc) return CUBLAS_STATUS_SUCCESS;
    if (!emul_ok(desc)) return CUBLAS_STATUS_INVALID_VALUE;
    desc->magic = 0;
    free(desc);
    return CUBLAS_STATUS_SUCCESS;
}

TW_EXPORT cublasStatus_t cublasLtEmulationDescSetAttribute(cublasLtEmulationDesc_t desc,
                                                           cublasLtEmulationDescAttributes_t attr, const void *buf,
                                                           size_t size)
{
    if (!emul_ok(desc)) return CUBLAS_STATUS_INVALID_VALUE;
    return tw_lt_attr_set(desc, k_emul_attrs, TW_LT_NATTR(k_emul_attrs), attr, buf, size);
}

TW_EXPORT cublasStatus_t cublasLtEmulationDescGetAttribute(cublasLtEmulationDesc_t desc,
                                                           cublasLtEmulationDescAttributes_t attr, void *buf,
                                                           size_t size, size_t *written)
{
    if (!emul_ok(desc)) return CUBLAS_STATUS_INVALID_VALUE;
    return tw_lt_attr_get(desc, k_emul_attrs, TW_LT_NATTR(k_emul_attrs), attr, buf, size, written);
}
