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
