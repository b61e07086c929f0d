/* Kernel launches and occupancy. A launch is validated like the real driver validates it (dimensions, block size
 * against the kernel's register-limited maximum, dynamic shared memory against the kernel's opt-in, clusters) and
 * becomes one TW_OP_KERNEL for tw_enqueue. The launch path takes no lock and allocates nothing. */
#include <string.h>

#include "cu_internal.h"

/* ---------------------------------------------------------------- occupancy (same rules as the CUDA occupancy
 * calculator: warps, registers allocated per warp in units of 256 over 4 SM sub-partitions, shared memory in
 * 128-byte units plus the per-block reservation, and the per-SM block limit). */
struct sm_limits { int threads, blocks, regs, smem, reserved, sms, warp; };

static void sm_limits(int dev, struct sm_limits *l)
{
    int v;
#define A(field, attr, dflt) l->field = tw_device_attr(dev, attr, &v) == TW_OK ? v : (dflt)
    A(threads, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048);
    A(blocks, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32);
    A(regs, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536);
    A(smem, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 233472);
    A(reserved, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1024);
    A(sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132);
    A(warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32);
#undef A
}

static int blocks_per_sm(const struct cu_func *f, int dev, int block, size_t dyn)
{
    if (block <= 0 || block > f->max_threads || dyn > (size_t)f->max_dyn_shared)
        return 0;
    struct sm_limits l;
    sm_limits(dev, &l);
    int warps = (block + l.warp - 1) / l.warp;
    int n = l.blocks;
    int by_threads = l.threads / (warps * l.warp);
    if (by_threads < n) n = by_threads;
    int regs = f->num_regs > 0 ? f->num_regs : 1;
    int per_warp = ((regs * l.warp + 255) / 256) * 256;
    int warps_per_part = (l.regs / 4) / per_warp;
    int by_regs = (warps_per_part * 4) / warps;
    if (by_regs < n) n = by_regs;
    size_t smem = (size_t)f->shared_static + dyn;
    if (smem > 0 || l.reserved > 0) {
        size_t per_block = ((smem + 127) / 128) * 128 + (size_t)l.reserved;
        int by_smem = (int)((size_t)l.smem / per_block);
        if (by_smem < n) n = by_smem;
    }
    return n < 0 ? 0 : n;
}

static int func_device(const struct cu_func *f)
{
    (void)f;
    return cu_current_device();
}

TW_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks, CUfunction func,
                                                                        int blockSize, size_t dynamicSMemSize,
                                                                        unsigned int flags)
{
    cu_enter();
    if (!numBlocks || flags > 1)
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_func tmp;
    func = cu_func_get(func, &tmp);
    if (!func)
        return CUDA_ERROR_INVALID_HANDLE;
    *numBlocks = blocks_per_sm(func, func_device(func), blockSize, dynamicSMemSize);
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
                                                               size_t dynamicSMemSize)
{
    return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(numBlocks, func, blockSize, dynamicSMemSize, 0);
}

TW_EXPORT CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(int *minGridSize, int *blockSize, CUfunction func,
                                                             CUoccupancyB2DSize b2d, size_t dynamicSMemSize,
                                                             int blockSizeLimit, unsigned int flags)
{
    cu_enter();
    if (!minGridSize || !blockSize || flags > 1)
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_func tmp;
    func = cu_func_get(func, &tmp);
    if (!func)
        return CUDA_ERROR_INVALID_HANDLE;
    int dev = func_device(func);
    struct sm_limits l;
    sm_limits(dev, &l);
    int limit = func->max_threads;
    if (blockSizeLimit > 0 && blockSizeLimit < limit)
        limit = blockSizeLimit;
    int best_block = 0, best_occ = -1, best_n = 0;
    for (int b = (limit / l.warp) * l.warp; b > 0; b -= l.warp) {
        size_t dyn = b2d ? b2d(b) : dynamicSMemSize;
        int n = blocks_per_sm(func, dev, b, dyn);
        int occ = n * b;
        if (occ > best_occ) {
            best_occ = occ;
            best_block = b;
            best_n = n;
        }
        if (occ == l.threads)
            break;
    }
    *blockSize = best_block;
    *minGridSize = best_n * l.sms;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
                                                    CUoccupancyB2DSize b2d, size_t dynamicSMemSize,
                                                    int blockSizeLimit)
{
    return cuOccupancyMaxPotentialBlockSizeWithFlags(minGridSize, blockSize, func, b2d, dynamicSMemSize,
                                                     blockSizeLimit, 0);
}

