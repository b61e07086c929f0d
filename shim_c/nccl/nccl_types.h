/* Declarations for the fake libnccl.so.2 (NCCL 2.28.9 ABI). Values and layouts are facts of the NCCL ABI
 * (checked against nccl.h of the nvidia-nccl wheel); the declarations are our own. */
#ifndef TW_NCCL_TYPES_H
#define TW_NCCL_TYPES_H

#include <stddef.h>
#include <stdint.h>

#define TW_NCCL_VERSION_CODE 22809      /* 2.28.9: major*10000 + minor*100 + patch */
#define TW_NCCL_UNIQUE_ID_BYTES 128
#define TW_NCCL_CONFIG_MAGIC 0xcafebeefu
#define TW_NCCL_SIMINFO_MAGIC 0x74685283u
#define TW_NCCL_SPLIT_NOCOLOR (-1)
#define TW_NCCL_CONFIG_UNDEF_INT ((int)0x80000000)

typedef struct ncclComm *ncclComm_t;
typedef struct ncclWindow_vidmem *ncclWindow_t;
typedef struct { char internal[TW_NCCL_UNIQUE_ID_BYTES]; } ncclUniqueId;
typedef void *cudaStream_t;

typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
    ncclNumResults = 8,
} ncclResult_t;

typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4, ncclNumOps = 5,
               ncclMaxRedOp = 0x7fffffff } ncclRedOp_t;

typedef enum {
    ncclInt8 = 0, ncclUint8 = 1, ncclInt32 = 2, ncclUint32 = 3, ncclInt64 = 4, ncclUint64 = 5,
    ncclFloat16 = 6, ncclFloat32 = 7, ncclFloat64 = 8, ncclBfloat16 = 9, ncclFloat8e4m3 = 10,
    ncclFloat8e5m2 = 11, ncclNumTypes = 12,
} ncclDataType_t;

typedef enum { ncclScalarDevice = 0, ncclScalarHostImmediate = 1 } ncclScalarResidence_t;

/* ncclConfig_t as of 2.28 (ncclConfig_v22800) */
typedef struct {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking;
    int cgaClusterSize;
    int minCTAs;
    int maxCTAs;
    const char *netName;
    int splitShare;
    int trafficClass;
    const char *commName;
    int collnetEnable;
    int CTAPolicy;
    int shrinkShare;
    int nvlsCTAs;
    int nChannelsPerNetPeer;
    int nvlinkCentricSched;
} ncclConfig_t;

typedef struct {
    size_t size;
    unsigned int magic;
    unsigned int version;
    float estimatedTime;   /* microseconds */
} ncclSimInfo_t;

/* Device-API team (returned by value from ncclTeamWorld & co.) */
typedef struct { int nRanks, rank, stride; } ncclTeam_t;

/* tw_annotation.u.coll.kind values: shared with the predictor / coordinator.
 * tw_annotation.u.coll.bytes is the nccl-tests "size": the bytes of the larger buffer of one rank
 * (AllReduce/Broadcast/Reduce: count*elt; AllGather/Gather: sendcount*nranks*elt; ReduceScatter/Scatter:
 * recvcount*nranks*elt; AlltoAll: count*nranks*elt; Send/Recv: count*elt). */
enum {
    TW_NCCL_COLL_ALLREDUCE = 1,
    TW_NCCL_COLL_ALLGATHER = 2,
    TW_NCCL_COLL_REDUCESCATTER = 3,
    TW_NCCL_COLL_BROADCAST = 4,
    TW_NCCL_COLL_REDUCE = 5,
    TW_NCCL_COLL_ALLTOALL = 6,
    TW_NCCL_COLL_GATHER = 7,
    TW_NCCL_COLL_SCATTER = 8,
    TW_NCCL_COLL_SENDRECV = 9,
};

#endif
