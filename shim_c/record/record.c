/* The recorder library, libtimewarp_record.so: `timewarp record --shim -- CMD` preloads it into a program
 * that runs on a real GPU. Every call goes through to the real libraries; the library writes what the GPU
 * ran, keyed as the emulator keys its launch records, to TIMEWARP_RECORD_OUT (one tab-separated row per
 * event; integrations/record_shim.py joins them into launches.parquet):
 *
 *   G <id> <api> <m> <n> <k> <batch> <a> <b> <c> <compute> <ta> <tb> <epilogue>   a GEMM call (record_blas.c)
 *   X <correlation> <id>                  CUPTI: the API call <correlation> was made inside GEMM call <id>
 *   N <graph node> <id>                   a kernel node captured inside GEMM call <id>
 *   C <node> <original node>              instantiation cloned <original node> into <node>
 *   K <corr> <node> <stream> <start> <end> <grid x y z> <block x y z> <static smem> <dynamic smem> <regs> <name>
 *   M <corr> <node> <stream> <start> <end> <bytes> <copy kind> <src kind> <dst kind>
 *   S <corr> <node> <stream> <start> <end> <bytes>
 *   A <corr> <start> <end> <thread> <api name>     launches, copies, memsets, graph launches: the host's time
 *                                                   inside the runtime or driver call
 *   L <corr> <start> <end> <thread> <api name>     any other runtime or driver call that took the host over
 *                                                   LONG_API_NS (a synchronisation, an allocation, a launch
 *                                                   that waited for room in the stream's queue shows as A)
 *   E <message>                                     the recorder could not attach (the program still runs)
 *   D <dropped records>
 *
 * Method: CUPTI's activity API (kernel, memcpy, memset, runtime and driver API records; the GPU's own
 * timestamps, ns), the resource callbacks for CUDA graph nodes (so that kernels replayed from a graph carry
 * the annotation of their capture), and external correlation ids pushed around each GEMM call (so that the
 * kernels cuBLAS launches carry its m, n, k). Kernel names are CUPTI's, i.e. mangled, as the emulator's
 * launch records are. Cost: CUPTI serialises concurrent kernels of one context only with
 * CONCURRENT_KERNEL off (it stays on here); each launch costs the host about 1-2 us more (measured with the
 * torch.profiler recorder, which uses the same activity kinds). CUPTI is loaded from TIMEWARP_CUPTI
 * (the launcher finds PyTorch's libcupti) or by soname. */
#define _GNU_SOURCE
#include <cupti.h>
#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "record.h"

#define CUPTI_FUNCS(X) X(cuptiSubscribe) X(cuptiEnableCallback) X(cuptiActivityEnable) \
    X(cuptiActivityRegisterCallbacks) X(cuptiActivityFlushAll) X(cuptiActivityGetNextRecord) \
    X(cuptiActivityGetNumDroppedRecords) X(cuptiActivityPushExternalCorrelationId) \
    X(cuptiActivityPopExternalCorrelationId) X(cuptiGetResultString) X(cuptiGetGraphNodeId) X(cuptiGetCallbackName) X(cuptiActivityFlushPeriod)
#define DECLARE(f) static __typeof__(&f) p_##f;
CUPTI_FUNCS(DECLARE)

static FILE *out;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static int active;
static CUpti_SubscriberHandle subscriber;
static __thread uint64_t current_gemm;   /* the GEMM call this thread is inside (0: none) */

#define EMIT(...) do { pthread_mutex_lock(&out_lock); fprintf(out, __VA_ARGS__); pthread_mutex_unlock(&out_lock); } while (0)

void tw_rec_gemm_begin(const tw_rec_gemm *g) {
    if (!active) return;
    EMIT("G\t%" PRIu64 "\t%s\t%" PRId64 "\t%" PRId64 "\t%" PRId64 "\t%" PRId64 "\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", g->id,
         g->api, g->m, g->n, g->k, g->batch, g->a_type, g->b_type, g->c_type, g->compute, g->trans_a, g->trans_b,
         g->epilogue);
    current_gemm = g->id;
    p_cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, g->id);
}

void tw_rec_gemm_end(void) {
    if (!active) return;
    uint64_t last;
    p_cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
    current_gemm = 0;
}

/* ---------------------------------------------------------------- activity buffers */
#define BUF_SIZE (8u << 20)

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *buffer = aligned_alloc(8, BUF_SIZE);
    *size = *buffer ? BUF_SIZE : 0;
    *max_records = 0;
}

#define LONG_API_NS 300000u

/* the API calls whose host time is a launch's, a copy's, a memset's or a graph replay's */
static int api_of_interest(const char *name) {
    return name && (strstr(name, "Launch") || strstr(name, "Memcpy") || strstr(name, "Memset") ||
                    strstr(name, "GraphLaunch"));
}

static const char *api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    const char *name = NULL;
    if (p_cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS) return NULL;
    return name;
}

