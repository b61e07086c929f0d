/* What a cuDNN operation graph computes, and the one launch that stands for it.
 *
 * cudnn_frontend lowers torch's SDPA into one of two backend graphs:
 *   - the "unified" node: one CUDNN_BACKEND_OPERATION_SDPA_FWD/BWD_DESCRIPTOR naming Q, K, V, O (fp16 without
 *     masks, cuDNN >= 9.13.1);
 *   - the "composite" node, everything else (bf16, causal, bias, dropout): matmul(Q, K^T), pointwise scale,
 *     mask ops, a softmax made of reductions and pointwise exp/sub/div, matmul(P, V). The causal mask is two
 *     GEN_INDEX pointwise ops (row index, axis 2; column index, axis 3) compared with CMP_GE, both operands
 *     virtual, feeding a BINARY_SELECT with -inf. Padding masks compare an index with a real (non-virtual)
 *     sequence-length tensor instead, so they do not read as causal.
 * cuDNN runs either as one fused kernel. The analysis recovers (batch, heads, kv heads, q len, kv len, head dim,
 * causal, dtype) from the tensors' dimensions, so that Execute can launch one kernel with an attention
 * annotation. Graphs that are not attention (convolutions through torch's v8 API, matmul fusions, norms) are
 * launched as one kernel timed by a roofline over their FLOPs and the bytes of their real tensors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_internal.h"

/* The kernel cuDNN 9.19 runs for torch 2.11's bf16 SDPA forward on an H200 (causal and not, with and without
 * GQA), as seen on the real card. Other architectures and the backward pass get names that say they are
 * placeholders until the recorder has seen them. */
static const char SDPA_FPROP_SM90[] =
    "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_cga1x1x1_kernel0_0";

size_t twdnn_dtype_size(int dtype)
{
    switch (dtype) {
    case TWDNN_DATA_DOUBLE: case TWDNN_DATA_INT64: case TWDNN_DATA_COMPLEX_FP32: return 8;
    case TWDNN_DATA_COMPLEX_FP64: return 16;
    case TWDNN_DATA_HALF: case TWDNN_DATA_BFLOAT16: return 2;
    case TWDNN_DATA_INT8: case TWDNN_DATA_UINT8: case TWDNN_DATA_BOOLEAN: case TWDNN_DATA_FP8_E4M3:
    case TWDNN_DATA_FP8_E5M2: case TWDNN_DATA_FP8_E8M0: case TWDNN_DATA_FP4_E2M1: case TWDNN_DATA_INT4:
    case TWDNN_DATA_UINT4: return 1;   /* the 4-bit types are counted as one byte: an upper bound */
    default: return 4;
    }
}

static int to_cuda_dtype(int dnn)
{
    switch (dnn) {
    case TWDNN_DATA_HALF: return TW_CUDA_R_16F;
    case TWDNN_DATA_BFLOAT16: return TW_CUDA_R_16BF;
    case TWDNN_DATA_DOUBLE: return TW_CUDA_R_64F;
    case TWDNN_DATA_FP8_E4M3: return TW_CUDA_R_8F_E4M3;
    case TWDNN_DATA_FP8_E5M2: return TW_CUDA_R_8F_E5M2;
    case TWDNN_DATA_INT8: return TW_CUDA_R_8I;
    case TWDNN_DATA_INT32: return TW_CUDA_R_32I;
    case TWDNN_DATA_INT64: return TW_CUDA_R_64I;
    default: return TW_CUDA_R_32F;
    }
}

/* ------------------------------------------------------------------ tensor helpers */
typedef struct {
    int ok;
    int rank;
    int64_t dims[TWDNN_DIM_MAX];
    int64_t uid;
    int dtype;
    int is_virtual, by_value;
} tensor_info;

