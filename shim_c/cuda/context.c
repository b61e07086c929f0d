/* Contexts: one primary context per device, contexts created with cuCtxCreate, and the per-thread context stack.
 *
 * A context here holds only what the driver API can observe (flags, limits, cache preference, peer access); memory,
 * streams and events belong to the device in the core, shared by every context of that device and by the runtime.
 *
 * The runtime front end keeps no contexts. A thread that has not touched the context stack is treated as the real
 * runtime leaves it: the primary context of the runtime's current device (tw_get_device()) is current. Triton and
 * vLLM call cuCtxGetCurrent after torch initialised CUDA through the runtime and expect a context. While a primary
 * context is on top of the stack, a device change made through the runtime (cudaSetDevice) moves it to that
 * device's primary context, as the real runtime does; and making a context current here sets the runtime's device. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cu_internal.h"

static struct cu_ctx primaries[CU_MAX_DEVICES];
static pthread_once_t prim_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cu_ctx *created;        /* contexts from cuCtxCreate, for validation */
static uint64_t next_ctx_id = CU_MAX_DEVICES + 1;

static void default_limits(struct cu_ctx *c)
{
    c->limits[CU_LIMIT_STACK_SIZE] = 1024;
    c->limits[CU_LIMIT_PRINTF_FIFO_SIZE] = 1048576;
    c->limits[CU_LIMIT_MALLOC_HEAP_SIZE] = 8388608;
    c->limits[CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2;
    c->limits[CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048;
    c->limits[CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 64;
    c->limits[CU_LIMIT_PERSISTING_L2_CACHE_SIZE] = 0;
    c->limits[CU_LIMIT_CIG_ENABLED] = 0;
}

static void init_primaries(void)
{
    for (int d = 0; d < CU_MAX_DEVICES; d++) {
        struct cu_ctx *c = &primaries[d];
        c->magic = CU_CTX_MAGIC;
        c->device = d;
        c->primary = 1;
        c->id = (uint64_t)d + 1;
        default_limits(c);
    }
}

struct cu_ctx *cu_primary(int dev)
{
    if (!cu_dev_ok(dev) || dev >= CU_MAX_DEVICES)
        return NULL;
    pthread_once(&prim_once, init_primaries);
    return &primaries[dev];
}

int cu_ctx_valid(const struct cu_ctx *c)
{
    if (!c)
        return 0;
    if (c >= primaries && c < primaries + CU_MAX_DEVICES)
        return cu_dev_ok(c->device);
    int ok = 0;
    pthread_mutex_lock(&ctx_lock);
    for (struct cu_ctx *p = created; p; p = p->next)
        if (p == c) { ok = 1; break; }
    pthread_mutex_unlock(&ctx_lock);
    return ok;
}

/* ---------------------------------------------------------------- per-thread stack */
#define STACK_MAX 64
static __thread struct cu_ctx *stack[STACK_MAX];
static __thread int depth;
static __thread int touched;          /* the thread used the stack: no implicit primary context any more */

struct cu_ctx *cu_ctx_current(void)
{
    if (depth == 0)
        return touched ? NULL : cu_primary(tw_get_device());
    struct cu_ctx *c = stack[depth - 1];
    if (c && c->primary) {
        /* follow device changes made through the runtime */
        int dev = tw_get_device();
        if (dev != c->device && cu_dev_ok(dev))
            stack[depth - 1] = c = cu_primary(dev);
    }
    return c;
}

int cu_current_device(void)
{
    struct cu_ctx *c = cu_ctx_current();
    return c ? c->device : tw_get_device();
}

static void make_device_current(struct cu_ctx *c)
{
    if (c && c->device != tw_get_device())
        tw_set_device(c->device);
}

/* 1 when the primary context of dev is active: retained through the driver, or (as far as the driver can tell)
 * in use by the runtime: it is the runtime's current device or has memory allocated on it. */
static int primary_active(int dev)
{
    struct cu_ctx *c = cu_primary(dev);
    if (!c)
        return 0;
    return __atomic_load_n(&c->retain, __ATOMIC_RELAXED) > 0 || dev == tw_get_device() || tw_mem_used(dev) > 0;
}

/* ---------------------------------------------------------------- primary contexts */
TW_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    cu_enter();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_ctx *c = cu_primary(dev);
    if (!c)
        return CUDA_ERROR_INVALID_DEVICE;
    __atomic_add_fetch(&c->retain, 1, __ATOMIC_RELAXED);
    *pctx = c;
    TW_DEBUG("cuda: cuDevicePrimaryCtxRetain(%d) -> %p", dev, (void *)c);
    return CUDA_SUCCESS;
}

static CUresult primary_release(CUdevice dev)
{
    cu_enter();
    struct cu_ctx *c = cu_primary(dev);
    if (!c)
        return CUDA_ERROR_INVALID_DEVICE;
    int n = __atomic_load_n(&c->retain, __ATOMIC_RELAXED);
    do {
        if (n <= 0)
            return CUDA_ERROR_INVALID_CONTEXT;
    } while (!__atomic_compare_exchange_n(&c->retain, &n, n - 1, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) { return primary_release(dev); }
TW_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) { return primary_release(dev); }

/* Resetting destroys the real context's allocations; here memory belongs to the core and stays (documented gap):
 * the device is synchronised and the context's state goes back to its defaults. */
static CUresult primary_reset(CUdevice dev)
{
    cu_enter();
    struct cu_ctx *c = cu_primary(dev);
    if (!c)
        return CUDA_ERROR_INVALID_DEVICE;
    tw_device_synchronize(dev);
    pthread_mutex_lock(&ctx_lock);
    c->flags = 0;
    c->cache_config = 0;
    c->peers = 0;
    default_limits(c);
    __atomic_store_n(&c->retain, 0, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&ctx_lock);
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return primary_reset(dev); }
TW_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) { return primary_reset(dev); }

TW_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    cu_enter();
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_ctx *c = cu_primary(dev);
    if (!c)
        return CUDA_ERROR_INVALID_DEVICE;
    *flags = c->flags;
    *active = primary_active(dev);
    return CUDA_SUCCESS;
}

static CUresult primary_set_flags(CUdevice dev, unsigned int flags)
{
    cu_enter();
    struct cu_ctx *c = cu_primary(dev);
    if (!c)
        return CUDA_ERROR_INVALID_DEVICE;
    if (flags & ~(unsigned)CU_CTX_FLAGS_MASK)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned sched = flags & CU_CTX_SCHED_MASK;
    if (sched != 0 && sched != 1 && sched != 2 && sched != 4)
        return CUDA_ERROR_INVALID_VALUE;
    c->flags = flags;
    return CUDA_SUCCESS;
}
/* Since CUDA 11 (_v2) the flags may be changed while the context is active. */
TW_EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    if (cu_dev_ok(dev) && primary_active(dev))
        return CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE;
    return primary_set_flags(dev, flags);
}
TW_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    return primary_set_flags(dev, flags);
}

