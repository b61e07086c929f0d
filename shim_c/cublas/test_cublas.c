/* Check of the fake cuBLAS / cuBLASLt front ends against the core (not part of the libraries: the build
 * excludes test_*.c). Build and run from the repository root, after building libtimewarp.so, e.g.:
 *   gcc -std=gnu11 -Ishim_c/include -o /tmp/test_cublas shim_c/cublas/test_cublas.c \
 *       -L<build> -lcublas -lcublasLt -ltimewarp && TIMEWARP_TRACE=/tmp/t.json /tmp/test_cublas
 * (or compile the sources of shim_c/cublas and shim_c/cublaslt with the core into one executable).
 * Prints ALL OK and exits 0 on success. */
#include <stdio.h>
#include <string.h>
#include <assert.h>
#include "../cublaslt/lt_attr.h"

/* prototypes of the API under test */
cublasStatus_t cublasCreate_v2(cublasHandle_t *);
cublasStatus_t cublasDestroy_v2(cublasHandle_t);
cublasStatus_t cublasSetStream_v2(cublasHandle_t, void *);
cublasStatus_t cublasSgemm_v2(cublasHandle_t, int, int, int, int, int, const float *, const float *, int,
                              const float *, int, const float *, float *, int);
cublasStatus_t cublasGemmEx(cublasHandle_t, int, int, int, int, int, const void *, const void *, int, int,
                            const void *, int, int, const void *, void *, int, int, int, int);
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t, int, int, int, int, int, const void *, const void *, int,
                                          int, long long, const void *, int, int, long long, const void *, void *,
                                          int, int, long long, int, int, int);
cublasStatus_t cublasSdot_v2(cublasHandle_t, int, const float *, int, const float *, int, float *);
cublasStatus_t cublasSetMathMode(cublasHandle_t, int);
cublasStatus_t cublasSgetrsBatched(cublasHandle_t, int, int, int, const float *const[], int, const int *,
                                   float *const[], int, int *, int);
const char *cublasGetStatusString(cublasStatus_t);
cublasStatus_t cublasLtCreate(cublasLtHandle_t *);
size_t cublasLtGetVersion(void);
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *, int, int);
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t, int, const void *, size_t);
cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t, int, void *, size_t, size_t *);
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *, int, uint64_t, uint64_t, int64_t);
cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t, int, const void *, size_t);
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *);
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t, int, const void *, size_t);
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                              cublasLtMatmulPreference_t, int, cublasLtMatmulHeuristicResult_t *, int *);
cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *, const void *, cublasLtMatrixLayout_t,
                              const void *, cublasLtMatrixLayout_t, const void *, const void *, cublasLtMatrixLayout_t,
                              void *, cublasLtMatrixLayout_t, const cublasLtMatmulAlgo_t *, void *, size_t, void *);
cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t *, int, void *, size_t, size_t *);
cublasStatus_t cublasLtMatmulAlgoCapGetAttribute(const cublasLtMatmulAlgo_t *, int, void *, size_t, size_t *);
cublasStatus_t cublasLtMatmulAlgoCheck(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                       cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                       const cublasLtMatmulAlgo_t *, cublasLtMatmulHeuristicResult_t *);
cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t, size_t, int, uint64_t, uint64_t, int64_t);

#define CK(x, want) do { int _r = (x); if (_r != (want)) { printf("FAIL %s:%d %s -> %d want %d\n", __FILE__, __LINE__, #x, _r, want); fails++; } } while (0)

