/* cuBLASLt (libcublasLt.so.13) declarations for the fake library, written from the documented CUDA 13 /
 * cuBLAS 13.1 ABI (enum values, attribute ids and sizes, the semi-opaque struct sizes). No NVIDIA header text.
 *
 * The descriptors live in the caller-visible semi-opaque storage sizes (matmul desc 256 bytes, layout /
 * preference / transform / emulation desc / algo 64 bytes), so that the *Init_internal forms work on
 * caller-allocated memory exactly like the Create forms.
 *
 * Data model: cublasLtMatmul and cublasLtMatrixTransform enqueue one timed kernel op; D (or C) keeps whatever the
 * memory held (kernels never run), as do AMAX and epilogue auxiliary outputs. */
#ifndef TW_CUBLASLT_TYPES_H
#define TW_CUBLASLT_TYPES_H

#include "../cublas/blas_common.h"

/* ---------------------------------------------------------------- public semi-opaque sizes */
typedef struct { uint64_t data[8]; } cublasLtMatmulAlgo_t;             /* 64 bytes */
typedef struct { uint64_t data[32]; } tw_lt_matmul_desc_storage;        /* 256 bytes */
typedef struct { uint64_t data[8]; } tw_lt_small_storage;               /* 64 bytes */

typedef struct {
    cublasLtMatmulAlgo_t algo;   /* offset 0 */
    size_t workspaceSize;        /* offset 64 */
    cublasStatus_t state;        /* offset 72 */
    float wavesCount;            /* offset 76 */
    int reserved[4];             /* offset 80, total 96 */
} cublasLtMatmulHeuristicResult_t;

/* ---------------------------------------------------------------- enums / attribute ids */
enum { /* cublasLtOrder_t */
    CUBLASLT_ORDER_COL = 0, CUBLASLT_ORDER_ROW = 1, CUBLASLT_ORDER_COL32 = 2, CUBLASLT_ORDER_COL4_4R2_8C = 3,
    CUBLASLT_ORDER_COL32_2R_4R4 = 4,
};

typedef enum { /* cublasLtMatrixLayoutAttribute_t */
    CUBLASLT_MATRIX_LAYOUT_TYPE = 0,            /* uint32_t (cudaDataType) */
    CUBLASLT_MATRIX_LAYOUT_ORDER = 1,           /* int32_t, default COL */
    CUBLASLT_MATRIX_LAYOUT_ROWS = 2,            /* uint64_t */
    CUBLASLT_MATRIX_LAYOUT_COLS = 3,            /* uint64_t */
    CUBLASLT_MATRIX_LAYOUT_LD = 4,              /* int64_t */
    CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5,     /* int32_t, default 1 */
    CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6, /* int64_t, default 0 */
    CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET = 7,    /* int64_t, default 0 */
    CUBLASLT_MATRIX_LAYOUT_BATCH_MODE = 8,      /* uint32_t, default 0 (strided) */
} cublasLtMatrixLayoutAttribute_t;

typedef enum { /* cublasLtMatmulDescAttributes_t */
    CUBLASLT_MATMUL_DESC_COMPUTE_TYPE = 0, CUBLASLT_MATMUL_DESC_SCALE_TYPE = 1, CUBLASLT_MATMUL_DESC_POINTER_MODE = 2,
    CUBLASLT_MATMUL_DESC_TRANSA = 3, CUBLASLT_MATMUL_DESC_TRANSB = 4, CUBLASLT_MATMUL_DESC_TRANSC = 5,
    CUBLASLT_MATMUL_DESC_FILL_MODE = 6, CUBLASLT_MATMUL_DESC_EPILOGUE = 7, CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8,
    CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE = 10, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER = 11,
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD = 12, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE = 13,
    CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE = 14, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET = 15,
    CUBLASLT_MATMUL_DESC_A_SCALE_POINTER = 17, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER = 18,
    CUBLASLT_MATMUL_DESC_C_SCALE_POINTER = 19, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER = 20,
    CUBLASLT_MATMUL_DESC_AMAX_D_POINTER = 21, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE = 22,
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER = 23, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER = 24,
    CUBLASLT_MATMUL_DESC_FAST_ACCUM = 25, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE = 26,
    CUBLASLT_MATMUL_DESC_A_SCALE_MODE = 31, CUBLASLT_MATMUL_DESC_B_SCALE_MODE = 32,
    CUBLASLT_MATMUL_DESC_C_SCALE_MODE = 33, CUBLASLT_MATMUL_DESC_D_SCALE_MODE = 34,
    CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE = 35, CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER = 36,
    CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE = 37, CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR = 38,
} cublasLtMatmulDescAttributes_t;

