/* Memory: allocation, host memory, copies, memsets, pointer attributes, memory pools, IPC handles.
 *
 * Allocations are the core's (capacity enforced, small ones host-backed); this file adds the driver's semantics:
 * which calls block the host, which stream a synchronous call orders on (the legacy stream, or the per-thread
 * stream for the _ptds/_ptsz variants), and the exact error codes.
 *
 * Documented choices:
 *  - cuMemsetD16/D32 with a pattern whose bytes differ cannot be expressed by the core's byte memset: the op is
 *    timed with no data movement and the pattern is written at once into backed memory (not while capturing).
 *  - cuMemFreeAsync frees when the stream reaches it (a host function); while the stream is capturing, the memory
 *    is left allocated (graph memory nodes are not modelled).
 *  - cuIpcOpenMemHandle of a handle exported by another process maps an address range of the right size that holds
 *    no data (reserved, not counted against this process's capacity); the real driver refuses a handle of the
 *    calling process itself (CUDA_ERROR_INVALID_CONTEXT), and so does this one. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cu_internal.h"

/* ---------------------------------------------------------------- IPC mappings of other processes' memory */
struct ipc_map { uintptr_t base; size_t size; int device; int refs; struct ipc_map *next; };
static pthread_mutex_t ipc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ipc_map *ipc_maps;

int cu_mem_lookup(uintptr_t p, tw_alloc *out)
{
    if (tw_mem_lookup((const void *)p, out))
        return 1;
    int found = 0;
    pthread_mutex_lock(&ipc_lock);
    for (struct ipc_map *m = ipc_maps; m; m = m->next)
        if (p >= m->base && p < m->base + m->size) {
            memset(out, 0, sizeof *out);
            out->base = m->base;
            out->size = m->size;
            out->device = m->device;
            out->kind = TW_MEM_DEVICE;
            found = 1;
            break;
        }
    pthread_mutex_unlock(&ipc_lock);
    return found;
}

/* ---------------------------------------------------------------- allocation */
TW_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    cu_enter();
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    void *p = NULL;
    tw_err e = tw_mem_alloc(cu_current_device(), bytesize, &p);
    if (e != TW_OK)
        return cu_err(e);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    TW_DEBUG("cuda: cuMemAlloc(%zu) -> %p", bytesize, p);
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    cu_enter();
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    tw_alloc a;
    if (!tw_mem_lookup((void *)(uintptr_t)dptr, &a) || a.base != dptr || a.kind == TW_MEM_HOST_PINNED || a.vmm)
        return CUDA_ERROR_INVALID_VALUE;
    tw_device_synchronize(a.device);  /* cuMemFree waits for the device's work; cuMemFreeAsync does not */
    return cu_err(tw_mem_free((void *)(uintptr_t)dptr));
}

TW_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    cu_enter();
    /* CU_MEM_ATTACH_GLOBAL (1) or CU_MEM_ATTACH_HOST (2) */
    if (!dptr || bytesize == 0 || (flags != 1 && flags != 2))
        return CUDA_ERROR_INVALID_VALUE;
    void *p = NULL;
    tw_err e = tw_mem_alloc_managed(cu_current_device(), bytesize, &p);
    if (e != TW_OK)
        return cu_err(e);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                                      unsigned int ElementSizeBytes)
{
    cu_enter();
    if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t pitch = (WidthInBytes + 511) & ~(size_t)511;   /* CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT * 16 */
    CUresult r = cuMemAlloc_v2(dptr, pitch * Height);
    if (r == CUDA_SUCCESS)
        *pPitch = pitch;
    return r;
}

