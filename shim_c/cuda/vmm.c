/* Virtual memory management: cuMemAddressReserve / cuMemCreate / cuMemMap and friends, as used by vLLM's cumem
 * (sleep mode) allocator and torch's expandable segments. The core owns address ranges, physical handles and
 * capacity (cuMemCreate past the card's memory fails with CUDA_ERROR_OUT_OF_MEMORY); this file keeps what the
 * driver API must answer: each handle's properties and reference count (cuMemRetainAllocationHandle / cuMemRelease),
 * and each mapping's access flags.
 *
 * Shareable handles: one process holds the whole virtual GPU state, so a POSIX file descriptor exported here is a
 * memfd carrying the handle's identity. Importing it in the same process gives the handle back (retained); importing
 * it in another process, or asking for a fabric handle, returns CUDA_ERROR_NOT_SUPPORTED. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cu_internal.h"

#define GRANULARITY (2u << 20)   /* H200: minimum and recommended granularity are both 2 MiB */

struct vmm_handle {
    uint64_t h;
    CUmemAllocationProp prop;
    size_t size;
    int refs;
    struct vmm_handle *next;
};
struct vmm_map {
    uintptr_t va;
    size_t size;
    uint64_t h;
    uint64_t access_rw, access_r;   /* bit d: device d has read-write / read access */
    struct vmm_map *next;
};
static pthread_mutex_t vmm_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vmm_handle *handles;
static struct vmm_map *maps;

static struct vmm_handle *find_handle(uint64_t h)
{
    for (struct vmm_handle *p = handles; p; p = p->next)
        if (p->h == h)
            return p;
    return NULL;
}

static struct vmm_map *find_map(uintptr_t a)
{
    for (struct vmm_map *m = maps; m; m = m->next)
        if (a >= m->va && a < m->va + m->size)
            return m;
    return NULL;
}

int cu_vmm_mapping(uintptr_t p, uintptr_t *va, size_t *size, unsigned *handle_types)
{
    int ok = 0;
    pthread_mutex_lock(&vmm_lock);
    struct vmm_map *m = find_map(p);
    if (m) {
        ok = 1;
        if (va) *va = m->va;
        if (size) *size = m->size;
        if (handle_types) {
            struct vmm_handle *h = find_handle(m->h);
            *handle_types = h ? (unsigned)h->prop.requestedHandleTypes : 0;
        }
    }
    pthread_mutex_unlock(&vmm_lock);
    return ok;
}