typedef enum { /* cublasLtMatrixTransformDescAttributes_t, all int32_t */
    CUBLASLT_MATRIX_TRANSFORM_DESC_SCALE_TYPE = 0, CUBLASLT_MATRIX_TRANSFORM_DESC_POINTER_MODE = 1,
    CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA = 2, CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSB = 3,
} cublasLtMatrixTransformDescAttributes_t;

typedef enum { /* cublasLtEmulationDescAttributes_t */
    CUBLASLT_EMULATION_DESC_STRATEGY = 0, CUBLASLT_EMULATION_DESC_SPECIAL_VALUES_SUPPORT = 1,
    CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_CONTROL = 2,
    CUBLASLT_EMULATION_DESC_FIXEDPOINT_MAX_MANTISSA_BIT_COUNT = 3,
    CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_BIT_OFFSET = 4,
    CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_BIT_COUNT_POINTER = 5,
} cublasLtEmulationDescAttributes_t;

typedef enum { /* cublasLtMatmulPreferenceAttributes_t */
    CUBLASLT_MATMUL_PREF_SEARCH_MODE = 0,            /* uint32_t */
    CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES = 1,    /* uint64_t, default 0 */
    CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK = 3,  /* uint32_t, default 0x7 */
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES = 5,  /* uint32_t, default 256 */
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES = 6,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES = 7,
    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES = 8,
    CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT = 9,        /* float, default 0 */
    CUBLASLT_MATMUL_PREF_IMPL_MASK = 12,             /* uint64_t, default all */
} cublasLtMatmulPreferenceAttributes_t;

typedef enum { /* cublasLtMatmulAlgoCapAttributes_t */
    CUBLASLT_ALGO_CAP_SPLITK_SUPPORT = 0, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK = 1,
    CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT = 2, CUBLASLT_ALGO_CAP_STRIDED_BATCH_SUPPORT = 3,
    CUBLASLT_ALGO_CAP_OUT_OF_PLACE_RESULT_SUPPORT = 4, CUBLASLT_ALGO_CAP_UPLO_SUPPORT = 5,
    CUBLASLT_ALGO_CAP_TILE_IDS = 6, CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX = 7,
    CUBLASLT_ALGO_CAP_CUSTOM_MEMORY_ORDER = 10, CUBLASLT_ALGO_CAP_POINTER_MODE_MASK = 11,
    CUBLASLT_ALGO_CAP_EPILOGUE_MASK = 12, CUBLASLT_ALGO_CAP_STAGES_IDS = 13, CUBLASLT_ALGO_CAP_LD_NEGATIVE = 14,
    CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS = 15, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES = 16,
    CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES = 17, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES = 18,
    CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES = 19, CUBLASLT_ALGO_CAP_POINTER_ARRAY_BATCH_SUPPORT = 21,
    CUBLASLT_ALGO_CAP_FLOATING_POINT_EMULATION_SUPPORT = 22,
} cublasLtMatmulAlgoCapAttributes_t;

typedef enum { /* cublasLtMatmulAlgoConfigAttributes_t */
    CUBLASLT_ALGO_CONFIG_ID = 0,              /* int32_t, read only */
    CUBLASLT_ALGO_CONFIG_TILE_ID = 1,         /* uint32_t */
    CUBLASLT_ALGO_CONFIG_SPLITK_NUM = 2,      /* int32_t, default 1 */
    CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME = 3,/* uint32_t */
    CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING = 4,   /* uint32_t */
    CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION = 5,   /* uint32_t */
    CUBLASLT_ALGO_CONFIG_STAGES_ID = 6,       /* uint32_t */
    CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID = 7,  /* uint16_t */
    CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID = 8,/* uint16_t */
} cublasLtMatmulAlgoConfigAttributes_t;

/* cublasLtEpilogue_t bits: DEFAULT 1, RELU 2, BIAS 4, DRELU 8, BGRAD 16, GELU 32, DGELU 64, AUX 128,
 * BGRADA 256, BGRADB 512 */
