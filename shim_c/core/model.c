/* Durations: the measured profile answers first (profile.c: exact match, interpolation, nearest-neighbour
 * efficiency); this file is the last layer, an analytical roofline: FLOPs and bytes over the device's
 * measured rates, with a launch floor. Kernels with no annotation are priced by their launch size: every
 * thread is assumed to move 16 bytes, the typical vectorised elementwise access; Inductor's Triton kernels,
 * whose threads each cover 2 to 64 elements by the autotuned config, by their extents instead. */
#define _GNU_SOURCE
#include "internal.h"
#include "graph_internal.h"

/* cudaDataType_t values: R_16F 2, R_16BF 14, R_32F 0, R_64F 1, R_8I 3, R_8F_E4M3 28, R_8F_E5M2 29 */
static double elt_bytes(int t) {
    switch (t) {
    case 0: return 4; case 1: return 8; case 2: case 14: return 2;
    case 3: case 28: case 29: return 1; case 4: return 8; /* C_32F */ case 5: return 16;
    default: return 2;
    }
}

static double peak_for(const tw_gpu_spec *s, int a_type, int compute_type) {
    if (a_type == 28 || a_type == 29) return s->peak_flops_fp8;
    if (a_type == 2 || a_type == 14 || a_type == 3) return s->peak_flops_bf16;
    /* fp32 inputs: TF32 tensor cores when the compute type allows it (CUBLAS_COMPUTE_32F_FAST_TF32 = 77) */
    if (compute_type == 77) return s->peak_flops_bf16 / 2;
    if (a_type == 1) return s->peak_flops_fp32 / 2;
    return s->peak_flops_fp32;
}

/* Bytes an Inductor kernel moves per element of its extent and per tensor argument: bf16 activations.
 * Broadcast weights and per-row statistics count as full tensors, fp32 ones as bf16; the profile's
 * `inductormodel` row (predictors/fit_inductor.py) fits the efficiency and latency over this. */
#define INDUCTOR_BYTES 2.0

static uint64_t secs_to_ns(double s) { return s <= 0 ? 1 : (uint64_t)(s * 1e9 + 0.5); }

/* An annotated launch's compute time and memory time at the device's rates (GEMM, attention, and an Inductor
 * kernel whose extents were read): 0 when the launch has none of them. Shared by the roofline, the power
 * model (power.c, tw_power_draw) and graph.c's bandwidth demands of overlapping branches. */
int tw_annotated_times(const tw_gpu_spec *s, const tw_op *op, double *t_compute, double *t_memory) {
    const tw_annotation *a = &op->ann;
    if (a->kind == TW_ANN_GEMM) {
        double m = a->u.gemm.m, n = a->u.gemm.n, k = a->u.gemm.k, b = a->u.gemm.batch > 0 ? a->u.gemm.batch : 1;
        double bytes = b * ((m * k) * elt_bytes(a->u.gemm.a_type) + (k * n) * elt_bytes(a->u.gemm.b_type) +
                            (m * n) * elt_bytes(a->u.gemm.c_type));
        *t_compute = 2 * m * n * k * b / peak_for(s, a->u.gemm.a_type, a->u.gemm.compute_type);
        *t_memory = bytes / s->mem_bw;
        return 1;
    }
    if (a->kind == TW_ANN_ATTENTION) {
        double b = a->u.attn.batch, q = a->u.attn.q_len, kv = a->u.attn.kv_len, h = a->u.attn.heads,
               hk = a->u.attn.kv_heads > 0 ? a->u.attn.kv_heads : h, d = a->u.attn.head_dim;
        double pairs = q * kv;
        if (a->u.attn.causal && q > 1) pairs = q * kv - q * (q - 1) / 2; /* the masked triangle is skipped */
        *t_compute = 4 * b * h * pairs * d / (s->peak_flops_bf16 * 0.6);   /* attention reaches ~60% */
        *t_memory = 2 * b * d * (2 * q * h + 2 * kv * hk) / s->mem_bw;
        return 1;
    }
    if (a->kind == TW_ANN_NONE && op->ptr_args > 0 && op->rows[0] > 0) {
        /* an Inductor kernel (its extents read by kernel.c): each tensor argument read or written once over
         * the x (and r) extent, at INDUCTOR_BYTES per element and argument */
        double elems = (double)op->rows[0] * (op->rows[1] > 0 ? (double)op->rows[1] : 1.0);
        *t_compute = 0;
        *t_memory = INDUCTOR_BYTES * op->ptr_args * elems / s->mem_bw;
        return 1;
    }
    return 0;
}

