/* Memory management: device / pinned / managed allocations, memory pools and stream-ordered allocation,
 * memcpy / memset (1D, 2D, peer, symbols), pointer attributes, IPC memory handles. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cudart_internal.h"

#define MAX_DEV 64

/* ------------------------------------------------------------------ copies */

static const char *const copy_label[4] = {"Memcpy HtoH", "Memcpy HtoD", "Memcpy DtoH", "Memcpy DtoD"};

static inline int is_device_side(const tw_alloc *a)
{
    return a->kind == TW_MEM_DEVICE || a->kind == TW_MEM_MANAGED;
}

/* Direction of a copy and whether its host side is page-locked. Returns 0 or a cudaError_t. */
static int resolve_copy(void *dst, const void *src, int kind, tw_copy_dir *dir, int *pinned)
{
    tw_alloc da, sa;
    int dfound = tw_mem_lookup(dst, &da);
    int sfound = tw_mem_lookup(src, &sa);
    switch (kind) {
    case cudaMemcpyHostToHost: *dir = TW_COPY_H2H; break;
    case cudaMemcpyHostToDevice: *dir = TW_COPY_H2D; break;
    case cudaMemcpyDeviceToHost: *dir = TW_COPY_D2H; break;
    case cudaMemcpyDeviceToDevice: *dir = TW_COPY_D2D; break;
    case cudaMemcpyDefault: {
        int ddev = dfound && is_device_side(&da);
        int sdev = sfound && is_device_side(&sa);
        *dir = sdev ? (ddev ? TW_COPY_D2D : TW_COPY_D2H) : (ddev ? TW_COPY_H2D : TW_COPY_H2H);
        break;
    }
    default:
        return cudaErrorInvalidMemcpyDirection;
    }
    switch (*dir) {
    case TW_COPY_H2D: *pinned = sfound; break;
    case TW_COPY_D2H: *pinned = dfound; break;
    case TW_COPY_H2H: *pinned = sfound && dfound; break;
    default: *pinned = 1; break;
    }
    return 0;
}

static tw_err enqueue_copy(tw_stream *s, void *dst, const void *src, size_t n, tw_copy_dir dir, int pinned)
{
    tw_op op = {
        .kind = TW_OP_MEMCPY,
        .label = copy_label[dir & 3],
        .dir = dir,
        .bytes = n,
        .dst = dst,
        .src = src,
        .pinned = pinned,
    };
    return tw_enqueue(s, &op);
}

static tw_err enqueue_set(tw_stream *s, void *dst, int value, size_t n)
{
    tw_op op = {
        .kind = TW_OP_MEMSET,
        .label = "Memset",
        .dir = TW_COPY_D2D,
        .bytes = n,
        .dst = dst,
        .value = value,
        .pinned = 1,
    };
    return tw_enqueue(s, &op);
}

static int capturing(tw_stream *s)
{
    return tw_capture_status_of(s, NULL, NULL) != TW_CAPTURE_NONE;
}

/* cudaMemcpy: synchronous except device-to-device */
static cudaError_t memcpy_sync(void *dst, const void *src, size_t n, int kind, int pt)
{
    if (n == 0) return cudaSuccess;
    if (!dst || !src) return cr(cudaErrorInvalidValue);
    tw_copy_dir dir;
    int pinned;
    int e = resolve_copy(dst, src, kind, &dir, &pinned);
    if (e) return cr(e);
    tw_stream *s = tw_stream_get(NULL, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    TW_DEBUG("cudaMemcpy(%p, %p, %zu, dir %d)", dst, src, n, (int)dir);
    if (dir == TW_COPY_D2D) return cr_tw(enqueue_copy(s, dst, src, n, dir, pinned));
    return cr_tw(tw_copy_sync(s, dst, src, n, dir));
}

/* cudaMemcpyAsync: pageable device-to-host and host-to-host copies return only when done (as CUDA does) */
static cudaError_t memcpy_async(void *dst, const void *src, size_t n, int kind, void *stream, int pt)
{
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    if (n == 0) return cudaSuccess;
    if (!dst || !src) return cr(cudaErrorInvalidValue);
    tw_copy_dir dir;
    int pinned;
    int e = resolve_copy(dst, src, kind, &dir, &pinned);
    if (e) return cr(e);
    if (((dir == TW_COPY_D2H && !pinned) || dir == TW_COPY_H2H) && !capturing(s))
        return cr_tw(tw_copy_sync(s, dst, src, n, dir));
    return cr_tw(enqueue_copy(s, dst, src, n, dir, pinned));
}

TW_EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, int kind)
{
    return memcpy_sync(dst, src, count, kind, 0);
}

TW_EXPORT cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, int kind)
{
    return memcpy_sync(dst, src, count, kind, 1);
}

TW_EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, int kind, cudaStream_t stream)
{
    return memcpy_async(dst, src, count, kind, stream, 0);
}

TW_EXPORT cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, int kind, cudaStream_t stream)
{
    return memcpy_async(dst, src, count, kind, stream, 1);
}