static tensor_info tensor_of(twdnn_desc *t)
{
    tensor_info ti;
    memset(&ti, 0, sizeof ti);
    if (!t || t->type != TWDNN_BACKEND_TENSOR_DESCRIPTOR)
        return ti;
    ti.rank = twdnn_desc_attr_ints(t, TWDNN_ATTR_TENSOR_DIMENSIONS, ti.dims, TWDNN_DIM_MAX);
    ti.ok = ti.rank > 0;
    int64_t v = 0;
    if (twdnn_desc_attr_ints(t, TWDNN_ATTR_TENSOR_UNIQUE_ID, &v, 1))
        ti.uid = v;
    v = TWDNN_DATA_FLOAT;
    twdnn_desc_attr_ints(t, TWDNN_ATTR_TENSOR_DATA_TYPE, &v, 1);
    ti.dtype = (int)v;
    v = 0;
    twdnn_desc_attr_ints(t, TWDNN_ATTR_TENSOR_IS_VIRTUAL, &v, 1);
    ti.is_virtual = v != 0;
    v = 0;
    twdnn_desc_attr_ints(t, TWDNN_ATTR_TENSOR_IS_BY_VALUE, &v, 1);
    ti.by_value = v != 0;
    return ti;
}

static double numel(const tensor_info *t)
{
    double n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= (double)(t->dims[i] > 0 ? t->dims[i] : 1);
    return n;
}

/* The real (in memory) tensors of the graph, each counted once, for the roofline's byte count. */
typedef struct {
    int64_t uids[256];
    int n;
    double bytes;
    int first_dtype;
} byte_count;

static void count_tensor(byte_count *bc, twdnn_desc *t)
{
    tensor_info ti = tensor_of(t);
    if (!ti.ok || ti.is_virtual || ti.by_value)
        return;
    for (int i = 0; i < bc->n; i++)
        if (bc->uids[i] == ti.uid)
            return;
    if (bc->n < (int)(sizeof bc->uids / sizeof bc->uids[0]))
        bc->uids[bc->n++] = ti.uid;
    if (bc->first_dtype < 0)
        bc->first_dtype = ti.dtype;
    bc->bytes += numel(&ti) * (double)twdnn_dtype_size(ti.dtype);
}

/* Every descriptor-valued attribute of an operation that is a tensor. */
static void count_op_tensors(byte_count *bc, twdnn_desc *op)
{
    for (int i = 0; i < op->n_attrs; i++) {
        const twdnn_attr *a = &op->attrs[i];
        if (a->type != TWDNN_TYPE_BACKEND_DESCRIPTOR)
            continue;
        for (int64_t j = 0; j < a->count; j++) {
            twdnn_desc *t = twdnn_desc_get(((twdnn_desc **)a->data)[j]);
            if (t && t->type == TWDNN_BACKEND_TENSOR_DESCRIPTOR)
                count_tensor(bc, t);
        }
    }
}

/* 2 * (output elements) * (reduction length): the FLOPs of a convolution, whichever pass. The reduction length
 * is the filter's size without its output-channel dimension (C/groups * R * S ...). */
static double conv_flops(const tensor_info *out, const tensor_info *filt)
{
    if (!out->ok || !filt->ok)
        return 0;
    double red = 1;
    for (int i = 1; i < filt->rank; i++)
        red *= (double)filt->dims[i];
    return 2.0 * numel(out) * red;
}

/* ------------------------------------------------------------------ the analysis */
static void attn_from(twdnn_graph_sum *s, const tensor_info *q, const tensor_info *k, int k_transposed,
                      const tensor_info *v)
{
    if (!q->ok || q->rank < 4 || !k->ok || k->rank < 4)
        return;
    s->batch = q->dims[0];
    s->heads = q->dims[1];
    s->q_len = q->dims[2];
    s->head_dim = q->dims[3];
    s->kv_heads = k->dims[1];
    s->kv_len = k_transposed ? k->dims[3] : k->dims[2];
    s->head_dim_v = (v && v->ok && v->rank >= 4) ? v->dims[3] : s->head_dim;
    s->dtype = q->dtype;
}

