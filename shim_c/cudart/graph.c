/* CUDA graphs: creation, inspection, explicit kernel/host/event nodes, instantiation, update, launch, dot dump.
 * Graph structure (nodes, order) lives in the core; dependencies are not exposed (nodes report none). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cudart_internal.h"

#define GRAPH_INSTANTIATE_FLAGS                                                                             \
    (cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUpload |                           \
     cudaGraphInstantiateFlagDeviceLaunch | cudaGraphInstantiateFlagUseNodePriority)

TW_EXPORT cudaError_t cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags)
{
    if (!pGraph || flags != 0) return cr(cudaErrorInvalidValue);
    tw_init();
    tw_graph *g = NULL;
    tw_err e = tw_graph_create(&g);
    if (e != TW_OK) return cr_tw(e);
    *pGraph = g;
    return cudaSuccess;
}

static void uo_release_owner(const void *owner);
static void uo_copy_owner(const void *from, const void *to);

TW_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    if (!graph) return cr(cudaErrorInvalidValue);
    tw_err e = tw_graph_destroy(graph);
    if (e == TW_OK) uo_release_owner(graph);
    return cr_tw(e);
}

/* Fills up to *num entries of out (when out is given) with the graph's nodes; *num becomes the node count
 * when out is NULL, else the number written. */
static cudaError_t list_nodes(tw_graph *g, cudaGraphNode_t *out, size_t *num)
{
    if (!g || !num) return cr(cudaErrorInvalidValue);
    size_t n = tw_graph_num_nodes(g);
    if (!out) {
        *num = n;
        return cudaSuccess;
    }
    size_t m = *num < n ? *num : n;
    for (size_t i = 0; i < m; i++) out[i] = tw_graph_node_at(g, i);
    for (size_t i = m; i < *num; i++) out[i] = NULL;
    *num = m;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaGraphGetNodes(cudaGraph_t graph, cudaGraphNode_t *nodes, size_t *numNodes)
{
    return list_nodes(graph, nodes, numNodes);
}

TW_EXPORT cudaError_t cudaGraphGetRootNodes(cudaGraph_t graph, cudaGraphNode_t *pRootNodes, size_t *pNumRootNodes)
{
    /* nodes report no dependencies, so each one is a root */
    return list_nodes(graph, pRootNodes, pNumRootNodes);
}

TW_EXPORT cudaError_t cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t *from, cudaGraphNode_t *to,
                                        cudaGraphEdgeData *edgeData, size_t *numEdges)
{
    (void)from; (void)to; (void)edgeData;
    if (!graph || !numEdges) return cr(cudaErrorInvalidValue);
    *numEdges = 0;
    return cudaSuccess;
}

static int node_type_of(const tw_op *op)
{
    switch (op->kind) {
    case TW_OP_KERNEL: return cudaGraphNodeTypeKernel;
    case TW_OP_MEMCPY: return cudaGraphNodeTypeMemcpy;
    case TW_OP_MEMSET: return cudaGraphNodeTypeMemset;
    case TW_OP_HOST_FUNC: return cudaGraphNodeTypeHost;
    case TW_OP_EVENT_RECORD: return cudaGraphNodeTypeEventRecord;
    case TW_OP_EVENT_WAIT: return cudaGraphNodeTypeWaitEvent;
    case TW_OP_GRAPH: return cudaGraphNodeTypeGraph;
    case TW_OP_COLLECTIVE: return cudaGraphNodeTypeKernel; /* NCCL collectives are kernels */
    }
    return cudaGraphNodeTypeEmpty;
}

