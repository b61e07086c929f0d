/* What cuBLAS does on the host around a GEMM launch that the fake library does not: loading a kernel at its
 * first use, and the extra operations some kernels need. Measured on the H200 with cuBLAS 13.1:
 *
 * - Lazy kernel loading (predictors/data/h200/launch_queue_2026-12-01/cublas_first_use.json). cuBLAS loads
 *   each GEMM kernel at its first use in the process, and the load waits for all the work queued on the
 *   device: a GEMM of a new shape issued behind 200 ms of GPU work returned after 199.8 ms, the same shape
 *   again after 0.2 ms. The load itself costs ~2.5 ms of host time (profile host line blas_kernel_load_ns).
 *   vLLM's eager steps meet it under serving: a step of a new token count whose GEMM picks a kernel not
 *   loaded yet waits for the step still on the GPU (predictors/data/h200/vllm_2026-12-01p and q).
 * - Which kernel a shape runs (predictors/data/h200/cublas_kernels_2026-12-01, profile lines blaskern):
 *   for four models' bf16 linear layers at every token count 1-8192 (lm_head rows 1-1024), in a fresh
 *   process, the calls that took over 0.8 ms were exactly the first uses of kernels not run before, across
 *   projections too (Llama-3-8B: qkv 88 new kernels / 88 slow calls, o 53 / 53, lm_head 12 / 12). So the
 *   unit of loading is the kernel, and shapes share kernels: about 100 kernels serve all 8192 token counts
 *   of a projection. A GEMM of a measured shape uses its kernel. One of another shape, a 16-bit type and
 *   B not transposed, within a factor of 2 of a measured shape in both m and k, uses the nearest measured
 *   shape's kernels (held out model by model, the nearest other model's tables predicted 79-182 loads
 *   where the real tables gave 89-169, over 300 random token counts; the previous stand-in below gave
 *   765-1207). The tables are bf16 with A transposed (F.linear). fp16 runs kernels of its own with the
 *   same tiles at 97-99% of the switch points, A not transposed (x @ W) other kernels at 88-96% of them
 *   (cublas_kernels_2026-12-01's _fp16_tn and _bf16_nn files: 103 loads predicted from the bf16 table
 *   against 114 and 106 real); both count as kernels apart from bf16's (the key has the types and
 *   transposes). Anything else falls back to the stand-in: a new kernel for every new shape, dimensions
 *   rounded up to a multiple of 8 up to 512, exact above. A captured GEMM records its kernel without
 *   waiting (vLLM warms every shape before capturing it). CUDA_MODULE_LOADING=EAGER: no load.
 * - Extra operations: stream-K/cooperative kernels zero a workspace first (a memset), split-K kernels are
 *   followed by a reduction kernel: each a slot of the stream's launch queue (stream.c) and a launch's host
 *   cost. Their GPU time is left in the GEMM's (the profile timed whole cuBLAS calls): 1 ns each. Measured
 *   shapes take them from the table (the lm_head's GEMM has its memset at every row count); others when
 *   the output has more than 1e7 elements.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "internal.h"

#define MEMSET_MIN_OUTPUT 10000000.0

/* ---- a set of 64-bit keys with a small value (open addressing; key 0 is empty) ---- */
typedef struct { uint64_t *keys; uint8_t *vals; size_t n, slots; } keymap;

static uint8_t *keymap_find(keymap *t, uint64_t key) {
    if (!t->slots) return NULL;
    for (size_t j = key & (t->slots - 1); t->keys[j]; j = (j + 1) & (t->slots - 1))
        if (t->keys[j] == key) return &t->vals[j];
    return NULL;
}