void twdnn_graph_analyze(twdnn_desc *graph, twdnn_graph_sum *s)
{
    memset(s, 0, sizeof *s);
    s->dtype = TWDNN_DATA_FLOAT;
    const twdnn_attr *ops = twdnn_desc_attr(graph, TWDNN_ATTR_OPERATIONGRAPH_OPS);
    if (!ops || ops->type != TWDNN_TYPE_BACKEND_DESCRIPTOR)
        return;
    s->n_ops = (int)ops->count;

    byte_count bc;
    memset(&bc, 0, sizeof bc);
    bc.first_dtype = -1;
    int n_matmul = 0, n_reduction = 0, n_exp = 0, causal_cmp = 0, gen_index = 0;
    int conv_kind = 0, has_norm = 0, sdpa_op = 0;
    int have_qk = 0, have_pv = 0;
    tensor_info q, kt, v;
    memset(&q, 0, sizeof q);
    memset(&kt, 0, sizeof kt);
    memset(&v, 0, sizeof v);

    for (int64_t i = 0; i < ops->count; i++) {
        twdnn_desc *op = twdnn_desc_get(((twdnn_desc **)ops->data)[i]);
        if (!op)
            continue;
        count_op_tensors(&bc, op);
        switch (op->type) {
        case TWDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR:
        case TWDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR: {
            int fwd = op->type == TWDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR;
            tensor_info tq = tensor_of(twdnn_desc_attr_desc(
                op, fwd ? TWDNN_ATTR_OPERATION_SDPA_FWD_QDESC : TWDNN_ATTR_OPERATION_SDPA_BWD_QDESC, 0));
            tensor_info tk = tensor_of(twdnn_desc_attr_desc(
                op, fwd ? TWDNN_ATTR_OPERATION_SDPA_FWD_KDESC : TWDNN_ATTR_OPERATION_SDPA_BWD_KDESC, 0));
            tensor_info tv = tensor_of(twdnn_desc_attr_desc(
                op, fwd ? TWDNN_ATTR_OPERATION_SDPA_FWD_VDESC : TWDNN_ATTR_OPERATION_SDPA_BWD_VDESC, 0));
            if (!sdpa_op) {
                sdpa_op = fwd ? 1 : 2;
                attn_from(s, &tq, &tk, 0, &tv);
            }
            break;
        }
        case TWDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR: {
            n_matmul++;
            tensor_info a = tensor_of(twdnn_desc_attr_desc(op, TWDNN_ATTR_OPERATION_MATMUL_ADESC, 0));
            tensor_info b = tensor_of(twdnn_desc_attr_desc(op, TWDNN_ATTR_OPERATION_MATMUL_BDESC, 0));
            tensor_info c = tensor_of(twdnn_desc_attr_desc(op, TWDNN_ATTR_OPERATION_MATMUL_CDESC, 0));
            if (a.ok && c.ok)
                s->flops += 2.0 * numel(&c) * (double)a.dims[a.rank - 1];
            /* S = Q K^T: both operands in memory, 4-d, contracting over the head dimension */
            if (!have_qk && a.ok && b.ok && a.rank == 4 && b.rank == 4 && !a.is_virtual && !b.is_virtual &&
                a.dims[3] == b.dims[2]) {
                have_qk = 1;
                q = a;
                kt = b;
            } else if (!have_pv && a.ok && b.ok && b.rank == 4 && a.is_virtual && !b.is_virtual) {
                have_pv = 1;   /* O = P V */
                v = b;
            }
            break;
        }
        case TWDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
            n_reduction++;
            break;
        case TWDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR: {
            twdnn_desc *pw = twdnn_desc_attr_desc(op, TWDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, 0);
            int64_t mode = -1;
            twdnn_desc_attr_ints(pw, TWDNN_ATTR_POINTWISE_MODE, &mode, 1);
            tensor_info x = tensor_of(twdnn_desc_attr_desc(op, TWDNN_ATTR_OPERATION_POINTWISE_XDESC, 0));
            tensor_info b = tensor_of(twdnn_desc_attr_desc(op, TWDNN_ATTR_OPERATION_POINTWISE_BDESC, 0));
            tensor_info y = tensor_of(twdnn_desc_attr_desc(op, TWDNN_ATTR_OPERATION_POINTWISE_YDESC, 0));
            if (y.ok)
                s->flops += numel(&y);
            if (mode == TWDNN_POINTWISE_EXP)
                n_exp++;
            else if (mode == TWDNN_POINTWISE_GEN_INDEX)
                gen_index++;
            else if (mode == TWDNN_POINTWISE_CMP_GE && x.ok && b.ok && x.is_virtual && b.is_virtual)
                causal_cmp = 1;   /* row index >= column index */
            break;
        }
        case TWDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR: {
            tensor_info y = tensor_of(twdnn_desc_attr_desc(op, TWDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, 0));
            tensor_info w = tensor_of(twdnn_desc_attr_desc(op, TWDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, 0));
            s->flops += conv_flops(&y, &w);
            if (!conv_kind)
                conv_kind = TWDNN_GRAPH_CONV_FWD;
            break;
        }
        case TWDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR: {
            tensor_info dy = tensor_of(twdnn_desc_attr_desc(op, TWDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, 0));
            tensor_info w = tensor_of(twdnn_desc_attr_desc(op, TWDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, 0));
            s->flops += conv_flops(&dy, &w);
            if (!conv_kind)
                conv_kind = TWDNN_GRAPH_CONV_BWD_DATA;
            break;
        }
        case TWDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR: {
            tensor_info dy = tensor_of(twdnn_desc_attr_desc(op, TWDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, 0));
            tensor_info dw = tensor_of(twdnn_desc_attr_desc(op, TWDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, 0));
            s->flops += conv_flops(&dy, &dw);
            if (!conv_kind)
                conv_kind = TWDNN_GRAPH_CONV_BWD_FILTER;
            break;
        }
        case TWDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR:
        case TWDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR:
            has_norm = 1;
            break;
        default:
            break;
        }
    }
    s->bytes = bc.bytes;
    if (bc.first_dtype >= 0)
        s->dtype = bc.first_dtype;

    if (sdpa_op) {
        s->kind = sdpa_op == 1 ? TWDNN_GRAPH_SDPA_FWD : TWDNN_GRAPH_SDPA_BWD;
        s->causal = 0;   /* the unified node takes no mask in cuDNN 9.19 */
    } else if (have_qk && n_matmul >= 2 && (n_reduction > 0 || n_exp > 0)) {
        /* forward: S = QK^T and O = PV; backward adds dV, dP, dQ, dK */
        s->kind = n_matmul >= 3 ? TWDNN_GRAPH_SDPA_BWD : TWDNN_GRAPH_SDPA_FWD;
        attn_from(s, &q, &kt, 1, have_pv ? &v : NULL);
        s->causal = causal_cmp && gen_index >= 2;
    } else if (conv_kind) {
        s->kind = conv_kind;
    } else if (n_matmul > 0) {
        s->kind = TWDNN_GRAPH_MATMUL;
    } else if (has_norm) {
        s->kind = TWDNN_GRAPH_NORM;
    } else {
        s->kind = TWDNN_GRAPH_GENERIC;
    }

    /* Workspace the plan asks for. The forward pass keeps everything on chip. The backward pass accumulates dQ
     * in fp32 and keeps a per-row softmax term (an estimate of cuDNN's request, to be checked on the H200). */
    if (s->kind == TWDNN_GRAPH_SDPA_BWD)
        s->workspace = s->batch * s->heads * s->q_len * (s->head_dim + 1) * 4;
}

