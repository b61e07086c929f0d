/* Standalone test of the fake cuDNN (not part of the library): replays, at the C level, the backend calls that
 * cudnn_frontend makes for torch's causal GQA SDPA (composite node) and a legacy convolution, against a mock
 * of the core that records what is enqueued. Build and run:
 *   cd shim_c/cudnn && gcc -std=gnu11 -Wall -I../include test_cudnn_backend.c backend.c graph.c handle.c \
 *       version.c legacy_desc.c convolution.c -lm -lpthread -o /tmp/test_cudnn && /tmp/test_cudnn
 * The full frontend flow (cudnn_frontend 1.18 headers, as compiled into torch 2.11) is exercised by
 * test_frontend_sdpa.cpp; see README.md. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudnn_internal.h"
#include "legacy_desc.h"

/* ------------------------------------------------------------------ mock core */
int tw_debug = 0;
void tw_log(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
void tw_init(void) {}
int tw_device_count(void) { return 1; }
int tw_get_device(void) { return 0; }
static tw_gpu_spec h200 = {.key = "H200", .name = "NVIDIA H200", .cc_major = 9, .cc_minor = 0, .sm_count = 132,
                           .peak_flops_bf16 = 989e12, .peak_flops_fp32 = 67e12, .peak_flops_fp8 = 1979e12,
                           .mem_bw = 4.0e12, .launch_floor_s = 2e-6};
const tw_gpu_spec *tw_device_spec(int dev) { return dev == 0 ? &h200 : NULL; }
static int the_stream;
tw_stream *tw_stream_get(void *h, int ptd)
{
    (void)ptd;
    return (!h || h == (void *)&the_stream) ? (tw_stream *)&the_stream : NULL;
}
int tw_stream_device(const tw_stream *s) { (void)s; return 0; }
static tw_kernel kernels[16];
static int n_kernels;
tw_kernel *tw_kernel_intern(const char *name)
{
    for (int i = 0; i < n_kernels; i++)
        if (!strcmp(kernels[i].name, name))
            return &kernels[i];
    kernels[n_kernels].name = strdup(name);
    return &kernels[n_kernels++];
}
static int n_ops;
static tw_op last;
tw_err tw_enqueue(tw_stream *s, tw_op *op)
{
    (void)s;
    n_ops++;
    last = *op;
    return TW_OK;
}

/* ------------------------------------------------------------------ the cuDNN entry points under test */
size_t cudnnGetVersion(void);
int cudnnGetProperty(int, int *);
const char *cudnnGetErrorString(int);
int cudnnCreate(void **);
int cudnnDestroy(void *);
int cudnnSetStream(void *, void *);
int cudnnBackendCreateDescriptor(int, void **);
int cudnnBackendDestroyDescriptor(void *);
int cudnnBackendFinalize(void *);
int cudnnBackendSetAttribute(void *, int, int, int64_t, const void *);
int cudnnBackendGetAttribute(void *, int, int, int64_t, int64_t *, void *);
int cudnnBackendExecute(void *, void *, void *);
int cudnnCreateTensorDescriptor(void **);
int cudnnSetTensor4dDescriptor(void *, int, int, int, int, int, int);
int cudnnCreateFilterDescriptor(void **);
int cudnnSetFilter4dDescriptor(void *, int, int, int, int, int, int);
int cudnnCreateConvolutionDescriptor(void **);
int cudnnSetConvolution2dDescriptor(void *, int, int, int, int, int, int, int, int);
int cudnnGetConvolution2dForwardOutputDim(const void *, const void *, const void *, int *, int *, int *, int *);
int cudnnGetConvolutionForwardAlgorithm_v7(void *, const void *, const void *, const void *, const void *, int,
                                           int *, void *);
int cudnnDestroyTensorDescriptor(void *);
int cudnnDestroyFilterDescriptor(void *);
int cudnnDestroyConvolutionDescriptor(void *);
int cudnnConvolutionForward(void *, const void *, const void *, const void *, const void *, const void *,
                            const void *, int, void *, size_t, const void *, const void *, void *);

static int failures;
#define EXPECT(cond)                                                                 \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);      \
            failures++;                                                              \
        }                                                                            \
    } while (0)