#define CUBLASLT_EPILOGUE_DEFAULT 1u
#define TW_LT_EPILOGUE_ALL 0x3FFu

/* cublasLtMatmulTile_t values used here */
#define CUBLASLT_MATMUL_TILE_UNDEFINED 0u
#define CUBLASLT_MATMUL_TILE_64x64 15u
#define CUBLASLT_MATMUL_TILE_64x128 17u
#define CUBLASLT_MATMUL_TILE_128x64 18u
#define CUBLASLT_MATMUL_TILE_128x128 20u
#define CUBLASLT_MATMUL_TILE_128x256 23u
#define CUBLASLT_MATMUL_TILE_256x128 24u
/* cublasLtMatmulStages_t values used here */
#define CUBLASLT_MATMUL_STAGES_UNDEFINED 0u
#define CUBLASLT_MATMUL_STAGES_64x4 16u
#define CUBLASLT_MATMUL_STAGES_64xAUTO 35u
#define CUBLASLT_MATMUL_STAGES_128xAUTO 36u

/* cublasLtNumericalImplFlags_t bits */
#define TW_LT_IMPL_FMA (0x01ull)
#define TW_LT_IMPL_HMMA (0x02ull)
#define TW_LT_IMPL_IMMA (0x04ull)
#define TW_LT_IMPL_DMMA (0x08ull)
#define TW_LT_IMPL_ACC_16F (0x01ull << 8)
#define TW_LT_IMPL_ACC_32F (0x02ull << 8)
#define TW_LT_IMPL_ACC_64F (0x04ull << 8)
#define TW_LT_IMPL_ACC_32I (0x08ull << 8)
#define TW_LT_IMPL_IN_16F (0x01ull << 16)
#define TW_LT_IMPL_IN_16BF (0x02ull << 16)
#define TW_LT_IMPL_IN_TF32 (0x04ull << 16)
#define TW_LT_IMPL_IN_32F (0x08ull << 16)
#define TW_LT_IMPL_IN_64F (0x10ull << 16)
#define TW_LT_IMPL_IN_8I (0x20ull << 16)
#define TW_LT_IMPL_IN_8F_E4M3 (0x40ull << 16)
#define TW_LT_IMPL_IN_8F_E5M2 (0x80ull << 16)

/* cuBLASLt 13.1.0: cublasLtGetVersion() = 130100 */
#define TW_CUBLASLT_VERSION 130100

/* ---------------------------------------------------------------- the fake's own descriptor layouts */
#define TW_LT_MAGIC_HANDLE 0x74774C48u
#define TW_LT_MAGIC_DESC 0x74774C44u
#define TW_LT_MAGIC_LAYOUT 0x74774C4Cu
#define TW_LT_MAGIC_PREF 0x74774C50u
#define TW_LT_MAGIC_XFORM 0x74774C58u
#define TW_LT_MAGIC_EMUL 0x74774C45u
#define TW_LT_MAGIC_ALGO 0x74774C41u

struct cublasLtContext {
    uint32_t magic;
    int device;
};
typedef struct cublasLtContext *cublasLtHandle_t;

typedef struct tw_lt_matmul_desc {
    uint32_t magic;
    int32_t compute_type, scale_type, pointer_mode;
    int32_t transa, transb, transc, fill_mode;
    uint32_t epilogue;
    int32_t sm_count_target, aux_data_type, bias_data_type;
    int32_t a_scale_mode, b_scale_mode, c_scale_mode, d_scale_mode, aux_scale_mode, d_out_scale_mode;
    int8_t fast_accum;
    const void *bias;
    int64_t bias_batch_stride;
    void *aux;
    int64_t aux_ld, aux_batch_stride, alpha_vec_batch_stride;
    const void *a_scale, *b_scale, *c_scale, *d_scale;
    void *amax_d, *aux_scale, *aux_amax, *d_out_scale, *emulation;
} tw_lt_matmul_desc;
typedef tw_lt_matmul_desc *cublasLtMatmulDesc_t;

typedef struct tw_lt_layout {
    uint32_t magic;
    uint32_t type;
    uint64_t rows, cols;
    int64_t ld, batch_offset, plane_offset;
    int32_t order, batch_count;
    uint32_t batch_mode, pad;
} tw_lt_layout;
typedef tw_lt_layout *cublasLtMatrixLayout_t;