/* ------------------------------------------------------------------ serialisation */
int twdnn_graph_sum_to_json(const twdnn_graph_sum *s, char *buf, size_t len)
{
    return snprintf(buf, len,
                    "{\"timewarp_cudnn_plan\":1,\"kind\":%d,\"n_ops\":%d,\"batch\":%lld,\"heads\":%lld,"
                    "\"kv_heads\":%lld,\"q_len\":%lld,\"kv_len\":%lld,\"head_dim\":%lld,\"head_dim_v\":%lld,"
                    "\"causal\":%d,\"dtype\":%d,\"flops\":%.17g,\"bytes\":%.17g,\"workspace\":%lld,"
                    "\"shared_mem\":%d}",
                    (int)s->kind, s->n_ops, (long long)s->batch, (long long)s->heads, (long long)s->kv_heads,
                    (long long)s->q_len, (long long)s->kv_len, (long long)s->head_dim, (long long)s->head_dim_v,
                    s->causal, s->dtype, s->flops, s->bytes, (long long)s->workspace, (int)s->shared_mem);
}

static int json_num(const char *json, const char *key, double *out)
{
    char pat[48];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(json, pat);
    if (!p)
        return 0;
    *out = strtod(p + strlen(pat), NULL);
    return 1;
}

int twdnn_graph_sum_from_json(const char *json, size_t len, twdnn_graph_sum *s)
{
    char buf[1024];
    if (!json || len == 0 || len >= sizeof buf)
        return 0;
    memcpy(buf, json, len);
    buf[len] = '\0';
    double x;
    if (!json_num(buf, "timewarp_cudnn_plan", &x) || x != 1)
        return 0;
    memset(s, 0, sizeof *s);
#define GET(field, key, type) do { if (json_num(buf, key, &x)) s->field = (type)x; } while (0)
    GET(kind, "kind", twdnn_graph_kind);
    GET(n_ops, "n_ops", int);
    GET(batch, "batch", int64_t);
    GET(heads, "heads", int64_t);
    GET(kv_heads, "kv_heads", int64_t);
    GET(q_len, "q_len", int64_t);
    GET(kv_len, "kv_len", int64_t);
    GET(head_dim, "head_dim", int64_t);
    GET(head_dim_v, "head_dim_v", int64_t);
    GET(causal, "causal", int);
    GET(dtype, "dtype", int);
    GET(flops, "flops", double);
    GET(bytes, "bytes", double);
    GET(workspace, "workspace", int64_t);
    GET(shared_mem, "shared_mem", int32_t);
#undef GET
    return 1;
}

