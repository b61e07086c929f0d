/* Fake NCCL: the single-process rendezvous. The coordinator replaces this file (same four functions) with
 * one that meets the other ranks across processes and agrees on the communicator. */
#include <stdlib.h>
#include <string.h>

#include "nccl_internal.h"

ncclResult_t tw_nccl_rdv_join(struct ncclComm *comm, const ncclUniqueId *ids, int nids)
{
    (void)ids; (void)nids;
    if (comm->nranks == 1 || comm->clique) return ncclSuccess;
    tw_log("timewarp: multi-process NCCL needs the coordinator (not yet implemented)");
    return tw_nccl_error(ncclInvalidUsage, "communicator of %d ranks (rank %d): multi-process NCCL needs the "
                         "coordinator (not yet implemented)", comm->nranks, comm->rank);
}

ncclResult_t tw_nccl_rdv_split(struct ncclComm *parent, int color, int key, struct ncclComm **out)
{
    (void)key;
    if (parent->nranks != 1) {
        tw_log("timewarp: multi-process NCCL needs the coordinator (not yet implemented)");
        return tw_nccl_error(ncclInvalidUsage, "ncclCommSplit of a %d-rank communicator needs the coordinator",
                             parent->nranks);
    }
    if (color == TW_NCCL_SPLIT_NOCOLOR) { *out = NULL; return ncclSuccess; }
    if (color < 0) return tw_nccl_error(ncclInvalidArgument, "ncclCommSplit: color %d", color);
    ncclUniqueId uid = parent->uid;
    /* child id: parent id mixed with the color, the same on every rank that picks this color */
    uint64_t mix = parent->id ^ (0x9e3779b97f4a7c15ull * (uint64_t)(color + 1));
    memcpy(uid.internal + 64, &mix, sizeof mix);
    struct ncclComm *c = tw_nccl_comm_new(0, 1, parent->device, &uid);
    if (!c) return tw_nccl_error(ncclSystemError, "ncclCommSplit: out of host memory");
    *out = c;
    return ncclSuccess;
}

ncclResult_t tw_nccl_rdv_shrink(struct ncclComm *parent, const int *exclude, int nexclude, struct ncclComm **out)
{
    if (parent->nranks != 1) {
        tw_log("timewarp: multi-process NCCL needs the coordinator (not yet implemented)");
        return tw_nccl_error(ncclInvalidUsage, "ncclCommShrink of a %d-rank communicator needs the coordinator",
                             parent->nranks);
    }
    for (int i = 0; i < nexclude; i++) {
        if (exclude[i] == parent->rank) { *out = NULL; return ncclSuccess; }
    }
    ncclUniqueId uid = parent->uid;
    uint64_t mix = parent->id ^ 0x5348524e4b000000ull;
    memcpy(uid.internal + 72, &mix, sizeof mix);
    struct ncclComm *c = tw_nccl_comm_new(0, 1, parent->device, &uid);
    if (!c) return tw_nccl_error(ncclSystemError, "ncclCommShrink: out of host memory");
    *out = c;
    return ncclSuccess;
}

void tw_nccl_rdv_leave(struct ncclComm *comm) { (void)comm; }
