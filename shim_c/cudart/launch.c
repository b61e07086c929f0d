/* Execution control: the CUDA 13 launch ABI (fatbinary / function / variable registration, call
 * configuration, __cudaGetKernel, __cudaLaunchKernel), cudaLaunchKernel*, function attributes, occupancy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudart_internal.h"

/* ------------------------------------------------------------------ registration */

typedef struct reg_module {
    void *handle_slot;               /* &handle_slot is the handle (void **) given out */
    const tw_fatbin_wrapper *wrapper;
    uint64_t bytes;                  /* the fatbinary's size (0: unknown) */
    atomic_int loaded;               /* a kernel of it was used (lazy loading) */
} reg_module;

typedef struct reg_fun {
    const void *host_fun;
    const char *device_name;
    reg_module *mod;
    _Atomic(tw_kernel *) k;          /* interned on first use */
} reg_fun;

/* ------------------------------------------------------------------ lazy module loading
 * With CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2, the driver loads a module's code at the first
 * use of one of its kernels (a launch, a capture, an attribute query), on the calling thread: measured on
 * the H200 (predictors/data/h200/lazy_loading_2026-11-30) at 3-60 ms of host CPU for a PyTorch kernel
 * file's module, once per module, nothing for its other kernels. The emulator charges that time there
 * (the profile's host module_load_ns + module_load_ns_per_mb x the fatbinary's size); EAGER charges
 * nothing (its cost is paid at context creation, not modelled). TIMEWARP_LAZY_LOG=1 names each load. */
static int lazy_mode = -1;   /* 1: lazy loading, 2: and log, 0: eager */

static void lazy_load(reg_module *m, const char *first_kernel)
{
    if (TW_UNLIKELY(lazy_mode < 0)) {
        const char *v = getenv("CUDA_MODULE_LOADING");
        const char *l = getenv("TIMEWARP_LAZY_LOG");
        lazy_mode = v && !strcmp(v, "EAGER") ? 0 : l && *l == '1' ? 2 : 1;
    }
    if (!lazy_mode || atomic_load_explicit(&m->loaded, memory_order_relaxed) ||
        atomic_exchange_explicit(&m->loaded, 1, memory_order_acq_rel))
        return;
    uint64_t ns = tw_profile_host_cost(TW_HOST_MODULE_LOAD) +
                  (uint64_t)((double)tw_profile_host_cost(TW_HOST_MODULE_LOAD_PER_MB) * (double)m->bytes / (1 << 20));
    if (lazy_mode == 2) fprintf(stderr, "timewarp: lazy load %llu bytes (%llu ns) for %s\n", (unsigned long long)m->bytes,
                                (unsigned long long)ns, first_kernel);
    tw_charge_add(ns);
}

/* The size of the fatbinary a registration points to: the wrapper's data is a fatbinary header (magic
 * 0xBA55ED50, version, header size, payload size). */
static uint64_t fatbin_bytes(const tw_fatbin_wrapper *w)
{
    if (!w || w->magic != 0x466243b1 || !w->data) return 0;
    const unsigned char *h = w->data;
    uint32_t magic;
    uint16_t hsize;
    uint64_t fsize;
    memcpy(&magic, h, 4);
    if (magic != 0xBA55ED50u) return 0;
    memcpy(&hsize, h + 6, 2);
    memcpy(&fsize, h + 8, 8);
    return hsize + fsize;
}

static tw_ptrmap host_funs = TW_PTRMAP_INIT;   /* host stub -> reg_fun */
static tw_ptrmap modules = TW_PTRMAP_INIT;     /* handle given out -> reg_module */
static tw_ptrmap kernel_set = TW_PTRMAP_INIT;  /* tw_kernel handed out -> reg_fun (or the kernel itself) */