static cudaError_t memcpy_peer(void *dst, int dstDevice, const void *src, int srcDevice, size_t n, void *stream,
                               int async)
{
    tw_init();
    if (!tw_valid_device(dstDevice) || !tw_valid_device(srcDevice)) return cr(cudaErrorInvalidDevice);
    tw_stream *s = tw_stream_get(stream, 0);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    if (n == 0) return cudaSuccess;
    if (!dst || !src) return cr(cudaErrorInvalidValue);
    (void)async; /* device-to-device copies never block the host */
    return cr_tw(enqueue_copy(s, dst, src, n, TW_COPY_D2D, 1));
}

TW_EXPORT cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count)
{
    return memcpy_peer(dst, dstDevice, src, srcDevice, count, NULL, 0);
}

TW_EXPORT cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice, size_t count,
                                          cudaStream_t stream)
{
    return memcpy_peer(dst, dstDevice, src, srcDevice, count, stream, 1);
}

/* 2D copies: timed as width*height bytes. Where the pitches leave gaps, the op carries no pointers (timing
 * only: the core skips a copy whose source and destination are equal) and the rows are moved here. */
static void copy_rows(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height)
{
    for (size_t i = 0; i < height; i++)
        tw_mem_copy_now((char *)dst + i * dpitch, (const char *)src + i * spitch, width);
}

static cudaError_t memcpy2d(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height,
                            int kind, void *stream, int pt, int async)
{
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    if (width == 0 || height == 0) return cudaSuccess;
    if (!dst || !src) return cr(cudaErrorInvalidValue);
    if (dpitch < width || spitch < width) return cr(cudaErrorInvalidPitchValue);
    if (height == 1 || (dpitch == width && spitch == width))
        return async ? memcpy_async(dst, src, width * height, kind, stream, pt)
                     : memcpy_sync(dst, src, width * height, kind, pt);
    tw_copy_dir dir;
    int pinned;
    int e = resolve_copy(dst, src, kind, &dir, &pinned);
    if (e) return cr(e);
    int blocking = !async ? dir != TW_COPY_D2D : (((dir == TW_COPY_D2H && !pinned) || dir == TW_COPY_H2H) && !capturing(s));
    if (blocking) {
        tw_err te = tw_stream_synchronize(s);
        if (te != TW_OK) return cr_tw(te);
    }
    tw_err te = enqueue_copy(s, NULL, NULL, width * height, dir, pinned);
    if (te != TW_OK) return cr_tw(te);
    if (blocking) {
        te = tw_stream_synchronize(s);
        if (te != TW_OK) return cr_tw(te);
    }
    copy_rows(dst, dpitch, src, spitch, width, height);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                   size_t height, int kind)
{
    return memcpy2d(dst, dpitch, src, spitch, width, height, kind, NULL, 0, 0);
}

TW_EXPORT cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                        size_t height, int kind)
{
    return memcpy2d(dst, dpitch, src, spitch, width, height, kind, NULL, 1, 0);
}

TW_EXPORT cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                        size_t height, int kind, cudaStream_t stream)
{
    return memcpy2d(dst, dpitch, src, spitch, width, height, kind, stream, 0, 1);
}

TW_EXPORT cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                                             size_t height, int kind, cudaStream_t stream)
{
    return memcpy2d(dst, dpitch, src, spitch, width, height, kind, stream, 1, 1);
}

/* ------------------------------------------------------------------ memset */

static cudaError_t memset_1d(void *p, int value, size_t n, void *stream, int pt)
{
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    if (n == 0) return cudaSuccess;
    if (!p) return cr(cudaErrorInvalidValue);
    return cr_tw(enqueue_set(s, p, value, n));
}

static cudaError_t memset_2d(void *p, size_t pitch, int value, size_t width, size_t height, void *stream, int pt)
{
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    if (width == 0 || height == 0) return cudaSuccess;
    if (!p) return cr(cudaErrorInvalidValue);
    if (height > 1 && pitch < width) return cr(cudaErrorInvalidPitchValue);
    if (height == 1 || pitch == width) return cr_tw(enqueue_set(s, p, value, width * height));
    /* timed as width*height bytes from p (inside the allocation: width*height <= pitch*(height-1)+width,
     * only row padding is written besides rows); the rows themselves are then set here */
    tw_err te = enqueue_set(s, p, value, width * height);
    if (te != TW_OK) return cr_tw(te);
    for (size_t i = 0; i < height; i++) tw_mem_set_now((char *)p + i * pitch, value, width);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
    return memset_1d(devPtr, value, count, NULL, 0);
}

TW_EXPORT cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
    return memset_1d(devPtr, value, count, NULL, 1);
}

TW_EXPORT cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    return memset_1d(devPtr, value, count, stream, 0);
}

TW_EXPORT cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    return memset_1d(devPtr, value, count, stream, 1);
}

TW_EXPORT cudaError_t cudaMemset2D(void *devPtr, size_t pitch, int value, size_t width, size_t height)
{
    return memset_2d(devPtr, pitch, value, width, height, NULL, 0);
}

