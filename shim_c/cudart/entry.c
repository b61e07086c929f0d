/* Driver entry points: cudaGetDriverEntryPoint / cudaGetDriverEntryPointByVersion. As the real runtime does,
 * the lookup is delegated to the driver's cuGetProcAddress_v2; when that does not answer, the symbol is
 * resolved here with dlsym on libcuda.so.1, choosing the variant (_v2, _v3, _ptsz ...) that matches the
 * requested CUDA version. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "cudart_internal.h"

#define DRIVER_VERSION 13000

static void *libcuda(void)
{
    static _Atomic(void *) handle;
    void *h = atomic_load_explicit(&handle, memory_order_acquire);
    if (h) return h;
    h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h) h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) h = dlopen("libcuda.so", RTLD_NOW);
    if (h) atomic_store_explicit(&handle, h, memory_order_release);
    return h;
}

/* Versioned variants whose ABI differs from the base name: (name, suffix, first CUDA version). Names not
 * listed take their highest suffix. */
typedef struct { const char *name; const char *suffix; int version; } variant;
static const variant variants[] = {
    {"cuCtxCreate", "_v4", 12050},
    {"cuCtxCreate", "_v3", 11040},
    {"cuCtxCreate", "_v2", 3020},
    {"cuCtxGetDevice", "_v2", 13000},
    {"cuCtxSynchronize", "_v2", 13000},
    {"cuDeviceGetUuid", "_v2", 11040},
    {"cuDevicePrimaryCtxRelease", "_v2", 11000},
    {"cuDevicePrimaryCtxReset", "_v2", 11000},
    {"cuDevicePrimaryCtxSetFlags", "_v2", 11000},
    {"cuEventElapsedTime", "_v2", 12080},
    {"cuGetProcAddress", "_v2", 12000},
    {"cuGraphAddDependencies", "_v2", 12030},
    {"cuGraphRemoveDependencies", "_v2", 12030},
    {"cuGraphGetEdges", "_v2", 12030},
    {"cuGraphNodeGetDependencies", "_v2", 12030},
    {"cuGraphNodeGetDependentNodes", "_v2", 12030},
    {"cuGraphAddNode", "_v2", 12030},
    {"cuStreamUpdateCaptureDependencies", "_v2", 12030},
    {"cuGraphAddKernelNode", "_v2", 12000},
    {"cuGraphKernelNodeGetParams", "_v2", 12000},
    {"cuGraphKernelNodeSetParams", "_v2", 12000},
    {"cuGraphExecKernelNodeSetParams", "_v2", 12000},
    {"cuGraphExecUpdate", "_v2", 12000},
    {"cuGraphInstantiate", "_v2", 11000},
    {"cuIpcOpenMemHandle", "_v2", 11000},
    {"cuMemAdvise", "_v2", 12020},
    {"cuMemPrefetchAsync", "_v2", 12020},
    {"cuMemcpyBatchAsync", "_v2", 13000},
    {"cuMemcpy3DBatchAsync", "_v2", 13000},
    {"cuStreamBatchMemOp", "_v2", 11070},
    {"cuStreamWriteValue32", "_v2", 11070},
    {"cuStreamWriteValue64", "_v2", 11070},
    {"cuStreamWaitValue32", "_v2", 11070},
    {"cuStreamWaitValue64", "_v2", 11070},
    {"cuStreamBeginCapture", "_v2", 10010},
    {"cuStreamGetCaptureInfo", "_v3", 12030},
    {"cuStreamGetCaptureInfo", "_v2", 11030},
};

/* The base name with the suffix the version selects, into buf. */
static void select_variant(void *h, const char *sym, unsigned version, char *buf, size_t len)
{
    int listed = 0;
    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++) {
        if (strcmp(variants[i].name, sym)) continue;
        listed = 1;
        if ((int)version >= variants[i].version) {
            snprintf(buf, len, "%s%s", sym, variants[i].suffix);
            return;
        }
    }
    if (!listed) {
        /* since CUDA 12, cuGraphInstantiate is cuGraphInstantiateWithFlags */
        if (!strcmp(sym, "cuGraphInstantiate") && version >= 12000) {
            snprintf(buf, len, "cuGraphInstantiateWithFlags");
            return;
        }
        for (int v = 4; v >= 2; v--) {
            snprintf(buf, len, "%s_v%d", sym, v);
            if (dlsym(h, buf)) return;
        }
    }
    snprintf(buf, len, "%s", sym);
}

typedef int (*get_proc_address_fn)(const char *, void **, int, unsigned long long, int *);

static cudaError_t entry_point(const char *symbol, void **funcPtr, unsigned version, unsigned long long flags,
                               int *status, int per_thread_default)
{
    if (status) *status = cudaDriverEntryPointSymbolNotFound;
    if (!symbol || !funcPtr) return cr(cudaErrorInvalidValue);
    *funcPtr = NULL;
    if (flags > cudaEnablePerThreadDefaultStream) return cr(cudaErrorInvalidValue);
    if (version > DRIVER_VERSION) return cr(cudaErrorInvalidValue);
    int per_thread = flags == cudaEnablePerThreadDefaultStream || (flags == cudaEnableDefault && per_thread_default);
    void *h = libcuda();
    if (!h) return cudaSuccess;

    /* the driver's own resolution, as the real runtime does it */
    get_proc_address_fn gpa = (get_proc_address_fn)dlsym(h, "cuGetProcAddress_v2");
    if (gpa) {
        void *fn = NULL;
        int st = 1;
        int r = gpa(symbol, &fn, (int)version, per_thread ? 2ull : 1ull, &st);
        if (r == 0 && fn) {
            *funcPtr = fn;
            if (status) *status = cudaDriverEntryPointSuccess;
            return cudaSuccess;
        }
    }

    char name[256];
    select_variant(h, symbol, version, name, sizeof(name));
    void *fn = NULL;
    if (per_thread) {
        char pt[300];
        snprintf(pt, sizeof(pt), "%s_ptsz", name);
        fn = dlsym(h, pt);
        if (!fn) {
            snprintf(pt, sizeof(pt), "%s_ptds", name);
            fn = dlsym(h, pt);
        }
    }
    if (!fn) fn = dlsym(h, name);
    if (!fn && strcmp(name, symbol)) fn = dlsym(h, symbol);
    TW_DEBUG("cudaGetDriverEntryPoint(%s, %u, %llu) -> %s %p", symbol, version, flags, name, fn);
    if (fn) {
        *funcPtr = fn;
        if (status) *status = cudaDriverEntryPointSuccess;
    }
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                              int *driverStatus)
{
    return entry_point(symbol, funcPtr, DRIVER_VERSION, flags, driverStatus, 0);
}

TW_EXPORT cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                                   int *driverStatus)
{
    return entry_point(symbol, funcPtr, DRIVER_VERSION, flags, driverStatus, 1);
}

TW_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                                       unsigned long long flags, int *driverStatus)
{
    return entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus, 0);
}

TW_EXPORT cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr,
                                                            unsigned int cudaVersion, unsigned long long flags,
                                                            int *driverStatus)
{
    return entry_point(symbol, funcPtr, cudaVersion, flags, driverStatus, 1);
}