/* ------------------------------------------------------------------ launches */
uint64_t twdnn_roofline_ns(int dev, double flops, double bytes, int dtype)
{
    const tw_gpu_spec *spec = tw_device_spec(dev);
    if (!spec)
        return 0;   /* let the core's model decide */
    double rate;
    switch (dtype) {
    case TWDNN_DATA_HALF: case TWDNN_DATA_BFLOAT16: rate = spec->peak_flops_bf16; break;
    case TWDNN_DATA_FP8_E4M3: case TWDNN_DATA_FP8_E5M2: rate = spec->peak_flops_fp8; break;
    /* fp32 convolutions run on TF32 tensor cores (torch.backends.cudnn.allow_tf32 is on by default): half the
     * 16-bit rate */
    case TWDNN_DATA_FLOAT: rate = spec->peak_flops_bf16 / 2; break;
    default: rate = spec->peak_flops_fp32; break;
    }
    double t = 0;
    if (rate > 0)
        t = flops / rate;
    if (spec->mem_bw > 0 && bytes / spec->mem_bw > t)
        t = bytes / spec->mem_bw;
    if (t < spec->launch_floor_s)
        t = spec->launch_floor_s;
    uint64_t ns = (uint64_t)(t * 1e9 + 0.5);
    return ns ? ns : 1;
}