TW_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes)
{
    cu_enter();
    if (!free_bytes || !total_bytes)
        return CUDA_ERROR_INVALID_VALUE;
    tw_mem_info(cu_current_device(), free_bytes, total_bytes);
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuMemGetInfo(unsigned int *free_bytes, unsigned int *total_bytes)
{
    size_t f, t;
    CUresult r = cuMemGetInfo_v2(free_bytes ? &f : NULL, total_bytes ? &t : NULL);
    if (r == CUDA_SUCCESS) {
        *free_bytes = f > 0xffffffffu ? 0xffffffffu : (unsigned)f;
        *total_bytes = t > 0xffffffffu ? 0xffffffffu : (unsigned)t;
    }
    return r;
}

TW_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    cu_enter();
    tw_alloc a;
    if (!cu_mem_lookup((uintptr_t)dptr, &a) || a.kind == TW_MEM_HOST_PINNED)
        return CUDA_ERROR_NOT_FOUND;
    uintptr_t va;
    size_t sz;
    if (a.vmm && cu_vmm_mapping((uintptr_t)dptr, &va, &sz, NULL)) {
        a.base = va;
        a.size = sz;
    }
    if (pbase)
        *pbase = a.base;
    if (psize)
        *psize = a.size;
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- host memory */
TW_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    cu_enter();
    if (!pp || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return cu_err(tw_host_alloc(bytesize, pp));
}

TW_EXPORT CUresult cuMemAllocHost(void **pp, unsigned int bytesize) { return cuMemAllocHost_v2(pp, bytesize); }

TW_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    cu_enter();
    if (!pp || bytesize == 0 || (Flags & ~7u))
        return CUDA_ERROR_INVALID_VALUE;
    return cu_err(tw_host_alloc(bytesize, pp));
}

TW_EXPORT CUresult cuMemFreeHost(void *p)
{
    cu_enter();
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    return cu_err(tw_host_free(p));
}

static CUresult host_register(void *p, size_t bytesize, unsigned int Flags)
{
    cu_enter();
    if (!p || bytesize == 0 || (Flags & ~0xfu))
        return CUDA_ERROR_INVALID_VALUE;
    tw_alloc a;
    if (tw_mem_lookup(p, &a) || tw_mem_lookup((char *)p + bytesize - 1, &a))
        return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    return cu_err(tw_host_register(p, bytesize));
}
TW_EXPORT CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    return host_register(p, bytesize, Flags);
}
TW_EXPORT CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    return host_register(p, bytesize, Flags);
}

TW_EXPORT CUresult cuMemHostUnregister(void *p)
{
    cu_enter();
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    tw_alloc a;
    if (!tw_mem_lookup(p, &a) || a.kind != TW_MEM_HOST_PINNED || a.base != (uintptr_t)p)
        return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    return cu_err(tw_host_unregister(p));
}

/* Unified addressing: a pinned host pointer is its own device pointer. */
TW_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    cu_enter();
    if (!pdptr || !p || Flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    tw_alloc a;
    if (!tw_mem_lookup(p, &a) || a.kind != TW_MEM_HOST_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
    cu_enter();
    if (!pFlags || !p)
        return CUDA_ERROR_INVALID_VALUE;
    tw_alloc a;
    if (!tw_mem_lookup(p, &a) || a.kind != TW_MEM_HOST_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    *pFlags = CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE;   /* what unified addressing implies */
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- copies */
static int is_device(const void *p, int *pinned)
{
    tw_alloc a;
    if (!tw_mem_lookup(p, &a)) {
        *pinned = 0;
        return 0;
    }
    *pinned = a.kind == TW_MEM_HOST_PINNED;
    return a.kind != TW_MEM_HOST_PINNED;
}

static tw_copy_dir infer_dir(const void *dst, const void *src, int *pinned)
{
    int pd, ps;
    int dd = is_device(dst, &pd), sd = is_device(src, &ps);
    if (dd && sd) { *pinned = 1; return TW_COPY_D2D; }
    if (dd) { *pinned = ps; return TW_COPY_H2D; }
    if (sd) { *pinned = pd; return TW_COPY_D2H; }
    *pinned = pd && ps;
    return TW_COPY_H2H;
}

static const char *copy_label(tw_copy_dir d)
{
    switch (d) {
    case TW_COPY_H2D: return "memcpy HtoD";
    case TW_COPY_D2H: return "memcpy DtoH";
    case TW_COPY_D2D: return "memcpy DtoD";
    default: return "memcpy HtoH";
    }
}

static CUresult copy_async(void *dst, const void *src, size_t n, tw_copy_dir dir, int pinned, tw_stream *s,
                           const char *label)
{
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    if (n == 0)
        return CUDA_SUCCESS;
    if (!dst || !src)
        return CUDA_ERROR_INVALID_VALUE;
    tw_op op;
    memset(&op, 0, sizeof op);
    op.kind = TW_OP_MEMCPY;
    op.label = label ? label : copy_label(dir);
    op.dir = dir;
    op.bytes = n;
    op.dst = dst;
    op.src = src;
    op.pinned = pinned;
    return cu_err(tw_enqueue(s, &op));
}

/* Host-synchronous copies (the host is involved: pageable or pinned host memory on one side). Device-to-device
 * copies through the "synchronous" API do not block the host (CUDA's API synchronisation rules). */
static CUresult copy_sync(void *dst, const void *src, size_t n, tw_copy_dir dir, int ptds)
{
    cu_enter();
    tw_stream *s = cu_stream(NULL, ptds);
    if (!s)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (n == 0)
        return CUDA_SUCCESS;
    if (!dst || !src)
        return CUDA_ERROR_INVALID_VALUE;
    if (dir == TW_COPY_D2D)
        return copy_async(dst, src, n, dir, 1, s, NULL);
    return cu_err(tw_copy_sync(s, dst, src, n, dir));
}

#define DPTR(x) ((void *)(uintptr_t)(x))

TW_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) { return copy_sync(DPTR(dst), src, n, TW_COPY_H2D, 0); }
TW_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr dst, const void *src, size_t n) { return copy_sync(DPTR(dst), src, n, TW_COPY_H2D, 1); }
TW_EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) { return copy_sync(dst, DPTR(src), n, TW_COPY_D2H, 0); }
TW_EXPORT CUresult cuMemcpyDtoH_v2_ptds(void *dst, CUdeviceptr src, size_t n) { return copy_sync(dst, DPTR(src), n, TW_COPY_D2H, 1); }
TW_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) { return copy_sync(DPTR(dst), DPTR(src), n, TW_COPY_D2D, 0); }
TW_EXPORT CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n) { return copy_sync(DPTR(dst), DPTR(src), n, TW_COPY_D2D, 1); }