/* Device memory only (pinned, on a valid device): host-located VMM allocations are not modelled. */
static CUresult check_prop(const CUmemAllocationProp *prop)
{
    if (!prop)
        return CUDA_ERROR_INVALID_VALUE;
    if (prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return prop->type == CU_MEM_ALLOCATION_TYPE_MANAGED ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
    if (prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
        if (prop->location.type >= CU_MEM_LOCATION_TYPE_HOST && prop->location.type <= CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT)
            return CUDA_ERROR_NOT_SUPPORTED;
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (!cu_dev_ok(prop->location.id))
        return CUDA_ERROR_INVALID_DEVICE;
    if (prop->requestedHandleTypes & ~(unsigned)(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_WIN32 |
                                                 CU_MEM_HANDLE_TYPE_WIN32_KMT | CU_MEM_HANDLE_TYPE_FABRIC))
        return CUDA_ERROR_INVALID_VALUE;
    if (prop->requestedHandleTypes & (CU_MEM_HANDLE_TYPE_WIN32 | CU_MEM_HANDLE_TYPE_WIN32_KMT))
        return CUDA_ERROR_NOT_SUPPORTED;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                                 CUmemAllocationGranularity_flags option)
{
    cu_enter();
    if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM && option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_prop(prop);
    if (r != CUDA_SUCCESS)
        return r;
    *granularity = GRANULARITY;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                       unsigned long long flags)
{
    cu_enter();
    if (!ptr || size == 0 || flags != 0 || (alignment & (alignment - 1)))
        return CUDA_ERROR_INVALID_VALUE;
    uintptr_t out = 0;
    tw_err e = tw_vmm_reserve(size, alignment ? alignment : GRANULARITY, (uintptr_t)addr, &out);
    if (e != TW_OK)
        return cu_err(e);
    *ptr = out;
    TW_DEBUG("cuda: cuMemAddressReserve(%zu) -> 0x%lx", size, (unsigned long)out);
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    cu_enter();
    if (!ptr || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return cu_err(tw_vmm_free((uintptr_t)ptr, size));
}

TW_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                               unsigned long long flags)
{
    cu_enter();
    if (!handle || flags != 0 || size == 0 || size % GRANULARITY)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = check_prop(prop);
    if (r != CUDA_SUCCESS)
        return r;
    struct vmm_handle *vh = calloc(1, sizeof *vh);
    if (!vh)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t h = 0;
    tw_err e = tw_vmm_create(prop->location.id, size, &h);
    if (e != TW_OK) {
        free(vh);
        TW_DEBUG("cuda: cuMemCreate(%zu) -> %s", size, cu_result_name(cu_err(e)));
        return cu_err(e);
    }
    vh->h = h;
    vh->prop = *prop;
    vh->prop.win32HandleMetaData = NULL;
    vh->size = size;
    vh->refs = 1;
    pthread_mutex_lock(&vmm_lock);
    vh->next = handles;
    handles = vh;
    pthread_mutex_unlock(&vmm_lock);
    *handle = h;
    TW_DEBUG("cuda: cuMemCreate(%zu, dev %d) -> 0x%llx", size, prop->location.id, (unsigned long long)h);
    return CUDA_SUCCESS;
}

static CUresult release_locked(uint64_t h, int *drop)
{
    struct vmm_handle **pp = &handles;
    while (*pp && (*pp)->h != h)
        pp = &(*pp)->next;
    if (!*pp)
        return CUDA_ERROR_INVALID_VALUE;
    *drop = 0;
    if (--(*pp)->refs == 0) {
        struct vmm_handle *dead = *pp;
        *pp = dead->next;
        free(dead);
        *drop = 1;
    }
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    cu_enter();
    int drop = 0;
    pthread_mutex_lock(&vmm_lock);
    CUresult r = release_locked(handle, &drop);
    pthread_mutex_unlock(&vmm_lock);
    if (r == CUDA_SUCCESS && drop)
        r = cu_err(tw_vmm_release(handle));   /* the core keeps mapped memory until it is unmapped */
    return r;
}

TW_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                            unsigned long long flags)
{
    cu_enter();
    if (!ptr || size == 0 || flags != 0 || (ptr % GRANULARITY) || (size % GRANULARITY) || (offset % GRANULARITY))
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm_lock);
    struct vmm_handle *vh = find_handle(handle);
    size_t hsize = vh ? vh->size : 0;
    int overlap = 0;
    for (struct vmm_map *m = maps; m; m = m->next)
        if (ptr < m->va + m->size && m->va < ptr + size)
            overlap = 1;
    pthread_mutex_unlock(&vmm_lock);
    if (!vh)
        return CUDA_ERROR_INVALID_HANDLE;
    if (offset + size > hsize)
        return CUDA_ERROR_INVALID_VALUE;
    if (overlap)
        return CUDA_ERROR_ALREADY_MAPPED;
    struct vmm_map *m = calloc(1, sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    tw_err e = tw_vmm_map((uintptr_t)ptr, size, offset, handle);
    if (e != TW_OK) {
        free(m);
        return cu_err(e);
    }
    m->va = (uintptr_t)ptr;
    m->size = size;
    m->h = handle;
    pthread_mutex_lock(&vmm_lock);
    m->next = maps;
    maps = m;
    pthread_mutex_unlock(&vmm_lock);
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    cu_enter();
    if (!ptr || size == 0 || (ptr % GRANULARITY) || (size % GRANULARITY))
        return CUDA_ERROR_INVALID_VALUE;
    tw_err e = tw_vmm_unmap((uintptr_t)ptr, size);
    if (e != TW_OK)
        return cu_err(e);
    pthread_mutex_lock(&vmm_lock);
    for (struct vmm_map **pp = &maps; *pp;) {
        struct vmm_map *m = *pp;
        if (m->va >= ptr && m->va + m->size <= ptr + size) {
            *pp = m->next;
            free(m);
        } else {
            pp = &m->next;
        }
    }
    pthread_mutex_unlock(&vmm_lock);
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    cu_enter();
    if (!ptr || size == 0 || !desc || count == 0)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; i++) {
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE)
            return CUDA_ERROR_INVALID_VALUE;
        if (!cu_dev_ok(desc[i].location.id))
            return CUDA_ERROR_INVALID_DEVICE;
        if (desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
            desc[i].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&vmm_lock);
    /* the whole range must be mapped */
    for (uintptr_t a = (uintptr_t)ptr; a < ptr + size;) {
        struct vmm_map *m = find_map(a);
        if (!m) {
            r = CUDA_ERROR_INVALID_VALUE;
            break;
        }
        a = m->va + m->size;
    }
    if (r == CUDA_SUCCESS)
        for (struct vmm_map *m = maps; m; m = m->next) {
            if (!(m->va < ptr + size && ptr < m->va + m->size))
                continue;
            for (size_t i = 0; i < count; i++) {
                uint64_t bit = 1ull << (desc[i].location.id & 63);
                m->access_rw &= ~bit;
                m->access_r &= ~bit;
                if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) m->access_rw |= bit;
                else if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ) m->access_r |= bit;
            }
        }
    pthread_mutex_unlock(&vmm_lock);
    return r;
}

