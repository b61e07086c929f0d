/* Drives cudnn_frontend 1.18.0 (the version compiled into torch 2.11's libtorch_cuda) against the fake cuDNN,
 * the way aten/src/ATen/native/cudnn/MHA.cpp builds and runs SDPA, plus a convolution graph. Not part of the
 * library and not part of the default build: it needs the frontend's headers (github NVIDIA/cudnn-frontend at
 * tag v1.18.0), cudnn.h from the nvidia-cudnn-cu13 wheel and cuda_runtime.h from a CUDA toolkit. Build:
 *   FE=path/to/cudnn-frontend/include; DNN=site-packages/nvidia/cudnn/include; CUDA=/usr/local/cuda/include
 *   for f in backend convolution graph handle legacy_desc version; do
 *     gcc -std=gnu11 -g -fsanitize=address -I../include -c $f.c -o /tmp/$f.o; done
 *   g++ -std=c++17 -g -fsanitize=address -I$FE -I$DNN -I$CUDA -I../include test_frontend_sdpa.cpp /tmp/{backend,\
 *     convolution,graph,handle,legacy_desc,version}.o -o /tmp/test_frontend_sdpa && /tmp/test_frontend_sdpa
 * It prints one ENQUEUE line per launch the fake cuDNN makes and "ALL OK" at the end. */
#include <cudnn_frontend.h>
#include <cuda_runtime.h>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tw/core.h"

/* ------------------------------------------------------------------ mock of the timewarp core */
extern "C" {
int tw_debug = 0;
void tw_log(const char *fmt, ...) { va_list ap; va_start(ap, fmt); fprintf(stderr, "timewarp: "); vfprintf(stderr, fmt, ap); fputc('\n', stderr); va_end(ap); }
void tw_init(void) {}
int tw_device_count(void) { return 1; }
int tw_get_device(void) { return 0; }
static tw_gpu_spec make_h200() {
  tw_gpu_spec s; memset(&s, 0, sizeof s); s.key = "H200"; s.name = "NVIDIA H200"; s.cc_major = 9; s.sm_count = 132;
  s.peak_flops_bf16 = 989e12; s.peak_flops_fp32 = 67e12; s.peak_flops_fp8 = 1979e12; s.mem_bw = 4.0e12; s.launch_floor_s = 2e-6;
  return s; }
static tw_gpu_spec h200 = make_h200();
const tw_gpu_spec *tw_device_spec(int dev) { return dev == 0 ? &h200 : NULL; }
static int fake_stream;
tw_stream *tw_stream_get(void *h, int ptd) { (void)ptd; if (!h || h == (void*)1 || h == (void*)0x1234) return (tw_stream*)&fake_stream; return NULL; }
int tw_stream_device(const tw_stream *s) { (void)s; return 0; }
static tw_kernel ks[64]; static int nk;
tw_kernel *tw_kernel_intern(const char *n) { for (int i = 0; i < nk; i++) if (!strcmp(ks[i].name, n)) return &ks[i]; ks[nk].name = strdup(n); ks[nk].pretty = ks[nk].name; ks[nk].id = (uint32_t)nk; return &ks[nk++]; }
int n_enqueued; tw_op last_op;
tw_err tw_enqueue(tw_stream *s, tw_op *op) { (void)s; n_enqueued++; last_op = *op;
  fprintf(stderr, "ENQUEUE kernel=%s label=%s grid=%u,%u,%u block=%u dur=%llu ann=%d", op->kernel ? op->kernel->name : "-", op->label ? op->label : "-",
     op->grid[0], op->grid[1], op->grid[2], op->block[0], (unsigned long long)op->duration, op->ann.kind);
  if (op->ann.kind == TW_ANN_ATTENTION) fprintf(stderr, " attn b=%lld h=%lld hk=%lld sq=%lld skv=%lld d=%lld causal=%d dtype=%d",
     (long long)op->ann.u.attn.batch, (long long)op->ann.u.attn.heads, (long long)op->ann.u.attn.kv_heads, (long long)op->ann.u.attn.q_len,
     (long long)op->ann.u.attn.kv_len, (long long)op->ann.u.attn.head_dim, op->ann.u.attn.causal, op->ann.u.attn.dtype);
  fputc('\n', stderr); return TW_OK; }

/* the one cuDNN function the frontend references that the fake leaves to the generated stubs */
cudnnStatus_t cudnnReorderFilterAndBias(cudnnHandle_t, const cudnnFilterDescriptor_t, cudnnReorderType_t, const void *, void *,
                                        int, const void *, void *) { return CUDNN_STATUS_NOT_SUPPORTED; }
}