/* 1 if key was new (and is now in, with val); 0 if it was there (or memory ran out) */
static int keymap_put(keymap *t, uint64_t key, uint8_t val) {
    if (keymap_find(t, key)) return 0;
    if ((t->n + 1) * 2 > t->slots) {
        size_t ns = t->slots ? t->slots * 2 : 1024;
        uint64_t *nk = calloc(ns, sizeof *nk);
        uint8_t *nv = calloc(ns, 1);
        if (!nk || !nv) { free(nk); free(nv); return 0; }
        for (size_t i = 0; i < t->slots; i++) {
            if (!t->keys[i]) continue;
            size_t j = t->keys[i] & (ns - 1);
            while (nk[j]) j = (j + 1) & (ns - 1);
            nk[j] = t->keys[i];
            nv[j] = t->vals[i];
        }
        free(t->keys); free(t->vals);
        t->keys = nk; t->vals = nv; t->slots = ns;
    }
    size_t j = key & (t->slots - 1);
    while (t->keys[j]) j = (j + 1) & (t->slots - 1);
    t->keys[j] = key;
    t->vals[j] = val;
    t->n++;
    return 1;
}

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull; }

/* ---- the measured table: which kernel(s) a shape runs at each token count ---- */
typedef struct { int64_t m, k, n0, n1; int kid, kid2, memset; } kern_run;
typedef struct { int64_t m, k, nmax; size_t first, count; } kern_shape;
static kern_run *runs;
static size_t nruns, capruns;
static kern_shape *shapes;
static size_t nshapes;
static int indexed;

void tw_blas_table_add(int64_t m, int64_t k, int64_t n0, int64_t n1, int kid, int kid2, int memset_first) {
    if (m <= 0 || k <= 0 || n0 <= 0 || n1 < n0 || kid <= 0) return;
    if (nruns == capruns) {
        size_t nc = capruns ? capruns * 2 : 4096;
        kern_run *nr = realloc(runs, nc * sizeof *nr);
        if (!nr) return;
        runs = nr; capruns = nc;
    }
    runs[nruns++] = (kern_run){m, k, n0, n1, kid, kid2, memset_first};
    indexed = 0;
}

void tw_blas_table_clear(void) { nruns = 0; indexed = 0; }

static int run_cmp(const void *a, const void *b) {
    const kern_run *x = a, *y = b;
    if (x->m != y->m) return x->m < y->m ? -1 : 1;
    if (x->k != y->k) return x->k < y->k ? -1 : 1;
    return x->n0 < y->n0 ? -1 : x->n0 > y->n0;
}

static void index_table(void) {
    qsort(runs, nruns, sizeof *runs, run_cmp);
    free(shapes);
    shapes = NULL;
    nshapes = 0;
    for (size_t i = 0; i < nruns; i++) {
        if (!nshapes || shapes[nshapes - 1].m != runs[i].m || shapes[nshapes - 1].k != runs[i].k) {
            kern_shape *ns = realloc(shapes, (nshapes + 1) * sizeof *ns);
            if (!ns) break;
            shapes = ns;
            shapes[nshapes++] = (kern_shape){runs[i].m, runs[i].k, 0, i, 0};
        }
        kern_shape *sh = &shapes[nshapes - 1];
        sh->count++;
        if (runs[i].n1 > sh->nmax) sh->nmax = runs[i].n1;
    }
    indexed = 1;
}

/* The run of the measured shape nearest to (m, k) (within a factor of 2 in each) that covers n. */
static const kern_run *table_lookup(int64_t m, int64_t k, int64_t n) {
    if (!indexed) index_table();
    const kern_shape *best = NULL;
    double bd = 0;
    for (size_t i = 0; i < nshapes; i++) {
        const kern_shape *sh = &shapes[i];
        double dm = log2((double)m / sh->m), dk = log2((double)k / sh->k);
        if (fabs(dm) > 1 || fabs(dk) > 1 || n > sh->nmax) continue;
        double d = dm * dm + dk * dk;
        if (!best || d < bd) { best = sh; bd = d; }
    }
    if (!best) return NULL;
    size_t lo = best->first, hi = best->first + best->count;    /* the last run with n0 <= n */
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (runs[mid].n0 <= n) lo = mid; else hi = mid;
    }
    return runs[lo].n0 <= n && n <= runs[lo].n1 ? &runs[lo] : NULL;
}

/* ---- per process: the shapes met (value: classify's bits + 1) and the kernels loaded ---- */
static keymap shapes_met, kernels_loaded;
static int lazy_mode = -1;      /* 1: lazy loading (CUDA's default), 0: EAGER */