static tw_kernel *reg_kernel(reg_fun *r)
{
    tw_kernel *k = atomic_load_explicit(&r->k, memory_order_acquire);
    if (TW_LIKELY(k != NULL)) return k;
    k = tw_kernel_intern(r->device_name);
    if (!k) return NULL;
    if (!tw_pm_get(&kernel_set, k)) tw_pm_put(&kernel_set, k, r);
    atomic_store_explicit(&r->k, k, memory_order_release);
    return k;
}

tw_kernel *tw_cudart_resolve_func(const void *func)
{
    if (TW_UNLIKELY(!func)) return NULL;
    reg_fun *r = tw_pm_get(&host_funs, func);
    if (r) {
        if (r->mod && TW_UNLIKELY(!atomic_load_explicit(&r->mod->loaded, memory_order_relaxed)))
            lazy_load(r->mod, r->device_name);
        return reg_kernel(r);
    }
    if (tw_pm_get(&kernel_set, func)) return (tw_kernel *)func;
    if (tw_kernel_valid(func)) return (tw_kernel *)func;
    return NULL;
}

const void *tw_cudart_kernel_host_fun(const tw_kernel *k)
{
    reg_fun *r = tw_pm_get(&kernel_set, k);
    if (!r || (void *)r == (void *)k) return NULL;
    return r->host_fun;
}

TW_EXPORT void **__cudaRegisterFatBinary(void *fatCubin)
{
    reg_module *m = calloc(1, sizeof(*m));
    if (!m) return NULL;
    m->wrapper = fatCubin;
    m->handle_slot = fatCubin;
    m->bytes = fatbin_bytes(fatCubin);
    tw_pm_put(&modules, &m->handle_slot, m);
    TW_DEBUG("__cudaRegisterFatBinary(%p) -> %p", fatCubin, (void *)&m->handle_slot);
    return &m->handle_slot;
}

TW_EXPORT void __cudaRegisterFatBinaryEnd(void **fatCubinHandle)
{
    (void)fatCubinHandle;
}

TW_EXPORT void __cudaUnregisterFatBinary(void **fatCubinHandle)
{
    /* Runs from atexit: kernels stay interned (records may still name them); nothing to release. */
    (void)fatCubinHandle;
}

TW_EXPORT char __cudaInitModule(void **fatCubinHandle)
{
    (void)fatCubinHandle;
    return 1;
}

TW_EXPORT void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                                      const char *deviceName, int thread_limit, void *tid, void *bid,
                                      void *bDim, void *gDim, int *wSize)
{
    (void)fatCubinHandle; (void)thread_limit; (void)tid; (void)bid; (void)bDim; (void)gDim; (void)wSize;
    const char *name = deviceName ? deviceName : deviceFun;
    if (!hostFun || !name) return;
    reg_fun *r = calloc(1, sizeof(*r));
    if (!r) return;
    r->host_fun = hostFun;
    r->device_name = name;
    r->mod = fatCubinHandle ? tw_pm_get(&modules, fatCubinHandle) : NULL;
    tw_pm_put(&host_funs, hostFun, r);
}

TW_EXPORT void __cudaRegisterVar(void **fatCubinHandle, char *hostVar, char *deviceAddress,
                                 const char *deviceName, int ext, size_t size, int constant, int global)
{
    (void)fatCubinHandle; (void)deviceAddress; (void)ext; (void)global;
    tw_cudart_register_var(hostVar, deviceName, size, constant, NULL);
}

TW_EXPORT void __cudaRegisterManagedVar(void **fatCubinHandle, void **hostVarPtrAddress, char *deviceAddress,
                                        const char *deviceName, int ext, size_t size, int constant, int global)
{
    (void)fatCubinHandle; (void)deviceAddress; (void)ext; (void)global;
    if (!hostVarPtrAddress) return;
    /* managed variables are host-accessible: plain zeroed host memory, also the "device" address */
    void *p = calloc(1, size ? size : 1);
    if (!p) return;
    *hostVarPtrAddress = p;
    tw_cudart_register_var(hostVarPtrAddress, deviceName, size, constant, p);
}

/* ------------------------------------------------------------------ call configuration */