static CUresult memcpy_unified(CUdeviceptr dst, CUdeviceptr src, size_t n, int ptds)
{
    cu_enter();
    int pinned;
    tw_copy_dir d = infer_dir(DPTR(dst), DPTR(src), &pinned);
    if (d == TW_COPY_H2H && n && dst && src) {
        /* plain host memory on both sides: a host copy, ordered after the stream's work */
        tw_stream *s = cu_stream(NULL, ptds);
        if (!s)
            return CUDA_ERROR_INVALID_CONTEXT;
        return cu_err(tw_copy_sync(s, DPTR(dst), DPTR(src), n, d));
    }
    return copy_sync(DPTR(dst), DPTR(src), n, d, ptds);
}
TW_EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) { return memcpy_unified(dst, src, n, 0); }
TW_EXPORT CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n) { return memcpy_unified(dst, src, n, 1); }

static CUresult async_dir(void *dst, const void *src, size_t n, tw_copy_dir dir, CUstream h, int ptsz)
{
    cu_enter();
    int pd, ps;
    int pinned = 1;
    if (dir == TW_COPY_H2D) { is_device(src, &ps); pinned = ps; }
    else if (dir == TW_COPY_D2H) { is_device(dst, &pd); pinned = pd; }
    return copy_async(dst, src, n, dir, pinned, cu_stream(h, ptsz), NULL);
}
TW_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream h) { return async_dir(DPTR(dst), src, n, TW_COPY_H2D, h, 0); }
TW_EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void *src, size_t n, CUstream h) { return async_dir(DPTR(dst), src, n, TW_COPY_H2D, h, 1); }
TW_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream h) { return async_dir(dst, DPTR(src), n, TW_COPY_D2H, h, 0); }
TW_EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void *dst, CUdeviceptr src, size_t n, CUstream h) { return async_dir(dst, DPTR(src), n, TW_COPY_D2H, h, 1); }
TW_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h) { return async_dir(DPTR(dst), DPTR(src), n, TW_COPY_D2D, h, 0); }
TW_EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h) { return async_dir(DPTR(dst), DPTR(src), n, TW_COPY_D2D, h, 1); }

static CUresult memcpy_async_unified(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h, int ptsz)
{
    cu_enter();
    int pinned;
    tw_copy_dir d = infer_dir(DPTR(dst), DPTR(src), &pinned);
    return copy_async(DPTR(dst), DPTR(src), n, d, pinned, cu_stream(h, ptsz), NULL);
}
TW_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h) { return memcpy_async_unified(dst, src, n, h, 0); }
TW_EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream h) { return memcpy_async_unified(dst, src, n, h, 1); }

