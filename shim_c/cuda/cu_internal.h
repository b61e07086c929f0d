/* State shared by the files of the driver API front end (libcuda.so.1). Everything here is hidden
 * (-fvisibility=hidden); only TW_EXPORT functions leave the library. */
#ifndef TW_CU_INTERNAL_H
#define TW_CU_INTERNAL_H

#include <stdint.h>
#include <stddef.h>

#include "tw/core.h"
#include "cuda_types.h"

#define CU_MAX_DEVICES 64

/* ---------------------------------------------------------------- entry (init.c)
 * The driver counts as initialised as soon as the core is: the replacement runtime never calls cuInit (the real
 * libcudart does), and Triton and vLLM call driver functions after torch initialised CUDA through the runtime.
 * So every entry point initialises the core and proceeds; cuInit itself only validates its flags and checks
 * that there is a device. (A real driver returns CUDA_ERROR_NOT_INITIALIZED before cuInit; restoring that needs a
 * core query saying whether anyone initialised it.) */
extern int cu_ready;
void cu_init_slow(void);
static inline CUresult cu_enter(void)
{
    if (__builtin_expect(!cu_ready, 0))
        cu_init_slow();
    return CUDA_SUCCESS;
}
static inline CUresult cu_err(tw_err e) { return (CUresult)e; }   /* the core uses driver numbering */
const char *cu_result_name(CUresult r);

/* ---------------------------------------------------------------- contexts (context.c) */
#define CU_CTX_MAGIC 0x43754378u /* "CuCx" */
#define CU_NUM_LIMITS 10
struct cu_ctx {
    uint32_t magic;
    int device;
    int primary;                 /* 1: the device's primary context */
    unsigned flags;
    int retain;                  /* primary: cuDevicePrimaryCtxRetain count */
    uint64_t id;
    size_t limits[CU_NUM_LIMITS];
    int cache_config;
    uint64_t peers;              /* bit d: peer access to device d enabled (devices < 64) */
    struct cu_ctx *next;         /* list of created (non-primary) contexts */
};
/* The primary context of dev (no retain), NULL when dev is out of range. */
struct cu_ctx *cu_primary(int dev);
int cu_ctx_valid(const struct cu_ctx *c);
/* The calling thread's current context (NULL when none is current). */
struct cu_ctx *cu_ctx_current(void);
/* The device work of this thread goes to: the current context's device, else the runtime's current device. */
int cu_current_device(void);
/* 1 when dev is a valid ordinal. */
static inline int cu_dev_ok(int dev) { return dev >= 0 && dev < tw_device_count(); }

/* ---------------------------------------------------------------- modules (module.c) */
#define CU_FUNC_MAGIC 0x43754675u /* "CuFu" */
#define CU_MOD_MAGIC 0x43754d6fu  /* "CuMo" */
struct cu_module;
struct cu_func {
    uint32_t magic;
    tw_kernel *kernel;           /* the core's kernel identity (shared by every module with this name) */
    struct cu_module *mod;
    const char *name;            /* mangled name (owned by the core's kernel) */
    /* attributes of this module's copy of the kernel */
    int num_regs, local_bytes, shared_static, const_bytes, max_threads;
    int max_dyn_shared;          /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
    int carveout, cache_config;
    int req_cluster[3], cluster_must_be_set, non_portable_cluster, cluster_sched;
    int ptx_version, binary_version;
    int n_params;                /* -1 unknown */
    uint32_t *param_off, *param_size;
};
static inline int cu_func_ok(const struct cu_func *f) { return f && f->magic == CU_FUNC_MAGIC; }
/* A function handle: one of ours, or a kernel handle of the runtime (cudaFunction_t / cudaKernel_t are the core's
 * tw_kernel *, and CUDA lets them be passed where a CUfunction is expected). For the latter, *tmp is filled with a
 * view of the kernel's attributes (mod == NULL) and returned. NULL when h is neither. */
struct cu_func *cu_func_slow(const void *h, struct cu_func *tmp);
static inline struct cu_func *cu_func_get(const void *h, struct cu_func *tmp)
{
    if (__builtin_expect(cu_func_ok(h), 1))
        return (struct cu_func *)h;
    return cu_func_slow(h, tmp);
}

/* ---------------------------------------------------------------- memory (memory.c, vmm.c) */
/* Looks a device address up: core allocations first, then IPC mappings opened in this process. */
int cu_mem_lookup(uintptr_t p, tw_alloc *out);
/* VMM bookkeeping, for pointer attributes: the mapping containing p. Returns 1 and fills what is asked. */
int cu_vmm_mapping(uintptr_t p, uintptr_t *va, size_t *size, unsigned *handle_types);
/* Per-device default memory pool object. */
struct cu_mempool;
struct cu_mempool *cu_default_pool(int dev);
struct cu_mempool *cu_current_pool(int dev);
int cu_pool_set_current(int dev, struct cu_mempool *p);
int cu_pool_device(const struct cu_mempool *p);   /* -1 if p is not a pool */

/* ---------------------------------------------------------------- streams */
/* Handle -> stream for the plain entry points (NULL = legacy) and the _ptsz/_ptds ones (NULL = per-thread). */
static inline tw_stream *cu_stream(CUstream h, int ptds) { return tw_stream_get((void *)h, ptds); }
/* Host function that runs a closure and frees it (used for callbacks and stream memory operations). */
tw_err cu_enqueue_host(tw_stream *s, void (*fn)(void *), void *data, const char *label, uint64_t duration);

#endif
