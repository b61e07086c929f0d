/* The recorder's GEMM entry points: each is the real cuBLAS/cuBLASLt function (dlsym RTLD_NEXT), called
 * with the same arguments, between tw_rec_gemm_begin and tw_rec_gemm_end, so that the kernels it launches
 * carry the annotation the emulator's fake cuBLAS records for the same call (shim_c/cublas/gemm.c: m, n, k,
 * batch, the three data types, the compute type cuBLAS runs it with (blas_common.h's tw_blas_compute_ex and
 * tw_blas_compute_for, from the handle's math mode: fp32 under TF32 math is 77), transposes, epilogue 1; cuBLASLt,
 * shim_c/cublaslt/matmul.c: m, n from D's layout, k from A's (TRANSA considered), batch from D's
 * BATCH_COUNT, types from the layouts, compute type, transposes and epilogue from the descriptor).
 *
 * The entry points PyTorch 2.11 calls for matmuls are covered: cublasGemmEx, cublasGemmStridedBatchedEx,
 * cublasSgemm_v2, cublasSgemmStridedBatched and cublasLtMatmul (FP32, FP16/BF16 GEMMs and their batched
 * forms, and the Lt path with bias epilogues). A GEMM through another entry point is recorded as a kernel
 * without annotation. The library is preloaded: these definitions come before libcublas's in the lookup. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include "record.h"
#include "blas_common.h"

typedef int st_t;   /* cublasStatus_t */
#define LT_LAYOUT_TYPE 0
#define LT_LAYOUT_ROWS 2
#define LT_LAYOUT_COLS 3
#define LT_LAYOUT_BATCH_COUNT 5
#define LT_DESC_COMPUTE_TYPE 0
#define LT_DESC_TRANSA 3
#define LT_DESC_TRANSB 4
#define LT_DESC_EPILOGUE 7

static _Atomic uint64_t calls;

/* The real function: from the library already loaded under its soname. PyTorch loads cuBLAS as a
 * dependency of a library Python opened locally, outside the global scope that dlsym(RTLD_NEXT) searches. */
static void *real_symbol(const char *name, int lt) {
    static const char *const blas[] = {"libcublas.so.13", "libcublas.so.12", NULL};
    static const char *const blaslt[] = {"libcublasLt.so.13", "libcublasLt.so.12", NULL};
    void *f = dlsym(RTLD_NEXT, name);
    for (const char *const *so = lt ? blaslt : blas; !f && *so; so++) {
        void *h = dlopen(*so, RTLD_NOW | RTLD_NOLOAD);
        if (h) f = dlsym(h, name);
    }
    return f;
}

#define REAL(name, type) static type real_##name; \
    if (!real_##name) real_##name = (type)real_symbol(#name, !strncmp(#name, "cublasLt", 8)); \
    if (!real_##name) return 7 /* CUBLAS_STATUS_INVALID_VALUE: no real library below us */

/* the handle's math mode, from the real library (0, the default, if it cannot be asked) */
static int math_mode(void *h) {
    typedef st_t (*get_t)(void *, int *);
    static get_t get;
    if (!get) get = (get_t)real_symbol("cublasGetMathMode", 0);
    int mode = 0;
    if (!get || get(h, &mode) != 0) return 0;
    return mode;
}

#define AROUND(gemm, call) do { \
        tw_rec_gemm g_ = gemm; \
        g_.id = ++calls; \
        tw_rec_gemm_begin(&g_); \
        st_t s_ = call; \
        tw_rec_gemm_end(); \
        return s_; \
    } while (0)

typedef st_t (*gemm_ex_t)(void *, int, int, int, int, int, const void *, const void *, int, int, const void *, int,
                          int, const void *, void *, int, int, int, int);
st_t cublasGemmEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A, int at, int lda,
                  const void *B, int bt, int ldb, const void *beta, void *C, int ct, int ldc, int compute, int algo) {
    REAL(cublasGemmEx, gemm_ex_t);
    AROUND(((tw_rec_gemm){.m = m, .n = n, .k = k, .batch = 1, .a_type = at, .b_type = bt, .c_type = ct,
                          .compute = tw_blas_compute_ex(math_mode(h), compute, at, bt), .trans_a = ta, .trans_b = tb,
                          .epilogue = 1, .api = "cublasGemmEx"}),
           real_cublasGemmEx(h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, compute, algo));
}

typedef st_t (*gemm_sb_ex_t)(void *, int, int, int, int, int, const void *, const void *, int, int, long long,
                             const void *, int, int, long long, const void *, void *, int, int, long long, int, int,
                             int);
st_t cublasGemmStridedBatchedEx(void *h, int ta, int tb, int m, int n, int k, const void *alpha, const void *A, int at,
                                int lda, long long sa, const void *B, int bt, int ldb, long long sb, const void *beta,
                                void *C, int ct, int ldc, long long sc, int batch, int compute, int algo) {
    REAL(cublasGemmStridedBatchedEx, gemm_sb_ex_t);
    AROUND(((tw_rec_gemm){.m = m, .n = n, .k = k, .batch = batch, .a_type = at, .b_type = bt, .c_type = ct,
                          .compute = tw_blas_compute_ex(math_mode(h), compute, at, bt), .trans_a = ta,
                          .trans_b = tb, .epilogue = 1, .api = "cublasGemmStridedBatchedEx"}),
           real_cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct,
                                           ldc, sc, batch, compute, algo));
}

