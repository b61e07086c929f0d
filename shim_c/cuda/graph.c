/* CUDA graphs through the core: CUgraph == tw_graph *, CUgraphExec == tw_graph_exec *, CUgraphNode == tw_graph_node *.
 * Graphs come from stream capture (stream.c) or cuGraphCreate; explicit node-building calls other than those listed
 * here are left to the generated stubs. */
#include <string.h>

#include "cu_internal.h"

TW_EXPORT CUresult cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
    cu_enter();
    if (!phGraph || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    tw_graph *g = NULL;
    tw_err e = tw_graph_create(&g);
    if (e == TW_OK)
        *phGraph = g;
    return cu_err(e);
}

TW_EXPORT CUresult cuGraphDestroy(CUgraph hGraph)
{
    cu_enter();
    if (!hGraph)
        return CUDA_ERROR_INVALID_VALUE;
    return cu_err(tw_graph_destroy(hGraph));
}

TW_EXPORT CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode *nodes, size_t *numNodes)
{
    cu_enter();
    if (!hGraph || !numNodes)
        return CUDA_ERROR_INVALID_VALUE;
    size_t n = tw_graph_num_nodes(hGraph);
    if (!nodes) {
        *numNodes = n;
        return CUDA_SUCCESS;
    }
    size_t want = *numNodes;
    for (size_t i = 0; i < want; i++)
        nodes[i] = i < n ? tw_graph_node_at(hGraph, i) : NULL;
    *numNodes = want < n ? want : n;
    return CUDA_SUCCESS;
}

static CUresult instantiate(CUgraphExec *out, CUgraph g, unsigned long long flags)
{
    cu_enter();
    if (!out || !g)
        return CUDA_ERROR_INVALID_VALUE;
    if (flags & ~(unsigned long long)(CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH |
                                      CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD |
                                      CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH |
                                      CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY))
        return CUDA_ERROR_INVALID_VALUE;
    tw_graph_exec *x = NULL;
    tw_err e = tw_graph_instantiate(g, &x);
    if (e == TW_OK)
        *out = x;
    return cu_err(e);
}

/* The pre-12.0 signature, still exported as cuGraphInstantiate and cuGraphInstantiate_v2. */
static CUresult instantiate_legacy(CUgraphExec *out, CUgraph g, CUgraphNode *errNode, char *log, size_t logSize)
{
    CUresult r = instantiate(out, g, 0);
    if (errNode)
        *errNode = NULL;
    if (log && logSize)
        log[0] = 0;
    return r;
}
TW_EXPORT CUresult cuGraphInstantiate(CUgraphExec *out, CUgraph g, CUgraphNode *errNode, char *log, size_t n)
{
    return instantiate_legacy(out, g, errNode, log, n);
}
TW_EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *out, CUgraph g, CUgraphNode *errNode, char *log, size_t n)
{
    return instantiate_legacy(out, g, errNode, log, n);
}

TW_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph g, unsigned long long flags)
{
    /* the upload flag is only valid with cuGraphInstantiateWithParams */
    if (flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD)
        return CUDA_ERROR_INVALID_VALUE;
    return instantiate(out, g, flags);
}

static CUresult instantiate_params(CUgraphExec *out, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p, int ptsz)
{
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = instantiate(out, g, p->flags);
    p->hErrNode_out = NULL;
    p->result_out = r == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
    if (r == CUDA_SUCCESS && (p->flags & CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD) && !cu_stream(p->hUploadStream, ptsz))
        return CUDA_ERROR_INVALID_HANDLE;
    return r;
}
TW_EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *out, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    return instantiate_params(out, g, p, 0);
}
TW_EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *out, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    return instantiate_params(out, g, p, 1);
}

TW_EXPORT CUresult cuGraphExecDestroy(CUgraphExec x)
{
    cu_enter();
    if (!x)
        return CUDA_ERROR_INVALID_VALUE;
    return cu_err(tw_graph_exec_destroy(x));
}

static CUresult graph_launch(CUgraphExec x, CUstream h, int ptsz)
{
    cu_enter();
    if (!x)
        return CUDA_ERROR_INVALID_VALUE;
    tw_stream *s = cu_stream(h, ptsz);
    if (!s)
        return CUDA_ERROR_INVALID_HANDLE;
    return cu_err(tw_graph_launch(x, s));
}
TW_EXPORT CUresult cuGraphLaunch(CUgraphExec x, CUstream h) { return graph_launch(x, h, 0); }
TW_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec x, CUstream h) { return graph_launch(x, h, 1); }

/* Uploading makes the first launch cheaper: its host cost is paid here instead (core/graph.c). */
static CUresult graph_upload(CUgraphExec x, CUstream h, int ptsz)
{
    cu_enter();
    if (!x)
        return CUDA_ERROR_INVALID_VALUE;
    if (!cu_stream(h, ptsz)) return CUDA_ERROR_INVALID_HANDLE;
    return tw_graph_exec_upload((tw_graph_exec *)x) == TW_OK ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
TW_EXPORT CUresult cuGraphUpload(CUgraphExec x, CUstream h) { return graph_upload(x, h, 0); }
TW_EXPORT CUresult cuGraphUpload_ptsz(CUgraphExec x, CUstream h) { return graph_upload(x, h, 1); }

TW_EXPORT CUresult cuGraphExecUpdate_v2(CUgraphExec x, CUgraph g, CUgraphExecUpdateResultInfo *info)
{
    cu_enter();
    if (!x || !g || !info)
        return CUDA_ERROR_INVALID_VALUE;
    tw_err e = tw_graph_exec_update(x, g);
    memset(info, 0, sizeof *info);
    if (e == TW_OK) {
        info->result = CU_GRAPH_EXEC_UPDATE_SUCCESS;
        return CUDA_SUCCESS;
    }
    info->result = CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED;
    return CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE;
}

TW_EXPORT CUresult cuGraphExecUpdate(CUgraphExec x, CUgraph g, CUgraphNode *errNode, CUgraphExecUpdateResult *res)
{
    cu_enter();
    if (!x || !g || !res)
        return CUDA_ERROR_INVALID_VALUE;
    CUgraphExecUpdateResultInfo info;
    CUresult r = cuGraphExecUpdate_v2(x, g, &info);
    *res = info.result;
    if (errNode)
        *errNode = info.errorNode;
    return r;
}