#define OK(call) EXPECT((call) == TWDNN_STATUS_SUCCESS)

static void *tensor(int64_t uid, int dtype, int virt, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    void *t;
    int64_t dims[4] = {d0, d1, d2, d3}, strides[4] = {d1 * d2 * d3, d2 * d3, d3, 1}, align = 16;
    int dt = dtype;
    unsigned char v = (unsigned char)virt;
    OK(cudnnBackendCreateDescriptor(TWDNN_BACKEND_TENSOR_DESCRIPTOR, &t));
    OK(cudnnBackendSetAttribute(t, TWDNN_ATTR_TENSOR_DATA_TYPE, TWDNN_TYPE_DATA_TYPE, 1, &dt));
    OK(cudnnBackendSetAttribute(t, TWDNN_ATTR_TENSOR_DIMENSIONS, TWDNN_TYPE_INT64, 4, dims));
    OK(cudnnBackendSetAttribute(t, TWDNN_ATTR_TENSOR_STRIDES, TWDNN_TYPE_INT64, 4, strides));
    OK(cudnnBackendSetAttribute(t, TWDNN_ATTR_TENSOR_UNIQUE_ID, TWDNN_TYPE_INT64, 1, &uid));
    OK(cudnnBackendSetAttribute(t, TWDNN_ATTR_TENSOR_BYTE_ALIGNMENT, TWDNN_TYPE_INT64, 1, &align));
    OK(cudnnBackendSetAttribute(t, TWDNN_ATTR_TENSOR_IS_VIRTUAL, TWDNN_TYPE_BOOLEAN, 1, &v));
    OK(cudnnBackendFinalize(t));
    return t;
}

static void *matmul(void *a, void *b, void *c)
{
    void *desc, *op;
    int comp = TWDNN_DATA_FLOAT;
    OK(cudnnBackendCreateDescriptor(TWDNN_BACKEND_MATMUL_DESCRIPTOR, &desc));
    OK(cudnnBackendSetAttribute(desc, 1500 /* MATMUL_COMP_TYPE */, TWDNN_TYPE_DATA_TYPE, 1, &comp));
    OK(cudnnBackendFinalize(desc));
    OK(cudnnBackendCreateDescriptor(TWDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, &op));
    OK(cudnnBackendSetAttribute(op, TWDNN_ATTR_OPERATION_MATMUL_ADESC, TWDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a));
    OK(cudnnBackendSetAttribute(op, TWDNN_ATTR_OPERATION_MATMUL_BDESC, TWDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b));
    OK(cudnnBackendSetAttribute(op, TWDNN_ATTR_OPERATION_MATMUL_CDESC, TWDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c));
    OK(cudnnBackendSetAttribute(op, 1523 /* OPERATION_MATMUL_DESC */, TWDNN_TYPE_BACKEND_DESCRIPTOR, 1, &desc));
    OK(cudnnBackendFinalize(op));
    OK(cudnnBackendDestroyDescriptor(desc));   /* the operation keeps it */
    return op;
}

static void *pointwise(int mode, void *x, void *b, void *y)
{
    void *desc, *op;
    OK(cudnnBackendCreateDescriptor(TWDNN_BACKEND_POINTWISE_DESCRIPTOR, &desc));
    OK(cudnnBackendSetAttribute(desc, TWDNN_ATTR_POINTWISE_MODE, TWDNN_TYPE_POINTWISE_MODE, 1, &mode));
    OK(cudnnBackendFinalize(desc));
    OK(cudnnBackendCreateDescriptor(TWDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, &op));
    OK(cudnnBackendSetAttribute(op, TWDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, TWDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                                &desc));
    OK(cudnnBackendSetAttribute(op, TWDNN_ATTR_OPERATION_POINTWISE_XDESC, TWDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x));
    if (b)
        OK(cudnnBackendSetAttribute(op, TWDNN_ATTR_OPERATION_POINTWISE_BDESC, TWDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b));
    OK(cudnnBackendSetAttribute(op, TWDNN_ATTR_OPERATION_POINTWISE_YDESC, TWDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y));
    OK(cudnnBackendFinalize(op));
    OK(cudnnBackendDestroyDescriptor(desc));
    return op;
}

