/* Fake NCCL: collectives, point-to-point and groups.
 *
 * Every operation becomes one kernel launch (TW_OP_KERNEL, named like NCCL 2.28's device kernels, e.g.
 * "ncclDevKernel_AllReduce_Sum_bf16_RING_LL") with a TW_ANN_COLLECTIVE annotation (kind, bytes, nranks,
 * communicator id) on the caller's stream; the core's model (later: the coordinator's rendezvous) decides
 * its duration. For a one-rank communicator the result is a copy of the send buffer: an out-of-place call
 * also enqueues a D2D memcpy op (duration preset to 1 ns, the kernel carries the time) so the core moves the
 * data at completion where the buffers are backed. Operations issued between ncclGroupStart and ncclGroupEnd
 * are queued per thread and launched at the outermost ncclGroupEnd, where sends are paired with receives. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_internal.h"

typedef struct {
    int kind;                  /* TW_NCCL_COLL_* */
    int is_send;               /* SENDRECV: 1 send, 0 recv */
    struct ncclComm *comm;
    void *stream;
    const void *send;
    void *recv;
    size_t count;
    ncclDataType_t type;
    ncclRedOp_t op;
    int root;                  /* root, or peer for send/recv */
    size_t bytes;              /* annotation bytes */
    size_t copy_bytes;         /* one-rank data movement */
    int rdv;                   /* cross-process: the rendezvous handle (-1: none) */
    uint64_t ready;            /* cross-process: when it could start on its stream */
    const void *copy_src;
    void *copy_dst;
    int matched;
} tw_nccl_task;

static __thread int g_depth;
static __thread tw_nccl_task *g_tasks;
static __thread size_t g_ntasks, g_cap;

static const char *type_name(ncclDataType_t t)
{
    static const char *const names[] = {"i8", "u8", "i32", "u32", "i64", "u64", "f16", "f32", "f64", "bf16",
                                        "f8e4m3", "f8e5m2"};
    return (unsigned)t < ncclNumTypes ? names[t] : "u8";
}

static int is_float(ncclDataType_t t)
{
    return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16 || t == ncclFloat8e4m3 ||
           t == ncclFloat8e5m2;
}

static const char *op_name(ncclRedOp_t op, ncclDataType_t t)
{
    switch (op) {
    case ncclSum: return "Sum";
    case ncclProd: return "Prod";
    case ncclMax: case ncclMin: return "MinMax";
    case ncclAvg: return is_float(t) ? "PreMulSum" : "SumPostDiv";
    default: return "PreMulSum"; /* user operators are pre-multiplied sums */
    }
}

static void kernel_name(const tw_nccl_task *t, char *buf, size_t len)
{
    switch (t->kind) {
    case TW_NCCL_COLL_ALLREDUCE:
        snprintf(buf, len, "ncclDevKernel_AllReduce_%s_%s_RING_LL", op_name(t->op, t->type), type_name(t->type));
        break;
    case TW_NCCL_COLL_REDUCESCATTER:
        snprintf(buf, len, "ncclDevKernel_ReduceScatter_%s_%s_RING_LL", op_name(t->op, t->type), type_name(t->type));
        break;
    case TW_NCCL_COLL_REDUCE:
        snprintf(buf, len, "ncclDevKernel_Reduce_%s_%s_RING_LL", op_name(t->op, t->type), type_name(t->type));
        break;
    case TW_NCCL_COLL_ALLGATHER: snprintf(buf, len, "ncclDevKernel_AllGather_RING_LL"); break;
    case TW_NCCL_COLL_BROADCAST: snprintf(buf, len, "ncclDevKernel_Broadcast_RING_LL"); break;
    default: snprintf(buf, len, "ncclDevKernel_SendRecv"); break; /* AlltoAll, Gather, Scatter, Send, Recv */
    }
}

/* Cross-process: post this rank's arrival (phase 1 of launching; every operation of a group is posted
 * before any waits for its peers, as the real ones progress together). */
