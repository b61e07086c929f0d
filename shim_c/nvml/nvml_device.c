/* Fake NVML: per-device queries (identity, PCI, memory, clocks, power, thermals, modes, processes).
 * Values come from the core's catalog entry (tw_gpu_spec) and its memory accounting; constants that the
 * catalog does not carry are the real H200's readings (predictors/data/h200/device_probe_*.json). */
#include <stdio.h>
#include <unistd.h>

#include "nvml_internal.h"

#define CHECK_DEV(h, dev, spec)                                  \
    int dev = 0;                                                 \
    const tw_gpu_spec *spec = NULL;                              \
    do {                                                         \
        nvmlReturn_t r_ = tw_nvml_dev((h), &dev, &spec);         \
        if (r_ != NVML_SUCCESS) return r_;                       \
    } while (0)

#define NEED(p) do { if (!(p)) return NVML_ERROR_INVALID_ARGUMENT; } while (0)

/* ---------------------------------------------------------------- derived facts */
int tw_nvml_arch(const tw_gpu_spec *s)
{
    switch (s->cc_major) {
    case 7: return s->cc_minor >= 5 ? NVML_DEVICE_ARCH_TURING : NVML_DEVICE_ARCH_VOLTA;
    case 8: return s->cc_minor >= 9 ? NVML_DEVICE_ARCH_ADA : NVML_DEVICE_ARCH_AMPERE;
    case 9: return NVML_DEVICE_ARCH_HOPPER;
    case 10: case 11: case 12: return NVML_DEVICE_ARCH_BLACKWELL;
    default: return NVML_DEVICE_ARCH_UNKNOWN;
    }
}

static unsigned cores_per_sm(const tw_gpu_spec *s)
{
    if (s->cc_major == 8 && s->cc_minor == 0) return 64;   /* A100 */
    if (s->cc_major == 7) return 64;
    return 128;                                             /* GA10x, AD10x, GH100 (132*128 = 16896), GB100 */
}

int tw_nvml_nvlink_count(const tw_gpu_spec *s)
{
    if (s->cc_major == 8 && s->cc_minor == 0) return 12;   /* A100 SXM: NVLink 3, 12 links */
    if (s->cc_major == 9 || s->cc_major == 10) return 18;  /* H100/H200 (NVLink 4), B200 (NVLink 5) */
    return 0;                                               /* PCIe cards */
}

unsigned tw_nvml_nvlink_speed_mbps(const tw_gpu_spec *s)
{
    switch (tw_nvml_nvlink_version(s)) {
    case NVML_NVLINK_VERSION_3_0: return 25000;
    case NVML_NVLINK_VERSION_4_0: return 26562;
    case NVML_NVLINK_VERSION_5_0: return 53125;
    default: return 0;
    }
}

int tw_nvml_nvlink_version(const tw_gpu_spec *s)
{
    if (s->cc_major == 8 && s->cc_minor == 0) return NVML_NVLINK_VERSION_3_0;
    if (s->cc_major == 9) return NVML_NVLINK_VERSION_4_0;
    if (s->cc_major == 10) return NVML_NVLINK_VERSION_5_0;
    return 0;
}

/* Idle draw: the H200 read 107.5 W against its 700 W limit. */
unsigned tw_nvml_power_usage_mw(const tw_gpu_spec *s)
{
    unsigned lim = s->power_limit_mw > 0 ? (unsigned)s->power_limit_mw : 700000u;
    return (unsigned)((unsigned long long)lim * 1536 / 10000);
}

int tw_nvml_temperature(const tw_gpu_spec *s) { (void)s; return 34; }

int tw_nvml_temperature_threshold(int which)
{
    switch (which) {
    case NVML_TEMPERATURE_THRESHOLD_SHUTDOWN: return 92;
    case NVML_TEMPERATURE_THRESHOLD_SLOWDOWN: return 89;
    case NVML_TEMPERATURE_THRESHOLD_MEM_MAX: return 95;
    case NVML_TEMPERATURE_THRESHOLD_GPU_MAX: return 87;
    default: return -1;
    }
}

unsigned long long tw_nvml_energy_mj(const tw_gpu_spec *s)
{
    /* mW * ns / 1e9 = mJ, over the virtual time since the epoch */
    return (unsigned long long)((double)tw_nvml_power_usage_mw(s) * (double)tw_now() / 1e9);
}