typedef struct tw_lt_pref {
    uint32_t magic;
    uint32_t search_mode;
    uint64_t max_workspace;
    uint32_t reduction_mask;
    uint32_t min_align[4];      /* A, B, C, D */
    float max_waves;
    uint64_t impl_mask;
} tw_lt_pref;
typedef tw_lt_pref *cublasLtMatmulPreference_t;

typedef struct tw_lt_xform {
    uint32_t magic;
    int32_t scale_type, pointer_mode, transa, transb;
} tw_lt_xform;
typedef tw_lt_xform *cublasLtMatrixTransformDesc_t;

typedef struct tw_lt_emul {
    uint32_t magic;
    int32_t strategy, special_values, mantissa_control, max_mantissa_bits, mantissa_bit_offset;
    int32_t *mantissa_bit_count_ptr;
} tw_lt_emul;
typedef tw_lt_emul *cublasLtEmulationDesc_t;

/* the 64 bytes of cublasLtMatmulAlgo_t */
typedef struct tw_lt_algo {
    int32_t id;
    uint32_t tile, splitk_num, reduction, swizzle, custom, stages;
    uint16_t inner_shape, cluster_shape;
    int32_t compute_type, scale_type, a_type, b_type, c_type, d_type;
    uint32_t min_align;         /* alignment (bytes) the configuration assumes */
    uint32_t magic;
} tw_lt_algo;

_Static_assert(sizeof(cublasLtMatmulAlgo_t) == 64, "cublasLtMatmulAlgo_t is 64 bytes");
_Static_assert(sizeof(tw_lt_algo) == 64, "algo layout fills cublasLtMatmulAlgo_t");
_Static_assert(sizeof(cublasLtMatmulHeuristicResult_t) == 96, "cublasLtMatmulHeuristicResult_t is 96 bytes");
_Static_assert(__builtin_offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize) == 64, "layout");
_Static_assert(__builtin_offsetof(cublasLtMatmulHeuristicResult_t, state) == 72, "layout");
_Static_assert(__builtin_offsetof(cublasLtMatmulHeuristicResult_t, wavesCount) == 76, "layout");
_Static_assert(sizeof(tw_lt_matmul_desc) <= sizeof(tw_lt_matmul_desc_storage), "matmul desc fits 256 bytes");
_Static_assert(sizeof(tw_lt_layout) <= sizeof(tw_lt_small_storage), "layout fits 64 bytes");
_Static_assert(sizeof(tw_lt_pref) <= sizeof(tw_lt_small_storage), "preference fits 64 bytes");
_Static_assert(sizeof(tw_lt_xform) <= sizeof(tw_lt_small_storage), "transform desc fits 64 bytes");
_Static_assert(sizeof(tw_lt_emul) <= sizeof(tw_lt_small_storage), "emulation desc fits 64 bytes");

/* ---------------------------------------------------------------- internal interface (hidden symbols) */
/* PyTorch passes its cuBLAS handle as the cuBLASLt handle (the real libraries allow it): the cuBLAS
 * handle starts with the same {magic, device} header (shim_c/cublas/cublas_types.h, TW_CUBLAS_MAGIC). */
#define TW_LT_MAGIC_CUBLAS_HANDLE 0x74774C42u
static inline int tw_lt_handle_ok(cublasLtHandle_t h) {
    return h && (h->magic == TW_LT_MAGIC_HANDLE || h->magic == TW_LT_MAGIC_CUBLAS_HANDLE);
}

/* A problem as cublasLtMatmul / AlgoGetHeuristic / AlgoCheck see it, after validation. */
typedef struct {
    int64_t m, n, k, batch;
    int a_type, b_type, c_type, d_type, compute_type, scale_type;
    int transa, transb;
    uint32_t epilogue;
} tw_lt_problem;

/* Validates the descriptor and layouts (CUBLAS_STATUS_INVALID_VALUE on inconsistency) and fills *p. */
cublasStatus_t tw_lt_problem_from(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t A, cublasLtMatrixLayout_t B,
                                  cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t D, tw_lt_problem *p);
/* The configuration the fake heuristic picks for a problem. */
void tw_lt_algo_for(const tw_lt_problem *p, uint32_t min_align, tw_lt_algo *out);
/* Tile id -> rows x cols (0,0 for unknown). */
void tw_lt_tile_dims(uint32_t tile, uint32_t *tm, uint32_t *tn);
int tw_lt_algo_valid(const cublasLtMatmulAlgo_t *algo);

#endif