TW_EXPORT cudaError_t cudaGraphNodeGetType(cudaGraphNode_t node, int *pType)
{
    if (!node || !pType) return cr(cudaErrorInvalidValue);
    const tw_op *op = tw_graph_node_op(node);
    *pType = op ? node_type_of(op) : cudaGraphNodeTypeKernel;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t *pDependencies,
                                                   cudaGraphEdgeData *edgeData, size_t *pNumDependencies)
{
    (void)pDependencies; (void)edgeData;
    if (!node || !pNumDependencies) return cr(cudaErrorInvalidValue);
    *pNumDependencies = 0;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaGraphNodeGetDependentNodes(cudaGraphNode_t node, cudaGraphNode_t *pDependentNodes,
                                                     cudaGraphEdgeData *edgeData, size_t *pNumDependentNodes)
{
    (void)pDependentNodes; (void)edgeData;
    if (!node || !pNumDependentNodes) return cr(cudaErrorInvalidValue);
    *pNumDependentNodes = 0;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t node, struct cudaKernelNodeParams *pNodeParams)
{
    if (!node || !pNodeParams) return cr(cudaErrorInvalidValue);

    const tw_op *op = tw_graph_node_op(node);
    if (!op || op->kind != TW_OP_KERNEL) return cr(cudaErrorInvalidValue);
    memset(pNodeParams, 0, sizeof(*pNodeParams));
    const void *hf = op->kernel ? tw_cudart_kernel_host_fun(op->kernel) : NULL;
    pNodeParams->func = (void *)(hf ? hf : (const void *)op->kernel);
    pNodeParams->gridDim = (dim3){op->grid[0], op->grid[1], op->grid[2]};
    pNodeParams->blockDim = (dim3){op->block[0], op->block[1], op->block[2]};
    pNodeParams->sharedMemBytes = op->shmem;
    return cudaSuccess;
}

/* ------------------------------------------------------------------ explicit construction */

static cudaError_t add_op(cudaGraphNode_t *pNode, cudaGraph_t graph, const cudaGraphNode_t *deps, size_t n,
                          const tw_op *op)
{
    if (!pNode || !graph || (n && !deps)) return cr(cudaErrorInvalidValue);
    tw_graph_node *node = NULL;
    tw_err e = tw_graph_add_op(graph, op, &node);
    if (e != TW_OK) return cr_tw(e);
    *pNode = node;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                             const cudaGraphNode_t *pDependencies, size_t numDependencies,
                                             const struct cudaKernelNodeParams *pNodeParams)
{
    if (!pNodeParams) return cr(cudaErrorInvalidValue);
    tw_kernel *k = tw_cudart_resolve_func(pNodeParams->func);
    if (!k) return cr(cudaErrorInvalidDeviceFunction);
    dim3 g = pNodeParams->gridDim, b = pNodeParams->blockDim;
    uint64_t threads = (uint64_t)b.x * b.y * b.z;
    if (!g.x || !g.y || !g.z || !threads || threads > 1024) return cr(cudaErrorInvalidConfiguration);
    tw_op op = {.kind = TW_OP_KERNEL, .kernel = k, .grid = {g.x, g.y, g.z}, .block = {b.x, b.y, b.z},
                .shmem = pNodeParams->sharedMemBytes};
    return add_op(pGraphNode, graph, pDependencies, numDependencies, &op);
}

TW_EXPORT cudaError_t cudaGraphAddHostNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                           const cudaGraphNode_t *pDependencies, size_t numDependencies,
                                           const struct cudaHostNodeParams *pNodeParams)
{
    if (!pNodeParams || !pNodeParams->fn) return cr(cudaErrorInvalidValue);
    tw_op op = {.kind = TW_OP_HOST_FUNC, .label = "host node", .fn = pNodeParams->fn,
                .fn_data = pNodeParams->userData};
    return add_op(pGraphNode, graph, pDependencies, numDependencies, &op);
}

TW_EXPORT cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                                  const cudaGraphNode_t *pDependencies, size_t numDependencies,
                                                  cudaEvent_t event)
{
    if (!event || !tw_event_valid(event)) return cr(cudaErrorInvalidResourceHandle);
    tw_op op = {.kind = TW_OP_EVENT_RECORD, .label = "event record", .event = event};
    return add_op(pGraphNode, graph, pDependencies, numDependencies, &op);
}

TW_EXPORT cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                                const cudaGraphNode_t *pDependencies, size_t numDependencies,
                                                cudaEvent_t event)
{
    if (!event || !tw_event_valid(event)) return cr(cudaErrorInvalidResourceHandle);
    tw_op op = {.kind = TW_OP_EVENT_WAIT, .label = "event wait", .event = event};
    return add_op(pGraphNode, graph, pDependencies, numDependencies, &op);
}