/* ------------------------------------------------------------------ mock of the CUDA runtime calls the frontend makes */
extern "C" {
cudaError_t cudaGetDeviceProperties_v2(cudaDeviceProp *p, int dev) { memset(p, 0, sizeof *p); strcpy(p->name, "NVIDIA H200"); p->major = 9; p->minor = 0; p->multiProcessorCount = 132; p->sharedMemPerBlockOptin = 232448; (void)dev; return cudaSuccess; }
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int dev) { return cudaGetDeviceProperties_v2(p, dev); }
cudaError_t cudaGetDevice(int *d) { *d = 0; return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t e) { (void)e; return "mock"; }
cudaError_t cudaMemcpyAsync(void *, const void *, size_t, cudaMemcpyKind, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaMemsetAsync(void *, int, size_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *a, const void *) { memset(a, 0, sizeof *a); a->type = cudaMemoryTypeDevice; return cudaSuccess; }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaMalloc(void **p, size_t) { *p = (void*)0x1000; return cudaSuccess; }
cudaError_t cudaFree(void *) { return cudaSuccess; }
}
extern "C" {
cudaError_t cudaEventCreate(cudaEvent_t *e) { *e = (cudaEvent_t)0x77; return cudaSuccess; }
cudaError_t cudaEventDestroy(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t, cudaEvent_t) { *ms = 0.01f; return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t, cudaStream_t) { return cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
}

/* ------------------------------------------------------------------ the test */
#include <cudnn_frontend.h>
#include <cstdio>
#include <cstring>
namespace fe = cudnn_frontend;

enum UIDS { Q, K, V, O, BIAS, SCALE, SEED, OFFSET, LSE, DO, DQ, DK, DV };

static int run_fwd(cudnnHandle_t handle, fe::DataType_t dt, bool causal, int64_t b, int64_t h, int64_t hk, int64_t s, int64_t d, bool stats) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(dt).set_intermediate_data_type(fe::DataType_t::FLOAT).set_compute_data_type(fe::DataType_t::FLOAT);
  auto scale = g->tensor(fe::graph::Tensor_attributes().set_uid(SCALE).set_name("Attn_scale").set_dim({1,1,1,1}).set_stride({1,1,1,1}).set_is_pass_by_value(true).set_data_type(fe::DataType_t::FLOAT));
  auto opts = fe::graph::SDPA_attributes().set_name("CUDNN_SDPA").set_is_inference(!stats).set_causal_mask(causal).set_attn_scale(scale);
  // BSHD memory, BHSD logical (torch's usual layout after transpose(1,2))
  auto Q_ = g->tensor(fe::graph::Tensor_attributes().set_uid(Q).set_name("Q").set_dim({b,h,s,d}).set_stride({s*h*d, d, h*d, 1}));
  auto K_ = g->tensor(fe::graph::Tensor_attributes().set_uid(K).set_name("K").set_dim({b,hk,s,d}).set_stride({s*hk*d, d, hk*d, 1}));
  auto V_ = g->tensor(fe::graph::Tensor_attributes().set_uid(V).set_name("V").set_dim({b,hk,s,d}).set_stride({s*hk*d, d, hk*d, 1}));
  auto [O_, Stats] = g->sdpa(Q_, K_, V_, opts);
  O_->set_uid(O); O_->set_output(true).set_dim({b,h,s,d}).set_stride({s*h*d, d, h*d, 1});
  if (Stats) { Stats->set_uid(LSE); Stats->set_output(true).set_data_type(fe::DataType_t::FLOAT); }
#define CK(x) do { auto e = (x); if (e.is_bad()) { printf("FAIL %s: %s\n", #x, e.get_message().c_str()); return 1; } } while (0)
  CK(g->validate());
  CK(g->build_operation_graph(handle));
  CK(g->create_execution_plans({fe::HeurMode_t::A}));
  CK(g->check_support(handle));
  CK(g->build_plans(handle));
  int64_t ws = 0; CK(g->get_workspace_size(ws));
  std::string name; CK(g->get_plan_name(name));
  printf("fwd plan %s workspace %lld\n", name.c_str(), (long long)ws);
  float sc = 0.125f;
  std::unordered_map<int64_t, void*> vp = {{Q,(void*)0x10000},{K,(void*)0x20000},{V,(void*)0x30000},{O,(void*)0x40000},{SCALE,&sc}};
  if (Stats) vp[LSE] = (void*)0x50000;
  int before = n_enqueued;
  CK(g->execute(handle, vp, (void*)0x60000));
  CK(g->execute(handle, vp, (void*)0x60000));
  printf("enqueued %d\n", n_enqueued - before);
  return n_enqueued - before == 2 ? 0 : 1;
}

