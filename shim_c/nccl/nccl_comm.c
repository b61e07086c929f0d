/* Fake NCCL: unique ids and communicator life cycle (init, split, shrink, finalize, destroy, queries). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nccl_internal.h"

/* A unique id: "twNCCLid" magic, creator pid, then random bytes (the coordinator will put its address here). */
static const char k_id_magic[8] = {'t', 'w', 'N', 'C', 'C', 'L', 'i', 'd'};

int tw_nccl_comm_valid(const struct ncclComm *c) { return c && c->magic == TW_NCCL_COMM_MAGIC; }

struct ncclComm *tw_nccl_comm_new(int rank, int nranks, int device, const ncclUniqueId *uid)
{
    struct ncclComm *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->magic = TW_NCCL_COMM_MAGIC;
    c->rank = rank;
    c->nranks = nranks;
    c->device = device;
    c->blocking = 1;
    if (uid) c->uid = *uid;
    else tw_nccl_random(&c->uid, sizeof c->uid);
    c->id = tw_nccl_hash_id(&c->uid);
    return c;
}

void tw_nccl_comm_free(struct ncclComm *c)
{
    if (!tw_nccl_comm_valid(c)) return;
    tw_nccl_rdv_leave(c);
    if (c->clique) {
        tw_nccl_clique *q = c->clique;
        if (c->rank >= 0 && c->rank < q->nranks) q->ranks[c->rank] = NULL;
        if (__atomic_sub_fetch(&q->refs, 1, __ATOMIC_ACQ_REL) == 0) {
            free(q->ranks);
            free(q);
        }
    }
    c->magic = 0;
    free(c);
}

TW_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *uid)
{
    if (!uid) return tw_nccl_error(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
    tw_init();
    tw_nccl_random(uid->internal, sizeof uid->internal);
    memcpy(uid->internal, k_id_magic, sizeof k_id_magic);
    uint32_t pid = (uint32_t)getpid();
    memcpy(uid->internal + 8, &pid, sizeof pid);
    return ncclSuccess;
}

static ncclResult_t check_config(const ncclConfig_t *config, const char *fn)
{
    if (!config) return ncclSuccess;
    if (config->magic != TW_NCCL_CONFIG_MAGIC || config->size < offsetof(ncclConfig_t, netName))
        return tw_nccl_error(ncclInvalidArgument, "%s: config not initialized with NCCL_CONFIG_INITIALIZER", fn);
    return ncclSuccess;
}

static void apply_config(struct ncclComm *c, const ncclConfig_t *config)
{
    if (!config) return;
    /* nonblocking communicators: init completes at once, so the result is already ncclSuccess */
    if (config->blocking != TW_NCCL_CONFIG_UNDEF_INT) c->blocking = config->blocking != 0;
    if (config->size >= offsetof(ncclConfig_t, collnetEnable) && config->commName)
        snprintf(c->name, sizeof c->name, "%s", config->commName);
}

static ncclResult_t init_rank(ncclComm_t *out, int nranks, const ncclUniqueId *ids, int nids, int rank,
                              const ncclConfig_t *config, const char *fn)
{
    if (!out) return tw_nccl_error(ncclInvalidArgument, "%s: comm is NULL", fn);
    *out = NULL;
    if (nranks < 1 || rank < 0 || rank >= nranks)
        return tw_nccl_error(ncclInvalidArgument, "%s: rank %d of %d", fn, rank, nranks);
    if (!ids || nids < 1) return tw_nccl_error(ncclInvalidArgument, "%s: no unique id", fn);
    ncclResult_t r = check_config(config, fn);
    if (r) return r;
    tw_init();
    struct ncclComm *c = tw_nccl_comm_new(rank, nranks, tw_get_device(), &ids[0]);
    if (!c) return tw_nccl_error(ncclSystemError, "%s: out of host memory", fn);
    apply_config(c, config);
    if ((r = tw_nccl_rdv_join(c, ids, nids)) != ncclSuccess) {
        tw_nccl_comm_free(c);
        return r;
    }
    TW_DEBUG("nccl: %s comm %016llx rank %d/%d on device %d", fn, (unsigned long long)c->id, rank, nranks, c->device);
    *out = c;
    return ncclSuccess;
}

TW_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
    return init_rank(comm, nranks, &commId, 1, rank, NULL, "ncclCommInitRank");
}

