/* Device memory of the virtual GPUs.
 *
 * Each device owns an address range as large as its memory, reserved with PROT_NONE and MAP_NORESERVE, so
 * device pointers are real, unique addresses that never collide with host memory. Allocations up to
 * TIMEWARP_BACKED_MAX bytes (default 2 MiB: PyTorch's small-block segments, where metadata such as lengths,
 * block tables and sampled ids live) are made readable and writable: pages appear when first written, and
 * host-device-host round trips return what was written. Larger allocations (weights, KV cache, activations)
 * stay address-only: copies into them are timed but dropped, and reads from them return zeros.
 * Kernels never write: a kernel's output reads back as whatever its memory held (zeros if never written).
 * Capacity is the card's: total minus what the driver context reserves; allocating past it fails as
 * cudaMalloc does, which PyTorch turns into torch.OutOfMemoryError.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "internal.h"

#define GRAN (2ull << 20)          /* the driver's allocation granularity on Hopper */
#define SMALL_ALIGN 512ull

typedef struct {
    uintptr_t base;
    size_t size;
    int device;
    tw_mem_kind kind;
    int backed, vmm;
    int host_owned;      /* pinned memory we allocated (freed with free()) */
} region;

/* sorted by base; lookups are binary searches */
static region *regions;
static size_t nregions, cap_regions;

typedef struct { uintptr_t base, end, bump; size_t used, capacity; uintptr_t *free_lists_unused; } arena;
static arena arenas[TW_MAX_DEVICES];
static size_t backed_max = 2ull << 20;

/* free blocks per device: a simple sorted array of [base,size) holes, first fit */
typedef struct { uintptr_t base; size_t size; } hole;
static hole *holes[TW_MAX_DEVICES];
static size_t nholes[TW_MAX_DEVICES], cap_holes[TW_MAX_DEVICES];

void tw_memory_init(void) {
    const char *b = getenv("TIMEWARP_BACKED_MAX");
    if (b) backed_max = strtoull(b, NULL, 0);
    for (int d = 0; d < tw_ndevices; d++) {
        const tw_gpu_spec *s = tw_devices[d].spec;
        size_t span = (s->total_mem + GRAN - 1) / GRAN * GRAN;
        /* twice the capacity of address space: VMM reservations live here too */
        void *p = mmap(NULL, 2 * span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) {
            tw_log("cannot reserve %zu bytes of address space for device %d; the device has no memory", 2 * span, d);
            continue;
        }
        uintptr_t base = ((uintptr_t)p + GRAN - 1) / GRAN * GRAN;
        arenas[d].base = arenas[d].bump = base;
        arenas[d].end = (uintptr_t)p + 2 * span;
        arenas[d].capacity = s->total_mem - s->context_reserved;
    }
}

static size_t region_index(uintptr_t addr) { /* first region with base > addr */
    size_t lo = 0, hi = nregions;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (regions[mid].base <= addr) lo = mid + 1; else hi = mid;
    }
    return lo;
}

static region *region_find(uintptr_t addr) {
    size_t i = region_index(addr);
    if (i == 0) return NULL;
    region *r = &regions[i - 1];
    return addr < r->base + r->size ? r : NULL;
}

static int region_insert(region r) {
    if (nregions == cap_regions) {
        size_t nc = cap_regions ? cap_regions * 2 : 256;
        region *nr = realloc(regions, nc * sizeof *nr);
        if (!nr) return -1;
        regions = nr; cap_regions = nc;
    }
    size_t i = region_index(r.base);
    memmove(&regions[i + 1], &regions[i], (nregions - i) * sizeof *regions);
    regions[i] = r;
    nregions++;
    return 0;
}

static void region_remove(region *r) {
    size_t i = r - regions;
    memmove(&regions[i], &regions[i + 1], (nregions - i - 1) * sizeof *regions);
    nregions--;
}