/* ---------------------------------------------------------------- created contexts */
static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    cu_enter();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (flags & ~(unsigned)CU_CTX_FLAGS_MASK)
        return CUDA_ERROR_INVALID_VALUE;
    if (depth >= STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct cu_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return CUDA_ERROR_OUT_OF_MEMORY;
    c->magic = CU_CTX_MAGIC;
    c->device = dev;
    c->flags = flags;
    default_limits(c);
    pthread_mutex_lock(&ctx_lock);
    c->id = next_ctx_id++;
    c->next = created;
    created = c;
    pthread_mutex_unlock(&ctx_lock);
    /* the new context is pushed onto the calling thread's stack */
    touched = 1;
    stack[depth++] = c;
    make_device_current(c);
    *pctx = c;
    TW_DEBUG("cuda: cuCtxCreate(dev %d, flags 0x%x) -> %p", dev, flags, (void *)c);
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev) { return ctx_create(pctx, flags, dev); }
TW_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return ctx_create(pctx, flags, dev);
}
/* Execution affinity (SM partitions) is not modelled: a request for one is refused as the real driver refuses an
 * unsupported affinity. */
TW_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                                  unsigned int flags, CUdevice dev)
{
    if (numParams < 0 || (numParams > 0 && !paramsArray))
        return CUDA_ERROR_INVALID_VALUE;
    if (numParams > 0)
        return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
    return ctx_create(pctx, flags, dev);
}
TW_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *params, unsigned int flags, CUdevice dev)
{
    if (params) {
        if (params->numExecAffinityParams < 0)
            return CUDA_ERROR_INVALID_VALUE;
        if (params->numExecAffinityParams > 0)
            return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
        if (params->cigParams)
            return CUDA_ERROR_NOT_SUPPORTED;
    }
    return ctx_create(pctx, flags, dev);
}