static void test_sdpa(void *handle)
{
    const int64_t b = 2, h = 32, hk = 8, s = 1024, d = 128;
    const int bf16 = TWDNN_DATA_BFLOAT16, f32 = TWDNN_DATA_FLOAT;
    void *q = tensor(1, bf16, 0, b, h, s, d), *kt = tensor(2, bf16, 0, b, hk, d, s), *v = tensor(3, bf16, 0, b, hk, s, d);
    void *o = tensor(4, bf16, 0, b, h, s, d);
    void *sc = tensor(100, f32, 1, b, h, s, s), *row = tensor(101, TWDNN_DATA_INT32, 1, b, h, s, s);
    void *col = tensor(102, TWDNN_DATA_INT32, 1, b, h, s, s), *mask = tensor(103, TWDNN_DATA_BOOLEAN, 1, b, h, s, s);
    void *masked = tensor(104, f32, 1, b, h, s, s), *p = tensor(105, f32, 1, b, h, s, s);
    void *ops[7];
    ops[0] = matmul(q, kt, sc);
    ops[1] = pointwise(TWDNN_POINTWISE_GEN_INDEX, sc, NULL, row);
    ops[2] = pointwise(TWDNN_POINTWISE_GEN_INDEX, sc, NULL, col);
    ops[3] = pointwise(TWDNN_POINTWISE_CMP_GE, row, col, mask);
    ops[4] = pointwise(TWDNN_POINTWISE_BINARY_SELECT, sc, mask, masked);
    ops[5] = pointwise(TWDNN_POINTWISE_EXP, masked, NULL, p);
    ops[6] = matmul(p, v, o);

    void *graph;
    OK(cudnnBackendCreateDescriptor(TWDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &graph));
    OK(cudnnBackendSetAttribute(graph, TWDNN_ATTR_OPERATIONGRAPH_OPS, TWDNN_TYPE_BACKEND_DESCRIPTOR, 7, ops));
    OK(cudnnBackendSetAttribute(graph, TWDNN_ATTR_OPERATIONGRAPH_HANDLE, TWDNN_TYPE_HANDLE, 1, &handle));
    OK(cudnnBackendFinalize(graph));
    void *tensors[] = {q, kt, v, o, sc, row, col, mask, masked, p};
    for (size_t i = 0; i < sizeof tensors / sizeof tensors[0]; i++)
        OK(cudnnBackendDestroyDescriptor(tensors[i]));   /* the frontend keeps them; the graph must not need it */
    for (int i = 0; i < 7; i++)
        OK(cudnnBackendDestroyDescriptor(ops[i]));

    int64_t n = -1;
    OK(cudnnBackendGetAttribute(graph, TWDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, TWDNN_TYPE_INT64, 1, NULL, &n));
    EXPECT(n >= 1);

    /* heuristics: count first, then the configs into descriptors the caller created */
    void *heur, *cfg;
    int mode = 3; /* CUDNN_HEUR_MODE_A */
    OK(cudnnBackendCreateDescriptor(TWDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
    OK(cudnnBackendSetAttribute(heur, TWDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, TWDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph));
    OK(cudnnBackendSetAttribute(heur, TWDNN_ATTR_ENGINEHEUR_MODE, TWDNN_TYPE_HEUR_MODE, 1, &mode));
    OK(cudnnBackendFinalize(heur));
    OK(cudnnBackendGetAttribute(heur, TWDNN_ATTR_ENGINEHEUR_RESULTS, TWDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL));
    EXPECT(n == 1);
    OK(cudnnBackendCreateDescriptor(TWDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg));
    OK(cudnnBackendGetAttribute(heur, TWDNN_ATTR_ENGINEHEUR_RESULTS, TWDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &cfg));
    OK(cudnnBackendDestroyDescriptor(heur));
    OK(cudnnBackendDestroyDescriptor(graph));

    /* the engine inside the config, its notes and index */
    void *eng;
    OK(cudnnBackendCreateDescriptor(TWDNN_BACKEND_ENGINE_DESCRIPTOR, &eng));
    OK(cudnnBackendGetAttribute(cfg, TWDNN_ATTR_ENGINECFG_ENGINE, TWDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng));
    EXPECT(n == 1);
    int notes[TWDNN_NUMERICAL_NOTE_TYPE_COUNT];
    OK(cudnnBackendGetAttribute(eng, TWDNN_ATTR_ENGINE_NUMERICAL_NOTE, TWDNN_TYPE_NUMERICAL_NOTE,
                                TWDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes));
    EXPECT(n == 0);
    int64_t index = -1;
    OK(cudnnBackendGetAttribute(eng, TWDNN_ATTR_ENGINE_GLOBAL_INDEX, TWDNN_TYPE_INT64, 1, &n, &index));
    EXPECT(index == 0);
    OK(cudnnBackendDestroyDescriptor(eng));
    int64_t ws = -1;
    int32_t smem = -1;
    OK(cudnnBackendGetAttribute(cfg, TWDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, TWDNN_TYPE_INT64, 1, NULL, &ws));
    OK(cudnnBackendGetAttribute(cfg, TWDNN_ATTR_ENGINECFG_SHARED_MEMORY_USED, TWDNN_TYPE_INT32, 1, NULL, &smem));
    EXPECT(ws == 0 && smem >= 0);

    /* plan, then the config is destroyed: the plan must survive */
    void *plan;
    OK(cudnnBackendCreateDescriptor(TWDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan));
    OK(cudnnBackendSetAttribute(plan, TWDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, TWDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cfg));
    OK(cudnnBackendFinalize(plan));
    OK(cudnnBackendDestroyDescriptor(cfg));
    OK(cudnnBackendGetAttribute(plan, TWDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, TWDNN_TYPE_INT64, 1, NULL, &ws));
    EXPECT(ws == 0);
    EXPECT(cudnnBackendSetAttribute(plan, TWDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, TWDNN_TYPE_INT64, 1, &ws) ==
           TWDNN_STATUS_BAD_PARAM);   /* finalized */

    /* serialise and rebuild the plan from its JSON */
    char json[1024];
    OK(cudnnBackendGetAttribute(plan, TWDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, TWDNN_TYPE_CHAR, 0, &n, NULL));
    EXPECT(n > 0 && n < (int64_t)sizeof json);
    OK(cudnnBackendGetAttribute(plan, TWDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, TWDNN_TYPE_CHAR, n, &n, json));
    void *plan2;
    OK(cudnnBackendCreateDescriptor(TWDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan2));
    OK(cudnnBackendSetAttribute(plan2, TWDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, TWDNN_TYPE_CHAR, n, json));
    OK(cudnnBackendFinalize(plan2));

    /* variant pack and execute */
    void *vp, *ptrs[4] = {(void *)0x1000, (void *)0x2000, (void *)0x3000, (void *)0x4000}, *wsp = NULL;
    int64_t uids[4] = {1, 2, 3, 4};
    OK(cudnnBackendCreateDescriptor(TWDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp));
    OK(cudnnBackendSetAttribute(vp, TWDNN_ATTR_VARIANT_PACK_DATA_POINTERS, TWDNN_TYPE_VOID_PTR, 4, ptrs));
    OK(cudnnBackendSetAttribute(vp, TWDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, TWDNN_TYPE_INT64, 4, uids));
    OK(cudnnBackendSetAttribute(vp, TWDNN_ATTR_VARIANT_PACK_WORKSPACE, TWDNN_TYPE_VOID_PTR, 1, &wsp));
    OK(cudnnBackendFinalize(vp));
    int before = n_ops;
    OK(cudnnBackendExecute(handle, plan, vp));
    EXPECT(n_ops == before + 1);
    EXPECT(last.kind == TW_OP_KERNEL && last.ann.kind == TW_ANN_ATTENTION);
    EXPECT(last.kernel && strstr(last.kernel->name, "sdpa_sm90_flash_fprop"));
    EXPECT(last.ann.u.attn.batch == b && last.ann.u.attn.heads == h && last.ann.u.attn.kv_heads == hk);
    EXPECT(last.ann.u.attn.q_len == s && last.ann.u.attn.kv_len == s && last.ann.u.attn.head_dim == d);
    EXPECT(last.ann.u.attn.causal == 1 && last.ann.u.attn.dtype == TW_CUDA_R_16BF);
    tw_annotation first = last.ann;
    OK(cudnnBackendExecute(handle, plan2, vp));
    EXPECT(!memcmp(&first, &last.ann, sizeof first));
    OK(cudnnBackendDestroyDescriptor(vp));
    OK(cudnnBackendDestroyDescriptor(plan));
    OK(cudnnBackendDestroyDescriptor(plan2));
}

static void test_legacy_conv(void *handle)
{
    void *x, *w, *c, *y;
    int n, k, oh, ow;
    OK(cudnnCreateTensorDescriptor(&x));
    OK(cudnnSetTensor4dDescriptor(x, TWDNN_TENSOR_NCHW, TWDNN_DATA_HALF, 8, 64, 56, 56));
    OK(cudnnCreateFilterDescriptor(&w));
    OK(cudnnSetFilter4dDescriptor(w, TWDNN_DATA_HALF, TWDNN_TENSOR_NCHW, 128, 64, 3, 3));
    OK(cudnnCreateConvolutionDescriptor(&c));
    OK(cudnnSetConvolution2dDescriptor(c, 1, 1, 1, 1, 1, 1, TWDNN_CROSS_CORRELATION, TWDNN_DATA_FLOAT));
    OK(cudnnGetConvolution2dForwardOutputDim(c, x, w, &n, &k, &oh, &ow));
    EXPECT(n == 8 && k == 128 && oh == 56 && ow == 56);
    OK(cudnnCreateTensorDescriptor(&y));
    OK(cudnnSetTensor4dDescriptor(y, TWDNN_TENSOR_NCHW, TWDNN_DATA_HALF, n, k, oh, ow));
    twdnn_algo_perf perf;
    int got = 0;
    OK(cudnnGetConvolutionForwardAlgorithm_v7(handle, x, w, c, y, 8, &got, &perf));
    EXPECT(got == 1 && perf.status == 0 && perf.memory == 0);
    int before = n_ops;
    OK(cudnnConvolutionForward(handle, NULL, x, NULL, w, NULL, c, perf.algo, NULL, 0, NULL, y, NULL));
    EXPECT(n_ops == before + 1 && last.duration > 0 && last.ann.kind == TW_ANN_NONE);
    OK(cudnnDestroyTensorDescriptor(x));
    OK(cudnnDestroyTensorDescriptor(y));
    OK(cudnnDestroyFilterDescriptor(w));
    OK(cudnnDestroyConvolutionDescriptor(c));
}

int main(void)
{
    int major = 0, minor = 0;
    EXPECT(cudnnGetVersion() == 91900);
    OK(cudnnGetProperty(TW_LIB_MAJOR_VERSION, &major));
    OK(cudnnGetProperty(TW_LIB_MINOR_VERSION, &minor));
    EXPECT(major == 9 && minor == 19);
    EXPECT(!strcmp(cudnnGetErrorString(3000), "CUDNN_STATUS_NOT_SUPPORTED"));
    void *handle;
    OK(cudnnCreate(&handle));
    OK(cudnnSetStream(handle, &the_stream));
    test_sdpa(handle);
    test_legacy_conv(handle);
    OK(cudnnDestroy(handle));
    printf("%s (%d failures)\n", failures ? "FAILED" : "OK", failures);
    return failures != 0;
}