int main(void)
{
    int fails = 0;
    cublasHandle_t h;
    float one = 1, zero = 0, res = 5;
    CK(cublasSgemm_v2(NULL, 0, 0, 4, 4, 4, &one, 0, 4, 0, 4, &zero, 0, 4), 1);
    CK(cublasCreate_v2(&h), 0);
    CK(cublasSgemm_v2(h, 0, 0, -1, 4, 4, &one, 0, 4, 0, 4, &zero, 0, 4), 7);
    CK(cublasSgemm_v2(h, 0, 0, 8, 4, 4, &one, 0, 4, 0, 4, &zero, 0, 8), 7); /* lda < m */
    CK(cublasSgemm_v2(h, 1, 0, 8, 4, 4, &one, 0, 4, 0, 4, &zero, 0, 8), 0); /* lda >= k when T */
    CK(cublasSgemm_v2(h, 5, 0, 8, 4, 4, &one, 0, 4, 0, 4, &zero, 0, 8), 7);
    CK(cublasSgemm_v2(h, 0, 0, 8, 4, 4, &one, 0, 8, 0, 4, &zero, 0, 7), 7); /* ldc */
    CK(cublasSgemm_v2(h, 0, 0, 0, 4, 4, &one, 0, 1, 0, 4, &zero, 0, 1), 0);
    CK(cublasSetMathMode(h, 3 | 16), 0);
    CK(cublasSetMathMode(h, 5), 7);
    CK(cublasGemmEx(h, 1, 0, 4096, 512, 4096, &one, 0, 14, 4096, 0, 14, 4096, &zero, 0, 14, 4096, 68, -1), 0);
    CK(cublasGemmEx(h, 1, 0, 4096, 512, 4096, &one, 0, 14, 4096, 0, 14, 4096, &zero, 0, 14, 4096, 68, 50), 7);
    CK(cublasGemmStridedBatchedEx(h, 1, 0, 128, 128, 64, &one, 0, 14, 64, 0, 0, 14, 64, 0, &zero, 0, 14, 128, 0, 32, 68, -1), 0);
    CK(cublasGemmStridedBatchedEx(h, 1, 0, 128, 128, 64, &one, 0, 14, 64, 0, 0, 14, 64, 0, &zero, 0, 14, 128, 0, -1, 68, -1), 7);
    CK(cublasSdot_v2(h, 100, 0, 1, 0, 1, &res), 0);
    if (res != 0) { printf("FAIL dot result %f\n", res); fails++; }
    int info = 7;
    CK(cublasSgetrsBatched(h, 0, 4, 1, 0, 2, 0, 0, 4, &info, 2), 7);
    if (info != -5) { printf("FAIL getrs info %d\n", info); fails++; }
    CK(cublasSgetrsBatched(h, 0, 4, 1, 0, 4, 0, 0, 4, &info, 2), 0);
    if (info != 0) { printf("FAIL getrs info %d\n", info); fails++; }
    printf("status string: %s\n", cublasGetStatusString(7));
    CK(cublasDestroy_v2(h), 0);

    /* Lt */
    cublasLtHandle_t lt;
    CK(cublasLtCreate(&lt), 0);
    printf("lt version %zu\n", cublasLtGetVersion());
    cublasLtMatmulDesc_t d;
    CK(cublasLtMatmulDescCreate(&d, 68, 0), 0);
    int32_t t = 1;
    CK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &t, 4), 0);
    CK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &t, 8), 7);
    t = 9;
    CK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &t, 4), 7);
    uint32_t epi = 4 | 32; /* GELU_BIAS */
    CK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, 4), 0);
    int8_t fa = 1;
    CK(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fa, 1), 0);
    size_t w = 0; int32_t v = 0;
    CK(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, NULL, 0, &w), 0);
    if (w != 4) { printf("FAIL sizeWritten %zu\n", w); fails++; }
    CK(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &v, 4, &w), 0);
    if (v != -1) { printf("FAIL default bias dtype %d\n", v); fails++; }
    CK(cublasLtMatmulDescGetAttribute(d, 9, &v, 4, &w), 7);
    /* D = A^T B: A is k x m (4096 x 1024), B k x n (4096 x 256) */
    cublasLtMatrixLayout_t la, lb, lc;
    CK(cublasLtMatrixLayoutCreate(&la, 14, 4096, 1024, 4096), 0);
    CK(cublasLtMatrixLayoutCreate(&lb, 14, 4096, 256, 4096), 0);
    CK(cublasLtMatrixLayoutCreate(&lc, 14, 1024, 256, 1024), 0);
    int32_t bc = 8;
    CK(cublasLtMatrixLayoutSetAttribute(lc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, 4), 0);
    cublasLtMatmulPreference_t pref;
    CK(cublasLtMatmulPreferenceCreate(&pref), 0);
    uint64_t ws = 1 << 20;
    CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, 8), 0);
    uint32_t al = 8;
    CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al, 4), 0);
    cublasLtMatmulHeuristicResult_t r[4];
    int n = -1;
    CK(cublasLtMatmulAlgoGetHeuristic(lt, d, la, lb, lc, lc, pref, 4, r, &n), 0);
    if (n != 1 || r[0].state != 0 || r[0].wavesCount != 1.0f || r[0].workspaceSize > ws) { printf("FAIL heur\n"); fails++; }
    uint32_t tile = 0; w = 0;
    CK(cublasLtMatmulAlgoConfigGetAttribute(&r[0].algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, 4, &w), 0);
    uint32_t ma = 0;
    CK(cublasLtMatmulAlgoCapGetAttribute(&r[0].algo, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, &ma, 4, &w), 0);
    printf("tile id %u min align %u\n", tile, ma);
    CK(cublasLtMatmulAlgoCheck(lt, d, la, lb, lc, lc, &r[0].algo, &r[1]), 0);
    CK(cublasLtMatmul(lt, d, &one, 0, la, 0, lb, &zero, 0, lc, 0, lc, &r[0].algo, 0, 0, 0), 0);
    CK(cublasLtMatmul(lt, d, &one, 0, la, 0, lb, &zero, 0, lc, 0, lc, NULL, 0, 0, 0), 0);
    CK(cublasLtMatmul(lt, d, &one, 0, lb, 0, lb, &zero, 0, lc, 0, lc, NULL, 0, 0, 0), 7); /* shape mismatch */
    CK(cublasLtMatmul(NULL, d, &one, 0, la, 0, lb, &zero, 0, lc, 0, lc, NULL, 0, 0, 0), 1);
    tw_lt_small_storage st;
    CK(cublasLtMatrixLayoutInit_internal((cublasLtMatrixLayout_t)&st, sizeof st, 14, 10, 10, 10), 0);
    CK(cublasLtMatrixLayoutInit_internal((cublasLtMatrixLayout_t)&st, 16, 14, 10, 10, 10), 3);
    printf("%s\n", fails ? "FAILURES" : "ALL OK");
    return fails != 0;
}