TW_EXPORT CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location, CUdeviceptr ptr)
{
    cu_enter();
    if (!flags || !location || location->type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_dev_ok(location->id))
        return CUDA_ERROR_INVALID_DEVICE;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&vmm_lock);
    struct vmm_map *m = find_map((uintptr_t)ptr);
    if (!m) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else {
        uint64_t bit = 1ull << (location->id & 63);
        *flags = (m->access_rw & bit) ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                 : (m->access_r & bit) ? CU_MEM_ACCESS_FLAGS_PROT_READ : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    }
    pthread_mutex_unlock(&vmm_lock);
    return r;
}

TW_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    cu_enter();
    if (!handle || !addr)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm_lock);
    struct vmm_map *m = find_map((uintptr_t)addr);
    struct vmm_handle *vh = m ? find_handle(m->h) : NULL;
    if (vh) {
        vh->refs++;
        *handle = vh->h;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&vmm_lock);
    return r;
}

TW_EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                          CUmemGenericAllocationHandle handle)
{
    cu_enter();
    if (!prop)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm_lock);
    struct vmm_handle *vh = find_handle(handle);
    if (vh) {
        *prop = vh->prop;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&vmm_lock);
    return r;
}

#define SHARE_MAGIC 0x54575348u /* "TWSH" */
struct share_rec { uint32_t magic; int32_t pid; uint64_t handle, size; };

TW_EXPORT CUresult cuMemExportToShareableHandle(void *shareableHandle, CUmemGenericAllocationHandle handle,
                                                CUmemAllocationHandleType handleType, unsigned long long flags)
{
    cu_enter();
    if (!shareableHandle || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm_lock);
    struct vmm_handle *vh = find_handle(handle);
    unsigned types = vh ? (unsigned)vh->prop.requestedHandleTypes : 0;
    size_t size = vh ? vh->size : 0;
    pthread_mutex_unlock(&vmm_lock);
    if (!vh)
        return CUDA_ERROR_INVALID_VALUE;
    if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!(types & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
        return CUDA_ERROR_INVALID_VALUE;
    int fd = memfd_create("timewarp-vmm", MFD_CLOEXEC);
    if (fd < 0)
        return CUDA_ERROR_OPERATING_SYSTEM;
    struct share_rec rec = {SHARE_MAGIC, (int32_t)getpid(), handle, size};
    if (pwrite(fd, &rec, sizeof rec, 0) != (ssize_t)sizeof rec) {
        close(fd);
        return CUDA_ERROR_OPERATING_SYSTEM;
    }
    *(int *)shareableHandle = fd;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                                  CUmemAllocationHandleType shHandleType)
{
    cu_enter();
    if (!handle)
        return CUDA_ERROR_INVALID_VALUE;
    if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        return CUDA_ERROR_NOT_SUPPORTED;
    int fd = (int)(intptr_t)osHandle;
    struct share_rec rec;
    if (fd < 0 || pread(fd, &rec, sizeof rec, 0) != (ssize_t)sizeof rec || rec.magic != SHARE_MAGIC)
        return CUDA_ERROR_INVALID_VALUE;
    if (rec.pid != (int32_t)getpid())
        return CUDA_ERROR_NOT_SUPPORTED;   /* memory of another emulated process: not shareable */
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&vmm_lock);
    struct vmm_handle *vh = find_handle(rec.handle);
    if (vh) {
        vh->refs++;
        *handle = vh->h;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&vmm_lock);
    return r;
}