static void hole_add(int d, uintptr_t base, size_t size) {
    if (nholes[d] == cap_holes[d]) {
        size_t nc = cap_holes[d] ? cap_holes[d] * 2 : 64;
        hole *nh = realloc(holes[d], nc * sizeof *nh);
        if (!nh) return; /* the range is lost to reuse, not to correctness */
        holes[d] = nh; cap_holes[d] = nc;
    }
    size_t i = 0;
    while (i < nholes[d] && holes[d][i].base < base) i++;
    memmove(&holes[d][i + 1], &holes[d][i], (nholes[d] - i) * sizeof(hole));
    holes[d][i] = (hole){base, size};
    nholes[d]++;
    /* coalesce with neighbours */
    if (i + 1 < nholes[d] && holes[d][i].base + holes[d][i].size == holes[d][i + 1].base) {
        holes[d][i].size += holes[d][i + 1].size;
        memmove(&holes[d][i + 1], &holes[d][i + 2], (nholes[d] - i - 2) * sizeof(hole));
        nholes[d]--;
    }
    if (i > 0 && holes[d][i - 1].base + holes[d][i - 1].size == holes[d][i].base) {
        holes[d][i - 1].size += holes[d][i].size;
        memmove(&holes[d][i], &holes[d][i + 1], (nholes[d] - i - 1) * sizeof(hole));
        nholes[d]--;
    }
}

/* address range for size bytes (already rounded) in device d's arena */
static uintptr_t arena_take(int d, size_t size, size_t align) {
    for (size_t i = 0; i < nholes[d]; i++) {
        hole *h = &holes[d][i];
        uintptr_t a = (h->base + align - 1) / align * align;
        if (a + size <= h->base + h->size) {
            uintptr_t hb = h->base, he = h->base + h->size;
            memmove(h, h + 1, (nholes[d] - i - 1) * sizeof(hole));
            nholes[d]--;
            if (a > hb) hole_add(d, hb, a - hb);
            if (a + size < he) hole_add(d, a + size, he - (a + size));
            return a;
        }
    }
    uintptr_t a = (arenas[d].bump + align - 1) / align * align;
    if (a + size > arenas[d].end) return 0;
    if (a > arenas[d].bump) hole_add(d, arenas[d].bump, a - arenas[d].bump);
    arenas[d].bump = a + size;
    return a;
}

static size_t charged(size_t size) { return (size + GRAN - 1) / GRAN * GRAN; }

static tw_err mem_alloc(int dev, size_t size, void **out, int force_backed);
tw_err tw_mem_alloc(int dev, size_t size, void **out) { return mem_alloc(dev, size, out, 0); }
tw_err tw_mem_alloc_managed(int dev, size_t size, void **out) { return mem_alloc(dev, size, out, 1); }

static tw_err mem_alloc(int dev, size_t size, void **out, int force_backed) {
    tw_init();
    if (!out) return TW_ERR_INVALID_VALUE;
    if (dev < 0 || dev >= tw_ndevices) return TW_ERR_INVALID_DEVICE;
    if (size == 0) { *out = NULL; return TW_OK; }
    arena *A = &arenas[dev];
    TW_LOCK();
    if (!A->base || A->used + charged(size) > A->capacity) {
        TW_UNLOCK();
        return TW_ERR_OUT_OF_MEMORY;
    }
    size_t rsize = size <= GRAN / 2 ? (size + SMALL_ALIGN - 1) / SMALL_ALIGN * SMALL_ALIGN : charged(size);
    uintptr_t a = arena_take(dev, rsize, size <= GRAN / 2 ? SMALL_ALIGN : GRAN);
    if (!a) { TW_UNLOCK(); return TW_ERR_OUT_OF_MEMORY; }
    int backed = force_backed || size <= backed_max;
    if (backed) {
        /* small allocations share pages with each other (never with large ones, which are 2 MiB
         * aligned): open the whole pages they touch */
        uintptr_t p0 = a & ~(uintptr_t)4095, p1 = (a + rsize + 4095) & ~(uintptr_t)4095;
        if (mprotect((void *)p0, p1 - p0, PROT_READ | PROT_WRITE) != 0) backed = 0;
    }
    region r = {a, rsize, dev, force_backed ? TW_MEM_MANAGED : TW_MEM_DEVICE, backed, 0, 0};
    if (region_insert(r) != 0) { hole_add(dev, a, rsize); TW_UNLOCK(); return TW_ERR_OUT_OF_MEMORY; }
    A->used += charged(size);
    TW_UNLOCK();
    *out = (void *)a;
    return TW_OK;
}

