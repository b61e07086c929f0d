/* Shared helpers of the fake NVML (not exported). */
#ifndef TW_NVML_INTERNAL_H
#define TW_NVML_INTERNAL_H

#include <string.h>

#include "tw/core.h"
#include "nvml_types.h"

#define TW_NVML_MAX_DEVICES 64

/* An nvmlDevice_t points at one of these; the index is the core's device ordinal. */
struct tw_nvml_device {
    int index;
};

extern struct tw_nvml_device tw_nvml_devices[TW_NVML_MAX_DEVICES];

/* 1 after nvmlInit*, until the matching number of nvmlShutdown calls. */
int tw_nvml_initialized(void);

/* Resolve a handle: NVML_ERROR_UNINITIALIZED before init, INVALID_ARGUMENT for a bad handle. */
nvmlReturn_t tw_nvml_dev(nvmlDevice_t h, int *dev, const tw_gpu_spec **spec);
int tw_nvml_count(void);

/* Copy a string into a caller buffer of length len: INSUFFICIENT_SIZE when it does not fit. */
nvmlReturn_t tw_nvml_str(char *buf, unsigned len, const char *s);

/* PCI location of a device, parsed from the core's "dddd:bb:dd.f" bus id. */
void tw_nvml_pci_loc(int dev, unsigned *domain, unsigned *bus, unsigned *device, unsigned *function);
/* Fill an nvmlPciInfo_t (current layout) for device dev. */
void tw_nvml_fill_pci(int dev, nvmlPciInfo_t *p);

/* Facts derived from the catalog entry */
int tw_nvml_arch(const tw_gpu_spec *s);
int tw_nvml_nvlink_count(const tw_gpu_spec *s);     /* active NVLinks per GPU */
unsigned tw_nvml_nvlink_speed_mbps(const tw_gpu_spec *s);
int tw_nvml_nvlink_version(const tw_gpu_spec *s);
unsigned tw_nvml_power_usage_mw(const tw_gpu_spec *s);
int tw_nvml_temperature(const tw_gpu_spec *s);
int tw_nvml_temperature_threshold(int which);
unsigned long long tw_nvml_energy_mj(const tw_gpu_spec *s);

#endif