void tw_nvml_format_uuid(int dev, char *out, size_t len)
{
    unsigned char u[16];
    tw_physical_uuid(dev, u);
    snprintf(out, len, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
}

/* 13 decimal digits like the real board serials ("1653924042947"), stable per virtual device */
void tw_nvml_format_serial(int dev, char *out, size_t len)
{
    unsigned char u[16];
    tw_physical_uuid(dev, u);
    unsigned long long v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | u[i];
    snprintf(out, len, "165%010llu", v % 10000000000ull);
}

void tw_nvml_fill_pci(int dev, nvmlPciInfo_t *p)
{
    const tw_gpu_spec *s = tw_physical_spec(dev);
    unsigned dom, bus, dv, fn;
    tw_nvml_pci_loc(dev, &dom, &bus, &dv, &fn);
    memset(p, 0, sizeof *p);
    snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "%04X:%02X:%02X.%X", dom & 0xffff, bus, dv, fn);
    snprintf(p->busId, sizeof p->busId, "%08X:%02X:%02X.%X", dom, bus, dv, fn);
    p->domain = dom;
    p->bus = bus;
    p->device = dv;
    p->pciDeviceId = s ? (unsigned)s->pci_device_id : 0;
    p->pciSubSystemId = s ? (unsigned)s->pci_subsystem_id : 0;
}

