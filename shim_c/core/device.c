/* Virtual devices: which catalog GPU, how many, the calling thread's current device, and what the
 * property and attribute queries report. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdio.h>
#include "internal.h"
#include "tw/cuda_types.h"

extern const tw_gpu_spec tw_catalog[];
extern const int tw_catalog_count;

pthread_mutex_t tw_lock = PTHREAD_MUTEX_INITIALIZER;
tw_device_state tw_devices[TW_MAX_DEVICES];
int tw_ndevices;
int tw_initialized;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static __thread int current_device;

static const tw_gpu_spec *find_gpu(const char *key) {
    for (int i = 0; i < tw_catalog_count; i++)
        if (!strcasecmp(tw_catalog[i].key, key) || !strcasecmp(tw_catalog[i].name, key)) return &tw_catalog[i];
    return NULL;
}

/* CUDA_VISIBLE_DEVICES narrows the virtual devices as it narrows real ones: an empty value hides all, a
 * list keeps as many devices as it names that exist (ordinals or UUID prefixes are not checked further). */
static int visible_count(int n) {
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    if (!v) return n;
    int count = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", v);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ') tok++;
        if (!*tok) continue;
        char *end;
        long idx = strtol(tok, &end, 10);
        if (end != tok && (idx < 0 || idx >= n)) break; /* CUDA stops at the first invalid ordinal */
        count++;
    }
    return count < n ? count : n;
}

static void do_init(void) {
    tw_debug = getenv("TIMEWARP_DEBUG") && getenv("TIMEWARP_DEBUG")[0] == '1';
    const char *key = tw_env("TIMEWARP_GPU", "H200");
    const tw_gpu_spec *spec = find_gpu(key);
    int n = atoi(tw_env("TIMEWARP_NUM_GPUS", "1"));
    if (!spec) {
        char known[512] = "";
        for (int i = 0; i < tw_catalog_count; i++) {
            strncat(known, i ? ", " : "", sizeof known - strlen(known) - 1);
            strncat(known, tw_catalog[i].key, sizeof known - strlen(known) - 1);
        }
        tw_log("TIMEWARP_GPU=%s is not a known GPU (known: %s); the process sees no CUDA device", key, known);
        n = 0;
    } else if (n < 0 || n > TW_MAX_DEVICES) {
        tw_log("TIMEWARP_NUM_GPUS=%d is out of range 0..%d; the process sees no CUDA device", n, TW_MAX_DEVICES);
        n = 0;
    }
    n = visible_count(n);
    tw_ndevices = n;
    for (int i = 0; i < n; i++) tw_devices[i].spec = spec;
    tw_memory_init();
    tw_streams_init();
    tw_trace_init();
    tw_initialized = 1;
    atexit(tw_report_at_exit);
}

void tw_init(void) {
    if (__builtin_expect(!tw_initialized, 0)) pthread_once(&init_once, do_init);
}

int tw_device_count(void) { tw_init(); return tw_ndevices; }

const tw_gpu_spec *tw_device_spec(int dev) {
    tw_init();
    return dev >= 0 && dev < tw_ndevices ? tw_devices[dev].spec : NULL;
}

int tw_get_device(void) { return current_device; }

tw_err tw_set_device(int dev) {
    tw_init();
    if (dev < 0 || dev >= tw_ndevices) return tw_ndevices ? TW_ERR_INVALID_DEVICE : TW_ERR_NO_DEVICE;
    current_device = dev;
    return TW_OK;
}

void tw_device_uuid(int dev, unsigned char uuid[16]) {
    const tw_gpu_spec *s = tw_device_spec(dev);
    const struct tw_cudaDeviceProp *p = s ? s->props : NULL;
    if (p) memcpy(uuid, p->uuid.bytes, 16); else memset(uuid, 0, 16);
    uuid[15] ^= (unsigned char)dev;  /* distinct per device, stable across runs */
    uuid[14] ^= (unsigned char)(dev >> 8);
}

/* PCI bus ids as on an 8-GPU SXM board: device i on its own bus. */
static int pci_bus(int dev) { return dev == 0 ? ((const struct tw_cudaDeviceProp *)tw_devices[0].spec->props)->pciBusID : 0x18 + 0x10 * dev; }

void tw_device_pci_bus_id(int dev, char *buf, int len) {
    const tw_gpu_spec *s = tw_device_spec(dev);
    const struct tw_cudaDeviceProp *p = s ? s->props : NULL;
    if (!p) { if (len) buf[0] = 0; return; }
    snprintf(buf, len, "%04x:%02x:%02x.0", p->pciDomainID, pci_bus(dev) & 0xff, p->pciDeviceID);
}

tw_err tw_device_props(int dev, void *out) {
    const tw_gpu_spec *s = tw_device_spec(dev);
    if (!s) return tw_ndevices ? TW_ERR_INVALID_DEVICE : TW_ERR_NO_DEVICE;
    struct tw_cudaDeviceProp *p = out;
    memcpy(p, s->props, sizeof *p);
    tw_device_uuid(dev, (unsigned char *)p->uuid.bytes);
    p->pciBusID = pci_bus(dev);
    return TW_OK;
}

/* CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33 */
tw_err tw_device_attr(int dev, int attr, int *value) {
    const tw_gpu_spec *s = tw_device_spec(dev);
    if (!s) return tw_ndevices ? TW_ERR_INVALID_DEVICE : TW_ERR_NO_DEVICE;
    if (attr < 0 || attr >= s->n_attrs || !s->attr_valid[attr]) return TW_ERR_INVALID_VALUE;
    *value = attr == 33 ? pci_bus(dev) : s->attrs[attr];
    return TW_OK;
}