static CUresult ctx_destroy(CUcontext ctx)
{
    cu_enter();
    if (!ctx || ctx->primary || !cu_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    tw_device_synchronize(ctx->device);
    pthread_mutex_lock(&ctx_lock);
    for (struct cu_ctx **pp = &created; *pp; pp = &(*pp)->next)
        if (*pp == ctx) { *pp = ctx->next; break; }
    pthread_mutex_unlock(&ctx_lock);
    /* drop it from this thread's stack (other threads' stacks keep a stale handle, as with the real driver) */
    int w = 0;
    for (int i = 0; i < depth; i++)
        if (stack[i] != ctx)
            stack[w++] = stack[i];
    depth = w;
    ctx->magic = 0;
    free(ctx);
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuCtxDestroy(CUcontext ctx) { return ctx_destroy(ctx); }
TW_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx) { return ctx_destroy(ctx); }

/* ---------------------------------------------------------------- current context */
TW_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    cu_enter();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = cu_ctx_current();
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    cu_enter();
    if (ctx && !cu_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    touched = 1;
    if (!ctx) {                       /* NULL pops the top (no-op on an empty stack) */
        if (depth > 0)
            depth--;
        return CUDA_SUCCESS;
    }
    if (depth == 0)
        depth = 1;
    stack[depth - 1] = ctx;
    make_device_current(ctx);
    return CUDA_SUCCESS;
}

static CUresult ctx_push(CUcontext ctx)
{
    cu_enter();
    if (!ctx || !cu_ctx_valid(ctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!touched) {
        /* materialise the implicit primary context so that a pop gets back to it */
        struct cu_ctx *imp = cu_ctx_current();
        touched = 1;
        if (imp)
            stack[depth++] = imp;
    }
    if (depth >= STACK_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    stack[depth++] = ctx;
    make_device_current(ctx);
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx) { return ctx_push(ctx); }
TW_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) { return ctx_push(ctx); }

static CUresult ctx_pop(CUcontext *pctx)
{
    cu_enter();
    struct cu_ctx *top = cu_ctx_current();
    if (!top)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!touched)
        touched = 1;                  /* popping the implicit primary context leaves the stack empty */
    else
        depth--;
    if (pctx)
        *pctx = top;
    struct cu_ctx *now = depth > 0 ? stack[depth - 1] : NULL;
    make_device_current(now);
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuCtxPopCurrent(CUcontext *pctx) { return ctx_pop(pctx); }
TW_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx) { return ctx_pop(pctx); }

/* ctx NULL: the current context; CUDA_ERROR_INVALID_CONTEXT when there is none. */
static struct cu_ctx *resolve(CUcontext ctx, CUresult *r)
{
    struct cu_ctx *c = ctx ? ctx : cu_ctx_current();
    if (!c || (ctx && !cu_ctx_valid(ctx))) {
        *r = CUDA_ERROR_INVALID_CONTEXT;
        return NULL;
    }
    *r = CUDA_SUCCESS;
    return c;
}

TW_EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
    cu_enter();
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_ctx *c = cu_ctx_current();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    *device = c->device;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    cu_enter();
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r;
    struct cu_ctx *c = resolve(ctx, &r);
    if (!c)
        return r;
    *device = c->device;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuCtxSynchronize(void)
{
    cu_enter();
    struct cu_ctx *c = cu_ctx_current();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    return cu_err(tw_device_synchronize(c->device));
}

TW_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    cu_enter();
    CUresult r;
    struct cu_ctx *c = resolve(ctx, &r);
    if (!c)
        return r;
    return cu_err(tw_device_synchronize(c->device));
}

