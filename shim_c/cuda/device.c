/* Device management: cuDevice*. Devices are the core's virtual GPUs (catalog entries). */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cu_internal.h"

TW_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    cu_enter();
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_dev_ok(ordinal))
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuDeviceGetCount(int *count)
{
    cu_enter();
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = tw_device_count();
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    cu_enter();
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    const tw_gpu_spec *s = tw_device_spec(dev);
    if (!s)
        return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "%s", s->name);
    return CUDA_SUCCESS;
}

static CUresult get_uuid(CUuuid *uuid, CUdevice dev)
{
    cu_enter();
    if (!uuid)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    tw_device_uuid(dev, (unsigned char *)uuid->bytes);
    return CUDA_SUCCESS;
}
TW_EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev) { return get_uuid(uuid, dev); }
TW_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev) { return get_uuid(uuid, dev); }

TW_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    cu_enter();
    if (!bytes)
        return CUDA_ERROR_INVALID_VALUE;
    const tw_gpu_spec *s = tw_device_spec(dev);
    if (!s)
        return CUDA_ERROR_INVALID_DEVICE;
    *bytes = (size_t)s->total_mem;
    return CUDA_SUCCESS;
}

/* The pre-3.2 entry point reports 32 bits. */
TW_EXPORT CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
    size_t b;
    CUresult r = cuDeviceTotalMem_v2(bytes ? &b : NULL, dev);
    if (r == CUDA_SUCCESS)
        *bytes = b > UINT_MAX ? UINT_MAX : (unsigned int)b;
    return r;
}

TW_EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    cu_enter();
    if (!pi)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    return cu_err(tw_device_attr(dev, attrib, pi));
}

TW_EXPORT CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
    cu_enter();
    if (!major || !minor)
        return CUDA_ERROR_INVALID_VALUE;
    const tw_gpu_spec *s = tw_device_spec(dev);
    if (!s)
        return CUDA_ERROR_INVALID_DEVICE;
    *major = s->cc_major;
    *minor = s->cc_minor;
    return CUDA_SUCCESS;
}

static int attr_or(int dev, int attr, int dflt)
{
    int v;
    return tw_device_attr(dev, attr, &v) == TW_OK ? v : dflt;
}

TW_EXPORT CUresult cuDeviceGetProperties(CUdevprop *prop, CUdevice dev)
{
    cu_enter();
    if (!prop)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    prop->maxThreadsPerBlock = attr_or(dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024);
    prop->maxThreadsDim[0] = attr_or(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024);
    prop->maxThreadsDim[1] = attr_or(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024);
    prop->maxThreadsDim[2] = attr_or(dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64);
    prop->maxGridSize[0] = attr_or(dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, INT_MAX);
    prop->maxGridSize[1] = attr_or(dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535);
    prop->maxGridSize[2] = attr_or(dev, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535);
    prop->sharedMemPerBlock = attr_or(dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152);
    prop->totalConstantMemory = attr_or(dev, CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 65536);
    prop->SIMDWidth = attr_or(dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32);
    prop->memPitch = attr_or(dev, CU_DEVICE_ATTRIBUTE_MAX_PITCH, INT_MAX);
    prop->regsPerBlock = attr_or(dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536);
    prop->clockRate = attr_or(dev, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1980000);
    prop->textureAlign = attr_or(dev, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512);
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    cu_enter();
    if (!pciBusId || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    char buf[64];
    tw_device_pci_bus_id(dev, buf, sizeof buf);
    snprintf(pciBusId, (size_t)len, "%s", buf);
    return CUDA_SUCCESS;
}

/* Accepts the forms the real driver does: [domain]:[bus]:[device].[function], [domain]:[bus]:[device],
 * [bus]:[device].[function], all hexadecimal. */
static int parse_bus_id(const char *s, unsigned *dom, unsigned *bus, unsigned *devn)
{
    unsigned a, b, c, f;
    char tail;
    if (sscanf(s, "%x:%x:%x.%x%c", &a, &b, &c, &f, &tail) == 4 ||
        sscanf(s, "%x:%x:%x%c", &a, &b, &c, &tail) == 3) {
        *dom = a; *bus = b; *devn = c;
        return 1;
    }
    if (sscanf(s, "%x:%x.%x%c", &b, &c, &f, &tail) == 3) {
        *dom = 0; *bus = b; *devn = c;
        return 1;
    }
    return 0;
}

TW_EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
    cu_enter();
    if (!dev || !pciBusId)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned dom, bus, devn;
    if (!parse_bus_id(pciBusId, &dom, &bus, &devn))
        return CUDA_ERROR_INVALID_VALUE;
    for (int d = 0; d < tw_device_count(); d++) {
        char buf[64];
        unsigned d2, b2, n2;
        tw_device_pci_bus_id(d, buf, sizeof buf);
        if (parse_bus_id(buf, &d2, &b2, &n2) && d2 == dom && b2 == bus && n2 == devn) {
            *dev = d;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_DEVICE;
}

/* Every virtual GPU of a node sits on one NVLink/NVSwitch fabric (the H200 SXM boards timewarp models), so
 * distinct devices can always reach each other; a device is not its own peer. */
TW_EXPORT CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    cu_enter();
    if (!canAccessPeer)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_dev_ok(dev) || !cu_dev_ok(peerDev))
        return CUDA_ERROR_INVALID_DEVICE;
    *canAccessPeer = dev != peerDev;
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuDeviceGetP2PAttribute(int *value, CUdevice_P2PAttribute attrib, CUdevice src, CUdevice dst)
{
    cu_enter();
    if (!value)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_dev_ok(src) || !cu_dev_ok(dst) || src == dst)
        return CUDA_ERROR_INVALID_DEVICE;
    switch (attrib) {
    case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK: *value = 0; break;
    case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
    case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
    case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED: *value = 1; break;
    case CU_DEVICE_P2P_ATTRIBUTE_ONLY_PARTIAL_NATIVE_ATOMIC_SUPPORTED: *value = 0; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

TW_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    cu_enter();
    if (!pool_out)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *pool_out = cu_default_pool(dev);
    return *pool_out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

TW_EXPORT CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    cu_enter();
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *pool = cu_current_pool(dev);
    return *pool ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

TW_EXPORT CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    cu_enter();
    if (!cu_dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    if (cu_pool_device(pool) != dev)
        return CUDA_ERROR_INVALID_VALUE;
    return cu_pool_set_current(dev, pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Windows only. */
TW_EXPORT CUresult cuDeviceGetLuid(char *luid, unsigned int *deviceNodeMask, CUdevice dev)
{
    (void)luid; (void)deviceNodeMask; (void)dev;
    cu_enter();
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* Texture objects are outside what timewarp emulates. */
TW_EXPORT CUresult cuDeviceGetTexture1DLinearMaxWidth(size_t *maxWidthInElements, CUarray_format format,
                                                      unsigned numChannels, CUdevice dev)
{
    (void)maxWidthInElements; (void)format; (void)numChannels; (void)dev;
    cu_enter();
    return CUDA_ERROR_NOT_SUPPORTED;
}

TW_EXPORT CUresult cuDeviceGetExecAffinitySupport(int *pi, int type, CUdevice dev)
{
    cu_enter();
    if (!pi || type != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *pi = 0;
    return CUDA_SUCCESS;
}
