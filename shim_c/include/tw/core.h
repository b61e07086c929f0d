/* The core of the fake CUDA stack: one process-wide state (virtual devices, memory, streams, events, graphs,
 * the virtual clock) shared by every fake library. libtimewarp.so holds it; libcudart.so.13, libcuda.so.1,
 * libcublas*.so.13, libnccl.so.2 ... are thin API front ends over these calls, so a stream created through
 * the runtime is the same object the driver API or cuBLAS sees.
 *
 * Error codes: the core returns CUDA driver numbering (tw_err). The runtime's cudaError_t uses the same
 * numbers for every code the core returns (1, 2, 3, 100, 101, 201, 400, 500, 600, 801, 900-908, 999).
 */
#ifndef TW_CORE_H
#define TW_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TW_EXPORT __attribute__((visibility("default")))

typedef enum {
    TW_OK = 0,
    TW_ERR_INVALID_VALUE = 1,
    TW_ERR_OUT_OF_MEMORY = 2,
    TW_ERR_NOT_INITIALIZED = 3,
    TW_ERR_NO_DEVICE = 100,
    TW_ERR_INVALID_DEVICE = 101,
    TW_ERR_INVALID_CONTEXT = 201,
    TW_ERR_INVALID_HANDLE = 400,
    TW_ERR_ILLEGAL_STATE = 401,
    TW_ERR_NOT_FOUND = 500,
    TW_ERR_NOT_READY = 600,
    TW_ERR_NOT_PERMITTED = 800,
    TW_ERR_NOT_SUPPORTED = 801,
    TW_ERR_CAPTURE_UNSUPPORTED = 900,
    TW_ERR_CAPTURE_INVALIDATED = 901,
    TW_ERR_CAPTURE_UNMATCHED = 903,
    TW_ERR_CAPTURE_UNJOINED = 904,
    TW_ERR_CAPTURE_IMPLICIT = 906,
    TW_ERR_CAPTURE_WRONG_THREAD = 908,
    TW_ERR_UNKNOWN = 999,
} tw_err;

/* ---------------------------------------------------------------- logging (log.c) */
/* Log to stderr with write(2): "timewarp[pid:tid] <msg>". */
void tw_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Called by every unimplemented entry point: logs "<lib>: <name> not implemented -> <code_name>" once per
 * symbol, counts the call, aborts when TIMEWARP_STRICT=1, returns code. */
int tw_unimplemented(const char *lib, const char *name, int code, const char *code_name);
/* Verbose tracing of implemented calls, when TIMEWARP_DEBUG=1. */
extern int tw_debug;
#define TW_DEBUG(...) do { if (tw_debug) tw_log(__VA_ARGS__); } while (0)

/* ---------------------------------------------------------------- devices (device.c, catalog) */
typedef struct tw_gpu_spec {
    const char *key;          /* catalog key: "H200" */
    const char *name;         /* what cudaGetDeviceProperties/NVML report: "NVIDIA H200" */
    int cc_major, cc_minor;
    int sm_count;
    uint64_t total_mem;       /* cudaDeviceProp.totalGlobalMem (bytes) */
    uint64_t nvml_total_mem;  /* nvmlDeviceGetMemoryInfo total */
    uint64_t context_reserved;/* memory the driver context takes (total - free after init) */
    const void *props;        /* a complete struct cudaDeviceProp (CUDA 13 layout) for device 0 */
    const int *attrs;         /* cuDeviceGetAttribute values indexed by CUdevice_attribute id */
    const unsigned char *attr_valid; /* 1 where the real device answers the attribute */
    int n_attrs;
    /* analytical rates, used until the calibrated predictor answers */
    double peak_flops_bf16, peak_flops_fp32, peak_flops_fp8; /* dense, FLOP/s */
    double mem_bw;            /* HBM bytes/s, achievable */
    double pcie_bw;           /* host<->device bytes/s (pinned) */
    double launch_floor_s;    /* shortest kernel */
    int sm_clock_mhz, mem_clock_mhz, memory_bus_width, power_limit_mw;
    const char *board_part, *vbios, *uuid_prefix;
    int pci_device_id, pci_subsystem_id;
} tw_gpu_spec;