typedef struct { dim3 grid, block; size_t shmem; void *stream; } call_cfg;
#define CFG_DEPTH 32
static __thread call_cfg cfg_stack[CFG_DEPTH];
static __thread int cfg_depth;

TW_EXPORT unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem, void *stream)
{
    int d = cfg_depth;
    if (TW_UNLIKELY(d >= CFG_DEPTH)) return (unsigned)cr(cudaErrorInvalidConfiguration);
    cfg_stack[d].grid = gridDim;
    cfg_stack[d].block = blockDim;
    cfg_stack[d].shmem = sharedMem;
    cfg_stack[d].stream = stream;
    cfg_depth = d + 1;
    return 0;
}

TW_EXPORT cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem, void *stream)
{
    int d = cfg_depth;
    if (TW_UNLIKELY(d <= 0)) return cr(cudaErrorMissingConfiguration);
    cfg_depth = --d;
    if (gridDim) *gridDim = cfg_stack[d].grid;
    if (blockDim) *blockDim = cfg_stack[d].block;
    if (sharedMem) *sharedMem = cfg_stack[d].shmem;
    if (stream) *(void **)stream = cfg_stack[d].stream;
    return cudaSuccess;
}

/* ------------------------------------------------------------------ launches */

static inline int dyn_smem_limit(const tw_kernel *k)
{
    if (k->max_dyn_shared > 0) return k->max_dyn_shared;
    return 49152 - (k->shared_bytes > 0 ? k->shared_bytes : 0);
}

/* Validation shared by every launch; returns 0 or a cudaError_t (not recorded). */
static inline int check_launch(const tw_kernel *k, dim3 g, dim3 b, size_t shmem)
{
    uint64_t threads = (uint64_t)b.x * b.y * b.z;
    if (TW_UNLIKELY(g.x == 0 || g.y == 0 || g.z == 0 || g.x > 0x7fffffffu || g.y > 65535 || g.z > 65535 ||
                    threads == 0 || threads > 1024 || b.x > 1024 || b.y > 1024 || b.z > 64))
        return cudaErrorInvalidConfiguration;
    if (TW_UNLIKELY(k->max_threads > 0 && threads > (uint64_t)k->max_threads))
        return cudaErrorLaunchOutOfResources;
    if (TW_UNLIKELY(shmem > (size_t)dyn_smem_limit(k)))
        return cudaErrorInvalidValue;
    return 0;
}

static int occupancy(const tw_kernel *k, const tw_dev_limits *L, int blockSize, size_t dynSmem);

static inline cudaError_t launch_core(const tw_kernel *k, dim3 g, dim3 b, size_t shmem, void *stream, int pt,
                                      void **args)
{
    if (TW_UNLIKELY(!k)) return cr(cudaErrorInvalidDeviceFunction);
    tw_stream *s = tw_stream_get(stream, pt);
    if (TW_UNLIKELY(!s)) return cr(cudaErrorInvalidResourceHandle);
    int e = check_launch(k, g, b, shmem);
    if (TW_UNLIKELY(e)) return cr(e);
    tw_op op = {
        .kind = TW_OP_KERNEL,
        .kernel = k,
        .grid = {g.x, g.y, g.z},
        .block = {b.x, b.y, b.z},
        .shmem = (uint32_t)shmem,
    };
    tw_kernel_row_shape(&op, args, NULL, 0);
    TW_DEBUG("launch %s grid(%u,%u,%u) block(%u,%u,%u) shmem %zu stream %p", k->name, g.x, g.y, g.z, b.x, b.y,
             b.z, shmem, stream);
    tw_err te = tw_enqueue(s, &op);
    return TW_LIKELY(te == TW_OK) ? cudaSuccess : cr_tw(te);
}