TW_EXPORT CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t *dynamicSmemSize, CUfunction func, int numBlocks,
                                                           int blockSize)
{
    cu_enter();
    if (!dynamicSmemSize || numBlocks <= 0 || blockSize <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_func tmp;
    func = cu_func_get(func, &tmp);
    if (!func)
        return CUDA_ERROR_INVALID_HANDLE;
    struct sm_limits l;
    sm_limits(func_device(func), &l);
    long per_block = (long)l.smem / numBlocks - l.reserved - func->shared_static;
    per_block = (per_block / 128) * 128;
    if (per_block > func->max_dyn_shared)
        per_block = func->max_dyn_shared;
    *dynamicSmemSize = per_block > 0 ? (size_t)per_block : 0;
    return CUDA_SUCCESS;
}

/* Cluster dimensions from the launch attributes, else the kernel's compile-time ones; 0 when none. */
static int cluster_of(const CUlaunchConfig *c, const struct cu_func *f, unsigned dim[3])
{
    dim[0] = dim[1] = dim[2] = 0;
    for (unsigned i = 0; c->attrs && i < c->numAttrs; i++)
        if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
            dim[0] = c->attrs[i].value.clusterDim.x;
            dim[1] = c->attrs[i].value.clusterDim.y;
            dim[2] = c->attrs[i].value.clusterDim.z;
        }
    if (!dim[0] && f->req_cluster[0]) {
        dim[0] = (unsigned)f->req_cluster[0];
        dim[1] = (unsigned)(f->req_cluster[1] ? f->req_cluster[1] : 1);
        dim[2] = (unsigned)(f->req_cluster[2] ? f->req_cluster[2] : 1);
    }
    return dim[0] != 0;
}

static CUresult check_cluster(const struct cu_func *f, const unsigned dim[3], const unsigned grid[3])
{
    if (!dim[0] || !dim[1] || !dim[2])
        return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    unsigned size = dim[0] * dim[1] * dim[2];
    if (size > (f->non_portable_cluster ? 16u : 8u))
        return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    if (grid[0] % dim[0] || grid[1] % dim[1] || grid[2] % dim[2])
        return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    return CUDA_SUCCESS;
}