void tw_init(void);                 /* idempotent; every entry point may call it */
int tw_device_count(void);
const tw_gpu_spec *tw_device_spec(int dev);   /* NULL if dev is out of range */
int tw_get_device(void);            /* the calling thread's current device */
tw_err tw_set_device(int dev);
/* Fills a struct cudaDeviceProp (CUDA 13 layout) for dev: name, uuid and PCI ids vary per device. */
tw_err tw_device_props(int dev, void *cuda_device_prop);
tw_err tw_device_attr(int dev, int cu_attr, int *value);
void tw_device_uuid(int dev, unsigned char uuid[16]);
void tw_device_pci_bus_id(int dev, char *buf, int len); /* "0000:18:00.0" */
/* The box's GPUs as NVML numbers them, whatever CUDA_VISIBLE_DEVICES hides from this process. */
int tw_physical_count(void);
const tw_gpu_spec *tw_physical_spec(int p);
int tw_device_physical(int dev);           /* visible device -> index on the box */
int tw_physical_visible(int p);            /* index on the box -> visible device, or -1 */
void tw_physical_uuid(int p, unsigned char uuid[16]);
void tw_physical_pci_bus_id(int p, char *buf, int len);
void tw_physical_mem_info(int p, size_t *free_bytes, size_t *total_bytes);

/* ---------------------------------------------------------------- virtual clock (vclock.c) */
/* Virtual time in ns since the process's virtual epoch. Reading it charges the calling thread's CPU time
 * (times TIMEWARP_HOST_SPEED) since its last reading. */
uint64_t tw_now(void);
/* The host thread waits until virtual time t (GPU completion, an event): the clock jumps, nothing sleeps. */
void tw_wait_until(uint64_t t);
/* A blocking synchronize (event, stream, device, synchronous copy): wait until t, then return as the real
 * driver does, a wake-up's host cost later (TW_HOST_SYNC). */
void tw_sync_until(uint64_t t);
int tw_sync_inputs(void);   /* vclock.c: wait for what feeder threads and other processes may hand over */
void tw_clock_feeder_thread(void);
int tw_clock_is_feeder(void);   /* whether the calling thread is one (semaphore.c) */
int tw_clock_has_feeder(void);  /* whether a thread of this process is one */
/* From now on, a timeout of a thread of this process that is not Python's does not move its timeline. */
void tw_clock_idle_timers_private(void);
/* Stop and restart charging the calling thread's CPU time (nests): for work the emulator does on the
 * program's threads that the real run would not do. */
void tw_charge_pause(void);
void tw_charge_resume(void);
/* Charge ns of host time the real stack would spend here (a modelled cost, on the target host's scale);
 * returns the calling thread's virtual time after it (one clock reading, as tw_now()). */
uint64_t tw_charge_add(uint64_t ns);
/* Host costs of the real runtime per call, from the profile's `host` lines (0 without a profile). */
typedef enum {
    TW_HOST_LAUNCH = 0, TW_HOST_GRAPH_LAUNCH = 1, TW_HOST_GEMM = 2, TW_HOST_ATTN = 3,
    TW_HOST_SYNC = 4,  /* a blocking synchronize's return after the work is done (the driver's wake-up) */
    /* lazy module loading (the default since CUDA 12.2): the first use of a kernel of a module (one compiled
     * file's fatbinary) loads it: a fixed part and a part per MB of the fatbinary (cudart/launch.c) */
    TW_HOST_MODULE_LOAD = 5, TW_HOST_MODULE_LOAD_PER_MB = 6,
    /* uploading an executable graph (its first launch, or cudaGraphUpload): a fixed part and one per node */
    TW_HOST_GRAPH_UPLOAD = 7, TW_HOST_GRAPH_UPLOAD_PER_NODE = 8,
    /* cuBLAS loading a GEMM kernel at its first use in the process (core/blas_lazy.c) */
    TW_HOST_BLAS_KERNEL_LOAD = 9,
    TW_HOST_NCOSTS
} tw_host_cost;
uint64_t tw_profile_host_cost(tw_host_cost which);
/* Do not charge the next ns of this thread's CPU time (a measured emulator overhead). */
void tw_charge_forgive(uint64_t ns);
/* Drop what is left of this thread's forgiveness (a grant its call did not use); returns it, in ns. */
uint64_t tw_charge_forgive_clear(void);
/* A pure sleep until virtual time t (see vclock.c for how much real time it takes). */
void tw_sleep_until(uint64_t t);
/* Wall-clock values at the virtual epoch, so that realtime and monotonic advance together. */
void tw_clock_epoch(int64_t *realtime_ns, int64_t *monotonic_ns);
/* The CPU time this thread spent since its last reading was the emulator's: do not charge it. */
void tw_clock_forget_cpu(void);