static void write_record(const CUpti_Activity *r) {
    switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
        fprintf(out, "K\t%u\t%" PRIu64 "\t%u\t%" PRIu64 "\t%" PRIu64 "\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%u\t%s\n",
                k->correlationId, k->graphNodeId, k->streamId, k->start, k->end, k->gridX, k->gridY, k->gridZ,
                k->blockX, k->blockY, k->blockZ, k->staticSharedMemory, k->dynamicSharedMemory,
                (unsigned)k->registersPerThread, k->name ? k->name : "?");
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)r;
        fprintf(out, "M\t%u\t%" PRIu64 "\t%u\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%u\t%u\t%u\n", m->correlationId,
                m->graphNodeId, m->streamId, m->start, m->end, m->bytes, (unsigned)m->copyKind, (unsigned)m->srcKind,
                (unsigned)m->dstKind);
        break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *s = (const CUpti_ActivityMemset4 *)r;
        fprintf(out, "S\t%u\t%" PRIu64 "\t%u\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\n", s->correlationId, s->graphNodeId,
                s->streamId, s->start, s->end, s->bytes);
        break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const CUpti_ActivityExternalCorrelation *x = (const CUpti_ActivityExternalCorrelation *)r;
        if (x->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
            fprintf(out, "X\t%u\t%" PRIu64 "\n", x->correlationId, x->externalId);
        break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
        const CUpti_ActivityAPI *a = (const CUpti_ActivityAPI *)r;
        const char *name = api_name(r->kind == CUPTI_ACTIVITY_KIND_RUNTIME ? CUPTI_CB_DOMAIN_RUNTIME_API
                                                                           : CUPTI_CB_DOMAIN_DRIVER_API, a->cbid);
        if (api_of_interest(name))
            fprintf(out, "A\t%u\t%" PRIu64 "\t%" PRIu64 "\t%u\t%s\n", a->correlationId, a->start, a->end, a->threadId,
                    name);
        else if (a->end - a->start >= LONG_API_NS)
            fprintf(out, "L\t%u\t%" PRIu64 "\t%" PRIu64 "\t%u\t%s\n", a->correlationId, a->start, a->end, a->threadId,
                    name ? name : "?");
        break;
    }
    default: break;
    }
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid) {
    (void)ctx; (void)stream; (void)size;
    CUpti_Activity *r = NULL;
    pthread_mutex_lock(&out_lock);
    while (p_cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) write_record(r);
    fflush(out);
    pthread_mutex_unlock(&out_lock);
    free(buffer);
}

/* ---------------------------------------------------------------- graph nodes */
static void CUPTIAPI on_callback(void *userdata, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data) {
    (void)userdata;
    if (domain != CUPTI_CB_DOMAIN_RESOURCE) return;
    const CUpti_ResourceData *rd = data;
    const CUpti_GraphData *g = rd->resourceDescriptor;
    if (!g || !g->node) return;
    uint64_t id = 0, orig = 0;
    if (p_cuptiGetGraphNodeId(g->node, &id) != CUPTI_SUCCESS) return;
    if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED && current_gemm)
        EMIT("N\t%" PRIu64 "\t%" PRIu64 "\n", id, current_gemm);
    else if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED && g->originalNode &&
             p_cuptiGetGraphNodeId(g->originalNode, &orig) == CUPTI_SUCCESS)
        EMIT("C\t%" PRIu64 "\t%" PRIu64 "\n", id, orig);
}

/* ---------------------------------------------------------------- attach and detach */
static void fail(const char *what, CUptiResult r) {
    const char *s = "?";
    if (p_cuptiGetResultString) p_cuptiGetResultString(r, &s);
    EMIT("E\t%s: %s\n", what, s);
    active = 0;
}

static void finish(void) {
    if (!out) return;
    if (active) {
        p_cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        size_t dropped = 0;
        p_cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped);
        EMIT("D\t%zu\n", dropped);
    }
    pthread_mutex_lock(&out_lock);
    fclose(out);
    out = NULL;
    pthread_mutex_unlock(&out_lock);
}

__attribute__((constructor)) static void attach(void) {
    const char *path = getenv("TIMEWARP_RECORD_OUT");
    if (!path || !*path) return;
    char own[4096];
    snprintf(own, sizeof own, "%s.%d", path, (int)getpid());   /* one file per process */
    out = fopen(own, "w");
    if (!out) return;
    const char *lib = getenv("TIMEWARP_CUPTI");
    void *h = dlopen(lib && *lib ? lib : "libcupti.so.13", RTLD_NOW | RTLD_GLOBAL);
    if (!h) { EMIT("E\tCUPTI not loaded: %s\n", dlerror()); return; }
#define RESOLVE(f) if (!(p_##f = (__typeof__(&f))dlsym(h, #f))) { EMIT("E\t%s missing from CUPTI\n", #f); return; }
    CUPTI_FUNCS(RESOLVE)
    active = 1;
    CUptiResult r;
    if ((r = p_cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)) != CUPTI_SUCCESS)
        { fail("cuptiActivityRegisterCallbacks", r); return; }
    const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                        CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_RUNTIME,
                                        CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION};
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if ((r = p_cuptiActivityEnable(kinds[i])) != CUPTI_SUCCESS) { fail("cuptiActivityEnable", r); return; }
    if ((r = p_cuptiSubscribe(&subscriber, (CUpti_CallbackFunc)on_callback, NULL)) != CUPTI_SUCCESS)
        { fail("cuptiSubscribe (another CUPTI client, e.g. torch.profiler, is attached?)", r); return; }
    if ((r = p_cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED)) ||
        (r = p_cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED))) {
        fail("cuptiEnableCallback", r);
        return;
    }
    /* buffers also go out every second: a process killed at the end (vLLM's EngineCore) loses at most that */
    p_cuptiActivityFlushPeriod(1000);
    atexit(finish);
}