static uint64_t dim_class(int64_t d) { return (uint64_t)(d <= 512 ? (d + 7) / 8 * 8 : d); }

static uint64_t type_key(const tw_annotation *a) {
    uint64_t h = 0xcbf29ce484222325ull;
    uint64_t parts[] = {(uint64_t)(a->u.gemm.batch > 1), (uint64_t)a->u.gemm.a_type, (uint64_t)a->u.gemm.b_type,
                        (uint64_t)a->u.gemm.c_type, (uint64_t)a->u.gemm.compute_type, (uint64_t)a->u.gemm.trans_a,
                        (uint64_t)a->u.gemm.trans_b, (uint64_t)a->u.gemm.epilogue};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) h = mix(h, parts[i]);
    return h;
}

static uint64_t nonzero(uint64_t h) { return h ? h : 1; }

/* A new shape: the kernels it runs (up to two keys) and its extra operations (bit 0: a memset before the
 * GEMM, bit 1: a split-K reduction after it). */
static int classify(const tw_annotation *a, uint64_t kernels[2]) {
    uint64_t t = type_key(a);
    int halfs = (a->u.gemm.a_type == 14 || a->u.gemm.a_type == 2) && a->u.gemm.b_type == a->u.gemm.a_type;
    const kern_run *r = NULL;
    if (halfs && a->u.gemm.batch <= 1 && a->u.gemm.trans_b == 0)   /* TN (F.linear) measured; NN as well */
        r = table_lookup(a->u.gemm.m, a->u.gemm.k, a->u.gemm.n);
    if (r) {
        kernels[0] = nonzero(mix(mix(t, 1), (uint64_t)r->kid));
        kernels[1] = r->kid2 ? nonzero(mix(mix(t, 1), (uint64_t)r->kid2)) : 0;
        return (r->memset ? 1 : 0) | (r->kid2 ? 2 : 0);
    }
    kernels[0] = nonzero(mix(mix(mix(mix(t, 2), dim_class(a->u.gemm.m)), dim_class(a->u.gemm.n)), dim_class(a->u.gemm.k)));
    kernels[1] = 0;
    return (double)a->u.gemm.m * (double)a->u.gemm.n > MEMSET_MIN_OUTPUT;
}

void tw_blas_before_gemm(tw_stream *s, const tw_op *op) {
    if (op->ann.kind != TW_ANN_GEMM) return;
    if (__builtin_expect(lazy_mode < 0, 0)) {
        const char *v = getenv("CUDA_MODULE_LOADING");
        lazy_mode = !(v && !strcmp(v, "EAGER"));
    }
    const tw_annotation *a = &op->ann;
    uint64_t shape = nonzero(mix(mix(mix(type_key(a), (uint64_t)a->u.gemm.m), (uint64_t)a->u.gemm.n),
                                 (uint64_t)a->u.gemm.k));
    int capturing = tw_stream_capturing(s), load = 0, extra;   /* extra: classify's bits */
    TW_LOCK();
    uint8_t *met = keymap_find(&shapes_met, shape);
    if (met) {
        extra = *met - 1;
    } else {
        uint64_t kernels[2];
        extra = classify(a, kernels);
        keymap_put(&shapes_met, shape, (uint8_t)(extra + 1));
        for (int i = 0; i < 2; i++)
            if (kernels[i] && keymap_put(&kernels_loaded, kernels[i], 1)) load = 1;
    }
    TW_UNLOCK();
    if (load && lazy_mode && !capturing) {
        tw_device_synchronize(tw_stream_device(s));
        tw_charge_add(tw_profile_host_cost(TW_HOST_BLAS_KERNEL_LOAD));
    }
    if (capturing) return;
    /* the reduction runs after the GEMM on the real card; for the queue's count the order does not matter */
    for (int bit = 1; bit <= 2; bit <<= 1) {
        if (!(extra & bit)) continue;
        tw_op m = {.kind = TW_OP_MEMSET, .label = bit == 1 ? "Memset" : "cuBLAS split-K reduction",
                   .dir = TW_COPY_D2D, .bytes = 4, .pinned = 1, .duration = 1};
        tw_enqueue(s, &m);
    }
}