TW_EXPORT cudaError_t cudaMemset2D_ptds(void *devPtr, size_t pitch, int value, size_t width, size_t height)
{
    return memset_2d(devPtr, pitch, value, width, height, NULL, 1);
}

TW_EXPORT cudaError_t cudaMemset2DAsync(void *devPtr, size_t pitch, int value, size_t width, size_t height,
                                        cudaStream_t stream)
{
    return memset_2d(devPtr, pitch, value, width, height, stream, 0);
}

TW_EXPORT cudaError_t cudaMemset2DAsync_ptsz(void *devPtr, size_t pitch, int value, size_t width, size_t height,
                                             cudaStream_t stream)
{
    return memset_2d(devPtr, pitch, value, width, height, stream, 1);
}

/* ------------------------------------------------------------------ symbols (__cudaRegisterVar) */

typedef struct reg_var {
    const void *host_var;
    const char *name;
    size_t size;
    int constant;
    void *managed;                       /* managed variable: one host-accessible address */
    _Atomic(void *) dev_ptr[MAX_DEV];    /* per-device storage, allocated on first use */
} reg_var;

static tw_ptrmap vars = TW_PTRMAP_INIT;
static pthread_mutex_t var_mu = PTHREAD_MUTEX_INITIALIZER;

void tw_cudart_register_var(const void *host_var, const char *name, size_t size, int constant, void *managed_ptr)
{
    if (!host_var) return;
    reg_var *v = calloc(1, sizeof(*v));
    if (!v) return;
    v->host_var = host_var;
    v->name = name;
    v->size = size;
    v->constant = constant;
    v->managed = managed_ptr;
    tw_pm_put(&vars, host_var, v);
}

/* Device address of a registered variable on dev, allocating it (backed, initialised from the host shadow)
 * on first use, as lazy module loading does. */
static int symbol_address(const void *symbol, int dev, void **out, size_t *size)
{
    reg_var *v = tw_pm_get(&vars, symbol);
    if (!v) return cudaErrorInvalidSymbol;
    if (size) *size = v->size;
    if (v->managed) {
        *out = v->managed;
        return 0;
    }
    if (dev < 0 || dev >= MAX_DEV) return cudaErrorInvalidDevice;
    void *p = atomic_load_explicit(&v->dev_ptr[dev], memory_order_acquire);
    if (!p) {
        pthread_mutex_lock(&var_mu);
        p = atomic_load_explicit(&v->dev_ptr[dev], memory_order_relaxed);
        if (!p) {
            tw_err e = tw_mem_alloc(dev, v->size ? v->size : 1, &p);
            if (e != TW_OK) {
                pthread_mutex_unlock(&var_mu);
                return (int)e;
            }
            if (v->size) tw_mem_copy_now(p, v->host_var, v->size);
            atomic_store_explicit(&v->dev_ptr[dev], p, memory_order_release);
        }
        pthread_mutex_unlock(&var_mu);
    }
    *out = p;
    return 0;
}

TW_EXPORT cudaError_t cudaGetSymbolAddress(void **devPtr, const void *symbol)
{
    if (!devPtr) return cr(cudaErrorInvalidValue);
    tw_init();
    return cr(symbol_address(symbol, tw_get_device(), devPtr, NULL));
}

TW_EXPORT cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol)
{
    if (!size) return cr(cudaErrorInvalidValue);
    reg_var *v = tw_pm_get(&vars, symbol);
    if (!v) return cr(cudaErrorInvalidSymbol);
    *size = v->size;
    return cudaSuccess;
}

static int symbol_range(const void *symbol, size_t count, size_t offset, char **out)
{
    tw_init();
    void *p;
    size_t size;
    int e = symbol_address(symbol, tw_get_device(), &p, &size);
    if (e) return e;
    if (offset > size || count > size - offset) return cudaErrorInvalidValue;
    *out = (char *)p + offset;
    return 0;
}

static cudaError_t to_symbol(const void *symbol, const void *src, size_t count, size_t offset, int kind,
                             void *stream, int pt, int async)
{
    if (kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
        return cr(cudaErrorInvalidMemcpyDirection);
    char *dst;
    int e = symbol_range(symbol, count, offset, &dst);
    if (e) return cr(e);
    return async ? memcpy_async(dst, src, count, kind, stream, pt) : memcpy_sync(dst, src, count, kind, pt);
}

static cudaError_t from_symbol(void *dst, const void *symbol, size_t count, size_t offset, int kind,
                               void *stream, int pt, int async)
{
    if (kind != cudaMemcpyDeviceToHost && kind != cudaMemcpyDeviceToDevice && kind != cudaMemcpyDefault)
        return cr(cudaErrorInvalidMemcpyDirection);
    char *src;
    int e = symbol_range(symbol, count, offset, &src);
    if (e) return cr(e);
    return async ? memcpy_async(dst, src, count, kind, stream, pt) : memcpy_sync(dst, src, count, kind, pt);
}

TW_EXPORT cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset, int kind)
{
    return to_symbol(symbol, src, count, offset, kind, NULL, 0, 0);
}