static ncclResult_t post(tw_nccl_task *t)
{
    t->rdv = -1;
    if (!tw_nccl_rdv_cross(t->comm)) return ncclSuccess;
    tw_stream *s = tw_stream_get(t->stream, 0);
    if (!s) return tw_nccl_error(ncclInvalidArgument, "invalid stream %p", t->stream);
    if (tw_stream_capturing(s)) return ncclSuccess;   /* captured: timed by the model alone (see below) */
    int peer = t->kind == TW_NCCL_COLL_SENDRECV ? t->root : -1;
    t->ready = tw_stream_ready_at(s, tw_now());
    t->rdv = tw_nccl_rdv_post(t->comm, tw_nccl_rdv_next_key(t->comm, peer, t->is_send), t->ready, peer);
    if (t->rdv < 0) return tw_nccl_error(ncclSystemError, "the coordinator's table of operations in flight is full");
    return ncclSuccess;
}

static ncclResult_t launch(const tw_nccl_task *t)
{
    tw_stream *s = tw_stream_get(t->stream, 0);
    if (!s) return tw_nccl_error(ncclInvalidArgument, "invalid stream %p", t->stream);
    uint64_t duration = 0;
    if (tw_nccl_rdv_cross(t->comm)) {
        tw_nccl_rdv *r = t->comm->rendezvous;
        int peer = t->kind == TW_NCCL_COLL_SENDRECV ? t->root : -1;
        if (t->rdv >= 0) {
            ncclResult_t err;
            uint64_t end = tw_nccl_rdv_finish(t->comm, t->rdv, peer, t->kind, t->bytes, &err);
            if (err) return err;
            uint64_t start = tw_stream_ready_at(s, tw_now());
            duration = end > start ? end - start : 1;
        } else {
            /* captured into a CUDA graph: replays are not met with the peers; the model assumes they arrive
             * together (docs/LIMITATIONS.md) */
            int32_t gpus[2] = {r->gpus[t->comm->rank], r->gpus[peer >= 0 ? peer : (t->comm->rank + 1) % t->comm->nranks]};
            int32_t all[TW_NCCL_MAX_RANKS];
            for (int i = 0; i < t->comm->nranks; i++) all[i] = r->gpus[i];
            duration = tw_nccl_cost_ns(t->kind, t->bytes, peer >= 0 ? 2 : t->comm->nranks, peer >= 0 ? gpus : all);
        }
    }
    char name[128];
    kernel_name(t, name, sizeof name);
    tw_op op;
    memset(&op, 0, sizeof op);
    op.kind = TW_OP_KERNEL;
    op.kernel = tw_kernel_intern(name);
    op.grid[0] = t->comm->nranks == 1 ? 1 : 16; op.grid[1] = op.grid[2] = 1;
    op.block[0] = 512; op.block[1] = op.block[2] = 1;
    op.ann.kind = TW_ANN_COLLECTIVE;
    op.ann.u.coll.kind = t->kind;
    op.ann.u.coll.bytes = (int64_t)t->bytes;
    op.ann.u.coll.nranks = t->comm->nranks;
    op.ann.u.coll.comm = t->comm->id;
    op.duration = duration;
    tw_err e = tw_enqueue(s, &op);
    if (e != TW_OK) return tw_nccl_error(ncclUnhandledCudaError, "%s: enqueue failed (%d)", name, (int)e);
    if (t->copy_bytes && t->copy_dst && t->copy_src && t->copy_dst != t->copy_src) {
        tw_op m;
        memset(&m, 0, sizeof m);
        m.kind = TW_OP_MEMCPY;
        m.label = "nccl one-rank copy";
        m.dir = TW_COPY_D2D;
        m.bytes = t->copy_bytes;
        m.dst = t->copy_dst;
        m.src = t->copy_src;
        m.duration = 1;
        e = tw_enqueue(s, &m);
        if (e != TW_OK) return tw_nccl_error(ncclUnhandledCudaError, "%s: copy enqueue failed (%d)", name, (int)e);
    }
    return ncclSuccess;
}

static void drop_tasks(void) { g_ntasks = 0; }

static ncclResult_t push(const tw_nccl_task *t)
{
    if (g_ntasks == g_cap) {
        size_t cap = g_cap ? g_cap * 2 : 64;
        tw_nccl_task *n = realloc(g_tasks, cap * sizeof *n);
        if (!n) return tw_nccl_error(ncclSystemError, "out of host memory queueing a grouped operation");
        g_tasks = n;
        g_cap = cap;
    }
    g_tasks[g_ntasks++] = *t;
    return ncclSuccess;
}

/* The communicator of `peer` that belongs to the same communicator as c, if it lives in this process. */
static struct ncclComm *peer_comm(struct ncclComm *c, int peer)
{
    if (peer == c->rank) return c;
    if (c->clique && peer >= 0 && peer < c->clique->nranks) return c->clique->ranks[peer];
    return NULL;
}

