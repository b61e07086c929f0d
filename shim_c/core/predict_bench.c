/* What one prediction costs the launching thread (issue 3: a cached lookup at most 0.2 us; the cost of a
 * miss reported). Exported for integrations/benchmarks/predict_cost.py, which calls it once under
 * `timewarp run` (so the profile and the GPU are those of a real run) and prints the table.
 *
 * For each family it times n predictions of one launch (after the first, a cached lookup) and n
 * predictions of n distinct launches (each a miss that runs the predictor's layers and fills the cache),
 * in thread CPU time with charging paused, and reports the layer that answered. */
#include <string.h>
#include "internal.h"

enum { FAM_GEMM, FAM_ATTN, FAM_COPY, FAM_KERNEL, FAM_N };
static const char *const fam_name[FAM_N] = {"gemm", "attention", "memcpy", "kernel"};

static void make_op(int fam, int64_t v, tw_op *op) {
    static tw_kernel *k;
    if (!k) k = tw_kernel_intern("triton_poi_fused_mul_silu_0");
    memset(op, 0, sizeof *op);
    switch (fam) {
    case FAM_GEMM:                 /* bf16 [v,4096] x [4096,14336], as vLLM's MLP up-projection */
        op->kind = TW_OP_KERNEL;
        op->kernel = k;
        op->ann.kind = TW_ANN_GEMM;
        op->ann.u.gemm = (typeof(op->ann.u.gemm)){.m = 14336, .n = v, .k = 4096, .batch = 1, .a_type = 14,
                                                  .b_type = 14, .c_type = 14, .compute_type = 68,
                                                  .trans_a = 1, .trans_b = 0, .epilogue = 1};
        break;
    case FAM_ATTN:                 /* causal prefill, 32 heads over 8 KV heads of 128 */
        op->kind = TW_OP_KERNEL;
        op->kernel = k;
        op->ann.kind = TW_ANN_ATTENTION;
        op->ann.u.attn = (typeof(op->ann.u.attn)){.batch = 1, .q_len = v, .kv_len = v, .heads = 32,
                                                  .kv_heads = 8, .head_dim = 128, .causal = 1, .dtype = 14};
        break;
    case FAM_COPY:
        op->kind = TW_OP_MEMCPY;
        op->dir = TW_COPY_H2D;
        op->pinned = 1;
        op->bytes = (size_t)v * 4096;
        break;
    default:                       /* an unannotated kernel, by grid */
        op->kind = TW_OP_KERNEL;
        op->kernel = k;
        op->grid[0] = (uint32_t)v; op->grid[1] = op->grid[2] = 1;
        op->block[0] = 128; op->block[1] = op->block[2] = 1;
        break;
    }
}

/* out: FAM_N rows of {cached ns, miss ns, cached layer, miss layer}; returns the number of rows */
int tw_bench_predict(int dev, long n, double *out, int out_rows) {
    if (n < 1 || out_rows < FAM_N) return -1;
    tw_charge_pause();
    for (int f = 0; f < FAM_N; f++) {
        tw_op op;
        int layer = 0, miss_layer = 0;
        make_op(f, 512, &op);
        volatile uint64_t sink = tw_predict_ex(dev, &op, &layer);     /* fill the cache */
        uint64_t t0 = tw_thread_cpu_ns();
        for (long i = 0; i < n; i++) sink += tw_predict_ex(dev, &op, &layer);
        uint64_t t1 = tw_thread_cpu_ns();
        for (long i = 0; i < n; i++) {          /* distinct keys, never predicted before in this process */
            make_op(f, 4097 + i, &op);
            sink += tw_predict_ex(dev, &op, &miss_layer);
        }
        uint64_t t2 = tw_thread_cpu_ns();
        (void)sink;
        out[f * 4 + 0] = (double)(t1 - t0) / n;
        out[f * 4 + 1] = (double)(t2 - t1) / n;
        out[f * 4 + 2] = layer & 0xff;    /* without the TW_LAYER_SUSTAINED flag */
        out[f * 4 + 3] = miss_layer & 0xff;
    }
    tw_charge_resume();
    return FAM_N;
}

const char *tw_bench_predict_family(int row) { return row >= 0 && row < FAM_N ? fam_name[row] : NULL; }