TW_EXPORT cudaError_t cudaMemcpyToSymbol_ptds(const void *symbol, const void *src, size_t count, size_t offset,
                                              int kind)
{
    return to_symbol(symbol, src, count, offset, kind, NULL, 1, 0);
}

TW_EXPORT cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t count, size_t offset,
                                              int kind, cudaStream_t stream)
{
    return to_symbol(symbol, src, count, offset, kind, stream, 0, 1);
}

TW_EXPORT cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void *symbol, const void *src, size_t count, size_t offset,
                                                   int kind, cudaStream_t stream)
{
    return to_symbol(symbol, src, count, offset, kind, stream, 1, 1);
}

TW_EXPORT cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset, int kind)
{
    return from_symbol(dst, symbol, count, offset, kind, NULL, 0, 0);
}

TW_EXPORT cudaError_t cudaMemcpyFromSymbol_ptds(void *dst, const void *symbol, size_t count, size_t offset, int kind)
{
    return from_symbol(dst, symbol, count, offset, kind, NULL, 1, 0);
}

TW_EXPORT cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t count, size_t offset,
                                                int kind, cudaStream_t stream)
{
    return from_symbol(dst, symbol, count, offset, kind, stream, 0, 1);
}

TW_EXPORT cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void *dst, const void *symbol, size_t count, size_t offset,
                                                     int kind, cudaStream_t stream)
{
    return from_symbol(dst, symbol, count, offset, kind, stream, 1, 1);
}

/* ------------------------------------------------------------------ memory pools */

#define POOL_MAGIC 0x706f6f6cu

struct cudart_mempool {
    uint32_t magic;
    int dev;
    int is_default;
    int reuse[4];                    /* cudaMemPoolReuse* attributes 1..3 */
    uint64_t release_threshold;
    _Atomic(uint64_t) used, used_high, reserved_high;
    uint64_t access_mask;            /* devices other than dev with read/write access */
};

static tw_ptrmap pool_set = TW_PTRMAP_INIT;     /* live pools */
static tw_ptrmap pool_allocs = TW_PTRMAP_INIT;  /* pointer -> pool it came from */
static struct cudart_mempool *default_pools[MAX_DEV];
static struct cudart_mempool *current_pools[MAX_DEV];
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;

static struct cudart_mempool *pool_new(int dev, int is_default)
{
    struct cudart_mempool *p = calloc(1, sizeof(*p));
    if (!p) return NULL;
    p->magic = POOL_MAGIC;
    p->dev = dev;
    p->is_default = is_default;
    p->reuse[1] = p->reuse[2] = p->reuse[3] = 1;
    tw_pm_put(&pool_set, p, p);
    return p;
}

static struct cudart_mempool *default_pool(int dev)
{
    if (dev < 0 || dev >= MAX_DEV) return NULL;
    pthread_mutex_lock(&pool_mu);
    if (!default_pools[dev]) default_pools[dev] = pool_new(dev, 1);
    struct cudart_mempool *p = default_pools[dev];
    pthread_mutex_unlock(&pool_mu);
    return p;
}

static struct cudart_mempool *current_pool(int dev)
{
    if (dev < 0 || dev >= MAX_DEV) return NULL;
    pthread_mutex_lock(&pool_mu);
    struct cudart_mempool *p = current_pools[dev];
    pthread_mutex_unlock(&pool_mu);
    return p ? p : default_pool(dev);
}

static int pool_valid(const struct cudart_mempool *p)
{
    return p && tw_pm_get(&pool_set, p) == p && p->magic == POOL_MAGIC;
}

static void pool_account(struct cudart_mempool *p, int64_t delta)
{
    uint64_t now = atomic_fetch_add(&p->used, (uint64_t)delta) + (uint64_t)delta;
    uint64_t hi = atomic_load(&p->used_high);
    while (now > hi && !atomic_compare_exchange_weak(&p->used_high, &hi, now)) {}
    hi = atomic_load(&p->reserved_high);
    while (now > hi && !atomic_compare_exchange_weak(&p->reserved_high, &hi, now)) {}
}

static cudaError_t pool_alloc(struct cudart_mempool *p, size_t size, void **out)
{
    if (size == 0) {
        *out = NULL;
        return cudaSuccess;
    }
    void *ptr = NULL;
    tw_err e = tw_mem_alloc(p->dev, size, &ptr);
    if (e != TW_OK) return cr_tw(e);
    pool_account(p, (int64_t)size);
    tw_pm_put(&pool_allocs, ptr, p);
    *out = ptr;
    return cudaSuccess;
}

/* Frees device memory, keeping pool statistics. */
static tw_err free_device(void *ptr)
{
    struct cudart_mempool *p = tw_pm_get(&pool_allocs, ptr);
    if (p) {
        tw_alloc a;
        if (tw_mem_lookup(ptr, &a)) pool_account(p, -(int64_t)a.size);
        tw_pm_put(&pool_allocs, ptr, NULL);
    }
    return tw_mem_free(ptr);
}