/* Hopper: clusters are scheduled inside a GPC (8 GPCs of about 16-18 SMs on H100/H200). */
TW_EXPORT CUresult cuOccupancyMaxActiveClusters(int *numClusters, CUfunction func, const CUlaunchConfig *config)
{
    cu_enter();
    if (!numClusters || !config)
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_func tmp;
    func = cu_func_get(func, &tmp);
    if (!func)
        return CUDA_ERROR_INVALID_HANDLE;
    unsigned dim[3];
    if (!cluster_of(config, func, dim))
        return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    unsigned grid[3] = {config->gridDimX, config->gridDimY, config->gridDimZ};
    unsigned size = dim[0] * dim[1] * dim[2];
    if (!size || size > (func->non_portable_cluster ? 16u : 8u))
        return CUDA_ERROR_INVALID_CLUSTER_SIZE;
    (void)grid;
    int dev = func_device(func);
    int block = (int)(config->blockDimX * config->blockDimY * config->blockDimZ);
    int per_sm = blocks_per_sm(func, dev, block, config->sharedMemBytes);
    struct sm_limits l;
    sm_limits(dev, &l);
    int gpcs = 8, total = 0;
    for (int g = 0; g < gpcs; g++) {
        int sms = l.sms / gpcs + (g < l.sms % gpcs);
        total += (sms * per_sm) / (int)size;
    }
    *numClusters = total;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuOccupancyMaxPotentialClusterSize(int *clusterSize, CUfunction func, const CUlaunchConfig *config)
{
    cu_enter();
    if (!clusterSize || !config)
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_func tmp;
    func = cu_func_get(func, &tmp);
    if (!func)
        return CUDA_ERROR_INVALID_HANDLE;
    int block = (int)(config->blockDimX * config->blockDimY * config->blockDimZ);
    *clusterSize = blocks_per_sm(func, func_device(func), block, config->sharedMemBytes) > 0
                       ? (func->non_portable_cluster ? 16 : 8) : 0;
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- launches */
static CUresult launch(const void *fh, const unsigned grid[3], const unsigned block[3], unsigned shmem,
                       CUstream h, int ptsz, void **params, void **extra, int cooperative)
{
    cu_enter();
    struct cu_func tmp;
    const struct cu_func *f = cu_func_get(fh, &tmp);
    if (__builtin_expect(!f, 0))
        return CUDA_ERROR_INVALID_HANDLE;
    if (params && extra)
        return CUDA_ERROR_INVALID_VALUE;
    if (!grid[0] || !grid[1] || !grid[2] || !block[0] || !block[1] || !block[2])
        return CUDA_ERROR_INVALID_VALUE;
    if (grid[0] > 0x7fffffffu || grid[1] > 65535u || grid[2] > 65535u)
        return CUDA_ERROR_INVALID_VALUE;
    if (block[0] > 1024u || block[1] > 1024u || block[2] > 64u)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t threads = (uint64_t)block[0] * block[1] * block[2];
    if (threads > 1024u)
        return CUDA_ERROR_INVALID_VALUE;
    if (threads > (uint64_t)f->max_threads)
        return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;   /* too many registers for this block size */
    if (shmem > (unsigned)f->max_dyn_shared)
        return CUDA_ERROR_INVALID_VALUE;
    tw_stream *s = cu_stream(h, ptsz);
    if (__builtin_expect(!s, 0))
        return CUDA_ERROR_INVALID_HANDLE;
    if (cooperative) {
        int dev = tw_stream_device(s);
        int per_sm = blocks_per_sm(f, dev, (int)threads, shmem);
        int sms = 132, v;
        if (tw_device_attr(dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &v) == TW_OK)
            sms = v;
        if ((uint64_t)grid[0] * grid[1] * grid[2] > (uint64_t)per_sm * (uint64_t)sms)
            return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    }
    tw_op op;
    memset(&op, 0, sizeof op);
    op.kind = TW_OP_KERNEL;
    op.kernel = f->kernel;
    op.label = f->name;
    op.grid[0] = grid[0]; op.grid[1] = grid[1]; op.grid[2] = grid[2];
    op.block[0] = block[0]; op.block[1] = block[1]; op.block[2] = block[2];
    op.shmem = shmem;
    tw_kernel_row_shape(&op, params, f->param_size, f->n_params);   /* NULL params: the MoE annotation only */
    return cu_err(tw_enqueue(s, &op));
}

#define LAUNCH_ARGS                                                                                           \
    CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx, unsigned int by,       \
        unsigned int bz, unsigned int shmem, CUstream h
TW_EXPORT CUresult cuLaunchKernel(LAUNCH_ARGS, void **params, void **extra)
{
    const unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
    return launch(f, g, b, shmem, h, 0, params, extra, 0);
}
TW_EXPORT CUresult cuLaunchKernel_ptsz(LAUNCH_ARGS, void **params, void **extra)
{
    const unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
    return launch(f, g, b, shmem, h, 1, params, extra, 0);
}
TW_EXPORT CUresult cuLaunchCooperativeKernel(LAUNCH_ARGS, void **params)
{
    const unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
    return launch(f, g, b, shmem, h, 0, params, NULL, 1);
}
TW_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(LAUNCH_ARGS, void **params)
{
    const unsigned g[3] = {gx, gy, gz}, b[3] = {bx, by, bz};
    return launch(f, g, b, shmem, h, 1, params, NULL, 1);
}

static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra, int ptsz)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    if (c->numAttrs && !c->attrs)
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_func tmp;
    const void *fh = f;
    f = cu_func_get(fh, &tmp);
    if (__builtin_expect(!f, 0))
        return CUDA_ERROR_INVALID_HANDLE;
    const unsigned g[3] = {c->gridDimX, c->gridDimY, c->gridDimZ};
    const unsigned b[3] = {c->blockDimX, c->blockDimY, c->blockDimZ};
    int coop = 0;
    CUevent done = NULL;
    for (unsigned i = 0; i < c->numAttrs; i++) {
        const CUlaunchAttribute *a = &c->attrs[i];
        switch (a->id) {
        case CU_LAUNCH_ATTRIBUTE_COOPERATIVE: coop = a->value.cooperative != 0; break;
        case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT: done = a->value.launchCompletionEvent.event; break;
        case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT: done = a->value.programmaticEvent.event; break;
        default: break;   /* priorities, policies, PDL: no effect on the virtual timeline */
        }
    }
    unsigned dim[3];
    if (cluster_of(c, f, dim)) {
        CUresult r = check_cluster(f, dim, g);
        if (r != CUDA_SUCCESS)
            return r;
    }
    if (done && !tw_event_valid(done))
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = launch(fh, g, b, c->sharedMemBytes, c->hStream, ptsz, params, extra, coop);
    if (r == CUDA_SUCCESS && done)
        r = cu_err(tw_event_record(done, cu_stream(c->hStream, ptsz)));
    return r;
}
TW_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra)
{
    return launch_ex(config, f, kernelParams, extra, 0);
}
TW_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                                         void **extra)
{
    return launch_ex(config, f, kernelParams, extra, 1);
}

static CUresult host_func(CUstream h, CUhostFn fn, void *data, int ptsz)
{
    cu_enter();
    if (!fn)
        return CUDA_ERROR_INVALID_VALUE;
    tw_stream *s = cu_stream(h, ptsz);
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    return cu_err(cu_enqueue_host(s, fn, data, "cuLaunchHostFunc", 0));
}
TW_EXPORT CUresult cuLaunchHostFunc(CUstream h, CUhostFn fn, void *userData) { return host_func(h, fn, userData, 0); }
TW_EXPORT CUresult cuLaunchHostFunc_ptsz(CUstream h, CUhostFn fn, void *userData)
{
    return host_func(h, fn, userData, 1);
}