TW_EXPORT cudaError_t cudaGraphAddNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
                                       const cudaGraphNode_t *pDependencies, const cudaGraphEdgeData *dependencyData,
                                       size_t numDependencies, struct cudaGraphNodeParams *nodeParams)
{
    (void)dependencyData;
    if (!nodeParams) return cr(cudaErrorInvalidValue);
    switch (nodeParams->type) {
    case cudaGraphNodeTypeKernel:
        return cudaGraphAddKernelNode(pGraphNode, graph, pDependencies, numDependencies, &nodeParams->u.kernel);
    case cudaGraphNodeTypeHost:
        return cudaGraphAddHostNode(pGraphNode, graph, pDependencies, numDependencies, &nodeParams->u.host);
    case cudaGraphNodeTypeEventRecord:
        return cudaGraphAddEventRecordNode(pGraphNode, graph, pDependencies, numDependencies,
                                           nodeParams->u.eventRecord.event);
    case cudaGraphNodeTypeWaitEvent:
        return cudaGraphAddEventWaitNode(pGraphNode, graph, pDependencies, numDependencies,
                                         nodeParams->u.eventWait.event);
    case cudaGraphNodeTypeMemset: {
        const struct cudaMemsetParamsV2 *m = &nodeParams->u.memset;
        unsigned es = m->elementSize;
        if (!m->dst || (es != 1 && es != 2 && es != 4) || !m->width || !m->height) return cr(cudaErrorInvalidValue);
        size_t row = m->width * es;
        if (m->height > 1 && m->pitch < row) return cr(cudaErrorInvalidPitchValue);
        int contiguous = m->height == 1 || m->pitch == row;
        /* byte value only where it fills elements exactly (1-byte elements, or a repeated byte pattern) */
        unsigned v = m->value;
        int bytewise = es == 1 || (es == 2 && (v & 0xff) == ((v >> 8) & 0xff)) ||
                       (es == 4 && v == (v & 0xff) * 0x01010101u);
        tw_op op = {.kind = TW_OP_MEMSET, .label = "Memset", .dir = TW_COPY_D2D, .bytes = row * m->height,
                    .dst = m->dst, .value = (int)(v & 0xff), .pinned = 1};
        if (!(contiguous && bytewise)) {
            /* not expressible as a byte fill: timed only (a copy with equal, NULL ends moves nothing) */
            op.kind = TW_OP_MEMCPY;
            op.dst = NULL;
            op.src = NULL;
        }
        return add_op(pGraphNode, graph, pDependencies, numDependencies, &op);
    }
    default:
        return cr(cudaErrorNotSupported);
    }
}

/* ------------------------------------------------------------------ user objects */

#define UO_MAGIC 0x756f626au

typedef struct cudart_user_object {
    uint32_t magic;
    _Atomic(int64_t) refs;
    void *ptr;
    cudaHostFn_t destroy;
} cudart_user_object;

typedef struct uo_ref {
    cudart_user_object *obj;
    unsigned count;
    struct uo_ref *next;
} uo_ref;

static tw_ptrmap uo_owners = TW_PTRMAP_INIT; /* graph or graph exec -> uo_ref list */
static pthread_mutex_t uo_mu = PTHREAD_MUTEX_INITIALIZER;

static void uo_release(cudart_user_object *o, unsigned count)
{
    if (atomic_fetch_sub(&o->refs, (int64_t)count) == (int64_t)count) {
        o->magic = 0;
        if (o->destroy) o->destroy(o->ptr);
        free(o);
    }
}

static int uo_valid(const cudart_user_object *o)
{
    return o && o->magic == UO_MAGIC && atomic_load(&o->refs) > 0;
}