TW_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun)
{
    if (!kernel) return cr(cudaErrorInvalidValue);
    tw_kernel *k = tw_cudart_resolve_func(hostFun);
    if (!k) return cr(cudaErrorInvalidDeviceFunction);
    *kernel = k;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaGetKernel(cudaKernel_t *kernelPtr, const void *entryFuncAddr)
{
    return __cudaGetKernel(kernelPtr, entryFuncAddr);
}

TW_EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                         size_t sharedMem, cudaStream_t stream)
{
    return launch_core(kernel, gridDim, blockDim, sharedMem, stream, 0, args);
}

TW_EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                                              size_t sharedMem, cudaStream_t stream)
{
    return launch_core(kernel, gridDim, blockDim, sharedMem, stream, 1, args);
}

TW_EXPORT cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                       size_t sharedMem, cudaStream_t stream)
{
    return launch_core(tw_cudart_resolve_func(func), gridDim, blockDim, sharedMem, stream, 0, args);
}

TW_EXPORT cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                            size_t sharedMem, cudaStream_t stream)
{
    return launch_core(tw_cudart_resolve_func(func), gridDim, blockDim, sharedMem, stream, 1, args);
}

static cudaError_t launch_coop(const void *func, dim3 g, dim3 b, size_t shmem, cudaStream_t stream, int pt,
                               void **args)
{
    tw_kernel *k = tw_cudart_resolve_func(func);
    if (!k) return cr(cudaErrorInvalidDeviceFunction);
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    int e = check_launch(k, g, b, shmem);
    if (e) return cr(e);
    const tw_dev_limits *L = tw_cudart_limits(tw_stream_device(s));
    if (L) {
        int per_sm = occupancy(k, L, (int)(b.x * b.y * b.z), shmem);
        uint64_t blocks = (uint64_t)g.x * g.y * g.z;
        if (blocks > (uint64_t)per_sm * (uint64_t)L->sm_count) return cr(cudaErrorCooperativeLaunchTooLarge);
    }
    return launch_core(k, g, b, shmem, stream, pt, args);
}

TW_EXPORT cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                                  size_t sharedMem, cudaStream_t stream)
{
    return launch_coop(func, gridDim, blockDim, sharedMem, stream, 0, args);
}

TW_EXPORT cudaError_t cudaLaunchCooperativeKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                                       size_t sharedMem, cudaStream_t stream)
{
    return launch_coop(func, gridDim, blockDim, sharedMem, stream, 1, args);
}

static cudaError_t launch_ex(const cudaLaunchConfig_t *config, const void *func, int pt, void **args)
{
    if (!config) return cr(cudaErrorInvalidValue);
    if (config->numAttrs && !config->attrs) return cr(cudaErrorInvalidValue);
    tw_kernel *k = tw_cudart_resolve_func(func);
    if (!k) return cr(cudaErrorInvalidDeviceFunction);
    dim3 g = config->gridDim, b = config->blockDim;
    int coop = 0;
    for (unsigned i = 0; i < config->numAttrs; i++) {
        const cudaLaunchAttribute *a = &config->attrs[i];
        switch (a->id) {
        case cudaLaunchAttributeCooperative:
            coop = a->val.cooperative != 0;
            break;
        case cudaLaunchAttributeClusterDimension: {
            unsigned cx = a->val.clusterDim.x, cy = a->val.clusterDim.y, cz = a->val.clusterDim.z;
            if (cx == 0 && cy == 0 && cz == 0) break;
            if (!cx || !cy || !cz || g.x % cx || g.y % cy || g.z % cz || (uint64_t)cx * cy * cz > 16)
                return cr(912); /* cudaErrorInvalidClusterSize */
            break;
        }
        case cudaLaunchAttributeProgrammaticEvent:
            if (a->val.programmaticEvent.event && !tw_event_valid(a->val.programmaticEvent.event))
                return cr(cudaErrorInvalidResourceHandle);
            break;
        case cudaLaunchAttributeLaunchCompletionEvent:
            if (a->val.launchCompletionEvent.event && !tw_event_valid(a->val.launchCompletionEvent.event))
                return cr(cudaErrorInvalidResourceHandle);
            break;
        default:
            break; /* priority, access policy, PDL serialization, mem sync domains ...: no timing effect modelled */
        }
    }
    cudaError_t e = coop ? launch_coop(func, g, b, config->dynamicSmemBytes, config->stream, pt, args)
                         : launch_core(k, g, b, config->dynamicSmemBytes, config->stream, pt, args);
    if (e != cudaSuccess) return e;
    /* events triggered by the launch: recorded after it (they fire no later than its end) */
    for (unsigned i = 0; i < config->numAttrs; i++) {
        const cudaLaunchAttribute *a = &config->attrs[i];
        tw_event *ev = NULL;
        if (a->id == cudaLaunchAttributeProgrammaticEvent) ev = a->val.programmaticEvent.event;
        else if (a->id == cudaLaunchAttributeLaunchCompletionEvent) ev = a->val.launchCompletionEvent.event;
        if (ev) {
            tw_err te = tw_event_record(ev, tw_stream_get(config->stream, pt));
            if (te != TW_OK) return cr_tw(te);
        }
    }
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args)
{
    return launch_ex(config, func, 0, args);
}

