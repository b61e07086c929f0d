/* What cuBLAS does on the host around a GEMM launch that the fake library does not: loading a kernel at its
 * first use, and the memset some kernels need. Measured on the H200 with cuBLAS 13.1
 * (predictors/data/h200/launch_queue_2026-12-01: cublas_first_use.json, launch_queue_gemm.json):
 *
 * - Lazy kernel loading. cuBLAS loads each GEMM kernel at its first use in the process, and the load waits
 *   for all the work queued on the device: a GEMM of a new shape issued behind 200 ms of GPU work returned
 *   after 199.8 ms, the same shape again after 0.2 ms; with the GPU idle a first use costs 2.4-2.9 ms of host
 *   time when it loads a kernel. vLLM's eager prefill steps meet it under serving: a step of a new token
 *   count, issued behind a long step still on the GPU, waits for all of it in its first GEMM
 *   (predictors/data/h200/vllm_2026-12-01p). Which kernel runs is cuBLAS's heuristic; its table for the
 *   default model's GEMMs shows the tile following the token count in steps of 8 up to 512 tokens, and
 *   above that odd token counts getting tiles of their own (5131 tokens: 256x160, 6155: 256x152). The
 *   stand-in for "a kernel not loaded yet": a GEMM whose dimensions (rounded up to a multiple of 8 where at
 *   most 512, exact above), types and transposes this process has not run. A captured GEMM records its
 *   key without waiting (vLLM warms every shape before capturing it). CUDA_MODULE_LOADING=EAGER: no load.
 * - The memset. Stream-K/cooperative kernels, which cuBLAS picks for large outputs, zero a workspace first:
 *   a second operation, and a second slot of the stream's launch queue (stream.c), and a second launch's
 *   host cost. In the table, GEMMs of more than about 1e7 output elements (m x n) have it, with a few
 *   exceptions either side. Its GPU time is left in the GEMM's (the profile timed whole cuBLAS calls).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include "internal.h"

#define MEMSET_MIN_OUTPUT 10000000.0

static uint64_t *seen;          /* open addressing; 0 is empty */
static size_t nseen, seen_slots;
static int lazy_mode = -1;      /* 1: lazy loading (CUDA's default), 0: EAGER */

static uint64_t dim_class(int64_t d) { return (uint64_t)(d <= 512 ? (d + 7) / 8 * 8 : d); }

static uint64_t gemm_key(const tw_annotation *a) {
    const uint64_t p = 0x100000001b3ull;
    uint64_t h = 0xcbf29ce484222325ull;
    uint64_t parts[] = {dim_class(a->u.gemm.m), dim_class(a->u.gemm.n), dim_class(a->u.gemm.k),
                        (uint64_t)(a->u.gemm.batch > 1), (uint64_t)a->u.gemm.a_type, (uint64_t)a->u.gemm.b_type,
                        (uint64_t)a->u.gemm.c_type, (uint64_t)a->u.gemm.compute_type,
                        (uint64_t)a->u.gemm.trans_a, (uint64_t)a->u.gemm.trans_b, (uint64_t)a->u.gemm.epilogue};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) h = (h ^ parts[i]) * p;
    return h ? h : 1;
}

/* 1 if key was not in the set (and is now); called with the lock held */
static int insert(uint64_t key) {
    if ((nseen + 1) * 2 > seen_slots) {
        size_t ns = seen_slots ? seen_slots * 2 : 1024;
        uint64_t *nt = calloc(ns, sizeof *nt);
        if (!nt) return 0;
        for (size_t i = 0; i < seen_slots; i++) {
            if (!seen[i]) continue;
            size_t j = seen[i] & (ns - 1);
            while (nt[j]) j = (j + 1) & (ns - 1);
            nt[j] = seen[i];
        }
        free(seen);
        seen = nt;
        seen_slots = ns;
    }
    size_t j = key & (seen_slots - 1);
    while (seen[j]) {
        if (seen[j] == key) return 0;
        j = (j + 1) & (seen_slots - 1);
    }
    seen[j] = key;
    nseen++;
    return 1;
}

void tw_blas_before_gemm(tw_stream *s, const tw_op *op) {
    if (op->ann.kind != TW_ANN_GEMM) return;
    if (__builtin_expect(lazy_mode < 0, 0)) {
        const char *v = getenv("CUDA_MODULE_LOADING");
        lazy_mode = !(v && !strcmp(v, "EAGER"));
    }
    int capturing = tw_stream_capturing(s);
    if (lazy_mode) {
        TW_LOCK();
        int fresh = insert(gemm_key(&op->ann));
        TW_UNLOCK();
        if (fresh && !capturing) {
            tw_device_synchronize(tw_stream_device(s));
            tw_charge_add(tw_profile_host_cost(TW_HOST_BLAS_KERNEL_LOAD));
        }
    }
    if (!capturing && (double)op->ann.u.gemm.m * (double)op->ann.u.gemm.n > MEMSET_MIN_OUTPUT) {
        /* 1 ns: its GPU time is inside the GEMM's profile rows (timed around the whole cuBLAS call) */
        tw_op m = {.kind = TW_OP_MEMSET, .label = "Memset", .dir = TW_COPY_D2D, .bytes = 4, .pinned = 1, .duration = 1};
        tw_enqueue(s, &m);
    }
}