tw_err twdnn_launch_roofline(tw_stream *st, const char *kernel_name, const char *label, double flops, double bytes,
                             int dtype)
{
    tw_op op;
    memset(&op, 0, sizeof op);
    op.kind = TW_OP_KERNEL;
    op.kernel = tw_kernel_intern(kernel_name);
    op.label = label;
    op.grid[0] = op.grid[1] = op.grid[2] = 1;
    op.block[0] = 128;
    op.block[1] = op.block[2] = 1;
    op.ann.kind = TW_ANN_NONE;
    op.duration = twdnn_roofline_ns(tw_stream_device(st), flops, bytes, dtype);
    return tw_enqueue(st, &op);
}

static uint32_t clamp_u32(int64_t v)
{
    return v < 1 ? 1 : v > 0x7fffffff ? 0x7fffffff : (uint32_t)v;
}

tw_err twdnn_graph_launch(const twdnn_graph_sum *s, tw_stream *st)
{
    static const char *const names[] = {
        [TWDNN_GRAPH_GENERIC] = "timewarp_cudnn_graph",
        [TWDNN_GRAPH_CONV_FWD] = "timewarp_cudnn_conv_fprop",
        [TWDNN_GRAPH_CONV_BWD_DATA] = "timewarp_cudnn_conv_dgrad",
        [TWDNN_GRAPH_CONV_BWD_FILTER] = "timewarp_cudnn_conv_wgrad",
        [TWDNN_GRAPH_MATMUL] = "timewarp_cudnn_matmul_fusion",
        [TWDNN_GRAPH_NORM] = "timewarp_cudnn_norm",
    };
    if (s->kind != TWDNN_GRAPH_SDPA_FWD && s->kind != TWDNN_GRAPH_SDPA_BWD)
        return twdnn_launch_roofline(st, names[s->kind], "cudnnBackendExecute", s->flops, s->bytes, s->dtype);

    int dev = tw_stream_device(st);
    const tw_gpu_spec *spec = tw_device_spec(dev);
    int cc = spec ? spec->cc_major * 10 + spec->cc_minor : 90;
    char name[160];
    if (s->kind == TWDNN_GRAPH_SDPA_FWD && cc == 90)
        snprintf(name, sizeof name, "%s", SDPA_FPROP_SM90);
    else
        snprintf(name, sizeof name, "timewarp_cudnn_sdpa_%s_sm%d", s->kind == TWDNN_GRAPH_SDPA_FWD ? "fprop" : "bprop",
                 cc);

    tw_op op;
    memset(&op, 0, sizeof op);
    op.kind = TW_OP_KERNEL;
    op.kernel = tw_kernel_intern(name);
    op.label = "cudnnBackendExecute";
    /* One CTA per 64-row tile of Q per head (the kernel's 64x128x128 tile), one warpgroup of four warps. The
     * launch geometry is a stand-in until the recorder has the real one; the annotation carries the shape. */
    op.grid[0] = clamp_u32((s->q_len + 63) / 64);
    op.grid[1] = clamp_u32(s->heads);
    op.grid[2] = clamp_u32(s->batch);
    op.block[0] = 128;
    op.block[1] = op.block[2] = 1;
    op.ann.kind = TW_ANN_ATTENTION;
    op.ann.u.attn.batch = s->batch;
    op.ann.u.attn.q_len = s->q_len;
    op.ann.u.attn.kv_len = s->kv_len;
    op.ann.u.attn.heads = s->heads;
    op.ann.u.attn.kv_heads = s->kv_heads;
    op.ann.u.attn.head_dim = s->head_dim;
    op.ann.u.attn.causal = s->causal;
    op.ann.u.attn.dtype = to_cuda_dtype(s->dtype);
    TW_DEBUG("cudnn: SDPA %s b=%lld h=%lld hk=%lld sq=%lld skv=%lld d=%lld causal=%d", 
             s->kind == TWDNN_GRAPH_SDPA_FWD ? "fwd" : "bwd", (long long)s->batch, (long long)s->heads,
             (long long)s->kv_heads, (long long)s->q_len, (long long)s->kv_len, (long long)s->head_dim, s->causal);
    return tw_enqueue(st, &op);
}