static CUresult peer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, tw_stream *s)
{
    cu_enter();
    if (!cu_ctx_valid(dctx) || !cu_ctx_valid(sctx))
        return CUDA_ERROR_INVALID_CONTEXT;
    return copy_async(DPTR(dst), DPTR(src), n, TW_COPY_D2D, 1, s, "memcpy PtoP");
}
TW_EXPORT CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n)
{
    return peer(dst, dctx, src, sctx, n, cu_stream(NULL, 0));
}
TW_EXPORT CUresult cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n)
{
    return peer(dst, dctx, src, sctx, n, cu_stream(NULL, 1));
}
TW_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n,
                                     CUstream h)
{
    return peer(dst, dctx, src, sctx, n, cu_stream(h, 0));
}
TW_EXPORT CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx,
                                          size_t n, CUstream h)
{
    return peer(dst, dctx, src, sctx, n, cu_stream(h, 1));
}

/* ---------------------------------------------------------------- memsets */
static CUresult memset_any(CUdeviceptr dst, uint32_t pattern, int elem, size_t count, tw_stream *s)
{
    cu_enter();
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    if (count == 0)
        return CUDA_SUCCESS;
    if (!dst || (dst & (uintptr_t)(elem - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    size_t bytes = count * (size_t)elem;
    uint8_t b0 = (uint8_t)pattern;
    int uniform = 1;
    for (int i = 1; i < elem; i++)
        if ((uint8_t)(pattern >> (8 * i)) != b0)
            uniform = 0;
    tw_op op;
    memset(&op, 0, sizeof op);
    op.kind = TW_OP_MEMSET;
    op.label = elem == 1 ? "memset D8" : elem == 2 ? "memset D16" : "memset D32";
    op.bytes = bytes;
    op.dst = uniform ? DPTR(dst) : NULL;
    op.value = b0;
    tw_err e = tw_enqueue(s, &op);
    if (e != TW_OK || uniform)
        return cu_err(e);
    /* a multi-byte pattern: written now into backed memory (documented above) */
    if (tw_capture_status_of(s, NULL, NULL) != TW_CAPTURE_NONE)
        return CUDA_SUCCESS;
    tw_alloc a;
    if (tw_mem_lookup(DPTR(dst), &a) && a.backed && dst + bytes <= a.base + a.size) {
        uint8_t *p = DPTR(dst);
        tw_mem_note_device_write();
        for (size_t i = 0; i < count; i++)
            memcpy(p + i * (size_t)elem, &pattern, (size_t)elem);
    }
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) { return memset_any(d, v, 1, n, cu_stream(NULL, 0)); }
TW_EXPORT CUresult cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n) { return memset_any(d, v, 1, n, cu_stream(NULL, 1)); }
TW_EXPORT CUresult cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n) { return memset_any(d, v, 2, n, cu_stream(NULL, 0)); }
TW_EXPORT CUresult cuMemsetD16_v2_ptds(CUdeviceptr d, unsigned short v, size_t n) { return memset_any(d, v, 2, n, cu_stream(NULL, 1)); }
TW_EXPORT CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned int v, size_t n) { return memset_any(d, v, 4, n, cu_stream(NULL, 0)); }
TW_EXPORT CUresult cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int v, size_t n) { return memset_any(d, v, 4, n, cu_stream(NULL, 1)); }
TW_EXPORT CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream h) { return memset_any(d, v, 1, n, cu_stream(h, 0)); }
TW_EXPORT CUresult cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream h) { return memset_any(d, v, 1, n, cu_stream(h, 1)); }
TW_EXPORT CUresult cuMemsetD16Async(CUdeviceptr d, unsigned short v, size_t n, CUstream h) { return memset_any(d, v, 2, n, cu_stream(h, 0)); }
TW_EXPORT CUresult cuMemsetD16Async_ptsz(CUdeviceptr d, unsigned short v, size_t n, CUstream h) { return memset_any(d, v, 2, n, cu_stream(h, 1)); }
TW_EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream h) { return memset_any(d, v, 4, n, cu_stream(h, 0)); }
TW_EXPORT CUresult cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int v, size_t n, CUstream h) { return memset_any(d, v, 4, n, cu_stream(h, 1)); }

/* ---------------------------------------------------------------- pointer attributes */
static size_t attr_size(CUpointer_attribute a)
{
    switch (a) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES: case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE: case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        return 8;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
        return 16;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: case CU_POINTER_ATTRIBUTE_MAPPED:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE: case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
        return 4;
    default:
        return 0;
    }
}

