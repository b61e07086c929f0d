/* A mixture-of-experts launch's work, which its launch does not tell: vLLM's fused-MoE Triton kernel runs one
 * grid over every expert a batch routes to, with the routing in device memory. The binding that calls it
 * (integrations/vllm_plugin/moe_context.py) hands the launch's facts to tw_moe_next just before it; the next
 * kernel launch on the same thread takes them if its name begins with the prefix given (else they are
 * dropped: one launch only). Inside a CUDA graph the node keeps the annotation it was captured with.
 *
 * The model: the kernel is a batched GEMM over the experts the batch touches. With tokens routed to top_k of
 * E experts each, uniformly (what a dummy-weight router does), the expected number of experts touched is
 * E (1 - (1 - top_k / E)^tokens); each multiplies its share of the tokens x top_k rows, padded up to the
 * kernel's BLOCK_SIZE_M, by its [N, K] weights: the annotation is that batched GEMM (TW_GEMM_FUSED_MOE), and
 * profile.c times it by the `moemodel` row, t0 + max(bytes / (eff_m bw), flops / (eff_c peak)), fitted to the
 * kernel on the real H200 (predictors/fit_moe.py; without the row, as any GEMM of that shape). */
#include <math.h>
#include <string.h>
#include "internal.h"

static __thread struct {
    int set;
    char prefix[48];
    tw_annotation ann;
} pending;

void tw_moe_next(const char *kernel_prefix, int64_t tokens, int top_k, int experts, int64_t n, int64_t k,
                 int block_m, int w_type, int act_type) {
    pending.set = 0;
    if (!kernel_prefix || tokens <= 0 || top_k <= 0 || experts <= 0 || n <= 0 || k <= 0) return;
    double e = experts, rows = (double)tokens * top_k;
    double p = top_k >= experts ? 1.0 : top_k / e;
    double touched = e * (1.0 - pow(1.0 - p, (double)tokens));
    if (touched > rows) touched = rows;
    int64_t t = (int64_t)(touched + 0.5);
    if (t < 1) t = 1;
    if (t > experts) t = experts;
    double per = rows / (double)t;
    int64_t bm = block_m > 0 ? block_m : 1;
    int64_t padded = (int64_t)ceil(per / (double)bm) * bm;
    tw_annotation *a = &pending.ann;
    memset(a, 0, sizeof *a);
    a->kind = TW_ANN_GEMM;
    a->u.gemm.m = n; a->u.gemm.n = padded; a->u.gemm.k = k; a->u.gemm.batch = t;
    a->u.gemm.a_type = w_type; a->u.gemm.b_type = act_type; a->u.gemm.c_type = act_type;
    a->u.gemm.compute_type = -1;
    a->u.gemm.trans_a = 1; a->u.gemm.trans_b = 0;
    a->u.gemm.epilogue = 1;
    a->u.gemm.source = TW_GEMM_FUSED_MOE;
    strncpy(pending.prefix, kernel_prefix, sizeof pending.prefix - 1);
    pending.prefix[sizeof pending.prefix - 1] = 0;
    pending.set = 1;
}

void tw_moe_take(tw_op *op) {
    if (__builtin_expect(!pending.set, 1)) return;
    pending.set = 0;
    const tw_kernel *kn = op->kernel;
    if (!kn || op->ann.kind != TW_ANN_NONE) return;
    const char *name = kn->pretty ? kn->pretty : kn->name;
    if (!strncmp(name, pending.prefix, strlen(pending.prefix))) op->ann = pending.ann;
}