TW_EXPORT cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *config, const void *func, void **args)
{
    return launch_ex(config, func, 1, args);
}

/* ------------------------------------------------------------------ function attributes */

static void fill_func_attrs(struct cudaFuncAttributes *a, const tw_kernel *k)
{
    int dev = tw_get_device();
    const tw_dev_limits *L = tw_cudart_limits(dev);
    int arch = L ? L->cc_major * 10 + L->cc_minor : 90;
    memset(a, 0, sizeof(*a));
    a->sharedSizeBytes = k->shared_bytes > 0 ? (size_t)k->shared_bytes : 0;
    a->constSizeBytes = k->const_bytes > 0 ? (size_t)k->const_bytes : 0;
    a->localSizeBytes = k->local_bytes > 0 ? (size_t)k->local_bytes : 0;
    a->maxThreadsPerBlock = k->max_threads > 0 ? k->max_threads : 1024;
    a->numRegs = k->num_regs > 0 ? k->num_regs : 32;
    a->ptxVersion = arch;
    a->binaryVersion = arch;
    a->cacheModeCA = 0;
    a->maxDynamicSharedSizeBytes = dyn_smem_limit(k);
    a->preferredShmemCarveout = -1;
    a->nonPortableClusterSizeAllowed = arch >= 90;
}

TW_EXPORT cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func)
{
    if (!attr) return cr(cudaErrorInvalidValue);
    tw_kernel *k = tw_cudart_resolve_func(func);
    if (!k) return cr(cudaErrorInvalidDeviceFunction);
    fill_func_attrs(attr, k);
    return cudaSuccess;
}

static cudaError_t set_func_attr(tw_kernel *k, int attr, int value, int dev)
{
    const tw_dev_limits *L = tw_cudart_limits(dev);
    switch (attr) {
    case cudaFuncAttributeMaxDynamicSharedMemorySize: {
        int optin = L ? L->smem_optin : 232448;
        int stat = k->shared_bytes > 0 ? k->shared_bytes : 0;
        if (value < 0 || value > optin - stat) return cr(cudaErrorInvalidValue);
        k->max_dyn_shared = value;
        return cudaSuccess;
    }
    case cudaFuncAttributePreferredSharedMemoryCarveout:
        if (value < -1 || value > 100) return cr(cudaErrorInvalidValue);
        return cudaSuccess;
    case cudaFuncAttributeRequiredClusterWidth:
    case cudaFuncAttributeRequiredClusterHeight:
    case cudaFuncAttributeRequiredClusterDepth:
        if (value < 0 || value > 16) return cr(cudaErrorInvalidValue);
        return cudaSuccess;
    case cudaFuncAttributeNonPortableClusterSizeAllowed:
        if (value != 0 && value != 1) return cr(cudaErrorInvalidValue);
        return cudaSuccess;
    case cudaFuncAttributeClusterSchedulingPolicyPreference:
        if (value < 0 || value > 2) return cr(cudaErrorInvalidValue);
        return cudaSuccess;
    default:
        return cr(cudaErrorInvalidValue);
    }
}