/* Pair each send with the first unmatched receive posted by its peer for this rank. */
static ncclResult_t pair_p2p(void)
{
    for (size_t i = 0; i < g_ntasks; i++) {
        tw_nccl_task *s = &g_tasks[i];
        if (s->kind != TW_NCCL_COLL_SENDRECV || !s->is_send || tw_nccl_rdv_cross(s->comm)) continue;
        struct ncclComm *pc = peer_comm(s->comm, s->root);
        if (!pc) {
            tw_log("timewarp: multi-process NCCL needs the coordinator (not yet implemented)");
            return tw_nccl_error(ncclInvalidUsage, "ncclSend to rank %d, which is not in this process", s->root);
        }
        size_t j;
        for (j = 0; j < g_ntasks; j++) {
            tw_nccl_task *r = &g_tasks[j];
            if (r->kind == TW_NCCL_COLL_SENDRECV && !r->is_send && !r->matched && r->comm == pc &&
                r->root == s->comm->rank)
                break;
        }
        if (j == g_ntasks)
            return tw_nccl_error(ncclInvalidUsage, "ncclSend of %zu bytes from rank %d to rank %d has no matching "
                                 "ncclRecv in the group (the real call would hang)", s->bytes, s->comm->rank, s->root);
        tw_nccl_task *r = &g_tasks[j];
        if (r->bytes != s->bytes)
            return tw_nccl_error(ncclInvalidUsage, "ncclSend of %zu bytes matched with ncclRecv of %zu bytes",
                                 s->bytes, r->bytes);
        r->matched = s->matched = 1;
        r->copy_bytes = s->bytes;
        r->copy_src = s->send;
        r->copy_dst = r->recv;
    }
    for (size_t i = 0; i < g_ntasks; i++) {
        tw_nccl_task *r = &g_tasks[i];
        if (r->kind == TW_NCCL_COLL_SENDRECV && !r->is_send && !r->matched && !tw_nccl_rdv_cross(r->comm)) {
            if (!peer_comm(r->comm, r->root)) {
                tw_log("timewarp: multi-process NCCL needs the coordinator (not yet implemented)");
                return tw_nccl_error(ncclInvalidUsage, "ncclRecv from rank %d, which is not in this process", r->root);
            }
            return tw_nccl_error(ncclInvalidUsage, "ncclRecv on rank %d from rank %d has no matching ncclSend in "
                                 "the group (the real call would hang)", r->comm->rank, r->root);
        }
    }
    return ncclSuccess;
}

static ncclResult_t flush(void)
{
    ncclResult_t r = pair_p2p();
    if (r) { drop_tasks(); return r; }
    for (size_t i = 0; i < g_ntasks; i++) {
        if ((r = post(&g_tasks[i])) != ncclSuccess) { drop_tasks(); return r; }
    }
    for (size_t i = 0; i < g_ntasks; i++) {
        if ((r = launch(&g_tasks[i])) != ncclSuccess) break;
    }
    drop_tasks();
    return r;
}

static ncclResult_t submit(tw_nccl_task *t, const char *fn)
{
    struct ncclComm *c = t->comm;
    if (!tw_nccl_comm_valid(c)) return tw_nccl_error(ncclInvalidArgument, "%s: invalid communicator", fn);
    if (c->revoked || c->finalized) return tw_nccl_error(ncclInvalidUsage, "%s: communicator is finalized or revoked", fn);
    size_t es = tw_nccl_type_size(t->type);
    if (es == 0) return tw_nccl_error(ncclInvalidArgument, "%s: invalid datatype %d", fn, (int)t->type);
    if (t->op < 0 || (t->op >= ncclNumOps && (t->op - ncclNumOps >= (int)sizeof c->redops || !c->redops[t->op - ncclNumOps])))
        return tw_nccl_error(ncclInvalidArgument, "%s: invalid reduction operator %d", fn, (int)t->op);
    if (t->root < 0 || t->root >= c->nranks)
        return tw_nccl_error(ncclInvalidArgument, "%s: root/peer %d out of range (%d ranks)", fn, t->root, c->nranks);
    if (t->count && ((t->send == NULL && t->kind != TW_NCCL_COLL_SENDRECV) || (t->kind == TW_NCCL_COLL_SENDRECV &&
                     (t->is_send ? t->send == NULL : t->recv == NULL))))
        return tw_nccl_error(ncclInvalidArgument, "%s: NULL buffer", fn);
    if (t->kind == TW_NCCL_COLL_SENDRECV) {
        ncclResult_t r = push(t);
        if (r) return r;
        return g_depth > 0 ? ncclSuccess : flush(); /* outside a group: an implicit group of one call */
    }
    if (g_depth > 0) return push(t);
    ncclResult_t r = post(t);
    return r ? r : launch(t);
}