/* ---------------------------------------------------------------- collectives across processes (rendezvous.c) */
/* 1 when the run has a time keeper (`timewarp run`), so that ranks in other processes can be met. */
int tw_coll_available(void);
/* Post this rank's arrival (the virtual time its operation could start) and argument for the operation
 * `key` of nranks ranks; returns a handle, or -1 (no keeper, table full, bad rank). */
int tw_coll_post(uint64_t key, int nranks, int rank, uint64_t arrival, int64_t arg, int gpu);
/* Wait until every rank posted, then copy out their arrivals, arguments, GPUs and pids (arrays of nranks,
 * each may be NULL). member_pids (may be NULL) are watched: a member that died or stays stopped before
 * posting ends the wait with an error (<0, *why set), as does an aborted run. */
int tw_coll_wait(int h, const int32_t *member_pids, int nmembers, uint64_t *arrivals, int64_t *args, int32_t *gpus,
                 int32_t *pids, char *why, size_t whylen);
void tw_coll_leave(int h);
/* The run's cluster description (TIMEWARP_TOPOLOGY format), or NULL without a keeper. */
const char *tw_coll_topology(void);

/* ---------------------------------------------------------------- memory (memory.c) */
typedef enum { TW_MEM_DEVICE = 0, TW_MEM_HOST_PINNED = 1, TW_MEM_MANAGED = 2 } tw_mem_kind;
typedef struct tw_alloc {
    uintptr_t base;
    size_t size;
    int device;          /* -1 for host memory */
    tw_mem_kind kind;
    int backed;          /* 1: real host memory behind it, reads return what was written */
    int vmm;             /* 1: part of a cuMemAddressReserve range */
} tw_alloc;
/* Device memory. Fails with TW_ERR_OUT_OF_MEMORY past the card's capacity (as cudaMalloc does). */
tw_err tw_mem_alloc(int dev, size_t size, void **out);
/* Managed memory (cudaMallocManaged): device memory that is always host-backed. */
tw_err tw_mem_alloc_managed(int dev, size_t size, void **out);
tw_err tw_mem_free(void *ptr);   /* does not wait: cudaFree/cuMemFree synchronize first, *FreeAsync do not */
/* Pinned host memory (cudaHostAlloc/cudaMallocHost): real host memory, registered as such. */
tw_err tw_host_alloc(size_t size, void **out);
tw_err tw_host_free(void *ptr);
tw_err tw_host_register(void *ptr, size_t size);
tw_err tw_host_unregister(void *ptr);
/* The allocation containing ptr (device or registered host), or NULL for plain host memory. Copies the
 * record into *out so that callers need no lock. */
int tw_mem_lookup(const void *ptr, tw_alloc *out);
void tw_mem_info(int dev, size_t *free_bytes, size_t *total_bytes);
size_t tw_mem_used(int dev);
/* Device memory the driver keeps for itself from now on (graph_memory.c); out of memory past the capacity. */
tw_err tw_mem_reserve_driver(int dev, size_t bytes);
/* Data movement now, where both sides are backed; reads of unbacked device memory give zeros. */
void tw_mem_copy_now(void *dst, const void *src, size_t n);
void tw_mem_set_now(void *dst, int value, size_t n);
/* How many writes into device memory the host has carried out (the copies and fills above, and those noted
 * by tw_mem_note_device_write); the shadow of small results trusts its own zeros only while it stands still. */