typedef st_t (*sgemm_t)(void *, int, int, int, int, int, const float *, const float *, int, const float *, int,
                        const float *, float *, int);
st_t cublasSgemm_v2(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *A, int lda,
                    const float *B, int ldb, const float *beta, float *C, int ldc) {
    REAL(cublasSgemm_v2, sgemm_t);
    AROUND(((tw_rec_gemm){.m = m, .n = n, .k = k, .batch = 1, .a_type = CUDA_R_32F, .b_type = CUDA_R_32F,
                          .c_type = CUDA_R_32F, .compute = tw_blas_compute_for(math_mode(h), CUDA_R_32F),
                          .trans_a = ta, .trans_b = tb, .epilogue = 1, .api = "cublasSgemm_v2"}),
           real_cublasSgemm_v2(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc));
}

typedef st_t (*sgemm_sb_t)(void *, int, int, int, int, int, const float *, const float *, int, long long,
                           const float *, int, long long, const float *, float *, int, long long, int);
st_t cublasSgemmStridedBatched(void *h, int ta, int tb, int m, int n, int k, const float *alpha, const float *A,
                               int lda, long long sa, const float *B, int ldb, long long sb, const float *beta,
                               float *C, int ldc, long long sc, int batch) {
    REAL(cublasSgemmStridedBatched, sgemm_sb_t);
    AROUND(((tw_rec_gemm){.m = m, .n = n, .k = k, .batch = batch, .a_type = CUDA_R_32F, .b_type = CUDA_R_32F,
                          .c_type = CUDA_R_32F, .compute = tw_blas_compute_for(math_mode(h), CUDA_R_32F),
                          .trans_a = ta, .trans_b = tb, .epilogue = 1, .api = "cublasSgemmStridedBatched"}),
           real_cublasSgemmStridedBatched(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc,
                                          batch));
}

/* ---------------------------------------------------------------- cuBLASLt */
typedef st_t (*layout_get_t)(const void *, int, void *, size_t, size_t *);
typedef st_t (*desc_get_t)(const void *, int, void *, size_t, size_t *);
static layout_get_t layout_get;
static desc_get_t desc_get;

static uint64_t lget(const void *l, int attr, size_t size) {
    uint64_t v = 0;
    size_t written = 0;
    if (l && layout_get) layout_get(l, attr, &v, size, &written);
    return v;
}

static uint64_t dget(const void *d, int attr, size_t size) {
    uint64_t v = 0;
    size_t written = 0;
    if (d && desc_get) desc_get(d, attr, &v, size, &written);
    return v;
}

typedef st_t (*lt_matmul_t)(void *, void *, const void *, const void *, void *, const void *, void *, const void *,
                            const void *, void *, void *, void *, const void *, void *, size_t, void *);
st_t cublasLtMatmul(void *h, void *desc, const void *alpha, const void *A, void *Ad, const void *B, void *Bd,
                    const void *beta, const void *C, void *Cd, void *D, void *Dd, const void *algo, void *ws,
                    size_t wss, void *stream) {
    REAL(cublasLtMatmul, lt_matmul_t);
    if (!layout_get) layout_get = (layout_get_t)real_symbol("cublasLtMatrixLayoutGetAttribute", 1);
    if (!desc_get) desc_get = (desc_get_t)real_symbol("cublasLtMatmulDescGetAttribute", 1);
    int transa = (int)dget(desc, LT_DESC_TRANSA, 4), transb = (int)dget(desc, LT_DESC_TRANSB, 4);
    int64_t batch = (int32_t)lget(Dd, LT_LAYOUT_BATCH_COUNT, 4);
    AROUND(((tw_rec_gemm){.m = (int64_t)lget(Dd, LT_LAYOUT_ROWS, 8), .n = (int64_t)lget(Dd, LT_LAYOUT_COLS, 8),
                          .k = (int64_t)lget(Ad, transa == 0 ? LT_LAYOUT_COLS : LT_LAYOUT_ROWS, 8),
                          .batch = batch > 0 ? batch : 1, .a_type = (int)lget(Ad, LT_LAYOUT_TYPE, 4),
                          .b_type = (int)lget(Bd, LT_LAYOUT_TYPE, 4), .c_type = (int)lget(Dd, LT_LAYOUT_TYPE, 4),
                          .compute = (int)dget(desc, LT_DESC_COMPUTE_TYPE, 4), .trans_a = transa, .trans_b = transb,
                          .epilogue = (int)dget(desc, LT_DESC_EPILOGUE, 4), .api = "cublasLtMatmul"}),
           real_cublasLtMatmul(h, desc, alpha, A, Ad, B, Bd, beta, C, Cd, D, Dd, algo, ws, wss, stream));
}