static tw_nccl_task task(int kind, struct ncclComm *c, void *stream, const void *send, void *recv, size_t count,
                         ncclDataType_t type, ncclRedOp_t op, int root)
{
    tw_nccl_task t;
    memset(&t, 0, sizeof t);
    t.kind = kind; t.comm = c; t.stream = stream; t.send = send; t.recv = recv; t.count = count;
    t.type = type; t.op = op; t.root = root;
    size_t es = tw_nccl_type_size(type);
    int n = tw_nccl_comm_valid(c) ? c->nranks : 1;
    size_t one = count * es;
    switch (kind) {
    case TW_NCCL_COLL_ALLGATHER: case TW_NCCL_COLL_REDUCESCATTER: case TW_NCCL_COLL_ALLTOALL:
    case TW_NCCL_COLL_GATHER: case TW_NCCL_COLL_SCATTER:
        t.bytes = one * (size_t)n;
        break;
    default: t.bytes = one;
    }
    if (n == 1 && kind != TW_NCCL_COLL_SENDRECV) { /* the one-rank result is the send buffer */
        t.copy_bytes = one;
        t.copy_src = send;
        t.copy_dst = recv;
    }
    return t;
}

/* ------------------------------------------------------------ collectives */
TW_EXPORT ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    tw_nccl_task t = task(TW_NCCL_COLL_ALLREDUCE, comm, stream, sendbuff, recvbuff, count, datatype, op, 0);
    return submit(&t, "ncclAllReduce");
}

TW_EXPORT ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                     int root, ncclComm_t comm, cudaStream_t stream)
{
    tw_nccl_task t = task(TW_NCCL_COLL_BROADCAST, comm, stream, sendbuff, recvbuff, count, datatype, ncclSum, root);
    if (tw_nccl_comm_valid(comm) && comm->rank != root) t.copy_bytes = 0;
    if (tw_nccl_comm_valid(comm) && comm->rank != root && !sendbuff) t.send = recvbuff; /* only root's send matters */
    return submit(&t, "ncclBroadcast");
}

TW_EXPORT ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                                 cudaStream_t stream)
{
    return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

TW_EXPORT ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                  ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream)
{
    tw_nccl_task t = task(TW_NCCL_COLL_REDUCE, comm, stream, sendbuff, recvbuff, count, datatype, op, root);
    return submit(&t, "ncclReduce");
}

TW_EXPORT ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                                     ncclComm_t comm, cudaStream_t stream)
{
    tw_nccl_task t = task(TW_NCCL_COLL_ALLGATHER, comm, stream, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0);
    return submit(&t, "ncclAllGather");
}

TW_EXPORT ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                                         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    tw_nccl_task t = task(TW_NCCL_COLL_REDUCESCATTER, comm, stream, sendbuff, recvbuff, recvcount, datatype, op, 0);
    return submit(&t, "ncclReduceScatter");
}

TW_EXPORT ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                    ncclComm_t comm, cudaStream_t stream)
{
    tw_nccl_task t = task(TW_NCCL_COLL_ALLTOALL, comm, stream, sendbuff, recvbuff, count, datatype, ncclSum, 0);
    return submit(&t, "ncclAlltoAll");
}

TW_EXPORT ncclResult_t ncclGather(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                  int root, ncclComm_t comm, cudaStream_t stream)
{
    tw_nccl_task t = task(TW_NCCL_COLL_GATHER, comm, stream, sendbuff, recvbuff, count, datatype, ncclSum, root);
    return submit(&t, "ncclGather");
}

TW_EXPORT ncclResult_t ncclScatter(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                                   int root, ncclComm_t comm, cudaStream_t stream)
{
    tw_nccl_task t = task(TW_NCCL_COLL_SCATTER, comm, stream, sendbuff, recvbuff, count, datatype, ncclSum, root);
    return submit(&t, "ncclScatter");
}