uint64_t tw_mem_device_writes(void);
void tw_mem_note_device_write(void);
/* Virtual memory management (cuMemAddressReserve/Create/Map). Handles are opaque ids. */
tw_err tw_vmm_reserve(size_t size, size_t align, uintptr_t fixed, uintptr_t *out);
tw_err tw_vmm_free(uintptr_t base, size_t size);
tw_err tw_vmm_create(int dev, size_t size, uint64_t *handle);
tw_err tw_vmm_release(uint64_t handle);
tw_err tw_vmm_map(uintptr_t va, size_t size, size_t offset, uint64_t handle);
tw_err tw_vmm_unmap(uintptr_t va, size_t size);
tw_err tw_vmm_handle_size(uint64_t handle, size_t *size);

/* ---------------------------------------------------------------- operations */
typedef enum {
    TW_OP_KERNEL = 0, TW_OP_MEMCPY, TW_OP_MEMSET, TW_OP_HOST_FUNC, TW_OP_EVENT_RECORD, TW_OP_EVENT_WAIT,
    TW_OP_GRAPH, TW_OP_COLLECTIVE,
} tw_op_kind;
typedef enum { TW_COPY_H2D = 1, TW_COPY_D2H = 2, TW_COPY_D2D = 3, TW_COPY_H2H = 0 } tw_copy_dir;
typedef enum { TW_ANN_NONE = 0, TW_ANN_GEMM, TW_ANN_ATTENTION, TW_ANN_COLLECTIVE } tw_ann_kind;
/* A GEMM annotation's origin: the emulated cuBLAS/cuBLASLt (its lazy kernel loading, split-K memsets and host
 * cost apply: blas_lazy.c, stream.c), a library kernel's own arguments (vLLM's CUTLASS scaled_mm: kernel.c), or
 * a fused MoE launch (moe.c: batch = the experts it touches, timed by the `moemodel` row) */
typedef enum { TW_GEMM_BLAS = 0, TW_GEMM_KERNEL_ARGS, TW_GEMM_FUSED_MOE } tw_gemm_source;

/* A semantic annotation, where the API tells what a launch computes. */
typedef struct tw_annotation {
    tw_ann_kind kind;
    union {
        struct {                 /* cuBLAS / cuBLASLt: C[m,n] = op(A)[m,k] op(B)[k,n], batch times */
            int64_t m, n, k, batch;
            int a_type, b_type, c_type, compute_type; /* cudaDataType / cublasComputeType values */
            int trans_a, trans_b;
            int epilogue;        /* cublasLtEpilogue_t, 1 = none */
            int source;          /* tw_gemm_source: who made the launch (cuBLAS's host behaviour is its own) */
        } gemm;
        struct {
            int64_t batch, q_len, kv_len, heads, kv_heads, head_dim;
            int causal, dtype;
        } attn;
        struct {
            int kind;            /* allreduce, allgather ... (nccl.c's enum) */
            int64_t bytes;
            int nranks;
            uint64_t comm;
        } coll;
    } u;
} tw_annotation;

/* A kernel as registered or loaded: one per (module, function). Kernel handles the APIs give out
 * (cudaKernel_t, CUfunction, the host stub address) all resolve to one of these. */
#define TW_INDUCTOR_CONFIGS 8
typedef struct tw_kernel {
    const char *name;        /* mangled device name */
    const char *pretty;      /* demangled where possible, else name */
    uint32_t id;             /* dense id, for caches and traces */
    int n_params;            /* -1 unknown */
    int max_threads, shared_bytes, const_bytes, local_bytes, num_regs, max_dyn_shared;
    int step_class;          /* step.c's classification of the kernel, cached (0: not yet) */
    int row_class;           /* kernel.c's: how its arguments give a row shape, cached (0: not yet) */
    int gemm_types;          /* kernel.c's, for a CUTLASS GEMM: A's cudaDataType | output's << 8, from its name */
    int ew_elem_bytes;       /* kernel.c's, from its name: for PyTorch's elementwise kernels the bytes each element
                              * moves over all its tensors, for its reductions the input's element size, for its
                              * casts that convert as they load the loader's tensor count (their sizes are in
                              * the launch's arguments) */
    /* kernel.c's, for an Inductor Triton kernel: the autotuning configs seen launched under this name (block
     * threads and the XBLOCK elements each block covers), so that rows measured with one config time another */
    int nconfigs;
    uint32_t config_threads[TW_INDUCTOR_CONFIGS];
    int64_t config_xblock[TW_INDUCTOR_CONFIGS];
} tw_kernel;

