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
int tw_ndevices, tw_nphysical;
int tw_initialized;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static __thread int current_device;

static const tw_gpu_spec *find_gpu(const char *key) {
    for (int i = 0; i < tw_catalog_count; i++)
        if (!strcasecmp(tw_catalog[i].key, key) || !strcasecmp(tw_catalog[i].name, key)) return &tw_catalog[i];
    return NULL;
}

/* CUDA_VISIBLE_DEVICES picks and orders the box's GPUs as it does on real ones: ordinals or UUID prefixes
 * ("GPU-74696d65..."), parsing stops at the first entry that names no device; an empty value hides all.
 * Fills map[visible] = physical and returns the number of visible devices. */
static const tw_gpu_spec *box_spec;
static void physical_uuid(int p, unsigned char uuid[16]);

static int uuid_matches(const char *tok, int p) {
    unsigned char u[16];
    char text[64];
    physical_uuid(p, u);
    snprintf(text, sizeof text, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2],
             u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    return strlen(tok) >= 5 && !strncasecmp(text, tok, strlen(tok));
}

static int visible_map(int n, int *map) {
    const char *v = getenv("CUDA_VISIBLE_DEVICES");
    if (!v) {
        for (int i = 0; i < n; i++) map[i] = i;
        return n;
    }
    int count = 0;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", v);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok && count < n; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ') tok++;
        if (!*tok) break;
        char *end;
        long idx = strtol(tok, &end, 10);
        int p = -1;
        if (end != tok && *end == 0) p = idx >= 0 && idx < n ? (int)idx : -1;
        else for (int q = 0; q < n && p < 0; q++) if (uuid_matches(tok, q)) p = q;
        if (p < 0) break;
        for (int i = 0; i < count; i++) if (map[i] == p) p = -1;  /* a repeated device ends the list too */
        if (p < 0) break;
        map[count++] = p;
    }
    return count;
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
    box_spec = spec;
    tw_nphysical = n;
    int map[TW_MAX_DEVICES];
    n = visible_map(n, map);
    tw_ndevices = n;
    for (int i = 0; i < n; i++) { tw_devices[i].spec = spec; tw_devices[i].physical = map[i]; }
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

/* ---------------------------------------------------------------- per physical GPU of the box */
static void physical_uuid(int p, unsigned char uuid[16]) {
    const struct tw_cudaDeviceProp *pr = box_spec ? box_spec->props : NULL;
    if (pr) memcpy(uuid, pr->uuid.bytes, 16); else memset(uuid, 0, 16);
    uuid[15] ^= (unsigned char)p;  /* distinct per device, stable across runs */
    uuid[14] ^= (unsigned char)(p >> 8);
}

/* PCI bus ids as on an 8-GPU SXM board: GPU 0 where the real card sat, the others on buses of their own */
static int pci_bus(int p) { return p == 0 ? ((const struct tw_cudaDeviceProp *)box_spec->props)->pciBusID : 0x18 + 0x10 * p; }

int tw_physical_count(void) { tw_init(); return tw_nphysical; }
const tw_gpu_spec *tw_physical_spec(int p) { tw_init(); return p >= 0 && p < tw_nphysical ? box_spec : NULL; }
int tw_device_physical(int dev) { tw_init(); return dev >= 0 && dev < tw_ndevices ? tw_devices[dev].physical : -1; }

int tw_physical_visible(int p) {
    tw_init();
    for (int i = 0; i < tw_ndevices; i++) if (tw_devices[i].physical == p) return i;
    return -1;
}

void tw_physical_uuid(int p, unsigned char uuid[16]) { tw_init(); physical_uuid(p, uuid); }

void tw_physical_pci_bus_id(int p, char *buf, int len) {
    const tw_gpu_spec *s = tw_physical_spec(p);
    const struct tw_cudaDeviceProp *pr = s ? s->props : NULL;
    if (!pr) { if (len) buf[0] = 0; return; }
    snprintf(buf, len, "%04x:%02x:%02x.0", pr->pciDomainID, pci_bus(p) & 0xff, pr->pciDeviceID);
}

void tw_physical_mem_info(int p, size_t *free_bytes, size_t *total_bytes) {
    int v = tw_physical_visible(p);
    if (v >= 0) { tw_mem_info(v, free_bytes, total_bytes); return; }
    /* a GPU this process does not see: nothing of this process on it (other processes: the coordinator's) */
    const tw_gpu_spec *s = tw_physical_spec(p);
    if (total_bytes) *total_bytes = s ? s->total_mem : 0;
    if (free_bytes) *free_bytes = s ? s->total_mem - s->context_reserved : 0;
}

/* ---------------------------------------------------------------- per visible device */
void tw_device_uuid(int dev, unsigned char uuid[16]) {
    int p = tw_device_physical(dev);
    if (p < 0) { memset(uuid, 0, 16); return; }
    physical_uuid(p, uuid);
}

void tw_device_pci_bus_id(int dev, char *buf, int len) { tw_physical_pci_bus_id(tw_device_physical(dev), buf, len); }

tw_err tw_device_props(int dev, void *out) {
    const tw_gpu_spec *s = tw_device_spec(dev);
    if (!s) return tw_ndevices ? TW_ERR_INVALID_DEVICE : TW_ERR_NO_DEVICE;
    struct tw_cudaDeviceProp *p = out;
    memcpy(p, s->props, sizeof *p);
    tw_device_uuid(dev, (unsigned char *)p->uuid.bytes);
    p->pciBusID = pci_bus(tw_devices[dev].physical);
    return TW_OK;
}

/* CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33 */
tw_err tw_device_attr(int dev, int attr, int *value) {
    const tw_gpu_spec *s = tw_device_spec(dev);
    if (!s) return tw_ndevices ? TW_ERR_INVALID_DEVICE : TW_ERR_NO_DEVICE;
    if (attr < 0 || attr >= s->n_attrs || !s->attr_valid[attr]) return TW_ERR_INVALID_VALUE;
    *value = attr == 33 ? pci_bus(tw_devices[dev].physical) : s->attrs[attr];
    return TW_OK;
}