static cudaError_t malloc_async(void **ptr, size_t size, void *stream, int pt)
{
    if (!ptr) return cr(cudaErrorInvalidValue);
    tw_init();
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    struct cudart_mempool *p = current_pool(tw_stream_device(s));
    if (!p) return cr(cudaErrorInvalidDevice);
    return pool_alloc(p, size, ptr);
}

TW_EXPORT cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t stream)
{
    return malloc_async(devPtr, size, stream, 0);
}

TW_EXPORT cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t stream)
{
    return malloc_async(devPtr, size, stream, 1);
}

static cudaError_t malloc_from_pool(void **ptr, size_t size, cudaMemPool_t pool, void *stream, int pt)
{
    if (!ptr) return cr(cudaErrorInvalidValue);
    tw_init();
    if (!pool_valid(pool)) return cr(cudaErrorInvalidValue);
    if (!tw_stream_get(stream, pt)) return cr(cudaErrorInvalidResourceHandle);
    return pool_alloc(pool, size, ptr);
}

TW_EXPORT cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
    return malloc_from_pool(ptr, size, memPool, stream, 0);
}

TW_EXPORT cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
                                                   cudaStream_t stream)
{
    return malloc_from_pool(ptr, size, memPool, stream, 1);
}

static cudaError_t free_async(void *ptr, void *stream, int pt)
{
    if (!tw_stream_get(stream, pt)) return cr(cudaErrorInvalidResourceHandle);
    if (!ptr) return cudaSuccess;
    return cr_tw(free_device(ptr));
}

TW_EXPORT cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t stream)
{
    return free_async(devPtr, stream, 0);
}

TW_EXPORT cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t stream)
{
    return free_async(devPtr, stream, 1);
}

TW_EXPORT cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
    if (!memPool) return cr(cudaErrorInvalidValue);
    tw_init();
    if (!tw_valid_device(device)) return cr(cudaErrorInvalidDevice);
    struct cudart_mempool *p = default_pool(device);
    if (!p) return cr(cudaErrorInvalidDevice);
    *memPool = p;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *memPool, int device)
{
    if (!memPool) return cr(cudaErrorInvalidValue);
    tw_init();
    if (!tw_valid_device(device)) return cr(cudaErrorInvalidDevice);
    struct cudart_mempool *p = current_pool(device);
    if (!p) return cr(cudaErrorInvalidDevice);
    *memPool = p;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool)
{
    tw_init();
    if (!tw_valid_device(device) || device >= MAX_DEV) return cr(cudaErrorInvalidDevice);
    if (!pool_valid(memPool) || memPool->dev != device) return cr(cudaErrorInvalidValue);
    pthread_mutex_lock(&pool_mu);
    current_pools[device] = memPool;
    pthread_mutex_unlock(&pool_mu);
    return cudaSuccess;
}

static int location_device(const struct cudaMemLocation *loc, int type)
{
    if (!loc || type != cudaMemAllocationTypePinned) return -cudaErrorInvalidValue;
    if (loc->type != cudaMemLocationTypeDevice) return -cudaErrorNotSupported;
    if (!tw_valid_device(loc->id)) return -cudaErrorInvalidDevice;
    return loc->id;
}

TW_EXPORT cudaError_t cudaMemGetDefaultMemPool(cudaMemPool_t *memPool, struct cudaMemLocation *location, int type)
{
    if (!memPool) return cr(cudaErrorInvalidValue);
    tw_init();
    int dev = location_device(location, type);
    if (dev < 0) return cr(-dev);
    return cudaDeviceGetDefaultMemPool(memPool, dev);
}

TW_EXPORT cudaError_t cudaMemGetMemPool(cudaMemPool_t *memPool, struct cudaMemLocation *location, int type)
{
    if (!memPool) return cr(cudaErrorInvalidValue);
    tw_init();
    int dev = location_device(location, type);
    if (dev < 0) return cr(-dev);
    return cudaDeviceGetMemPool(memPool, dev);
}

TW_EXPORT cudaError_t cudaMemSetMemPool(struct cudaMemLocation *location, int type, cudaMemPool_t memPool)
{
    tw_init();
    int dev = location_device(location, type);
    if (dev < 0) return cr(-dev);
    return cudaDeviceSetMemPool(dev, memPool);
}