static CUresult pointer_attr(void *data, CUpointer_attribute attr, CUdeviceptr ptr)
{
    if (!data)
        return CUDA_ERROR_INVALID_VALUE;
    if (!attr_size(attr))
        return CUDA_ERROR_INVALID_VALUE;
    tw_alloc a;
    if (!cu_mem_lookup((uintptr_t)ptr, &a))
        return CUDA_ERROR_INVALID_VALUE;   /* not memory CUDA knows (Triton relies on this code) */
    int host = a.kind == TW_MEM_HOST_PINNED;
    int dev = host ? cu_current_device() : a.device;
    uintptr_t mbase = a.base;
    size_t msize = a.size;
    unsigned htypes = 0;
    if (a.vmm)
        cu_vmm_mapping((uintptr_t)ptr, &mbase, &msize, &htypes);
    uint64_t u64;
    uint32_t u32;
    void *pv;
    switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
        pv = cu_primary(dev);
        memcpy(data, &pv, sizeof pv);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
        u32 = host ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        break;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
        u64 = ptr;
        memcpy(data, &u64, 8);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
        if (!host && a.kind != TW_MEM_MANAGED)
            return CUDA_ERROR_INVALID_VALUE;
        pv = DPTR(ptr);
        memcpy(data, &pv, sizeof pv);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS:
        return CUDA_ERROR_NOT_SUPPORTED;
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS: u32 = 0; break;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
        u64 = a.base;
        memcpy(data, &u64, 8);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED: u32 = a.kind == TW_MEM_MANAGED; break;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: u32 = (uint32_t)dev; break;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE: u32 = !host && !a.vmm && a.kind == TW_MEM_DEVICE; break;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
        u64 = mbase;
        memcpy(data, &u64, 8);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
        u64 = msize;
        memcpy(data, &u64, 8);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
        u64 = mbase;
        memcpy(data, &u64, 8);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED: u32 = 1; break;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
        u64 = htypes;
        memcpy(data, &u64, 8);
        return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE: u32 = !host; break;
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS: u32 = CU_MEM_ACCESS_FLAGS_PROT_READWRITE; break;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
        pv = NULL;
        memcpy(data, &pv, sizeof pv);
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    memcpy(data, &u32, 4);
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    cu_enter();
    return pointer_attr(data, attribute, ptr);
}