static void release_range(int d, uintptr_t base, size_t size, int backed) {
    if (backed && base % GRAN == 0 && size % GRAN == 0) {
        /* a large backed range: give the pages back and make it address-only again */
        mmap((void *)base, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    } else if (backed) {
        /* small: neighbours may share the edge pages; drop the pages wholly inside, keep access */
        uintptr_t p0 = (base + 4095) & ~(uintptr_t)4095, p1 = (base + size) & ~(uintptr_t)4095;
        if (p1 > p0) madvise((void *)p0, p1 - p0, MADV_DONTNEED);
    }
    hole_add(d, base, size);
}

tw_err tw_mem_free(void *ptr) {
    if (!ptr) return TW_OK;
    TW_LOCK();
    region *r = region_find((uintptr_t)ptr);
    if (!r || r->base != (uintptr_t)ptr || r->device < 0 || r->vmm) { TW_UNLOCK(); return TW_ERR_INVALID_VALUE; }
    int d = r->device;
    arenas[d].used -= charged(r->size);
    release_range(d, r->base, r->size, r->backed);
    region_remove(r);
    TW_UNLOCK();
    return TW_OK;
}

tw_err tw_host_alloc(size_t size, void **out) {
    tw_init();
    if (!out) return TW_ERR_INVALID_VALUE;
    void *p = NULL;
    if (posix_memalign(&p, 4096, size ? size : 1) != 0) return TW_ERR_OUT_OF_MEMORY;
    TW_LOCK();
    region r = {(uintptr_t)p, size ? size : 1, -1, TW_MEM_HOST_PINNED, 1, 0, 1};
    int rc = region_insert(r);
    TW_UNLOCK();
    if (rc) { free(p); return TW_ERR_OUT_OF_MEMORY; }
    *out = p;
    return TW_OK;
}

tw_err tw_host_free(void *ptr) {
    if (!ptr) return TW_OK;
    TW_LOCK();
    region *r = region_find((uintptr_t)ptr);
    if (!r || r->base != (uintptr_t)ptr || !r->host_owned) { TW_UNLOCK(); return TW_ERR_INVALID_VALUE; }
    region_remove(r);
    TW_UNLOCK();
    free(ptr);
    return TW_OK;
}

tw_err tw_host_register(void *ptr, size_t size) {
    tw_init();
    if (!ptr || !size) return TW_ERR_INVALID_VALUE;
    TW_LOCK();
    if (region_find((uintptr_t)ptr)) { TW_UNLOCK(); return 712; /* host memory already registered */ }
    region r = {(uintptr_t)ptr, size, -1, TW_MEM_HOST_PINNED, 1, 0, 0};
    int rc = region_insert(r);
    TW_UNLOCK();
    return rc ? TW_ERR_OUT_OF_MEMORY : TW_OK;
}

tw_err tw_host_unregister(void *ptr) {
    TW_LOCK();
    region *r = region_find((uintptr_t)ptr);
    if (!r || r->base != (uintptr_t)ptr || r->host_owned || r->device != -1) { TW_UNLOCK(); return 713; /* not registered */ }
    region_remove(r);
    TW_UNLOCK();
    return TW_OK;
}

int tw_mem_lookup(const void *ptr, tw_alloc *out) {
    TW_LOCK();
    region *r = region_find((uintptr_t)ptr);
    if (r && out) *out = (tw_alloc){r->base, r->size, r->device, r->kind, r->backed, r->vmm};
    TW_UNLOCK();
    return r != NULL;
}

void tw_mem_info(int dev, size_t *free_bytes, size_t *total_bytes) {
    tw_init();
    if (dev < 0 || dev >= tw_ndevices) { if (free_bytes) *free_bytes = 0; if (total_bytes) *total_bytes = 0; return; }
    const tw_gpu_spec *s = tw_devices[dev].spec;
    TW_LOCK();
    size_t used = arenas[dev].used;
    TW_UNLOCK();
    if (total_bytes) *total_bytes = s->total_mem;
    if (free_bytes) *free_bytes = s->total_mem - s->context_reserved - used;
}

/* Device memory the driver takes for itself after start-up (executable graphs: graph_memory.c): counted as
 * used for good, as the driver keeps such pools until the context ends. */
tw_err tw_mem_reserve_driver(int dev, size_t bytes) {
    if (dev < 0 || dev >= tw_ndevices) return TW_ERR_INVALID_VALUE;
    TW_LOCK();
    arena *A = &arenas[dev];
    tw_err e = A->used + bytes > A->capacity ? TW_ERR_OUT_OF_MEMORY : TW_OK;
    if (!e) A->used += bytes;
    TW_UNLOCK();
    return e;
}

size_t tw_mem_used(int dev) { return dev >= 0 && dev < tw_ndevices ? arenas[dev].used : 0; }

/* Writes into device memory carried out on the host (copies and fills here, multi-byte fills in
 * cuda/memory.c, host-visible results an integration supplies): the shadow of small results
 * (integrations/torch_shadow.cpp) trusts the zeros it wrote only while this count stands still. */
static _Atomic uint64_t device_writes;
uint64_t tw_mem_device_writes(void) { return atomic_load_explicit(&device_writes, memory_order_relaxed); }
void tw_mem_note_device_write(void) { atomic_fetch_add_explicit(&device_writes, 1, memory_order_relaxed); }

/* How many bytes from p on are host-accessible: plain host memory (not ours) counts as accessible;
 * unbacked device memory is not. Returns the accessible length up to n, and *is_dev. */
static int side_backed(uintptr_t p, size_t n, size_t *len, int *is_dev) {
    region *r = region_find(p);
    if (is_dev) *is_dev = r && r->device >= 0;
    if (!r) { *len = n; return 1; }       /* ordinary host memory */
    size_t avail = r->base + r->size - p;
    *len = avail < n ? avail : n;
    return r->backed;
}

/* The device's copies and fills are carried out on the calling thread (backed memory holds real bytes),
 * but the real host does not spend that time: the GPU does. From this size on (below it the copy costs less
 * than pausing the clock does) the work is not charged; a 512 KiB copy into fresh pages costs about 100 us
 * of CPU here, which otherwise showed as a 30x too slow device copy inside graph replays. */
#define UNCHARGED_BYTES 16384

void tw_mem_copy_now(void *dst, const void *src, size_t n) {
    if (!n || dst == src || !dst || !src) return;
    TW_LOCK();
    size_t ld, ls;
    int dd;
    int db = side_backed((uintptr_t)dst, n, &ld, &dd);
    int sb = side_backed((uintptr_t)src, n, &ls, NULL);
    TW_UNLOCK();
    size_t len = ld < ls ? ld : ls;
    if (!db) return;                       /* into address-only memory: dropped */
    if (dd) tw_mem_note_device_write();
    int quiet = ld >= UNCHARGED_BYTES;
    if (quiet) tw_charge_pause();
    if (sb) memmove(dst, src, len);
    else memset(dst, 0, ld);               /* out of address-only memory: zeros */
    if (quiet) tw_charge_resume();
}

void tw_mem_set_now(void *dst, int value, size_t n) {
    if (!n || !dst) return;
    TW_LOCK();
    size_t ld;
    int dd;
    int db = side_backed((uintptr_t)dst, n, &ld, &dd);
    TW_UNLOCK();
    if (!db) return;
    if (dd) tw_mem_note_device_write();
    int quiet = ld >= UNCHARGED_BYTES;
    if (quiet) tw_charge_pause();
    memset(dst, value, ld);
    if (quiet) tw_charge_resume();
}

/* ---------------------------------------------------------------- VMM (cuMem*) */
typedef struct { uint64_t id; int device; size_t size; int backed; int live; int mapped; } phys;
static phys *phys_tab;
static size_t nphys, cap_phys;

tw_err tw_vmm_reserve(size_t size, size_t align, uintptr_t fixed, uintptr_t *out) {
    tw_init();
    if (!size || !out || tw_ndevices == 0) return TW_ERR_INVALID_VALUE;
    (void)fixed; /* a requested address is a hint, as for the real driver */
    if (align < GRAN) align = GRAN;
    size = charged(size);
    TW_LOCK();
    /* reservations come from device 0's half of address space that cudaMalloc also uses; they do not
     * count against capacity until physical memory is mapped */
    uintptr_t a = arena_take(0, size, align);
    TW_UNLOCK();
    if (!a) return TW_ERR_OUT_OF_MEMORY;
    *out = a;
    return TW_OK;
}

tw_err tw_vmm_free(uintptr_t base, size_t size) {
    TW_LOCK();
    hole_add(0, base, charged(size));
    TW_UNLOCK();
    return TW_OK;
}

tw_err tw_vmm_create(int dev, size_t size, uint64_t *handle) {
    tw_init();
    if (!handle || !size) return TW_ERR_INVALID_VALUE;
    if (dev < 0 || dev >= tw_ndevices) return TW_ERR_INVALID_DEVICE;
    TW_LOCK();
    if (arenas[dev].used + charged(size) > arenas[dev].capacity) { TW_UNLOCK(); return TW_ERR_OUT_OF_MEMORY; }
    if (nphys == cap_phys) {
        size_t nc = cap_phys ? cap_phys * 2 : 64;
        phys *np = realloc(phys_tab, nc * sizeof *np);
        if (!np) { TW_UNLOCK(); return TW_ERR_OUT_OF_MEMORY; }
        phys_tab = np; cap_phys = nc;
    }
    phys_tab[nphys] = (phys){nphys + 1, dev, size, size <= backed_max, 1, 0};
    *handle = nphys + 1;
    nphys++;
    arenas[dev].used += charged(size);
    TW_UNLOCK();
    return TW_OK;
}

static phys *phys_get(uint64_t h) { return h >= 1 && h <= nphys && phys_tab[h - 1].live ? &phys_tab[h - 1] : NULL; }

tw_err tw_vmm_release(uint64_t handle) {
    TW_LOCK();
    phys *p = phys_get(handle);
    if (!p) { TW_UNLOCK(); return TW_ERR_INVALID_VALUE; }
    p->live = 0;
    arenas[p->device].used -= charged(p->size);
    TW_UNLOCK();
    return TW_OK;
}

tw_err tw_vmm_handle_size(uint64_t handle, size_t *size) {
    TW_LOCK();
    phys *p = phys_get(handle);
    if (p && size) *size = p->size;
    TW_UNLOCK();
    return p ? TW_OK : TW_ERR_INVALID_VALUE;
}

tw_err tw_vmm_map(uintptr_t va, size_t size, size_t offset, uint64_t handle) {
    TW_LOCK();
    phys *p = phys_get(handle);
    if (!p || offset + size > charged(p->size)) { TW_UNLOCK(); return TW_ERR_INVALID_VALUE; }
    if (region_find(va)) { TW_UNLOCK(); return TW_ERR_INVALID_VALUE; }
    int backed = p->backed && mprotect((void *)va, size, PROT_READ | PROT_WRITE) == 0;
    region r = {va, size, p->device, TW_MEM_DEVICE, backed, 1, 0};
    int rc = region_insert(r);
    TW_UNLOCK();
    return rc ? TW_ERR_OUT_OF_MEMORY : TW_OK;
}

tw_err tw_vmm_unmap(uintptr_t va, size_t size) {
    TW_LOCK();
    region *r = region_find(va);
    if (!r || !r->vmm || r->base != va) { TW_UNLOCK(); return TW_ERR_INVALID_VALUE; }
    if (r->backed) mmap((void *)va, r->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    (void)size;
    region_remove(r);
    TW_UNLOCK();
    return TW_OK;
}