TW_EXPORT cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps)
{
    if (!memPool || !poolProps) return cr(cudaErrorInvalidValue);
    tw_init();
    int dev = location_device(&poolProps->location, poolProps->allocType);
    if (dev < 0) return cr(-dev);
    struct cudart_mempool *p = pool_new(dev, 0);
    if (!p) return cr(cudaErrorMemoryAllocation);
    *memPool = p;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool)
{
    if (!pool_valid(memPool) || memPool->is_default) return cr(cudaErrorInvalidValue);
    pthread_mutex_lock(&pool_mu);
    for (int d = 0; d < MAX_DEV; d++)
        if (current_pools[d] == memPool) current_pools[d] = NULL;
    pthread_mutex_unlock(&pool_mu);
    memPool->magic = 0;
    tw_pm_put(&pool_set, memPool, NULL);
    /* the struct is left allocated: allocations may still name it */
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
    (void)minBytesToKeep;
    if (!pool_valid(memPool)) return cr(cudaErrorInvalidValue);
    return cudaSuccess; /* nothing is cached beyond what is allocated */
}

TW_EXPORT cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, int attr, void *value)
{
    if (!pool_valid(memPool) || !value) return cr(cudaErrorInvalidValue);
    switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies:
        memPool->reuse[attr] = *(int *)value != 0;
        return cudaSuccess;
    case cudaMemPoolAttrReleaseThreshold:
        memPool->release_threshold = *(uint64_t *)value;
        return cudaSuccess;
    case cudaMemPoolAttrReservedMemHigh:
        if (*(uint64_t *)value != 0) return cr(cudaErrorInvalidValue);
        atomic_store(&memPool->reserved_high, atomic_load(&memPool->used));
        return cudaSuccess;
    case cudaMemPoolAttrUsedMemHigh:
        if (*(uint64_t *)value != 0) return cr(cudaErrorInvalidValue);
        atomic_store(&memPool->used_high, atomic_load(&memPool->used));
        return cudaSuccess;
    default:
        return cr(cudaErrorInvalidValue);
    }
}

TW_EXPORT cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, int attr, void *value)
{
    if (!pool_valid(memPool) || !value) return cr(cudaErrorInvalidValue);
    switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
    case cudaMemPoolReuseAllowOpportunistic:
    case cudaMemPoolReuseAllowInternalDependencies:
        *(int *)value = memPool->reuse[attr];
        return cudaSuccess;
    case cudaMemPoolAttrReleaseThreshold:
        *(uint64_t *)value = memPool->release_threshold;
        return cudaSuccess;
    case cudaMemPoolAttrReservedMemCurrent:
    case cudaMemPoolAttrUsedMemCurrent:
        *(uint64_t *)value = atomic_load(&memPool->used);
        return cudaSuccess;
    case cudaMemPoolAttrReservedMemHigh:
        *(uint64_t *)value = atomic_load(&memPool->reserved_high);
        return cudaSuccess;
    case cudaMemPoolAttrUsedMemHigh:
        *(uint64_t *)value = atomic_load(&memPool->used_high);
        return cudaSuccess;
    default:
        return cr(cudaErrorInvalidValue);
    }
}

TW_EXPORT cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool, const struct cudaMemAccessDesc *descList,
                                           size_t count)
{
    if (!pool_valid(memPool) || (count && !descList)) return cr(cudaErrorInvalidValue);
    for (size_t i = 0; i < count; i++) {
        const struct cudaMemAccessDesc *d = &descList[i];
        if (d->location.type != cudaMemLocationTypeDevice) return cr(cudaErrorInvalidValue);
        if (!tw_valid_device(d->location.id) || d->location.id >= MAX_DEV) return cr(cudaErrorInvalidDevice);
        if (d->flags != cudaMemAccessFlagsProtNone && d->flags != cudaMemAccessFlagsProtRead &&
            d->flags != cudaMemAccessFlagsProtReadWrite)
            return cr(cudaErrorInvalidValue);
        if (d->location.id == memPool->dev) {
            if (d->flags != cudaMemAccessFlagsProtReadWrite) return cr(cudaErrorInvalidValue);
            continue;
        }
    }
    pthread_mutex_lock(&pool_mu);
    for (size_t i = 0; i < count; i++) {
        int id = descList[i].location.id;
        if (id == memPool->dev) continue;
        if (descList[i].flags == cudaMemAccessFlagsProtNone) memPool->access_mask &= ~(1ull << id);
        else memPool->access_mask |= 1ull << id;
    }
    pthread_mutex_unlock(&pool_mu);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaMemPoolGetAccess(int *flags, cudaMemPool_t memPool, struct cudaMemLocation *location)
{
    if (!flags || !location || !pool_valid(memPool)) return cr(cudaErrorInvalidValue);
    if (location->type != cudaMemLocationTypeDevice) return cr(cudaErrorInvalidValue);
    if (!tw_valid_device(location->id) || location->id >= MAX_DEV) return cr(cudaErrorInvalidDevice);
    if (location->id == memPool->dev) *flags = cudaMemAccessFlagsProtReadWrite;
    else *flags = ((memPool->access_mask >> location->id) & 1) ? cudaMemAccessFlagsProtReadWrite
                                                               : cudaMemAccessFlagsProtNone;
    return cudaSuccess;
}

/* ------------------------------------------------------------------ allocation */


TW_EXPORT cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    if (!devPtr) return cr(cudaErrorInvalidValue);
    tw_init();
    if (size == 0) {
        *devPtr = NULL;
        return cudaSuccess;
    }
    void *p = NULL;
    tw_err e = tw_mem_alloc(tw_get_device(), size, &p);
    TW_DEBUG("cudaMalloc(%zu) -> %p (%d)", size, p, (int)e);
    if (e != TW_OK) return cr_tw(e);
    *devPtr = p;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    if (!devPtr || !pitch) return cr(cudaErrorInvalidValue);
    size_t pt = (width + 511) & ~(size_t)511;
    if (width == 0 || height == 0) {
        *devPtr = NULL;
        *pitch = pt;
        return cudaSuccess;
    }
    cudaError_t e = cudaMalloc(devPtr, pt * height);
    if (e == cudaSuccess) *pitch = pt;
    return e;
}