TW_EXPORT cudaError_t cudaUserObjectCreate(cudart_user_object **object_out, void *ptr, cudaHostFn_t destroy,
                                           unsigned int initialRefcount, unsigned int flags)
{
    if (!object_out || !destroy || initialRefcount == 0 || flags != cudaUserObjectNoDestructorSync)
        return cr(cudaErrorInvalidValue);
    cudart_user_object *o = calloc(1, sizeof(*o));
    if (!o) return cr(cudaErrorMemoryAllocation);
    o->magic = UO_MAGIC;
    o->refs = initialRefcount;
    o->ptr = ptr;
    o->destroy = destroy;
    *object_out = o;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaUserObjectRetain(cudart_user_object *object, unsigned int count)
{
    if (!uo_valid(object) || count == 0) return cr(cudaErrorInvalidValue);
    atomic_fetch_add(&object->refs, (int64_t)count);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaUserObjectRelease(cudart_user_object *object, unsigned int count)
{
    if (!uo_valid(object) || count == 0) return cr(cudaErrorInvalidValue);
    uo_release(object, count);
    return cudaSuccess;
}

static void uo_add(const void *owner, cudart_user_object *o, unsigned count)
{
    uo_ref *r = malloc(sizeof(*r));
    if (!r) return;
    pthread_mutex_lock(&uo_mu);
    r->obj = o;
    r->count = count;
    r->next = tw_pm_get(&uo_owners, owner);
    tw_pm_put(&uo_owners, owner, r);
    pthread_mutex_unlock(&uo_mu);
}

TW_EXPORT cudaError_t cudaGraphRetainUserObject(cudaGraph_t graph, cudart_user_object *object, unsigned int count,
                                                unsigned int flags)
{
    if (!graph || !uo_valid(object) || count == 0 || (flags & ~(unsigned)cudaGraphUserObjectMove))
        return cr(cudaErrorInvalidValue);
    if (!(flags & cudaGraphUserObjectMove)) atomic_fetch_add(&object->refs, (int64_t)count);
    uo_add(graph, object, count);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaGraphReleaseUserObject(cudaGraph_t graph, cudart_user_object *object, unsigned int count)
{
    if (!graph || !uo_valid(object) || count == 0) return cr(cudaErrorInvalidValue);
    unsigned released = 0;
    pthread_mutex_lock(&uo_mu);
    uo_ref *head = tw_pm_get(&uo_owners, graph), **pp = &head;
    while (*pp && released < count) {
        uo_ref *r = *pp;
        if (r->obj == object) {
            unsigned take = r->count < count - released ? r->count : count - released;
            r->count -= take;
            released += take;
            if (!r->count) {
                *pp = r->next;
                free(r);
                continue;
            }
        }
        pp = &r->next;
    }
    tw_pm_put(&uo_owners, graph, head);
    pthread_mutex_unlock(&uo_mu);
    if (released < count) return cr(cudaErrorInvalidValue);
    uo_release(object, count);
    return cudaSuccess;
}

static void uo_release_owner(const void *owner)
{
    pthread_mutex_lock(&uo_mu);
    uo_ref *r = tw_pm_get(&uo_owners, owner);
    if (r) tw_pm_put(&uo_owners, owner, NULL);
    pthread_mutex_unlock(&uo_mu);
    while (r) {
        uo_ref *next = r->next;
        uo_release(r->obj, r->count);
        free(r);
        r = next;
    }
}

/* an instantiated graph holds its own references to the graph's user objects */
static void uo_copy_owner(const void *from, const void *to)
{
    pthread_mutex_lock(&uo_mu);
    uo_ref *list = NULL;
    for (uo_ref *r = tw_pm_get(&uo_owners, from); r; r = r->next) {
        uo_ref *c = malloc(sizeof(*c));
        if (!c) break;
        *c = *r;
        atomic_fetch_add(&c->obj->refs, (int64_t)c->count);
        c->next = list;
        list = c;
    }
    if (list) {
        uo_ref *tail = list;
        while (tail->next) tail = tail->next;
        tail->next = tw_pm_get(&uo_owners, to);
        tw_pm_put(&uo_owners, to, list);
    }
    pthread_mutex_unlock(&uo_mu);
}

/* ------------------------------------------------------------------ instantiation and launch */

static cudaError_t instantiate(cudaGraphExec_t *pExec, cudaGraph_t graph, unsigned long long flags)
{
    if (!pExec || !graph) return cr(cudaErrorInvalidValue);
    if (flags & ~(unsigned long long)GRAPH_INSTANTIATE_FLAGS) return cr(cudaErrorInvalidValue);
    tw_graph_exec *x = NULL;
    tw_err e = tw_graph_instantiate(graph, &x);
    if (e != TW_OK) return cr_tw(e);
    *pExec = x;
    uo_copy_owner(graph, x);
    TW_DEBUG("cudaGraphInstantiate(%p, %zu nodes) -> %p", (void *)graph, tw_graph_num_nodes(graph), (void *)x);
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags)
{
    return instantiate(pGraphExec, graph, flags);
}

TW_EXPORT cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                    unsigned long long flags)
{
    return instantiate(pGraphExec, graph, flags);
}

static cudaError_t instantiate_params(cudaGraphExec_t *pExec, cudaGraph_t graph, cudaGraphInstantiateParams *p,
                                      int pt)
{
    if (!p) return cr(cudaErrorInvalidValue);
    if ((p->flags & cudaGraphInstantiateFlagUpload) && !tw_stream_get(p->uploadStream, pt))
        return cr(cudaErrorInvalidResourceHandle);
    cudaError_t e = instantiate(pExec, graph, p->flags);
    if (e == cudaSuccess && (p->flags & cudaGraphInstantiateFlagUpload)) tw_graph_exec_upload((tw_graph_exec *)*pExec);
    p->errNode_out = NULL;
    p->result_out = e == cudaSuccess ? 0 : 1; /* cudaGraphInstantiateSuccess / Error */
    return e;
}

TW_EXPORT cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                     cudaGraphInstantiateParams *instantiateParams)
{
    return instantiate_params(pGraphExec, graph, instantiateParams, 0);
}

TW_EXPORT cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
                                                          cudaGraphInstantiateParams *instantiateParams)
{
    return instantiate_params(pGraphExec, graph, instantiateParams, 1);
}

