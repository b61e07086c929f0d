/* Fake NCCL: version, error strings, memory, buffer/window registration, user reduction ops, teams. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "nccl_internal.h"

static __thread char g_last_error[512];

ncclResult_t tw_nccl_error(ncclResult_t r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_last_error, sizeof g_last_error, fmt, ap);
    va_end(ap);
    tw_log("nccl: %s", g_last_error);
    return r;
}

void tw_nccl_random(void *buf, size_t n)
{
    unsigned char *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t k = getrandom(p + got, n - got, 0);
        if (k <= 0) break;
        got += (size_t)k;
    }
    if (got < n) { /* fallback: not security relevant, only uniqueness */
        uint64_t x = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^ (uint64_t)clock();
        for (; got < n; got++) {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            p[got] = (unsigned char)x;
        }
    }
}

uint64_t tw_nccl_hash_id(const ncclUniqueId *uid)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (int i = 0; i < TW_NCCL_UNIQUE_ID_BYTES; i++) {
        h ^= (unsigned char)uid->internal[i];
        h *= 1099511628211ull;
    }
    return h;
}

size_t tw_nccl_type_size(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
    }
}

/* ------------------------------------------------------------ version and errors */
TW_EXPORT ncclResult_t ncclGetVersion(int *version)
{
    if (!version) return tw_nccl_error(ncclInvalidArgument, "ncclGetVersion: version is NULL");
    *version = TW_NCCL_VERSION_CODE;
    return ncclSuccess;
}

TW_EXPORT const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

TW_EXPORT const char *ncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return g_last_error;
}

TW_EXPORT void ncclResetDebugInit(void) {}
TW_EXPORT void ncclResetDebugInitInternal(void) {}

/* ------------------------------------------------------------ memory */
TW_EXPORT ncclResult_t ncclMemAlloc(void **ptr, size_t size)
{
    if (!ptr) return tw_nccl_error(ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
    if (size == 0) { *ptr = NULL; return ncclSuccess; }
    tw_init();
    /* NCCL rounds up to the VMM granularity (2 MiB on Hopper) */
    size_t gran = (size_t)2 << 20;
    size_t sz = (size + gran - 1) / gran * gran;
    tw_err e = tw_mem_alloc(tw_get_device(), sz, ptr);
    if (e != TW_OK) {
        *ptr = NULL;
        return tw_nccl_error(ncclUnhandledCudaError, "ncclMemAlloc: device allocation of %zu bytes failed (%d)", sz, (int)e);
    }
    return ncclSuccess;
}

TW_EXPORT ncclResult_t ncclMemFree(void *ptr)
{
    if (!ptr) return ncclSuccess;
    tw_err e = tw_mem_free(ptr);
    if (e != TW_OK) return tw_nccl_error(ncclUnhandledCudaError, "ncclMemFree: %p is not a device allocation (%d)", ptr, (int)e);
    return ncclSuccess;
}

/* ------------------------------------------------------------ registration (nothing to pin: records only) */
struct tw_nccl_reg { uint64_t magic; ncclComm_t comm; void *buff; size_t size; int flags; };
#define TW_NCCL_REG_MAGIC 0x74774e43434c5267ull
#define TW_NCCL_WIN_MAGIC 0x74774e43434c5769ull

static ncclResult_t reg_new(ncclComm_t comm, void *buff, size_t size, int flags, uint64_t magic, void **out, const char *fn)
{
    if (!tw_nccl_comm_valid(comm)) return tw_nccl_error(ncclInvalidArgument, "%s: invalid communicator", fn);
    if (!out) return tw_nccl_error(ncclInvalidArgument, "%s: handle is NULL", fn);
    struct tw_nccl_reg *r = calloc(1, sizeof *r);
    if (!r) return tw_nccl_error(ncclSystemError, "%s: out of host memory", fn);
    r->magic = magic; r->comm = comm; r->buff = buff; r->size = size; r->flags = flags;
    *out = r;
    return ncclSuccess;
}

static ncclResult_t reg_free(ncclComm_t comm, void *h, uint64_t magic, const char *fn)
{
    struct tw_nccl_reg *r = h;
    if (!tw_nccl_comm_valid(comm)) return tw_nccl_error(ncclInvalidArgument, "%s: invalid communicator", fn);
    if (!r) return ncclSuccess;
    if (r->magic != magic || r->comm != comm) return tw_nccl_error(ncclInvalidArgument, "%s: invalid handle", fn);
    r->magic = 0;
    free(r);
    return ncclSuccess;
}

TW_EXPORT ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
    return reg_new(comm, buff, size, 0, TW_NCCL_REG_MAGIC, handle, "ncclCommRegister");
}

TW_EXPORT ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle)
{
    return reg_free(comm, handle, TW_NCCL_REG_MAGIC, "ncclCommDeregister");
}

TW_EXPORT ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int flags)
{
    return reg_new(comm, buff, size, flags, TW_NCCL_WIN_MAGIC, (void **)win, "ncclCommWindowRegister");
}

TW_EXPORT ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
    return reg_free(comm, win, TW_NCCL_WIN_MAGIC, "ncclCommWindowDeregister");
}

