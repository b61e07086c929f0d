/* Fake NVML: interconnect and placement (P2P, NVLink, PCIe topology, CPU/NUMA affinity, field values).
 *
 * The virtual box is an HGX/DGX-style SXM board: every GPU's NVLinks go to NVSwitches (A100: 12 links over
 * 6 NVSwitch gen2; H100/H200: 18 links over 4 NVSwitch gen3, split 5/4/4/5; B200: 18 links over 2 NVLink-5
 * switch chips), so peers are reached through switches and NVML reports the switch as the remote end, as on
 * real hardware. PCIe: GPUs 0-3 hang off CPU socket 0, 4-7 off socket 1, each behind its own PCIe switch,
 * so the common ancestor of two GPUs is NODE within a socket and SYSTEM across sockets. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "nvml_internal.h"

#define GPUS_PER_SOCKET 4

static int socket_of(int dev) { return dev / GPUS_PER_SOCKET; }

TW_EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t a, nvmlDevice_t b, int caps, int *status)
{
    int da, db;
    nvmlReturn_t r = tw_nvml_dev(a, &da, NULL);
    if (r) return r;
    if ((r = tw_nvml_dev(b, &db, NULL))) return r;
    if (!status || caps < 0 || caps >= NVML_P2P_CAPS_INDEX_UNKNOWN) return NVML_ERROR_INVALID_ARGUMENT;
    const tw_gpu_spec *s = tw_physical_spec(da);
    if (caps == NVML_P2P_CAPS_INDEX_NVLINK && (!s || tw_nvml_nvlink_count(s) == 0)) {
        *status = NVML_P2P_STATUS_NOT_SUPPORTED;
        return NVML_SUCCESS;
    }
    *status = NVML_P2P_STATUS_OK;
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t a, nvmlDevice_t b, int *level)
{
    int da, db;
    nvmlReturn_t r = tw_nvml_dev(a, &da, NULL);
    if (r) return r;
    if ((r = tw_nvml_dev(b, &db, NULL))) return r;
    if (!level) return NVML_ERROR_INVALID_ARGUMENT;
    if (da == db) *level = NVML_TOPOLOGY_INTERNAL;
    else if (socket_of(da) == socket_of(db)) *level = NVML_TOPOLOGY_NODE;
    else *level = NVML_TOPOLOGY_SYSTEM;
    return NVML_SUCCESS;
}

/* ---------------------------------------------------------------- NVLink */
static nvmlReturn_t link_check(nvmlDevice_t h, unsigned link, int *dev, const tw_gpu_spec **s)
{
    nvmlReturn_t r = tw_nvml_dev(h, dev, s);
    if (r) return r;
    if (link >= TW_NVML_LINK_SLOTS) return NVML_ERROR_INVALID_ARGUMENT;
    if ((int)link >= tw_nvml_nvlink_count(*s)) return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t h, unsigned int link, nvmlEnableState_t *active)
{
    int dev;
    const tw_gpu_spec *s;
    nvmlReturn_t r = link_check(h, link, &dev, &s);
    if (r) return r;
    if (!active) return NVML_ERROR_INVALID_ARGUMENT;
    *active = NVML_FEATURE_ENABLED;
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t h, unsigned int link, unsigned int *version)
{
    int dev;
    const tw_gpu_spec *s;
    nvmlReturn_t r = link_check(h, link, &dev, &s);
    if (r) return r;
    if (!version) return NVML_ERROR_INVALID_ARGUMENT;
    *version = (unsigned)tw_nvml_nvlink_version(s);
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkCapability(nvmlDevice_t h, unsigned int link, int cap, unsigned int *res)
{
    int dev;
    const tw_gpu_spec *s;
    nvmlReturn_t r = link_check(h, link, &dev, &s);
    if (r) return r;
    if (!res) return NVML_ERROR_INVALID_ARGUMENT;
    switch (cap) {
    case NVML_NVLINK_CAP_P2P_SUPPORTED:
    case NVML_NVLINK_CAP_P2P_ATOMICS:
    case NVML_NVLINK_CAP_VALID: *res = 1; break;
    case NVML_NVLINK_CAP_SYSMEM_ACCESS:
    case NVML_NVLINK_CAP_SYSMEM_ATOMICS:
    case NVML_NVLINK_CAP_SLI_BRIDGE: *res = 0; break;
    default: return NVML_ERROR_INVALID_ARGUMENT;
    }
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t h, unsigned int link, int *type)
{
    int dev;
    const tw_gpu_spec *s;
    nvmlReturn_t r = link_check(h, link, &dev, &s);
    if (r) return r;
    if (!type) return NVML_ERROR_INVALID_ARGUMENT;
    *type = NVML_NVLINK_DEVICE_TYPE_SWITCH;
    return NVML_SUCCESS;
}

/* The NVSwitch at the far end of a link: which switch, and its PCI identity. */
static void switch_pci(const tw_gpu_spec *s, unsigned link, nvmlPciInfo_t *p)
{
    unsigned sw, dev_id;
    if (s->cc_major == 8) {                   /* 6 x NVSwitch gen2, 2 links each */
        sw = link / 2;
        dev_id = 0x1af110deu;
    } else if (s->cc_major == 9) {            /* 4 x NVSwitch gen3: links 5/4/4/5 */
        sw = link < 5 ? 0 : link < 9 ? 1 : link < 13 ? 2 : 3;
        dev_id = 0x22a310deu;
    } else {                                  /* 2 NVLink-5 switch chips, 9 links each */
        sw = link / 9;
        dev_id = (0x2901u << 16) | 0x10deu;  /* assumed id; not read off a B200 system */
    }
    memset(p, 0, sizeof *p);
    p->domain = 0;
    p->bus = 0xc0 + sw; /* a bus range no virtual GPU uses */
    p->device = 0;
    p->pciDeviceId = dev_id;
    p->pciSubSystemId = dev_id;
    snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "0000:%02X:00.0", (p->bus & 0xff));
    snprintf(p->busId, sizeof p->busId, "00000000:%02X:00.0", (p->bus & 0xff));
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t h, unsigned int link, nvmlPciInfo_t *pci)
{
    int dev;
    const tw_gpu_spec *s;
    nvmlReturn_t r = link_check(h, link, &dev, &s);
    if (r) return r;
    if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
    switch_pci(s, link, pci);
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t h, unsigned int link, tw_nvmlPciInfo_v2 *pci)
{
    int dev;
    const tw_gpu_spec *s;
    nvmlReturn_t r = link_check(h, link, &dev, &s);
    if (r) return r;
    if (!pci) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlPciInfo_t p;
    switch_pci(s, link, &p);
    memset(pci, 0, sizeof *pci);
    memcpy(pci->busId, p.busIdLegacy, sizeof pci->busId);
    pci->domain = p.domain; pci->bus = p.bus; pci->device = p.device;
    pci->pciDeviceId = p.pciDeviceId; pci->pciSubSystemId = p.pciSubSystemId;
    return NVML_SUCCESS;
}