tw_kernel *tw_kernel_intern(const char *mangled_name);   /* returns the same object for the same name */
int tw_kernel_valid(const void *p);                       /* p is a tw_kernel from tw_kernel_intern (slow) */
struct tw_op;
/* For PyTorch's row kernels whose launch size does not tell their work (reductions cap their grid; a norm's
 * grid is its row count), read (outputs, inputs per output) from the launch's arguments into op->rows; for
 * Inductor's Triton kernels, (xnumel, r0_numel or 1) and op->ptr_args, where the parameters' sizes are known
 * (param_size of n_params, from the cubin; NULL otherwise); for a CUTLASS 3 GEMM on quantized operands (vLLM's
 * fp8/int8 scaled_mm), its problem shape into op->ann. */
void tw_kernel_row_shape(struct tw_op *op, void *const *args, const uint32_t *param_size, int n_params);
/* Bumped whenever an Inductor kernel's config is first seen: predictions made before may now translate rows */
extern unsigned tw_inductor_configs_gen;
/* A fused mixture-of-experts launch's facts, from the binding that makes it (moe.c): the next kernel launch on
 * this thread whose name begins with kernel_prefix is annotated as the batched GEMM over the experts it touches.
 * w_type and act_type are cudaDataType values (weights, activations). */
void tw_moe_next(const char *kernel_prefix, int64_t tokens, int top_k, int experts, int64_t n, int64_t k,
                 int block_m, int w_type, int act_type);
void tw_moe_take(struct tw_op *op);   /* called by tw_kernel_row_shape */

typedef struct tw_op {
    tw_op_kind kind;
    const tw_kernel *kernel;  /* TW_OP_KERNEL */
    const char *label;        /* name for non-kernel ops ("cublasLtMatmul", "memcpy HtoD") */
    uint32_t grid[3], block[3];
    uint32_t shmem;
    int64_t rows[2];          /* (outputs, inputs per output) of a row kernel (tw_kernel_row_shape); 0: unknown */
    int ptr_args;             /* an Inductor Triton kernel's tensor (pointer) arguments; 0: unknown */
    double ew_bytes;          /* a PyTorch elementwise kernel's or reduction's bytes (element count x element
                               * size), for the transfer to another GPU only (profile.c); 0: unknown */
    tw_annotation ann;
    /* memcpy/memset */
    tw_copy_dir dir;
    size_t bytes;
    void *dst; const void *src; int value; int pinned; /* data movement at completion where backed */
    /* host function */
    void (*fn)(void *); void *fn_data;
    /* event ops */
    struct tw_event *event;
    /* a graph launch */
    struct tw_graph_exec *exec;
    /* set by the core: predicted duration (ns); the caller may preset it (>0) to override the model */
    uint64_t duration;
    int layer;                /* set by the core: the tw_layer that predicted duration (-1: preset by the caller) */
    int captured;             /* set by the core: the op runs as a node of a CUDA graph (a copy's time differs) */
} tw_op;

/* ---------------------------------------------------------------- streams (stream.c) */
typedef struct tw_stream tw_stream;
#define TW_STREAM_LEGACY ((void *)0x1)
#define TW_STREAM_PER_THREAD ((void *)0x2)
/* Handle -> stream. NULL means the legacy default stream unless per_thread_default; 0x1 legacy; 0x2 the
 * calling thread's per-thread default stream. Returns NULL for a handle that is not a live stream. */
tw_stream *tw_stream_get(void *handle, int per_thread_default);
tw_err tw_stream_create(int dev, unsigned flags, int priority, tw_stream **out);
tw_err tw_stream_destroy(tw_stream *s);
int tw_stream_device(const tw_stream *s);
unsigned tw_stream_flags(const tw_stream *s);
int tw_stream_priority(const tw_stream *s);
uint64_t tw_stream_id(const tw_stream *s);
/* Enqueue: on a capturing stream the op goes into the graph, otherwise onto the stream's virtual timeline
 * (start = max(stream tail, host now, legacy-stream ordering), end = start + predicted duration).
 * Host functions run when their virtual start is reached by a later host wait (or at once if already due). */
