/* Fake NVML: initialization, error strings, system queries, device enumeration and handles. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "nvml_internal.h"

#define TW_NVML_DRIVER_VERSION "580.159.04"
#define TW_NVML_VERSION "13.580.159.04"
#define TW_NVML_CUDA_DRIVER_VERSION 13000

struct tw_nvml_device tw_nvml_devices[TW_NVML_MAX_DEVICES];
static int g_init_count;

int tw_nvml_initialized(void) { return __atomic_load_n(&g_init_count, __ATOMIC_ACQUIRE) > 0; }

int tw_nvml_count(void)
{
    int n = tw_physical_count();
    if (n < 0) n = 0;
    if (n > TW_NVML_MAX_DEVICES) n = TW_NVML_MAX_DEVICES;
    return n;
}

nvmlReturn_t tw_nvml_dev(nvmlDevice_t h, int *dev, const tw_gpu_spec **spec)
{
    if (!tw_nvml_initialized()) return NVML_ERROR_UNINITIALIZED;
    if (h < &tw_nvml_devices[0] || h >= &tw_nvml_devices[TW_NVML_MAX_DEVICES]) return NVML_ERROR_INVALID_ARGUMENT;
    int i = (int)(h - &tw_nvml_devices[0]);
    if (i >= tw_nvml_count()) return NVML_ERROR_INVALID_ARGUMENT;
    const tw_gpu_spec *s = tw_physical_spec(i);
    if (!s) return NVML_ERROR_INVALID_ARGUMENT;
    if (dev) *dev = i;
    if (spec) *spec = s;
    return NVML_SUCCESS;
}

nvmlReturn_t tw_nvml_str(char *buf, unsigned len, const char *s)
{
    if (!buf) return NVML_ERROR_INVALID_ARGUMENT;
    size_t n = strlen(s);
    if (n + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(buf, s, n + 1);
    return NVML_SUCCESS;
}

static nvmlReturn_t nvml_init_common(unsigned flags)
{
    (void)flags;
    tw_init();
    for (int i = 0; i < TW_NVML_MAX_DEVICES; i++) tw_nvml_devices[i].index = i;
    __atomic_add_fetch(&g_init_count, 1, __ATOMIC_ACQ_REL);
    TW_DEBUG("nvml: init (%d devices)", tw_nvml_count());
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlInit(void) { return nvml_init_common(0); }
TW_EXPORT nvmlReturn_t nvmlInit_v2(void) { return nvml_init_common(0); }
TW_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags) { return nvml_init_common(flags); }

TW_EXPORT nvmlReturn_t nvmlShutdown(void)
{
    int cur = __atomic_load_n(&g_init_count, __ATOMIC_ACQUIRE);
    while (cur > 0) {
        if (__atomic_compare_exchange_n(&g_init_count, &cur, cur - 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return NVML_SUCCESS;
    }
    return NVML_ERROR_UNINITIALIZED;
}

TW_EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_INSUFFICIENT_POWER: return "Insufficient External Power";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_IRQ_ISSUE: return "Interrupt Request Issue";
    case NVML_ERROR_LIBRARY_NOT_FOUND: return "NVML Shared Library Not Found";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_CORRUPTED_INFOROM: return "Corrupted infoROM";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_RESET_REQUIRED: return "GPU requires restart";
    case NVML_ERROR_OPERATING_SYSTEM: return "The operating system has blocked the request";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "RM has detected an NVML/RM version mismatch";
    case NVML_ERROR_IN_USE: return "In use by another client";
    case NVML_ERROR_MEMORY: return "Insufficient Memory";
    case NVML_ERROR_NO_DATA: return "No data";
    case NVML_ERROR_VGPU_ECC_NOT_SUPPORTED: return "ECC is not supported on this vGPU";
    case NVML_ERROR_INSUFFICIENT_RESOURCES: return "Insufficient resources";
    case NVML_ERROR_FREQ_NOT_SUPPORTED: return "Frequency not supported";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    case NVML_ERROR_DEPRECATED: return "Deprecated";
    case NVML_ERROR_NOT_READY: return "Not ready";
    case NVML_ERROR_GPU_NOT_FOUND: return "GPU not found";
    case NVML_ERROR_INVALID_STATE: return "Invalid state";
    case NVML_ERROR_RESET_TYPE_NOT_SUPPORTED: return "Reset type not supported";
    case NVML_ERROR_UNKNOWN: return "Unknown Error";
    default: return "Unknown Error";
    }
}

/* ---------------------------------------------------------------- system */
TW_EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    if (!tw_nvml_initialized()) return NVML_ERROR_UNINITIALIZED;
    return tw_nvml_str(version, length, TW_NVML_DRIVER_VERSION);
}

