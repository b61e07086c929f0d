/* Shared helpers of the runtime front end (hidden; not part of the exported API). */
#ifndef TW_CUDART_INTERNAL_H
#define TW_CUDART_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "tw/core.h"
#include "cudart_types.h"

#define TW_HIDDEN __attribute__((visibility("hidden")))
#define TW_LIKELY(x) __builtin_expect(!!(x), 1)
#define TW_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ------------------------------------------------------------------ last error (error.c) */
/* Records e as the calling thread's last error (no effect for cudaSuccess). Also called by the generated
 * stubs of unimplemented entry points. */
void tw_cudart_set_error(int e);

/* Return e, recording it as the last error when it is a failure. */
static inline cudaError_t cr(int e)
{
    if (TW_UNLIKELY(e != 0)) tw_cudart_set_error(e);
    return e;
}

/* The core's tw_err numbers are the runtime's for every code the core returns. */
static inline cudaError_t cr_tw(tw_err e) { return cr((int)e); }

/* ------------------------------------------------------------------ pointer map (internal.c) */
/* Pointer -> pointer hash map. Lookups take no lock (they may run concurrently with inserts); inserts and
 * removals serialise on the map's mutex. A removed key keeps its slot with a NULL value. Tables that grow
 * are replaced, never freed (readers may still be in them); the leak is bounded by the final size. */
typedef struct tw_pm_slot {
    _Atomic(uintptr_t) key;
    _Atomic(void *) val;
} tw_pm_slot;
typedef struct tw_pm_table {
    size_t cap;              /* power of two */
    tw_pm_slot slots[];
} tw_pm_table;
typedef struct tw_ptrmap {
    _Atomic(tw_pm_table *) table;
    pthread_mutex_t mu;
    size_t used;             /* slots with a key */
} tw_ptrmap;
#define TW_PTRMAP_INIT { NULL, PTHREAD_MUTEX_INITIALIZER, 0 }

TW_HIDDEN void *tw_pm_get(tw_ptrmap *m, const void *key);
TW_HIDDEN void tw_pm_put(tw_ptrmap *m, const void *key, void *val);   /* val NULL removes */
/* Calls fn for every live entry, under the map's lock. */
TW_HIDDEN void tw_pm_each(tw_ptrmap *m, void (*fn)(const void *key, void *val, void *arg), void *arg);

/* ------------------------------------------------------------------ kernels (launch.c) */
/* Host stub address, cudaKernel_t or cudaFunction_t -> kernel; NULL if none of these. */
TW_HIDDEN tw_kernel *tw_cudart_resolve_func(const void *func);
/* Host stub address of a kernel's registration (cudaGraphKernelNodeGetParams); NULL if none. */
TW_HIDDEN const void *tw_cudart_kernel_host_fun(const tw_kernel *k);

/* ------------------------------------------------------------------ symbols (memory.c) */
TW_HIDDEN void tw_cudart_register_var(const void *host_var, const char *name, size_t size, int constant,
                                      void *managed_ptr);

/* ------------------------------------------------------------------ device limits (device.c) */
typedef struct tw_dev_limits {
    int valid;
    int sm_count, max_threads_per_sm, max_blocks_per_sm, regs_per_sm, regs_per_block;
    int smem_per_sm, smem_per_block, smem_optin, smem_reserved, warp_size, max_threads_per_block;
    int cc_major, cc_minor;
} tw_dev_limits;
/* Cached device limits for occupancy and launch validation; NULL for a bad device. */
TW_HIDDEN const tw_dev_limits *tw_cudart_limits(int dev);

/* ------------------------------------------------------------------ misc */
static inline int tw_valid_device(int dev)
{
    return dev >= 0 && tw_device_spec(dev) != NULL;
}

/* Handles that name default streams (not destroyable). */
static inline int tw_is_default_stream_handle(const void *h)
{
    return h == NULL || h == TW_STREAM_LEGACY || h == TW_STREAM_PER_THREAD;
}


#endif