TW_EXPORT cudaError_t cudaFuncSetAttribute(const void *func, int attr, int value)
{
    tw_kernel *k = tw_cudart_resolve_func(func);
    if (!k) return cr(cudaErrorInvalidDeviceFunction);
    return set_func_attr(k, attr, value, tw_get_device());
}

TW_EXPORT cudaError_t cudaKernelSetAttributeForDevice(cudaKernel_t kernel, int attr, int value, int device)
{
    tw_init();
    if (!tw_valid_device(device)) return cr(cudaErrorInvalidDevice);
    tw_kernel *k = tw_cudart_resolve_func(kernel);
    if (!k) return cr(cudaErrorInvalidDeviceFunction);
    return set_func_attr(k, attr, value, device);
}

TW_EXPORT cudaError_t cudaFuncSetCacheConfig(const void *func, int cacheConfig)
{
    if (!tw_cudart_resolve_func(func)) return cr(cudaErrorInvalidDeviceFunction);
    if (cacheConfig < 0 || cacheConfig > 3) return cr(cudaErrorInvalidValue);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaFuncSetSharedMemConfig(const void *func, int config)
{
    if (!tw_cudart_resolve_func(func)) return cr(cudaErrorInvalidDeviceFunction);
    if (config < 0 || config > 2) return cr(cudaErrorInvalidValue);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaFuncGetName(const char **name, const void *func)
{
    if (!name) return cr(cudaErrorInvalidValue);
    tw_kernel *k = tw_cudart_resolve_func(func);
    if (!k) return cr(cudaErrorInvalidDeviceFunction);
    *name = k->name;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaGetFuncBySymbol(cudaFunction_t *functionPtr, const void *symbolPtr)
{
    if (!functionPtr) return cr(cudaErrorInvalidValue);
    tw_kernel *k = tw_cudart_resolve_func(symbolPtr);
    if (!k) return cr(cudaErrorInvalidDeviceFunction);
    *functionPtr = k;
    return cudaSuccess;
}

/* ------------------------------------------------------------------ occupancy */

static int occupancy(const tw_kernel *k, const tw_dev_limits *L, int blockSize, size_t dynSmem)
{
    int warp = L->warp_size;
    int max_threads = k->max_threads > 0 ? k->max_threads : L->max_threads_per_block;
    if (blockSize <= 0 || blockSize > max_threads) return 0;
    int warps = (blockSize + warp - 1) / warp;
    int by_warps = (L->max_threads_per_sm / warp) / warps;
    int by_blocks = L->max_blocks_per_sm;
    /* registers: allocated per warp in units of 256, the register file split in 4 sub-partitions */
    int regs = k->num_regs > 0 ? k->num_regs : 32;
    int regs_per_warp = ((regs * warp + 255) / 256) * 256;
    if ((int64_t)regs_per_warp * warps > L->regs_per_block) return 0;
    int warps_by_regs = (L->regs_per_sm / 4 / regs_per_warp) * 4;
    int by_regs = warps_by_regs / warps;
    /* shared memory: static + dynamic + the driver's per-block reservation, 128-byte granularity */
    size_t stat = k->shared_bytes > 0 ? (size_t)k->shared_bytes : 0;
    if (stat + dynSmem > (size_t)L->smem_optin) return 0;
    size_t smem = stat + dynSmem + (size_t)L->smem_reserved;
    smem = (smem + 127) & ~(size_t)127;
    int by_smem = smem ? (int)((size_t)L->smem_per_sm / smem) : by_blocks;
    int n = by_warps;
    if (by_blocks < n) n = by_blocks;
    if (by_regs < n) n = by_regs;
    if (by_smem < n) n = by_smem;
    return n < 0 ? 0 : n;
}

static cudaError_t occ_blocks(int *numBlocks, const void *func, int blockSize, size_t dynSmem, unsigned flags)
{
    if (!numBlocks) return cr(cudaErrorInvalidValue);
    if (flags & ~(unsigned)cudaOccupancyDisableCachingOverride) return cr(cudaErrorInvalidValue);
    tw_kernel *k = tw_cudart_resolve_func(func);
    if (!k) return cr(cudaErrorInvalidDeviceFunction);
    if (blockSize <= 0) return cr(cudaErrorInvalidValue);
    const tw_dev_limits *L = tw_cudart_limits(tw_get_device());
    if (!L) return cr(cudaErrorInvalidDevice);
    *numBlocks = occupancy(k, L, blockSize, dynSmem);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, const void *func, int blockSize,
                                                                    size_t dynamicSMemSize)
{
    return occ_blocks(numBlocks, func, blockSize, dynamicSMemSize, 0);
}

TW_EXPORT cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, const void *func,
                                                                             int blockSize, size_t dynamicSMemSize,
                                                                             unsigned int flags)
{
    return occ_blocks(numBlocks, func, blockSize, dynamicSMemSize, flags);
}

TW_EXPORT cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, const void *func,
                                                                int numBlocks, int blockSize)
{
    if (!dynamicSmemSize) return cr(cudaErrorInvalidValue);
    tw_kernel *k = tw_cudart_resolve_func(func);
    if (!k) return cr(cudaErrorInvalidDeviceFunction);
    if (numBlocks <= 0 || blockSize <= 0) return cr(cudaErrorInvalidValue);
    const tw_dev_limits *L = tw_cudart_limits(tw_get_device());
    if (!L) return cr(cudaErrorInvalidDevice);
    size_t stat = k->shared_bytes > 0 ? (size_t)k->shared_bytes : 0;
    if (occupancy(k, L, blockSize, 0) < numBlocks) {
        *dynamicSmemSize = 0;
        return cudaSuccess;
    }
    size_t per_block = ((size_t)L->smem_per_sm / (size_t)numBlocks) & ~(size_t)127;
    size_t overhead = stat + (size_t)L->smem_reserved;
    size_t avail = per_block > overhead ? per_block - overhead : 0;
    size_t cap = (size_t)dyn_smem_limit(k);
    if (avail > cap) avail = cap;
    *dynamicSmemSize = avail;
    return cudaSuccess;
}

static unsigned cluster_size_of(const cudaLaunchConfig_t *c)
{
    for (unsigned i = 0; c->attrs && i < c->numAttrs; i++)
        if (c->attrs[i].id == cudaLaunchAttributeClusterDimension) {
            unsigned s = c->attrs[i].val.clusterDim.x * c->attrs[i].val.clusterDim.y * c->attrs[i].val.clusterDim.z;
            return s ? s : 1;
        }
    return 1;
}

TW_EXPORT cudaError_t cudaOccupancyMaxPotentialClusterSize(int *clusterSize, const void *func,
                                                           const cudaLaunchConfig_t *launchConfig)
{
    if (!clusterSize || !launchConfig) return cr(cudaErrorInvalidValue);
    if (!tw_cudart_resolve_func(func)) return cr(cudaErrorInvalidDeviceFunction);
    const tw_dev_limits *L = tw_cudart_limits(tw_get_device());
    *clusterSize = (L && L->cc_major >= 9) ? 8 : 1; /* portable cluster size */
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaOccupancyMaxActiveClusters(int *numClusters, const void *func,
                                                     const cudaLaunchConfig_t *launchConfig)
{
    if (!numClusters || !launchConfig) return cr(cudaErrorInvalidValue);
    tw_kernel *k = tw_cudart_resolve_func(func);
    if (!k) return cr(cudaErrorInvalidDeviceFunction);
    const tw_dev_limits *L = tw_cudart_limits(tw_get_device());
    if (!L) return cr(cudaErrorInvalidDevice);
    dim3 b = launchConfig->blockDim;
    int per_sm = occupancy(k, L, (int)(b.x * b.y * b.z), launchConfig->dynamicSmemBytes);
    unsigned cs = cluster_size_of(launchConfig);
    if (cs > 16) return cr(912);
    *numClusters = (int)(((int64_t)per_sm * L->sm_count) / cs);
    return cudaSuccess;
}

/* ------------------------------------------------------------------ libraries (cudaLibrary*) */

/* A loaded library keeps its image pointer only: kernels are looked up by name (interned on request), since
 * nothing executes and the image is not parsed. */
#define LIB_MAGIC 0x6c696272u

typedef struct cudart_library {
    uint32_t magic;
    const void *code;
} cudart_library;

static cudaError_t library_new(void **library, const void *code)
{
    cudart_library *l = calloc(1, sizeof(*l));
    if (!l) return cr(cudaErrorMemoryAllocation);
    l->magic = LIB_MAGIC;
    l->code = code;
    *library = l;
    return cudaSuccess;
}

static int library_valid(const void *library)
{
    return library && ((const cudart_library *)library)->magic == LIB_MAGIC;
}

TW_EXPORT cudaError_t cudaLibraryLoadData(void **library, const void *code, void *jitOptions, void **jitOptionsValues,
                                          unsigned int numJitOptions, void *libraryOptions,
                                          void **libraryOptionValues, unsigned int numLibraryOptions)
{
    (void)jitOptions; (void)jitOptionsValues; (void)libraryOptions; (void)libraryOptionValues;
    if (!library || !code) return cr(cudaErrorInvalidValue);
    if ((numJitOptions && !jitOptions) || (numLibraryOptions && !libraryOptions)) return cr(cudaErrorInvalidValue);
    return library_new(library, code);
}

TW_EXPORT cudaError_t cudaLibraryLoadFromFile(void **library, const char *fileName, void *jitOptions,
                                              void **jitOptionsValues, unsigned int numJitOptions,
                                              void *libraryOptions, void **libraryOptionValues,
                                              unsigned int numLibraryOptions)
{
    (void)jitOptions; (void)jitOptionsValues; (void)numJitOptions;
    (void)libraryOptions; (void)libraryOptionValues; (void)numLibraryOptions;
    if (!library || !fileName) return cr(cudaErrorInvalidValue);
    FILE *f = fopen(fileName, "rb");
    if (!f) return cr(301); /* cudaErrorFileNotFound */
    fclose(f);
    return library_new(library, fileName);
}

TW_EXPORT cudaError_t cudaLibraryUnload(void *library)
{
    if (!library_valid(library)) return cr(cudaErrorInvalidResourceHandle);
    ((cudart_library *)library)->magic = 0;
    free(library);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaLibraryGetKernel(cudaKernel_t *pKernel, void *library, const char *name)
{
    if (!pKernel || !name) return cr(cudaErrorInvalidValue);
    if (!library_valid(library)) return cr(cudaErrorInvalidResourceHandle);
    tw_kernel *k = tw_kernel_intern(name);
    if (!k) return cr(cudaErrorSymbolNotFound);
    if (!tw_pm_get(&kernel_set, k)) tw_pm_put(&kernel_set, k, k);
    *pKernel = k;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaLibraryGetKernelCount(unsigned int *count, void *library)
{
    if (!count) return cr(cudaErrorInvalidValue);
    if (!library_valid(library)) return cr(cudaErrorInvalidResourceHandle);
    *count = 0; /* the image is not parsed */
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaLibraryEnumerateKernels(cudaKernel_t *kernels, unsigned int numKernels, void *library)
{
    if (!kernels && numKernels) return cr(cudaErrorInvalidValue);
    if (!library_valid(library)) return cr(cudaErrorInvalidResourceHandle);
    return numKernels ? cr(cudaErrorInvalidValue) : cudaSuccess;
}