TW_EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    cu_enter();
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r;
    if (!resolve(ctx, &r))
        return r;
    *version = 3020;   /* what every context created through the _v2 API reports */
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuCtxGetFlags(unsigned int *flags)
{
    cu_enter();
    if (!flags)
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_ctx *c = cu_ctx_current();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    *flags = c->flags;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuCtxSetFlags(unsigned int flags)
{
    cu_enter();
    struct cu_ctx *c = cu_ctx_current();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (flags & ~(unsigned)CU_CTX_FLAGS_MASK)
        return CUDA_ERROR_INVALID_VALUE;
    c->flags = flags;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
    cu_enter();
    if (!pvalue)
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_ctx *c = cu_ctx_current();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    if ((unsigned)limit > CU_LIMIT_PERSISTING_L2_CACHE_SIZE && limit != CU_LIMIT_CIG_ENABLED)
        return CUDA_ERROR_UNSUPPORTED_LIMIT;
    *pvalue = c->limits[limit];
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    cu_enter();
    struct cu_ctx *c = cu_ctx_current();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    switch (limit) {
    case CU_LIMIT_STACK_SIZE:
    case CU_LIMIT_PRINTF_FIFO_SIZE:
    case CU_LIMIT_MALLOC_HEAP_SIZE:
    case CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH:
    case CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT:
        break;
    case CU_LIMIT_MAX_L2_FETCH_GRANULARITY:
        /* a hint: the driver rounds to 0, 32, 64 or 128 */
        value = value >= 128 ? 128 : value >= 64 ? 64 : value >= 32 ? 32 : 0;
        break;
    case CU_LIMIT_PERSISTING_L2_CACHE_SIZE: {
        int maxp = 0;
        tw_device_attr(c->device, CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, &maxp);
        if (value > (size_t)maxp)
            value = (size_t)maxp;
        break;
    }
    default:
        return CUDA_ERROR_UNSUPPORTED_LIMIT;
    }
    c->limits[limit] = value;
    return CUDA_SUCCESS;
}

/* H200 (and every sm_70+ part): priorities 0 (lowest) to -5 (highest). */
TW_EXPORT CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    cu_enter();
    if (leastPriority)
        *leastPriority = 0;
    if (greatestPriority)
        *greatestPriority = -5;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuCtxGetCacheConfig(CUfunc_cache *pconfig)
{
    cu_enter();
    if (!pconfig)
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_ctx *c = cu_ctx_current();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    *pconfig = (CUfunc_cache)c->cache_config;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuCtxSetCacheConfig(CUfunc_cache config)
{
    cu_enter();
    if ((unsigned)config > CU_FUNC_CACHE_PREFER_EQUAL)
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_ctx *c = cu_ctx_current();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    c->cache_config = config;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    cu_enter();
    if (!ctxId)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r;
    struct cu_ctx *c = resolve(ctx, &r);
    if (!c)
        return r;
    *ctxId = c->id;
    return CUDA_SUCCESS;
}

/* Peer access between contexts: bookkeeping only (every pair of virtual GPUs can reach each other). */
TW_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int flags)
{
    cu_enter();
    if (flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    struct cu_ctx *c = cu_ctx_current();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!peerContext || !cu_ctx_valid(peerContext))
        return CUDA_ERROR_INVALID_CONTEXT;
    if (peerContext->device == c->device)
        return CUDA_ERROR_INVALID_DEVICE;
    uint64_t bit = 1ull << (peerContext->device & 63);
    if (__atomic_fetch_or(&c->peers, bit, __ATOMIC_RELAXED) & bit)
        return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peerContext)
{
    cu_enter();
    struct cu_ctx *c = cu_ctx_current();
    if (!c)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!peerContext || !cu_ctx_valid(peerContext))
        return CUDA_ERROR_INVALID_CONTEXT;
    uint64_t bit = 1ull << (peerContext->device & 63);
    if (!(__atomic_fetch_and(&c->peers, ~bit, __ATOMIC_RELAXED) & bit))
        return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    return CUDA_SUCCESS;
}