/* A launch's compute and memory times at the device's rates, without the launch floor, where its bytes are
 * known and its share of them tells how it moves to another card (profile.c, transfer): a GEMM, attention, an
 * Inductor kernel whose extents were read, PyTorch's elementwise kernels and reductions (their element counts
 * and types: kernel.c), a D2D copy, a memset. 0 for other ops: another unannotated kernel's 16 bytes a thread
 * is a guess that may be several times off either way. */
int tw_roofline_parts(const tw_gpu_spec *s, const tw_op *op, double *t_compute, double *t_memory) {
    *t_compute = 0;
    switch (op->kind) {
    case TW_OP_KERNEL:
        if (tw_annotated_times(s, op, t_compute, t_memory)) return 1;
        if (op->ann.kind != TW_ANN_NONE || op->ew_bytes <= 0) return 0;
        *t_memory = op->ew_bytes / s->mem_bw;   /* PyTorch's elementwise kernels: their tensors' bytes */
        return 1;
    case TW_OP_MEMCPY:
        if (op->dir != TW_COPY_D2D) return 0;   /* host links: the roofline's ratio */
        *t_memory = op->bytes / (s->mem_bw / 2);
        return 1;
    case TW_OP_MEMSET: *t_memory = op->bytes / s->mem_bw; return 1;
    default: return 0;
    }
}

double tw_roofline_s(const tw_gpu_spec *s, const tw_op *op) {
    double floor = s->launch_floor_s;
    switch (op->kind) {
    case TW_OP_KERNEL:
    case TW_OP_COLLECTIVE: {
        const tw_annotation *a = &op->ann;
        double t, tb;
        if (tw_annotated_times(s, op, &t, &tb)) return (t > tb ? t : tb) + floor;
        if (a->kind == TW_ANN_COLLECTIVE) {
            /* one rank: a local copy; multi-rank costs come from the coordinator */
            return 2.0 * a->u.coll.bytes / s->mem_bw + floor;
        }
        double threads = (double)op->grid[0] * op->grid[1] * op->grid[2] * op->block[0] * op->block[1] * op->block[2];
        return threads * 16.0 / s->mem_bw + floor;
    }
    case TW_OP_MEMCPY: {
        double bw, lat = 2e-6;
        switch (op->dir) {
        case TW_COPY_H2D: case TW_COPY_D2H: bw = op->pinned ? s->pcie_bw : s->pcie_bw * 0.4; break;
        case TW_COPY_D2D: bw = s->mem_bw / 2; lat = floor; break;   /* read and write */
        default: bw = 20e9; lat = 1e-6; break;
        }
        return op->bytes / bw + lat;
    }
    case TW_OP_MEMSET: return op->bytes / s->mem_bw + floor;
    default: return 1e-9;
    }
}

uint64_t tw_predict_ex(int dev, const tw_op *op, int *layer) {
    const tw_gpu_spec *s = tw_device_spec(dev);
    if (layer) *layer = TW_LAYER_ROOFLINE;
    if (!s) return 1;
    if (op->kind == TW_OP_GRAPH) { if (layer) *layer = TW_LAYER_GRAPH; return tw_graph_exec_duration(op->exec); }
    if (op->kind == TW_OP_HOST_FUNC || op->kind == TW_OP_EVENT_RECORD || op->kind == TW_OP_EVENT_WAIT) return 1;
    double st = tw_step_predict_s(s, op);
    if (st > 0) { if (layer) *layer = TW_LAYER_STEP; return secs_to_ns(st); }
    double p = tw_profile_predict_s(s, op, layer);
    if (p > 0) return secs_to_ns(p);
    if (layer) *layer = TW_LAYER_ROOFLINE;
    return secs_to_ns(tw_roofline_s(s, op));
}

uint64_t tw_predict(int dev, const tw_op *op) { return tw_predict_ex(dev, op, NULL); }
