/* Fake NCCL: how the ranks of a communicator meet. Ranks in this process (one rank, or ncclCommInitAll's
 * clique) need nobody; ranks in other processes meet through the run's time keeper (core/rendezvous.c),
 * which exists under `timewarp run`: at creation (every rank's pid and GPU are exchanged), at ncclCommSplit
 * (colors and keys are exchanged) and at every collective and send/recv (nccl_coll.c: tw_nccl_rdv_meet).
 */
#include <stdlib.h>
#include <string.h>

#include "nccl_internal.h"

#define TAG_INIT 0x1a2b3c4d5e6f7081ull
#define TAG_SPLIT 0x53504c4954000000ull

static uint64_t mix(uint64_t a, uint64_t b) {
    uint64_t x = a ^ (b + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
    x ^= x >> 31; x *= 0x7fb5d329728ea185ull; x ^= x >> 27; x *= 0x81dadef4bc2dd44dull; x ^= x >> 33;
    return x ? x : 1;
}

static int cross_process(const struct ncclComm *c) { return c->nranks > 1 && !c->clique; }

static ncclResult_t need_keeper(const struct ncclComm *c, const char *what) {
    tw_log("timewarp: %s of a %d-rank communicator across processes needs the run's coordinator: run the "
           "program with `timewarp run`", what, c->nranks);
    return tw_nccl_error(ncclInvalidUsage, "%s: %d ranks in several processes need `timewarp run` (the coordinator)",
                         what, c->nranks);
}

static tw_nccl_rdv *rdv_new(int nranks) {
    tw_nccl_rdv *r = calloc(1, sizeof *r + (size_t)nranks * (2 * sizeof(uint64_t) + 2 * sizeof(int32_t)));
    if (!r) return NULL;
    r->send_seq = (uint64_t *)(r + 1);
    r->recv_seq = r->send_seq + nranks;
    r->pids = (int32_t *)(r->recv_seq + nranks);
    r->gpus = r->pids + nranks;
    return r;
}

/* The key of this rank's next operation (peer >= 0: a send (is_send) or receive with that peer): the same
 * on every rank taking part, since they issue their operations in the same order. */
uint64_t tw_nccl_rdv_next_key(struct ncclComm *c, int peer, int is_send) {
    tw_nccl_rdv *r = c->rendezvous;
    if (peer < 0) return mix(c->id, ++r->coll_seq);
    uint64_t seq = is_send ? ++r->send_seq[peer] : ++r->recv_seq[peer];
    uint64_t src = (uint64_t)(is_send ? c->rank : peer), dst = (uint64_t)(is_send ? peer : c->rank);
    return mix(mix(c->id ^ 0x7032703270327032ull, (src << 32) | dst), seq);
}

int tw_nccl_rdv_post(struct ncclComm *c, uint64_t key, uint64_t arrival, int peer) {
    tw_nccl_rdv *r = c->rendezvous;
    int n = peer >= 0 ? 2 : c->nranks;
    int me = peer >= 0 ? (c->rank < peer ? 0 : 1) : c->rank;
    return tw_coll_post(key, n, me, arrival, 0, r->gpus[c->rank]);
}

uint64_t tw_nccl_rdv_finish(struct ncclComm *c, int h, int peer, int kind, size_t bytes, ncclResult_t *err) {
    tw_nccl_rdv *r = c->rendezvous;
    if (h < 0) {
        *err = tw_nccl_error(ncclSystemError, "the coordinator's table of operations in flight is full");
        return 0;
    }
    int n = peer >= 0 ? 2 : c->nranks;
    uint64_t arrivals[TW_NCCL_MAX_RANKS];
    int32_t gpus[TW_NCCL_MAX_RANKS], members[2];
    const int32_t *watch = r->pids;
    if (peer >= 0) {   /* a pair: watch the peer */
        int me = c->rank < peer ? 0 : 1;
        members[me] = r->pids[c->rank];
        members[1 - me] = r->pids[peer];
        watch = members;
    }
    char why[256];
    int rc = tw_coll_wait(h, watch, n, arrivals, NULL, gpus, NULL, why, sizeof why);
    tw_coll_leave(h);
    if (rc) {
        tw_log("timewarp: NCCL communicator %016llx rank %d: %s", (unsigned long long)c->id, c->rank, why);
        *err = tw_nccl_error(ncclRemoteError, "rank %d: %s", c->rank, why);
        return 0;
    }
    uint64_t last = 0;
    for (int i = 0; i < n; i++) if (arrivals[i] > last) last = arrivals[i];
    *err = ncclSuccess;
    return last + tw_nccl_cost_ns(kind, bytes, n, gpus);
}

ncclResult_t tw_nccl_rdv_join(struct ncclComm *comm, const ncclUniqueId *ids, int nids)
{
    (void)ids; (void)nids;
    if (comm->nranks == 1 || comm->clique) return ncclSuccess;
    if (!tw_coll_available()) return need_keeper(comm, "ncclCommInitRank");
    if (comm->nranks > TW_NCCL_MAX_RANKS)
        return tw_nccl_error(ncclInvalidUsage, "communicator of %d ranks: at most %d across processes",
                             comm->nranks, TW_NCCL_MAX_RANKS);
    tw_nccl_rdv *r = rdv_new(comm->nranks);
    if (!r) return tw_nccl_error(ncclSystemError, "out of host memory");
    int gpu = tw_device_physical(comm->device);
    uint64_t now = tw_now();
    int h = tw_coll_post(mix(comm->id, TAG_INIT), comm->nranks, comm->rank, now, 0, gpu);
    if (h < 0) { free(r); return tw_nccl_error(ncclSystemError, "the coordinator's table of operations is full"); }
    uint64_t arrivals[TW_NCCL_MAX_RANKS];
    char why[256];
    int rc = tw_coll_wait(h, NULL, 0, arrivals, NULL, r->gpus, r->pids, why, sizeof why);
    tw_coll_leave(h);
    if (rc) { free(r); return tw_nccl_error(ncclRemoteError, "ncclCommInitRank: %s", why); }
    comm->rendezvous = r;
    /* creation returns once every rank has joined */
    uint64_t last = 0;
    for (int i = 0; i < comm->nranks; i++) if (arrivals[i] > last) last = arrivals[i];
    tw_wait_until(last);
    return ncclSuccess;
}

ncclResult_t tw_nccl_rdv_split(struct ncclComm *parent, int color, int key, struct ncclComm **out)
{
    if (!cross_process(parent)) {
        if (parent->nranks != 1) return tw_nccl_error(ncclInvalidUsage, "ncclCommSplit of a communicator created "
                                                      "by ncclCommInitAll is not supported");
        if (color == TW_NCCL_SPLIT_NOCOLOR) { *out = NULL; return ncclSuccess; }
        if (color < 0) return tw_nccl_error(ncclInvalidArgument, "ncclCommSplit: color %d", color);
        ncclUniqueId uid = parent->uid;
        uint64_t m = mix(parent->id, (uint64_t)(color + 1));
        memcpy(uid.internal + 64, &m, sizeof m);
        struct ncclComm *c = tw_nccl_comm_new(0, 1, parent->device, &uid);
        if (!c) return tw_nccl_error(ncclSystemError, "ncclCommSplit: out of host memory");
        *out = c;
        return ncclSuccess;
    }
    if (color < 0 && color != TW_NCCL_SPLIT_NOCOLOR)
        return tw_nccl_error(ncclInvalidArgument, "ncclCommSplit: color %d", color);
    tw_nccl_rdv *pr = parent->rendezvous;
    uint64_t nsplit = ++pr->splits;
    /* every rank posts its color and key; each then works out its new communicator alike */
    int h = tw_coll_post(mix(mix(parent->id, TAG_SPLIT), nsplit), parent->nranks, parent->rank, tw_now(),
                         ((int64_t)color << 32) | (uint32_t)key, pr->gpus[parent->rank]);
    if (h < 0) return tw_nccl_error(ncclSystemError, "the coordinator's table of operations is full");
    int64_t args[TW_NCCL_MAX_RANKS];
    char why[256];
    int rc = tw_coll_wait(h, pr->pids, parent->nranks, NULL, args, NULL, NULL, why, sizeof why);
    tw_coll_leave(h);
    if (rc) return tw_nccl_error(ncclRemoteError, "ncclCommSplit: %s", why);
    if (color == TW_NCCL_SPLIT_NOCOLOR) { *out = NULL; return ncclSuccess; }
    /* members: same color, ordered by (key, parent rank) */
    int members[TW_NCCL_MAX_RANKS], n = 0;
    for (int r = 0; r < parent->nranks; r++)
        if ((int32_t)(args[r] >> 32) == color) members[n++] = r;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0; j--) {
            int a = members[j - 1], b = members[j];
            int ka = (int32_t)(uint32_t)args[a], kb = (int32_t)(uint32_t)args[b];
            if (ka > kb || (ka == kb && a > b)) { members[j - 1] = b; members[j] = a; }
        }
    int myrank = 0;
    for (int i = 0; i < n; i++) if (members[i] == parent->rank) myrank = i;
    ncclUniqueId uid = parent->uid;
    uint64_t m = mix(mix(parent->id, nsplit), (uint64_t)(uint32_t)color);
    memcpy(uid.internal + 64, &m, sizeof m);
    struct ncclComm *c = tw_nccl_comm_new(myrank, n, parent->device, &uid);
    if (!c) return tw_nccl_error(ncclSystemError, "ncclCommSplit: out of host memory");
    if (n > 1) {
        tw_nccl_rdv *r = rdv_new(n);
        if (!r) { tw_nccl_comm_free(c); return tw_nccl_error(ncclSystemError, "out of host memory"); }
        for (int i = 0; i < n; i++) { r->pids[i] = pr->pids[members[i]]; r->gpus[i] = pr->gpus[members[i]]; }
        c->rendezvous = r;
    }
    *out = c;
    return ncclSuccess;
}

