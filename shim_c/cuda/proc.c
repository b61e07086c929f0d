/* cuGetProcAddress: driver entry points by name, as torch (through cudaGetDriverEntryPointByVersion), Triton and
 * cuda-python fetch them.
 *
 * The real driver maps (name, cudaVersion) to the ABI version of the entry point that a program built against that
 * CUDA version expects: "cuMemAlloc" is cuMemAlloc_v2 from 3.2 on, "cuStreamGetCaptureInfo" is _v2 from 11.3 and
 * _v3 from 12.3, "cuGraphInstantiate" is cuGraphInstantiateWithFlags from 12.0, ... The table below holds those
 * mappings (the #define block at the top of cuda.h, with the release that introduced each). A name the table does not
 * list resolves to itself: names such as cuCtxGetDevice_v2 or cuStreamGetCtx_v2 are separate APIs, not newer ABIs
 * of the plain name, so "prefer the highest _vN" would be wrong for them. With
 * CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM the _ptds/_ptsz flavour is preferred where one exists.
 *
 * The lookup goes through the dynamic symbol table of this library (a dlopen handle on itself), so an entry point
 * that the real driver exports but timewarp does not implement resolves to its generated stub, which reports
 * itself when called. Only addresses inside this library are returned. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "cu_internal.h"

struct mapping { const char *name; int since; const char *target; };

static const struct mapping table[] = {
    /* 3.2: 64-bit sizes and pointers */
    {"cuDeviceTotalMem", 3020, "cuDeviceTotalMem_v2"},
    {"cuCtxCreate", 3020, "cuCtxCreate_v2"},
    {"cuCtxCreate", 11040, "cuCtxCreate_v3"},
    {"cuCtxCreate", 12050, "cuCtxCreate_v4"},
    {"cuModuleGetGlobal", 3020, "cuModuleGetGlobal_v2"},
    {"cuMemGetInfo", 3020, "cuMemGetInfo_v2"},
    {"cuMemAlloc", 3020, "cuMemAlloc_v2"},
    {"cuMemAllocPitch", 3020, "cuMemAllocPitch_v2"},
    {"cuMemFree", 3020, "cuMemFree_v2"},
    {"cuMemGetAddressRange", 3020, "cuMemGetAddressRange_v2"},
    {"cuMemAllocHost", 3020, "cuMemAllocHost_v2"},
    {"cuMemHostGetDevicePointer", 3020, "cuMemHostGetDevicePointer_v2"},
    {"cuMemcpyHtoD", 3020, "cuMemcpyHtoD_v2"},
    {"cuMemcpyDtoH", 3020, "cuMemcpyDtoH_v2"},
    {"cuMemcpyDtoD", 3020, "cuMemcpyDtoD_v2"},
    {"cuMemcpyDtoA", 3020, "cuMemcpyDtoA_v2"},
    {"cuMemcpyAtoD", 3020, "cuMemcpyAtoD_v2"},
    {"cuMemcpyHtoA", 3020, "cuMemcpyHtoA_v2"},
    {"cuMemcpyAtoH", 3020, "cuMemcpyAtoH_v2"},
    {"cuMemcpyAtoA", 3020, "cuMemcpyAtoA_v2"},
    {"cuMemcpyHtoAAsync", 3020, "cuMemcpyHtoAAsync_v2"},
    {"cuMemcpyAtoHAsync", 3020, "cuMemcpyAtoHAsync_v2"},
    {"cuMemcpy2D", 3020, "cuMemcpy2D_v2"},
    {"cuMemcpy2DUnaligned", 3020, "cuMemcpy2DUnaligned_v2"},
    {"cuMemcpy3D", 3020, "cuMemcpy3D_v2"},
    {"cuMemcpyHtoDAsync", 3020, "cuMemcpyHtoDAsync_v2"},
    {"cuMemcpyDtoHAsync", 3020, "cuMemcpyDtoHAsync_v2"},
    {"cuMemcpyDtoDAsync", 3020, "cuMemcpyDtoDAsync_v2"},
    {"cuMemcpy2DAsync", 3020, "cuMemcpy2DAsync_v2"},
    {"cuMemcpy3DAsync", 3020, "cuMemcpy3DAsync_v2"},
    {"cuMemsetD8", 3020, "cuMemsetD8_v2"},
    {"cuMemsetD16", 3020, "cuMemsetD16_v2"},
    {"cuMemsetD32", 3020, "cuMemsetD32_v2"},
    {"cuMemsetD2D8", 3020, "cuMemsetD2D8_v2"},
    {"cuMemsetD2D16", 3020, "cuMemsetD2D16_v2"},
    {"cuMemsetD2D32", 3020, "cuMemsetD2D32_v2"},
    {"cuArrayCreate", 3020, "cuArrayCreate_v2"},
    {"cuArrayGetDescriptor", 3020, "cuArrayGetDescriptor_v2"},
    {"cuArray3DCreate", 3020, "cuArray3DCreate_v2"},
    {"cuArray3DGetDescriptor", 3020, "cuArray3DGetDescriptor_v2"},
    {"cuTexRefSetAddress", 3020, "cuTexRefSetAddress_v2"},
    {"cuTexRefGetAddress", 3020, "cuTexRefGetAddress_v2"},
    {"cuTexRefSetAddress2D", 3020, "cuTexRefSetAddress2D_v2"},
    {"cuTexRefSetAddress2D", 4010, "cuTexRefSetAddress2D_v3"},
    {"cuGraphicsResourceGetMappedPointer", 3020, "cuGraphicsResourceGetMappedPointer_v2"},
    /* 4.0 */
    {"cuCtxDestroy", 4000, "cuCtxDestroy_v2"},
    {"cuCtxPopCurrent", 4000, "cuCtxPopCurrent_v2"},
    {"cuCtxPushCurrent", 4000, "cuCtxPushCurrent_v2"},
    {"cuStreamDestroy", 4000, "cuStreamDestroy_v2"},
    {"cuEventDestroy", 4000, "cuEventDestroy_v2"},
    /* 6.5 */
    {"cuLinkCreate", 6050, "cuLinkCreate_v2"},
    {"cuLinkAddData", 6050, "cuLinkAddData_v2"},
    {"cuLinkAddFile", 6050, "cuLinkAddFile_v2"},
    {"cuMemHostRegister", 6050, "cuMemHostRegister_v2"},
    {"cuGraphicsResourceSetMapFlags", 6050, "cuGraphicsResourceSetMapFlags_v2"},
    /* 10.1 - 11.x */
    {"cuStreamBeginCapture", 10010, "cuStreamBeginCapture_v2"},
    {"cuDevicePrimaryCtxRelease", 11000, "cuDevicePrimaryCtxRelease_v2"},
    {"cuDevicePrimaryCtxReset", 11000, "cuDevicePrimaryCtxReset_v2"},
    {"cuDevicePrimaryCtxSetFlags", 11000, "cuDevicePrimaryCtxSetFlags_v2"},
    {"cuIpcOpenMemHandle", 11000, "cuIpcOpenMemHandle_v2"},
    {"cuGraphInstantiate", 11000, "cuGraphInstantiate_v2"},
    {"cuGraphInstantiate", 12000, "cuGraphInstantiateWithFlags"},
    {"cuStreamGetCaptureInfo", 11030, "cuStreamGetCaptureInfo_v2"},
    {"cuStreamGetCaptureInfo", 12030, "cuStreamGetCaptureInfo_v3"},
    {"cuDeviceGetUuid", 11040, "cuDeviceGetUuid_v2"},
    /* 12.x */
    {"cuStreamWriteValue32", 12000, "cuStreamWriteValue32_v2"},
    {"cuStreamWaitValue32", 12000, "cuStreamWaitValue32_v2"},
    {"cuStreamWriteValue64", 12000, "cuStreamWriteValue64_v2"},
    {"cuStreamWaitValue64", 12000, "cuStreamWaitValue64_v2"},
    {"cuStreamBatchMemOp", 12000, "cuStreamBatchMemOp_v2"},
    {"cuGraphExecUpdate", 12000, "cuGraphExecUpdate_v2"},
    {"cuGetProcAddress", 12000, "cuGetProcAddress_v2"},
    {"cuGraphAddKernelNode", 12000, "cuGraphAddKernelNode_v2"},
    {"cuGraphKernelNodeGetParams", 12000, "cuGraphKernelNodeGetParams_v2"},
    {"cuGraphKernelNodeSetParams", 12000, "cuGraphKernelNodeSetParams_v2"},
    {"cuGraphExecKernelNodeSetParams", 12000, "cuGraphExecKernelNodeSetParams_v2"},
    {"cuMemAdvise", 12020, "cuMemAdvise_v2"},
    {"cuMemPrefetchAsync", 12020, "cuMemPrefetchAsync_v2"},
    {"cuGraphGetEdges", 12030, "cuGraphGetEdges_v2"},
    {"cuGraphNodeGetDependencies", 12030, "cuGraphNodeGetDependencies_v2"},
    {"cuGraphNodeGetDependentNodes", 12030, "cuGraphNodeGetDependentNodes_v2"},
    {"cuGraphAddDependencies", 12030, "cuGraphAddDependencies_v2"},
    {"cuGraphRemoveDependencies", 12030, "cuGraphRemoveDependencies_v2"},
    {"cuGraphAddNode", 12030, "cuGraphAddNode_v2"},
    {"cuStreamUpdateCaptureDependencies", 12030, "cuStreamUpdateCaptureDependencies_v2"},
    {"cuEventElapsedTime", 12080, "cuEventElapsedTime_v2"},
    {"cuMemcpyBatchAsync", 13000, "cuMemcpyBatchAsync_v2"},
    {"cuMemcpy3DBatchAsync", 13000, "cuMemcpy3DBatchAsync_v2"},
};

