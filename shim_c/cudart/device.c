/* Device management: count, current device, properties, attributes, PCI ids, peer access, limits, flags. */
#include <stdio.h>
#include <string.h>

#include "cudart_internal.h"

#define MAX_DEV 64

/* per-device runtime state (the core owns devices; these are runtime-only settings) */
static unsigned dev_flags[MAX_DEV];
static int cache_config[MAX_DEV];
static int shmem_config[MAX_DEV];
static uint64_t peer_enabled[MAX_DEV];      /* bit p: peer access to p enabled from this device */
static size_t limits[MAX_DEV][7];
static unsigned char limits_init[MAX_DEV];
static pthread_mutex_t dev_mu = PTHREAD_MUTEX_INITIALIZER;

static tw_dev_limits dev_limits[MAX_DEV];

static int attr_or(int dev, int attr, int dflt)
{
    int v = 0;
    return tw_device_attr(dev, attr, &v) == TW_OK ? v : dflt;
}

const tw_dev_limits *tw_cudart_limits(int dev)
{
    if (dev < 0 || dev >= MAX_DEV) return NULL;
    tw_dev_limits *l = &dev_limits[dev];
    if (TW_LIKELY(atomic_load_explicit((_Atomic int *)&l->valid, memory_order_acquire))) return l;
    const tw_gpu_spec *spec = tw_device_spec(dev);
    if (!spec) return NULL;
    tw_dev_limits n;
    memset(&n, 0, sizeof(n));
    /* CUdevice_attribute ids (== cudaDeviceAttr) */
    n.max_threads_per_block = attr_or(dev, 1, 1024);
    n.smem_per_block = attr_or(dev, 8, 49152);
    n.warp_size = attr_or(dev, 10, 32);
    n.regs_per_block = attr_or(dev, 12, 65536);
    n.sm_count = attr_or(dev, 16, spec->sm_count);
    n.max_threads_per_sm = attr_or(dev, 39, 2048);
    n.cc_major = attr_or(dev, 75, spec->cc_major);
    n.cc_minor = attr_or(dev, 76, spec->cc_minor);
    n.smem_per_sm = attr_or(dev, 81, 233472);
    n.regs_per_sm = attr_or(dev, 82, 65536);
    n.smem_optin = attr_or(dev, 97, 232448);
    n.max_blocks_per_sm = attr_or(dev, 106, 32);
    n.smem_reserved = attr_or(dev, 111, 1024);
    if (n.warp_size <= 0) n.warp_size = 32;
    pthread_mutex_lock(&dev_mu);
    if (!l->valid) {
        n.valid = 0;
        *l = n;
        atomic_store_explicit((_Atomic int *)&l->valid, 1, memory_order_release);
    }
    pthread_mutex_unlock(&dev_mu);
    return l;
}