/* Unlike the single query, an address CUDA does not know is not an error: every attribute gets its default. */
TW_EXPORT CUresult cuPointerGetAttributes(unsigned int numAttributes, CUpointer_attribute *attributes, void **data,
                                          CUdeviceptr ptr)
{
    cu_enter();
    if (numAttributes == 0 || !attributes || !data)
        return CUDA_ERROR_INVALID_VALUE;
    for (unsigned i = 0; i < numAttributes; i++) {
        size_t sz = attr_size(attributes[i]);
        if (!sz || !data[i])
            return CUDA_ERROR_INVALID_VALUE;
        if (pointer_attr(data[i], attributes[i], ptr) != CUDA_SUCCESS) {
            memset(data[i], 0, sz);
            if (attributes[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) {
                int32_t none = -2;     /* CU_DEVICE_INVALID */
                memcpy(data[i], &none, 4);
            }
        }
    }
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- memory pools (stream-ordered allocation) */
#define CU_POOL_MAGIC 0x4375506fu
struct cu_mempool {
    uint32_t magic;
    int device;
    int reuse[3];
    uint64_t release_threshold;
    uint64_t used, used_high, reserved_high;
    uint64_t peer_access;          /* bit d: device d may access */
};
static struct cu_mempool pools[CU_MAX_DEVICES];
static struct cu_mempool *current_pool[CU_MAX_DEVICES];
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

struct cu_mempool *cu_default_pool(int dev)
{
    if (!cu_dev_ok(dev) || dev >= CU_MAX_DEVICES)
        return NULL;
    struct cu_mempool *p = &pools[dev];
    pthread_mutex_lock(&pool_lock);
    if (p->magic != CU_POOL_MAGIC) {
        p->magic = CU_POOL_MAGIC;
        p->device = dev;
        p->reuse[0] = p->reuse[1] = p->reuse[2] = 1;
    }
    pthread_mutex_unlock(&pool_lock);
    return p;
}

struct cu_mempool *cu_current_pool(int dev)
{
    if (!cu_dev_ok(dev) || dev >= CU_MAX_DEVICES)
        return NULL;
    struct cu_mempool *p = __atomic_load_n(&current_pool[dev], __ATOMIC_ACQUIRE);
    return p ? p : cu_default_pool(dev);
}

int cu_pool_set_current(int dev, struct cu_mempool *p)
{
    if (!cu_dev_ok(dev) || dev >= CU_MAX_DEVICES)
        return 0;
    __atomic_store_n(&current_pool[dev], p, __ATOMIC_RELEASE);
    return 1;
}

int cu_pool_device(const struct cu_mempool *p)
{
    if (!p || p < pools || p >= pools + CU_MAX_DEVICES || p->magic != CU_POOL_MAGIC)
        return -1;
    return p->device;
}

static void pool_account(struct cu_mempool *p, int64_t delta)
{
    pthread_mutex_lock(&pool_lock);
    p->used = (uint64_t)((int64_t)p->used + delta);
    if (p->used > p->used_high)
        p->used_high = p->used;
    if (p->used > p->reserved_high)
        p->reserved_high = p->used;
    pthread_mutex_unlock(&pool_lock);
}

TW_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    cu_enter();
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    if (cu_pool_device(pool) < 0)
        return CUDA_ERROR_INVALID_HANDLE;
    uint64_t v;
    pthread_mutex_lock(&pool_lock);
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: {
        int i = pool->reuse[attr - 1];
        pthread_mutex_unlock(&pool_lock);
        memcpy(value, &i, sizeof i);
        return CUDA_SUCCESS;
    }
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: v = pool->release_threshold; break;
    /* freed memory goes straight back to the core: reserved == used */
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: v = pool->used; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: v = pool->reserved_high; break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: v = pool->used; break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: v = pool->used_high; break;
    default:
        pthread_mutex_unlock(&pool_lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&pool_lock);
    memcpy(value, &v, sizeof v);
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    cu_enter();
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    if (cu_pool_device(pool) < 0)
        return CUDA_ERROR_INVALID_HANDLE;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&pool_lock);
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
    case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: {
        int i;
        memcpy(&i, value, sizeof i);
        pool->reuse[attr - 1] = i != 0;
        break;
    }
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
        memcpy(&pool->release_threshold, value, 8);
        break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: {
        uint64_t v;
        memcpy(&v, value, 8);
        if (v != 0) { r = CUDA_ERROR_INVALID_VALUE; break; }   /* may only be reset */
        if (attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH) pool->used_high = pool->used;
        else pool->reserved_high = pool->used;
        break;
    }
    default:
        r = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&pool_lock);
    return r;
}

TW_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    (void)minBytesToKeep;
    cu_enter();
    return cu_pool_device(pool) < 0 ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}

TW_EXPORT CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
    cu_enter();
    if (!map && count)
        return CUDA_ERROR_INVALID_VALUE;
    if (cu_pool_device(pool) < 0)
        return CUDA_ERROR_INVALID_HANDLE;
    for (size_t i = 0; i < count; i++) {
        if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || !cu_dev_ok(map[i].location.id) ||
            (map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
             map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
            return CUDA_ERROR_INVALID_VALUE;
        if (map[i].location.id == pool->device && map[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_DEVICE;   /* the owning device always has full access */
    }
    pthread_mutex_lock(&pool_lock);
    for (size_t i = 0; i < count; i++) {
        uint64_t bit = 1ull << (map[i].location.id & 63);
        if (map[i].flags == CU_MEM_ACCESS_FLAGS_PROT_NONE) pool->peer_access &= ~bit;
        else pool->peer_access |= bit;
    }
    pthread_mutex_unlock(&pool_lock);
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool, CUmemLocation *location)
{
    cu_enter();
    if (!flags || !location || location->type != CU_MEM_LOCATION_TYPE_DEVICE || !cu_dev_ok(location->id))
        return CUDA_ERROR_INVALID_VALUE;
    if (cu_pool_device(memPool) < 0)
        return CUDA_ERROR_INVALID_HANDLE;
    if (location->id == memPool->device || (memPool->peer_access >> (location->id & 63) & 1))
        *flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    else
        *flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
    return CUDA_SUCCESS;
}

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, struct cu_mempool *pool, tw_stream *s)
{
    cu_enter();
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    int dev = tw_stream_device(s);
    if (!pool)
        pool = cu_current_pool(dev);
    else if (cu_pool_device(pool) < 0)
        return CUDA_ERROR_INVALID_HANDLE;
    void *p = NULL;
    tw_err e = tw_mem_alloc(pool->device, bytesize, &p);
    if (e != TW_OK)
        return cu_err(e);
    pool_account(pool, (int64_t)bytesize);
    *dptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream h)
{
    return alloc_async(dptr, bytesize, NULL, cu_stream(h, 0));
}
TW_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream h)
{
    return alloc_async(dptr, bytesize, NULL, cu_stream(h, 1));
}
TW_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream h)
{
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_async(dptr, bytesize, pool, cu_stream(h, 0));
}
TW_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream h)
{
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    return alloc_async(dptr, bytesize, pool, cu_stream(h, 1));
}