/* ---------------------------------------------------------------- identity */
TW_EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t h, char *name, unsigned int length)
{
    CHECK_DEV(h, dev, s);
    (void)dev;
    return tw_nvml_str(name, length, s->name);
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t h, char *uuid, unsigned int length)
{
    CHECK_DEV(h, dev, s);
    (void)s;
    char buf[96];
    tw_nvml_format_uuid(dev, buf, sizeof buf);
    return tw_nvml_str(uuid, length, buf);
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t h, char *serial, unsigned int length)
{
    CHECK_DEV(h, dev, s);
    (void)s;
    char buf[32];
    tw_nvml_format_serial(dev, buf, sizeof buf);
    return tw_nvml_str(serial, length, buf);
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t h, unsigned int *index)
{
    CHECK_DEV(h, dev, s);
    (void)s;
    NEED(index);
    *index = (unsigned)dev;
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t h, unsigned int *minor)
{
    CHECK_DEV(h, dev, s);
    (void)s;
    NEED(minor);
    *minor = (unsigned)dev;
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetModuleId(nvmlDevice_t h, unsigned int *id)
{
    CHECK_DEV(h, dev, s);
    (void)s;
    NEED(id);
    *id = (unsigned)dev + 1;
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetBoardPartNumber(nvmlDevice_t h, char *part, unsigned int length)
{
    CHECK_DEV(h, dev, s);
    (void)dev;
    if (!s->board_part || !*s->board_part) return NVML_ERROR_NOT_SUPPORTED;
    return tw_nvml_str(part, length, s->board_part);
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t h, char *version, unsigned int length)
{
    CHECK_DEV(h, dev, s);
    (void)dev;
    return tw_nvml_str(version, length, s->vbios && *s->vbios ? s->vbios : "96.00.A5.00.1A");
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetInforomImageVersion(nvmlDevice_t h, char *version, unsigned int length)
{
    CHECK_DEV(h, dev, s);
    (void)dev;
    /* the image version is "G" + the board's 3-digit SKU + "." + its variant, as on the H200 (G520.0282.02.02) */
    char buf[32];
    const char *bp = s->board_part;
    unsigned sku = 0, var = 0;
    if (bp && sscanf(bp, "%*u-%*c%u-%u", &sku, &var) == 2)
        snprintf(buf, sizeof buf, "G%03u.%04u.02.02", sku, var);
    else
        snprintf(buf, sizeof buf, "G520.0282.02.02");
    return tw_nvml_str(version, length, buf);
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t h, int *type)
{
    CHECK_DEV(h, dev, s);
    (void)dev; (void)s;
    NEED(type);
    *type = NVML_BRAND_NVIDIA;
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t h, unsigned int *arch)
{
    CHECK_DEV(h, dev, s);
    (void)dev;
    NEED(arch);
    *arch = (unsigned)tw_nvml_arch(s);
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t h, int *major, int *minor)
{
    CHECK_DEV(h, dev, s);
    (void)dev;
    NEED(major && minor);
    *major = s->cc_major;
    *minor = s->cc_minor;
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetNumGpuCores(nvmlDevice_t h, unsigned int *n)
{
    CHECK_DEV(h, dev, s);
    (void)dev;
    NEED(n);
    *n = (unsigned)s->sm_count * cores_per_sm(s);
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetMemoryBusWidth(nvmlDevice_t h, unsigned int *w)
{
    CHECK_DEV(h, dev, s);
    (void)dev;
    NEED(w);
    *w = (unsigned)s->memory_bus_width;
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetBoardId(nvmlDevice_t h, unsigned int *id)
{
    CHECK_DEV(h, dev, s);
    (void)s;
    NEED(id);
    unsigned bus;
    tw_nvml_pci_loc(dev, NULL, &bus, NULL, NULL);
    *id = bus << 8 | 0x6; /* the H200 (bus 0) read 0x6; distinct per board */
    if (bus == 0) *id = 0x6 + (unsigned)dev;
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetMultiGpuBoard(nvmlDevice_t h, unsigned int *multi)
{
    CHECK_DEV(h, dev, s);
    (void)dev; (void)s;
    NEED(multi);
    *multi = 0;
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetDisplayMode(nvmlDevice_t h, nvmlEnableState_t *m)
{
    CHECK_DEV(h, dev, s);
    (void)dev; (void)s;
    NEED(m);
    *m = NVML_FEATURE_ENABLED; /* what the H200 reports */
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetDisplayActive(nvmlDevice_t h, nvmlEnableState_t *m)
{
    CHECK_DEV(h, dev, s);
    (void)dev; (void)s;
    NEED(m);
    *m = NVML_FEATURE_DISABLED;
    return NVML_SUCCESS;
}

/* ---------------------------------------------------------------- PCI */
TW_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t h, nvmlPciInfo_t *pci)
{
    CHECK_DEV(h, dev, s);
    (void)s;
    NEED(pci);
    tw_nvml_fill_pci(dev, pci);
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t h, tw_nvmlPciInfo_v2 *pci)
{
    CHECK_DEV(h, dev, s);
    (void)s;
    NEED(pci);
    nvmlPciInfo_t p;
    tw_nvml_fill_pci(dev, &p);
    memset(pci, 0, sizeof *pci);
    memcpy(pci->busId, p.busIdLegacy, sizeof pci->busId);
    pci->domain = p.domain; pci->bus = p.bus; pci->device = p.device;
    pci->pciDeviceId = p.pciDeviceId; pci->pciSubSystemId = p.pciSubSystemId;
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t h, tw_nvmlPciInfo_v1 *pci)
{
    CHECK_DEV(h, dev, s);
    (void)s;
    NEED(pci);
    nvmlPciInfo_t p;
    tw_nvml_fill_pci(dev, &p);
    memcpy(pci->busId, p.busIdLegacy, sizeof pci->busId);
    pci->domain = p.domain; pci->bus = p.bus; pci->device = p.device;
    pci->pciDeviceId = p.pciDeviceId; pci->pciSubSystemId = p.pciSubSystemId;
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetPciInfoExt(nvmlDevice_t h, nvmlPciInfoExt_v1_t *pci)
{
    CHECK_DEV(h, dev, s);
    (void)s;
    NEED(pci);
    if (pci->version != TW_NVML_STRUCT_VERSION(nvmlPciInfoExt_v1_t, 1)) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    nvmlPciInfo_t p;
    tw_nvml_fill_pci(dev, &p);
    pci->domain = p.domain; pci->bus = p.bus; pci->device = p.device;
    pci->pciDeviceId = p.pciDeviceId; pci->pciSubSystemId = p.pciSubSystemId;
    pci->baseClass = 0x3; /* display controller, 3D (what the H200 reports) */
    pci->subClass = 0x2;
    memcpy(pci->busId, p.busId, sizeof pci->busId);
    return NVML_SUCCESS;
}

#define PCIE_GETTER(fn, value)                                  \
    TW_EXPORT nvmlReturn_t fn(nvmlDevice_t h, unsigned int *v)  \
    {                                                           \
        CHECK_DEV(h, dev, s);                                   \
        (void)dev; (void)s;                                     \
        NEED(v);                                                \
        *v = (value);                                           \
        return NVML_SUCCESS;                                    \
    }
PCIE_GETTER(nvmlDeviceGetCurrPcieLinkGeneration, s->cc_major >= 10 ? 6u : (s->cc_major >= 9 ? 5u : 4u))
PCIE_GETTER(nvmlDeviceGetMaxPcieLinkGeneration, s->cc_major >= 10 ? 6u : (s->cc_major >= 9 ? 5u : 4u))
PCIE_GETTER(nvmlDeviceGetGpuMaxPcieLinkGeneration, s->cc_major >= 10 ? 6u : (s->cc_major >= 9 ? 5u : 4u))
PCIE_GETTER(nvmlDeviceGetCurrPcieLinkWidth, 16u)
PCIE_GETTER(nvmlDeviceGetMaxPcieLinkWidth, 16u)
PCIE_GETTER(nvmlDeviceGetPcieLinkMaxSpeed, s->cc_major >= 10 ? 6u : (s->cc_major >= 9 ? 5u : 4u))
PCIE_GETTER(nvmlDeviceGetPcieReplayCounter, 0u)
PCIE_GETTER(nvmlDeviceGetNumFans, 0u)

/* ---------------------------------------------------------------- memory */
static void mem_numbers(int dev, const tw_gpu_spec *s, unsigned long long *total, unsigned long long *reserved,
                        unsigned long long *free_b)
{
    size_t fr = 0, tot = 0;
    tw_physical_mem_info(dev, &fr, &tot);
    unsigned long long nvml_total = s->nvml_total_mem ? s->nvml_total_mem : (unsigned long long)tot;
    unsigned long long cuda_total = s->total_mem ? s->total_mem : (unsigned long long)tot;
    if ((unsigned long long)fr > nvml_total) fr = (size_t)nvml_total;
    *total = nvml_total;
    *reserved = nvml_total > cuda_total ? nvml_total - cuda_total : 0; /* firmware/driver carve-out */
    *free_b = fr;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t *m)
{
    CHECK_DEV(h, dev, s);
    NEED(m);
    unsigned long long total, reserved, fr;
    mem_numbers(dev, s, &total, &reserved, &fr);
    m->total = total;
    m->free = fr;
    m->used = total - fr;
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t h, nvmlMemory_v2_t *m)
{
    CHECK_DEV(h, dev, s);
    NEED(m);
    if (m->version != TW_NVML_STRUCT_VERSION(nvmlMemory_v2_t, 2)) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    unsigned long long total, reserved, fr;
    mem_numbers(dev, s, &total, &reserved, &fr);
    m->total = total;
    m->reserved = reserved;
    m->free = fr;
    m->used = total - fr > reserved ? total - fr - reserved : 0;
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_t h, nvmlBAR1Memory_t *b)
{
    CHECK_DEV(h, dev, s);
    (void)dev;
    NEED(b);
    unsigned long long total = 1ull << 30;
    while (total < s->nvml_total_mem) total <<= 1; /* 256 GiB on H200/B200, 128 GiB on H100/A100 80GB */
    b->bar1Total = total;
    b->bar1Used = 554172416ull; /* the H200's reading */
    b->bar1Free = total - b->bar1Used;
    return NVML_SUCCESS;
}

/* ---------------------------------------------------------------- processes */
static nvmlReturn_t running_processes(nvmlDevice_t h, unsigned int *count, void *infos, int v1)
{
    CHECK_DEV(h, dev, s);
    NEED(count);
    size_t fr = 0, tot = 0;
    tw_physical_mem_info(dev, &fr, &tot);
    unsigned long long cuda_total = s->total_mem ? s->total_mem : (unsigned long long)tot;
    unsigned long long used = cuda_total > fr ? cuda_total - fr : 0;
    unsigned n = used > 0 ? 1 : 0; /* this process, once it holds memory (context or allocations) */
    if (*count < n || (n && !infos)) {
        *count = n;
        return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    *count = n;
    if (n) {
        if (v1) {
            tw_nvmlProcessInfo_v1 *p = infos;
            p->pid = (unsigned)getpid();
            p->usedGpuMemory = used;
        } else {
            nvmlProcessInfo_t *p = infos;
            p->pid = (unsigned)getpid();
            p->usedGpuMemory = used;
            p->gpuInstanceId = 0xffffffffu;
            p->computeInstanceId = 0xffffffffu;
        }
    }
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t h, unsigned int *c, void *i)
{
    return running_processes(h, c, i, 1);
}
TW_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t h, unsigned int *c, nvmlProcessInfo_t *i)
{
    return running_processes(h, c, i, 0);
}
TW_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t h, unsigned int *c, nvmlProcessInfo_t *i)
{
    return running_processes(h, c, i, 0);
}

/* ---------------------------------------------------------------- clocks */
static nvmlReturn_t clock_value(const tw_gpu_spec *s, int type, unsigned *mhz)
{
    switch (type) {
    case NVML_CLOCK_GRAPHICS:
    case NVML_CLOCK_SM: *mhz = (unsigned)s->sm_clock_mhz; return NVML_SUCCESS;
    case NVML_CLOCK_MEM: *mhz = (unsigned)s->mem_clock_mhz; return NVML_SUCCESS;
    case NVML_CLOCK_VIDEO: *mhz = (unsigned)((long long)s->sm_clock_mhz * 1545 / 1980); return NVML_SUCCESS;
    default: return NVML_ERROR_INVALID_ARGUMENT;
    }
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t h, int type, unsigned int *clock)
{
    CHECK_DEV(h, dev, s);
    (void)dev;
    NEED(clock);
    return clock_value(s, type, clock);
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t h, int type, unsigned int *clock)
{
    return nvmlDeviceGetClockInfo(h, type, clock);
}

/* Application clocks: the real device has none for the video domain. */
TW_EXPORT nvmlReturn_t nvmlDeviceGetApplicationsClock(nvmlDevice_t h, int type, unsigned int *clock)
{
    CHECK_DEV(h, dev, s);
    (void)dev;
    NEED(clock);
    if (type == NVML_CLOCK_VIDEO) return NVML_ERROR_NOT_SUPPORTED;
    return clock_value(s, type, clock);
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t h, int type, unsigned int *clock)
{
    return nvmlDeviceGetApplicationsClock(h, type, clock);
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetClock(nvmlDevice_t h, int type, int id, unsigned int *clock)
{
    CHECK_DEV(h, dev, s);
    (void)dev;
    NEED(clock);
    if (id < NVML_CLOCK_ID_CURRENT || id > NVML_CLOCK_ID_CUSTOMER_BOOST_MAX) return NVML_ERROR_INVALID_ARGUMENT;
    if (id != NVML_CLOCK_ID_CURRENT && type == NVML_CLOCK_VIDEO) return NVML_ERROR_NOT_SUPPORTED;
    return clock_value(s, type, clock);
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t h, unsigned long long *r)
{
    CHECK_DEV(h, dev, s);
    (void)dev; (void)s;
    NEED(r);
    *r = 0;
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t h, unsigned long long *r)
{
    return nvmlDeviceGetCurrentClocksThrottleReasons(h, r);
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetSupportedClocksThrottleReasons(nvmlDevice_t h, unsigned long long *r)
{
    CHECK_DEV(h, dev, s);
    (void)dev; (void)s;
    NEED(r);
    *r = 0x1ffull; /* idle .. display clock setting */
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetSupportedClocksEventReasons(nvmlDevice_t h, unsigned long long *r)
{
    return nvmlDeviceGetSupportedClocksThrottleReasons(h, r);
}

/* ---------------------------------------------------------------- power, thermals, state */
TW_EXPORT nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t h, unsigned int *mw)
{
    CHECK_DEV(h, dev, s);
    (void)dev;
    NEED(mw);
    *mw = tw_nvml_power_usage_mw(s);
    return NVML_SUCCESS;
}

static unsigned power_limit(const tw_gpu_spec *s)
{
    return s->power_limit_mw > 0 ? (unsigned)s->power_limit_mw : 700000u;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t h, unsigned int *mw)
{
    CHECK_DEV(h, dev, s);
    (void)dev;
    NEED(mw);
    *mw = power_limit(s);
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t h, unsigned int *mw)
{
    return nvmlDeviceGetPowerManagementLimit(h, mw);
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t h, unsigned int *mw)
{
    return nvmlDeviceGetPowerManagementLimit(h, mw);
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t h, unsigned int *mn, unsigned int *mx)
{
    CHECK_DEV(h, dev, s);
    (void)dev;
    NEED(mn && mx);
    *mn = 200000;
    *mx = power_limit(s);
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetPowerManagementMode(nvmlDevice_t h, nvmlEnableState_t *m)
{
    CHECK_DEV(h, dev, s);
    (void)dev; (void)s;
    NEED(m);
    *m = NVML_FEATURE_ENABLED;
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t h, unsigned long long *mj)
{
    CHECK_DEV(h, dev, s);
    (void)dev;
    NEED(mj);
    *mj = tw_nvml_energy_mj(s);
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t h, int sensor, unsigned int *t)
{
    CHECK_DEV(h, dev, s);
    (void)dev;
    NEED(t);
    if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    *t = (unsigned)tw_nvml_temperature(s);
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureV(nvmlDevice_t h, nvmlTemperature_v1_t *t)
{
    CHECK_DEV(h, dev, s);
    (void)dev;
    NEED(t);
    if (t->version != TW_NVML_STRUCT_VERSION(nvmlTemperature_v1_t, 1)) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    if (t->sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
    t->temperature = tw_nvml_temperature(s);
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t h, int which, unsigned int *t)
{
    CHECK_DEV(h, dev, s);
    (void)dev; (void)s;
    NEED(t);
    int v = tw_nvml_temperature_threshold(which);
    if (v < 0) return NVML_ERROR_NOT_SUPPORTED;
    *t = (unsigned)v;
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t h, nvmlUtilization_t *u)
{
    CHECK_DEV(h, dev, s);
    (void)dev; (void)s;
    NEED(u);
    /* the core does not expose per-device busy time yet */
    u->gpu = 0;
    u->memory = 0;
    return NVML_SUCCESS;
}

#define STATE_GETTER(fn, type, value)                           \
    TW_EXPORT nvmlReturn_t fn(nvmlDevice_t h, type *v)          \
    {                                                           \
        CHECK_DEV(h, dev, s);                                   \
        (void)dev; (void)s;                                     \
        NEED(v);                                                \
        *v = (value);                                           \
        return NVML_SUCCESS;                                    \
    }
STATE_GETTER(nvmlDeviceGetComputeMode, int, NVML_COMPUTEMODE_DEFAULT)
STATE_GETTER(nvmlDeviceGetPersistenceMode, nvmlEnableState_t, NVML_FEATURE_ENABLED)
STATE_GETTER(nvmlDeviceGetPerformanceState, int, NVML_PSTATE_0)
STATE_GETTER(nvmlDeviceGetPowerState, int, NVML_PSTATE_0)

TW_EXPORT nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t h, nvmlEnableState_t *cur, nvmlEnableState_t *pend)
{
    CHECK_DEV(h, dev, s);
    (void)dev; (void)s;
    NEED(cur && pend);
    *cur = NVML_FEATURE_ENABLED;
    *pend = NVML_FEATURE_ENABLED;
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t h, unsigned int *cur, unsigned int *pend)
{
    CHECK_DEV(h, dev, s);
    (void)dev;
    NEED(cur && pend);
    if (s->cc_major < 8 || (s->cc_major == 8 && s->cc_minor != 0)) return NVML_ERROR_NOT_SUPPORTED;
    *cur = 0;
    *pend = 0;
    return NVML_SUCCESS;
}

static nvmlReturn_t attributes(nvmlDevice_t h, nvmlDeviceAttributes_t *a)
{
    CHECK_DEV(h, dev, s);
    (void)dev;
    NEED(a);
    memset(a, 0, sizeof *a);
    a->multiprocessorCount = (unsigned)s->sm_count;
    a->sharedCopyEngineCount = 0;
    a->sharedDecoderCount = s->cc_major >= 9 ? 7 : 5;
    a->sharedEncoderCount = 0;
    a->sharedJpegCount = s->cc_major >= 9 ? 7 : 1;
    a->sharedOfaCount = 1;
    a->gpuInstanceSliceCount = 7;
    a->computeInstanceSliceCount = 7;
    a->memorySizeMB = (s->nvml_total_mem ? s->nvml_total_mem : s->total_mem) >> 20;
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetAttributes(nvmlDevice_t h, nvmlDeviceAttributes_t *a) { return attributes(h, a); }
TW_EXPORT nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t h, nvmlDeviceAttributes_t *a) { return attributes(h, a); }