TW_EXPORT cudaError_t cudaGetDeviceCount(int *count)
{
    if (!count) return cr(cudaErrorInvalidValue);
    tw_init();
    int n = tw_device_count();
    if (n <= 0) {
        *count = 0;
        return cr(cudaErrorNoDevice);
    }
    *count = n;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaGetDevice(int *device)
{
    if (!device) return cr(cudaErrorInvalidValue);
    tw_init();
    if (tw_device_count() <= 0) return cr(cudaErrorNoDevice);
    *device = tw_get_device();
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaSetDevice(int device)
{
    tw_init();
    if (tw_device_count() <= 0) return cr(cudaErrorNoDevice);
    if (!tw_valid_device(device)) return cr(cudaErrorInvalidDevice);
    TW_DEBUG("cudaSetDevice(%d)", device);
    return cr_tw(tw_set_device(device));
}

TW_EXPORT cudaError_t cudaSetValidDevices(int *device_arr, int len)
{
    if (len < 0 || (len > 0 && !device_arr)) return cr(cudaErrorInvalidValue);
    for (int i = 0; i < len; i++)
        if (!tw_valid_device(device_arr[i])) return cr(cudaErrorInvalidDevice);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device)
{
    if (!prop) return cr(cudaErrorInvalidValue);
    tw_init();
    if (!tw_valid_device(device)) return cr(cudaErrorInvalidDevice);
    return cr_tw(tw_device_props(device, prop));
}

TW_EXPORT cudaError_t cudaDeviceGetAttribute(int *value, int attr, int device)
{
    if (!value) return cr(cudaErrorInvalidValue);
    tw_init();
    if (!tw_valid_device(device)) return cr(cudaErrorInvalidDevice);
    /* cudaDeviceAttr values equal the CUdevice_attribute ids of the same properties */
    tw_err e = tw_device_attr(device, attr, value);
    if (e != TW_OK) return cr(cudaErrorInvalidValue);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
    if (!pciBusId || len <= 0) return cr(cudaErrorInvalidValue);
    tw_init();
    if (!tw_valid_device(device)) return cr(cudaErrorInvalidDevice);
    tw_device_pci_bus_id(device, pciBusId, len);
    return cudaSuccess;
}

/* "domain:bus:device.function", "domain:bus:device" or "bus:device.function" (hex) */
static int parse_bus_id(const char *s, unsigned v[4])
{
    unsigned a, b, c, d;
    if (sscanf(s, "%x:%x:%x.%x", &a, &b, &c, &d) == 4) {
        v[0] = a; v[1] = b; v[2] = c; v[3] = d;
        return 1;
    }
    if (sscanf(s, "%x:%x:%x", &a, &b, &c) == 3) {
        v[0] = a; v[1] = b; v[2] = c; v[3] = 0;
        return 1;
    }
    if (sscanf(s, "%x:%x.%x", &b, &c, &d) == 3) {
        v[0] = 0; v[1] = b; v[2] = c; v[3] = d;
        return 1;
    }
    return 0;
}

TW_EXPORT cudaError_t cudaDeviceGetByPCIBusId(int *device, const char *pciBusId)
{
    if (!device || !pciBusId) return cr(cudaErrorInvalidValue);
    tw_init();
    unsigned want[4];
    if (!parse_bus_id(pciBusId, want)) return cr(cudaErrorInvalidValue);
    int n = tw_device_count();
    for (int d = 0; d < n; d++) {
        char buf[64];
        unsigned have[4];
        tw_device_pci_bus_id(d, buf, (int)sizeof(buf));
        if (parse_bus_id(buf, have) && !memcmp(have, want, sizeof(have))) {
            *device = d;
            return cudaSuccess;
        }
    }
    return cr(cudaErrorInvalidDevice);
}

TW_EXPORT cudaError_t cudaDeviceSynchronize(void)
{
    tw_init();
    return cr_tw(tw_device_synchronize(tw_get_device()));
}

TW_EXPORT cudaError_t cudaDeviceReset(void)
{
    tw_init();
    int dev = tw_get_device();
    tw_err e = tw_device_synchronize(dev);
    if (dev >= 0 && dev < MAX_DEV) {
        pthread_mutex_lock(&dev_mu);
        dev_flags[dev] = 0;
        cache_config[dev] = 0;
        shmem_config[dev] = 0;
        peer_enabled[dev] = 0;
        limits_init[dev] = 0;
        pthread_mutex_unlock(&dev_mu);
    }
    return cr_tw(e);
}

TW_EXPORT cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice)
{
    if (!canAccessPeer) return cr(cudaErrorInvalidValue);
    tw_init();
    if (!tw_valid_device(device) || !tw_valid_device(peerDevice)) return cr(cudaErrorInvalidDevice);
    *canAccessPeer = device != peerDevice;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags)
{
    tw_init();
    int dev = tw_get_device();
    if (flags != 0) return cr(cudaErrorInvalidValue);
    if (!tw_valid_device(peerDevice) || peerDevice == dev || peerDevice >= MAX_DEV || dev < 0 || dev >= MAX_DEV)
        return cr(cudaErrorInvalidDevice);
    int already;
    pthread_mutex_lock(&dev_mu);
    already = (peer_enabled[dev] >> peerDevice) & 1;
    peer_enabled[dev] |= 1ull << peerDevice;
    pthread_mutex_unlock(&dev_mu);
    return already ? cr(cudaErrorPeerAccessAlreadyEnabled) : cudaSuccess;
}

TW_EXPORT cudaError_t cudaDeviceDisablePeerAccess(int peerDevice)
{
    tw_init();
    int dev = tw_get_device();
    if (!tw_valid_device(peerDevice) || peerDevice == dev || peerDevice >= MAX_DEV || dev < 0 || dev >= MAX_DEV)
        return cr(cudaErrorInvalidDevice);
    int was;
    pthread_mutex_lock(&dev_mu);
    was = (peer_enabled[dev] >> peerDevice) & 1;
    peer_enabled[dev] &= ~(1ull << peerDevice);
    pthread_mutex_unlock(&dev_mu);
    return was ? cudaSuccess : cr(cudaErrorPeerAccessNotEnabled);
}

TW_EXPORT cudaError_t cudaDeviceGetP2PAttribute(int *value, int attr, int srcDevice, int dstDevice)
{
    if (!value) return cr(cudaErrorInvalidValue);
    tw_init();
    if (!tw_valid_device(srcDevice) || !tw_valid_device(dstDevice) || srcDevice == dstDevice)
        return cr(cudaErrorInvalidDevice);
    switch (attr) {
    case 1: *value = 0; break;   /* cudaDevP2PAttrPerformanceRank */
    case 2:                       /* cudaDevP2PAttrAccessSupported */
    case 3:                       /* cudaDevP2PAttrNativeAtomicSupported */
    case 4: *value = 1; break;   /* cudaDevP2PAttrCudaArrayAccessSupported */
    case 5: *value = 0; break;   /* cudaDevP2PAttrOnlyPartialNativeAtomicSupported */
    default: return cr(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    /* H200: least 0, greatest -5 */
    if (leastPriority) *leastPriority = 0;
    if (greatestPriority) *greatestPriority = -5;
    return cudaSuccess;
}

static void limits_defaults(int dev)
{
    if (limits_init[dev]) return;
    limits[dev][cudaLimitStackSize] = 1024;
    limits[dev][cudaLimitPrintfFifoSize] = 1048576;
    limits[dev][cudaLimitMallocHeapSize] = 8388608;
    limits[dev][cudaLimitDevRuntimeSyncDepth] = 2;
    limits[dev][cudaLimitDevRuntimePendingLaunchCount] = 2048;
    limits[dev][cudaLimitMaxL2FetchGranularity] = 32;
    limits[dev][cudaLimitPersistingL2CacheSize] = 0;
    limits_init[dev] = 1;
}

TW_EXPORT cudaError_t cudaDeviceGetLimit(size_t *pValue, int limit)
{
    if (!pValue) return cr(cudaErrorInvalidValue);
    tw_init();
    int dev = tw_get_device();
    if (limit < 0 || limit > cudaLimitPersistingL2CacheSize) return cr(cudaErrorUnsupportedLimit);
    if (dev < 0 || dev >= MAX_DEV) return cr(cudaErrorInvalidDevice);
    pthread_mutex_lock(&dev_mu);
    limits_defaults(dev);
    *pValue = limits[dev][limit];
    pthread_mutex_unlock(&dev_mu);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaDeviceSetLimit(int limit, size_t value)
{
    tw_init();
    int dev = tw_get_device();
    if (limit < 0 || limit > cudaLimitPersistingL2CacheSize) return cr(cudaErrorUnsupportedLimit);
    if (dev < 0 || dev >= MAX_DEV) return cr(cudaErrorInvalidDevice);
    if (limit == cudaLimitMaxL2FetchGranularity && value > 128) return cr(cudaErrorInvalidValue);
    if (limit == cudaLimitPersistingL2CacheSize) {
        int maxp = 0;
        if (tw_device_attr(dev, 108, &maxp) == TW_OK && maxp > 0 && value > (size_t)maxp) value = (size_t)maxp;
    }
    if (limit == cudaLimitStackSize) value = (value + 15) & ~(size_t)15;
    pthread_mutex_lock(&dev_mu);
    limits_defaults(dev);
    limits[dev][limit] = value;
    pthread_mutex_unlock(&dev_mu);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaDeviceGetCacheConfig(int *pCacheConfig)
{
    if (!pCacheConfig) return cr(cudaErrorInvalidValue);
    int dev = tw_get_device();
    *pCacheConfig = (dev >= 0 && dev < MAX_DEV) ? cache_config[dev] : 0;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaDeviceSetCacheConfig(int cacheConfig)
{
    if (cacheConfig < 0 || cacheConfig > 3) return cr(cudaErrorInvalidValue);
    int dev = tw_get_device();
    if (dev >= 0 && dev < MAX_DEV) cache_config[dev] = cacheConfig;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaDeviceGetSharedMemConfig(int *pConfig)
{
    if (!pConfig) return cr(cudaErrorInvalidValue);
    int dev = tw_get_device();
    int v = (dev >= 0 && dev < MAX_DEV) ? shmem_config[dev] : 0;
    *pConfig = v ? v : 1; /* cudaSharedMemBankSizeFourByte */
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaDeviceSetSharedMemConfig(int config)
{
    if (config < 0 || config > 2) return cr(cudaErrorInvalidValue);
    int dev = tw_get_device();
    if (dev >= 0 && dev < MAX_DEV) shmem_config[dev] = config;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaDriverGetVersion(int *driverVersion)
{
    if (!driverVersion) return cr(cudaErrorInvalidValue);
    *driverVersion = 13000;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
    if (!runtimeVersion) return cr(cudaErrorInvalidValue);
    *runtimeVersion = 13000;
    return cudaSuccess;
}

#define DEVICE_FLAGS_MASK (cudaDeviceScheduleMask | cudaDeviceMapHost | cudaDeviceLmemResizeToMax | cudaDeviceSyncMemops)

TW_EXPORT cudaError_t cudaSetDeviceFlags(unsigned int flags)
{
    tw_init();
    if (flags & ~(unsigned)DEVICE_FLAGS_MASK) return cr(cudaErrorInvalidValue);
    if ((flags & cudaDeviceScheduleMask) == 3 || (flags & cudaDeviceScheduleMask) > 4)
        return cr(cudaErrorInvalidValue);
    int dev = tw_get_device();
    if (dev >= 0 && dev < MAX_DEV) dev_flags[dev] = flags;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaGetDeviceFlags(unsigned int *flags)
{
    if (!flags) return cr(cudaErrorInvalidValue);
    tw_init();
    int dev = tw_get_device();
    *flags = ((dev >= 0 && dev < MAX_DEV) ? dev_flags[dev] : 0) | cudaDeviceMapHost;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaChooseDevice(int *device, const cudaDeviceProp *prop)
{
    if (!device || !prop) return cr(cudaErrorInvalidValue);
    tw_init();
    if (tw_device_count() <= 0) return cr(cudaErrorNoDevice);
    /* every virtual device of a run is the same card: the best match is the first one with the requested
     * compute capability, else device 0 */
    int n = tw_device_count();
    for (int d = 0; d < n; d++) {
        const tw_gpu_spec *s = tw_device_spec(d);
        if (s && s->cc_major == prop->major && s->cc_minor == prop->minor) {
            *device = d;
            return cudaSuccess;
        }
    }
    *device = 0;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaInitDevice(int device, unsigned int deviceFlags, unsigned int flags)
{
    tw_init();
    if (tw_device_count() <= 0) return cr(cudaErrorNoDevice);
    if (!tw_valid_device(device)) return cr(cudaErrorInvalidDevice);
    if (flags & ~(unsigned)cudaInitDeviceFlagsAreValid) return cr(cudaErrorInvalidValue);
    if (flags & cudaInitDeviceFlagsAreValid) {
        if (deviceFlags & ~(unsigned)DEVICE_FLAGS_MASK) return cr(cudaErrorInvalidValue);
        if (device < MAX_DEV) dev_flags[device] = deviceFlags;
    }
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaDeviceFlushGPUDirectRDMAWrites(int target, int scope)
{
    (void)scope;
    if (target != 0) return cr(cudaErrorInvalidValue);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaCtxResetPersistingL2Cache(void)
{
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaDeviceGraphMemTrim(int device)
{
    tw_init();
    if (!tw_valid_device(device)) return cr(cudaErrorInvalidDevice);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaDeviceGetGraphMemAttribute(int device, int attr, void *value)
{
    if (!value) return cr(cudaErrorInvalidValue);
    tw_init();
    if (!tw_valid_device(device)) return cr(cudaErrorInvalidDevice);
    if (attr < 0 || attr > 3) return cr(cudaErrorInvalidValue);
    *(uint64_t *)value = 0; /* graph memory nodes are not modelled: nothing reserved or used */
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaDeviceSetGraphMemAttribute(int device, int attr, void *value)
{
    if (!value) return cr(cudaErrorInvalidValue);
    tw_init();
    if (!tw_valid_device(device)) return cr(cudaErrorInvalidDevice);
    /* only the high watermarks (1 used, 3 reserved) may be reset, to 0 */
    if ((attr != 1 && attr != 3) || *(uint64_t *)value != 0) return cr(cudaErrorInvalidValue);
    return cudaSuccess;
}