/* ------------------------------------------------------------ user reduction operators */
TW_EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t type,
                                                ncclScalarResidence_t residence, ncclComm_t comm)
{
    (void)residence;
    if (!tw_nccl_comm_valid(comm)) return tw_nccl_error(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: invalid communicator");
    if (!op || !scalar) return tw_nccl_error(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: NULL argument");
    if (tw_nccl_type_size(type) == 0) return tw_nccl_error(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: bad datatype %d", (int)type);
    for (int i = 0; i < (int)sizeof comm->redops; i++) {
        if (!comm->redops[i]) {
            comm->redops[i] = 1;
            *op = (ncclRedOp_t)(ncclNumOps + i);
            return ncclSuccess;
        }
    }
    return tw_nccl_error(ncclInvalidUsage, "ncclRedOpCreatePreMulSum: too many live operators");
}

TW_EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
    if (!tw_nccl_comm_valid(comm)) return tw_nccl_error(ncclInvalidArgument, "ncclRedOpDestroy: invalid communicator");
    int i = (int)op - ncclNumOps;
    if (i < 0 || i >= (int)sizeof comm->redops || !comm->redops[i])
        return tw_nccl_error(ncclInvalidArgument, "ncclRedOpDestroy: %d is not a user operator of this communicator", (int)op);
    comm->redops[i] = 0;
    return ncclSuccess;
}

/* ------------------------------------------------------------ device-API teams (one NVLink domain) */
TW_EXPORT ncclTeam_t ncclTeamWorld(ncclComm_t comm)
{
    ncclTeam_t t = {1, 0, 1};
    if (tw_nccl_comm_valid(comm)) { t.nRanks = comm->nranks; t.rank = comm->rank; }
    return t;
}

/* Every rank of a single-node communicator is load/store accessible: LSA team == world. */
TW_EXPORT ncclTeam_t ncclTeamLsa(ncclComm_t comm) { return ncclTeamWorld(comm); }

TW_EXPORT ncclTeam_t ncclTeamRail(ncclComm_t comm)
{
    ncclTeam_t t = {1, 0, 1};
    if (tw_nccl_comm_valid(comm)) t.stride = comm->nranks;
    return t;
}

TW_EXPORT int ncclTeamRankToWorld(ncclComm_t comm, ncclTeam_t team, int rank)
{
    int me = tw_nccl_comm_valid(comm) ? comm->rank : 0;
    return me + (rank - team.rank) * team.stride;
}

TW_EXPORT int ncclTeamRankToLsa(ncclComm_t comm, ncclTeam_t team, int rank)
{
    return ncclTeamRankToWorld(comm, team, rank);
}

/* profiling aliases */
ncclResult_t pncclGetVersion(int *) TW_NCCL_ALIAS(ncclGetVersion);
const char *pncclGetErrorString(ncclResult_t) TW_NCCL_ALIAS(ncclGetErrorString);
const char *pncclGetLastError(ncclComm_t) TW_NCCL_ALIAS(ncclGetLastError);
void pncclResetDebugInit(void) TW_NCCL_ALIAS(ncclResetDebugInit);
ncclResult_t pncclMemAlloc(void **, size_t) TW_NCCL_ALIAS(ncclMemAlloc);
ncclResult_t pncclMemFree(void *) TW_NCCL_ALIAS(ncclMemFree);
ncclResult_t pncclCommRegister(const ncclComm_t, void *, size_t, void **) TW_NCCL_ALIAS(ncclCommRegister);
ncclResult_t pncclCommDeregister(const ncclComm_t, void *) TW_NCCL_ALIAS(ncclCommDeregister);
ncclResult_t pncclCommWindowRegister(ncclComm_t, void *, size_t, ncclWindow_t *, int) TW_NCCL_ALIAS(ncclCommWindowRegister);
ncclResult_t pncclCommWindowDeregister(ncclComm_t, ncclWindow_t) TW_NCCL_ALIAS(ncclCommWindowDeregister);
ncclResult_t pncclRedOpCreatePreMulSum(ncclRedOp_t *, void *, ncclDataType_t, ncclScalarResidence_t, ncclComm_t)
    TW_NCCL_ALIAS(ncclRedOpCreatePreMulSum);
ncclResult_t pncclRedOpDestroy(ncclRedOp_t, ncclComm_t) TW_NCCL_ALIAS(ncclRedOpDestroy);
ncclTeam_t pncclTeamWorld(ncclComm_t) TW_NCCL_ALIAS(ncclTeamWorld);
ncclTeam_t pncclTeamLsa(ncclComm_t) TW_NCCL_ALIAS(ncclTeamLsa);
ncclTeam_t pncclTeamRail(ncclComm_t) TW_NCCL_ALIAS(ncclTeamRail);
int pncclTeamRankToWorld(ncclComm_t, ncclTeam_t, int) TW_NCCL_ALIAS(ncclTeamRankToWorld);
int pncclTeamRankToLsa(ncclComm_t, ncclTeam_t, int) TW_NCCL_ALIAS(ncclTeamRankToLsa);