/* ---------------------------------------------------------------- CPU / NUMA placement */
/* NUMA nodes of the emulation host (the program will bind to them, so they must exist here). */
static int host_numa_nodes(void)
{
    int n = 0;
    char path[64];
    struct stat st;
    for (;; n++) {
        snprintf(path, sizeof path, "/sys/devices/system/node/node%d", n);
        if (stat(path, &st) != 0) break;
    }
    return n > 0 ? n : 1;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetNumaNodeId(nvmlDevice_t h, unsigned int *node)
{
    int dev;
    nvmlReturn_t r = tw_nvml_dev(h, &dev, NULL);
    if (r) return r;
    if (!node) return NVML_ERROR_INVALID_ARGUMENT;
    *node = (unsigned)(socket_of(dev) % host_numa_nodes());
    return NVML_SUCCESS;
}

/* The CPUs this process may run on: the virtual box's topology is not imposed on the emulation host. */
static nvmlReturn_t cpu_mask(nvmlDevice_t h, unsigned size, unsigned long *set)
{
    int dev;
    nvmlReturn_t r = tw_nvml_dev(h, &dev, NULL);
    if (r) return r;
    if (!set || size == 0) return NVML_ERROR_INVALID_ARGUMENT;
    memset(set, 0, size * sizeof(unsigned long));
    cpu_set_t cs;
    CPU_ZERO(&cs);
    if (sched_getaffinity(0, sizeof cs, &cs) != 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        for (long i = 0; i < n && i < CPU_SETSIZE; i++) CPU_SET(i, &cs);
    }
    const unsigned bits = 8 * sizeof(unsigned long);
    for (unsigned i = 0; i < CPU_SETSIZE && i / bits < size; i++)
        if (CPU_ISSET(i, &cs)) set[i / bits] |= 1ul << (i % bits);
    return NVML_SUCCESS;
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetCpuAffinity(nvmlDevice_t h, unsigned int size, unsigned long *set)
{
    return cpu_mask(h, size, set);
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetCpuAffinityWithinScope(nvmlDevice_t h, unsigned int size, unsigned long *set,
                                                           int scope)
{
    if (scope != NVML_AFFINITY_SCOPE_NODE && scope != NVML_AFFINITY_SCOPE_SOCKET) return NVML_ERROR_INVALID_ARGUMENT;
    return cpu_mask(h, size, set);
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetMemoryAffinity(nvmlDevice_t h, unsigned int size, unsigned long *set, int scope)
{
    int dev;
    nvmlReturn_t r = tw_nvml_dev(h, &dev, NULL);
    if (r) return r;
    if (!set || size == 0) return NVML_ERROR_INVALID_ARGUMENT;
    if (scope != NVML_AFFINITY_SCOPE_NODE && scope != NVML_AFFINITY_SCOPE_SOCKET) return NVML_ERROR_INVALID_ARGUMENT;
    memset(set, 0, size * sizeof(unsigned long));
    set[0] = 1ul << (socket_of(dev) % host_numa_nodes());
    return NVML_SUCCESS;
}

/* ---------------------------------------------------------------- field values */
static void set_ui(nvmlFieldValue_t *f, unsigned v)
{
    f->valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
    f->value.ullVal = 0;
    f->value.uiVal = v;
}

static void set_ull(nvmlFieldValue_t *f, unsigned long long v)
{
    f->valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
    f->value.ullVal = v;
}

static nvmlReturn_t field_value(int dev, const tw_gpu_spec *s, nvmlFieldValue_t *f)
{
    unsigned id = f->fieldId;
    int links = tw_nvml_nvlink_count(s);
    unsigned plim = s->power_limit_mw > 0 ? (unsigned)s->power_limit_mw : 700000u;
    (void)dev;
    if ((id >= NVML_FI_DEV_NVLINK_SPEED_MBPS_L0 && id <= NVML_FI_DEV_NVLINK_SPEED_MBPS_L0 + 5) ||
        (id >= NVML_FI_DEV_NVLINK_SPEED_MBPS_L6 && id <= NVML_FI_DEV_NVLINK_SPEED_MBPS_L6 + 5)) {
        unsigned link = id <= NVML_FI_DEV_NVLINK_SPEED_MBPS_L0 + 5 ? id - NVML_FI_DEV_NVLINK_SPEED_MBPS_L0
                                                                  : id - NVML_FI_DEV_NVLINK_SPEED_MBPS_L6 + 6;
        if ((int)link >= links) return NVML_ERROR_NOT_SUPPORTED;
        set_ui(f, tw_nvml_nvlink_speed_mbps(s));
        return NVML_SUCCESS;
    }
    switch (id) {
    case NVML_FI_DEV_ECC_CURRENT:
    case NVML_FI_DEV_ECC_PENDING: set_ui(f, 1); return NVML_SUCCESS;
    case NVML_FI_DEV_MEMORY_TEMP: set_ui(f, (unsigned)tw_nvml_temperature(s) + 8); return NVML_SUCCESS;
    case NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION:
    case NVML_FI_DEV_ENERGY: set_ull(f, tw_nvml_energy_mj(s)); return NVML_SUCCESS;
    case NVML_FI_DEV_NVLINK_SPEED_MBPS_COMMON:
        if (!links) return NVML_ERROR_NOT_SUPPORTED;
        set_ui(f, tw_nvml_nvlink_speed_mbps(s));
        return NVML_SUCCESS;
    case NVML_FI_DEV_NVLINK_LINK_COUNT:
        if (!links) return NVML_ERROR_NOT_SUPPORTED;
        set_ui(f, (unsigned)links);
        return NVML_SUCCESS;
    case NVML_FI_DEV_NVSWITCH_CONNECTED_LINK_COUNT: set_ui(f, (unsigned)links); return NVML_SUCCESS;
    case NVML_FI_DEV_NVLINK_GET_SPEED:           /* scopeId = link */
    case NVML_FI_DEV_NVLINK_GET_STATE:
    case NVML_FI_DEV_NVLINK_GET_VERSION:
        if (f->scopeId >= (unsigned)links) return NVML_ERROR_NOT_SUPPORTED;
        set_ui(f, id == NVML_FI_DEV_NVLINK_GET_SPEED ? tw_nvml_nvlink_speed_mbps(s)
                  : id == NVML_FI_DEV_NVLINK_GET_STATE ? 1u : (unsigned)tw_nvml_nvlink_version(s));
        return NVML_SUCCESS;
    case NVML_FI_DEV_PCIE_REPLAY_COUNTER: set_ui(f, 0); return NVML_SUCCESS;
    case NVML_FI_DEV_C2C_LINK_COUNT: set_ui(f, 0); return NVML_SUCCESS;
    case NVML_FI_DEV_POWER_AVERAGE:
    case NVML_FI_DEV_POWER_INSTANT: set_ui(f, tw_nvml_power_usage_mw(s)); return NVML_SUCCESS;
    case NVML_FI_DEV_POWER_MIN_LIMIT: set_ui(f, 200000); return NVML_SUCCESS;
    case NVML_FI_DEV_POWER_MAX_LIMIT:
    case NVML_FI_DEV_POWER_DEFAULT_LIMIT:
    case NVML_FI_DEV_POWER_CURRENT_LIMIT:
    case NVML_FI_DEV_POWER_REQUESTED_LIMIT: set_ui(f, plim); return NVML_SUCCESS;
    case NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT:
    case NVML_FI_DEV_TEMPERATURE_SLOWDOWN_TLIMIT:
    case NVML_FI_DEV_TEMPERATURE_MEM_MAX_TLIMIT:
    case NVML_FI_DEV_TEMPERATURE_GPU_MAX_TLIMIT:
        f->valueType = NVML_VALUE_TYPE_SIGNED_INT;
        f->value.ullVal = 0;
        f->value.siVal = tw_nvml_temperature_threshold((int)(id - NVML_FI_DEV_TEMPERATURE_SHUTDOWN_TLIMIT));
        return NVML_SUCCESS;
    default: return NVML_ERROR_NOT_SUPPORTED;
    }
}

TW_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t h, int count, nvmlFieldValue_t *values)
{
    int dev;
    const tw_gpu_spec *s;
    nvmlReturn_t r = tw_nvml_dev(h, &dev, &s);
    if (r) return r;
    if (count < 0 || (count > 0 && !values)) return NVML_ERROR_INVALID_ARGUMENT;
    /* timestamps in microseconds of the (virtual) realtime clock, which the core's clock hooks provide */
    struct timeval tv;
    gettimeofday(&tv, NULL);
    long long us = (long long)tv.tv_sec * 1000000 + tv.tv_usec;
    for (int i = 0; i < count; i++) {
        values[i].timestamp = us;
        values[i].latencyUsec = 0;
        values[i].nvmlReturn = field_value(dev, s, &values[i]);
    }
    return NVML_SUCCESS;
}