TW_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
                                              ncclConfig_t *config)
{
    return init_rank(comm, nranks, &commId, 1, rank, config, "ncclCommInitRankConfig");
}

TW_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nId,
                                                ncclUniqueId *commIds, ncclConfig_t *config)
{
    return init_rank(comm, nranks, commIds, nId, rank, config, "ncclCommInitRankScalable");
}

/* All ranks in this process: comm[i] is rank i on devlist[i] (or device i). */
TW_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
    if (!comms || ndev < 1) return tw_nccl_error(ncclInvalidArgument, "ncclCommInitAll: comms NULL or ndev %d", ndev);
    tw_init();
    int ndevices = tw_device_count();
    for (int i = 0; i < ndev; i++) {
        int d = devlist ? devlist[i] : i;
        if (d < 0 || d >= ndevices)
            return tw_nccl_error(ncclInvalidArgument, "ncclCommInitAll: device %d out of range (%d devices)", d, ndevices);
        comms[i] = NULL;
    }
    ncclUniqueId uid;
    ncclGetUniqueId(&uid);
    tw_nccl_clique *q = NULL;
    if (ndev > 1) {
        q = calloc(1, sizeof *q);
        if (q) q->ranks = calloc((size_t)ndev, sizeof *q->ranks);
        if (!q || !q->ranks) {
            free(q);
            return tw_nccl_error(ncclSystemError, "ncclCommInitAll: out of host memory");
        }
        q->nranks = ndev;
    }
    for (int i = 0; i < ndev; i++) {
        struct ncclComm *c = tw_nccl_comm_new(i, ndev, devlist ? devlist[i] : i, &uid);
        if (!c) {
            for (int j = 0; j < i; j++) { tw_nccl_comm_free(comms[j]); comms[j] = NULL; }
            if (q && q->refs == 0) { free(q->ranks); free(q); }
            return tw_nccl_error(ncclSystemError, "ncclCommInitAll: out of host memory");
        }
        if (q) {
            c->clique = q;
            q->ranks[i] = c;
            __atomic_add_fetch(&q->refs, 1, __ATOMIC_ACQ_REL);
        }
        comms[i] = c;
    }
    for (int i = 0; i < ndev; i++) {
        ncclResult_t r = tw_nccl_rdv_join(comms[i], &uid, 1);
        if (r) {
            for (int j = 0; j < ndev; j++) { tw_nccl_comm_free(comms[j]); comms[j] = NULL; }
            return r;
        }
    }
    return ncclSuccess;
}

TW_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config)
{
    if (!tw_nccl_comm_valid(comm)) return tw_nccl_error(ncclInvalidArgument, "ncclCommSplit: invalid communicator");
    if (!newcomm) return tw_nccl_error(ncclInvalidArgument, "ncclCommSplit: newcomm is NULL");
    ncclResult_t r = check_config(config, "ncclCommSplit");
    if (r) return r;
    *newcomm = NULL;
    if ((r = tw_nccl_rdv_split(comm, color, key, newcomm)) != ncclSuccess) return r;
    if (*newcomm) apply_config(*newcomm, config);
    return ncclSuccess;
}

TW_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,
                                      ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags)
{
    (void)shrinkFlags;
    if (!tw_nccl_comm_valid(comm)) return tw_nccl_error(ncclInvalidArgument, "ncclCommShrink: invalid communicator");
    if (!newcomm || (excludeRanksCount > 0 && !excludeRanksList))
        return tw_nccl_error(ncclInvalidArgument, "ncclCommShrink: NULL argument");
    ncclResult_t r = check_config(config, "ncclCommShrink");
    if (r) return r;
    *newcomm = NULL;
    if ((r = tw_nccl_rdv_shrink(comm, excludeRanksList, excludeRanksCount, newcomm)) != ncclSuccess) return r;
    if (*newcomm) apply_config(*newcomm, config);
    return ncclSuccess;
}

TW_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    if (!tw_nccl_comm_valid(comm)) return tw_nccl_error(ncclInvalidArgument, "ncclCommFinalize: invalid communicator");
    /* outstanding work is on the core's streams; the caller synchronizes them as with real NCCL */
    comm->finalized = 1;
    return ncclSuccess;
}