ncclResult_t tw_nccl_rdv_shrink(struct ncclComm *parent, const int *exclude, int nexclude, struct ncclComm **out)
{
    for (int i = 0; i < nexclude; i++) {
        if (exclude[i] == parent->rank) { *out = NULL; return ncclSuccess; }
    }
    /* the survivors, in parent order: every surviving rank computes the same list, no exchange needed */
    int members[TW_NCCL_MAX_RANKS], n = 0;
    for (int r = 0; r < parent->nranks && n < TW_NCCL_MAX_RANKS; r++) {
        int out_ = 0;
        for (int i = 0; i < nexclude; i++) if (exclude[i] == r) out_ = 1;
        if (!out_) members[n++] = r;
    }
    int myrank = 0;
    for (int i = 0; i < n; i++) if (members[i] == parent->rank) myrank = i;
    ncclUniqueId uid = parent->uid;
    uint64_t m = mix(parent->id, 0x5348524e4b000000ull ^ (uint64_t)n);
    memcpy(uid.internal + 72, &m, sizeof m);
    struct ncclComm *c = tw_nccl_comm_new(myrank, n, parent->device, &uid);
    if (!c) return tw_nccl_error(ncclSystemError, "ncclCommShrink: out of host memory");
    tw_nccl_rdv *pr = parent->rendezvous;
    if (n > 1 && pr) {
        tw_nccl_rdv *r = rdv_new(n);
        if (!r) { tw_nccl_comm_free(c); return tw_nccl_error(ncclSystemError, "out of host memory"); }
        for (int i = 0; i < n; i++) { r->pids[i] = pr->pids[members[i]]; r->gpus[i] = pr->gpus[members[i]]; }
        c->rendezvous = r;
    }
    *out = c;
    return ncclSuccess;
}

void tw_nccl_rdv_leave(struct ncclComm *comm)
{
    free(comm->rendezvous);
    comm->rendezvous = NULL;
}

int tw_nccl_rdv_cross(const struct ncclComm *c) { return cross_process(c) && c->rendezvous != NULL; }