TW_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
    if (!graphExec) return cr(cudaErrorInvalidValue);
    tw_err e = tw_graph_exec_destroy(graphExec);
    if (e == TW_OK) uo_release_owner(graphExec);
    return cr_tw(e);
}

TW_EXPORT cudaError_t cudaGraphExecGetFlags(cudaGraphExec_t graphExec, unsigned long long *flags)
{
    if (!graphExec || !flags) return cr(cudaErrorInvalidValue);
    *flags = 0;
    return cudaSuccess;
}

TW_EXPORT cudaError_t cudaGraphExecUpdate(cudaGraphExec_t hGraphExec, cudaGraph_t hGraph,
                                          cudaGraphExecUpdateResultInfo *resultInfo)
{
    if (!hGraphExec || !hGraph) return cr(cudaErrorInvalidValue);
    tw_err e = tw_graph_exec_update(hGraphExec, hGraph);
    if (resultInfo) {
        resultInfo->result = e == TW_OK ? cudaGraphExecUpdateSuccess : cudaGraphExecUpdateErrorTopologyChanged;
        resultInfo->errorNode = NULL;
        resultInfo->errorFromNode = NULL;
    }
    if (e != TW_OK) return cr(cudaErrorGraphExecUpdateFailure);
    return cudaSuccess;
}

static cudaError_t graph_launch(cudaGraphExec_t exec, cudaStream_t stream, int pt)
{
    if (!exec) return cr(cudaErrorInvalidValue);
    tw_stream *s = tw_stream_get(stream, pt);
    if (!s) return cr(cudaErrorInvalidResourceHandle);
    return cr_tw(tw_graph_launch(exec, s));
}

TW_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    return graph_launch(graphExec, stream, 0);
}

TW_EXPORT cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    return graph_launch(graphExec, stream, 1);
}

static cudaError_t graph_upload(cudaGraphExec_t exec, cudaStream_t stream, int pt)
{
    if (!exec) return cr(cudaErrorInvalidValue);
    if (!tw_stream_get(stream, pt)) return cr(cudaErrorInvalidResourceHandle);
    return cr_tw(tw_graph_exec_upload((tw_graph_exec *)exec));   /* the first launch then pays nothing */
}

TW_EXPORT cudaError_t cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    return graph_upload(graphExec, stream, 0);
}

TW_EXPORT cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    return graph_upload(graphExec, stream, 1);
}

/* ------------------------------------------------------------------ dot dump */

static void dot_escape(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
}

TW_EXPORT cudaError_t cudaGraphDebugDotPrint(cudaGraph_t graph, const char *path, unsigned int flags)
{
    (void)flags;
    if (!graph || !path) return cr(cudaErrorInvalidValue);
    FILE *f = fopen(path, "w");
    if (!f) return cr(cudaErrorOperatingSystem);
    size_t n = tw_graph_num_nodes(graph);
    fprintf(f, "digraph dot {\n  subgraph cluster_1 {\n    label=\"graph_1\" graph[style=\"dashed\"];\n");
    for (size_t i = 0; i < n; i++) {
        tw_graph_node *node = tw_graph_node_at(graph, i);
        const tw_op *op = node ? tw_graph_node_op(node) : NULL;
        fprintf(f, "    \"graph_1_node_%zu\" [shape=\"box\" label=\"", i);
        if (!op) {
            fprintf(f, "node %zu", i);
        } else if (op->kind == TW_OP_KERNEL && op->kernel) {
            fprintf(f, "KERNEL\\n");
            dot_escape(f, op->kernel->pretty ? op->kernel->pretty : op->kernel->name);
            fprintf(f, "\\ngrid (%u,%u,%u) block (%u,%u,%u) shmem %u", op->grid[0], op->grid[1], op->grid[2],
                    op->block[0], op->block[1], op->block[2], op->shmem);
        } else {
            dot_escape(f, op->label ? op->label : "op");
            if (op->bytes) fprintf(f, "\\n%zu bytes", op->bytes);
        }
        fprintf(f, "\"];\n");
    }
    /* nodes are listed in capture order; that order is drawn as the edges */
    for (size_t i = 1; i < n; i++) fprintf(f, "    \"graph_1_node_%zu\" -> \"graph_1_node_%zu\";\n", i - 1, i);
    fprintf(f, "  }\n}\n");
    if (fclose(f) != 0) return cr(cudaErrorOperatingSystem);
    return cudaSuccess;
}