tw_err tw_enqueue(tw_stream *s, tw_op *op);
/* When an op issued now by the host at virtual time host would start on s (nothing is placed). */
uint64_t tw_stream_ready_at(tw_stream *s, uint64_t host);
int tw_stream_capturing(tw_stream *s);
/* Stream captures in progress in this process (any thread): the shadow of small results stays out of them */
int tw_captures_active(void);
tw_err tw_stream_synchronize(tw_stream *s);
uint64_t tw_ops_queued(int dev);   /* operations issued to dev's stream queues so far */
tw_err tw_stream_query(tw_stream *s);          /* TW_OK or TW_ERR_NOT_READY, against the virtual clock */
tw_err tw_device_synchronize(int dev);         /* dev < 0: every device */
/* Blocking host copy (cudaMemcpy): waits for the stream's work, does the copy, advances the clock. */
tw_err tw_copy_sync(tw_stream *s, void *dst, const void *src, size_t n, tw_copy_dir dir);

/* ---------------------------------------------------------------- events (event.c) */
typedef struct tw_event tw_event;
tw_err tw_event_create(unsigned flags, tw_event **out);  /* CU_EVENT_* / cudaEvent* flag values */
tw_err tw_event_destroy(tw_event *e);
int tw_event_valid(const tw_event *e);
tw_err tw_event_record(tw_event *e, tw_stream *s);
tw_err tw_event_query(tw_event *e);
tw_err tw_event_synchronize(tw_event *e);
tw_err tw_event_elapsed_ms(tw_event *start, tw_event *end, float *ms);
tw_err tw_stream_wait_event(tw_stream *s, tw_event *e);

/* ---------------------------------------------------------------- graphs (graph.c) */
typedef struct tw_graph tw_graph;
typedef struct tw_graph_exec tw_graph_exec;
typedef struct tw_graph_node tw_graph_node;
typedef enum { TW_CAPTURE_NONE = 0, TW_CAPTURE_ACTIVE = 1, TW_CAPTURE_INVALIDATED = 2 } tw_capture_status;
/* mode: 0 global, 1 thread local, 2 relaxed (cudaStreamCaptureMode values) */
tw_err tw_capture_begin(tw_stream *s, int mode);
tw_err tw_capture_end(tw_stream *s, tw_graph **out);
tw_capture_status tw_capture_status_of(tw_stream *s, uint64_t *id, tw_graph **graph);
/* cudaThreadExchangeStreamCaptureMode */
int tw_capture_exchange_mode(int mode);
tw_err tw_graph_create(tw_graph **out);
tw_err tw_graph_destroy(tw_graph *g);
size_t tw_graph_num_nodes(const tw_graph *g);
tw_graph_node *tw_graph_node_at(tw_graph *g, size_t i);
tw_err tw_graph_add_op(tw_graph *g, const tw_op *op, tw_graph_node **out); /* explicit graph building */
const tw_op *tw_graph_node_op(const tw_graph_node *n);
tw_err tw_graph_instantiate(tw_graph *g, tw_graph_exec **out);
tw_err tw_graph_exec_destroy(tw_graph_exec *x);
tw_err tw_graph_exec_update(tw_graph_exec *x, tw_graph *g);
tw_err tw_graph_launch(tw_graph_exec *x, tw_stream *s);
tw_err tw_graph_exec_upload(tw_graph_exec *x);   /* cudaGraphUpload: the first launch's upload, done now */