static void *self;
static void *self_base;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;

static void open_self(void)
{
    Dl_info info;
    if (dladdr((void *)&open_self, &info) && info.dli_fname) {
        self_base = info.dli_fbase;
        self = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
    }
}

static void *lookup(const char *name)
{
    void *p = dlsym(self, name);
    if (!p)
        return NULL;
    Dl_info info;
    if (!dladdr(p, &info) || info.dli_fbase != self_base)
        return NULL;   /* found in a dependency: not a driver entry point */
    return p;
}

static int valid_name(const char *s)
{
    if (strncmp(s, "cu", 2))
        return 0;
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') || (s[n] >= '0' && s[n] <= '9') ||
              s[n] == '_'))
            return 0;
    return n < 200;
}

static CUresult get_proc(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                         CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn || flags > (CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    pthread_once(&self_once, open_self);
    if (!self || !valid_name(symbol)) {
        if (status)
            *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    const char *target = symbol;
    int best = -1;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i].name, symbol) && table[i].since <= cudaVersion && table[i].since > best) {
            best = table[i].since;
            target = table[i].target;
        }
    void *p = NULL;
    if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
        char buf[256];
        snprintf(buf, sizeof buf, "%s_ptds", target);
        p = lookup(buf);
        if (!p) {
            snprintf(buf, sizeof buf, "%s_ptsz", target);
            p = lookup(buf);
        }
    }
    if (!p)
        p = lookup(target);
    if (!p) {
        TW_DEBUG("cuda: cuGetProcAddress(%s, %d) -> not found", symbol, cudaVersion);
        if (status)
            *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_ERROR_NOT_FOUND;
    }
    *pfn = p;
    if (status)
        *status = CU_GET_PROC_ADDRESS_SUCCESS;
    TW_DEBUG("cuda: cuGetProcAddress(%s, %d, %llu) -> %s", symbol, cudaVersion, (unsigned long long)flags, target);
    return CUDA_SUCCESS;
}

/* CUDA 11.3 - 11.8 signature. */
TW_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return get_proc(symbol, pfn, cudaVersion, flags, NULL);
}

TW_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *symbolStatus)
{
    return get_proc(symbol, pfn, cudaVersion, flags, symbolStatus);
}