static void free_when_reached(void *p)
{
    tw_alloc a;
    if (tw_mem_lookup(p, &a) && a.device >= 0) {
        struct cu_mempool *pool = cu_current_pool(a.device);
        if (pool)
            pool_account(pool, -(int64_t)a.size);
    }
    tw_mem_free(p);
}

static CUresult free_async(CUdeviceptr dptr, tw_stream *s)
{
    cu_enter();
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    tw_alloc a;
    if (!dptr || !tw_mem_lookup(DPTR(dptr), &a) || a.base != dptr || a.kind == TW_MEM_HOST_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    if (tw_capture_status_of(s, NULL, NULL) != TW_CAPTURE_NONE)
        return CUDA_SUCCESS;   /* graph memory nodes are not modelled: the allocation stays */
    return cu_err(cu_enqueue_host(s, free_when_reached, DPTR(dptr), "cuMemFreeAsync", 1));
}
TW_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream h) { return free_async(dptr, cu_stream(h, 0)); }
TW_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream h) { return free_async(dptr, cu_stream(h, 1)); }

/* ---------------------------------------------------------------- IPC memory handles */
#define IPC_MAGIC 0x54574950u /* "TWIP" */
struct ipc_payload { uint32_t magic; int32_t pid; uint64_t base, size, offset; int32_t device; };

TW_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    cu_enter();
    if (!pHandle)
        return CUDA_ERROR_INVALID_VALUE;
    tw_alloc a;
    if (!tw_mem_lookup(DPTR(dptr), &a) || a.kind != TW_MEM_DEVICE || a.vmm)
        return CUDA_ERROR_INVALID_VALUE;
    struct ipc_payload pl = {IPC_MAGIC, (int32_t)getpid(), a.base, a.size, dptr - a.base, a.device};
    memset(pHandle, 0, sizeof *pHandle);
    memcpy(pHandle->reserved, &pl, sizeof pl);
    return CUDA_SUCCESS;
}