TW_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    if (!comm) return ncclSuccess;
    if (!tw_nccl_comm_valid(comm)) return tw_nccl_error(ncclInvalidArgument, "ncclCommDestroy: invalid communicator");
    tw_nccl_comm_free(comm);
    return ncclSuccess;
}

TW_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    if (!comm) return ncclSuccess;
    if (!tw_nccl_comm_valid(comm)) return tw_nccl_error(ncclInvalidArgument, "ncclCommAbort: invalid communicator");
    tw_nccl_comm_free(comm);
    return ncclSuccess;
}

TW_EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int revokeFlags)
{
    (void)revokeFlags;
    if (!tw_nccl_comm_valid(comm)) return tw_nccl_error(ncclInvalidArgument, "ncclCommRevoke: invalid communicator");
    comm->revoked = 1;
    return ncclSuccess;
}

TW_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    if (!tw_nccl_comm_valid(comm) || !count) return tw_nccl_error(ncclInvalidArgument, "ncclCommCount: invalid argument");
    *count = comm->nranks;
    return ncclSuccess;
}

TW_EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
    if (!tw_nccl_comm_valid(comm) || !device) return tw_nccl_error(ncclInvalidArgument, "ncclCommCuDevice: invalid argument");
    *device = comm->device;
    return ncclSuccess;
}

TW_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    if (!tw_nccl_comm_valid(comm) || !rank) return tw_nccl_error(ncclInvalidArgument, "ncclCommUserRank: invalid argument");
    *rank = comm->rank;
    return ncclSuccess;
}

TW_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
    if (!tw_nccl_comm_valid(comm) || !asyncError)
        return tw_nccl_error(ncclInvalidArgument, "ncclCommGetAsyncError: invalid argument");
    *asyncError = ncclSuccess;
    return ncclSuccess;
}

/* profiling aliases */
ncclResult_t pncclGetUniqueId(ncclUniqueId *) TW_NCCL_ALIAS(ncclGetUniqueId);
ncclResult_t pncclCommInitRank(ncclComm_t *, int, ncclUniqueId, int) TW_NCCL_ALIAS(ncclCommInitRank);
ncclResult_t pncclCommInitRankConfig(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *) TW_NCCL_ALIAS(ncclCommInitRankConfig);
ncclResult_t pncclCommInitRankScalable(ncclComm_t *, int, int, int, ncclUniqueId *, ncclConfig_t *)
    TW_NCCL_ALIAS(ncclCommInitRankScalable);
ncclResult_t pncclCommInitAll(ncclComm_t *, int, const int *) TW_NCCL_ALIAS(ncclCommInitAll);
ncclResult_t pncclCommSplit(ncclComm_t, int, int, ncclComm_t *, ncclConfig_t *) TW_NCCL_ALIAS(ncclCommSplit);
ncclResult_t pncclCommShrink(ncclComm_t, int *, int, ncclComm_t *, ncclConfig_t *, int) TW_NCCL_ALIAS(ncclCommShrink);
ncclResult_t pncclCommFinalize(ncclComm_t) TW_NCCL_ALIAS(ncclCommFinalize);
ncclResult_t pncclCommDestroy(ncclComm_t) TW_NCCL_ALIAS(ncclCommDestroy);
ncclResult_t pncclCommAbort(ncclComm_t) TW_NCCL_ALIAS(ncclCommAbort);
ncclResult_t pncclCommRevoke(ncclComm_t, int) TW_NCCL_ALIAS(ncclCommRevoke);
ncclResult_t pncclCommCount(const ncclComm_t, int *) TW_NCCL_ALIAS(ncclCommCount);
ncclResult_t pncclCommCuDevice(const ncclComm_t, int *) TW_NCCL_ALIAS(ncclCommCuDevice);
ncclResult_t pncclCommUserRank(const ncclComm_t, int *) TW_NCCL_ALIAS(ncclCommUserRank);
ncclResult_t pncclCommGetAsyncError(ncclComm_t, ncclResult_t *) TW_NCCL_ALIAS(ncclCommGetAsyncError);