static int run_bwd(cudnnHandle_t handle, bool causal, int64_t b, int64_t h, int64_t s, int64_t d) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(fe::DataType_t::BFLOAT16).set_intermediate_data_type(fe::DataType_t::FLOAT).set_compute_data_type(fe::DataType_t::FLOAT);
  auto scale = g->tensor(fe::graph::Tensor_attributes().set_uid(SCALE).set_name("Attn_scale").set_dim({1,1,1,1}).set_stride({1,1,1,1}).set_is_pass_by_value(true).set_data_type(fe::DataType_t::FLOAT));
  auto opts = fe::graph::SDPA_backward_attributes().set_name("CUDNN_SDPA_BACKWARD").set_causal_mask(causal).set_attn_scale(scale);
  std::vector<int64_t> dim = {b,h,s,d}, str = {s*h*d, d, h*d, 1};
  auto Q_ = g->tensor(fe::graph::Tensor_attributes().set_uid(Q).set_name("Q").set_dim(dim).set_stride(str));
  auto K_ = g->tensor(fe::graph::Tensor_attributes().set_uid(K).set_name("K").set_dim(dim).set_stride(str));
  auto V_ = g->tensor(fe::graph::Tensor_attributes().set_uid(V).set_name("V").set_dim(dim).set_stride(str));
  auto O_ = g->tensor(fe::graph::Tensor_attributes().set_uid(O).set_name("O").set_dim(dim).set_stride(str));
  auto St = g->tensor(fe::graph::Tensor_attributes().set_uid(LSE).set_name("Stats").set_dim({b,h,s,1}).set_stride({h*s,s,1,1}).set_data_type(fe::DataType_t::FLOAT));
  auto Do = g->tensor(fe::graph::Tensor_attributes().set_uid(DO).set_name("DO").set_dim(dim).set_stride(str));
  auto [Dq, Dk, Dv] = g->sdpa_backward(Q_, K_, V_, O_, Do, St, opts);
  Dq->set_uid(DQ); Dq->set_output(true).set_dim(dim).set_stride(str);
  Dk->set_uid(DK); Dk->set_output(true).set_dim(dim).set_stride(str);
  Dv->set_uid(DV); Dv->set_output(true).set_dim(dim).set_stride(str);
  CK(g->validate());
  CK(g->build_operation_graph(handle));
  CK(g->create_execution_plans({fe::HeurMode_t::A}));
  CK(g->check_support(handle));
  CK(g->build_plans(handle));
  int64_t ws = 0; CK(g->get_workspace_size(ws));
  printf("bwd workspace %lld\n", (long long)ws);
  float sc = 0.125f;
  std::unordered_map<int64_t, void*> vp = {{Q,(void*)0x10000},{K,(void*)0x20000},{V,(void*)0x30000},{O,(void*)0x40000},{SCALE,&sc},
     {LSE,(void*)0x50000},{DO,(void*)0x70000},{DQ,(void*)0x80000},{DK,(void*)0x90000},{DV,(void*)0xa0000}};
  CK(g->execute(handle, vp, (void*)0x60000));
  return 0;
}

static int run_conv(cudnnHandle_t handle) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(fe::DataType_t::HALF).set_compute_data_type(fe::DataType_t::FLOAT);
  auto X = g->tensor(fe::graph::Tensor_attributes().set_name("X").set_uid(1).set_dim({8,64,56,56}).set_stride({64*56*56,1,64*56,64}));
  auto W = g->tensor(fe::graph::Tensor_attributes().set_name("W").set_uid(2).set_dim({128,64,3,3}).set_stride({64*9,1,64*3,64}));
  auto Y = g->conv_fprop(X, W, fe::graph::Conv_fprop_attributes().set_padding({1,1}).set_stride({1,1}).set_dilation({1,1}));
  Y->set_output(true).set_uid(3);
  CK(g->validate());
  CK(g->build_operation_graph(handle));
  CK(g->create_execution_plans({fe::HeurMode_t::A}));
  CK(g->check_support(handle));
  CK(g->build_plans(handle));
  std::unordered_map<int64_t, void*> vp = {{1,(void*)0x1},{2,(void*)0x2},{3,(void*)0x3}};
  CK(g->execute(handle, vp, nullptr));
  return 0;
}

int main() {
  cudnnHandle_t handle;
  if (cudnnCreate(&handle) != CUDNN_STATUS_SUCCESS) { printf("cudnnCreate failed\n"); return 1; }
  cudnnSetStream(handle, (cudaStream_t)0x1234);
  printf("cudnn version %zu\n", cudnnGetVersion());
  int rc = 0;
  printf("== bf16 causal GQA fwd\n"); rc |= run_fwd(handle, fe::DataType_t::BFLOAT16, true, 2, 32, 8, 1024, 128, false);
  printf("== bf16 non-causal fwd with stats\n"); rc |= run_fwd(handle, fe::DataType_t::BFLOAT16, false, 4, 16, 16, 512, 64, true);
  printf("== fp16 non-causal fwd (unified node)\n"); rc |= run_fwd(handle, fe::DataType_t::HALF, false, 1, 8, 8, 256, 128, false);
  printf("== bf16 causal bwd\n"); rc |= run_bwd(handle, true, 2, 16, 512, 128);
  printf("== conv fprop\n"); rc |= run_conv(handle);
  cudnnDestroy(handle);
  printf(rc ? "FAILED\n" : "ALL OK\n");
  return rc;
}