/* ------------------------------------------------------------ point to point */
TW_EXPORT ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
                                ncclComm_t comm, cudaStream_t stream)
{
    tw_nccl_task t = task(TW_NCCL_COLL_SENDRECV, comm, stream, sendbuff, NULL, count, datatype, ncclSum, peer);
    t.is_send = 1;
    return submit(&t, "ncclSend");
}

TW_EXPORT ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                                cudaStream_t stream)
{
    tw_nccl_task t = task(TW_NCCL_COLL_SENDRECV, comm, stream, NULL, recvbuff, count, datatype, ncclSum, peer);
    return submit(&t, "ncclRecv");
}

/* ------------------------------------------------------------ groups */
TW_EXPORT ncclResult_t ncclGroupStart(void)
{
    g_depth++;
    return ncclSuccess;
}

TW_EXPORT ncclResult_t ncclGroupEnd(void)
{
    if (g_depth <= 0) return tw_nccl_error(ncclInvalidUsage, "ncclGroupEnd without ncclGroupStart");
    if (--g_depth > 0) return ncclSuccess;
    return flush();
}

/* Ends the group without launching; reports the predicted time of what it would have launched. */
TW_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *info)
{
    if (g_depth <= 0) return tw_nccl_error(ncclInvalidUsage, "ncclGroupSimulateEnd without ncclGroupStart");
    if (info && (info->magic != TW_NCCL_SIMINFO_MAGIC || info->size < sizeof(ncclSimInfo_t)))
        return tw_nccl_error(ncclInvalidArgument, "ncclGroupSimulateEnd: simInfo not initialized with NCCL_SIM_INFO_INITIALIZER");
    if (--g_depth > 0) return ncclSuccess;
    double ns = 0;
    for (size_t i = 0; i < g_ntasks; i++) {
        const tw_nccl_task *t = &g_tasks[i];
        char name[128];
        kernel_name(t, name, sizeof name);
        tw_op op;
        memset(&op, 0, sizeof op);
        op.kind = TW_OP_KERNEL;
        op.kernel = tw_kernel_intern(name);
        op.grid[0] = op.grid[1] = op.grid[2] = 1;
        op.block[0] = 512; op.block[1] = op.block[2] = 1;
        op.ann.kind = TW_ANN_COLLECTIVE;
        op.ann.u.coll.kind = t->kind;
        op.ann.u.coll.bytes = (int64_t)t->bytes;
        op.ann.u.coll.nranks = t->comm->nranks;
        op.ann.u.coll.comm = t->comm->id;
        ns += (double)tw_predict(t->comm->device, &op);
    }
    drop_tasks();
    if (info) info->estimatedTime = (float)(ns / 1000.0);
    return ncclSuccess;
}

/* profiling aliases */
ncclResult_t pncclAllReduce(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t)
    TW_NCCL_ALIAS(ncclAllReduce);
ncclResult_t pncclBroadcast(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)
    TW_NCCL_ALIAS(ncclBroadcast);
ncclResult_t pncclBcast(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) TW_NCCL_ALIAS(ncclBcast);
ncclResult_t pncclReduce(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t)
    TW_NCCL_ALIAS(ncclReduce);
ncclResult_t pncclAllGather(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t)
    TW_NCCL_ALIAS(ncclAllGather);
ncclResult_t pncclReduceScatter(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t)
    TW_NCCL_ALIAS(ncclReduceScatter);
ncclResult_t pncclAlltoAll(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t)
    TW_NCCL_ALIAS(ncclAlltoAll);
ncclResult_t pncclGather(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)
    TW_NCCL_ALIAS(ncclGather);
ncclResult_t pncclScatter(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)
    TW_NCCL_ALIAS(ncclScatter);
ncclResult_t pncclSend(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) TW_NCCL_ALIAS(ncclSend);
ncclResult_t pncclRecv(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) TW_NCCL_ALIAS(ncclRecv);
ncclResult_t pncclGroupStart(void) TW_NCCL_ALIAS(ncclGroupStart);
ncclResult_t pncclGroupEnd(void) TW_NCCL_ALIAS(ncclGroupEnd);
ncclResult_t pncclGroupSimulateEnd(ncclSimInfo_t *) TW_NCCL_ALIAS(ncclGroupSimulateEnd);