TW_EXPORT nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length)
{
    /* works without nvmlInit, as the real one does */
    return tw_nvml_str(version, length, TW_NVML_VERSION);
}

TW_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v)
{
    if (!v) return NVML_ERROR_INVALID_ARGUMENT;
    *v = TW_NVML_CUDA_DRIVER_VERSION;
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { return nvmlSystemGetCudaDriverVersion(v); }

TW_EXPORT nvmlReturn_t nvmlSystemGetProcessName(unsigned int pid, char *name, unsigned int length)
{
    if (!tw_nvml_initialized()) return NVML_ERROR_UNINITIALIZED;
    if (!name || length == 0) return NVML_ERROR_INVALID_ARGUMENT;
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%u/cmdline", pid);
    FILE *f = fopen(path, "r");
    if (!f) return NVML_ERROR_NOT_FOUND;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    if (n == 0) return NVML_ERROR_NOT_FOUND;
    snprintf(name, length, "%s", buf); /* the executable, truncated to length as NVML does */
    return NVML_SUCCESS;
}

/* ---------------------------------------------------------------- enumeration and handles */
TW_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *count)
{
    if (!tw_nvml_initialized()) return NVML_ERROR_UNINITIALIZED;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = (unsigned)tw_nvml_count();
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) { return nvmlDeviceGetCount(count); }

TW_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
    if (!tw_nvml_initialized()) return NVML_ERROR_UNINITIALIZED;
    if (!device || index >= (unsigned)tw_nvml_count()) return NVML_ERROR_INVALID_ARGUMENT;
    *device = &tw_nvml_devices[index];
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    return nvmlDeviceGetHandleByIndex(index, device);
}

void tw_nvml_format_uuid(int dev, char *out, size_t len);

TW_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    if (!tw_nvml_initialized()) return NVML_ERROR_UNINITIALIZED;
    if (!uuid || !device) return NVML_ERROR_INVALID_ARGUMENT;
    char buf[96];
    for (int i = 0; i < tw_nvml_count(); i++) {
        tw_nvml_format_uuid(i, buf, sizeof buf);
        if (strcasecmp(buf, uuid) == 0) {
            *device = &tw_nvml_devices[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

void tw_nvml_format_serial(int dev, char *out, size_t len);

TW_EXPORT nvmlReturn_t nvmlDeviceGetHandleBySerial(const char *serial, nvmlDevice_t *device)
{
    if (!tw_nvml_initialized()) return NVML_ERROR_UNINITIALIZED;
    if (!serial || !device) return NVML_ERROR_INVALID_ARGUMENT;
    char buf[32];
    for (int i = 0; i < tw_nvml_count(); i++) {
        tw_nvml_format_serial(i, buf, sizeof buf);
        if (strcmp(buf, serial) == 0) {
            *device = &tw_nvml_devices[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

/* "dddddddd:bb:dd.f", "dddd:bb:dd.f" or "bb:dd.f" (hex, any case) */
static int parse_bus_id(const char *s, unsigned *dom, unsigned *bus, unsigned *devn, unsigned *fn)
{
    unsigned a, b, c, d;
    char tail;
    if (sscanf(s, "%x:%x:%x.%x%c", &a, &b, &c, &d, &tail) == 4) {
        *dom = a; *bus = b; *devn = c; *fn = d;
        return 0;
    }
    if (sscanf(s, "%x:%x.%x%c", &b, &c, &d, &tail) == 3) {
        *dom = 0; *bus = b; *devn = c; *fn = d;
        return 0;
    }
    return -1;
}

void tw_nvml_pci_loc(int dev, unsigned *domain, unsigned *bus, unsigned *device, unsigned *function)
{
    char buf[64] = {0};
    tw_physical_pci_bus_id(dev, buf, sizeof buf);
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (parse_bus_id(buf, &a, &b, &c, &d) != 0) { a = 0; b = (unsigned)dev + 1; c = 0; d = 0; }
    if (domain) *domain = a;
    if (bus) *bus = b;
    if (device) *device = c;
    if (function) *function = d;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
    if (!tw_nvml_initialized()) return NVML_ERROR_UNINITIALIZED;
    if (!pciBusId || !device) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned dom, bus, dv, fn;
    if (parse_bus_id(pciBusId, &dom, &bus, &dv, &fn) != 0) return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < tw_nvml_count(); i++) {
        unsigned a, b, c, d;
        tw_nvml_pci_loc(i, &a, &b, &c, &d);
        if (a == dom && b == bus && c == dv && d == fn) {
            *device = &tw_nvml_devices[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device)
{
    return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}
