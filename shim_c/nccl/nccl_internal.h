/* Internals of the fake NCCL: the communicator and the rendezvous interface.
 *
 * A communicator is {id, rank, nranks, device}. How the ranks of one communicator find each other is the
 * rendezvous's job (nccl_rendezvous.c): today a single-process implementation (one rank, or the ranks that
 * ncclCommInitAll creates together in this process); the coordinator will replace it with a cross-process
 * one without touching the API front end (nccl_comm.c, nccl_coll.c). */
#ifndef TW_NCCL_INTERNAL_H
#define TW_NCCL_INTERNAL_H

#include "tw/core.h"
#include "nccl_types.h"

#define TW_NCCL_COMM_MAGIC 0x74774e43434c436dull  /* "twNCCLCm" */

/* The ranks of one communicator that live in this process (ncclCommInitAll): peer lookup for p2p. */
typedef struct tw_nccl_clique {
    int refs;
    int nranks;
    struct ncclComm **ranks;   /* by rank; NULL where the rank lives elsewhere */
} tw_nccl_clique;

struct ncclComm {
    uint64_t magic;
    uint64_t id;               /* communicator id: the same on every rank (hash of the unique id) */
    int rank, nranks, device;
    int finalized, revoked;
    int blocking;
    int next_redop;            /* next ncclRedOp_t handed out by ncclRedOpCreatePreMulSum */
    unsigned char redops[64];  /* 1 where (ncclNumOps + i) is a live user op */
    ncclUniqueId uid;
    tw_nccl_clique *clique;    /* non-NULL for in-process multi-rank communicators */
    void *rendezvous;          /* the rendezvous implementation's per-comm state */
    char name[64];
};

/* ------------------------------------------------------------ rendezvous (nccl_rendezvous.c) */
#define TW_NCCL_MAX_RANKS 64   /* TW_TK_MAX_RANKS: ranks of a communicator spread over processes */
/* A cross-process communicator's state: every rank's pid and physical GPU, and operation counters. */
typedef struct tw_nccl_rdv {
    uint64_t coll_seq;         /* collectives issued on this communicator */
    uint64_t splits;
    uint64_t *send_seq, *recv_seq;   /* per peer: sends to it, receives from it */
    int32_t *pids, *gpus;
} tw_nccl_rdv;
/* 1 for a communicator whose ranks live in several processes (operations meet through the coordinator). */
int tw_nccl_rdv_cross(const struct ncclComm *c);
/* An operation across processes: its key (peer >= 0: a send or receive with that peer), posting this
 * rank's arrival (a handle), then waiting for the others: the completion time (latest arrival + the cost
 * model's duration), or 0 with *err set. A group posts all its operations before finishing any. */
uint64_t tw_nccl_rdv_next_key(struct ncclComm *c, int peer, int is_send);
int tw_nccl_rdv_post(struct ncclComm *c, uint64_t key, uint64_t arrival, int peer);
uint64_t tw_nccl_rdv_finish(struct ncclComm *c, int h, int peer, int kind, size_t bytes, ncclResult_t *err);
/* nccl_cost.c: duration of a collective once all ranks arrived */
uint64_t tw_nccl_cost_ns(int kind, size_t bytes, int n, const int32_t *gpus);
/* Join communicator `comm` (rank/nranks/device/uid set): NCCL_SUCCESS when the communicator is usable. */
ncclResult_t tw_nccl_rdv_join(struct ncclComm *comm, const ncclUniqueId *ids, int nids);
/* Child communicator for ncclCommSplit / ncclCommShrink. */
ncclResult_t tw_nccl_rdv_split(struct ncclComm *parent, int color, int key, struct ncclComm **out);
ncclResult_t tw_nccl_rdv_shrink(struct ncclComm *parent, const int *exclude, int nexclude, struct ncclComm **out);
void tw_nccl_rdv_leave(struct ncclComm *comm);

/* ------------------------------------------------------------ helpers (nccl_comm.c / nccl_misc.c) */
ncclResult_t tw_nccl_error(ncclResult_t r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int tw_nccl_comm_valid(const struct ncclComm *c);
struct ncclComm *tw_nccl_comm_new(int rank, int nranks, int device, const ncclUniqueId *uid);
void tw_nccl_comm_free(struct ncclComm *c);
uint64_t tw_nccl_hash_id(const ncclUniqueId *uid);
void tw_nccl_random(void *buf, size_t n);
size_t tw_nccl_type_size(ncclDataType_t t);

#define TW_NCCL_ALIAS(name) __attribute__((alias(#name), visibility("default")))

#endif