TW_EXPORT cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    if (!devPtr) return cr(cudaErrorInvalidValue);
    if (size == 0) return cr(cudaErrorInvalidValue);
    if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost) return cr(cudaErrorInvalidValue);
    tw_init();
    void *p = NULL;
    tw_err e;
    e = tw_mem_alloc_managed(tw_get_device(), size, &p);
    if (e != TW_OK) return cr_tw(e);
    *devPtr = p;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaFree(void *devPtr)
{
    tw_init();
    if (!devPtr) return cudaSuccess;
    tw_alloc a;
    if (!tw_mem_lookup(devPtr, &a) || a.kind == TW_MEM_HOST_PINNED) return cr(cudaErrorInvalidValue);
    tw_device_synchronize(a.device);  /* cudaFree waits for the device's work; cudaFreeAsync does not */
    TW_DEBUG("cudaFree(%p)", devPtr);
    return cr_tw(free_device(devPtr));
}

TW_EXPORT cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    if (!pHost) return cr(cudaErrorInvalidValue);
    if (flags & ~(unsigned)(cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined))
        return cr(cudaErrorInvalidValue);
    tw_init();
    if (size == 0) {
        *pHost = NULL;
        return cudaSuccess;
    }
    void *p = NULL;
    tw_err e = tw_host_alloc(size, &p);
    if (e != TW_OK) return cr_tw(e);
    *pHost = p;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    return cudaHostAlloc(ptr, size, 0);
}

TW_EXPORT cudaError_t cudaFreeHost(void *ptr)
{
    tw_init();
    if (!ptr) return cudaSuccess;
    tw_alloc a;
    if (!tw_mem_lookup(ptr, &a) || a.kind != TW_MEM_HOST_PINNED)
        return cr(cudaErrorInvalidValue);
    tw_device_synchronize(-1);
    return cr_tw(tw_host_free(ptr));
}

TW_EXPORT cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    if (!ptr || size == 0) return cr(cudaErrorInvalidValue);
    if (flags & ~(unsigned)(cudaHostRegisterPortable | cudaHostRegisterMapped | cudaHostRegisterIoMemory |
                            cudaHostRegisterReadOnly))
        return cr(cudaErrorInvalidValue);
    tw_init();
    return cr_tw(tw_host_register(ptr, size));
}

TW_EXPORT cudaError_t cudaHostUnregister(void *ptr)
{
    if (!ptr) return cr(cudaErrorInvalidValue);
    tw_init();
    return cr_tw(tw_host_unregister(ptr));
}