/* ---------------------------------------------------------------- durations (model.c) */
/* Predicted duration of op on device dev, in ns, and which layer of the predictor produced it. */
typedef enum {
    TW_LAYER_ROOFLINE = 0,   /* analytical: FLOPs and bytes over the device's measured rates */
    TW_LAYER_EXACT = 1,      /* a measured profile row with this exact key */
    TW_LAYER_INTERP = 2,     /* interpolated between measured rows of the same family */
    TW_LAYER_NEAREST = 3,    /* the roofline times the efficiency measured on the nearest shapes */
    TW_LAYER_GRAPH = 4,      /* a graph launch: the sum of its nodes' predictions */
    TW_LAYER_STEP = 5,       /* timed from the integration's context: attention (step.c), fused MoE (moe.c) */
    TW_LAYER_SIBLING = 6,    /* the rows of the same kernel recorded on other element types */
    TW_LAYER_CONFIG = 7,     /* an Inductor kernel's rows measured with another autotuning config (XBLOCK) */
    TW_LAYER_SUSTAINED = 0x100,  /* flag: the rows were measured inside sustained work (the power cap in them) */
} tw_layer;

uint64_t tw_predict(int dev, const tw_op *op);
/* ---------------------------------------------------------------- step context (step.c) */
/* A serving integration's description of the batch now being run: each request's query length (tokens
 * computed this step) and context length (tokens attended to, the new ones included), and the attention
 * shape per GPU. Kernels whose work lives in device memory (varlen FlashAttention, also inside full CUDA
 * graphs) are timed from it. */
void tw_step_set(int nreq, const int32_t *q_lens, const int32_t *k_lens, int heads, int kv_heads, int head_dim);
void tw_step_set_kv_elem(int bytes);   /* the KV cache's bytes per element: 2 (default) or 1 (fp8) */
uint64_t tw_step_generation(void);    /* changes with every tw_step_set; 0 before the first */
int tw_step_dependent(const tw_op *op); /* op's time comes from the step context when there is one */
/* Seconds for a step-dependent op under the current context; 0 when op is not one or there is no context. */
double tw_step_predict_s(const tw_gpu_spec *spec, const tw_op *op);
uint64_t tw_predict_ex(int dev, const tw_op *op, int *layer);
/* The analytical layer, in seconds (profile.c scales measured times between GPUs with it). */
double tw_roofline_s(const tw_gpu_spec *s, const tw_op *op);
/* An annotated launch's (GEMM, attention) compute and memory times at the device's peak rates; 0 if neither. */
int tw_annotated_times(const tw_gpu_spec *s, const tw_op *op, double *t_compute, double *t_memory);
/* its compute and memory times without the launch floor, where its bytes are known (0: not known) */
int tw_roofline_parts(const tw_gpu_spec *s, const tw_op *op, double *t_compute, double *t_memory);
/* The profile layers (profile.c): seconds, or 0 when the profile has nothing close enough. */
double tw_profile_predict_s(const tw_gpu_spec *s, const tw_op *op, int *layer);
double tw_profile_kgap_ns(void);   /* the time a back-to-back kernel launch adds (the profile's kgap row) */
const tw_gpu_spec *tw_profile_card(void);   /* the card the profile was measured on; NULL without a profile */
/* The fitted step-attention model (a profile "attnstep" row): t0_ns, eff_compute, eff_memory, per_tile_ns,
 * per_decode_tile_ns (a decode step's tiles; per_tile_ns where the row has four values). Returns the GPU it
 * was fitted on, NULL without a row. */
const tw_gpu_spec *tw_profile_attn_step(double coef[5]);
/* measured_s on the profiled GPU -> seconds on spec, by shares (profile.c, transfer): cp and mp the work's
 * compute and memory times on the profiled GPU, ct and mt on spec, the shares added as P-th powers, the
 * memory share taken at `stream` of the bandwidth. measured_s itself where spec is the profiled GPU. */
double tw_transfer_split(const tw_gpu_spec *spec, double measured_s, double cp, double mp, double ct, double mt,
                         double P, double stream);
const char *tw_layer_name(int layer);

/* ---------------------------------------------------------------- records (trace.c) */
/* Every op that ran on a timeline; written as a Chrome/Perfetto trace and a summary at exit when
 * TIMEWARP_TRACE / TIMEWARP_REPORT name files. */
/* issued: the host's virtual time when the op was enqueued (a graph's nodes: the graph launch's) */
void tw_record(int dev, uint64_t stream_id, const tw_op *op, uint64_t start, uint64_t end, uint64_t issued);

#ifdef __cplusplus
}
#endif
#endif