static CUresult ipc_open(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    cu_enter();
    if (!pdptr || (Flags & ~(unsigned)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS))
        return CUDA_ERROR_INVALID_VALUE;
    struct ipc_payload pl;
    memcpy(&pl, handle.reserved, sizeof pl);
    if (pl.magic != IPC_MAGIC || pl.size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (pl.pid == (int32_t)getpid()) {
        /* the real driver refuses handles of its own process */
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    uintptr_t va;
    tw_err e = tw_vmm_reserve((size_t)pl.size, 0, 0, &va);
    if (e != TW_OK)
        return cu_err(e);
    struct ipc_map *m = calloc(1, sizeof *m);
    if (!m) {
        tw_vmm_free(va, (size_t)pl.size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->base = va;
    m->size = (size_t)pl.size;
    m->device = cu_dev_ok(pl.device) ? pl.device : cu_current_device();
    m->refs = 1;
    pthread_mutex_lock(&ipc_lock);
    m->next = ipc_maps;
    ipc_maps = m;
    pthread_mutex_unlock(&ipc_lock);
    *pdptr = (CUdeviceptr)(va + pl.offset);
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    return ipc_open(pdptr, handle, Flags);
}
TW_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    return ipc_open(pdptr, handle, Flags);
}

TW_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    cu_enter();
    struct ipc_map *found = NULL;
    pthread_mutex_lock(&ipc_lock);
    for (struct ipc_map **pp = &ipc_maps; *pp; pp = &(*pp)->next) {
        struct ipc_map *m = *pp;
        if (dptr >= m->base && dptr < m->base + m->size) {
            *pp = m->next;
            found = m;
            break;
        }
    }
    pthread_mutex_unlock(&ipc_lock);
    if (!found)
        return CUDA_ERROR_INVALID_VALUE;
    tw_vmm_free(found->base, found->size);
    free(found);
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------- pre-3.2 entry points (32-bit sizes and pointers)
 * Only programs built against CUDA < 3.2 call these names (cuda.h and cuGetProcAddress give the _v2 ABI). They share
 * the _v2 code; an allocation whose address does not fit in 32 bits is reported as out of memory, as a 64-bit
 * driver does for these entry points. */
TW_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
    if (!dptr)
        return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr p;
    CUresult r = cuMemAlloc_v2(&p, bytesize);
    if (r != CUDA_SUCCESS)
        return r;
    if (p > 0xffffffffull) {
        cuMemFree_v2(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *dptr = (CUdeviceptr_v1)p;
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuMemFree(CUdeviceptr_v1 dptr) { return cuMemFree_v2(dptr); }
TW_EXPORT CUresult cuMemGetAddressRange(CUdeviceptr_v1 *pbase, unsigned int *psize, CUdeviceptr_v1 dptr)
{
    CUdeviceptr b;
    size_t s;
    CUresult r = cuMemGetAddressRange_v2(&b, &s, dptr);
    if (r == CUDA_SUCCESS) {
        if (pbase) *pbase = (CUdeviceptr_v1)b;
        if (psize) *psize = s > 0xffffffffu ? 0xffffffffu : (unsigned)s;
    }
    return r;
}
TW_EXPORT CUresult cuMemHostGetDevicePointer(CUdeviceptr_v1 *pdptr, void *p, unsigned int Flags)
{
    if (!pdptr)
        return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr d;
    CUresult r = cuMemHostGetDevicePointer_v2(&d, p, Flags);
    if (r == CUDA_SUCCESS) {
        if (d > 0xffffffffull)
            return CUDA_ERROR_INVALID_VALUE;
        *pdptr = (CUdeviceptr_v1)d;
    }
    return r;
}
TW_EXPORT CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch, unsigned int w, unsigned int h,
                                   unsigned int elem)
{
    if (!dptr || !pPitch)
        return CUDA_ERROR_INVALID_VALUE;
    CUdeviceptr p;
    size_t pitch;
    CUresult r = cuMemAllocPitch_v2(&p, &pitch, w, h, elem);
    if (r != CUDA_SUCCESS)
        return r;
    if (p > 0xffffffffull) {
        cuMemFree_v2(p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *dptr = (CUdeviceptr_v1)p;
    *pPitch = (unsigned)pitch;
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuMemcpyHtoD(CUdeviceptr_v1 dst, const void *src, unsigned int n) { return cuMemcpyHtoD_v2(dst, src, n); }
TW_EXPORT CUresult cuMemcpyDtoH(void *dst, CUdeviceptr_v1 src, unsigned int n) { return cuMemcpyDtoH_v2(dst, src, n); }
TW_EXPORT CUresult cuMemcpyDtoD(CUdeviceptr_v1 dst, CUdeviceptr_v1 src, unsigned int n) { return cuMemcpyDtoD_v2(dst, src, n); }
TW_EXPORT CUresult cuMemcpyHtoDAsync(CUdeviceptr_v1 dst, const void *src, unsigned int n, CUstream h) { return cuMemcpyHtoDAsync_v2(dst, src, n, h); }
TW_EXPORT CUresult cuMemcpyDtoHAsync(void *dst, CUdeviceptr_v1 src, unsigned int n, CUstream h) { return cuMemcpyDtoHAsync_v2(dst, src, n, h); }
TW_EXPORT CUresult cuMemcpyDtoDAsync(CUdeviceptr_v1 dst, CUdeviceptr_v1 src, unsigned int n, CUstream h) { return cuMemcpyDtoDAsync_v2(dst, src, n, h); }
TW_EXPORT CUresult cuMemsetD8(CUdeviceptr_v1 d, unsigned char v, unsigned int n) { return cuMemsetD8_v2(d, v, n); }
TW_EXPORT CUresult cuMemsetD16(CUdeviceptr_v1 d, unsigned short v, unsigned int n) { return cuMemsetD16_v2(d, v, n); }
TW_EXPORT CUresult cuMemsetD32(CUdeviceptr_v1 d, unsigned int v, unsigned int n) { return cuMemsetD32_v2(d, v, n); }