TW_EXPORT cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags)
{
    if (!pDevice || flags != 0) return cr(cudaErrorInvalidValue);
    tw_init();
    tw_alloc a;
    if (!pHost || !tw_mem_lookup(pHost, &a) || (a.kind != TW_MEM_HOST_PINNED && a.kind != TW_MEM_MANAGED))
        return cr(cudaErrorInvalidValue);
    *pDevice = pHost; /* unified addressing: the same address on the device */
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaHostGetFlags(unsigned int *pFlags, void *pHost)
{
    if (!pFlags) return cr(cudaErrorInvalidValue);
    tw_init();
    tw_alloc a;
    if (!pHost || !tw_mem_lookup(pHost, &a) || a.kind != TW_MEM_HOST_PINNED) return cr(cudaErrorInvalidValue);
    *pFlags = cudaHostAllocMapped;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaMemGetInfo(size_t *free, size_t *total)
{
    if (!free || !total) return cr(cudaErrorInvalidValue);
    tw_init();
    tw_mem_info(tw_get_device(), free, total);
    return cudaSuccess;
}

static cudaError_t prefetch(const void *devPtr, size_t count, void *stream, int pt)
{
    if (!tw_stream_get(stream, pt)) return cr(cudaErrorInvalidResourceHandle);
    if (!devPtr && count) return cr(cudaErrorInvalidValue);
    return cudaSuccess; /* no migration is modelled */
}

TW_EXPORT cudaError_t cudaMemPrefetchAsync(const void *devPtr, size_t count, struct cudaMemLocation location,
                                           unsigned int flags, cudaStream_t stream)
{
    (void)location; (void)flags;
    return prefetch(devPtr, count, stream, 0);
}

TW_EXPORT cudaError_t cudaMemPrefetchAsync_ptsz(const void *devPtr, size_t count, struct cudaMemLocation location,
                                                unsigned int flags, cudaStream_t stream)
{
    (void)location; (void)flags;
    return prefetch(devPtr, count, stream, 1);
}

TW_EXPORT cudaError_t cudaMemAdvise(const void *devPtr, size_t count, int advice, struct cudaMemLocation location)
{
    (void)location;
    if ((!devPtr && count) || advice < 1 || advice > 6) return cr(cudaErrorInvalidValue);
    return cudaSuccess;
}

/* ------------------------------------------------------------------ pointer attributes */

TW_EXPORT cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr)
{
    if (!attributes) return cr(cudaErrorInvalidValue);
    tw_init();
    memset(attributes, 0, sizeof(*attributes));
    tw_alloc a;
    if (ptr && tw_mem_lookup(ptr, &a)) {
        switch (a.kind) {
        case TW_MEM_DEVICE:
            attributes->type = cudaMemoryTypeDevice;
            attributes->device = a.device;
            attributes->devicePointer = (void *)ptr;
            attributes->hostPointer = NULL;
            break;
        case TW_MEM_HOST_PINNED:
            attributes->type = cudaMemoryTypeHost;
            attributes->device = a.device >= 0 ? a.device : tw_get_device();
            attributes->devicePointer = (void *)ptr;
            attributes->hostPointer = (void *)ptr;
            break;
        case TW_MEM_MANAGED:
            attributes->type = cudaMemoryTypeManaged;
            attributes->device = a.device >= 0 ? a.device : tw_get_device();
            attributes->devicePointer = (void *)ptr;
            attributes->hostPointer = (void *)ptr;
            break;
        }
    } else {
        attributes->type = cudaMemoryTypeUnregistered;
        attributes->device = -2;
        attributes->devicePointer = NULL;
        attributes->hostPointer = (void *)ptr;
    }
    return cudaSuccess;
}

/* ------------------------------------------------------------------ IPC memory handles */

#define IPC_MEM_MAGIC 0x4d435049u /* "IPCM" */

typedef struct {
    uint32_t magic;
    int32_t pid;
    uint64_t base;
    uint64_t size;
    int32_t device;
    uint32_t pad;
    char unused[CUDART_IPC_HANDLE_SIZE - 32];
} ipc_mem_payload;
_Static_assert(sizeof(ipc_mem_payload) == CUDART_IPC_HANDLE_SIZE, "IPC handle payload size");

/* opened address -> (1: same process, the exporter's allocation) or (2: a local stand-in allocation) */
static tw_ptrmap ipc_opened = TW_PTRMAP_INIT;

TW_EXPORT cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr)
{
    if (!handle || !devPtr) return cr(cudaErrorInvalidValue);
    tw_init();
    tw_alloc a;
    if (!tw_mem_lookup(devPtr, &a) || a.kind != TW_MEM_DEVICE) return cr(cudaErrorInvalidValue);
    ipc_mem_payload p;
    memset(&p, 0, sizeof(p));
    p.magic = IPC_MEM_MAGIC;
    p.pid = (int32_t)getpid();
    p.base = a.base;
    p.size = a.size;
    p.device = a.device;
    memcpy(handle, &p, sizeof(p));
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle, unsigned int flags)
{
    if (!devPtr || (flags & ~(unsigned)cudaIpcMemLazyEnablePeerAccess)) return cr(cudaErrorInvalidValue);
    tw_init();
    ipc_mem_payload p;
    memcpy(&p, &handle, sizeof(p));
    if (p.magic != IPC_MEM_MAGIC || !p.base || !p.size) return cr(cudaErrorInvalidValue);
    if (p.pid == (int32_t)getpid()) {
        tw_alloc a;
        if (!tw_mem_lookup((void *)(uintptr_t)p.base, &a) || a.base != p.base) return cr(cudaErrorInvalidValue);
        tw_pm_put(&ipc_opened, (void *)(uintptr_t)p.base, (void *)1);
        *devPtr = (void *)(uintptr_t)p.base;
        return cudaSuccess;
    }
    /* another process's allocation: a local allocation of the same size stands in for the mapping */
    int dev = tw_valid_device(p.device) ? p.device : tw_get_device();
    void *local = NULL;
    tw_err e = tw_mem_alloc(dev, (size_t)p.size, &local);
    if (e != TW_OK) return cr_tw(e);
    tw_pm_put(&ipc_opened, local, (void *)2);
    *devPtr = local;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaIpcCloseMemHandle(void *devPtr)
{
    if (!devPtr) return cr(cudaErrorInvalidValue);
    uintptr_t how = (uintptr_t)tw_pm_get(&ipc_opened, devPtr);
    if (!how) return cr(cudaErrorInvalidValue);
    tw_pm_put(&ipc_opened, devPtr, NULL);
    if (how == 2) return cr_tw(tw_mem_free(devPtr));
    return cudaSuccess;
}
